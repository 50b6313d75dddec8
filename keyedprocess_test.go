package weir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/process"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// payWatch is a keyed process function over a shop's orders and payments
// by order: an order paid within 20 s of its time is "paid", one that is
// not by then (the watermark says) is "unpaid", and an alert goes to a
// side output; a payment before its order waits for it (in a list), and
// is dropped 20 s after its time if none came. An order not settled 30 s
// of processing time after it arrived is also reported "slow", to a second
// side output, and records behind the watermark go to a third. Its states
// are of the three kinds, its timers of both domains.
type payWatch struct {
	ordered  *process.Value[mtime.Time]
	early    *process.List[mtime.Time]
	counts   *process.Map[string, int]
	alerts   *process.Output[string]
	slow     *process.Output[string]
	late     *process.Output[string]
	extra    []process.State // states added by a test
	failWith error           // returned at the order "o7"
}

func newPayWatch() *payWatch {
	return &payWatch{
		ordered: process.NewValue[mtime.Time]("ordered"),
		early:   process.NewList[mtime.Time]("early"),
		counts:  process.NewMap[string, int]("counts"),
		alerts:  process.NewOutput[string]("alerts"),
		slow:    process.NewOutput[string]("slow"),
		late:    process.NewOutput[string]("late"),
	}
}

func (w *payWatch) fn() process.Func[string, shop, string] {
	return process.Func[string, shop, string]{
		State: append([]process.State{w.ordered, w.early, w.counts}, w.extra...),
		Sides: []process.Side{w.alerts, w.slow, w.late},
		Element: func(c *process.Context[string, string], e shop) error {
			if w.failWith != nil && e.Order == "o7" {
				return w.failWith
			}
			if e.At <= c.Watermark() {
				w.late.Emit(c, fmt.Sprintf("late %s %s %d wm %d", e.Kind, c.Key(), e.At, c.Watermark()))
				return nil
			}
			n, _ := w.counts.Get(c, e.Kind)
			w.counts.Put(c, e.Kind, n+1)
			if e.Kind == "order" {
				if at, ok := w.ordered.Get(c); ok {
					c.DeleteEventTimer(at + 20_000)
				}
				for _, p := range w.early.Get(c) {
					if p >= e.At && p <= e.At+20_000 {
						c.Emit(fmt.Sprintf("paid %s at %d (early payment %d)", c.Key(), e.At, p))
						w.settle(c)
						return nil
					}
				}
				w.ordered.Set(c, e.At)
				c.EventTimer(e.At + 20_000)
				c.ProcessingTimer(c.Now() + 30_000)
				return nil
			}
			if at, ok := w.ordered.Get(c); ok && e.At >= at && e.At <= at+20_000 {
				c.Emit(fmt.Sprintf("paid %s at %d after %d ms", c.Key(), at, e.At-at))
				c.DeleteEventTimer(at + 20_000)
				w.settle(c)
				return nil
			}
			w.early.Add(c, e.At)
			c.EventTimer(e.At + 20_000)
			return nil
		},
		Timer: func(c *process.Context[string, string], t process.Timer) error {
			if t.Domain == process.ProcessingTime {
				if at, ok := w.ordered.Get(c); ok {
					w.slow.Emit(c, fmt.Sprintf("slow %s ordered at %d, at %d", c.Key(), at, c.Now()))
				}
				return nil
			}
			if at, ok := w.ordered.Get(c); ok && at+20_000 == t.Time {
				orders, _ := w.counts.Get(c, "order")
				c.Emit(fmt.Sprintf("unpaid %s at %d (%d orders seen)", c.Key(), at, orders))
				w.alerts.Emit(c, fmt.Sprintf("alert %s at %d", c.Key(), c.Watermark()))
				w.settle(c)
				return nil
			}
			// An early payment's time is up: forget the early ones.
			w.early.Set(c, slices.DeleteFunc(slices.Clone(w.early.Get(c)), func(p mtime.Time) bool { return p+20_000 <= t.Time }))
			return nil
		},
	}
}

// settle forgets an order's state but its counts.
func (w *payWatch) settle(s process.Scope) {
	w.ordered.Clear(s)
	w.early.Clear(s)
}

// processFile runs payWatch on evs into path, exactly once, the side
// outputs with the main output; cancel, when set, is called after the
// element at stopAt was read.
func processFile(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	return processFileWith(newPayWatch(), evs, path, opts, stopAt, cancel)
}

