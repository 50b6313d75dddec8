package weir

import (
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/window"
)

// Sided is an element of either input of a co-group or a window join: the
// left input's (Left set, IsRight false) or the right one's (Right set).
type Sided[L, R any] struct {
	Left    L
	Right   R
	IsRight bool
}

// CoGrouped is what a co-group computes for one key and window: the left
// input's aggregate and the right input's.
type CoGrouped[OL, OR any] struct {
	Left  OL
	Right OR
}

// CoGroup windows two keyed streams together, as Beam's CoGroupByKey and
// Flink's coGroup do: for each key and window, fl aggregates the left
// input's elements and fr the right input's, and each pane holds both
// results. Nexmark q8 (the persons who opened an auction in the window in
// which they joined) is a co-group of the persons and the auctions by
// person. The window strategy (assigner, trigger, allowed lateness, mode)
// is the aggregation's, as for Aggregate.
//
// The watermark is the minimum of both inputs' (over the partitions of
// each: Partitioned; an idle one does not hold it back), and each input's
// first partition holds it back from the first element on, so that
// neither moves it alone before the other has said anything. The two
// inputs need the same watermark strategy. An element too late for all of
// its windows goes to the second stream, with the side it came on. An
// input that is Deduplicated is de-duplicated by its own ids (the other
// input's are apart, even when equal), both inputs within one horizon; a
// Versioned input is refused. Both
// inputs are streams of the source loop, not an aggregation's panes;
// their elements come in one arrival order, as in Union. Named names the
// aggregation, whose state is checkpointed and restored as Aggregate's.
func CoGroup[K comparable, L, AL, OL, R, AR, OR any](left Keyed[K, L], right Keyed[K, R], s window.Strategy,
	fl aggregate.Func[L, AL, OL], fr aggregate.Func[R, AR, OR], opts ...PartOption) (Stream[Pane[K, CoGrouped[OL, OR]]], Stream[Late[K, Sided[L, R]]]) {
	return Aggregate(Window(cogroupInput(left, right), s), coAggregate[L, AL, OL, R, AR, OR]{fl, fr}, opts...)
}

// WindowJoined is a pair of a window join: a left and a right element of
// one key in one window, with the pane that joined them.
type WindowJoined[K comparable, L, R any] struct {
	Key    K
	Window window.Window
	Left   L
	Right  R
	// Revision and Timing are the pane's: a window whose trigger fires
	// more than once joins again, each time every pair so far.
	Revision int
	Timing   window.Timing
}

// WindowJoin joins two keyed streams by window, as Flink's window join:
// for each key and window, every left element with every right element,
// emitted when the window fires, the left elements in the order Process
// gives them (arrival order; for a merged session or a sliding window, by
// part in order of start) and, for each, the right ones in that order.
// It is a CoGroup that keeps
// both inputs' elements: the rules of watermarks, lateness and state are
// CoGroup's. The mode must be accumulating: a window that fires again
// (early or late panes) joins every pair it holds again, which a
// discarding window, having let its elements go, could not.
func WindowJoin[K comparable, L, R any](left Keyed[K, L], right Keyed[K, R], s window.Strategy, opts ...PartOption) (Stream[WindowJoined[K, L, R]], Stream[Late[K, Sided[L, R]]]) {
	if s.Mode != window.Accumulating {
		left.t.s.p.fail("WindowJoin: the mode is %s; a window join is accumulating: each pane joins every pair its window holds", s.Mode)
	}
	panes, late := CoGroup(left, right, s, aggregate.Collect[L](), aggregate.Collect[R](), opts...)
	return FlatMap(panes, func(p Pane[K, CoGrouped[[]L, []R]], emit func(WindowJoined[K, L, R])) {
		for _, l := range p.Value.Left {
			for _, r := range p.Value.Right {
				emit(WindowJoined[K, L, R]{Key: p.Key, Window: p.Window, Left: l, Right: r, Revision: p.Revision, Timing: p.Timing})
			}
		}
	}), late
}

