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

// row is a record of Flink's temporal join tests: a key and a value; a
// right row with del set is a deletion.
type row struct {
	key, v string
	del    bool
}

// temporal drives a temporal join as Flink's KeyedTwoInputStreamOperatorTestHarness
// drives TemporalRowTimeJoinOperator: elements and watermarks per input,
// the operator's watermark the minimum of the two inputs'.
type temporal struct {
	t   *testing.T
	op  *Op[string, row, row]
	wm  [2]mtime.Time
	out []string
}

func newTemporal(t *testing.T, mode Mode, lateness mtime.Time) *temporal {
	return rowOp(t, Config{Temporal: true, Mode: mode, Lateness: lateness}, func(r row, ts mtime.Time) string { return fmt.Sprintf("%s@%d", r.v, ts) },
		"%[1]s %[2]s+%[3]s", "%[1]s %[2]s unmatched", "late %[1]s %[2]s %[3]s")
}

// rowOp is a harness of an operator of cfg whose outputs are written by
// show and the formats of a pair (key, left, right), an unmatched record
// (key, left) and a late one (side, key, record).
func rowOp(t *testing.T, cfg Config, show func(r row, ts mtime.Time) string, pair, unmatched, late string) *temporal {
	h := &temporal{t: t, wm: [2]mtime.Time{mtime.MinTime, mtime.MinTime}}
	op, err := New(cfg, func(o *Out[string, row, row]) {
		switch o.Kind {
		case OutPair:
			h.out = append(h.out, fmt.Sprintf(pair, o.Key, show(o.Left, o.LeftTime), show(o.Right, o.RightTime)))
		case OutUnmatched:
			h.out = append(h.out, fmt.Sprintf(unmatched, o.Key, show(o.Left, o.LeftTime)))
		case OutLate:
			r, ts := o.Left, o.LeftTime
			if o.Side == Right {
				r, ts = o.Right, o.RightTime
			}
			h.out = append(h.out, fmt.Sprintf(late, o.Side, o.Key, show(r, ts)))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	op.Deletes(func(r row) bool { return r.del })
	useDisk(t, op, rowCodec{})
	h.op = op
	return h
}

func (h *temporal) el1(ts int64, key, v string) *temporal {
	h.op.AddLeft(key, mtime.Time(ts), row{key: key, v: v})
	return h
}

func (h *temporal) el2(ts int64, key, v string) *temporal {
	h.op.AddRight(key, mtime.Time(ts), row{key: key, v: v})
	return h
}

func (h *temporal) del2(ts int64, key, v string) *temporal {
	h.op.AddRight(key, mtime.Time(ts), row{key: key, v: v, del: true})
	return h
}

func (h *temporal) wm1(ts int64) *temporal { return h.watermark(Left, ts) }
func (h *temporal) wm2(ts int64) *temporal { return h.watermark(Right, ts) }

func (h *temporal) watermark(s Side, ts int64) *temporal {
	h.wm[s] = max(h.wm[s], mtime.Time(ts))
	h.op.Advance(min(h.wm[0], h.wm[1]))
	return h
}

func (h *temporal) expect(want ...string) *temporal {
	h.t.Helper()
	if !slices.Equal(h.out, want) {
		h.t.Errorf("outputs\n  %s\nwant\n  %s", strings.Join(h.out, "\n  "), strings.Join(want, "\n  "))
	}
	h.out = nil
	return h
}

// flinkScript is the script of Flink's TemporalRowTimeJoinOperatorTest.
// testRowTimeTemporalJoin and testRowTimeLeftTemporalJoin
// (flink-table-runtime, operators/join/temporal). Flink's update-before
// of 2a4 at 7 is left out: weir's versioned table has no retractions, an
// update is the next version (Flink's update-after, which follows).
func flinkScript(h *temporal) *temporal {
	h.wm1(1).wm2(1)
	h.el1(1, "k1", "1a1").el2(2, "k1", "1a2")
	h.wm1(2).wm2(2)
	h.el1(1, "k1", "1a1").el1(3, "k1", "1a3").el2(4, "k2", "2a4")
	h.wm1(5).wm2(5)
	h.el1(6, "k2", "2a3").el2(7, "k2", "2a5")
	h.wm1(8).wm2(9)
	h.el1(9, "k2", "5a11").el1(11, "k2", "5a12").del2(9, "k2", "2a5").el2(10, "k2", "2a6")
	h.wm1(13).wm2(13)
	return h
}

// Flink TemporalRowTimeJoinOperatorTest.testRowTimeTemporalJoin and
// testRowTimeLeftTemporalJoin. Flink takes the records 1a1, which come at
// the watermark (1) and behind it (2), and finds them no version; weir
// sets a record at or behind the watermark aside as too late, as its
// interval join does: with an allowed lateness of 2, which takes them,
// weir's outputs are exactly Flink's.
func TestFlinkRowTimeTemporalJoin(t *testing.T) {
	flinkScript(newTemporal(t, Inner, 0)).expect(
		"late left k1 1a1@1",
		"late left k1 1a1@1",
		"k1 1a3@3+1a2@2",
		"k2 2a3@6+2a4@4",
		"k2 5a12@11+2a6@10")
	flinkScript(newTemporal(t, LeftOuter, 0)).expect(
		"late left k1 1a1@1",
		"late left k1 1a1@1",
		"k1 1a3@3+1a2@2",
		"k2 2a3@6+2a4@4",
		"k2 5a11@9 unmatched",
		"k2 5a12@11+2a6@10")
	// Flink's expected outputs, in Flink's order.
	flinkScript(newTemporal(t, LeftOuter, 2)).expect(
		"k1 1a1@1 unmatched",
		"k1 1a1@1 unmatched",
		"k1 1a3@3+1a2@2",
		"k2 2a3@6+2a4@4",
		"k2 5a11@9 unmatched",
		"k2 5a12@11+2a6@10")
	flinkScript(newTemporal(t, Inner, 2)).expect(
		"k1 1a3@3+1a2@2",
		"k2 2a3@6+2a4@4",
		"k2 5a12@11+2a6@10")
	flinkScript(newTemporal(t, Anti, 2)).expect(
		"k1 1a1@1 unmatched",
		"k1 1a1@1 unmatched",
		"k2 5a11@9 unmatched")
}

// A record waits for the watermark to pass its time, so that a version
// that comes later but is valid at its time is the one it joins; a record
// at a version's own time joins it; of two versions at one time, the later
// to arrive is the key's.
func TestTemporalWaitsForTheWatermark(t *testing.T) {
	h := newTemporal(t, Inner, 0)
	h.el2(1, "k", "v1").el1(5, "k", "a").wm1(4).wm2(4).expect()
	h.el2(3, "k", "v3") // behind the watermark: too late, it would rewrite what 4 settled
	h.expect("late right k v3@3")
	h.el2(5, "k", "v5").el2(5, "k", "v5b").el2(6, "k", "v6").wm1(5).wm2(5).expect("k a@5+v5b@5")
	// With a lateness of 3, a version 2 behind the watermark still comes
	// in time for the record it is valid for.
	h = newTemporal(t, Inner, 3)
	h.el2(1, "k", "v1").el1(5, "k", "a").wm1(6).wm2(6).el2(4, "k", "v4").wm1(8).wm2(8).expect("k a@5+v4@4")
}

// The state keeps, for each key, the versions a record still to come can
// look up: those after the watermark, and the one valid at it; a deletion
// settled takes the key's state with it.
func TestTemporalStateIsBounded(t *testing.T) {
	h := newTemporal(t, LeftOuter, 0)
	for i := int64(1); i <= 100; i++ {
		h.el2(i, "k", fmt.Sprint(i))
	}
	h.wm1(50).wm2(50)
	if got := h.op.Times(Right, "k"); !slices.Equal(got, ts(seq(50, 100)...)) {
		t.Errorf("versions kept %v", got)
	}
	h.wm1(1000).wm2(1000)
	if got := h.op.Times(Right, "k"); !slices.Equal(got, ts(100)) {
		t.Errorf("versions kept %v", got)
	}
	h.el1(1001, "k", "a").del2(1002, "k", "gone").el1(1003, "k", "b").wm1(2000).wm2(2000)
	h.expect("k a@1001+100@100", "k b@1003 unmatched")
	if l, r := h.op.Buffered(); l != 0 || r != 0 || h.op.Keys() != 0 {
		t.Errorf("after a deletion: %d left, %d right records in %d keys", l, r, h.op.Keys())
	}
	// A deletion and a version at one time: the later one counts.
	h.del2(3000, "k", "gone").el2(3000, "k", "back").del2(3000, "j", "x").el2(3000, "j", "y").del2(3000, "j", "z")
	h.el1(3001, "k", "c").el1(3001, "j", "d").wm1(4000).wm2(4000)
	h.expect("k c@3001+back@3000", "j d@3001 unmatched")
	if got := h.op.Keys(); got != 1 {
		t.Errorf("%d keys kept, want 1 (k)", got)
	}
	if st := h.op.Stats(); st.Unmatched != 2 || st.Pairs != 2 {
		t.Errorf("stats %+v", st)
	}
}

// A temporal join's state survives a snapshot in a new operator, which
// gives the same outputs as the one that went on.
func TestTemporalRestoreFromSnapshot(t *testing.T) {
	first := func(h *temporal) *temporal {
		return h.el2(1, "k", "v1").el2(3, "k", "v3").el1(2, "k", "a").el1(4, "k", "b").del2(2, "j", "x").wm1(2).wm2(2)
	}
	rest := func(h *temporal) *temporal {
		return h.el2(5, "k", "v5").el1(6, "k", "c").el1(3, "j", "d").wm1(10).wm2(10)
	}
	restoresAsItWentOn(t, func() *temporal { return newTemporal(t, LeftOuter, 1) }, first, rest, 4)
}

// restoresAsItWentOn runs first then rest on one harness of fresh, and
// first on another, whose operator's state it restores into a third that
// runs rest: the outputs (n of them) must be the same.
func restoresAsItWentOn(t *testing.T, fresh func() *temporal, first, rest func(*temporal) *temporal, n int) {
	t.Helper()
	want := rest(first(fresh()))
	h := first(fresh())
	hash := func(k string) uint64 { return uint64(len(k)) }
	var c rowCodec
	state := h.op.AppendKeys(h.op.AppendHeader(nil), c, hash, 4, func(int) bool { return true })
	h2 := fresh()
	h2.wm, h2.out = h.wm, h.out
	d := enc.NewDecoder(state)
	if err := h2.op.RestoreHeader(d); err != nil {
		t.Fatal(err)
	}
	if err := h2.op.RestoreKeysFrom(bytes.NewReader(state[len(state)-d.Len():]), c); err != nil {
		t.Fatal(err)
	}
	rest(h2)
	if !slices.Equal(h2.out, want.out) || len(want.out) != n {
		t.Errorf("restored:\n%s\nwent on:\n%s", strings.Join(h2.out, "\n"), strings.Join(want.out, "\n"))
	}
}

func TestTemporalConfigValidate(t *testing.T) {
	for _, c := range []Config{{Temporal: true, Upper: 1}, {Temporal: true, Lower: -1}, {Temporal: true, UpperExclusive: true}} {
		if _, err := New(c, func(*Out[int, int, int]) {}); err == nil {
			t.Errorf("%+v is accepted", c)
		}
	}
}

func seq(from, to int64) []mtime.Time {
	var out []mtime.Time
	for i := from; i <= to; i++ {
		out = append(out, mtime.Time(i))
	}
	return out
}

type rowCodec struct{}

func appendRow(b []byte, r row) []byte {
	return enc.AppendBool(enc.AppendString(enc.AppendString(b, r.key), r.v), r.del)
}
func readRow(d *enc.Decoder) row { return row{key: d.String(), v: d.String(), del: d.Bool()} }

func (rowCodec) AppendKey(b []byte, k string) []byte { return enc.AppendString(b, k) }
func (rowCodec) ReadKey(d *enc.Decoder) string       { return d.String() }
func (rowCodec) AppendAcc(b []byte, a row) []byte    { return appendRow(b, a) }
func (rowCodec) ReadAcc(d *enc.Decoder) row          { return readRow(d) }
func (rowCodec) AppendOut(b []byte, o row) []byte    { return appendRow(b, o) }
func (rowCodec) ReadOut(d *enc.Decoder) row          { return readRow(d) }
