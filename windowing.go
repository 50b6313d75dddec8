package weir

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/translate"
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
	// id and horizon: the de-duplication of the aggregations it feeds;
	// version, when set, versions the elements (Versioned).
	id      func(T) string
	horizon mtime.Time
	version func(T) int64
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

// Deduplicated drops, in the aggregations and joins the stream feeds,
// every element whose id was seen within horizon of event time before it,
// as a job file's id and dedup_horizon do: a duplicate is counted (in the
// status's accounting), never windowed or joined twice; an element older
// than the watermark minus the horizon, whose earlier delivery would have
// been forgotten, goes to the late events (a join's late records) with the
// reason beyond_dedup_horizon instead. The ids are kept in checkpoints.
func (t Timestamped[T]) Deduplicated(horizon time.Duration, id func(T) string) Timestamped[T] {
	if horizon <= 0 || id == nil {
		t.s.p.fail("Deduplicated: expected a horizon above 0 and an id function, got %s", horizon)
		return t
	}
	t.id, t.horizon = id, mtime.Millis(horizon)
	return t
}

// Versioned makes the elements of a Deduplicated stream versioned, as a
// job file's version_field does: of two elements with one id within the
// horizon, the one with the higher version(v) replaces the other in the
// results of the aggregations the stream feeds (the earlier one is taken
// back out of its windows, which fire again as for a late element, and the
// new one added); the same version again is a duplicate; a lower version
// arriving after a higher one goes to the late events with the reason
// superseded, and a revision whose earlier version's windows, or its own,
// are past their allowed lateness with the reason revision_too_late (the
// results keep the earlier version). Each is counted in the status.
//
// Taking an element back out needs an aggregate that can
// (aggregate.Retracter: Count, Sum, Avg), windows that are not sessions,
// and an element type and key type that round-trip through encoding/json:
// the de-duplication state keeps the version applied, as JSON, to withdraw
// it. Aggregate refuses a versioned stream otherwise.
func (t Timestamped[T]) Versioned(version func(T) int64) Timestamped[T] {
	if version == nil || t.id == nil {
		t.s.p.fail("Versioned: expected a version function, on a Deduplicated stream")
		return t
	}
	t.version = version
	return t
}

// Keyed is a timestamped stream with a key per element: each key has its own
// windows.
type Keyed[K comparable, T any] struct {
	t   Timestamped[T]
	key func(T) K
	// feed, when set, is given the head of the aggregation of the
	// stream, which its inputs then feed themselves (a co-group's): t's
	// stream carries the signals alone.
	feed func(*engine.Head[K, T])
}

// KeyBy gives every element a key.
func KeyBy[T any, K comparable](t Timestamped[T], key func(T) K) Keyed[K, T] {
	return Keyed[K, T]{t: t, key: key}
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
	if p.encoded() != "" {
		p.checkState(label, w.s.Mode, reflect.TypeFor[K](), reflect.TypeFor[A](), reflect.TypeFor[O]())
	}
	panes := &engine.Stream[Pane[K, O]]{}
	late := &engine.Stream[Late[K, T]]{}
	p.legacy = append(p.legacy, fmt.Sprintf("stage %s: %T%+v %+v %s %T", label, w.s.Assigner, w.s.Assigner, w.s, t.wm.Fingerprint(), f))
	node := plan.ID{Kind: plan.KindAggregation, Name: stage}
	op := &plan.Aggregation{Strategy: w.s, Watermark: t.wm, Format: stateFormat, Parallelism: p.o.parallelism,
		Layout: []plan.Setting{
			{Field: "key", Value: reflect.TypeFor[K]().String()},
			{Field: "aggregate", Value: fmt.Sprintf("%T", f)},
		},
		Settings: []plan.Setting{translate.ParallelismSetting(p.o.parallelism)},
		// Read from a source: in a group, it follows the group's
		// watermark while its partition is idle.
		Follows: t.s.origin == 0 && t.part == nil && t.wm.Kind != watermark.Scripted,
	}
	if t.id != nil {
		op.Dedup = &plan.Dedup{Field: "function", Horizon: t.horizon}
	}
	if t.version != nil {
		op.Dedup.Version = "function"
		if !aggregate.CanRetract(f) || w.s.Assigner.Merging() || w.s.Trigger.Composite != nil {
			p.fail("aggregation %s: a Versioned stream needs an aggregate that can take an element back out (aggregate.Retracter: Count, Sum, Avg; %T cannot), windows that are not sessions and a trigger that is not composite (which may finish a window)", label, f)
		}
	}
	agg := &aggNode[K, T, A, O]{label: label, strategy: w.s, t: t, key: w.k.key, feed: w.k.feed, f: f, batch: p.o.batchSize,
		panes: panes, late: late, in: later[T](t.s.n), disk: p.o.disk}
	p.add(&plan.Node{ID: node, Label: "aggregation " + label, Inputs: []plan.Input{t.s.from}, Op: op, Impl: agg})
	return Stream[Pane[K, O]]{p: p, n: panes, from: plan.Input{From: node}, origin: id},
		Stream[Late[K, T]]{p: p, n: late, from: plan.Input{From: node, Port: plan.Late}, origin: id}
}

