package weirtest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// Composite triggers, transcribed from Beam's trigger state-machine tests
// (runners/core-java, org.apache.beam.runners.core.triggers). Beam's
// TriggerStateMachineTester asks shouldFire after a batch of elements and
// merges sessions when told; weir asks after every element and merges
// sessions as each event comes, so each case here feeds the elements so
// that the same firings come in the same order, and checks the panes they
// give (values, timing, final), the late events and the counts. Time is the
// harness's: no clock, no sleep.

func lateReasons(h interface {
	Late() []window.LateEvent[string, int]
}) string {
	var b []string
	for _, l := range h.Late() {
		b = append(b, fmt.Sprintf("%s %s v=%d", clock(l.Timestamp), l.Reason, l.Value))
	}
	return strings.Join(b, "; ")
}

// AfterEachStateMachineTest.testAfterEachInSequence:
// AfterEach.inOrder(Repeatedly(AfterCount(2)).orFinally(AfterCount(3)),
// Repeatedly(AfterCount(5)).orFinally(pastEndOfWindow())), fixed 10 ms
// windows. The first runs until its until (3 elements) fires; then the
// second needs 5 new elements, and the watermark finishes it all. Here
// with 100 ms of lateness, so that an event after that is set aside as
// trigger_finished, counted too late.
func TestAfterEachInSequence(t *testing.T) {
	tr := trigger.AfterEach(
		trigger.OrFinally(trigger.Repeatedly(trigger.AfterCount(2)), trigger.AfterCount(3)),
		trigger.OrFinally(trigger.Repeatedly(trigger.AfterCount(5)), trigger.PastEndOfWindow()))
	h := sum(window.NewStrategy(tenMillis).WithLateness(100 * time.Millisecond).WithTrigger(trigger.Of(tr)))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1)
	if len(h.Panes()) != 0 {
		t.Fatal("AfterCount(2) fired on one element")
	}
	h.Add("k", ms(2), 2) // AfterCount(2) fires, not finished
	h.Add("k", ms(3), 3) // the third: the until fires and finishes the first
	h.Add("k", ms(4), 1).Add("k", ms(5), 2).Add("k", ms(6), 3).Add("k", ms(7), 4)
	h.Add("k", ms(8), 5) // the fifth of the second
	h.AdvanceWatermark(ms(10))
	h.Add("k", ms(9), 1000) // the window's trigger finished
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.010 #2 EARLY v=6 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.010 #3 EARLY v=21 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.010 #4 ON_TIME v=21 wm=10:00:00.010 at=none final",
	)
	if got := lateReasons(h); got != "10:00:00.009 trigger_finished v=1000" {
		t.Errorf("late: %s", got)
	}
	if st := h.Stats(); st.Accepted != 8 || st.TooLate != 1 {
		t.Errorf("stats %+v", st)
	}
	h.AdvanceWatermark(ms(200))
	if len(h.Panes()) != 4 {
		t.Errorf("a finished window wrote %d more panes when it closed", len(h.Panes())-4)
	}
}

// OrFinallyStateMachineTest.testActualFiresAndFinishes:
// AfterCount(2).orFinally(AfterCount(100)): the actual fires and finishes,
// and so does the whole, in one final pane.
func TestOrFinallyActualFiresAndFinishes(t *testing.T) {
	h := sum(window.NewStrategy(window.TumblingWindows(100 * time.Millisecond)).
		WithTrigger(trigger.Of(trigger.OrFinally(trigger.AfterCount(2), trigger.AfterCount(100)))))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1).Add("k", ms(2), 2)
	h.AdvanceWatermark(ms(200))
	check(t, h.Panes(), "k 10:00:00-10:00:00.100 #1 EARLY v=3 wm=10:00:00 at=none final")
}

