package weir

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/translate"
)

// Stream is a typed stream of elements in a pipeline. Streams are values:
// every function that takes a stream adds a consumer to it, and one stream
// may feed several. A stream's elements, and the signals that travel with
// them (processing time, watermarks, checkpoint barriers), are delivered in
// order from one goroutine: the source loop's, or that of the aggregation
// that made the stream.
type Stream[T any] struct {
	p *Pipeline
	n *engine.Stream[T]
	// from is the plan's node, and its port, the stream comes from.
	from plan.Input
	// origin is 0 for streams of the source loop, else the number of the
	// aggregation whose output the stream is.
	origin int
}

// transform adds a transform node taking s, which makes the stream out
// (it is wired already: its node builds nothing).
func transform[T, U any](s Stream[T], does string, out *engine.Stream[U]) Stream[U] {
	p := s.p
	p.steps++
	id := plan.ID{Kind: plan.KindTransform, Name: fmt.Sprintf("%s-%d", does, p.steps)}
	p.add(&plan.Node{ID: id, Label: does, Inputs: []plan.Input{s.from}, Op: &plan.Transform{Does: does}, Impl: wired{}})
	return Stream[U]{p: p, n: out, from: plan.Input{From: id}, origin: s.origin}
}

// wired is the implementation of a node whose stream is wired when the
// pipeline is made: it builds nothing.
type wired struct{}

func (wired) Build(*translate.Ctx) error { return nil }

// Map applies f to every element.
func Map[T, U any](s Stream[T], f func(T) U) Stream[U] {
	out := &engine.Stream[U]{}
	s.n.Subscribe(&mapOp[T, U]{f, out})
	return transform(s, "map", out)
}

// Filter keeps the elements for which keep returns true.
func Filter[T any](s Stream[T], keep func(T) bool) Stream[T] {
	out := &engine.Stream[T]{}
	s.n.Subscribe(&filterOp[T]{keep, out})
	return transform(s, "filter", out)
}

// mapOp, filterOp and flatMapOp are Map's, Filter's and FlatMap's
// consumers: a type each, where an engine.Func would call a closure that
// calls f, a call an element more.
type mapOp[T, U any] struct {
	f   func(T) U
	out *engine.Stream[U]
}

func (m *mapOp[T, U]) Push(v T)                { m.out.Push(m.f(v)) }
func (m *mapOp[T, U]) Signal(sg engine.Signal) { m.out.Signal(sg) }

type filterOp[T any] struct {
	keep func(T) bool
	out  *engine.Stream[T]
}

func (f *filterOp[T]) Push(v T) {
	if f.keep(v) {
		f.out.Push(v)
	}
}

func (f *filterOp[T]) Signal(sg engine.Signal) { f.out.Signal(sg) }

type flatMapOp[T, U any] struct {
	f    func(v T, emit func(U))
	emit func(U) // out.Push, made once
	out  *engine.Stream[U]
}

func (m *flatMapOp[T, U]) Push(v T)                { m.f(v, m.emit) }
func (m *flatMapOp[T, U]) Signal(sg engine.Signal) { m.out.Signal(sg) }

// FlatMap calls f for every element; f emits zero or more results.
func FlatMap[T, U any](s Stream[T], f func(v T, emit func(U))) Stream[U] {
	out := &engine.Stream[U]{}
	s.n.Subscribe(&flatMapOp[T, U]{f, out.Push, out})
	return transform(s, "flatmap", out)
}

// Sink consumes a stream with a function, called from one goroutine per
// stream, in the stream's order; an error stops the pipeline, and Run
// returns it. A function is an at-least-once sink: after a restore from a
// checkpoint it sees again what came after that checkpoint, so a pipeline
// with checkpoints accepts it only with Delivery(connector.AtLeastOnce).
// Named names the sink.
func Sink[T any](s Stream[T], f func(T) error, opts ...PartOption) {
	name := s.p.part("sink", partOptions(opts), fmt.Sprintf("sink-%d", s.p.sinks+1))
	// A function sees each element as soon as it comes, in the order of
	// every other function's: no batch.
	sinkTo(s, name, &funcSink[T]{f: f}, 1)
}

// SinkTo writes a stream to a connector sink, which takes part in the
// pipeline's checkpoints: it is pre-committed at each barrier and committed
// once the checkpoint is durable. name identifies it in checkpoints and
// errors; it must be unique and stable from run to run.
func SinkTo[T any](s Stream[T], name string, sink connector.Sink[T]) {
	sinkTo(s, s.p.register("sink", name), sink, 0)
}

func sinkTo[T any](s Stream[T], name string, sink connector.Sink[T], batch int) {
	p := s.p
	p.sinks++
	p.add(&plan.Node{ID: plan.ID{Kind: plan.KindSink, Name: name}, Label: "sink " + name, Inputs: []plan.Input{s.from},
		Op: &plan.Sink{}, Impl: &sinkNode[T]{name: name, sink: sink, batch: batch, at: later[T](s.n)}})
}

// sinkNode is the implementation of a sink node.
type sinkNode[T any] struct {
	name  string
	sink  connector.Sink[T]
	batch int
	at    *lazy[T]
}

