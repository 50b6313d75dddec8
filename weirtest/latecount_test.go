package weirtest_test

import (
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// ReduceFnRunnerTest's setGarbageCollectionHoldOnLateElements:
// AfterWatermark.pastEndOfWindow().withLateFirings(
// AfterPane.elementCountAtLeast(2)) in DISCARDING_FIRED_PANES with 100 ms of
// allowed lateness and FIRE_IF_NON_EMPTY. The on-time pane holds 1; one
// late element is short of the count and fires nothing, until the end of
// the lateness fires it in a final LATE pane: two panes, nothing kept
// silently. Beam expires a window once the watermark is past its end plus
// the lateness (109 < W); weir, as Flink, once it reaches it (W >= 109):
// the test's last open instant, 109, is 108 here.
func TestSetGarbageCollectionHoldOnLateElements(t *testing.T) {
	h := sum(window.NewStrategy(tenMillis).WithLateness(100 * time.Millisecond).WithMode(window.Discarding).
		WithTrigger(trigger.AfterWatermark().LateCount(2).ClosingIfChanged()))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1)
	h.AdvanceWatermark(ms(108))
	h.Add("k", ms(2), 2)
	if got := len(h.Panes()); got != 1 {
		t.Fatalf("%d panes after one late element of two", got)
	}
	h.AdvanceWatermark(ms(110))
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.010 #1 ON_TIME v=1 wm=10:00:00.108 at=none",
		"k 10:00:00-10:00:00.010 #2 LATE v=2 wm=10:00:00.110 at=none final",
	)
}

// A late pane per N late events, again and again (the Repeatedly of Beam's
// late firings): five late events with a count of 2 fire two late panes,
// and the fifth is in the closing pane; accumulating, each pane holds all.
func TestLateCountRepeats(t *testing.T) {
	h := sum(window.NewStrategy(tenMillis).WithLateness(100 * time.Millisecond).
		WithTrigger(trigger.AfterWatermark().LateCount(2)))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1)
	h.AdvanceWatermark(ms(20))
	h.Add("k", ms(2), 10).Add("k", ms(3), 100).Add("k", ms(4), 1000).Add("k", ms(5), 10000).Add("k", ms(6), 100000)
	h.AdvanceWatermark(ms(200))
	check(t, h.Panes(),
		"k 10:00:00-10:00:00.010 #1 ON_TIME v=1 wm=10:00:00.020 at=none",
		"k 10:00:00-10:00:00.010 #2 LATE v=111 wm=10:00:00.020 at=none",
		"k 10:00:00-10:00:00.010 #3 LATE v=11111 wm=10:00:00.020 at=none",
		"k 10:00:00-10:00:00.010 #4 LATE v=111111 wm=10:00:00.200 at=none final",
	)
}

// Late counts merge with sessions, as Beam merges a count trigger's state
// (the parts' counts add up): two closed sessions get a late event each,
// short of the count; a third late event bridges them, and the merged
// session's three late events fire its late pane.
func TestLateCountSessions(t *testing.T) {
	h := sum(window.NewStrategy(window.SessionWindows(10 * time.Millisecond)).WithLateness(100 * time.Millisecond).
		WithTrigger(trigger.AfterWatermark().LateCount(3)))
	h.AdvanceWatermark(ms(0))
	h.Add("k", ms(1), 1).Add("k", ms(15), 2)
	h.AdvanceWatermark(ms(50))
	h.Add("k", ms(2), 10).Add("k", ms(16), 20)
	h.Add("k", ms(8), 100)
	h.AdvanceWatermark(ms(300))
	check(t, h.Panes(),
		"k 10:00:00.001-10:00:00.011 #1 ON_TIME v=1 wm=10:00:00.050 at=none",
		"k 10:00:00.015-10:00:00.025 #1 ON_TIME v=2 wm=10:00:00.050 at=none",
		"k 10:00:00.001-10:00:00.026 #1 LATE v=133 wm=10:00:00.050 at=none",
		"k 10:00:00.001-10:00:00.026 #2 LATE v=133 wm=10:00:00.300 at=none final",
	)
}

// A burst of 100 late events of one window within a minute of processing
// time, as the concepts page counts its late panes: one per late event
// (each), two with a throttle of a minute (the first at once, the others
// when the minute runs out), one with a count of 100; the closing pane
// comes after each.
func TestBurstOfLateEvents(t *testing.T) {
	for _, c := range []struct {
		name string
		tr   trigger.Trigger
		late int
	}{
		{"each", trigger.AfterWatermark(), 100},
		{"throttled 1m", trigger.AfterWatermark().LateThrottled(time.Minute), 2},
		{"count 100", trigger.AfterWatermark().LateCount(100), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := sum(window.NewStrategy(window.TumblingWindows(time.Minute)).WithLateness(time.Hour).WithTrigger(c.tr))
			h.AdvanceProcessingTime(base)
			h.AdvanceWatermark(base)
			h.Add("k", base+1, 1)
			h.AdvanceWatermark(base + 2*60_000)
			for i := range 100 {
				h.AdvanceProcessingTime(base + mtime.Time(i)*500) // 100 in 50 s
				h.Add("k", base+mtime.Time(2+i), 1)
			}
			h.AdvanceProcessingTime(base + 2*60_000)
			late, final := 0, 0
			for _, p := range h.Panes() {
				if p.Timing == window.Late {
					late++
				}
				if p.Final {
					final++
				}
			}
			if late != c.late || final != 0 {
				t.Errorf("%d late panes (%d final), want %d", late, final, c.late)
			}
			h.AdvanceWatermark(base + 2*60*60_000)
			if p := h.Panes()[len(h.Panes())-1]; !p.Final || p.Value != 101 {
				t.Errorf("the closing pane: %+v", p)
			}
		})
	}
}