// OrFinallyStateMachineTest.testActualFiresOnly:
// Repeatedly(AfterCount(2)).orFinally(AfterCount(100)) fires every two
// elements and does not finish; the window closes with its closing pane
// (on time and final: with no allowed lateness, it closes at the watermark).
func TestOrFinallyActualFiresOnly(t *testing.T) {
	h := sum(window.NewStrategy(window.TumblingWindows(100 * time.Millisecond)).
		WithTrigger(trigger.Of(trigger.OrFinally(trigger.Repeatedly(trigger.AfterCount(2)), trigger.AfterCount(100)))))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1).Add("k", ms(2), 2).Add("k", ms(3), 3).Add("k", ms(4), 4)
	h.AdvanceWatermark(ms(200))
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.100 #1 EARLY v=3 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.100 #2 EARLY v=10 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.100 #3 ON_TIME v=10 wm=10:00:00.200 at=none final",
	)
}

// OrFinallyStateMachineTest.testActualFiresButUntilFinishes:
// Repeatedly(AfterCount(2)).orFinally(AfterCount(3)): the actual fires at
// 2, the until at 3 and finishes the window.
func TestOrFinallyActualFiresButUntilFinishes(t *testing.T) {
	h := sum(window.NewStrategy(tenMillis).
		WithTrigger(trigger.Of(trigger.OrFinally(trigger.Repeatedly(trigger.AfterCount(2)), trigger.AfterCount(3)))))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1).Add("k", ms(2), 2).Add("k", ms(3), 3)
	h.AdvanceWatermark(ms(200))
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.010 #2 EARLY v=6 wm=10:00:00 at=none final",
	)
}

// AfterAllStateMachineTest.testT1FiresFirst and testT2FiresFirst:
// AfterAll.of(AfterCount(1), AfterCount(2)), either order, fires once all
// have fired (at the second element) and finishes.
func TestAfterAllFiresWhenAllHave(t *testing.T) {
	for _, tr := range []trigger.Expr{
		trigger.AfterAll(trigger.AfterCount(1), trigger.AfterCount(2)),
		trigger.AfterAll(trigger.AfterCount(2), trigger.AfterCount(1)),
	} {
		h := sum(window.NewStrategy(window.TumblingWindows(100 * time.Millisecond)).WithLateness(time.Second).WithTrigger(trigger.Of(tr)))
		h.AdvanceWatermark(ms(0))
		h.Add("k", ms(1), 1).Add("k", ms(2), 2).Add("k", ms(3), 4)
		check(t, h.Panes(), "k 10:00:00-10:00:00.100 #1 EARLY v=3 wm=10:00:00 at=none final")
		if got := lateReasons(h); got != "10:00:00.003 trigger_finished v=4" {
			t.Errorf("%s: late %s", tr, got)
		}
	}
}

// AfterFirstStateMachineTest.testOnlyT1ShouldFireFixedWindows,
// testOnlyT2ShouldFireFixedWindows and testNeitherShouldFireFixedWindows:
// AfterFirst.of(AfterCount(2), AfterProcessingTime(5 ms)) fires once, at
// whichever comes first, and finishes; before either, nothing.
func TestAfterFirstFiresAtTheFirst(t *testing.T) {
	tr := trigger.Of(trigger.AfterFirst(trigger.AfterCount(2), trigger.AfterProcessingTime(5*time.Millisecond)))
	// The count first.
	h := sum(window.NewStrategy(tenMillis).WithTrigger(tr))
	h.AdvanceWatermark(ms(0)).AdvanceProcessingTime(ms(100))
	h.Add("k", ms(1), 1)
	h.AdvanceProcessingTime(ms(103))
	if len(h.Panes()) != 0 {
		t.Fatal("neither should fire")
	}
	h.Add("k", ms(2), 2)
	h.AdvanceProcessingTime(ms(200))
	check(t, h.Panes(), "k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=10:00:00.103 final")
	// The processing time first.
	h = sum(window.NewStrategy(tenMillis).WithTrigger(tr))
	h.AdvanceWatermark(ms(0)).AdvanceProcessingTime(ms(100))
	h.Add("k", ms(1), 1)
	h.AdvanceProcessingTime(ms(107))
	h.Add("k", ms(2), 2)
	check(t, h.Panes(), "k 10:00:00-10:00:00.010 #1 EARLY v=1 wm=10:00:00 at=10:00:00.105 final")
}

