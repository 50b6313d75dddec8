package weir

import (
	"fmt"
	"reflect"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
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
	s    Stream[T]
	ts   func(T) mtime.Time
	wm   watermark.Strategy
	part func(T) int
}

// WithTimestamps gives every element its event time, ts(v) in milliseconds
// (mtime.FromTime converts a time.Time), and a watermark strategy.
//
// On a stream of panes (the output of an aggregation, to be windowed again),
// watermark.ScriptedWatermark() follows the upstream aggregation's watermark,
// and PaneTime is the usual event time.
func WithTimestamps[T any](s Stream[T], ts func(T) mtime.Time, wm watermark.Strategy) Timestamped[T] {
	if err := wm.Validate(); err != nil {
		s.p.fail("watermark: %v", err)
	}
	if wm.Kind == watermark.Perfect {
		s.p.fail("watermark: the perfect watermark needs to read a recorded stream ahead; use it from a job file")
	}
	return Timestamped[T]{s: s, ts: ts, wm: wm}
}

// PaneTime is the event time of a pane as an element of the next stage: the
// last instant of its window (Beam's end-of-window timestamp), so that it
// falls in the window of the next stage that contains its window's end.
func PaneTime[K comparable, O any](p Pane[K, O]) mtime.Time { return p.Window.MaxTimestamp() }

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
		k.t.s.p.fail("%v", err)
	}
	return Windowed[K, T]{k, s}
}

// Aggregate computes f over every window of every key. It returns the panes,
// and the events too late for all of their windows (the side output). Both
// streams come from the aggregation's own goroutine; an aggregation of them
// (a windowed result windowed again) follows this one's clocks. Named names
// the aggregation: its open windows then follow its name. With Checkpoints,
// a key, accumulator or retracted result type that the JSON state codec
// cannot round-trip is an error of the pipeline (see Checkpoints).
func Aggregate[K comparable, T, A, O any](w Windowed[K, T], f aggregate.Func[T, A, O], opts ...PartOption) (Stream[Pane[K, O]], Stream[Late[K, T]]) {
	t := w.k.t
	p := t.s.p
	p.stages++
	id := p.stages
	c := partOptions(opts)
	name := p.part("aggregation", c, fmt.Sprintf("stage-%d", id))
	// An unnamed aggregation keeps the participant name and the line of
	// the fingerprint it always had.
	label, stage := fmt.Sprint(id), name
	if c.set {
		label, stage = fmt.Sprintf("%q", name), "stage:"+name
	}
	if p.cfg.Checkpoint.Dir != "" {
		p.checkState(label, w.s.Mode, reflect.TypeFor[K](), reflect.TypeFor[A](), reflect.TypeFor[O]())
	}
	panes := &engine.Stream[Pane[K, O]]{}
	late := &engine.Stream[Late[K, T]]{}
	in := later[T](t.s.n)
	p.shape = append(p.shape, fmt.Sprintf("stage %s: %T%+v %+v %+v %T", label, w.s.Assigner, w.s.Assigner, w.s, t.wm, f))
	p.addPart(stagePart(stage, label, w.s, t.wm, reflect.TypeFor[K]().String(), fmt.Sprintf("%T", f), p.parallelism))
	p.build(func(e *engine.Engine) error {
		cfg := engine.WindowConfig[K, T, A, O]{
			Name: stage, Strategy: w.s, Watermark: t.wm, Agg: f,
			Parallelism: p.parallelism, BatchSize: p.batchSize, Hash: stableHash[K](e.Checkpointed()),
			Panes: panes, Late: late,
		}
		if e.Checkpointed() {
			cfg.Codec = jsonCodec[K, A, O]{}
		}
		st, err := engine.NewWindow(e, cfg)
		if err != nil {
			return fmt.Errorf("weir: aggregation %s: %w", label, err)
		}
		in.c = &stageInput[K, T, A, O]{w: st, ts: t.ts, key: w.k.key, part: t.part}
		if t.s.origin == 0 && t.part == nil && t.wm.Kind != watermark.Scripted {
			// Read from a source: in a group, it follows the group's
			// watermark while its partition is idle.
			p.followers = append(p.followers, st)
		}
		return nil
	})
	return Stream[Pane[K, O]]{p: p, n: panes, origin: id}, Stream[Late[K, T]]{p: p, n: late, origin: id}
}

// stageInput feeds an aggregation from its input stream.
type stageInput[K comparable, T, A, O any] struct {
	w    *engine.Window[K, T, A, O]
	ts   func(T) mtime.Time
	key  func(T) K
	part func(T) int
}

func (s *stageInput[K, T, A, O]) Push(v T) {
	part := 0
	if s.part != nil {
		part = s.part(v)
	}
	s.w.Event(part, s.key(v), s.ts(v), v)
}

func (s *stageInput[K, T, A, O]) Signal(sg engine.Signal) { s.w.Signal(sg) }

// Process calls f with all the elements of each pane of each window, and
// emits its result as the pane's value. Elements come in arrival order, by
// part: a merged session's parts, and a sliding window's slices (of
// gcd(size, slide)), in order of start. f must not keep elems. Named names
// the aggregation.
func Process[K comparable, T, O any](w Windowed[K, T], f func(key K, win window.Window, elems []T) O, opts ...PartOption) (Stream[Pane[K, O]], Stream[Late[K, T]]) {
	all, late := Aggregate(w, aggregate.Collect[T](), opts...)
	return Map(all, func(p Pane[K, []T]) Pane[K, O] {
		return Pane[K, O]{
			Key: p.Key, Window: p.Window, Revision: p.Revision, Timing: p.Timing, Final: p.Final,
			Retract: p.Retract, Watermark: p.Watermark, EmittedAt: p.EmittedAt,
			Value: f(p.Key, p.Window, p.Value),
		}
	}), late
}