func (s *sinkNode[T]) Build(c *translate.Ctx) error {
	n, err := engine.NewSink(c.Engine(), s.name, s.sink)
	if err != nil {
		return fmt.Errorf("weir: %w", err)
	}
	if s.batch > 0 {
		n.SetBatch(s.batch)
	}
	s.at.c = n
	return nil
}

// later subscribes a consumer that the pipeline makes when it runs, in the
// place it was asked for.
func later[T any](s *engine.Stream[T]) *lazy[T] {
	l := &lazy[T]{}
	s.Subscribe(l)
	return l
}

type lazy[T any] struct{ c engine.Consumer[T] }

func (l *lazy[T]) Push(v T)                { l.c.Push(v) }
func (l *lazy[T]) Signal(sg engine.Signal) { l.c.Signal(sg) }

// funcSink is a function as an at-least-once sink.
type funcSink[T any] struct{ f func(T) error }

func (s *funcSink[T]) Open(context.Context, connector.Resume) error { return nil }
func (s *funcSink[T]) Write(_ context.Context, items []T) error {
	for i := range items {
		if err := s.f(items[i]); err != nil {
			return err
		}
	}
	return nil
}
func (s *funcSink[T]) Flush(context.Context) error                       { return nil }
func (s *funcSink[T]) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }
func (s *funcSink[T]) Commit(context.Context, uint64, []byte) error      { return nil }
func (s *funcSink[T]) Guarantee() connector.Guarantee                    { return connector.AtLeastOnce }
func (s *funcSink[T]) Close() error                                      { return nil }

// SinkToKind writes a stream to an output of a kind registered in package
// plan (as a job file's output: {KIND: {...}}), with its settings: encode
// turns each element into the item the kind writes (its JSON, its key, its
// identity, a pane's fields). name identifies it in checkpoints, as
// SinkTo's. A kind that is not registered, or settings it refuses, are an
// error of the pipeline.
func SinkToKind[T any](s Stream[T], name, kind string, settings plan.Values, encode func(T) plan.Item) {
	p := s.p
	name = p.register("sink", name)
	k, ok := plan.LookupSink(kind)
	if !ok {
		p.fail("sink %s: no sink kind %q is registered", name, kind)
		return
	}
	if err := settings.Check(kind, k.Fields); err != nil {
		p.fail("sink %s: %v", name, err)
		return
	}
	cfg, err := k.Parse(settings)
	if err != nil {
		p.fail("sink %s: %s: %v", name, kind, err)
		return
	}
	p.sinks++
	p.add(&plan.Node{ID: plan.ID{Kind: plan.KindSink, Name: name}, Label: "sink " + name, Inputs: []plan.Input{s.from},
		Op: &plan.Sink{Connector: kind, Writes: cfg.Writes()}, Impl: &kindSinkNode[T]{name: name, cfg: cfg, encode: encode, at: later[T](s.n)}})
}

// kindSinkNode is the implementation of a sink of a registered kind.
type kindSinkNode[T any] struct {
	name   string
	cfg    plan.SinkConfig
	encode func(T) plan.Item
	at     *lazy[T]
}

func (s *kindSinkNode[T]) Build(c *translate.Ctx) error {
	e := c.Engine()
	ks, err := s.cfg.New(plan.Env{Job: c.Plan().Name, Field: s.name, Checkpointed: e.Checkpointed(), Log: func(l string) { e.Logf("%s", l) }})
	if err != nil {
		return fmt.Errorf("weir: sink %s: %w", s.name, err)
	}
	var opts []engine.SinkOption
	if a, ok := s.cfg.(plan.Accepter); ok {
		if g, set := a.Accepts(); set {
			opts = append(opts, engine.Accept(g))
		}
	}
	n, err := engine.NewSink[T](e, s.name, &encodedSink[T]{Sink: ks, encode: s.encode}, opts...)
	if err != nil {
		return fmt.Errorf("weir: %w", err)
	}
	s.at.c = n
	return nil
}

// encodedSink is a registered kind's sink of items as a sink of T.
type encodedSink[T any] struct {
	connector.Sink[plan.Item]
	encode func(T) plan.Item
	items  []plan.Item
}

func (s *encodedSink[T]) Write(ctx context.Context, items []T) error {
	s.items = s.items[:0]
	for i := range items {
		s.items = append(s.items, s.encode(items[i]))
	}
	err := s.Sink.Write(ctx, s.items)
	clear(s.items)
	return err
}

// The optional abilities of the kind's sink, passed on.
func (s *encodedSink[T]) Mark() []byte {
	if m, ok := s.Sink.(connector.Marker); ok {
		return m.Mark()
	}
	return nil
}

func (s *encodedSink[T]) Rewrites() bool {
	rw, ok := s.Sink.(connector.Rewriter)
	return ok && rw.Rewrites()
}

func (s *encodedSink[T]) Start(ctx context.Context) error {
	if st, ok := s.Sink.(connector.Starter); ok {
		return st.Start(ctx)
	}
	return nil
}
