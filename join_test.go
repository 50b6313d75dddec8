package weir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// shop is one event of a shop's stream: an order, or a payment of one.
type shop struct {
	Kind    string // "order" or "payment"
	Order   string
	At      mtime.Time // event time
	Arrival mtime.Time // processing time
}

// shopJoin reads evs (arriving in order) from one source, splits orders
// (left) from payments (right), and joins them by order within
// [lower, upper].
func shopJoin(p *weir.Pipeline, evs []shop, wm watermark.Strategy, lower, upper time.Duration, stopAt int, cancel func(), opts ...weir.JoinOption) (weir.Stream[weir.Joined[string, shop, shop]], weir.Stream[weir.JoinLate[string, shop, shop]]) {
	src := shopSource(p, evs, stopAt, cancel)
	return weir.IntervalJoin(shopSide(src, "order", wm), shopSide(src, "payment", wm), lower, upper, append(opts, weir.Named("payments"))...)
}

// shopSource reads evs, arriving in order. cancel, when set, is called
// once the source loop has taken the element at stopAt (however far its
// reading ran ahead), and readHook, when set, by the reading goroutine
// before it hands over the element at stopAt.
func shopSource(p *weir.Pipeline, evs []shop, stopAt int, cancel func()) weir.Stream[shop] {
	src := weir.FromSeq(p, func(yield func(shop, mtime.Time) bool) {
		for i, e := range evs {
			if i == stopAt && readHook != nil {
				readHook()
			}
			if !yield(e, e.Arrival) {
				return
			}
		}
	}, weir.Named("shop"))
	if cancel == nil {
		return src
	}
	seen := 0
	return weir.Map(src, func(e shop) shop {
		if seen == stopAt {
			cancel()
		}
		seen++
		return e
	})
}

// readHook is what a test's child process does while reading (see
// shopSource).
var readHook func()

// shopSide is the events of a kind, by order.
func shopSide(src weir.Stream[shop], kind string, wm watermark.Strategy) weir.Keyed[string, shop] {
	s := weir.Filter(src, func(e shop) bool { return e.Kind == kind })
	return weir.KeyBy(weir.WithTimestamps(s, func(e shop) mtime.Time { return e.At }, wm), func(e shop) string { return e.Order })
}

// runLines runs p and returns the lines of a join's outputs and late
// records, in the order they came.
func runLines(t *testing.T, p *weir.Pipeline, out weir.Stream[weir.Joined[string, shop, shop]], late weir.Stream[weir.JoinLate[string, shop, shop]]) []string {
	t.Helper()
	var got []string
	weir.Sink(out, func(j weir.Joined[string, shop, shop]) error { got = append(got, joinedLine(j)); return nil })
	weir.Sink(late, func(l weir.JoinLate[string, shop, shop]) error { got = append(got, lateLine(l)); return nil })
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return got
}

func joinedLine(j weir.Joined[string, shop, shop]) string {
	if !j.Matched {
		return fmt.Sprintf("%s unmatched %d", j.Key, j.LeftTime)
	}
	return fmt.Sprintf("%s (%d,%d) at %d", j.Key, j.LeftTime, j.RightTime, j.Time)
}

func lateLine(l weir.JoinLate[string, shop, shop]) string {
	return fmt.Sprintf("late %s %s %d %s wm %d", l.Key, l.Side, l.Timestamp, l.Reason, l.Watermark)
}

