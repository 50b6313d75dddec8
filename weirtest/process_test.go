package weirtest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/process"
	"github.com/weirstream/weir/weirtest"
)

// The tests of this file transcribe Flink's KeyedProcessOperatorTest
// (flink-streaming-java, org.apache.flink.streaming.api.operators), each
// under the name of the test it comes from. Flink's output is a queue of
// records (a value and its timestamp) and watermarks; here an output is
// "value@time", with the event time the call had (Context.Time: the
// element's, or the timer's), and a watermark "watermark N". Keys are the
// elements themselves (Flink's IdentityKeySelector).

// rec is an output with the time of the call that emitted it.
type rec struct {
	v  string
	ts mtime.Time
}

func (r rec) String() string { return fmt.Sprintf("%s@%d", r.v, r.ts) }

func trace[O any](h *weirtest.ProcessHarness[int, int, O]) string {
	var out []string
	for _, p := range h.Trace() {
		out = append(out, p.String())
	}
	return strings.Join(out, "\n")
}

func wantTrace[O any](t *testing.T, h *weirtest.ProcessHarness[int, int, O], want ...string) {
	t.Helper()
	if got := trace(h); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// querying is Flink's QueryingFlatMapFunction: each element with the
// clock of its domain and its timestamp.
func querying(d process.Domain) process.Func[int, int, rec] {
	return process.Func[int, int, rec]{Element: func(c *process.Context[int, rec], v int) error {
		now := c.Watermark()
		if d == process.ProcessingTime {
			now = c.Now()
		}
		c.Emit(rec{fmt.Sprintf("%dTIME:%d TS:%d", v, now, c.Time()), c.Time()})
		return nil
	}}
}

// timerIn5 sets a timer 5 after the clock of the domain d, as Flink's
// triggering functions do.
func timerIn5(c *process.Context[int, rec], d process.Domain) {
	if d == process.EventTime {
		c.EventTimer(c.Watermark() + 5)
	} else {
		c.ProcessingTimer(c.Now() + 5)
	}
}

// wantDomain fails t when a timer of another domain than d fires (Flink's
// assertEquals(this.timeDomain, ctx.timeDomain())).
func wantDomain(t *testing.T, tm process.Timer, d process.Domain) {
	t.Helper()
	if tm.Domain != d {
		t.Errorf("a timer of %s fired in a function of %s", tm.Domain, d)
	}
}

// triggering is Flink's TriggeringFlatMapFunction: each element out, and a
// timer 5 after the clock of its domain, which emits 1777.
func triggering(t *testing.T, d process.Domain) process.Func[int, int, rec] {
	return process.Func[int, int, rec]{
		Element: func(c *process.Context[int, rec], v int) error {
			c.Emit(rec{fmt.Sprint(v), c.Time()})
			timerIn5(c, d)
			return nil
		},
		Timer: func(c *process.Context[int, rec], tm process.Timer) error {
			wantDomain(t, tm, d)
			c.Emit(rec{"1777", c.Time()})
			return nil
		},
	}
}

// triggeringStateful is Flink's TriggeringStatefulFlatMapFunction: each
// element into the key's state, and a timer 5 after the clock that emits
// the state.
func triggeringStateful(t *testing.T, d process.Domain) process.Func[int, int, rec] {
	seen := process.NewValue[int]("seen-element")
	return process.Func[int, int, rec]{
		State: []process.State{seen},
		Element: func(c *process.Context[int, rec], v int) error {
			c.Emit(rec{fmt.Sprintf("INPUT:%d", v), c.Time()})
			seen.Set(c, v)
			timerIn5(c, d)
			return nil
		},
		Timer: func(c *process.Context[int, rec], tm process.Timer) error {
			wantDomain(t, tm, d)
			v, _ := seen.Get(c)
			c.Emit(rec{fmt.Sprintf("STATE:%d", v), c.Time()})
			return nil
		},
	}
}

// bothTriggering is Flink's BothTriggeringFlatMapFunction: timers at 5 in
// processing time and 6 in event time.
var bothTriggering = process.Func[int, int, rec]{
	Element: func(c *process.Context[int, rec], v int) error {
		c.ProcessingTimer(5)
		c.EventTimer(6)
		return nil
	},
	Timer: func(c *process.Context[int, rec], tm process.Timer) error {
		if tm.Domain == process.EventTime {
			c.Emit(rec{"EVENT:1777", c.Time()})
		} else {
			c.Emit(rec{"PROC:1777", c.Time()})
		}
		return nil
	},
}

func TestKeyedProcessTimestampAndWatermarkQuerying(t *testing.T) {
	h, err := weirtest.NewProcessHarness(querying(process.EventTime))
	must(t, err)
	must(t, h.ProcessWatermark(17))
	must(t, h.ProcessElement(5, 5, 12))
	must(t, h.ProcessWatermark(42))
	must(t, h.ProcessElement(6, 6, 13))
	wantTrace(t, h, "watermark 17", "5TIME:17 TS:12@12", "watermark 42", "6TIME:42 TS:13@13")
}

// Flink's elements of this test have no timestamp (TS:null); weir's always
// have an event time: 0 here.
func TestKeyedProcessTimestampAndProcessingTimeQuerying(t *testing.T) {
	h, err := weirtest.NewProcessHarness(querying(process.ProcessingTime))
	must(t, err)
	must(t, h.SetProcessingTime(17))
	must(t, h.ProcessElement(5, 5, 0))
	must(t, h.SetProcessingTime(42))
	must(t, h.ProcessElement(6, 6, 0))
	wantTrace(t, h, "5TIME:17 TS:0@0", "6TIME:42 TS:0@0")
}

func TestKeyedProcessEventTimeTimers(t *testing.T) {
	h, err := weirtest.NewProcessHarness(triggering(t, process.EventTime))
	must(t, err)
	must(t, h.ProcessWatermark(0))
	must(t, h.ProcessElement(17, 17, 42))
	must(t, h.ProcessWatermark(5))
	wantTrace(t, h, "watermark 0", "17@42", "1777@5", "watermark 5")
}

func TestKeyedProcessProcessingTimeTimers(t *testing.T) {
	h, err := weirtest.NewProcessHarness(triggering(t, process.ProcessingTime))
	must(t, err)
	must(t, h.SetProcessingTime(0)) // Flink's harness starts at 0
	must(t, h.ProcessElement(17, 17, 0))
	must(t, h.SetProcessingTime(5))
	wantTrace(t, h, "17@0", "1777@5")
}

// testEventTimeTimerWithState: no leakage between keys.
func TestKeyedProcessEventTimeTimerWithState(t *testing.T) {
	h, err := weirtest.NewProcessHarness(triggeringStateful(t, process.EventTime))
	must(t, err)
	must(t, h.ProcessWatermark(1))
	must(t, h.ProcessElement(17, 17, 0)) // a timer at 6
	must(t, h.ProcessWatermark(2))
	must(t, h.ProcessElement(42, 42, 1)) // a timer at 7
	must(t, h.ProcessWatermark(6))
	must(t, h.ProcessWatermark(7))
	wantTrace(t, h, "watermark 1", "INPUT:17@0", "watermark 2", "INPUT:42@1",
		"STATE:17@6", "watermark 6", "STATE:42@7", "watermark 7")
}

// testProcessingTimeTimerWithState: no leakage between keys.
func TestKeyedProcessProcessingTimeTimerWithState(t *testing.T) {
	h, err := weirtest.NewProcessHarness(triggeringStateful(t, process.ProcessingTime))
	must(t, err)
	must(t, h.SetProcessingTime(1))
	must(t, h.ProcessElement(17, 17, 0)) // a timer at 6
	must(t, h.SetProcessingTime(2))
	must(t, h.ProcessElement(42, 42, 0)) // a timer at 7
	must(t, h.SetProcessingTime(6))
	must(t, h.SetProcessingTime(7))
	wantTrace(t, h, "INPUT:17@0", "INPUT:42@0", "STATE:17@6", "STATE:42@7")
}

func TestKeyedProcessSnapshotAndRestore(t *testing.T) {
	h, err := weirtest.NewProcessHarness(bothTriggering)
	must(t, err)
	must(t, h.ProcessElement(5, 5, 12))
	snap, err := h.Snapshot()
	must(t, err)

	h, err = weirtest.RestoreProcessHarness(bothTriggering, snap)
	must(t, err)
	if ev, pt := h.Timers(); ev != 1 || pt != 1 || h.Keys() != 1 {
		t.Fatalf("restored %d event and %d processing-time timers of %d keys, want 1, 1, 1", ev, pt, h.Keys())
	}
	must(t, h.SetProcessingTime(5))
	must(t, h.ProcessWatermark(6))
	wantTrace(t, h, "PROC:1777@5", "EVENT:1777@6", "watermark 6")
}

// What Flink's tests do not say, weir's rules do: a timer set twice fires
// once; one deleted does not fire; timers of one instant fire in the order
// they were set, across keys; a timer set at or behind the watermark fires
// at the next one; the end of the input fires the event-time timers, not
// the processing-time ones; and a key with neither state nor timers is
// forgotten.
func TestKeyedProcessTimerRules(t *testing.T) {
	f := process.Func[int, int, rec]{
		Element: func(c *process.Context[int, rec], v int) error {
			switch v {
			case 1: // twice at 10: once
				c.EventTimer(10)
				c.EventTimer(10)
			case 2: // set and deleted
				c.EventTimer(10)
				c.DeleteEventTimer(10)
			case 3: // behind the watermark: the next one fires it
				c.EventTimer(c.Watermark() - 1)
			case 4: // fires at the end of the input; its processing-time one never
				c.EventTimer(50)
				c.ProcessingTimer(50)
			}
			return nil
		},
		Timer: func(c *process.Context[int, rec], tm process.Timer) error {
			c.Emit(rec{fmt.Sprintf("key %d %s", c.Key(), tm.Domain), c.Time()})
			return nil
		},
	}
	h, err := weirtest.NewProcessHarness(f)
	must(t, err)
	must(t, h.ProcessElement(9, 1, 0)) // key 9 at 10 first, then key 1 at 10
	must(t, h.ProcessElement(1, 1, 0))
	must(t, h.ProcessElement(2, 2, 0))
	if h.Keys() != 2 {
		t.Errorf("%d keys held, want 2: key 2 has no timer left", h.Keys())
	}
	must(t, h.ProcessWatermark(10))
	must(t, h.ProcessElement(3, 3, 0))
	must(t, h.ProcessElement(4, 4, 0))
	must(t, h.ProcessWatermark(11))
	must(t, h.End())
	wantTrace(t, h, "key 9 event_time@10", "key 1 event_time@10", "watermark 10",
		"key 3 event_time@9", "watermark 11", "key 4 event_time@50")
	if ev, pt := h.Timers(); ev != 0 || pt != 1 || h.Keys() != 1 {
		t.Errorf("left %d event and %d processing-time timers of %d keys, want 0, 1, 1", ev, pt, h.Keys())
	}
}

// The states and a side output, checkpointed and restored in the middle:
// the rest is as if nothing had happened. A key whose state is cleared is
// forgotten.
func TestKeyedProcessStatesAcrossSnapshot(t *testing.T) {
	count := process.NewValue[int]("count")
	seen := process.NewList[int]("seen")
	last := process.NewMap[string, int]("last")
	big := process.NewOutput[string]("big")
	f := process.Func[int, int, string]{
		State: []process.State{count, seen, last},
		Sides: []process.Side{big},
		Element: func(c *process.Context[int, string], v int) error {
			n, _ := count.Get(c)
			count.Set(c, n+1)
			seen.Add(c, v)
			last.Put(c, fmt.Sprint(v%3), v)
			if v >= 100 {
				big.Emit(c, fmt.Sprintf("key %d: %d", c.Key(), v))
			}
			if v == 0 {
				count.Clear(c)
				seen.Clear(c)
				last.Clear(c)
				return nil
			}
			var entries []string
			for k, x := range last.All(c) {
				entries = append(entries, fmt.Sprintf("%s=%d", k, x))
			}
			c.Emit(fmt.Sprintf("key %d: %d elements %v, last by v%%3 %s", c.Key(), n+1, seen.Get(c), strings.Join(entries, " ")))
			return nil
		},
	}
	type in struct{ k, v int }
	first := []in{{1, 3}, {2, 4}, {1, 5}, {1, 6}}
	second := []in{{1, 101}, {2, 0}, {1, 9}, {2, 7}}
	run := func(h *weirtest.ProcessHarness[int, int, string], ins []in) {
		for _, x := range ins {
			must(t, h.ProcessElement(x.k, x.v, 0))
		}
	}
	whole, err := weirtest.NewProcessHarness(f)
	must(t, err)
	run(whole, first)
	run(whole, second)

	h, err := weirtest.NewProcessHarness(f)
	must(t, err)
	run(h, first)
	snap, err := h.Snapshot()
	must(t, err)
	h, err = weirtest.RestoreProcessHarness(f, snap)
	must(t, err)
	run(h, second)

	want := []string{
		"big: key 1: 101",
		"key 1: 4 elements [3 5 6 101], last by v%3 0=6 2=101",
		"key 1: 5 elements [3 5 6 101 9], last by v%3 0=9 2=101",
		"key 2: 1 elements [7], last by v%3 1=7",
	}
	// The uninterrupted run's last four outputs, and the restored run's.
	var whole4, restored []string
	for _, p := range whole.Trace()[len(whole.Trace())-4:] {
		whole4 = append(whole4, p.String())
	}
	for _, p := range h.Trace() {
		restored = append(restored, p.String())
	}
	for _, got := range [][]string{whole4, restored} {
		if !slices.Equal(got, want) {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if h.Keys() != 2 {
		t.Errorf("%d keys held, want 2", h.Keys())
	}
}
