package weir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/translate"
)

// Source produces a stream in arrival order, with the processing time at
// which each element arrives and, for a scripted watermark, the watermark:
// a scripted stream (package weirtest's TestStream is one). Run calls the
// Emitter from one goroutine and returns when the stream ends (a bounded
// source) or ctx is done. A Source cannot be resumed from a checkpoint: a
// pipeline with checkpoints reads a connector.Source (Read) or a sequence
// (FromSeq).
type Source[T any] interface {
	Run(ctx context.Context, out Emitter[T]) error
}

// Emitter is how a source hands its stream to the pipeline.
type Emitter[T any] interface {
	// Emit hands over v, arrived at processing time arrival;
	// mtime.MinTime means now, by the wall clock.
	Emit(v T, arrival mtime.Time)
	// AdvanceProcessingTime moves processing time to t (mtime.MinTime:
	// now) without an element, firing processing-time triggers due by then.
	AdvanceProcessingTime(t mtime.Time)
	// Watermark moves a scripted watermark (watermark.ScriptedWatermark) to
	// w; other watermarks ignore it.
	Watermark(w mtime.Time)
}

// feedBatchSize is how many elements an in-memory source hands over at a
// time.
const feedBatchSize = 1024

// step is one element, processing-time advance or watermark of a typed
// source.
type step[T any] struct {
	kind uint8 // 0 element, 1 processing time, 2 watermark
	v    T
	t    mtime.Time
}

// typedBatch is a batch of a typed source, delivered to the root stream.
type typedBatch[T any] struct {
	steps []step[T]
	pos   []byte
	root  *engine.Stream[T]
	e     *engine.Engine
	free  chan *typedBatch[T]
}

func (b *typedBatch[T]) Deliver(now mtime.Time) {
	wall := mtime.MinTime
	for i := range b.steps {
		st := &b.steps[i]
		at := st.t
		if at == mtime.MinTime && (st.kind != 2) {
			if wall == mtime.MinTime {
				wall = mtime.Now()
			}
			at = max(wall, now)
		}
		switch st.kind {
		case 0:
			b.e.Advance(at)
			b.root.Push(st.v)
		case 1:
			b.e.Advance(at)
		case 2:
			b.e.ScriptWatermark(st.t)
		}
	}
}

func (b *typedBatch[T]) Position() []byte { return b.pos }

func (b *typedBatch[T]) Release() {
	clear(b.steps)
	b.steps = b.steps[:0]
	select {
	case b.free <- b:
	default:
	}
}

// batches are a typed source's batches: those delivered come back to free
// (Release) for the source to fill again.
type batches[T any] struct {
	e    *engine.Engine
	root *engine.Stream[T]
	free chan *typedBatch[T]
}

func newBatches[T any](e *engine.Engine, root *engine.Stream[T]) batches[T] {
	return batches[T]{e: e, root: root, free: make(chan *typedBatch[T], engine.FreeBatches)}
}

// batch is a free batch, or a new one.
func (b *batches[T]) batch() *typedBatch[T] {
	select {
	case x := <-b.free:
		return x
	default:
		return &typedBatch[T]{root: b.root, e: b.e, free: b.free}
	}
}

// addFeed adds a typed source to the plan: its root stream gets the source
// loop's signals.
func addFeed[T any](p *Pipeline, root *engine.Stream[T], opts []PartOption, mk func(e *engine.Engine, root *engine.Stream[T]) engine.Feed) Stream[T] {
	name := p.part("source", partOptions(opts), fmt.Sprintf("source-%d", p.feeds))
	p.feeds++
	id := plan.ID{Kind: plan.KindSource, Name: name}
	p.add(&plan.Node{ID: id, Label: "source " + name, Op: &plan.Source{}, Impl: &feedNode[T]{name: name, root: root, mk: mk}})
	return Stream[T]{p: p, n: root, from: plan.Input{From: id}}
}

// feedNode is the implementation of a typed source's node.
type feedNode[T any] struct {
	name string
	root *engine.Stream[T]
	mk   func(e *engine.Engine, root *engine.Stream[T]) engine.Feed
}

func (f *feedNode[T]) Build(c *translate.Ctx) error {
	e := c.Engine()
	e.OnSignal(rootSignals[T]{f.root})
	return e.AddFeed(f.name, f.mk(e, f.root))
}

// rootSignals passes the source loop's signals to a root stream.
type rootSignals[T any] struct{ s *engine.Stream[T] }

func (r rootSignals[T]) Push(struct{})           {}
func (r rootSignals[T]) Signal(sg engine.Signal) { r.s.Signal(sg) }