func processFileWith(w *payWatch, evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	src := shopSource(p, evs, stopAt, cancel)
	keyed := weir.KeyBy(weir.WithTimestamps(src, func(e shop) mtime.Time { return e.At }, watermark.BoundedOutOfOrderness(30*time.Second)),
		func(e shop) string { return e.Order })
	out := weir.KeyedProcess(keyed, w.fn(), weir.Named("payments"))
	all := weir.Union(out, weir.SideOutput(out, w.alerts), weir.SideOutput(out, w.slow), weir.SideOutput(out, w.late))
	weir.SinkTo(all, "watched", &file.Sink[string]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
	return p
}

// enoughWatched says payWatch's output has every kind of line.
func enoughWatched(out []byte) bool {
	for word, least := range map[string]int{" ms\n": 1000, "unpaid ": 1000, "alert ": 1000, "slow ": 1000, "late ": 100} {
		if bytes.Count(out, []byte(word)) < least {
			return false
		}
	}
	return true
}

// A keyed process function stops with a savepoint and resumes from it, at
// the same and at another parallelism: the output, main and side, is what
// an uninterrupted run writes, byte for byte (its states of every kind and
// timers of both domains restored, and their order).
func TestKeyedProcessCheckpointsAndResume(t *testing.T) {
	resumesAsUninterrupted(t, shopEvents(6000), 3000, enoughWatched, processFile)
}

// The pipeline errors of a keyed process function.
func TestKeyedProcessErrors(t *testing.T) {
	keyed := func(p *weir.Pipeline) weir.Keyed[int, int] {
		s := weir.FromSlice(p, []int{1, 2, 3})
		return weir.KeyBy(weir.WithTimestamps(s, func(v int) mtime.Time { return mtime.Time(v) }, watermark.BoundedOutOfOrderness(0)), func(v int) int { return v % 2 })
	}
	emit := func(c *process.Context[int, int], v int) error { c.Emit(v); return nil }
	tag := process.NewOutput[string]("odd")
	for _, tc := range []struct {
		name  string
		build func(p *weir.Pipeline) weir.Stream[int]
		want  string
	}{
		{"no element", func(p *weir.Pipeline) weir.Stream[int] {
			return weir.KeyedProcess(keyed(p), process.Func[int, int, int]{})
		}, "process process-1: the function has no Element"},
		{"a side output not taken", func(p *weir.Pipeline) weir.Stream[int] {
			return weir.KeyedProcess(keyed(p), process.Func[int, int, int]{Sides: []process.Side{tag}, Element: emit})
		}, `weir: process process-1: its side output "odd" goes nowhere: take it with weir.SideOutput`},
		{"a side output not the function's", func(p *weir.Pipeline) weir.Stream[int] {
			out := weir.KeyedProcess(keyed(p), process.Func[int, int, int]{Element: emit})
			weir.Sink(weir.SideOutput(out, tag), func(string) error { return nil })
			return out
		}, `SideOutput "odd": not one of the side outputs of process process-1 (Func.Sides)`},
		{"a side output of another stream", func(p *weir.Pipeline) weir.Stream[int] {
			out := weir.Map(weir.KeyedProcess(keyed(p), process.Func[int, int, int]{Element: emit}), func(v int) int { return v })
			weir.Sink(weir.SideOutput(out, tag), func(string) error { return nil })
			return out
		}, `SideOutput "odd": the stream is not a keyed process function's output (KeyedProcess)`},
		{"two states of one name", func(p *weir.Pipeline) weir.Stream[int] {
			return weir.KeyedProcess(keyed(p), process.Func[int, int, int]{Element: emit,
				State: []process.State{process.NewValue[int]("n"), process.NewList[int]("n")}})
		}, `state "n": a state needs a name of its own`},
		{"the output of an aggregation", func(p *weir.Pipeline) weir.Stream[int] {
			panes, _ := weir.Process(weir.Window(keyed(p), window.NewStrategy(window.TumblingWindows(time.Second))), func(k int, _ window.Window, vs []int) int { return len(vs) })
			k := weir.KeyBy(weir.WithTimestamps(panes, weir.PaneTime, watermark.ScriptedWatermark()), func(weir.Pane[int, int]) int { return 0 })
			return weir.KeyedProcess(k, process.Func[int, weir.Pane[int, int], int]{Element: func(c *process.Context[int, int], v weir.Pane[int, int]) error { return nil }})
		}, "process process-2: its input is the output of an aggregation"},
		{"the function's error", func(p *weir.Pipeline) weir.Stream[int] {
			return weir.KeyedProcess(keyed(p), process.Func[int, int, int]{Element: func(c *process.Context[int, int], v int) error {
				if v == 2 {
					return errors.New("two is not allowed")
				}
				return nil
			}})
		}, "process:process-1: two is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := weir.NewPipeline()
			weir.Sink(tc.build(p), func(int) error { return nil })
			err := p.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	// A state of a type JSON cannot round-trip, with checkpoints.
	p := weir.NewPipeline(weir.Checkpoints(t.TempDir(), time.Hour))
	out := weir.KeyedProcess(keyed(p), process.Func[int, int, int]{Element: emit,
		State: []process.State{process.NewValue[chan int]("ch")}})
	weir.Sink(out, func(int) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "process process-1: the type chan int cannot be checkpointed") {
		t.Errorf("a channel's state: %v", err)
	}
}

// A restore into a function whose state changed: one more state carries
// the others over; a state of another type is refused, naming it, unless
// DropState("process") says to start the state afresh (the positions and
// the sink's commits carry over).
func TestKeyedProcessRestoreAfterAChange(t *testing.T) {
	evs := shopEvents(3000)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.txt")
	if err := processFile(evs, ref, nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	stopped := func(name string, extra ...process.State) (string, weir.Option) {
		out := filepath.Join(dir, name+".txt")
		ckpt := weir.Checkpoints(filepath.Join(dir, name), time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := newPayWatch()
		w.extra = extra
		if err := processFileWith(w, evs, out, []weir.Option{ckpt}, 1500, cancel).Run(ctx); err == nil {
			t.Fatal("the stopped run ended")
		}
		return out, ckpt
	}
	resume := func(out string, opts []weir.Option, extra ...process.State) error {
		w := newPayWatch()
		w.extra = extra
		return processFileWith(w, evs, out, opts, -1, nil).Run(context.Background())
	}

	out, ckpt := stopped("added")
	if err := resume(out, []weir.Option{ckpt}, process.NewValue[int]("new")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Errorf("a state added: the resumed output differs from an uninterrupted run")
	}

	out, ckpt = stopped("changed", process.NewValue[int]("x"))
	err := resume(out, []weir.Option{ckpt}, process.NewValue[string]("x"))
	if err == nil || !strings.Contains(err.Error(), "state.x") || !strings.Contains(err.Error(), `weir.DropState("process")`) {
		t.Fatalf("a state's type changed: %v", err)
	}
	var log strings.Builder
	if err := resume(out, []weir.Option{ckpt, weir.DropState("process"), weir.Log(&log)}, process.NewValue[string]("x")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "its keyed state and timers dropped") {
		t.Errorf("the log does not say the state was dropped: %q", log.String())
	}
	if got, _ := os.ReadFile(out); bytes.Equal(got, want) || !bytes.Contains(got, []byte("paid ")) {
		t.Errorf("the state dropped: the output (%d bytes) is the uninterrupted run's, or has nothing after the restore", len(got))
	}
}

// The plan says what a keyed process function keeps and where its side
// outputs go.
func TestKeyedProcessPlan(t *testing.T) {
	p := processFile(shopEvents(10), filepath.Join(t.TempDir(), "out.txt"), nil, -1, nil)
	var lines []string
	for _, l := range strings.Split(p.Plan().String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"plan of pipeline: 4 nodes",
		"source shop",
		"process process:payments <- shop keyed process function by string; state ordered: mtime.Time, early: []mtime.Time, counts: map[string]int; side outputs alerts, slow, late; watermark delay 30s, every 200ms",
		"transform union-1 (union) <- process:payments, process:payments (side alerts), process:payments (side slow), process:payments (side late) union",
		"sink watched <- union-1",
		"",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// alert is a keyed process function's output with its event time: an
// order's timer, 20 s after it.
type alert struct {
	Order string
	At    mtime.Time
}

// A keyed process function's output windowed again: the stage's watermark
// goes on after the timers it fires, so that a scripted watermark
// downstream follows it and no alert is late for its window; the counts
// per minute are those of the alerts themselves.
func TestKeyedProcessThenAggregate(t *testing.T) {
	evs := shopEvents(3000)
	timeouts := process.Func[string, shop, alert]{
		Element: func(c *process.Context[string, alert], e shop) error {
			if e.Kind == "order" {
				c.EventTimer(e.At + 20_000)
			}
			return nil
		},
		Timer: func(c *process.Context[string, alert], tm process.Timer) error {
			c.Emit(alert{c.Key(), tm.Time})
			return nil
		},
	}
	build := func(p *weir.Pipeline) weir.Stream[alert] {
		keyed := weir.KeyBy(weir.WithTimestamps(shopSource(p, evs, -1, nil), func(e shop) mtime.Time { return e.At },
			watermark.BoundedOutOfOrderness(5*time.Second)), func(e shop) string { return e.Order })
		return weir.KeyedProcess(keyed, timeouts)
	}
	at := func(a alert) mtime.Time { return a.At }
	want := perMinute(t, build, at, false)
	if got := perMinute(t, build, at, true); got != want || strings.Count(got, "\n") < 20 {
		t.Errorf("the alerts per minute, windowed after the function:\n%s\nwant\n%s", got, want)
	}
}