// AfterFirstStateMachineTest.testShouldFireAfterMerge, and
// OrFinallyStateMachineTest.testShouldFireAfterMerge: AfterEach.inOrder(
// AfterFirst.of(AfterCount(5), pastEndOfWindow()),
// Repeatedly(AfterCount(1))) over sessions of 10 ms. The first session
// fires at the watermark, which finishes the AfterFirst; an event that
// extends it past the watermark brings back, in the merged session, the
// AfterFirst (its end-of-window is no longer reached, Beam's onMerge): a
// count of 5 fires it again, and then every element fires.
func TestAfterFirstShouldFireAfterMerge(t *testing.T) {
	for _, first := range []trigger.Expr{
		trigger.AfterFirst(trigger.AfterCount(5), trigger.PastEndOfWindow()),
		trigger.OrFinally(trigger.AfterCount(5), trigger.PastEndOfWindow()),
	} {
		tr := trigger.AfterEach(first, trigger.Repeatedly(trigger.AfterCount(1)))
		h := sum(window.NewStrategy(window.SessionWindows(10 * time.Millisecond)).WithLateness(time.Second).WithTrigger(trigger.Of(tr)))
		h.AdvanceWatermark(ms(0))
		h.Add("k", ms(1), 1)
		h.AdvanceWatermark(ms(11))
		h.Add("k", ms(5), 5) // merged [1, 15): back on the first trigger
		h.Add("k", ms(1), 10).Add("k", ms(2), 20).Add("k", ms(3), 30)
		h.Add("k", ms(4), 40) // the fifth since the merge
		h.Add("k", ms(5), 50) // on the second trigger
		check(t, h.Panes(),
			"k 10:00:00.001-10:00:00.011 #1 ON_TIME v=1 wm=10:00:00.011 at=none",
			"k 10:00:00.001-10:00:00.015 #1 EARLY v=106 wm=10:00:00.011 at=none",
			"k 10:00:00.001-10:00:00.015 #2 EARLY v=156 wm=10:00:00.011 at=none",
		)
	}
}

// RepeatedlyStateMachineTest.testRepeatedlyAfterFirstElementCount and
// testRepeatedlyAfterFirstProcessingTime: Repeatedly.forever(AfterFirst.of(
// AfterProcessingTime(15 min), AfterCount(5))) in a global window: five
// elements fire it, and it starts again; then 15 minutes after the next
// first element fire it. The job file's repeatedly: {after_first:
// [{count: 100}, {processing_time: 1m}]} is this trigger.
func TestRepeatedlyAfterFirst(t *testing.T) {
	tr := trigger.Of(trigger.Repeatedly(trigger.AfterFirst(trigger.AfterProcessingTime(15*time.Minute), trigger.AfterCount(5))))
	h := sum(window.NewStrategy(window.GlobalWindows()).WithTrigger(tr))
	h.AdvanceProcessingTime(s(0))
	h.Add("k", s(1), 1)
	h.Add("k", s(2), 2).Add("k", s(3), 3).Add("k", s(4), 4).Add("k", s(5), 5)
	h.AdvanceProcessingTime(s(60))
	h.Add("k", s(6), 10)
	h.AdvanceProcessingTime(s(60 + 15*60 - 1))
	if len(h.Panes()) != 1 {
		t.Fatalf("%d panes before the 15 minutes", len(h.Panes()))
	}
	h.AdvanceProcessingTime(s(60 + 15*60))
	h.AdvanceProcessingTime(s(3 * 3600))
	check(t, h.Panes(),
		"k global #1 EARLY v=15 wm=none at=10:00:00",
		"k global #2 EARLY v=25 wm=none at=10:16:00",
	)
}

