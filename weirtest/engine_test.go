package weirtest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

// base is 2026-03-02T10:00:00Z; s(x) is x seconds after it.
var base = weirtest.At("2026-03-02T10:00:00Z")

func s(sec float64) mtime.Time { return base + mtime.Time(sec*1000) }

// clock prints an instant as 10:00:01 or 10:00:01.500; "none" and "end" for
// the two special instants.
func clock(t mtime.Time) string {
	switch t {
	case mtime.MinTime:
		return "none"
	case mtime.MaxTime:
		return "end"
	}
	c := t.String()[11:23]
	return strings.TrimSuffix(c, ".000")
}

func pane[K comparable, O any](p window.Pane[K, O]) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v ", p.Key)
	if p.Window.IsGlobal() {
		b.WriteString("global")
	} else {
		fmt.Fprintf(&b, "%s-%s", clock(p.Window.Start), clock(p.Window.End))
	}
	fmt.Fprintf(&b, " #%d", p.Revision)
	if p.Retract {
		b.WriteString(" retract")
	}
	fmt.Fprintf(&b, " %s v=%v wm=%s at=%s", p.Timing, p.Value, clock(p.Watermark), clock(p.EmittedAt))
	if p.Final {
		b.WriteString(" final")
	}
	return b.String()
}

func check[K comparable, O any](t *testing.T, got []window.Pane[K, O], want ...string) {
	t.Helper()
	var g []string
	for _, p := range got {
		g = append(g, pane(p))
	}
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("panes:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

func count(s window.Strategy, opts ...weirtest.HarnessOption) *weirtest.Harness[string, int, int64, int64] {
	h, err := weirtest.NewHarness[string](s, aggregate.Count[int](), opts...)
	if err != nil {
		panic(err)
	}
	return h
}

func sum(s window.Strategy) *weirtest.Harness[string, int, int, int] {
	h, err := weirtest.NewHarness[string](s, aggregate.Sum(func(v int) int { return v }))
	if err != nil {
		panic(err)
	}
	return h
}

var minute = window.TumblingWindows(time.Minute)

// The four events of seed 004: revisions within the allowed lateness, the
// closing pane, an event after cleanup, and events exactly at a window's
// start and end.
func TestSeed004Revisions(t *testing.T) {
	h := count(window.NewStrategy(minute).WithLateness(2 * time.Minute))
	h.AdvanceProcessingTime(s(1)).Add("L1", s(0), 1) // E, exactly at the start
	h.AdvanceProcessingTime(s(11)).Add("L1", s(10), 1)
	h.AdvanceProcessingTime(s(41)).Add("L1", s(40), 1)
	h.AdvanceProcessingTime(s(60.5)).Add("L1", s(60), 1) // F, exactly at the end: next window
	h.AdvanceProcessingTime(s(62)).AdvanceWatermark(s(61))
	h.AdvanceProcessingTime(s(90)).Add("L1", s(50), 1) // C, late within lateness
	h.AdvanceProcessingTime(s(182)).AdvanceWatermark(s(181))
	h.AdvanceProcessingTime(s(190)).Add("L1", s(20), 1) // D, after cleanup
	h.End()
	check(t, h.Panes(),
		"L1 10:00:00-10:01:00 #1 ON_TIME v=3 wm=10:01:01 at=10:01:02",
		"L1 10:00:00-10:01:00 #2 LATE v=4 wm=10:01:01 at=10:01:30",
		"L1 10:01:00-10:02:00 #1 ON_TIME v=1 wm=10:03:01 at=10:03:02",
		"L1 10:00:00-10:01:00 #3 LATE v=4 wm=10:03:01 at=10:03:02 final",
		"L1 10:01:00-10:02:00 #2 LATE v=1 wm=end at=10:03:10 final",
	)
	late := h.Late()
	if len(late) != 1 || late[0].Timestamp != s(20) || late[0].Window != (window.Window{Start: s(0), End: s(60)}) || late[0].Watermark != s(181) {
		t.Errorf("late = %+v", late)
	}
	st := h.Stats()
	if st.Accepted != 5 || st.TooLate != 1 || st.LateAccepted != 1 || st.OpenWindows != 0 || st.WindowsFired != 2 {
		t.Errorf("stats = %+v", st)
	}
	if st.Dropped[window.Window{Start: s(0), End: s(60)}] != 1 {
		t.Errorf("dropped = %v", st.Dropped)
	}
}

func TestNoLatenessOnTimeIsFinalAndLateIsDropped(t *testing.T) {
	h := count(window.NewStrategy(minute))
	h.AdvanceProcessingTime(s(1)).Add("k", s(59.999), 1) // the window's last instant
	h.AdvanceWatermark(s(59.998))                        // not yet: W < end-1
	h.AdvanceWatermark(s(59.999))                        // W = end-1: fires
	h.Add("k", s(30), 1)                                 // too late: end-1+0 <= W
	h.End()
	check(t, h.Panes(), "k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:00:59.999 at=10:00:01 final")
	if len(h.Late()) != 1 {
		t.Errorf("late = %v", h.Late())
	}
}

func TestOnTimeAndCleanupOnOneWatermarkGiveOneFinalPane(t *testing.T) {
	h := count(window.NewStrategy(minute).WithLateness(time.Minute))
	h.Add("k", s(10), 1).AdvanceWatermark(s(500))
	check(t, h.Panes(), "k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:08:20 at=none final")
}

func TestSlidingPartlyLate(t *testing.T) {
	// Windows of 30 s every 10 s; W = 35 s closes [0,30) only.
	h := count(window.NewStrategy(window.SlidingWindows(30*time.Second, 10*time.Second)))
	h.AdvanceWatermark(s(35))
	h.Add("k", s(25), 1) // in [0,30) (too late), [10,40) and [20,50)
	h.Add("k", s(5), 1)  // in [-20,10), [-10,20), [0,30): all too late
	h.End()
	check(t, h.Panes(),
		"k 10:00:10-10:00:40 #1 ON_TIME v=1 wm=end at=none final",
		"k 10:00:20-10:00:50 #1 ON_TIME v=1 wm=end at=none final",
	)
	// The event at 25 s is in the late events too, for the window it
	// missed; the one at 5 s names the last window it belonged to.
	late := h.Late()
	if len(late) != 2 || late[0].Reason != window.ReasonLateForSomeWindows || late[0].Timestamp != s(25) ||
		late[0].Window != (window.Window{Start: s(0), End: s(30)}) ||
		late[1].Reason != "" || late[1].Timestamp != s(5) || late[1].Window != (window.Window{Start: s(0), End: s(30)}) {
		t.Errorf("late = %+v", late)
	}
	missed := window.MissedWindows(window.SlidingWindows(30*time.Second, 10*time.Second), &late[0], nil)
	if len(missed) != 1 || missed[0] != (window.Window{Start: s(0), End: s(30)}) {
		t.Errorf("missed %v", missed)
	}
	st := h.Stats()
	if st.Accepted != 1 || st.PartlyLate != 1 || st.TooLate != 1 || st.Dropped[window.Window{Start: s(0), End: s(30)}] != 2 ||
		st.Dropped[window.Window{Start: s(-10), End: s(20)}] != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestEarlyAligned(t *testing.T) {
	h := count(window.NewStrategy(minute).WithTrigger(trigger.AfterWatermark().EarlyEvery(2*time.Second, true)))
	h.AdvanceProcessingTime(s(0.5)).Add("k", s(1), 1) // timer at 10:00:02
	h.AdvanceProcessingTime(s(1.5)).Add("k", s(2), 1)
	h.AdvanceProcessingTime(s(2.5))                 // fires at its own time
	h.AdvanceProcessingTime(s(3)).Add("k", s(3), 1) // next multiple: 10:00:04
	h.AdvanceProcessingTime(s(4))                   // due exactly now: fires
	h.AdvanceProcessingTime(s(9))                   // nothing new: no pane
	h.AdvanceWatermark(s(61))
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 EARLY v=2 wm=none at=10:00:02",
		"k 10:00:00-10:01:00 #2 EARLY v=3 wm=none at=10:00:04",
		"k 10:00:00-10:01:00 #3 ON_TIME v=3 wm=10:01:01 at=10:00:09 final",
	)
}

func TestEarlyUnalignedIsCancelledByTheWatermark(t *testing.T) {
	h := count(window.NewStrategy(minute).WithTrigger(trigger.AfterWatermark().EarlyEvery(2*time.Second, false)))
	h.AdvanceProcessingTime(s(0.5)).Add("k", s(1), 1) // timer at 10:00:02.500
	h.AdvanceProcessingTime(s(1.5)).Add("k", s(2), 1)
	h.AdvanceProcessingTime(s(3))
	h.AdvanceProcessingTime(s(3.2)).Add("k", s(3), 1) // timer at 10:00:05.200
	h.AdvanceProcessingTime(s(4)).AdvanceWatermark(s(61))
	h.AdvanceProcessingTime(s(10))
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 EARLY v=2 wm=none at=10:00:02.500",
		"k 10:00:00-10:01:00 #2 ON_TIME v=3 wm=10:01:01 at=10:00:04 final",
	)
}

func TestEarlyCountDiscarding(t *testing.T) {
	h := count(window.NewStrategy(minute).WithMode(window.Discarding).
		WithTrigger(trigger.AfterWatermark().EarlyCount(2)))
	h.Add("k", s(1), 1).Add("k", s(2), 1).Add("k", s(3), 1)
	h.Add("j", s(1), 1).Add("j", s(2), 1)
	h.AdvanceWatermark(s(60))
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 EARLY v=2 wm=none at=none",
		"j 10:00:00-10:01:00 #1 EARLY v=2 wm=none at=none",
		"k 10:00:00-10:01:00 #2 ON_TIME v=1 wm=10:01:00 at=none final",
		// discarding: nothing came since the early pane, and the watermark
		// passing is still said
		"j 10:00:00-10:01:00 #2 ON_TIME v=0 wm=10:01:00 at=none final",
	)
}