// Flink IntervalJoinOperatorTest.testLateData, through a whole pipeline:
// the watermark of each side is its own records' (delay 0), the join's
// the minimum; the late records of either side go to the late output with
// their reason, and are counted.
func TestIntervalJoinLateDataPipeline(t *testing.T) {
	ev := func(kind string, ts int64) shop {
		return shop{Kind: kind, Order: "o", At: mtime.Time(ts), Arrival: mtime.Time(ts)}
	}
	evs := []shop{ev("order", 3), ev("payment", 3), ev("order", 4), ev("payment", 4),
		ev("order", 1), ev("payment", 2), ev("order", 5), ev("payment", 5)}
	p := weir.NewPipeline()
	out, late := shopJoin(p, evs, watermark.BoundedOutOfOrderness(0).WithInterval(0), -time.Millisecond, time.Millisecond, -1, nil)
	got := runLines(t, p, out, late)
	want := []string{
		"o (3,3) at 3",
		"o (4,3) at 4",                 // the order at 4 joins the payment at 3
		"o (3,4) at 4", "o (4,4) at 4", // the payment at 4, both orders, in their order
		"late o left 1 too_late_for_join wm 3", "late o right 2 too_late_for_join wm 3",
		"o (5,4) at 5", "o (4,5) at 5", "o (5,5) at 5",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An anti join: the orders without a payment within 10 minutes, emitted
// once the watermark passes each order's time plus 10 minutes (the end of
// the input passes every one).
func TestIntervalJoinAntiPipeline(t *testing.T) {
	m := func(min int) mtime.Time { return mtime.Time(min) * 60_000 }
	evs := []shop{
		{"order", "a", m(0), m(0)},
		{"order", "b", m(1), m(1)},
		{"payment", "a", m(5), m(5)},
		{"order", "c", m(2), m(6)},
		{"payment", "b", m(12), m(12)}, // too late for b: 11 minutes
		{"order", "d", m(20), m(20)},
		{"payment", "z", m(30), m(30)},
		{"order", "e", m(35), m(35)},
	}
	p := weir.NewPipeline()
	out, late := shopJoin(p, evs, watermark.BoundedOutOfOrderness(time.Minute).WithInterval(0), 0, 10*time.Minute, -1, nil, weir.Anti())
	var got []string
	weir.Sink(out, func(j weir.Joined[string, shop, shop]) error {
		got = append(got, fmt.Sprintf("%s wm %d", joinedLine(j), j.Watermark/60_000))
		return nil
	})
	weir.Sink(late, func(l weir.JoinLate[string, shop, shop]) error { got = append(got, lateLine(l)); return nil })
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		// The watermark is the minimum of both sides' latest time minus 1
		// minute (and 1 ms, as Flink's): the payment at 30 moves it to
		// 18:59.999 (the order at 20), past b's 1+10 and c's 2+10; d's
		// 30 waits for the end, the last order moving it to 28:59.999
		// (the payment at 30) only.
		"b unmatched 60000 wm 18",
		"c unmatched 120000 wm 18",
		fmt.Sprintf("d unmatched 1200000 wm %d", mtime.MaxTime/60_000),
		fmt.Sprintf("e unmatched 2100000 wm %d", mtime.MaxTime/60_000),
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A side whose watermark partition has gone idle does not hold the join's
// watermark back, as an idle partition does not elsewhere.
func TestIntervalJoinIdleSide(t *testing.T) {
	evs := []shop{{"payment", "x", 1000, 1000}}
	for i := range 10 {
		evs = append(evs, shop{"order", fmt.Sprint(i), mtime.Time(2000 + 1000*i), mtime.Time(2000 + 1000*i)})
	}
	for _, idle := range []bool{false, true} {
		wm := watermark.BoundedOutOfOrderness(0).WithInterval(0)
		if idle {
			wm = wm.WithIdleness(1500 * time.Millisecond)
		}
		p := weir.NewPipeline()
		out, _ := shopJoin(p, evs, wm, 0, 0, -1, nil, weir.Anti())
		var first mtime.Time = -1
		weir.Sink(out, func(j weir.Joined[string, shop, shop]) error {
			if first < 0 {
				first = j.Watermark
			}
			return nil
		})
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Idle from 2.5 s, the payments no longer hold the watermark back:
		// the order at 3 s moves it to 2.999 s, past the order at 2 s.
		if idle && first != 2999 || !idle && first != mtime.MaxTime {
			t.Errorf("idleness %v: the first unmatched order came at the watermark %d", idle, first)
		}
	}
}

// shopEvents are n orders, each paid (or not) within some minutes, with
// events out of order.
func shopEvents(n int) []shop {
	r := rand.New(rand.NewPCG(4, 9))
	var evs []shop
	at := mtime.Time(1_780_000_000_000)
	for i := range n {
		at += mtime.Time(r.IntN(3000))
		id := fmt.Sprintf("o%d", i%(n/3+1))
		evs = append(evs, shop{"order", id, at - mtime.Time(r.IntN(2000)), at})
		if r.IntN(4) > 0 {
			evs = append(evs, shop{"payment", id, at + mtime.Time(r.IntN(40_000)) - 15_000, at + 1})
		}
	}
	slices.SortStableFunc(evs, func(a, b shop) int { return int(a.Arrival - b.Arrival) })
	return evs
}

// joinFile runs a left outer join of evs into path, exactly once; cancel,
// when set, is called after the element at stopAt was read.
func joinFile(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	return joinFileWith(evs, path, opts, stopAt, cancel, 20*time.Second)
}

func joinFileWith(evs []shop, path string, opts []weir.Option, stopAt int, cancel func(), upper time.Duration, jopts ...weir.JoinOption) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	out, late := shopJoin(p, evs, watermark.BoundedOutOfOrderness(5*time.Second), -5*time.Second, upper, stopAt, cancel, append(jopts, weir.LeftOuter())...)
	all := weir.Union(weir.Map(out, joinedLine), weir.Map(late, lateLine))
	weir.SinkTo(all, "joined", &file.Sink[string]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
	return p
}

// A join stops with a savepoint and resumes from it, at the same and at
// another parallelism: the output is what an uninterrupted run writes,
// byte for byte.
func TestIntervalJoinCheckpointsAndResume(t *testing.T) {
	resumesAsUninterrupted(t, shopEvents(6000), 3000, enoughJoined, joinFile)
}

// A temporal join stops with a savepoint and resumes from it, at the same
// and at another parallelism: the output is what an uninterrupted run
// writes, byte for byte. The payments are the versions of an order's
// row, a seventh of them deletions.
func TestTemporalJoinCheckpointsAndResume(t *testing.T) {
	resumesAsUninterrupted(t, shopEvents(6000), 3000, enoughJoined, temporalFile)
}

// temporalFile runs a left outer temporal join of evs into path, exactly
// once: the payments are the versions of an order's row, a seventh of
// them deletions; cancel, when set, is called after the element at stopAt
// was read.
func temporalFile(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	src := shopSource(p, evs, stopAt, cancel)
	wm := watermark.BoundedOutOfOrderness(5 * time.Second)
	out, late := weir.TemporalJoin(shopSide(src, "order", wm), shopSide(src, "payment", wm),
		weir.LeftOuter(), weir.JoinLateness(2*time.Second), weir.Named("payments"),
		weir.TableDeletes(func(e shop) bool { return e.At%7 == 0 }))
	all := weir.Union(weir.Map(out, joinedLine), weir.Map(late, lateLine))
	weir.SinkTo(all, "joined", &file.Sink[string]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
	return p
}

// resumesAsUninterrupted runs the pipeline build makes of evs once
// through, then stopped after the element at stopAt with a savepoint and
// resumed, at the same and at other parallelisms, and compares the
// outputs; enough says the output of the run through can tell.
func resumesAsUninterrupted(t *testing.T, evs []shop, stopAt int, enough func(out []byte) bool, build func(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline) {
	t.Helper()
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.txt")
	if err := build(evs, ref, nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	if !enough(want) {
		t.Fatalf("the reference output is too small: %d bytes", len(want))
	}
	for _, pars := range [][2]int{{1, 1}, {1, 3}, {4, 2}} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d-%d.txt", pars[0], pars[1]))
		ckpt := weir.Checkpoints(filepath.Join(dir, fmt.Sprintf("ckpt-%d-%d", pars[0], pars[1])), time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		err := build(evs, out, []weir.Option{ckpt, weir.Parallelism(pars[0])}, stopAt, cancel).Run(ctx)
		var stopped *engine.StoppedError
		if !errors.As(err, &stopped) || stopped.Savepoint == "" {
			t.Fatalf("stopped: %v", err)
		}
		got, _ := os.ReadFile(out)
		if !bytes.HasPrefix(want, got) || len(got) == 0 || len(got) == len(want) {
			t.Fatalf("after the stop the output (%d bytes) is not a part of the reference (%d bytes)", len(got), len(want))
		}
		c, err := checkpoint.Load(checkpoint.OSFS, stopped.Savepoint)
		if err != nil {
			t.Fatal(err)
		}
		in, err := engine.Inspect(c, nil)
		if err != nil || len(in.Joins)+len(in.Windows)+len(in.Processes) > 1 {
			t.Fatalf("inspect %s: %v, %+v", stopped.Savepoint, err, in)
		}
		if len(in.Joins) == 1 {
			if js := in.Joins[0]; js.Name != "join:payments" || js.Instances != pars[0] || js.Keys < 10 || js.Watermark < 1_780_000_000_000 || js.Bytes < 1000 {
				t.Errorf("the savepoint's join: %+v", js)
			}
		}
		if len(in.Processes) == 1 {
			if ps := in.Processes[0]; ps.Name != "process:payments" || ps.Instances != pars[0] || ps.Keys < 10 || ps.Watermark < 1_780_000_000_000 || ps.Bytes < 1000 {
				t.Errorf("the savepoint's keyed process function: %+v", ps)
			}
		}
		var log strings.Builder
		if err := build(evs, out, []weir.Option{ckpt, weir.Parallelism(pars[1]), weir.Log(&log)}, -1, nil).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "weir: resuming from ") {
			t.Errorf("the last run did not resume: %q", log.String())
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
			t.Errorf("parallelism %d then %d: the resumed output differs from an uninterrupted run (%d bytes, want %d)", pars[0], pars[1], len(got), len(want))
		}
	}
}

// The pipeline errors of a join.
func TestIntervalJoinErrors(t *testing.T) {
	p := weir.NewPipeline()
	s := weir.FromSlice(p, []int{1})
	k := func(wm watermark.Strategy) weir.Keyed[int, int] {
		return weir.KeyBy(weir.WithTimestamps(s, func(int) mtime.Time { return 0 }, wm), func(int) int { return 0 })
	}
	out, _ := weir.IntervalJoin(k(watermark.BoundedOutOfOrderness(0)), k(watermark.BoundedOutOfOrderness(time.Second)), 0, time.Second)
	weir.Sink(out, func(weir.Joined[int, int, int]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "different watermark strategies") {
		t.Errorf("different strategies: %v", err)
	}
	p = weir.NewPipeline()
	s = weir.FromSlice(p, []int{1})
	out, _ = weir.IntervalJoin(k(watermark.BoundedOutOfOrderness(0)), k(watermark.BoundedOutOfOrderness(0)), time.Second, 0)
	weir.Sink(out, func(weir.Joined[int, int, int]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "lower bound 1s is above the upper bound 0s") {
		t.Errorf("bounds: %v", err)
	}
	p = weir.NewPipeline(weir.Checkpoints(t.TempDir(), time.Hour), weir.Delivery(connector.AtLeastOnce))
	s = weir.FromSlice(p, []int{1})
	type fn struct{ F func() }
	r := weir.KeyBy(weir.WithTimestamps(weir.Map(s, func(int) fn { return fn{} }), func(fn) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0)), func(fn) int { return 0 })
	out2, _ := weir.IntervalJoin(k(watermark.BoundedOutOfOrderness(0)), r, 0, time.Second)
	weir.Sink(out2, func(weir.Joined[int, int, fn]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot be checkpointed") {
		t.Errorf("a type without a codec: %v", err)
	}
	p = weir.NewPipeline()
	s = weir.FromSlice(p, []int{1})
	versioned := weir.KeyBy(weir.WithTimestamps(s, func(int) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0)).
		Deduplicated(time.Hour, func(int) string { return "a" }).Versioned(func(int) int64 { return 1 }), func(int) int { return 0 })
	out, _ = weir.IntervalJoin(versioned, k(watermark.BoundedOutOfOrderness(0)), 0, time.Second)
	weir.Sink(out, func(weir.Joined[int, int, int]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "a side is Versioned, which a join does not do") {
		t.Errorf("a versioned side: %v", err)
	}
}

// A restore into a join whose interval, mode or lateness changed carries
// the buffered records over and says what becomes of them.
func TestIntervalJoinRestoreAfterAChange(t *testing.T) {
	evs := shopEvents(3000)
	for _, c := range []struct {
		name  string
		upper time.Duration
		opts  []weir.JoinOption
		log   []string
	}{
		{"interval", 30 * time.Second, nil, []string{"restore: carries over interval: [-5s, 20s] -> [-5s, 30s]: the buffered records join and expire by the new interval from the restore on (what was emitted stays emitted)"}},
		{"lateness", 20 * time.Second, []weir.JoinOption{weir.JoinLateness(time.Minute)}, []string{"restore: carries over allowed_lateness: 0s -> 1m0s: the buffered records expire at their time plus the interval plus the new lateness, and records are late by it from the restore on (those let go already stay gone)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, ckpt := stoppedJoin(t, evs)
			var log strings.Builder
			if err := joinFileWith(evs, out, []weir.Option{ckpt, weir.Log(&log)}, -1, nil, c.upper, c.opts...).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(log.String(), "\n") {
				if l, ok := strings.CutPrefix(l, "weir: "); ok && strings.HasPrefix(l, "restore: ") {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, c.log) {
				t.Errorf("the restore says\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.log, "\n"))
			}
		})
	}
}

// A join's output windowed again: with watermark.ScriptedWatermark() and
// weir.JoinTime, the aggregation follows the join's watermark, as one of
// panes follows the aggregation before it.
func TestIntervalJoinThenAggregate(t *testing.T) {
	evs := shopEvents(3000)
	build := func(p *weir.Pipeline) weir.Stream[weir.Joined[string, shop, shop]] {
		out, _ := shopJoin(p, evs, watermark.BoundedOutOfOrderness(5*time.Second), -5*time.Second, 20*time.Second, -1, nil)
		return out
	}
	want := perMinute(t, build, weir.JoinTime[string, shop, shop], false)
	if got := perMinute(t, build, weir.JoinTime[string, shop, shop], true); got != want || strings.Count(got, "\n") < 20 {
		t.Errorf("the pairs per minute, windowed after the join:\n%s\nwant\n%s", got, want)
	}
}

// perMinute runs the pipeline build makes and says how many elements of
// its stream fall in each minute of their time at: windowed again
// downstream (chained: a tumbling count following the stream's watermark
// with watermark.ScriptedWatermark(), its panes with their timing, and
// "late" for each element too late for its window), or counted as they
// come, as on-time panes would say it.
func perMinute[T any](t *testing.T, build func(p *weir.Pipeline) weir.Stream[T], at func(T) mtime.Time, chained bool) string {
	t.Helper()
	p := weir.NewPipeline()
	out := build(p)
	var got strings.Builder
	counts := map[mtime.Time]int64{}
	if chained {
		stamped := weir.WithTimestamps(out, at, watermark.ScriptedWatermark())
		panes, late := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(T) string { return "all" }),
			window.NewStrategy(window.TumblingWindows(time.Minute))), aggregate.Count[T]())
		weir.Sink(panes, func(pn weir.Pane[string, int64]) error {
			fmt.Fprintf(&got, "%s %d %s\n", pn.Window, pn.Value, pn.Timing)
			return nil
		})
		weir.Sink(late, func(weir.Late[string, T]) error {
			got.WriteString("late\n")
			return nil
		})
	} else {
		weir.Sink(out, func(v T) error { counts[at(v)-at(v)%60_000]++; return nil })
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, start := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&got, "%s %d ON_TIME\n", window.Window{Start: start, End: start + 60_000}, counts[start])
	}
	return got.String()
}

// Flink IntervalJoinOperatorTest.testDiscardsLateData, scripted with a
// weirtest.TestStream: the watermark the script moves is both sides'.
func TestIntervalJoinTestStream(t *testing.T) {
	ev := func(kind string, ts int64) shop { return shop{Kind: kind, Order: "o", At: mtime.Time(ts)} }
	script := weirtest.NewTestStream[shop]().
		AddElements(ev("order", 1), ev("payment", 1), ev("order", 2), ev("payment", 2), ev("order", 3), ev("payment", 3)).
		AdvanceWatermarkTo(3).
		AddElements(ev("order", 1)). // late: not joined again
		AddElements(ev("order", 4), ev("payment", 4), ev("order", 5), ev("payment", 5))
	p := weir.NewPipeline()
	src := weir.From(p, script)
	out, late := weir.IntervalJoin(shopSide(src, "order", watermark.ScriptedWatermark()), shopSide(src, "payment", watermark.ScriptedWatermark()),
		-time.Millisecond, time.Millisecond)
	got := runLines(t, p, out, late)
	want := []string{
		"o (1,1) at 1", "o (2,1) at 2", "o (1,2) at 2", "o (2,2) at 2", "o (3,2) at 3", "o (2,3) at 3", "o (3,3) at 3",
		"late o left 1 too_late_for_join wm 3",
		"o (4,3) at 4", "o (3,4) at 4", "o (4,4) at 4", "o (5,4) at 5", "o (4,5) at 5", "o (5,5) at 5",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// paid is a payment as a type of its own.
type paid struct {
	Order string
	At    mtime.Time
}

// A join whose record type changed cannot restore its buffered records:
// the restore is refused, unless weir.DropState("join") starts them afresh,
// keeping the positions.
func TestIntervalJoinLayoutChange(t *testing.T) {
	evs := shopEvents(3000)
	wm := watermark.BoundedOutOfOrderness(5 * time.Second)
	build := func(out string, opts []weir.Option, stopAt int, cancel func(), typed bool) *weir.Pipeline {
		p := weir.NewPipeline(opts...)
		src := shopSource(p, evs, stopAt, cancel)
		orders := shopSide(src, "order", wm)
		var lines weir.Stream[string]
		if typed {
			pays := weir.Map(weir.Filter(src, func(e shop) bool { return e.Kind == "payment" }), func(e shop) paid { return paid{e.Order, e.At} })
			right := weir.KeyBy(weir.WithTimestamps(pays, func(e paid) mtime.Time { return e.At }, wm), func(e paid) string { return e.Order })
			j, _ := weir.IntervalJoin(orders, right, 0, 20*time.Second, weir.Named("payments"))
			lines = weir.Map(j, func(j weir.Joined[string, shop, paid]) string {
				return fmt.Sprintf("%s (%d,%d)", j.Key, j.LeftTime, j.RightTime)
			})
		} else {
			j, _ := weir.IntervalJoin(orders, shopSide(src, "payment", wm), 0, 20*time.Second, weir.Named("payments"))
			lines = weir.Map(j, func(j weir.Joined[string, shop, shop]) string {
				return fmt.Sprintf("%s (%d,%d)", j.Key, j.LeftTime, j.RightTime)
			})
		}
		weir.SinkTo(lines, "joined", &file.Sink[string]{Path: out, ExactlyOnce: true,
			Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
		return p
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := build(out, []weir.Option{ckpt}, 1500, cancel, false).Run(ctx); err == nil {
		t.Fatal("the stopped run ended")
	}
	err := build(out, []weir.Option{ckpt}, -1, nil, true).Run(context.Background())
	// The keys buffered at the stop: how far past the element at 1500 the
	// loop read before it stopped is the reading's.
	if err == nil || !regexp.MustCompile(`, weir_test.paid now: restoring would lose the buffered records of [1-9][0-9]* keys; weir.DropState\("join"\) starts them afresh, keeping the positions and the other state$`).MatchString(err.Error()) {
		t.Fatalf("a changed right type: %v", err)
	}
	var log strings.Builder
	if err := build(out, []weir.Option{ckpt, weir.DropState(engine.StateJoin), weir.Log(&log)}, -1, nil, true).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `restore: restarts right: weir_test.shop -> weir_test.paid: its buffered records dropped (weir.DropState("join"))`) {
		t.Errorf("the restore says %q", log.String())
	}
}

// A checkpoint of an interval join does not restore into a temporal one
// (its buffers hold records within an interval, not versions), unless
// weir.DropState("join") starts them afresh.
func TestTemporalJoinFromAnIntervalJoinsCheckpoint(t *testing.T) {
	evs := shopEvents(3000)
	out, ckpt := stoppedJoin(t, evs)
	temporal := func(opts ...weir.Option) error {
		p := weir.NewPipeline(append([]weir.Option{ckpt}, opts...)...)
		src := shopSource(p, evs, -1, nil)
		wm := watermark.BoundedOutOfOrderness(5 * time.Second)
		joined, _ := weir.TemporalJoin(shopSide(src, "order", wm), shopSide(src, "payment", wm), weir.LeftOuter(), weir.Named("payments"))
		weir.SinkTo(weir.Map(joined, joinedLine), "joined", &file.Sink[string]{Path: out, ExactlyOnce: true,
			Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
		return p.Run(context.Background())
	}
	// The keys the savepoint holds (how far the stop let the source loop
	// run past the element at 1500 varies).
	sps, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "ckpt", "savepoints", "sp-*"))
	if len(sps) != 1 {
		t.Fatalf("savepoints %q", sps)
	}
	c, err := checkpoint.Load(checkpoint.OSFS, sps[0])
	if err != nil {
		t.Fatal(err)
	}
	in, err := engine.Inspect(c, nil)
	if err != nil || len(in.Joins) != 1 || in.Joins[0].Keys < 10 {
		t.Fatalf("inspect: %v, %+v", err, in)
	}
	lost := fmt.Sprintf(`, temporal now: restoring would lose the buffered records of %d keys; weir.DropState("join") starts them afresh`, in.Joins[0].Keys)
	if err := temporal(); err == nil || !strings.Contains(err.Error(), "weir: join: interval in ") || !strings.Contains(err.Error(), lost) {
		t.Errorf("restored into a temporal join: %v", err)
	}
	var log strings.Builder
	if err := temporal(weir.DropState("join"), weir.Log(&log)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "weir: resuming from ") {
		t.Errorf("did not resume: %q", log.String())
	}
}

// enoughJoined says a join's output has pairs, unmatched records and late
// ones.
func enoughJoined(out []byte) bool {
	return bytes.Count(out, []byte("unmatched")) >= 100 && bytes.Count(out, []byte("late")) >= 10 && bytes.Count(out, []byte(") at ")) >= 1000
}

// stoppedJoin runs joinFile on evs, stopped with a savepoint after the
// element at 1500: its output file, and the option of its checkpoints.
func stoppedJoin(t *testing.T, evs []shop) (string, weir.Option) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := joinFile(evs, out, []weir.Option{ckpt}, 1500, cancel).Run(ctx); err == nil {
		t.Fatal("the stopped run ended")
	}
	return out, ckpt
}

// A Deduplicated side is de-duplicated before the join, as an
// aggregation's input is: an order and a payment each delivered twice join
// once, a second payment of the order (an id of its own) joins too, and a
// payment too old for its id to be checked (its time plus the horizon at or
// before the watermark) goes to the late output as beyond_dedup_horizon,
// never into the join.
func TestIntervalJoinDeduplicated(t *testing.T) {
	ev := func(kind, order string, at int64) shop { return shop{Kind: kind, Order: order, At: mtime.Time(at)} }
	evs := []shop{ev("order", "o", 3), ev("order", "o", 3), ev("payment", "o", 4), ev("payment", "o", 4), ev("payment", "o", 5),
		ev("order", "q", 20), ev("payment", "q", 21), ev("payment", "o", 6)}
	for i := range evs {
		evs[i].Arrival = mtime.Time(i)
	}
	id := func(e shop) string { return fmt.Sprint(e.Kind, e.Order, e.At) }
	// The same with the ids on disk: the left input's in the join's
	// database, the right one's in their own.
	for _, opts := range [][]weir.Option{nil, {weir.StateOnDisk("", onDiskBudget)}} {
		p := weir.NewPipeline(opts...)
		src := weir.FromSlice(p, evs)
		wm := watermark.BoundedOutOfOrderness(0).WithInterval(0)
		side := func(kind string) weir.Keyed[string, shop] {
			s := weir.Filter(src, func(e shop) bool { return e.Kind == kind })
			return weir.KeyBy(weir.WithTimestamps(s, func(e shop) mtime.Time { return e.At }, wm).Deduplicated(10*time.Millisecond, id), func(e shop) string { return e.Order })
		}
		out, late := weir.IntervalJoin(side("order"), side("payment"), 0, 10*time.Millisecond, weir.Named("payments"))
		got := runLines(t, p, out, late)
		want := []string{
			"o (3,4) at 4", // once, though both were delivered twice
			"o (3,5) at 5",
			"q (20,21) at 21",
			"late o right 6 beyond_dedup_horizon wm 19", // 6 + 10 ms <= the watermark, 19
		}
		if !slices.Equal(got, want) {
			t.Errorf("on disk %v: got\n%s\nwant\n%s", opts != nil, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// A join of Deduplicated sides stops with a savepoint and resumes from it,
// at the same and at another parallelism, its ids with it: the output is
// what an uninterrupted run writes, byte for byte, duplicates dropped
// whether their first delivery came before the savepoint or after it.
func TestIntervalJoinDeduplicatedCheckpointsAndResume(t *testing.T) {
	evs := shopEvents(6000)
	resumesAsUninterrupted(t, withDuplicates(evs), 3000, enoughJoined, dedupJoinFile)
}

// withDuplicates is evs with every seventh event delivered again half a
// second later.
func withDuplicates(evs []shop) []shop {
	var withDups []shop
	for i, e := range evs {
		withDups = append(withDups, e)
		if i%7 == 3 {
			again := e
			again.Arrival = e.Arrival + 500
			withDups = append(withDups, again)
		}
	}
	slices.SortStableFunc(withDups, func(a, b shop) int { return int(a.Arrival - b.Arrival) })
	return withDups
}

// dedupJoinFile joins evs' orders and payments, each Deduplicated, into
// path, exactly once; cancel, when set, is called after the element at
// stopAt was read.
func dedupJoinFile(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	src := shopSource(p, evs, stopAt, cancel)
	wm := watermark.BoundedOutOfOrderness(5 * time.Second)
	id := func(e shop) string { return fmt.Sprint(e.Kind, e.Order, e.At) }
	side := func(kind string) weir.Keyed[string, shop] {
		s := weir.Filter(src, func(e shop) bool { return e.Kind == kind })
		return weir.KeyBy(weir.WithTimestamps(s, func(e shop) mtime.Time { return e.At }, wm).Deduplicated(time.Hour, id), func(e shop) string { return e.Order })
	}
	out, late := weir.IntervalJoin(side("order"), side("payment"), -5*time.Second, 20*time.Second, weir.LeftOuter(), weir.Named("payments"))
	all := weir.Union(weir.Map(out, joinedLine), weir.Map(late, lateLine))
	weir.SinkTo(all, "joined", &file.Sink[string]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
	return p
}
