package join

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// harness drives an operator as Flink's KeyedTwoInputStreamOperatorTestHarness
// drives IntervalJoinOperator: elements and watermarks per input, the
// operator's watermark being the minimum of the two inputs'.
type harness struct {
	t      *testing.T
	op     *Op[string, string, string]
	wm     [2]mtime.Time
	out    []string // "(l,r)" pairs, "unmatched l" and "late side ts"
	pairTS []mtime.Time
}

func newHarness(t *testing.T, lower int64, lowerInc bool, upper int64, upperInc bool, mode Mode) *harness {
	t.Helper()
	h := &harness{t: t, wm: [2]mtime.Time{mtime.MinTime, mtime.MinTime}}
	op, err := New(Config{Lower: mtime.Time(lower), Upper: mtime.Time(upper), LowerExclusive: !lowerInc, UpperExclusive: !upperInc, Mode: mode},
		func(o *Out[string, string, string]) {
			switch o.Kind {
			case OutPair:
				h.out = append(h.out, fmt.Sprintf("(%d,%d)", o.LeftTime, o.RightTime))
				h.pairTS = append(h.pairTS, max(o.LeftTime, o.RightTime))
			case OutUnmatched:
				h.out = append(h.out, fmt.Sprintf("unmatched %d", o.LeftTime))
			case OutLate:
				ts := o.LeftTime
				if o.Side == Right {
					ts = o.RightTime
				}
				h.out = append(h.out, fmt.Sprintf("late %s %d", o.Side, ts))
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	useDisk(t, op, strCodec{})
	h.op = op
	return h
}

func (h *harness) el1(ts int64) *harness { h.op.AddLeft("key", mtime.Time(ts), "lhs"); return h }
func (h *harness) el2(ts int64) *harness { h.op.AddRight("key", mtime.Time(ts), "rhs"); return h }
func (h *harness) wm1(ts int64) *harness { return h.watermark(Left, ts) }
func (h *harness) wm2(ts int64) *harness { return h.watermark(Right, ts) }

func (h *harness) watermark(s Side, ts int64) *harness {
	h.wm[s] = max(h.wm[s], mtime.Time(ts))
	h.op.Advance(min(h.wm[0], h.wm[1]))
	return h
}

// elementsAndWatermarks is the test's processElementsAndWatermarks: each
// side's records from..to, each followed by its side's watermark, the left
// side first when lhsFaster.
func (h *harness) elementsAndWatermarks(from, to int64, lhsFaster bool) *harness {
	left := func() {
		for i := from; i <= to; i++ {
			h.el1(i).wm1(i)
		}
	}
	right := func() {
		for i := from; i <= to; i++ {
			h.el2(i).wm2(i)
		}
	}
	if lhsFaster {
		left()
		right()
	} else {
		right()
		left()
	}
	return h
}

// expect compares the outputs, as a set (Flink's assertOutput counts and
// looks up each record), with want.
func (h *harness) expect(want ...string) *harness {
	h.t.Helper()
	got := slices.Clone(h.out)
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		h.t.Errorf("outputs %v, want %v", h.out, want)
	}
	return h
}

func (h *harness) buffers(left, right []mtime.Time) *harness {
	h.t.Helper()
	if got := h.op.Times(Left, "key"); !slices.Equal(got, left) {
		h.t.Errorf("left buffer %v, want %v", got, left)
	}
	if got := h.op.Times(Right, "key"); !slices.Equal(got, right) {
		h.t.Errorf("right buffer %v, want %v", got, right)
	}
	return h
}

func ts(v ...mtime.Time) []mtime.Time { return v }

// Both orders of arrival, as Flink's parameter "lhs faster than rhs".
var lhsFaster = []bool{true, false}

// Flink IntervalJoinOperatorTest.testImplementationMirrorsCorrectly.
func TestImplementationMirrorsCorrectly(t *testing.T) {
	for _, f := range lhsFaster {
		newHarness(t, 1, true, 3, false, Inner).elementsAndWatermarks(1, 4, f).
			expect("(1,2)", "(1,3)", "(2,3)", "(2,4)", "(3,4)")
		newHarness(t, -3, false, -1, true, Inner).elementsAndWatermarks(1, 4, f).
			expect("(2,1)", "(3,1)", "(3,2)", "(4,2)", "(4,3)")
	}
}

// Flink IntervalJoinOperatorTest: the bounds, inclusive and exclusive,
// negative and positive.
func TestBounds(t *testing.T) {
	cases := []struct {
		name     string
		lower    int64
		lowerInc bool
		upper    int64
		upperInc bool
		want     []string
	}{
		{"testNegativeInclusiveAndNegativeInclusive", -2, true, -1, true, []string{"(2,1)", "(3,1)", "(3,2)", "(4,2)", "(4,3)"}},
		{"testNegativeInclusiveAndPositiveInclusive", -1, true, 1, true, []string{"(1,1)", "(1,2)", "(2,1)", "(2,2)", "(2,3)", "(3,2)", "(3,3)", "(3,4)", "(4,3)", "(4,4)"}},
		{"testPositiveInclusiveAndPositiveInclusive", 1, true, 2, true, []string{"(1,2)", "(1,3)", "(2,3)", "(2,4)", "(3,4)"}},
		{"testNegativeExclusiveAndNegativeExlusive", -3, false, -1, false, []string{"(3,1)", "(4,2)"}},
		{"testNegativeExclusiveAndPositiveExlusive", -1, false, 1, false, []string{"(1,1)", "(2,2)", "(3,3)", "(4,4)"}},
		{"testPositiveExclusiveAndPositiveExlusive", 1, false, 3, false, []string{"(1,3)", "(2,4)"}},
	}
	for _, c := range cases {
		for _, f := range lhsFaster {
			t.Run(fmt.Sprintf("%s/lhsFaster=%v", c.name, f), func(t *testing.T) {
				newHarness(t, c.lower, c.lowerInc, c.upper, c.upperInc, Inner).elementsAndWatermarks(1, 4, f).expect(c.want...)
			})
		}
	}
}

// Flink IntervalJoinOperatorTest.testReturnsCorrectTimestamp: a pair's
// time is the later of its two records' (the engine stamps it so).
func TestReturnsCorrectTimestamp(t *testing.T) {
	h := newHarness(t, -1, true, 1, true, Inner).elementsAndWatermarks(1, 4, true)
	for i, o := range h.out {
		var l, r mtime.Time
		fmt.Sscanf(o, "(%d,%d)", &l, &r)
		if h.pairTS[i] != max(l, r) {
			t.Errorf("%s at %d", o, h.pairTS[i])
		}
	}
}

// Flink IntervalJoinOperatorTest's four state cleanup tests: what each
// buffer holds as the common watermark goes to 1, 4 and 6.
func TestStateCleanup(t *testing.T) {
	cases := []struct {
		name          string
		lower         int64
		lowerInc      bool
		upper         int64
		upperInc      bool
		left1, right1 []mtime.Time
		left4, right4 []mtime.Time
	}{
		{"testStateCleanupNegativeInclusiveNegativeInclusive", -1, true, 0, true, ts(2, 3, 4, 5), ts(1, 2, 3, 4, 5), ts(5), ts(4, 5)},
		{"testStateCleanupNegativePositiveNegativeExlusive", -2, false, 1, false, ts(2, 3, 4, 5), ts(1, 2, 3, 4, 5), ts(5), ts(4, 5)},
		{"testStateCleanupPositiveInclusivePositiveInclusive", 0, true, 1, true, ts(1, 2, 3, 4, 5), ts(2, 3, 4, 5), ts(4, 5), ts(5)},
		{"testStateCleanupPositiveExlusivePositiveExclusive", -1, false, 2, false, ts(1, 2, 3, 4, 5), ts(2, 3, 4, 5), ts(4, 5), ts(5)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.lower, c.lowerInc, c.upper, c.upperInc, Inner)
			for i := int64(1); i <= 5; i++ {
				h.el1(i)
			}
			for i := int64(1); i <= 5; i++ {
				h.el2(i)
			}
			h.wm1(1).wm2(1).buffers(c.left1, c.right1)
			h.wm1(4).wm2(4).buffers(c.left4, c.right4)
			h.wm1(6).wm2(6).buffers(nil, nil)
			if l, r := h.op.Buffered(); l != 0 || r != 0 || h.op.Keys() != 0 {
				t.Errorf("buffered %d, %d in %d keys after the watermark passed them all", l, r, h.op.Keys())
			}
		})
	}
}