func TestLateThrottledNeverKeepsAnUpdate(t *testing.T) {
	h := sum(window.NewStrategy(minute).WithLateness(5 * time.Minute).
		WithTrigger(trigger.AfterWatermark().LateThrottled(10 * time.Second)))
	h.AdvanceProcessingTime(s(61)).Add("k", s(1), 1)
	h.AdvanceWatermark(s(100))
	h.AdvanceProcessingTime(s(101)).Add("k", s(2), 10)  // first late: at once
	h.AdvanceProcessingTime(s(103)).Add("k", s(3), 100) // held back until 10:01:51
	h.AdvanceProcessingTime(s(105)).Add("k", s(4), 1000)
	h.AdvanceProcessingTime(s(111))
	h.AdvanceProcessingTime(s(130)).Add("k", s(5), 10000) // period over: at once
	h.AdvanceProcessingTime(s(131)).Add("k", s(6), 100000)
	h.End() // the held-back update is in the closing pane
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:01:40 at=10:01:01",
		"k 10:00:00-10:01:00 #2 LATE v=11 wm=10:01:40 at=10:01:41",
		"k 10:00:00-10:01:00 #3 LATE v=1111 wm=10:01:40 at=10:01:51",
		"k 10:00:00-10:01:00 #4 LATE v=11111 wm=10:01:40 at=10:02:10",
		"k 10:00:00-10:01:00 #5 LATE v=111111 wm=end at=10:02:11 final",
	)
}