// aggNode is the implementation of an aggregation's node: a head (the
// accounting of its input, and its de-duplication) and a window stage.
type aggNode[K comparable, T, A, O any] struct {
	label    string
	strategy window.Strategy
	t        Timestamped[T]
	key      func(T) K
	feed     func(*engine.Head[K, T]) // Keyed's
	f        aggregate.Func[T, A, O]
	batch    int
	panes    *engine.Stream[Pane[K, O]]
	late     *engine.Stream[Late[K, T]]
	in       *lazy[T]
	disk     *onDisk // nil: windows in memory
}

func (a *aggNode[K, T, A, O]) Build(c *translate.Ctx) error {
	e := c.Engine()
	op := c.Node().Op.(*plan.Aggregation)
	cfg := engine.WindowConfig[K, T, A, O]{
		Name: c.Participant(), Strategy: a.strategy, Watermark: a.t.wm, Agg: a.f,
		Parallelism: op.Parallelism, BatchSize: a.batch, Hash: stableHash[K](e.Checkpointed()),
		Panes: a.panes, Late: a.late,
	}
	if e.Checkpointed() || a.disk != nil {
		cfg.Codec = jsonCodec[K, A, O]{}
	}
	if a.disk != nil {
		db, err := a.disk.open(e, "aggregation "+a.label)
		if err != nil {
			return err
		}
		cfg.State = db
	}
	st, err := engine.NewWindow(e, cfg)
	if err != nil {
		return fmt.Errorf("weir: aggregation %s: %w", a.label, err)
	}
	hc := engine.HeadConfig[K, T]{Name: translate.HeadName(c.Node().ID), Source: c.Node().Label, Window: st,
		GroupWatermark: c.GroupWatermark(c.Node())}
	switch {
	case op.Dedup != nil && cfg.State != nil:
		hc.Dedup = cfg.State.Dedup(op.Dedup.Horizon)
	case op.Dedup != nil:
		hc.Dedup = state.NewMemoryDedup(op.Dedup.Horizon)
	}
	if a.t.version != nil {
		hc.Versions = jsonVersions[K, T]()
	}
	h, err := engine.NewHead(e, hc)
	if err != nil {
		return fmt.Errorf("weir: aggregation %s: %w", a.label, err)
	}
	c.SetInput(h)
	a.in.c = &stageInput[K, T]{h: h, ts: a.t.ts, key: a.key, part: a.t.part, id: a.t.id, version: a.t.version}
	if a.feed != nil {
		a.feed(h)
	}
	return nil
}

// stageInput feeds an aggregation's head from its input stream.
type stageInput[K comparable, T any] struct {
	h       *engine.Head[K, T]
	ts      func(T) mtime.Time
	key     func(T) K
	part    func(T) int
	id      func(T) string
	version func(T) int64
}

func (s *stageInput[K, T]) Push(v T) {
	part := 0
	if s.part != nil {
		part = s.part(v)
	}
	var id []byte
	if s.id != nil {
		// Read, never kept: the head copies what it keeps. An empty id is
		// an id (nil is none).
		id = noBytes
		if str := s.id(v); str != "" {
			id = unsafe.Slice(unsafe.StringData(str), len(str))
		}
	}
	if s.version != nil {
		s.h.VersionedElement(part, s.key(v), s.ts(v), id, s.version(v), v)
		return
	}
	s.h.Element(part, s.key(v), s.ts(v), id, v)
}

// noBytes is the empty id: not nil, which is no id.
var noBytes = []byte{}

// kept is what the de-duplication state of a Versioned stream keeps of
// the version it applied: its key and element, as JSON.
type kept[K comparable, T any] struct {
	Key   K
	Value T
}

// jsonVersions keeps the version applied as JSON (Versioned).
func jsonVersions[K comparable, T any]() *engine.Versions[K, T] {
	return &engine.Versions[K, T]{
		Keep: func(b []byte, k K, v T) []byte {
			x, err := json.Marshal(kept[K, T]{k, v})
			if err != nil {
				return b // Back says so
			}
			return append(b, x...)
		},
		Back: func(b []byte) (K, T, error) {
			var x kept[K, T]
			if err := json.Unmarshal(b, &x); err != nil {
				return x.Key, x.Value, fmt.Errorf("the element applied cannot be read back: its type must round-trip through encoding/json (Versioned): %w", err)
			}
			return x.Key, x.Value, nil
		},
	}
}

func (s *stageInput[K, T]) Signal(sg engine.Signal) { s.h.Signal(sg) }

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
