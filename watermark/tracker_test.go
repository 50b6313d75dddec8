package watermark

import (
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
)

func TestBoundedIsFlinkFormula(t *testing.T) {
	tr := NewTracker(BoundedOutOfOrderness(2 * time.Second))
	if got := tr.Current(0); got != mtime.MinTime {
		t.Fatalf("no events: %d", got)
	}
	tr.Observe(0, 10_000, 1)
	if got := tr.Current(1); got != 7_999 { // 10 s - 2 s - 1 ms
		t.Fatalf("W = %d, want 7999", got)
	}
	tr.Observe(0, 9_000, 2) // out of order: max stays
	if got := tr.Current(2); got != 7_999 {
		t.Fatalf("W = %d, want 7999", got)
	}
	tr.Observe(0, 15_000, 3)
	if got := tr.Current(3); got != 12_999 {
		t.Fatalf("W = %d, want 12999", got)
	}
}

func TestPartitionsCombineByMinimum(t *testing.T) {
	tr := NewTracker(Strategy{Delay: 0})
	tr.Observe(0, 100, 0)
	tr.Observe(1, 50, 0)
	if got := tr.Current(0); got != 49 {
		t.Fatalf("W = %d, want 49 (partition 1 holds it back)", got)
	}
	tr.Observe(1, 200, 0)
	if got := tr.Current(0); got != 99 {
		t.Fatalf("W = %d, want 99", got)
	}
}

func TestIdlePartitionStopsHoldingBackAndRejoins(t *testing.T) {
	tr := NewTracker(Strategy{Delay: 0, Idle: 1000})
	tr.Observe(0, 100, 0)
	tr.Observe(1, 50, 0)
	if got := tr.NextIdle(); got != 1000 {
		t.Fatalf("NextIdle = %d", got)
	}
	tr.Observe(0, 300, 500) // partition 0 stays active
	if got := tr.Current(999); got != 49 {
		t.Fatalf("before idleness W = %d, want 49", got)
	}
	if got := tr.Current(1000); got != 299 || !tr.Idle(1) {
		t.Fatalf("partition 1 idle at 1000: W = %d idle=%v, want 299", got, tr.Idle(1))
	}
	// Partition 1 rejoins with an old event: the watermark does not go back.
	tr.Observe(1, 60, 1100)
	if got := tr.Current(1100); got != 299 || tr.Idle(1) {
		t.Fatalf("after rejoin W = %d idle=%v, want 299 and active", got, tr.Idle(1))
	}
	// ... and holds it from now on until it catches up.
	tr.Observe(0, 500, 1200)
	if got := tr.Current(1200); got != 299 {
		t.Fatalf("W = %d, want 299 (held by partition 1 at 59)", got)
	}
	tr.Observe(1, 400, 1300)
	if got := tr.Current(1300); got != 399 {
		t.Fatalf("W = %d, want 399", got)
	}
}

func TestAllIdleTakesTheLargest(t *testing.T) {
	tr := NewTracker(Strategy{Delay: 0, Idle: 10})
	tr.Observe(0, 100, 0)
	tr.Observe(1, 50, 5)
	if got := tr.Current(5); got != 49 {
		t.Fatalf("W = %d", got)
	}
	if got := tr.Current(20); got != 99 {
		t.Fatalf("all idle: W = %d, want 99 (Flink flushes the largest)", got)
	}
	if got := tr.NextIdle(); got != mtime.MaxTime {
		t.Fatalf("NextIdle = %d", got)
	}
}

func TestDeclaredPartitionHoldsBack(t *testing.T) {
	tr := NewTracker(Strategy{Delay: 0, Idle: 100})
	tr.AddPartition(1, 0)
	tr.Observe(0, 500, 0)
	if got := tr.Current(50); got != mtime.MinTime {
		t.Fatalf("W = %d, want none while partition 1 has said nothing", got)
	}
	if got := tr.Current(100); got != 499 {
		t.Fatalf("W = %d after partition 1 went idle, want 499", got)
	}
}

func TestStateRoundTrip(t *testing.T) {
	tr := NewTracker(Strategy{Delay: 5, Idle: 10})
	tr.Observe(0, 100, 0)
	tr.Observe(2, 80, 3)
	tr.Current(12)
	s := tr.State()
	tr2 := NewTracker(Strategy{Delay: 5, Idle: 10})
	tr2.Restore(s)
	if a, b := tr.Current(20), tr2.Current(20); a != b {
		t.Fatalf("restored W = %d, want %d", b, a)
	}
}

