package weir

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/weirstream/weir/mtime"
)

// Pipeline is a graph of streams from one source to its sinks. Build it with
// From, the stream functions and Sink, then call Run once.
type Pipeline struct {
	parallelism int
	batchSize   int

	run     func(ctx context.Context) error // drives the source
	clocks  []clockUser                     // every windowed aggregation's driver
	stages  []stage                         // every windowed aggregation's runner
	sinks   int
	err     error
	started bool
	sinkErr atomic.Pointer[error]
	cancel  context.CancelFunc
}

// setErr records the first error of a sink and stops the source.
func (p *Pipeline) setErr(err error) {
	if p.sinkErr.CompareAndSwap(nil, &err) && p.cancel != nil {
		p.cancel()
	}
}

// clockUser is the source side of one windowed aggregation.
type clockUser interface {
	advance(now mtime.Time)
	script(w mtime.Time)
	end()
	flush()
}

// stage is the keyed side of one windowed aggregation.
type stage interface {
	wait() error
	stop()
}

// Option configures a Pipeline.
type Option func(*Pipeline)

// Parallelism runs every windowed aggregation in n operator instances, each in
// its own goroutine and owning a share of the keys (default 1). Results are
// the same, in the same order, for every n.
func Parallelism(n int) Option { return func(p *Pipeline) { p.parallelism = max(n, 1) } }

// BatchSize sets how many events cross from the source goroutine to an
// operator instance at a time (default 1024).
func BatchSize(n int) Option { return func(p *Pipeline) { p.batchSize = n } }

// NewPipeline returns an empty pipeline.
func NewPipeline(opts ...Option) *Pipeline {
	p := &Pipeline{parallelism: 1, batchSize: 1024}
	for _, o := range opts {
		o(p)
	}
	return p
}

func (p *Pipeline) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("weir: "+format, args...)
	}
}

// Source produces a stream in arrival order. Run calls Emitter methods from
// one goroutine and returns when the stream ends (a bounded source) or ctx is
// done.
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
	// A live source that may wait for input calls it while it waits.
	AdvanceProcessingTime(t mtime.Time)
	// Watermark moves a scripted watermark (watermark.ScriptedWatermark) to
	// w; other watermarks ignore it.
	Watermark(w mtime.Time)
}

// From reads a stream from a source. A pipeline has exactly one source.
func From[T any](p *Pipeline, src Source[T]) Stream[T] {
	root := &node[T]{}
	if p.run != nil {
		p.fail("a pipeline reads one source; From was called twice")
		return Stream[T]{p, root}
	}
	p.run = func(ctx context.Context) error {
		e := &emitter[T]{p: p, root: root}
		return src.Run(ctx, e)
	}
	return Stream[T]{p, root}
}

// FromSeq reads the pairs (element, arrival time) of seq; an arrival of
// mtime.MinTime means now, by the wall clock.
func FromSeq[T any](p *Pipeline, seq iter.Seq2[T, mtime.Time]) Stream[T] {
	return From[T](p, seqSource[T](seq))
}

// FromSlice reads the elements of xs, arriving now by the wall clock.
func FromSlice[T any](p *Pipeline, xs []T) Stream[T] {
	return FromSeq(p, func(yield func(T, mtime.Time) bool) {
		for _, x := range xs {
			if !yield(x, mtime.MinTime) {
				return
			}
		}
	})
}

type seqSource[T any] iter.Seq2[T, mtime.Time]

func (s seqSource[T]) Run(ctx context.Context, out Emitter[T]) error {
	n := 0
	for v, at := range s {
		if n++; n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		out.Emit(v, at)
	}
	return nil
}

type emitter[T any] struct {
	p    *Pipeline
	root *node[T]
	now  mtime.Time
	n    int
}

func (e *emitter[T]) clock(at mtime.Time) mtime.Time {
	if at != mtime.MinTime {
		return at
	}
	// Reading the wall clock per event would cost more than the rest of the
	// event's path; once per 64 events is precise enough for arrival.
	if e.n&63 == 0 || e.now == mtime.MinTime {
		e.now = mtime.Now()
	}
	e.n++
	return e.now
}

func (e *emitter[T]) Emit(v T, arrival mtime.Time) {
	now := e.clock(arrival)
	for _, c := range e.p.clocks {
		c.advance(now)
	}
	e.root.push(v)
}

func (e *emitter[T]) AdvanceProcessingTime(t mtime.Time) {
	if t == mtime.MinTime {
		t = mtime.Now()
		e.now = t
	}
	for _, c := range e.p.clocks {
		c.advance(t)
		c.flush()
	}
}

func (e *emitter[T]) Watermark(w mtime.Time) {
	for _, c := range e.p.clocks {
		c.script(w)
	}
}

// Run executes the pipeline until its source ends (then every window fires and
// closes) or ctx is done (then windows stay open and Run returns ctx.Err()).
// It returns the first error of the source or of a sink.
func (p *Pipeline) Run(ctx context.Context) error {
	if p.err != nil {
		return p.err
	}
	if p.started {
		return errors.New("weir: a pipeline runs once")
	}
	p.started = true
	if p.run == nil {
		return errors.New("weir: the pipeline has no source (call From)")
	}
	if p.sinks == 0 {
		return errors.New("weir: the pipeline has no sink: its results would go nowhere (call Sink)")
	}
	ctx, p.cancel = context.WithCancel(ctx)
	defer p.cancel()
	srcErr := p.run(ctx)
	if srcErr == nil && ctx.Err() != nil {
		srcErr = ctx.Err()
	}
	if e := p.sinkErr.Load(); e != nil {
		srcErr = *e
	}
	for _, c := range p.clocks {
		if srcErr == nil {
			c.end()
		}
	}
	var first error
	for _, s := range p.stages {
		if srcErr != nil {
			s.stop()
		}
		if err := s.wait(); err != nil && first == nil {
			first = err
		}
	}
	if e := p.sinkErr.Load(); e != nil {
		return *e
	}
	if srcErr != nil {
		return srcErr
	}
	return first
}
