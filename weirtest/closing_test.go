package weirtest_test

import (
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// ms(x) is x milliseconds after base: Beam's ReduceFnRunnerTest counts its
// instants from 0 in windows of 10 ms.
func ms(x int64) mtime.Time { return base + mtime.Time(x) }

var tenMillis = window.TumblingWindows(10 * time.Millisecond)

// Beam's Repeatedly.forever(AfterFirst.of(AfterPane.elementCountAtLeast(2),
// AfterWatermark.pastEndOfWindow())) in ACCUMULATING_FIRED_PANES with 100 ms
// of allowed lateness, as ReduceFnRunnerTest's noEmptyPanesFinalAlways and
// noEmptyPanesFinalIfNonEmpty build it: two elements fire an early pane, the
// watermark an on-time pane with the same values; the end of the lateness
// fires a final pane again with the same values under FIRE_ALWAYS, and none
// under FIRE_IF_NON_EMPTY.
func TestNoEmptyPanesFinal(t *testing.T) {
	for _, c := range []struct {
		name    string
		closing trigger.Trigger
		want    []string
	}{
		{"FinalAlways", trigger.AfterWatermark().EarlyCount(2), []string{
			"k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=none",
			"k 10:00:00-10:00:00.010 #2 ON_TIME v=3 wm=10:00:00.020 at=none",
			"k 10:00:00-10:00:00.010 #3 LATE v=3 wm=10:00:00.250 at=none final",
		}},
		{"FinalIfNonEmpty", trigger.AfterWatermark().EarlyCount(2).ClosingIfChanged(), []string{
			"k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=none",
			"k 10:00:00-10:00:00.010 #2 ON_TIME v=3 wm=10:00:00.020 at=none",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := sum(window.NewStrategy(tenMillis).WithLateness(100 * time.Millisecond).WithTrigger(c.closing))
			h.AdvanceWatermark(ms(0))
			h.Add("k", ms(1), 1).Add("k", ms(2), 2)
			h.AdvanceWatermark(ms(20))
			h.AdvanceWatermark(ms(250))
			check(t, h.Panes(), c.want...)
		})
	}
}

// ReduceFnRunnerTest's testFixedWindowsEowAndGcTogetherFireIfNonEmpty: the
// end of the window and the end of its lateness pass on one watermark: one
// pane, on time and final, with either closing behaviour.
func TestEndOfWindowAndGarbageCollectionTogetherFireIfNonEmpty(t *testing.T) {
	h := sum(window.NewStrategy(tenMillis).WithLateness(50 * time.Millisecond).
		WithTrigger(trigger.AfterWatermark().ClosingIfChanged()))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1)
	h.AdvanceWatermark(ms(100))
	check(t, h.Panes(), "k 10:00:00-10:00:00.010 #1 ON_TIME v=1 wm=10:00:00.100 at=none final")
}

// ReduceFnRunnerTest's testPaneInfoAllStatesAfterWatermarkAccumulating
// (FIRE_ALWAYS): early, on time with the same values, then a final LATE
// pane when the lateness runs out; and, with FIRE_IF_NON_EMPTY, the same
// without the last.
func TestPaneInfoAllStatesAfterWatermarkAccumulating(t *testing.T) {
	run := func(tr trigger.Trigger) *weirtest.Harness[string, int, int, int] {
		h := sum(window.NewStrategy(tenMillis).WithLateness(100 * time.Millisecond).WithTrigger(tr))
		h.AdvanceWatermark(ms(0))
		h.Add("k", ms(1), 1).Add("k", ms(2), 2)
		h.AdvanceWatermark(ms(50))
		h.AdvanceWatermark(ms(150))
		return h
	}
	check(t, run(trigger.AfterWatermark().EarlyCount(2)).Panes(),
		"k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.010 #2 ON_TIME v=3 wm=10:00:00.050 at=none",
		"k 10:00:00-10:00:00.010 #3 LATE v=3 wm=10:00:00.150 at=none final",
	)
	check(t, run(trigger.AfterWatermark().EarlyCount(2).ClosingIfChanged()).Panes(),
		"k 10:00:00-10:00:00.010 #1 EARLY v=3 wm=10:00:00 at=none",
		"k 10:00:00-10:00:00.010 #2 ON_TIME v=3 wm=10:00:00.050 at=none",
	)
}