// A floor from outside (a consumer group's watermark) moves the watermark
// only while every partition is idle, never back, and not past what an
// idle partition's own events say; an active partition ignores it.
func TestFloorMovesOnlyAnIdleTracker(t *testing.T) {
	tr := NewTracker(Strategy{Delay: 0, Idle: 1000})
	tr.AddPartition(0, 0)
	tr.Observe(0, 100, 0)
	tr.SetFloor(5000)
	if got := tr.Current(10); got != 99 || tr.AllIdle() {
		t.Fatalf("active: W = %d (all idle %v), want 99: the floor does not apply", got, tr.AllIdle())
	}
	if got := tr.Current(1000); got != 5000 || !tr.AllIdle() {
		t.Fatalf("idle: W = %d (all idle %v), want the floor 5000", got, tr.AllIdle())
	}
	tr.SetFloor(3000) // the group's went back (a task restored): W stays
	if got := tr.Current(1100); got != 5000 {
		t.Fatalf("W = %d after a lower floor, want 5000", got)
	}
	tr.Observe(0, 9000, 1200) // the partition's own events lead
	tr.SetFloor(6000)
	if got := tr.Current(2200); got != 8999 {
		t.Fatalf("W = %d, want 8999: the partition's own is ahead of the floor", got)
	}
	tr.Observe(0, 9500, 2300) // active again: the floor does not apply
	tr.SetFloor(20000)
	if got := tr.Current(2400); got != 9499 || tr.AllIdle() {
		t.Fatalf("W = %d, want 9499", got)
	}
	tr.SetFloor(mtime.MinTime)
	if got := tr.Current(3400); got != 9499 {
		t.Fatalf("idle without a floor: W = %d, want 9499", got)
	}
}

// A quiet stream: once no partition has had an event for Quiet of
// processing time, the watermark follows the clock (now - Quiet); an event
// ends the quiet, and the watermark does not go back. A partition that is
// only behind (a backlog) keeps the stream from being quiet, and there is
// no quiet before the first event.
func TestQuietStreamFollowsTheClock(t *testing.T) {
	tr := NewTracker(Strategy{Delay: 2000, Quiet: 60_000})
	tr.AddPartition(0, 0)
	tr.AddPartition(1, 0)
	if q := tr.QuietFrom(); q != mtime.MaxTime {
		t.Fatalf("no event yet: quiet from %d", q)
	}
	if got := tr.Current(500_000); got != mtime.MinTime {
		t.Fatalf("no event yet: W = %d", got)
	}
	tr.Observe(0, 1_000_000, 1_000_000)
	tr.Observe(1, 1_000_500, 1_000_500)
	if q := tr.QuietFrom(); q != 1_060_500 {
		t.Fatalf("quiet from %d, want 1060500", q)
	}
	if got := tr.Current(1_060_499); got != 997_999 {
		t.Fatalf("not yet quiet: W = %d, want 997999", got)
	}
	if got := tr.Current(1_060_500); got != 1_000_500 {
		t.Fatalf("quiet: W = %d, want now - 60s = 1000500", got)
	}
	if got := tr.Current(4_600_000); got != 4_540_000 {
		t.Fatalf("an hour quiet: W = %d, want 4540000", got)
	}
	// A partition behind is not quiet.
	tr.SetBacklog(0, 10, 4_600_000)
	if q := tr.QuietFrom(); q != 4_660_000 {
		t.Fatalf("behind: quiet from %d, want 4660000", q)
	}
	if got := tr.Current(4_630_000); got != 4_540_000 {
		t.Fatalf("behind: W = %d, want 4540000 (it does not go back)", got)
	}
	// An event ends the quiet: an old one does not move W back.
	tr.Observe(1, 4_000_000, 4_630_000)
	if got := tr.Current(4_640_000); got != 4_540_000 {
		t.Fatalf("after an event: W = %d", got)
	}
	// Restored, it knows when the stream went quiet.
	r := NewTracker(Strategy{Delay: 2000, Quiet: 60_000})
	r.Restore(tr.State())
	if q := r.QuietFrom(); q != 4_690_000 {
		t.Fatalf("restored: quiet from %d, want 4690000", q)
	}
	// Without a quiet bound, nothing of this.
	off := NewTracker(Strategy{Delay: 2000})
	off.Observe(0, 1_000_000, 1_000_000)
	if got := off.Current(9_000_000); got != 997_999 || off.QuietFrom() != mtime.MaxTime {
		t.Fatalf("without quiet: W = %d", got)
	}
	if (Strategy{Quiet: -1}).Validate() == nil {
		t.Error("a negative quiet accepted")
	}
}
