package group

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/clitest"
)

// The group's watermark is the minimum over the tasks that are not idle;
// this instance's own reports are fresher than what the topic said of them,
// until the task stops here; partitions the group does not have, and tasks
// that published nothing, do not count.
func TestSharedWatermarkIsTheMinimumOverActiveTasks(t *testing.T) {
	s := newShared(4)
	if got := s.report(0, 100, true); got != 100 {
		t.Fatalf("only an idle task: group watermark %d, want its own, 100", got)
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
	all := []int32{0, 1, 2, 3}
	ws := s.of(all)
	if len(ws) != 2 || len(s.of(all)) != 0 {
		t.Fatalf("to publish %v, then %v; want partitions 0 and 2 once", ws, s.of(all))
	}
	s.report(2, 200, false)
	s.report(0, 150, true)
	if ws := s.of([]int32{2}); len(ws) != 0 {
		t.Fatalf("an unchanged watermark is published again: %v", ws)
	}
	if ws := s.of([]int32{2, 0}); len(ws) != 1 || ws[0].Watermark != 150 {
		t.Fatalf("to publish %v; want partition 0's new watermark alone", ws)
	}
	s.drop(2)
	if got := s.report(0, 100, true); got != 300 {
		t.Fatalf("after the task stopped here: group watermark %d, want the topic's 300", got)
	}
	s.heard(kafka.PartitionWatermark{Partition: 1, Watermark: 500, Idle: true})
	s.heard(kafka.PartitionWatermark{Partition: 2, Watermark: 300, Idle: true})
	if got := s.report(0, 100, true); got != 500 {
		t.Fatalf("every task idle: group watermark %d, want the highest, 500 (partition 1's), as one job's", got)
	}
}

// Two instances exchange their tasks' watermarks through the topic: each
// thread publishes its tasks' in the transactions of their checkpoints,
// only what changed, and each instance reads everyone's.
func TestSharedWatermarksGoThroughTheTopic(t *testing.T) {
	b := clitest.StartBroker(t, "orders:2", "log:2")
	conn := kafka.Config{Brokers: []string{b.Addr}, Topic: WatermarksTopic("g")}
	ctx := context.Background()
	var in [2]*shared
	var txns [2]*kafka.Txn
	for i := range in {
		in[i] = newShared(2)
		th := &kafka.Thread{Config: conn, TransactionalID: fmt.Sprintf("weir-test-%d", i), Group: &kafka.Group{Group: "g"},
			Manual: []string{"log", conn.Topic}}
		if err := th.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer th.Close()
		w := &kafka.Watermarks{Config: conn, Thread: th}
		if err := w.Open(ctx, in[i].heard); err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		th.Extra = func(ps []int32) []*kgo.Record { return w.Records(in[i].of(ps)) }
		txns[i] = th.Txn("orders", int32(i))
		defer txns[i].Close()
	}
	// checkpoint commits a checkpoint of the task of partition i.
	var id [2]uint64
	checkpoint := func(i int) {
		t.Helper()
		id[i]++
		rec := &kgo.Record{Topic: "log", Partition: int32(i), Key: []byte("m"), Value: []byte("{}")}
		if err := txns[i].Publish(ctx, id[i], []*kgo.Record{rec}, -1); err != nil {
			t.Fatal(err)
		}
	}
	in[0].report(0, 4000, false)
	in[1].report(1, 9000, true)
	checkpoint(0)
	checkpoint(1)
	checkpoint(1) // unchanged: not published again
	deadline := time.Now().Add(time.Minute)
	for in[1].report(1, 9000, true) != 4000 || in[0].report(0, 4000, false) != 4000 {
		if time.Now().After(deadline) {
			t.Fatalf("instance 1 sees the group's watermark %d, instance 0 %d; want 4000 (partition 0's: partition 1 is idle)",
				in[1].group(), in[0].group())
		}
		time.Sleep(50 * time.Millisecond)
	}
	in[0].report(0, 6000, false)
	checkpoint(0)
	for in[1].group() != 6000 {
		if time.Now().After(deadline) {
			t.Fatalf("instance 1 sees %d; want 6000", in[1].group())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
