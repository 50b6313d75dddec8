package group

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/mtime"
)

// The group's watermark is the minimum over the tasks that are not idle;
// this instance's own reports are fresher than what the topic said of them,
// until the task stops here; partitions the group does not have, and tasks
// that published nothing, do not count.
func TestSharedWatermarkIsTheMinimumOverActiveTasks(t *testing.T) {
	s := newShared(4)
	if got := s.report(0, 100, true); got != mtime.MinTime {
		t.Fatalf("only an idle task: group watermark %d, want none", got)
	}
	s.heard(kafka.PartitionWatermark{Partition: 1, Watermark: 500})
	s.heard(kafka.PartitionWatermark{Partition: 2, Watermark: 300})
	s.heard(kafka.PartitionWatermark{Partition: 3, Watermark: 50, Idle: true})
	s.heard(kafka.PartitionWatermark{Partition: 7, Watermark: 10}) // not a partition of the group
	if got := s.report(0, 100, true); got != 300 {
		t.Fatalf("group watermark %d, want 300 (partition 2; 3 is idle)", got)
	}
	// Partition 2 runs here now: its report counts, not the topic's.
	if got := s.report(2, 700, false); got != 500 {
		t.Fatalf("group watermark %d, want 500", got)
	}
	if got := s.report(2, 200, false); got != 200 {
		t.Fatalf("group watermark %d, want 200", got)
	}
	ws := s.changed()
	if len(ws) != 2 || len(s.changed()) != 0 {
		t.Fatalf("changed %v, then %v; want partitions 0 and 2 once", ws, s.changed())
	}
	s.report(2, 200, false)
	if ws := s.changed(); len(ws) != 0 {
		t.Fatalf("an unchanged watermark is published again: %v", ws)
	}
	s.drop(2)
	if got := s.report(0, 100, true); got != 300 {
		t.Fatalf("after the task stopped here: group watermark %d, want the topic's 300", got)
	}
	s.heard(kafka.PartitionWatermark{Partition: 1, Watermark: 500, Idle: true})
	s.heard(kafka.PartitionWatermark{Partition: 2, Watermark: 300, Idle: true})
	if got := s.report(0, 100, true); got != mtime.MinTime {
		t.Fatalf("every task idle: group watermark %d, want none", got)
	}
}

// Two instances exchange their tasks' watermarks through the topic: each
// learns of the other's task, and publishes only what changed.
func TestSharedWatermarksGoThroughTheTopic(t *testing.T) {
	b := clitest.StartBroker(t)
	conn := kafka.Config{Brokers: []string{b.Addr}, Topic: WatermarksTopic("g")}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var in [2]*shared
	for i := range in {
		w := &kafka.Watermarks{Config: conn}
		if err := w.Open(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		in[i] = newShared(2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			in[i].exchange(ctx, w)
		}()
	}
	in[0].report(0, 4000, false)
	in[1].report(1, 9000, true)
	deadline := time.Now().Add(time.Minute)
	for in[1].report(1, 9000, true) != 4000 || in[0].report(0, 4000, false) != 4000 {
		if time.Now().After(deadline) {
			t.Fatalf("instance 1 sees the group's watermark %d, instance 0 %d; want 4000 (partition 0's: partition 1 is idle)",
				in[1].group(), in[0].group())
		}
		time.Sleep(50 * time.Millisecond)
	}
	in[0].report(0, 6000, false)
	for in[1].group() != 6000 {
		if time.Now().After(deadline) {
			t.Fatalf("instance 1 sees %d; want 6000", in[1].group())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	// Each instance published its task's watermark only when it changed.
	got := b.Committed(conn.Topic)
	want := []string{`{"partition":0,"watermark_ms":4000,"idle":false}`, `{"partition":1,"watermark_ms":9000,"idle":true}`, `{"partition":0,"watermark_ms":6000,"idle":false}`}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the topic holds %q; want %q", got, want)
	}
}

// Each task's standby is the member after its owner, by member id, in a
// ring; a member alone is the standby of nothing.
func TestStandbyIsTheNextMember(t *testing.T) {
	ms := []kafka.Member{{ID: "a", Partitions: []int32{0, 3}}, {ID: "b", Partitions: []int32{1}}, {ID: "c", Partitions: []int32{2, 4}}}
	for me, want := range map[string][]int32{"a": {2, 4}, "b": {0, 3}, "c": {1}, "d": nil} {
		if got := standbyOf(ms, me); !slices.Equal(got, want) {
			t.Errorf("%s keeps %v warm; want %v", me, got, want)
		}
	}
	if got := standbyOf(ms[:1], "a"); len(got) != 0 {
		t.Errorf("a member alone keeps %v warm", got)
	}
}
