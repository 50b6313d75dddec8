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
