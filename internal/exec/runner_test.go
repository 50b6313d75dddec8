package exec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/textdiff"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

type ev struct {
	key     string
	ts, arr mtime.Time
	v       int
}

// stream is a random keyed stream in arrival order: jitter, a few events
// hours late, repeated keys.
func stream(seed uint64, n int) []ev {
	r := rand.New(rand.NewPCG(seed, 7))
	var out []ev
	t := mtime.Time(1_700_000_000_000)
	for i := 0; i < n; i++ {
		t += mtime.Time(r.IntN(400))
		e := ev{key: fmt.Sprintf("k%d", r.IntN(7)), ts: t - mtime.Time(r.IntN(3000)), v: r.IntN(10)}
		if r.IntN(50) == 0 {
			e.ts -= mtime.Time(r.IntN(120_000))
		}
		e.arr = t
		out = append(out, e)
	}
	return out
}

func runWith(p int, s window.Strategy, wm watermark.Strategy, evs []ev) string {
	return runWithState(p, s, wm, evs, nil)
}

func runWithState(p int, s window.Strategy, wm watermark.Strategy, evs []ev, db *state.DB) string {
	var b strings.Builder
	r := NewRunner(Config[string, ev, []ev, string]{
		State:    db,
		Codec:    evCodec{},
		Strategy: s,
		Agg: aggregate.Process(func(es []ev) string {
			sum := 0
			for _, e := range es {
				sum += e.v
			}
			return fmt.Sprintf("n=%d sum=%d", len(es), sum)
		}),
		Parallelism: p,
		BatchSize:   7,
		Hash: func(k string) uint64 {
			return uint64(k[len(k)-1])
		},
		Emit: func(outs []Out[string, ev, string]) error {
			for _, o := range outs {
				if o.Kind == OutLate {
					fmt.Fprintf(&b, "late %s %d %v\n", o.Late.Key, o.Late.Timestamp, o.Late.Window)
					continue
				}
				pn := o.Pane
				fmt.Fprintf(&b, "%s %v #%d %s final=%v retract=%v wm=%d at=%d %s\n", pn.Key, pn.Window,
					pn.Revision, pn.Timing, pn.Final, pn.Retract, pn.Watermark, pn.EmittedAt, pn.Value)
			}
			return nil
		},
	})
	d := NewDriver[string, ev](r, wm, s.Trigger.UsesProcessingTime())
	for _, e := range evs {
		d.Advance(e.arr)
		d.Event(0, e.key, e.ts, e)
	}
	d.End()
	if err := r.Wait(); err != nil {
		panic(err)
	}
	st := r.Stats()
	fmt.Fprintf(&b, "accepted=%d late=%d lateAccepted=%d panes=%d open=%d\n", st.Accepted, st.TooLate, st.LateAccepted, st.Panes, st.Open)
	return b.String()
}

// The same input in the same arrival order gives byte-identical output,
// however many operator instances run, for every kind of window and trigger.
func TestDeterministicAcrossParallelism(t *testing.T) {
	evs := stream(1, 3000)
	wm := watermark.BoundedOutOfOrderness(time.Second)
	strategies := map[string]window.Strategy{
		"tumbling early aligned": window.NewStrategy(window.TumblingWindows(10 * time.Second)).
			WithLateness(30 * time.Second).
			WithTrigger(trigger.AfterWatermark().EarlyEvery(time.Second, true).LateThrottled(2 * time.Second)),
		"sliding retracting": window.NewStrategy(window.SlidingWindows(15*time.Second, 7*time.Second)).
			WithLateness(20 * time.Second).WithMode(window.Retracting),
		"session early unaligned": window.NewStrategy(window.SessionWindows(2 * time.Second)).
			WithLateness(time.Minute).WithMode(window.Retracting).
			WithTrigger(trigger.AfterWatermark().EarlyEvery(700*time.Millisecond, false).EarlyCount(3)),
		"session discarding": window.NewStrategy(window.SessionWindows(time.Second)).
			WithLateness(10 * time.Second).WithMode(window.Discarding).
			WithTrigger(trigger.AfterWatermark().EarlyCount(2)),
		"global": window.NewStrategy(window.GlobalWindows()).WithTrigger(trigger.AfterWatermark().EarlyCount(50)),
	}
	for name, s := range strategies {
		t.Run(name, func(t *testing.T) {
			want := runWith(0, s, wm, evs)
			if strings.Count(want, "\n") < 50 {
				t.Fatalf("too few outputs to compare:\n%s", want)
			}
			for _, p := range []int{1, 2, 3, 4} {
				if got := runWith(p, s, wm, evs); got != want {
					t.Fatalf("parallelism %d differs from inline:\n%s", p, textdiff.FirstLine(want, got))
				}
			}
			// On disk, with a cache so small that keys are evicted and read
			// back all the time.
			db, err := state.Open(t.TempDir(), 8<<10)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, p := range []int{1, 3} {
				if got := runWithState(p, s, wm, evs, db); got != want {
					t.Fatalf("pebble state, parallelism %d differs from memory:\n%s", p, textdiff.FirstLine(want, got))
				}
			}
		})
	}
}

