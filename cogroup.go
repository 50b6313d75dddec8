package weir

import (
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
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
	case left.t.wm.Fingerprint() != right.t.wm.Fingerprint():
		p.fail("CoGroup: its inputs have different watermark strategies (%s and %s): they need the same one", left.t.wm.Fingerprint(), right.t.wm.Fingerprint())
	case left.t.version != nil || right.t.version != nil:
		p.fail("CoGroup: an input is Versioned, which a co-group does not do yet")
	case left.t.id != nil && right.t.id != nil && left.t.horizon != right.t.horizon:
		p.fail("CoGroup: its inputs are Deduplicated within different horizons (%s and %s): they share one aggregation, and need one",
			mtime.FormatDuration(left.t.horizon), mtime.FormatDuration(right.t.horizon))
	}
	u := Union(Map(left.t.s, func(v L) Sided[L, R] { return Sided[L, R]{Left: v} }),
		Map(right.t.s, func(v R) Sided[L, R] { return Sided[L, R]{Right: v, IsRight: true} }))
	t := WithTimestamps(u, func(e Sided[L, R]) mtime.Time {
		if e.IsRight {
			return right.t.ts(e.Right)
		}
		return left.t.ts(e.Left)
	}, left.t.wm).Partitioned(func(e Sided[L, R]) int {
		if e.IsRight {
			return 2*partOf(right.t.part, e.Right) + 1
		}
		return 2 * partOf(left.t.part, e.Left)
	})
	t.parts = 2
	if left.t.id != nil || right.t.id != nil {
		// Each input's ids are its own (an order and its payment may share
		// one): each is de-duplicated apart, an input that is not
		// Deduplicated not at all.
		t.id = func(e Sided[L, R]) string {
			if e.IsRight {
				return "r" + right.t.id(e.Right)
			}
			return "l" + left.t.id(e.Left)
		}
		t.noID = func(e Sided[L, R]) bool {
			if e.IsRight {
				return right.t.id == nil
			}
			return left.t.id == nil
		}
		t.horizon = max(left.t.horizon, right.t.horizon)
	}
	return KeyBy(t, func(e Sided[L, R]) K {
		if e.IsRight {
			return right.key(e.Right)
		}
		return left.key(e.Left)
	})
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