// Flink IntervalJoinOperatorTest.testDiscardsLateData: a late record joins
// nothing (here it goes to the late output, where Flink drops it).
func TestDiscardsLateData(t *testing.T) {
	newHarness(t, -1, true, 1, true, Inner).
		el1(1).el2(1).el1(2).el2(2).el1(3).el2(3).wm1(3).wm2(3).
		el1(1). // late: not joined again
		el1(4).el2(4).el1(5).el2(5).
		expect("(1,1)", "(1,2)", "(2,1)", "(2,2)", "(2,3)", "(3,2)", "(3,3)", "(3,4)", "(4,3)", "(4,4)", "(4,5)", "(5,4)", "(5,5)", "late left 1")
}

// Flink IntervalJoinOperatorTest.testLateData: late records of either
// side go to the late output.
func TestLateData(t *testing.T) {
	h := newHarness(t, -1, true, 1, true, Inner).
		el1(3).el2(3).wm1(3).wm2(3).
		el1(4).el2(4).
		el1(1). // the left side element is late
		el2(2). // the right side element is late
		el1(5).el2(5).
		expect("(3,3)", "(3,4)", "(4,3)", "(4,4)", "(4,5)", "(5,4)", "(5,5)", "late left 1", "late right 2")
	if s := h.op.Stats(); s.Late != [2]int64{1, 1} {
		t.Errorf("late counts %v", s.Late)
	}
}