// Every event is accounted for exactly once, and windows never leak.
func TestAccounting(t *testing.T) {
	evs := stream(2, 5000)
	s := window.NewStrategy(window.SlidingWindows(10*time.Second, 5*time.Second)).WithLateness(5 * time.Second)
	r := NewRunner(Config[string, ev, int64, int64]{Strategy: s, Agg: aggregate.Count[ev](), Parallelism: 0,
		Emit: func([]Out[string, ev, int64]) error { return nil }})
	d := NewDriver[string, ev](r, watermark.BoundedOutOfOrderness(500*time.Millisecond).WithInterval(0), false)
	for _, e := range evs {
		d.Advance(e.arr)
		d.Event(0, e.key, e.ts, e)
	}
	d.End()
	st := r.Stats()
	if st.Accepted+st.TooLate != int64(len(evs)) || st.TooLate == 0 || st.LateAccepted == 0 {
		t.Fatalf("accepted %d + too late %d != %d (late accepted %d)", st.Accepted, st.TooLate, len(evs), st.LateAccepted)
	}
	if st.Open != 0 || r.ops[0].state.len() != 0 || r.ops[0].et.len() != 0 {
		t.Fatalf("state left after the end: open=%d keys=%d timers=%d", st.Open, r.ops[0].state.len(), r.ops[0].et.len())
	}
}

// A failing sink stops the runner and its error comes back.
func TestSinkError(t *testing.T) {
	boom := fmt.Errorf("disk full")
	for _, p := range []int{0, 2} {
		r := NewRunner(Config[string, int, int64, int64]{
			Strategy: window.NewStrategy(window.TumblingWindows(time.Second)), Agg: aggregate.Count[int](),
			Parallelism: p, Hash: func(string) uint64 { return 0 },
			Emit: func([]Out[string, int, int64]) error { return boom },
		})
		for i := range 5000 {
			r.Event("k", mtime.Time(i*1000), 0, i)
			r.Watermark(mtime.Time(i*1000), 0)
		}
		r.End(0)
		if err := r.Wait(); err != boom {
			t.Errorf("parallelism %d: err = %v", p, err)
		}
	}
}

// Sliding windows computed from shared slices give exactly the panes of
// windows that each keep their own accumulator.
func TestSlicingMatchesPerWindow(t *testing.T) {
	evs := stream(5, 3000)
	wm := watermark.BoundedOutOfOrderness(500 * time.Millisecond).WithInterval(0)
	for _, s := range []window.Strategy{
		window.NewStrategy(window.SlidingWindows(10*time.Second, 4*time.Second)).WithLateness(15 * time.Second).
			WithTrigger(trigger.AfterWatermark().EarlyCount(5)),
		window.NewStrategy(window.SlidingWindows(9*time.Second, 3*time.Second).WithOffset(time.Second)).
			WithLateness(20 * time.Second).WithMode(window.Retracting).
			WithTrigger(trigger.AfterWatermark().EarlyEvery(time.Second, true).LateThrottled(time.Second)),
	} {
		run := func(sliced bool) string {
			var b strings.Builder
			r := NewRunner(Config[string, ev, []ev, string]{Strategy: s, Parallelism: 0,
				Agg: aggregate.Process(func(es []ev) string {
					sum := 0
					for _, e := range es {
						sum += e.v
					}
					return fmt.Sprintf("n=%d sum=%d", len(es), sum)
				}),
				Emit: func(outs []Out[string, ev, string]) error {
					for _, o := range outs {
						fmt.Fprintf(&b, "%d %v %s %v #%d %s %v %s\n", o.Kind, o.Late.Timestamp, o.Pane.Key, o.Pane.Window, o.Pane.Revision, o.Pane.Timing, o.Pane.Retract, o.Pane.Value)
					}
					return nil
				}})
			if r.ops[0].slice == 0 {
				t.Fatal("sliding windows do not slice")
			}
			if !sliced {
				r.ops[0].slice = 0
			}
			d := NewDriver[string, ev](r, wm, s.Trigger.UsesProcessingTime())
			for _, e := range evs {
				d.Advance(e.arr)
				d.Event(0, e.key, e.ts, e)
			}
			d.End()
			return b.String()
		}
		want, got := run(false), run(true)
		if got != want || strings.Count(want, "\n") < 100 {
			t.Fatalf("sliced panes differ:\n%s", textdiff.FirstLine(want, got))
		}
	}
}