func TestLateNoneShowsInTheClosingPane(t *testing.T) {
	h := sum(window.NewStrategy(minute).WithLateness(time.Minute).WithTrigger(trigger.AfterWatermark().LateNone()))
	h.Add("k", s(1), 1).AdvanceWatermark(s(61)).Add("k", s(2), 2).AdvanceWatermark(s(200))
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:01:01 at=none",
		"k 10:00:00-10:01:00 #2 LATE v=3 wm=10:03:20 at=none final",
	)
}

func TestFinalOnly(t *testing.T) {
	h := sum(window.NewStrategy(minute).WithLateness(time.Minute).WithTrigger(trigger.OnClose().EarlyCount(1)))
	h.Add("k", s(1), 1).Add("k", s(2), 2).AdvanceWatermark(s(61)).Add("k", s(3), 4).AdvanceWatermark(s(200))
	h.Add("j", s(301), 8).AdvanceWatermark(s(361)) // without lateness left: on time and final at once
	h.End()
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 LATE v=7 wm=10:03:20 at=none final",
		"j 10:05:00-10:06:00 #1 LATE v=8 wm=end at=none final",
	)
	h2 := sum(window.NewStrategy(minute).WithTrigger(trigger.OnClose()))
	h2.Add("k", s(1), 1).AdvanceWatermark(s(61))
	check(t, h2.Panes(), "k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=10:01:01 at=none final")
}