// RepeatedlyStateMachineTest.testRepeatedlyElementCount and
// AfterPaneStateMachineTest.testAfterPaneElementCountFixedWindows:
// Repeatedly(AfterCount(5)) fires at every fifth element; AfterCount(2)
// alone fires once, final, and the next window's first element fires
// nothing.
func TestRepeatedlyElementCount(t *testing.T) {
	h := sum(window.NewStrategy(tenMillis).WithTrigger(trigger.Of(trigger.Repeatedly(trigger.AfterCount(5)))))
	h.AdvanceWatermark(ms(0))
	for i := range 11 {
		h.Add("k", ms(int64(i%10)), 1)
	}
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.010 #1 EARLY v=5 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.010 #2 EARLY v=10 wm=10:00:00 at=none",
	)
	h = sum(window.NewStrategy(tenMillis).WithTrigger(trigger.Of(trigger.AfterCount(2))))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1).Add("k", ms(9), 2).Add("k", ms(11), 3)
	check(t, h.Panes(), "k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=none final")
}

// AfterPaneStateMachineTest.testAfterPaneElementCountSessions:
// AfterCount(2) over sessions of 10 ms: elements 1 and 2 merge into [1, 12),
// which fires and finishes; Beam forgets the closed session, so 7 and 9
// make a new one, [7, 19), which fires and finishes too.
func TestAfterPaneElementCountSessions(t *testing.T) {
	h := sum(window.NewStrategy(window.SessionWindows(10 * time.Millisecond)).WithTrigger(trigger.Of(trigger.AfterCount(2))))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1).Add("k", ms(2), 2)
	h.Add("k", ms(7), 7).Add("k", ms(9), 9)
	h.AdvanceWatermark(ms(100))
	check(t, h.Panes(),
		"k 10:00:00.001-10:00:00.012 #1 EARLY v=3 wm=10:00:00 at=none final",
		"k 10:00:00.007-10:00:00.019 #1 EARLY v=16 wm=10:00:00 at=none final",
	)
}

// AfterProcessingTimeStateMachineTest.testAfterProcessingTimeFixedWindows:
// AfterProcessingTime(5 ms) over fixed 10 ms windows, the processing clock
// at 10: the first window's timer is at 15 (its later elements set none),
// the second's at 17; each fires at its own instant and finishes.
func TestAfterProcessingTimeFixedWindows(t *testing.T) {
	h := sum(window.NewStrategy(tenMillis).WithLateness(time.Second).WithTrigger(trigger.Of(trigger.AfterProcessingTime(5 * time.Millisecond))))
	h.AdvanceWatermark(ms(0))
	h.AdvanceProcessingTime(ms(10)).Add("k", ms(1), 1)
	h.AdvanceProcessingTime(ms(12)).Add("k", ms(11), 11).Add("k", ms(12), 12).Add("k", ms(13), 13)
	h.AdvanceProcessingTime(ms(14)).Add("k", ms(2), 2).Add("k", ms(3), 3)
	h.AdvanceProcessingTime(ms(16))
	h.Add("k", ms(5), 5) // the first window's trigger finished
	h.AdvanceProcessingTime(ms(18))
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.010 #1 EARLY v=6 wm=10:00:00 at=10:00:00.015 final",
		"k 10:00:00.010-10:00:00.020 #1 EARLY v=36 wm=10:00:00 at=10:00:00.017 final",
	)
	if got := lateReasons(h); got != "10:00:00.005 trigger_finished v=5" {
		t.Errorf("late: %s", got)
	}
}

// AfterProcessingTimeStateMachineTest.testAfterProcessingTimeWithMergingWindow:
// sessions of 10 ms; 1 at processing time 10 (timer at 15), 3 at 12 (timer
// at 17): merged into [1, 13), the earliest timer holds, and the merged
// session fires at 15.
func TestAfterProcessingTimeWithMergingWindow(t *testing.T) {
	h := sum(window.NewStrategy(window.SessionWindows(10 * time.Millisecond)).WithTrigger(trigger.Of(trigger.AfterProcessingTime(5 * time.Millisecond))))
	h.AdvanceWatermark(ms(0))
	h.AdvanceProcessingTime(ms(10)).Add("k", ms(1), 1)
	h.AdvanceProcessingTime(ms(12)).Add("k", ms(3), 3)
	h.AdvanceProcessingTime(ms(16))
	check(t, h.Panes(), "k 10:00:00.001-10:00:00.013 #1 EARLY v=4 wm=10:00:00 at=10:00:00.015 final")
}

