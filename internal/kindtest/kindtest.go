// Package kindtest registers a kind of source and a kind of sink from a
// package of their own, as a user's connector would: the tests of the
// registry (package plan) run them from a job file and from Go, and weir
// schema lists them. It holds nothing a program needs.
//
// The source "memlines" reads the lines given in its settings (lines: [...]),
// a record a line, its position the lines read; the sink "memsink" keeps the
// JSON of what it commits under its name (name: x), exactly once: what a
// checkpoint holds becomes visible when the checkpoint commits (Committed).
package kindtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

func init() {
	plan.RegisterSource(plan.SourceKind{
		Name: "memlines", Doc: "Lines given in the settings, a record each (a test's source).",
		Fields: []plan.Field{
			{Name: "lines", Type: plan.Strings, Doc: "the lines, in arrival order", Required: true},
			{Name: "label", Type: plan.String, Doc: "what the source is called"},
		},
		Parse: func(s plan.Settings) (plan.SourceConfig, error) {
			lines, _, err := s.Strings("lines")
			if err != nil {
				return nil, err
			}
			if len(lines) == 0 {
				return nil, s.Errorf("lines", "expected at least one line")
			}
			label, _, err := s.String("label")
			if err != nil {
				return nil, err
			}
			if label == "" {
				label = fmt.Sprintf("%d lines", len(lines))
			}
			return &sourceConfig{lines: lines, label: label}, nil
		},
	})
	plan.RegisterSink(plan.SinkKind{
		Name: "memsink", Doc: "Items kept in memory under a name (a test's sink).",
		Fields: []plan.Field{{Name: "name", Type: plan.String, Doc: "the name they are kept under", Required: true}},
		Parse: func(s plan.Settings) (plan.SinkConfig, error) {
			name, _, err := s.String("name")
			if err != nil {
				return nil, err
			}
			if name == "" {
				return nil, s.Errorf("name", "expected a name")
			}
			return sinkConfig{name: name}, nil
		},
	})
}

type sourceConfig struct {
	lines []string
	label string
}

func (c *sourceConfig) Reads() string { return "memlines " + c.label }

func (c *sourceConfig) New(plan.Env) (connector.Source, error) { return &source{lines: c.lines}, nil }

// source reads its lines, a batch at a time.
type source struct {
	lines []string
	next  int
}

func (s *source) Open(_ context.Context, pos []byte) error {
	if pos != nil {
		n, k := binary.Uvarint(pos)
		if k <= 0 || n > uint64(len(s.lines)) {
			return errors.New("memlines: a position past its lines")
		}
		s.next = int(n)
	}
	return nil
}

func (s *source) Read(_ context.Context, b *connector.Batch) error {
	if s.next == 0 {
		b.Partitions = []connector.Partition{{Name: "memlines"}}
	}
	for s.next < len(s.lines) && len(b.Records) < 100 {
		b.Records = append(b.Records, connector.Record{Value: []byte(s.lines[s.next]), Offset: int64(s.next + 1), Arrival: mtime.MinTime})
		s.next++
	}
	b.Position = binary.AppendUvarint(nil, uint64(s.next))
	if s.next == len(s.lines) {
		return io.EOF
	}
	return nil
}

func (s *source) Close() error { return nil }

type sinkConfig struct{ name string }

func (c sinkConfig) Writes() string { return "memsink " + c.name }
func (c sinkConfig) Target() string { return c.name }

func (c sinkConfig) New(env plan.Env) (connector.Sink[plan.Item], error) {
	return &sink{name: c.name, exactly: env.Checkpointed}, nil
}

var (
	mu        sync.Mutex
	committed = map[string][]string{}
	kinds     = map[string][]plan.ItemKind{}
)

// Committed is what the sinks named name committed, each item's JSON, in
// order.
func Committed(name string) []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), committed[name]...)
}

// Kinds is what kind each item committed under name was.
func Kinds(name string) []plan.ItemKind {
	mu.Lock()
	defer mu.Unlock()
	return append([]plan.ItemKind(nil), kinds[name]...)
}

// Reset forgets what was committed under name.
func Reset(name string) {
	mu.Lock()
	defer mu.Unlock()
	delete(committed, name)
	delete(kinds, name)
}

// sink holds what it is given until the checkpoint that covers it commits
// (or, without checkpoints, until a flush).
type sink struct {
	name    string
	exactly bool
	pending bytes.Buffer
	kinds   []plan.ItemKind
}

func (s *sink) Open(context.Context, connector.Resume) error { return nil }

func (s *sink) Write(_ context.Context, items []plan.Item) error {
	for _, it := range items {
		s.pending.Write(it.JSON)
		s.pending.WriteByte('\n')
		s.kinds = append(s.kinds, it.Kind)
	}
	return nil
}

func (s *sink) Flush(context.Context) error {
	if !s.exactly {
		s.publish(s.take())
	}
	return nil
}

// take is what the sink holds, as its pre-commit: the count of items, their
// kinds, then their lines.
func (s *sink) take() []byte {
	b := binary.AppendUvarint(nil, uint64(len(s.kinds)))
	for _, k := range s.kinds {
		b = append(b, byte(k))
	}
	b = append(b, s.pending.Bytes()...)
	s.pending.Reset()
	s.kinds = s.kinds[:0]
	return b
}

func (s *sink) PreCommit(context.Context, uint64) ([]byte, error) {
	if !s.exactly {
		return nil, s.Flush(context.Background())
	}
	return s.take(), nil
}

func (s *sink) Commit(_ context.Context, _ uint64, pre []byte) error {
	s.publish(pre)
	return nil
}

// publish makes what pre holds visible: its lines, and their kinds.
func (s *sink) publish(pre []byte) {
	n, k := binary.Uvarint(pre)
	if k <= 0 || n == 0 {
		return
	}
	ks, text := pre[k:k+int(n)], pre[k+int(n):]
	mu.Lock()
	defer mu.Unlock()
	for _, l := range bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n")) {
		committed[s.name] = append(committed[s.name], string(l))
	}
	for _, kk := range ks {
		kinds[s.name] = append(kinds[s.name], plan.ItemKind(kk))
	}
}

func (s *sink) Guarantee() connector.Guarantee {
	if s.exactly {
		return connector.ExactlyOnce
	}
	return connector.AtLeastOnce
}

func (s *sink) Close() error { return nil }