func TestRetracting(t *testing.T) {
	h := sum(window.NewStrategy(minute).WithLateness(time.Minute).WithMode(window.Retracting).
		WithTrigger(trigger.AfterWatermark().EarlyCount(1)))
	h.Add("k", s(1), 1).AdvanceWatermark(s(61)).Add("k", s(2), 2).End()
	check(t, h.Panes(),
		"k 10:00:00-10:01:00 #1 EARLY v=1 wm=none at=none",
		"k 10:00:00-10:01:00 #1 retract EARLY v=1 wm=10:01:01 at=none",
		"k 10:00:00-10:01:00 #2 ON_TIME v=1 wm=10:01:01 at=none",
		"k 10:00:00-10:01:00 #2 retract ON_TIME v=1 wm=10:01:01 at=none",
		"k 10:00:00-10:01:00 #3 LATE v=3 wm=10:01:01 at=none",
		"k 10:00:00-10:01:00 #3 retract LATE v=3 wm=end at=none",
		"k 10:00:00-10:01:00 #4 LATE v=3 wm=end at=none final",
	)
}

func TestSessionsMergeLateAndRetract(t *testing.T) {
	h := sum(window.NewStrategy(window.SessionWindows(10 * time.Second)).WithLateness(time.Minute).WithMode(window.Retracting))
	h.Add("k", s(0), 1).Add("k", s(25), 2)
	h.AdvanceWatermark(s(40))
	h.Add("k", s(12), 4)  // a session of its own, already late: starts with a LATE pane
	h.Add("k", s(9), 8)   // bridges [0,10) and [12,22): both fired, both retracted
	h.Add("k", s(1), 16)  // inside [0,22): the same window, revision 2
	h.Add("k", s(20), 32) // bridges [0,22) and [25,35)
	h.End()
	check(t, h.Panes(),
		"k 10:00:00-10:00:10 #1 ON_TIME v=1 wm=10:00:40 at=none",
		"k 10:00:25-10:00:35 #1 ON_TIME v=2 wm=10:00:40 at=none",
		"k 10:00:12-10:00:22 #1 LATE v=4 wm=10:00:40 at=none",
		"k 10:00:00-10:00:10 #1 retract ON_TIME v=1 wm=10:00:40 at=none",
		"k 10:00:12-10:00:22 #1 retract LATE v=4 wm=10:00:40 at=none",
		"k 10:00:00-10:00:22 #1 LATE v=13 wm=10:00:40 at=none",
		"k 10:00:00-10:00:22 #1 retract LATE v=13 wm=10:00:40 at=none",
		"k 10:00:00-10:00:22 #2 LATE v=29 wm=10:00:40 at=none",
		"k 10:00:00-10:00:22 #2 retract LATE v=29 wm=10:00:40 at=none",
		"k 10:00:25-10:00:35 #1 retract ON_TIME v=2 wm=10:00:40 at=none",
		"k 10:00:00-10:00:35 #1 LATE v=63 wm=10:00:40 at=none",
		"k 10:00:00-10:00:35 #1 retract LATE v=63 wm=end at=none",
		"k 10:00:00-10:00:35 #2 LATE v=63 wm=end at=none final",
	)
}

func TestSessionMergeKeepsEarliestEarlyTimer(t *testing.T) {
	h := count(window.NewStrategy(window.SessionWindows(10 * time.Second)).
		WithTrigger(trigger.AfterWatermark().EarlyEvery(5*time.Second, false)))
	h.AdvanceProcessingTime(s(1)).Add("k", s(0), 1)  // [0,10), timer 10:00:06
	h.AdvanceProcessingTime(s(2)).Add("k", s(30), 1) // [30,40), timer 10:00:07
	h.AdvanceProcessingTime(s(3)).Add("k", s(8), 1)  // [0,18): a new window, keeps 10:00:06
	h.AdvanceProcessingTime(s(8))
	h.AdvanceProcessingTime(s(9)).Add("k", s(1), 1) // same window; a new timer at 10:00:14
	h.End()
	check(t, h.Panes(),
		"k 10:00:00-10:00:18 #1 EARLY v=2 wm=none at=10:00:06",
		"k 10:00:30-10:00:40 #1 EARLY v=1 wm=none at=10:00:07",
		"k 10:00:00-10:00:18 #2 ON_TIME v=3 wm=end at=10:00:09 final",
		"k 10:00:30-10:00:40 #2 ON_TIME v=1 wm=end at=10:00:09 final",
	)
}