// From reads a stream from a scripted source; Named names it.
func From[T any](p *Pipeline, src Source[T], opts ...PartOption) Stream[T] {
	return addFeed(p, &engine.Stream[T]{}, opts, func(e *engine.Engine, root *engine.Stream[T]) engine.Feed {
		return &emitterFeed[T]{src: src, batches: newBatches(e, root)}
	})
}

// emitterFeed runs a Source in the feed goroutine.
type emitterFeed[T any] struct {
	batches[T]
	src  Source[T]
	out  chan *typedBatch[T]
	done chan error
}

func (f *emitterFeed[T]) Open(ctx context.Context, pos []byte) error {
	if pos != nil {
		return errors.New("weir.From: a scripted source cannot resume from a checkpoint; read a connector.Source (Read) or a sequence (FromSeq)")
	}
	f.out, f.done = make(chan *typedBatch[T], 2), make(chan error, 1)
	go func() {
		em := &emitter[T]{f: f, ctx: ctx}
		err := f.src.Run(ctx, em)
		if err == nil {
			err = em.send()
		}
		f.done <- err
		close(f.out)
	}()
	return nil
}

func (f *emitterFeed[T]) Read(ctx context.Context) (engine.FeedBatch, error) {
	select {
	case b, ok := <-f.out:
		if ok {
			return b, nil
		}
		if err := <-f.done; err != nil {
			return nil, err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *emitterFeed[T]) Close() error { return nil }

type emitter[T any] struct {
	f   *emitterFeed[T]
	ctx context.Context
	cur *typedBatch[T]
}

func (em *emitter[T]) add(s step[T]) {
	if em.cur == nil {
		em.cur = em.f.batch()
	}
	em.cur.steps = append(em.cur.steps, s)
	if len(em.cur.steps) >= feedBatchSize || s.kind != 0 {
		em.send()
	}
}

func (em *emitter[T]) send() error {
	if em.cur == nil {
		return nil
	}
	select {
	case em.f.out <- em.cur:
		em.cur = nil
		return nil
	case <-em.ctx.Done():
		return em.ctx.Err()
	}
}

func (em *emitter[T]) Emit(v T, arrival mtime.Time) { em.add(step[T]{kind: 0, v: v, t: arrival}) }
func (em *emitter[T]) AdvanceProcessingTime(t mtime.Time) {
	em.add(step[T]{kind: 1, t: t})
}
func (em *emitter[T]) Watermark(w mtime.Time) { em.add(step[T]{kind: 2, t: w}) }

// FromSeq reads the pairs (element, arrival time) of seq; an arrival of
// mtime.MinTime means now, by the wall clock. With Checkpoints, a restore
// iterates seq again and skips the elements the checkpoint had read: seq
// must give the same elements each time. Named names the source: its
// position then follows its name, whatever sources are added ahead of it.
// The sequence runs in a goroutine of its own, a few batches of elements
// ahead of the pipeline; once the pipeline stops, yield returns false, and
// Run returns after the sequence has.
func FromSeq[T any](p *Pipeline, seq iter.Seq2[T, mtime.Time], opts ...PartOption) Stream[T] {
	return addFeed(p, &engine.Stream[T]{}, opts, func(e *engine.Engine, root *engine.Stream[T]) engine.Feed {
		return &seqFeed[T]{seq: seq, batches: newBatches(e, root)}
	})
}

// FromSlice reads the elements of xs, arriving now by the wall clock;
// Named names the source.
func FromSlice[T any](p *Pipeline, xs []T, opts ...PartOption) Stream[T] {
	return FromSeq(p, func(yield func(T, mtime.Time) bool) {
		for _, x := range xs {
			if !yield(x, mtime.MinTime) {
				return
			}
		}
	}, opts...)
}

// seqFeed reads a sequence in a goroutine of its own, which hands its
// elements over in batches: a sequence pulled one element at a time
// (iter.Pull2) switched goroutines at every element, which cost more than
// most pipelines' work on it.
type seqFeed[T any] struct {
	batches[T]
	seq iter.Seq2[T, mtime.Time]

	out    chan *typedBatch[T] // full batches, closed at the end
	quit   chan struct{}       // closed by Close: the sequence stops
	closed bool                // Close has closed quit
	done   chan struct{}       // closed when the goroutine has returned
	err    error               // why the goroutine stopped early, read after out is closed
	pan    any                 // what the sequence panicked with
}

func (f *seqFeed[T]) Open(ctx context.Context, pos []byte) error {
	var skip uint64
	if pos != nil {
		d := enc.NewDecoder(pos)
		skip = d.Uvarint()
		if d.Err() != nil {
			return fmt.Errorf("the checkpointed position is corrupt")
		}
	}
	f.out, f.quit, f.done = make(chan *typedBatch[T], 2), make(chan struct{}), make(chan struct{})
	ready := make(chan struct{})
	go f.run(skip, ready)
	select {
	case <-ready:
		return nil
	case <-f.done:
		// The sequence ended (or panicked) before the elements to skip:
		// what the goroutine wrote is read after it returned.
		if f.pan != nil {
			panic(f.pan)
		}
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run iterates the sequence, skips the elements a checkpoint had read
// (then closes ready) and sends the rest in batches, each with the
// position after it.
func (f *seqFeed[T]) run(skip uint64, ready chan struct{}) {
	defer close(f.done)
	defer close(f.out)
	defer func() {
		if p := recover(); p != nil {
			f.pan = p
		}
	}()
	var n uint64
	b := f.batch()
	send := func() bool {
		b.pos = enc.AppendUvarint(nil, n)
		select {
		case f.out <- b:
			b = f.batch()
			return true
		case <-f.quit:
			return false
		}
	}
	if skip == 0 {
		close(ready)
	}
	stopped := false
	f.seq(func(v T, at mtime.Time) bool {
		n++
		if n <= skip {
			if n == skip {
				close(ready)
			}
			if n&1023 == 0 {
				select {
				case <-f.quit:
					stopped = true
					return false
				default:
				}
			}
			return true
		}
		b.steps = append(b.steps, step[T]{v: v, t: at})
		if len(b.steps) == feedBatchSize && !send() {
			stopped = true
			return false
		}
		return true
	})
	switch {
	case stopped:
	case n < skip:
		f.err = fmt.Errorf("the sequence has %d elements, fewer than the %d the checkpoint had read: it is not the same sequence", n, skip)
	case len(b.steps) > 0:
		send()
	}
}

func (f *seqFeed[T]) Read(ctx context.Context) (engine.FeedBatch, error) {
	select {
	case b, ok := <-f.out:
		if ok {
			return b, nil
		}
		if f.pan != nil {
			panic(f.pan)
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops the sequence and waits for it: at its next element, or its
// end.
func (f *seqFeed[T]) Close() error {
	if f.quit != nil && !f.closed {
		f.closed = true
		close(f.quit)
		<-f.done
	}
	return nil
}

// Rejected is a record of a connector source that its decoder did not
// accept.
type Rejected struct {
	Record connector.Record
	Err    error
}

// Read reads a connector source: decode turns each record into an element
// (its Arrival always set: the source's, or the clock's when the engine took
// it, so that an element may keep it for ingestion time, WithTimestamps
// over it);
// a record it fails on goes to the second stream with its error (and is
// counted there, never dropped silently). name identifies the source in
// checkpoints and errors: a restore finds the source's positions by it, so
// it is unique among the pipeline's sources and stable from run to run.
func Read[T any](p *Pipeline, name string, src connector.Source, decode func(connector.Record) (T, error)) (Stream[T], Stream[Rejected]) {
	root := &engine.Stream[T]{}
	rej := &engine.Stream[Rejected]{}
	p.register("source", name)
	p.feeds++
	id := plan.ID{Kind: plan.KindSource, Name: name}
	p.add(&plan.Node{ID: id, Label: "source " + name, Op: &plan.Source{}, Impl: &readNode[T]{name: name, src: src, decode: decode, root: root, rej: rej}})
	return Stream[T]{p: p, n: root, from: plan.Input{From: id}}, Stream[Rejected]{p: p, n: rej, from: plan.Input{From: id, Port: plan.Rejected}}
}

// readNode is the implementation of a connector source's node.
type readNode[T any] struct {
	name   string
	src    connector.Source
	kind   plan.SourceConfig // a registered kind's, when src is not given
	decode func(connector.Record) (T, error)
	root   *engine.Stream[T]
	rej    *engine.Stream[Rejected]
}

func (r *readNode[T]) Build(c *translate.Ctx) error {
	e := c.Engine()
	if r.kind != nil {
		src, err := r.kind.New(plan.Env{Job: c.Plan().Name, Field: r.name, Checkpointed: e.Checkpointed(), Log: func(s string) { e.Logf("%s", s) }})
		if err != nil {
			return fmt.Errorf("weir: source %s: %w", r.name, err)
		}
		r.src = src
	}
	h := &recordHandler[T]{e: e, decode: r.decode, out: r.root, rej: r.rej}
	// The heads of the aggregations it feeds hear of its partitions (a
	// group's task follows the group's watermark through them).
	for _, in := range c.Reached(plan.KindAggregation) {
		if bh, ok := in.(engine.BacklogHandler); ok {
			h.backlog = append(h.backlog, bh)
		}
	}
	e.OnSignal(rootSignals[T]{r.root})
	e.OnSignal(rootSignals[Rejected]{r.rej})
	return e.AddSource(r.name, r.src, h)
}

type recordHandler[T any] struct {
	e       *engine.Engine
	decode  func(connector.Record) (T, error)
	out     *engine.Stream[T]
	rej     *engine.Stream[Rejected]
	n       int
	wall    mtime.Time
	backlog []engine.BacklogHandler
}

func (h *recordHandler[T]) Partitions([]connector.Partition, mtime.Time) {}

// Backlog implements engine.BacklogHandler: the source's reports go to the
// heads of the aggregations it feeds (which follow a group's watermark,
// InGroup).
func (h *recordHandler[T]) Backlog(reports []connector.PartitionReport, now mtime.Time) {
	for _, b := range h.backlog {
		b.Backlog(reports, now)
	}
}

func (h *recordHandler[T]) Record(r *connector.Record) {
	at := r.Arrival
	if at == mtime.MinTime {
		// Reading the wall clock per record would cost more than the
		// rest of its path; once per 64 records is precise enough.
		if h.n&63 == 0 || h.wall == mtime.MinTime {
			h.wall = mtime.Now()
		}
		h.n++
		at = h.wall
		// decode sees when the record came, whatever the source knew:
		// ingestion time is a timestamp of it.
		r.Arrival = at
	}
	h.e.Advance(at)
	v, err := h.decode(*r)
	if err != nil {
		h.rej.Push(Rejected{Record: *r, Err: err})
		return
	}
	h.out.Push(v)
}

// Union merges streams of the source loop (streams read from sources, and
// streams made from them with Map, Filter and FlatMap) into one, in the order
// their elements arrive. Streams made by an aggregation cannot be merged with
// others: each comes from a goroutine of its own.
func Union[T any](streams ...Stream[T]) Stream[T] {
	if len(streams) == 0 {
		panic("weir.Union: no stream")
	}
	p := streams[0].p
	out := &engine.Stream[T]{}
	var inputs []plan.Input
	for i, s := range streams {
		if s.origin != 0 {
			p.fail("Union: stream %d is the output of an aggregation; only streams read from sources can be merged", i)
			return Stream[T]{p: p, n: out, from: s.from}
		}
		inputs = append(inputs, s.from)
		s.n.Subscribe(engine.Func[T]{OnPush: out.Push, OnSignal: unionSignal(i, out)})
	}
	return unionNode(p, inputs, out)
}

// unionSignal is how the union's input i passes signals on to out: every
// stream of the source loop gets the same signals, so only the first
// input passes them on, once.
func unionSignal[T any](i int, out *engine.Stream[T]) func(engine.Signal) {
	if i > 0 {
		return func(engine.Signal) {}
	}
	return out.Signal
}

// unionNode adds the plan's node of a union of inputs, whose stream is out
// (its inputs wired to it already).
func unionNode[T any](p *Pipeline, inputs []plan.Input, out *engine.Stream[T]) Stream[T] {
	p.steps++
	id := plan.ID{Kind: plan.KindTransform, Name: fmt.Sprintf("union-%d", p.steps)}
	p.add(&plan.Node{ID: id, Label: "union", Inputs: inputs, Op: &plan.Transform{Does: "union"}, Impl: wired{}})
	return Stream[T]{p: p, n: out, from: plan.Input{From: id}}
}

// ReadKind reads a source of a kind registered in package plan (as a job
// file's source: {KIND: {...}}), with its settings, as Read reads a
// connector.Source: decode turns each record into an element, and a
// record it fails on goes to the second stream. A kind that is not
// registered, or settings it refuses, are an error of the pipeline.
func ReadKind[T any](p *Pipeline, name, kind string, settings plan.Values, decode func(connector.Record) (T, error)) (Stream[T], Stream[Rejected]) {
	root := &engine.Stream[T]{}
	rej := &engine.Stream[Rejected]{}
	p.register("source", name)
	p.feeds++
	id := plan.ID{Kind: plan.KindSource, Name: name}
	out, rejected := Stream[T]{p: p, n: root, from: plan.Input{From: id}}, Stream[Rejected]{p: p, n: rej, from: plan.Input{From: id, Port: plan.Rejected}}
	k, ok := plan.LookupSource(kind)
	if !ok {
		p.fail("source %s: no source kind %q is registered", name, kind)
		return out, rejected
	}
	if err := settings.Check(kind, k.Fields); err != nil {
		p.fail("source %s: %v", name, err)
		return out, rejected
	}
	cfg, err := k.Parse(settings)
	if err != nil {
		p.fail("source %s: %s: %v", name, kind, err)
		return out, rejected
	}
	p.add(&plan.Node{ID: id, Label: "source " + name, Op: &plan.Source{Connector: kind, Reads: cfg.Reads()},
		Impl: &readNode[T]{name: name, decode: decode, root: root, rej: rej, kind: cfg}})
	return out, rejected
}
