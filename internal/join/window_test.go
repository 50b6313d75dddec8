package join

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir/mtime"
)

// windowed drives a window join as Flink's CoGroupJoinITCase drives its
// sources: elements of each side, each followed by its side's punctuated
// watermark (its time - 1), the operator's the minimum of the two.
func windowed(t *testing.T, mode Mode, size, lateness mtime.Time) *temporal {
	return rowOp(t, Config{Window: size, Mode: mode, Lateness: lateness}, func(r row, ts mtime.Time) string { return fmt.Sprintf("(%s,%s,%d)", r.key, r.v, ts) },
		"%[2]s:%[3]s", "%[2]s unmatched", "late %[1]s %[3]s")
}

type el struct {
	key, v string
	ts     int64
}

// feed gives left then right their elements, each followed by its side's
// watermark.
func (h *temporal) feed(left, right []el) *temporal {
	for _, e := range left {
		h.el1(e.ts, e.key, e.v).wm1(e.ts - 1)
	}
	for _, e := range right {
		h.el2(e.ts, e.key, e.v).wm2(e.ts - 1)
	}
	return h
}

var (
	flinkFirst  = []el{{"a", "x", 0}, {"a", "y", 1}, {"a", "z", 2}, {"b", "u", 3}, {"b", "w", 5}, {"a", "i", 6}, {"a", "j", 7}, {"a", "k", 8}}
	flinkSecond = []el{{"a", "u", 0}, {"a", "w", 1}, {"b", "i", 3}, {"b", "k", 5}, {"a", "x", 6}, {"a", "z", 8}}
)

// Flink CoGroupJoinITCase.testJoin: per key and tumbling window of 3 ms,
// every pair, emitted as the watermark passes each window (the end of the
// input passes the last), in order of the left records and, for each, of
// the right ones.
func TestFlinkWindowJoin(t *testing.T) {
	h := windowed(t, Inner, 3, 0).feed(flinkFirst, flinkSecond)
	h.wm1(1 << 40).wm2(1 << 40)
	h.expect(
		"(a,x,0):(a,u,0)", "(a,x,0):(a,w,1)", "(a,y,1):(a,u,0)", "(a,y,1):(a,w,1)", "(a,z,2):(a,u,0)", "(a,z,2):(a,w,1)",
		"(b,u,3):(b,i,3)", "(b,u,3):(b,k,5)", "(b,w,5):(b,i,3)", "(b,w,5):(b,k,5)",
		"(a,i,6):(a,x,6)", "(a,i,6):(a,z,8)", "(a,j,7):(a,x,6)", "(a,j,7):(a,z,8)", "(a,k,8):(a,x,6)", "(a,k,8):(a,z,8)")
	if l, r := h.op.Buffered(); l != 0 || r != 0 || h.op.Keys() != 0 {
		t.Errorf("after the windows fired: %d left, %d right records in %d keys", l, r, h.op.Keys())
	}
}

// A left outer window join also writes the left records of a window with
// no right one; an anti join only those. A record whose window has fired
// is late, one of a window still open is not, though behind the
// watermark.
func TestWindowJoinModesAndLateness(t *testing.T) {
	script := func(h *temporal) *temporal {
		h.el1(0, "a", "x").el2(1, "a", "u").el1(4, "b", "y").wm1(4).wm2(4)
		h.el1(3, "a", "z") // behind the watermark, its window [3, 6) open
		h.el2(2, "a", "v") // its window [0, 3) fired at 4
		h.el1(7, "c", "q").wm1(9).wm2(9)
		return h
	}
	script(windowed(t, LeftOuter, 3, 0)).expect(
		"(a,x,0):(a,u,1)", "late right (a,v,2)", "(b,y,4) unmatched", "(a,z,3) unmatched", "(c,q,7) unmatched")
	script(windowed(t, Anti, 3, 0)).expect(
		"late right (a,v,2)", "(b,y,4) unmatched", "(a,z,3) unmatched", "(c,q,7) unmatched")
	// With a lateness of 3 the window [0, 3) fires when the watermark
	// reaches 5, not 2: it still takes v.
	script(windowed(t, Inner, 3, 3)).expect("(a,x,0):(a,u,1)", "(a,x,0):(a,v,2)")
}

// A window join's buffers survive a snapshot in a new operator, which
// gives the same outputs as the one that went on.
func TestWindowJoinRestoreFromSnapshot(t *testing.T) {
	first := func(h *temporal) *temporal { return h.feed(flinkFirst[:4], flinkSecond[:3]) }
	rest := func(h *temporal) *temporal {
		h.feed(flinkFirst[4:], flinkSecond[3:])
		return h.wm1(1 << 40).wm2(1 << 40)
	}
	restoresAsItWentOn(t, func() *temporal { return windowed(t, LeftOuter, 3, 0) }, first, rest, 16)
}
