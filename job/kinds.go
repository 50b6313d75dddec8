package job

import (
	"context"
	"fmt"
	"slices"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/jobfile"

	// The kinds weir registers itself: a job file names them (and so the
	// weir command, weir schema and the job file's JSON schema know them).
	_ "github.com/weirstream/weir/connector/mqtt"
	_ "github.com/weirstream/weir/connector/parquet"
	_ "github.com/weirstream/weir/connector/webhook"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// The kinds of sources and outputs registered in package plan are read
// here like the job file's own: source: {KIND: {...}} and output:
// {KIND: {...}} (or late_output, quarantine, dead_letter), their settings
// checked by the kind once, when the file is read, with errors naming the
// field and its line.

// kindEnv is what the connector of a registered kind is built with.
func (rn *Runnable) kindEnv(field string) plan.Env {
	shape := rn.j.PaneShape()
	return plan.Env{Job: rn.j.DisplayName(), Field: field, Checkpointed: rn.e.Checkpointed(), Log: func(s string) { rn.logf("%s", s) }, Shape: &shape}
}

// itemSink is a sink of a registered kind as a job's outputs are: the
// items it is given are encoded by the job's format (their JSON line,
// their key and identity, a pane's fields) before the kind's sink gets
// them.
type itemSink[T any] struct {
	connector.Sink[plan.Item]
	encode func(b []byte, v T) plan.Item
	items  []plan.Item
	buf    []byte
}

func (s *itemSink[T]) Write(ctx context.Context, items []T) error {
	s.items, s.buf = s.items[:0], s.buf[:0]
	for i := range items {
		start := len(s.buf)
		it := s.encode(s.buf, items[i])
		s.buf = it.JSON
		it.JSON = it.JSON[start:len(it.JSON):len(it.JSON)]
		s.items = append(s.items, it)
	}
	err := s.Sink.Write(ctx, s.items)
	clear(s.items)
	return err
}

// The optional abilities of a sink, passed on.
func (s *itemSink[T]) Mark() []byte {
	if m, ok := s.Sink.(connector.Marker); ok {
		return m.Mark()
	}
	return nil
}

func (s *itemSink[T]) HeldBytes() int64 {
	if h, ok := s.Sink.(connector.Holder); ok {
		return h.HeldBytes()
	}
	return 0
}

func (s *itemSink[T]) Rewrites() bool {
	rw, ok := s.Sink.(connector.Rewriter)
	return ok && rw.Rewrites()
}

func (s *itemSink[T]) Start(ctx context.Context) error {
	if st, ok := s.Sink.(connector.Starter); ok {
		return st.Start(ctx)
	}
	return nil
}

// customSink makes the engine's sink of an output of a registered kind.
func customSink[T any](rn *Runnable, o *jobfile.Output, encode func(b []byte, v T) plan.Item) (*engine.SinkNode[T], error) {
	ks, err := o.Custom.Config.New(rn.kindEnv(o.Field))
	if err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("%s: %s: %v", rn.j.File, o.Field, err), Err: err}
	}
	opts := []engine.SinkOption{recordName(rn.j, o)}
	if a, ok := o.Custom.Config.(plan.Accepter); ok {
		if g, set := a.Accepts(); set {
			opts = append(opts, engine.Accept(g))
		}
	}
	n, err := engine.NewSink[T](rn.e, o.Field, &itemSink[T]{Sink: ks, encode: encode}, opts...)
	if err != nil {
		return nil, setupError(rn.j, err)
	}
	return n, nil
}

// paneItem encodes a pane as an item, its JSON appended to b.
func (f *format) paneItem(b []byte, p pane) plan.Item {
	line := f.appendPane(b, p)
	key := f.paneKey(p)
	pf := &plan.PaneFields{Start: p.Window.Start, End: p.Window.End, Revision: int64(p.Revision), Timing: p.Timing.String(),
		Final: p.Final, Retract: p.Retract, Mode: f.j.Window.Mode.String(), Version: f.j.Version, Watermark: p.Watermark, Emitted: p.EmittedAt}
	if p.Window.IsGlobal() {
		pf.End = mtime.MaxTime
	}
	switch {
	case f.j.KeyParts != nil:
		for _, v := range splitKey(p.Key) {
			pf.Keys = append(pf.Keys, TableKeyText(v))
		}
	case f.j.Key != nil:
		pf.Keys = []any{TableKeyText(p.Key)}
	}
	for k, a := range f.j.Aggregates {
		pf.Names = append(pf.Names, a.Name)
		v := p.Value[k]
		switch v.kind {
		case vInt:
			pf.Values = append(pf.Values, v.i)
		case vFloat:
			pf.Values = append(pf.Values, v.f)
		case vDec:
			pf.Values = append(pf.Values, string(appendDecimal(nil, v.i, v.scale)))
		case vJSON:
			pf.Values = append(pf.Values, plan.RawJSON(v.js))
		default:
			pf.Values = append(pf.Values, nil)
		}
		if v.partial {
			pf.Partial = append(pf.Partial, a.Name)
		}
	}
	return plan.Item{Kind: plan.Pane, JSON: line[:len(line)-1], Key: key, ID: paneID(p), Pane: pf}
}

// lateItem encodes a too-late event as an item.
func (f *format) lateItem(b []byte, l lateEvent) plan.Item {
	// Room for it all at once, its key too: the item keeps its memory.
	b = slices.Grow(b, itemRoom+3*len(l.Key)+len(l.Value.raw))
	line := f.appendLate(b, l)
	if !f.j.Keyed() {
		return plan.Item{Kind: plan.LateEvent, JSON: line[:len(line)-1], ID: lateID(l), At: l.At}
	}
	it := keyedItem(plan.LateEvent, line, l.Key, lateID(l))
	it.At = l.At
	return it
}

// rejectedItem encodes a rejected record as an item.
func (f *format) rejectedItem(b []byte, r engine.RejectedRecord) plan.Item {
	line := f.appendRejected(b, r)
	return plan.Item{Kind: plan.RejectedRecord, JSON: line[:len(line)-1], ID: rejectedID(r)}
}

// deadItem encodes a dead letter as an item.
func (f *format) deadItem(b []byte, d deadRecord) plan.Item {
	line := f.appendDead(b, d)
	return plan.Item{Kind: plan.DeadLetter, JSON: line[:len(line)-1], Key: d.Key, ID: deadID(d)}
}