func TestSessionTooLateAndTouching(t *testing.T) {
	h := count(window.NewStrategy(window.SessionWindows(10 * time.Second)))
	h.Add("k", s(0), 1)
	h.Add("k", s(10), 1) // touches [0,10) but does not overlap: a session of its own
	h.AdvanceWatermark(s(25))
	h.Add("k", s(5), 1) // too late: [5,15) ended at 10:00:15
	h.End()
	check(t, h.Panes(),
		"k 10:00:00-10:00:10 #1 ON_TIME v=1 wm=10:00:25 at=none final",
		"k 10:00:10-10:00:20 #1 ON_TIME v=1 wm=10:00:25 at=none final",
	)
	if len(h.Late()) != 1 || h.Late()[0].Window != (window.Window{Start: s(5), End: s(15)}) {
		t.Errorf("late = %+v", h.Late())
	}
}

func TestGlobalWithEarlyFirings(t *testing.T) {
	h := count(window.NewStrategy(window.GlobalWindows()).WithTrigger(trigger.AfterWatermark().EarlyCount(2)))
	for i := range 5 {
		h.Add("k", s(float64(i)), 1)
	}
	h.AdvanceWatermark(s(1e6)) // no watermark short of the end closes it
	h.End()
	check(t, h.Panes(),
		"k global #1 EARLY v=2 wm=none at=none",
		"k global #2 EARLY v=4 wm=none at=none",
		"k global #3 ON_TIME v=5 wm=end at=none final",
	)
}

func TestBoundedWatermarkAfterEveryEvent(t *testing.T) {
	h := count(window.NewStrategy(window.TumblingWindows(10*time.Second)),
		weirtest.WithWatermark(watermark.BoundedOutOfOrderness(2*time.Second).WithInterval(0)))
	h.AdvanceProcessingTime(s(5.1)).Add("k", s(5), 1)
	h.AdvanceProcessingTime(s(11.5)).Add("k", s(11.999), 1) // W = 9.998: not yet
	h.AdvanceProcessingTime(s(12.6)).Add("k", s(12), 1)     // W = 9.999 = end-1
	check(t, h.Panes(), "k 10:00:00-10:00:10 #1 ON_TIME v=1 wm=10:00:09.999 at=10:00:12.600 final")
}

func TestBoundedWatermarkEveryInterval(t *testing.T) {
	h := count(window.NewStrategy(window.TumblingWindows(10*time.Second)),
		weirtest.WithWatermark(watermark.BoundedOutOfOrderness(2*time.Second)))
	h.AdvanceProcessingTime(s(12.05)).Add("k", s(5), 1)
	h.AdvanceProcessingTime(s(12.10)).Add("k", s(12.5), 1)
	h.AdvanceProcessingTime(s(12.199))
	if len(h.Panes()) != 0 {
		t.Fatalf("fired before the periodic emission: %v", h.Panes())
	}
	h.AdvanceProcessingTime(s(30))
	check(t, h.Panes(), "k 10:00:00-10:00:10 #1 ON_TIME v=1 wm=10:00:10.499 at=10:00:12.200 final")
}

func TestIdlePartition(t *testing.T) {
	h := count(window.NewStrategy(window.TumblingWindows(10*time.Second)),
		weirtest.WithWatermark(watermark.BoundedOutOfOrderness(0).WithInterval(0).WithIdleness(time.Second)))
	h.AdvanceProcessingTime(s(0)).AddOn(0, "k", s(5), 1)
	h.AdvanceProcessingTime(s(0.1)).AddOn(1, "k", s(3), 1)
	h.AdvanceProcessingTime(s(0.5)).AddOn(0, "k", s(15), 1) // partition 1 holds W at 2.999
	if len(h.Panes()) != 0 {
		t.Fatalf("fired while partition 1 holds the watermark: %v", h.Panes())
	}
	h.AdvanceProcessingTime(s(2)) // partition 1 idle since 10:00:01.100
	check(t, h.TakePanes(), "k 10:00:00-10:00:10 #1 ON_TIME v=2 wm=10:00:14.999 at=10:00:01.100 final")
	// Partition 1 rejoins with an old event: too late, and W does not go back.
	h.AdvanceProcessingTime(s(3)).AddOn(1, "k", s(4), 1)
	if h.Watermark() != s(14.999) || len(h.Late()) != 1 {
		t.Errorf("W = %s, late = %v", clock(h.Watermark()), h.Late())
	}
}

func TestProcessingTimersDoNotFireAfterTheEnd(t *testing.T) {
	h := count(window.NewStrategy(minute).WithTrigger(trigger.AfterWatermark().EarlyEvery(time.Second, false)))
	h.AdvanceProcessingTime(s(1)).Add("k", s(1), 1).End()
	check(t, h.Panes(), "k 10:00:00-10:01:00 #1 ON_TIME v=1 wm=end at=10:00:01 final")
}