// cogroupInput is both inputs as one keyed stream of Sided elements: each
// input's partition p is the watermark partition 2p (left) or 2p+1
// (right), so that each holds the watermark back.
func cogroupInput[K comparable, L, R any](left Keyed[K, L], right Keyed[K, R]) Keyed[K, Sided[L, R]] {
	p := left.t.s.p
	switch {
	case right.t.s.p != p:
		p.fail("CoGroup: its two inputs are streams of different pipelines")
	case left.t.s.origin != 0 || right.t.s.origin != 0:
		p.fail("CoGroup: an input is the output of an aggregation; only streams read from sources can be co-grouped")
	case left.t.wm.Fingerprint() != right.t.wm.Fingerprint():
		p.fail("CoGroup: its inputs have different watermark strategies (%s and %s): they need the same one", left.t.wm.Fingerprint(), right.t.wm.Fingerprint())
	case left.t.version != nil || right.t.version != nil:
		p.fail("CoGroup: an input is Versioned, which a co-group does not do yet")
	case left.t.id != nil && right.t.id != nil && left.t.horizon != right.t.horizon:
		p.fail("CoGroup: its inputs are Deduplicated within different horizons (%s and %s): they share one aggregation, and need one",
			mtime.FormatDuration(left.t.horizon), mtime.FormatDuration(right.t.horizon))
	}
	// Each input's elements go to the aggregation's head from the input
	// itself, made Sided there (coFeed): a Map to Sided and a Union took
	// two steps more, each copying the larger element, and the merged
	// stream's functions asked which side each element was from. The
	// merged stream carries the signals, and the plan has the nodes of
	// both steps.
	out := &engine.Stream[Sided[L, R]]{}
	f := &coFeed[K, L, R]{l: coSide[K, L]{k: left, tag: 'l'}, r: coSide[K, R]{k: right, off: 1, tag: 'r'}}
	left.t.s.n.Subscribe(engine.Func[L]{OnPush: f.left, OnSignal: unionSignal(0, out)})
	right.t.s.n.Subscribe(engine.Func[R]{OnPush: f.right, OnSignal: unionSignal(1, out)})
	lm, rm := transform(left.t.s, "map", out), transform(right.t.s, "map", out)
	u := unionNode(p, []plan.Input{lm.from, rm.from}, out)
	// The merged stream's functions, for what the aggregation reads of
	// them: that it is partitioned, and de-duplicated if an input is. No
	// element goes through them: the feed calls each side's own.
	t := WithTimestamps(u, func(e Sided[L, R]) mtime.Time {
		if e.IsRight {
			return right.t.ts(e.Right)
		}
		return left.t.ts(e.Left)
	}, left.t.wm).Partitioned(func(e Sided[L, R]) int {
		if e.IsRight {
			return f.r.part(e.Right)
		}
		return f.l.part(e.Left)
	})
	if left.t.id != nil || right.t.id != nil {
		t.id = func(e Sided[L, R]) string {
			if e.IsRight {
				return string(f.r.id(nil, e.Right))
			}
			return string(f.l.id(nil, e.Left))
		}
		t.horizon = max(left.t.horizon, right.t.horizon)
	}
	k := KeyBy(t, func(e Sided[L, R]) K {
		if e.IsRight {
			return right.key(e.Right)
		}
		return left.key(e.Left)
	})
	k.feed = func(h *engine.Head[K, Sided[L, R]]) { f.h = h }
	return k
}

// coSide is one input of a co-group.
type coSide[K comparable, V any] struct {
	k Keyed[K, V]
	// off is 0 for the left input, 1 for the right: the input's partition
	// p is the watermark partition 2p+off, so that each holds the
	// watermark back.
	off int
	// tag begins each of the input's ids: each input's ids are its own
	// (an order and its payment may share one), de-duplicated apart.
	tag byte
}

func (s coSide[K, V]) part(v V) int { return 2*partOf(s.k.t.part, v) + s.off }

// id appends v's id, tagged, to buf[:0]; it is nil if the input is not
// Deduplicated (its elements are never duplicates).
func (s coSide[K, V]) id(buf []byte, v V) []byte {
	if s.k.t.id == nil {
		return nil
	}
	return append(append(buf[:0], s.tag), s.k.t.id(v)...)
}

// coFeed hands the elements of both inputs of a co-group to its
// aggregation's head (h, set when the aggregation is built), each made
// Sided as the head takes it.
type coFeed[K comparable, L, R any] struct {
	h        *engine.Head[K, Sided[L, R]]
	l        coSide[K, L]
	r        coSide[K, R]
	declared bool   // the head has both inputs' first partitions
	id       []byte // the last id, read by the head, never kept
}

func (f *coFeed[K, L, R]) left(v L) {
	f.declare()
	id := f.l.id(f.id, v)
	if id != nil {
		f.id = id
	}
	f.h.Element(f.l.part(v), f.l.k.key(v), f.l.k.t.ts(v), id, Sided[L, R]{Left: v})
}

func (f *coFeed[K, L, R]) right(v R) {
	f.declare()
	id := f.r.id(f.id, v)
	if id != nil {
		f.id = id
	}
	f.h.Element(f.r.part(v), f.r.k.key(v), f.r.k.t.ts(v), id, Sided[L, R]{Right: v, IsRight: true})
}

// declare gives the head both inputs' first partitions before the first
// element, so that neither moves the watermark alone.
func (f *coFeed[K, L, R]) declare() {
	if !f.declared {
		f.h.DeclarePartitions(2)
		f.declared = true
	}
}

// partOf is v's partition by part, 0 without one.
func partOf[T any](part func(T) int, v T) int {
	if part == nil {
		return 0
	}
	return part(v)
}

// coAcc is a co-group's accumulator: each input's.
type coAcc[AL, AR any] struct {
	Left  AL
	Right AR
}

// coAggregate aggregates each input of a co-group with its own function.
type coAggregate[L, AL, OL, R, AR, OR any] struct {
	l aggregate.Func[L, AL, OL]
	r aggregate.Func[R, AR, OR]
}

func (c coAggregate[L, AL, OL, R, AR, OR]) New() coAcc[AL, AR] {
	return coAcc[AL, AR]{c.l.New(), c.r.New()}
}

func (c coAggregate[L, AL, OL, R, AR, OR]) Add(acc coAcc[AL, AR], v Sided[L, R]) coAcc[AL, AR] {
	if v.IsRight {
		acc.Right = c.r.Add(acc.Right, v.Right)
	} else {
		acc.Left = c.l.Add(acc.Left, v.Left)
	}
	return acc
}

func (c coAggregate[L, AL, OL, R, AR, OR]) Merge(a, b coAcc[AL, AR]) coAcc[AL, AR] {
	return coAcc[AL, AR]{c.l.Merge(a.Left, b.Left), c.r.Merge(a.Right, b.Right)}
}

func (c coAggregate[L, AL, OL, R, AR, OR]) Result(acc coAcc[AL, AR]) CoGrouped[OL, OR] {
	return CoGrouped[OL, OR]{c.l.Result(acc.Left), c.r.Result(acc.Right)}
}
