package weir

import (
	"hash/maphash"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Pane is one result of one window of one key; see window.Pane.
type Pane[K comparable, O any] = window.Pane[K, O]

// Late is an event that came too late for every window it belongs to; see
// window.LateEvent.
type Late[K comparable, T any] = window.LateEvent[K, T]

// Timestamped is a stream whose elements have an event time, with the
// watermark that says how far event time has progressed.
type Timestamped[T any] struct {
	p    *Pipeline
	n    *node[stamped[T]]
	wm   watermark.Strategy
	part func(T) int
}

type stamped[T any] struct {
	v  T
	ts mtime.Time
}

// WithTimestamps gives every element its event time, ts(v) in milliseconds
// (mtime.FromTime converts a time.Time), and a watermark strategy.
func WithTimestamps[T any](s Stream[T], ts func(T) mtime.Time, wm watermark.Strategy) Timestamped[T] {
	if err := wm.Validate(); err != nil {
		s.p.fail("watermark: %v", err)
	}
	if wm.Kind == watermark.Perfect {
		s.p.fail("watermark: the perfect watermark needs to read a recorded stream ahead; use it from a job file")
	}
	out := &node[stamped[T]]{}
	s.n.add(func(v T) { out.push(stamped[T]{v, ts(v)}) })
	return Timestamped[T]{p: s.p, n: out, wm: wm}
}

// Partitioned says which input partition each element came from (0, 1, 2,
// …): each partition then has its own watermark, and the stream's watermark
// is their minimum, without the partitions that are idle.
func (t Timestamped[T]) Partitioned(part func(T) int) Timestamped[T] {
	t.part = part
	return t
}

// Keyed is a timestamped stream with a key per element: each key has its own
// windows.
type Keyed[K comparable, T any] struct {
	t   Timestamped[T]
	key func(T) K
}

// KeyBy gives every element a key.
func KeyBy[T any, K comparable](t Timestamped[T], key func(T) K) Keyed[K, T] {
	return Keyed[K, T]{t, key}
}

// Windowed is a keyed stream with a windowing strategy, ready to aggregate.
type Windowed[K comparable, T any] struct {
	k Keyed[K, T]
	s window.Strategy
}

// Window applies a windowing strategy: assigner, trigger, allowed lateness
// and accumulation mode.
func Window[K comparable, T any](k Keyed[K, T], s window.Strategy) Windowed[K, T] {
	if err := s.Validate(); err != nil {
		k.t.p.fail("%v", err)
	}
	return Windowed[K, T]{k, s}
}

// Aggregate computes f over every window of every key. It returns the panes,
// and the events too late for all of their windows (the side output).
func Aggregate[K comparable, T, A, O any](w Windowed[K, T], f aggregate.Func[T, A, O]) (Stream[Pane[K, O]], Stream[Late[K, T]]) {
	p := w.k.t.p
	panes := &node[Pane[K, O]]{}
	late := &node[Late[K, T]]{}
	agg := &aggStage[K, T, A, O]{p: p, w: w, f: f, panes: panes, late: late}
	w.k.t.n.add(agg.event)
	p.clocks = append(p.clocks, agg)
	p.stages = append(p.stages, agg)
	return Stream[Pane[K, O]]{p, panes}, Stream[Late[K, T]]{p, late}
}

// Process calls f with all the elements of each pane of each window, and
// emits its result as the pane's value. Elements come in arrival order, by
// part: a merged session's parts, and a sliding window's slices (of
// gcd(size, slide)), in order of start. f must not keep elems.
func Process[K comparable, T, O any](w Windowed[K, T], f func(key K, win window.Window, elems []T) O) (Stream[Pane[K, O]], Stream[Late[K, T]]) {
	all, late := Aggregate(w, aggregate.Collect[T]())
	return Map(all, func(p Pane[K, []T]) Pane[K, O] {
		return Pane[K, O]{
			Key: p.Key, Window: p.Window, Revision: p.Revision, Timing: p.Timing, Final: p.Final,
			Retract: p.Retract, Watermark: p.Watermark, EmittedAt: p.EmittedAt,
			Value: f(p.Key, p.Window, p.Value),
		}
	}), late
}

// aggStage is one windowed aggregation: a driver on the source side, a runner
// with its operator instances, and the nodes its results go to.
type aggStage[K comparable, T, A, O any] struct {
	p     *Pipeline
	w     Windowed[K, T]
	f     aggregate.Func[T, A, O]
	panes *node[Pane[K, O]]
	late  *node[Late[K, T]]

	r *exec.Runner[K, T, A, O]
	d *exec.Driver[K, T]
}

func (a *aggStage[K, T, A, O]) start() {
	if a.r != nil {
		return
	}
	seed := maphash.MakeSeed()
	a.r = exec.NewRunner(exec.Config[K, T, A, O]{
		Strategy:    a.w.s,
		Agg:         a.f,
		Parallelism: a.p.parallelism,
		BatchSize:   a.p.batchSize,
		Hash:        func(k K) uint64 { return maphash.Comparable(seed, k) },
		Emit:        a.emit,
	})
	a.d = exec.NewDriver[K, T](a.r, a.w.k.t.wm, a.w.s.Trigger.UsesProcessingTime())
}

func (a *aggStage[K, T, A, O]) event(s stamped[T]) {
	a.start()
	part := 0
	if pf := a.w.k.t.part; pf != nil {
		part = pf(s.v)
	}
	a.d.Event(part, a.w.k.key(s.v), s.ts, s.v)
}

func (a *aggStage[K, T, A, O]) emit(outs []exec.Out[K, T, O]) error {
	for i := range outs {
		o := &outs[i]
		if o.Kind == exec.OutLate {
			a.late.push(o.Late)
		} else {
			a.panes.push(o.Pane)
		}
	}
	if err := a.p.sinkErr.Load(); err != nil {
		return *err
	}
	return nil
}

func (a *aggStage[K, T, A, O]) advance(now mtime.Time) {
	a.start()
	a.d.Advance(now)
}

func (a *aggStage[K, T, A, O]) script(w mtime.Time) {
	a.start()
	if a.w.k.t.wm.Kind == watermark.Scripted {
		a.d.SetWatermark(w)
	}
}

func (a *aggStage[K, T, A, O]) flush() {
	a.start()
	a.r.Flush()
}

func (a *aggStage[K, T, A, O]) end() {
	a.start()
	a.d.End()
}

func (a *aggStage[K, T, A, O]) stop() {
	a.start()
	a.r.Stop()
}

func (a *aggStage[K, T, A, O]) wait() error {
	a.start()
	return a.r.Wait()
}
