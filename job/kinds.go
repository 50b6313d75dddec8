package job

import (
	"context"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/connector"
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

// CustomSource is a source of a registered kind.
type CustomSource struct {
	Kind   string
	Config plan.SourceConfig
}

// CustomOutput is an output of a registered kind.
type CustomOutput struct {
	Kind   string
	Config plan.SinkConfig
}

// yamlSettings are a registered kind's settings in a job file.
type yamlSettings struct {
	p *parser
	m *node
}

var _ plan.Settings = yamlSettings{}

func (s yamlSettings) String(name string) (string, bool, error) {
	v, n, err := s.m.str(name)
	return v, n != nil, err
}

func (s yamlSettings) Int(name string) (int, bool, error) { return s.m.integer(name) }

func (s yamlSettings) Bool(name string) (bool, bool, error) {
	b, err := s.m.boolean(name)
	return b, s.m.get(name) != nil, err
}

func (s yamlSettings) Duration(name string) (mtime.Time, bool, error) { return s.m.duration(name) }

func (s yamlSettings) Strings(name string) ([]string, bool, error) {
	v := s.m.get(name)
	switch {
	case v == nil:
		return nil, false, nil
	case v.Kind == yaml.ScalarNode && v.Tag != "!!null":
		return []string{v.Value}, true, nil
	case v.Kind == yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, true, s.m.errf(c, s.m.field(name), "expected a list of strings")
			}
			out = append(out, c.Value)
		}
		return out, true, nil
	}
	return nil, true, s.m.errf(v, s.m.field(name), "expected a string or a list of strings")
}

func (s yamlSettings) Path(name string) (string, bool, error) {
	v, ok, err := s.String(name)
	if err != nil || !ok || v == "" {
		return v, ok, err
	}
	return s.p.resolve(v), true, nil
}

func (s yamlSettings) StringMap(name string) (map[string]string, bool, error) {
	v := s.m.get(name)
	switch {
	case v == nil || v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return nil, v != nil, nil
	case v.Kind != yaml.MappingNode:
		return nil, true, s.m.errf(v, s.m.field(name), "expected a mapping of names to strings")
	}
	out := make(map[string]string, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			return nil, true, s.m.errf(val, s.m.field(name)+"."+k.Value, "expected a string")
		}
		out[k.Value] = val.Value
	}
	return out, true, nil
}

func (s yamlSettings) Errorf(name, format string, args ...any) error {
	return s.m.errf(s.m.get(name), s.m.field(name), format, args...)
}

// kindMapping checks a registered kind's mapping (its settings' names, and
// those it requires) and gives its settings.
func (p *parser) kindMapping(parent *node, kind string, fields []plan.Field) (yamlSettings, error) {
	m, err := parent.sub(kind)
	if err != nil {
		return yamlSettings{}, err
	}
	if m == nil {
		m, _ = asMapping(p.file, parent.field(kind), &yaml.Node{Kind: yaml.MappingNode, Line: parent.get(kind).Line})
	}
	if err := m.strict(plan.Names(fields)...); err != nil {
		return yamlSettings{}, err
	}
	for _, f := range fields {
		if f.Required && m.get(f.Name) == nil {
			return yamlSettings{}, m.errf(nil, m.field(f.Name), "missing: %s", f.Doc)
		}
	}
	return yamlSettings{p: p, m: m}, nil
}

// registeredKind is the first registered kind named in a mapping.
func registeredKind[K any](m *node, lookup func(string) (K, bool)) (string, K, bool) {
	for i := 0; i+1 < len(m.n.Content); i += 2 {
		if k, ok := lookup(m.n.Content[i].Value); ok {
			return m.n.Content[i].Value, k, true
		}
	}
	var zero K
	return "", zero, false
}

// sourceKindNames are the fields source may name: its own and the
// registered kinds'.
func sourceKindNames() []string {
	names := append(sourceShape.names(), formatFieldNames()...)
	for _, k := range plan.SourceKinds() {
		names = append(names, k.Name)
	}
	return names
}

// outputKindNames are the fields an output may name: its own and the
// registered kinds'.
func outputKindNames() []string {
	names := outputObject.names()
	for _, k := range plan.SinkKinds() {
		names = append(names, k.Name)
	}
	return names
}

// customSource reads source: {KIND: {...}} of a registered kind.
func (p *parser) customSource(s *node, j *Job, name string, k plan.SourceKind) error {
	for i := 0; i < len(s.n.Content); i += 2 {
		if f := s.n.Content[i].Value; f != name && !slices.Contains(formatFieldNames(), f) {
			return s.errf(nil, "source", "choose one of file, kafka and %s", name)
		}
	}
	set, err := p.kindMapping(s, name, k.Fields)
	if err != nil {
		return err
	}
	cfg, err := k.Parse(set)
	if err != nil {
		return err
	}
	j.Custom = &CustomSource{Kind: name, Config: cfg}
	j.inputName, j.inputLine = cfg.Reads(), s.get(name).Line
	return nil
}

// customOutput reads output: {KIND: {...}} of a registered kind.
func (p *parser) customOutput(m *node, field, name string, k plan.SinkKind, o *Output) error {
	set, err := p.kindMapping(m, name, k.Fields)
	if err != nil {
		return err
	}
	cfg, err := k.Parse(set)
	if err != nil {
		return err
	}
	o.Custom = &CustomOutput{Kind: name, Config: cfg}
	return nil
}

// kindEnv is what the connector of a registered kind is built with.
func (rn *Runnable) kindEnv(field string) plan.Env {
	return plan.Env{Job: jobName(rn.j), Field: field, Checkpointed: rn.e.Checkpointed(), Log: func(s string) { rn.logf("%s", s) }}
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
func customSink[T any](rn *Runnable, o *Output, encode func(b []byte, v T) plan.Item) (*engine.SinkNode[T], error) {
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
		Final: p.Final, Retract: p.Retract, Version: f.j.Version, Watermark: p.Watermark, Emitted: p.EmittedAt}
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
	line := f.appendLate(b, l)
	key, _ := f.lateRecord(l)
	return plan.Item{Kind: plan.LateEvent, JSON: line[:len(line)-1], Key: key, ID: lateID(l)}
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