// AfterWatermarkStateMachineTest.testEarlyAndAtWatermark and
// testAtWatermarkAndLate, with AfterCount(2) as the early and late
// firings: early every 2 elements, on time at the watermark (finishing the
// early firings), late every 2 late elements, and the closing pane.
func TestAfterWatermarkEarlyAndLate(t *testing.T) {
	tr := trigger.PastEndOfWindow().WithEarlyFirings(trigger.AfterCount(2)).WithLateFirings(trigger.AfterCount(2))
	h := sum(window.NewStrategy(window.TumblingWindows(100 * time.Millisecond)).WithLateness(time.Second).WithTrigger(trigger.Of(tr)))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1).Add("k", ms(2), 2).Add("k", ms(3), 4)
	h.AdvanceWatermark(ms(100))
	h.Add("k", ms(4), 8).Add("k", ms(5), 16).Add("k", ms(6), 32)
	h.AdvanceWatermark(ms(2000))
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.100 #1 EARLY v=3 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.100 #2 ON_TIME v=7 wm=10:00:00.100 at=none",
		"k 10:00:00-10:00:00.100 #3 LATE v=31 wm=10:00:00.100 at=none",
		"k 10:00:00-10:00:00.100 #4 LATE v=63 wm=10:00:02 at=none final",
	)
}

// AfterWatermarkStateMachineTest.testEarlyAndAtWatermarkProcessElement
// without late firings: Beam's pastEndOfWindow() finishes at the
// watermark, so that a late event within the allowed lateness fires
// nothing: weir sets it aside (trigger_finished) and counts it too late.
func TestAfterWatermarkWithoutLateFinishes(t *testing.T) {
	h := sum(window.NewStrategy(window.TumblingWindows(100 * time.Millisecond)).WithLateness(time.Second).WithTrigger(trigger.Of(trigger.PastEndOfWindow())))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1)
	h.AdvanceWatermark(ms(100))
	h.Add("k", ms(2), 2)
	h.AdvanceWatermark(ms(2000))
	check(t, h.Panes(), "k 10:00:00-10:00:00.100 #1 ON_TIME v=1 wm=10:00:00.100 at=none final")
	if got := lateReasons(h); got != "10:00:00.002 trigger_finished v=2" {
		t.Errorf("late: %s", got)
	}
	if st := h.Stats(); st.Accepted != 1 || st.TooLate != 1 {
		t.Errorf("stats %+v", st)
	}
}

// Issue 52's "one emission instead of 100 late events a minute": late
// firings of AfterProcessingTime(1 min) (Beam's
// withLateFirings(AfterProcessingTime.pastFirstElementInPane().plusDelayOf(1 min)))
// with closing if_changed write one late pane for a burst of 100 late
// events within a minute, a minute after the first, and nothing when the
// window closes.
func TestOneEmissionFor100LateEvents(t *testing.T) {
	tr := trigger.Of(trigger.PastEndOfWindow().WithLateFirings(trigger.AfterProcessingTime(time.Minute))).ClosingIfChanged()
	h := sum(window.NewStrategy(window.TumblingWindows(time.Minute)).WithLateness(time.Hour).WithTrigger(tr))
	h.AdvanceProcessingTime(base)
	h.AdvanceWatermark(base)
	h.Add("k", base+1, 1)
	h.AdvanceWatermark(base + 2*60_000)
	for i := range 100 {
		h.AdvanceProcessingTime(base + 500*int64ms(i)) // 100 in 50 s
		h.Add("k", base+2+int64ms(i), 1)
	}
	h.AdvanceProcessingTime(base + 5*60_000)
	h.AdvanceWatermark(base + 2*60*60_000)
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:02:00 at=10:00:00",
		"k 10:00:00-10:01:00 #2 LATE v=101 wm=10:02:00 at=10:01:00",
	)
}