// FIRE_IF_NON_EMPTY fires the closing pane when the window got an element
// since its last pane (Beam's ClosingBehavior): a late event held back by
// Late(Never()) or by a throttle is in it; one that fired its own pane is
// not written again.
func TestClosingIfChangedFiresWhatCameSince(t *testing.T) {
	ifChanged := trigger.AfterWatermark().ClosingIfChanged()
	h := sum(window.NewStrategy(minute).WithLateness(time.Minute).WithTrigger(ifChanged.LateNone()))
	h.Add("k", s(1), 1).Add("j", s(1), 1).AdvanceWatermark(s(61)).Add("k", s(2), 2).AdvanceWatermark(s(200))
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:01:01 at=none",
		"j 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:01:01 at=none",
		"k 10:00:00-10:01:00 #2 LATE v=3 wm=10:03:20 at=none final",
	)
	h = sum(window.NewStrategy(minute).WithLateness(time.Minute).WithTrigger(ifChanged.LateThrottled(10 * time.Second)))
	h.AdvanceProcessingTime(s(61)).Add("k", s(1), 1).Add("j", s(1), 1)
	h.AdvanceWatermark(s(61))
	h.AdvanceProcessingTime(s(62)).Add("k", s(2), 2).Add("j", s(2), 2) // at once
	h.AdvanceProcessingTime(s(63)).Add("k", s(3), 4)                   // held back
	h.AdvanceWatermark(s(200))
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:01:01 at=10:01:01",
		"j 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:01:01 at=10:01:01",
		"k 10:00:00-10:01:00 #2 LATE v=3 wm=10:01:01 at=10:01:02",
		"j 10:00:00-10:01:00 #2 LATE v=3 wm=10:01:01 at=10:01:02",
		"k 10:00:00-10:01:00 #3 LATE v=7 wm=10:03:20 at=10:01:03 final",
	)
	// Only the final pane: it has not been written, so it is.
	h = sum(window.NewStrategy(minute).WithLateness(time.Minute).WithTrigger(trigger.OnClose().ClosingIfChanged()))
	h.Add("k", s(1), 1).AdvanceWatermark(s(61)).AdvanceWatermark(s(200))
	check(t, h.Panes(), "k 10:00:00-10:01:00 #1 LATE v=1 wm=10:03:20 at=none final")
}

// Retracting sessions with allowed lateness and no late event: a session
// gets its on-time pane and nothing more, instead of a retraction and a
// LATE revision 2 with the same values; a session a late event grows is
// retracted and written as the new session, which closes without a pane
// since nothing came after that one.
func TestRetractingSessionsCloseOnlyIfChanged(t *testing.T) {
	h := sum(window.NewStrategy(window.SessionWindows(10 * time.Second)).WithLateness(time.Minute).
		WithMode(window.Retracting).WithTrigger(trigger.AfterWatermark().ClosingIfChanged()))
	h.Add("a", s(0), 1).Add("b", s(0), 10)
	h.AdvanceWatermark(s(20))
	h.Add("b", s(5), 20) // late: the session grows, retracted and fired as a new one
	h.End()
	check(t, h.Panes(),
		"a 10:00:00-10:00:10 #1 ON_TIME v=1 wm=10:00:20 at=none",
		"b 10:00:00-10:00:10 #1 ON_TIME v=10 wm=10:00:20 at=none",
		"b 10:00:00-10:00:10 #1 retract ON_TIME v=10 wm=10:00:20 at=none",
		"b 10:00:00-10:00:15 #1 LATE v=30 wm=10:00:20 at=none",
	)
	// The same with FIRE_ALWAYS: every session's values again at the close.
	h = sum(window.NewStrategy(window.SessionWindows(10 * time.Second)).WithLateness(time.Minute).
		WithMode(window.Retracting))
	h.Add("a", s(0), 1).AdvanceWatermark(s(20)).End()
	check(t, h.Panes(),
		"a 10:00:00-10:00:10 #1 ON_TIME v=1 wm=10:00:20 at=none",
		"a 10:00:00-10:00:10 #1 retract ON_TIME v=1 wm=end at=none",
		"a 10:00:00-10:00:10 #2 LATE v=1 wm=end at=none final",
	)
}