// The boundary of lateness, on either side: a record at the watermark is
// late (Flink accepts it, and it may miss a partner already let go: here
// the left record at 3, whose interval [2, 3] the watermark 3 closed), one
// just after it is not.
func TestLateAtTheBoundary(t *testing.T) {
	newHarness(t, -1, true, 0, true, Inner).
		el1(3).wm1(3).wm2(3).
		el2(3). // would join the left 3, which the watermark let go
		el1(3). // late as well
		el2(4).el1(4).
		expect("late right 3", "late left 3", "(4,4)")
	// With an allowed lateness of 2 both come in time: the buffers kept
	// the left record at 3 until the watermark reaches 3+0+2, and
	// a record is late at the watermark minus 2.
	h := newHarness(t, -1, true, 0, true, Inner)
	h.op.cfg.Lateness = 2
	h.el1(3).wm1(4).wm2(4).el2(3).el1(3).el2(2).
		expect("(3,3)", "(3,3)", "late right 2")
	if l, _ := h.op.Buffered(); l != 2 {
		t.Errorf("%d left records buffered, want 2", l)
	}
	h.wm1(5).wm2(5).el2(3).expect("(3,3)", "(3,3)", "late right 2", "late right 3")
	if l, _ := h.op.Buffered(); l != 0 {
		t.Errorf("%d left records buffered after the watermark 5, want none", l)
	}
}

// Flink IntervalJoinOperatorTest.testRestoreFromSnapshot: the buffers and
// the watermark survive a snapshot, in a new operator.
func TestRestoreFromSnapshot(t *testing.T) {
	h := newHarness(t, -1, true, 1, true, Inner)
	h.el1(1).wm1(1).el2(1).wm2(1).el1(2).wm1(2).el2(2).wm2(2).el1(3).wm1(3).el2(3).wm2(3)
	h.expect("(1,1)", "(1,2)", "(2,1)", "(2,2)", "(2,3)", "(3,2)", "(3,3)")
	hash := func(k string) uint64 { return uint64(len(k)) }
	var c strCodec
	state := h.op.AppendHeader(nil)
	state = h.op.AppendKeys(state, c, hash, 4, func(int) bool { return true })

	h2 := newHarness(t, -1, true, 1, true, Inner)
	h2.wm = h.wm
	d := enc.NewDecoder(state)
	if err := h2.op.RestoreHeader(d); err != nil {
		t.Fatal(err)
	}
	if err := h2.op.RestoreKeysFrom(bytes.NewReader(state[len(state)-d.Len():]), c); err != nil {
		t.Fatal(err)
	}
	again := h2.op.AppendKeys(h2.op.AppendHeader(nil), c, hash, 4, func(int) bool { return true })
	if string(again) != string(state) {
		t.Errorf("the restored state encodes differently")
	}
	h2.el1(4).wm1(4).el2(4).wm2(4).expect("(3,4)", "(4,3)", "(4,4)")
}

// Left outer and anti joins emit a left record that joined nothing once
// the watermark reaches its time plus the upper bound, in order of
// (time, arrival); those that joined are not emitted.
func TestLeftOuterAndAnti(t *testing.T) {
	script := func(h *harness) *harness {
		return h.el1(1).el1(5).el1(2).el2(3).el1(5).wm1(4).wm2(4).wm1(7).wm2(7).el1(8).wm1(20).wm2(20)
	}
	h := script(newHarness(t, 0, true, 2, true, LeftOuter))
	if got := strings.Join(h.out, " "); got != "(1,3) (2,3) unmatched 5 unmatched 5 unmatched 8" {
		t.Errorf("left outer: %s", got)
	}
	h = script(newHarness(t, 0, true, 2, true, Anti))
	if got := strings.Join(h.out, " "); got != "unmatched 5 unmatched 5 unmatched 8" {
		t.Errorf("anti: %s", got)
	}
	// Orders without a payment within 10: the payment at 11 is too late
	// for the order at 0.
	h = newHarness(t, 0, true, 10, true, Anti).el1(0).el1(1).el2(11).wm1(12).wm2(12)
	if got := strings.Join(h.out, " "); got != "unmatched 0" {
		t.Errorf("anti: %s", got)
	}
}

// The pairs come in order of the other side's (time, arrival), whatever
// order the buffer was filled in.
func TestPairOrder(t *testing.T) {
	h := newHarness(t, -10, true, 10, true, Inner).el2(5).el2(3).el2(5).el2(4).el1(4)
	if got := strings.Join(h.out, " "); got != "(4,3) (4,4) (4,5) (4,5)" {
		t.Errorf("pairs %s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{Lower: 2, Upper: 1}, func(*Out[int, int, int]) {}); err == nil {
		t.Error("a lower bound above the upper one is accepted")
	}
}

type strCodec struct{}

func (strCodec) AppendKey(b []byte, k string) []byte { return enc.AppendString(b, k) }
func (strCodec) ReadKey(d *enc.Decoder) string       { return d.String() }
func (strCodec) AppendAcc(b []byte, a string) []byte { return enc.AppendString(b, a) }
func (strCodec) ReadAcc(d *enc.Decoder) string       { return d.String() }
func (strCodec) AppendOut(b []byte, o string) []byte { return enc.AppendString(b, o) }
func (strCodec) ReadOut(d *enc.Decoder) string       { return d.String() }