func int64ms(i int) mtime.Time { return mtime.Time(i) }

// AfterAllStateMachineTest.testOnMergeRewinds: AfterEach.inOrder(
// AfterAll.of(pastEndOfWindow(), AfterCount(1)), Repeatedly(AfterCount(1)))
// over sessions of 10 ms. The AfterAll fires at the watermark; a merge that
// moves the session's end past the watermark makes it unfinished again (its
// end of window is not reached; its count, finished, stays so), so that the
// next element fires nothing until the watermark passes the merged end;
// then every element fires (the second trigger).
func TestAfterAllOnMergeRewinds(t *testing.T) {
	tr := trigger.AfterEach(trigger.AfterAll(trigger.PastEndOfWindow(), trigger.AfterCount(1)), trigger.Repeatedly(trigger.AfterCount(1)))
	h := sum(window.NewStrategy(window.SessionWindows(10 * time.Millisecond)).WithLateness(time.Second).WithTrigger(trigger.Of(tr)))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1)
	h.AdvanceWatermark(ms(11))
	h.Add("k", ms(5), 5) // merged [1, 15): back on the AfterAll
	if len(h.Panes()) != 1 {
		t.Fatalf("%d panes: the merged session fired before its end", len(h.Panes()))
	}
	h.AdvanceWatermark(ms(15))
	h.Add("k", ms(2), 2).Add("k", ms(2), 2)
	check(t, h.Panes(),
		"k 10:00:00.001-10:00:00.011 #1 ON_TIME v=1 wm=10:00:00.011 at=none",
		"k 10:00:00.001-10:00:00.015 #1 ON_TIME v=6 wm=10:00:00.015 at=none",
		"k 10:00:00.001-10:00:00.015 #2 LATE v=8 wm=10:00:00.015 at=none",
		"k 10:00:00.001-10:00:00.015 #3 LATE v=10 wm=10:00:00.015 at=none",
	)
}

// Sliding windows with a composite trigger: each window's trigger is its
// own. An event whose windows have all finished is set aside and counted
// too late; one that some took and a finished one did not is counted
// partly late, a late event of trigger_finished_for_some_windows with the
// finished window (which a job's late output holds only with
// late_for_some_windows: write, as it holds the events late for some
// windows: the others counted it).
func TestCompositeSlidingWindows(t *testing.T) {
	h := sum(window.NewStrategy(window.SlidingWindows(20*time.Millisecond, 10*time.Millisecond)).WithLateness(time.Second).
		WithTrigger(trigger.Of(trigger.AfterCount(2))))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(11), 1).Add("k", ms(12), 2) // both windows fire and finish
	h.Add("k", ms(15), 4)                     // both finished
	h.Add("k", ms(25), 8)                     // [20, 40) takes it, [10, 30) had finished
	h.Add("k", ms(26), 16)
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.020 #1 EARLY v=3 wm=10:00:00 at=none final",
		"k 10:00:00.010-10:00:00.030 #1 EARLY v=3 wm=10:00:00 at=none final",
		"k 10:00:00.020-10:00:00.040 #1 EARLY v=24 wm=10:00:00 at=none final",
	)
	var late []string
	for _, l := range h.Late() {
		late = append(late, fmt.Sprintf("%s %s %s", clock(l.Timestamp), l.Reason, clock(l.Window.Start)))
	}
	if got := strings.Join(late, "; "); got != "10:00:00.015 trigger_finished 10:00:00.010; 10:00:00.025 trigger_finished_for_some_windows 10:00:00.010; 10:00:00.026 trigger_finished_for_some_windows 10:00:00.010" {
		t.Errorf("late: %s", got)
	}
	if st := h.Stats(); st.Accepted != 4 || st.TooLate != 1 || st.PartlyLate != 2 {
		t.Errorf("stats %+v", st)
	}
}
