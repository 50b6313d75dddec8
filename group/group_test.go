package group_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

type order struct {
	Card string     `json:"card"`
	At   mtime.Time `json:"at"`
}

// pipelineTask is a Config.Task written with the Go API: orders per card
// per minute, read from the task's partition, written exactly once through
// the task's transaction.
func pipelineTask(brokers []string, start kafka.Start, decoded *atomic.Int64) func(context.Context, *group.Task) (group.Runner, error) {
	return pipelineTaskWith(brokers, start, decoded, watermark.BoundedOutOfOrderness(0).WithInterval(0))
}

// pipelineTaskWith is pipelineTask with the watermark strategy wm.
func pipelineTaskWith(brokers []string, start kafka.Start, decoded *atomic.Int64, wm watermark.Strategy) func(context.Context, *group.Task) (group.Runner, error) {
	return func(_ context.Context, t *group.Task) (group.Runner, error) {
		p := weir.NewPipeline(weir.Name("orders"), weir.InGroup(t, 100*time.Millisecond))
		src := &kafka.Source{Config: kafka.Config{Brokers: brokers}, Txn: t.Txn, Start: start}
		orders, _ := weir.Read(p, "orders", src, func(r connector.Record) (order, error) {
			var o order
			err := json.Unmarshal(r.Value, &o)
			decoded.Add(1)
			return o, err
		})
		stamped := weir.WithTimestamps(orders, func(o order) mtime.Time { return o.At }, wm)
		counts, _ := weir.Aggregate(
			weir.Window(weir.KeyBy(stamped, func(o order) string { return o.Card }), window.NewStrategy(window.TumblingWindows(time.Minute))),
			aggregate.Count[order](), weir.Named("per-card"))
		weir.SinkTo(counts, "counts", &kafka.Sink[weir.Pane[string, int64]]{
			Config: kafka.Config{Brokers: brokers, Topic: "counts"}, Delivery: connector.ExactlyOnce, Txn: t.Txn,
			Encode: func(pn weir.Pane[string, int64]) ([]byte, []byte) {
				return []byte(pn.Key), fmt.Appendf(nil, "%s %s %d", pn.Key, pn.Window.Start, pn.Value)
			},
		})
		return p, nil
	}
}

// A group of weir.Pipelines: an instance runs both partitions' tasks and
// stops with windows open; a second instance, started afterwards, takes
// both partitions over from the changelog and closes the windows with the
// counts of the events the first one read.
func TestPipelineTasksMoveWithTheirState(t *testing.T) {
	b := clitest.StartBroker(t, "orders:2", "counts:1")
	brokers := []string{b.Addr}
	produce := func(part int32, card string, sec int64) {
		v := fmt.Sprintf(`{"card":%q,"at":%d}`, card, 1_780_000_020_000+sec*1000)
		b.ProduceKeyed("orders", part, [][]byte{[]byte(v)}, [][]byte{[]byte(card)})
	}
	var log clitest.Buffer
	var decoded atomic.Int64 // by the tasks of both instances
	instance := func(start kafka.Start) *group.Instance {
		g, err := group.New(group.Config{Conn: kafka.Config{Brokers: brokers, Topic: "orders"}, Group: "counters", Changelog: "counters-state",
			SessionTimeout: 6 * time.Second, TransactionalID: "weir-orders", TransactionTimeout: time.Minute, Log: &log,
			Task: pipelineTask(brokers, start, &decoded)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	run := func(g *group.Instance, until func() bool) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		deadline := time.Now().Add(2 * time.Minute)
		for !until() {
			if time.Now().After(deadline) {
				cancel()
				<-done
				t.Fatalf("the instance did not get there; its log:\n%s", log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("instance: %v\n%s", err, log.String())
		}
	}
	produce(0, "a", 0)
	produce(0, "a", 10)
	produce(1, "b", 5)
	first := instance(kafka.Start{})
	// What the tasks decoded is in the savepoints they take when the
	// instance stops: the barrier follows it.
	run(first, func() bool { return decoded.Load() == 3 })

	// The second instance's tasks would start at the end of the topic
	// without a checkpoint: what they read is where the first stopped.
	second := instance(kafka.Start{Latest: true})
	produce(0, "a", 70) // closes a's first minute
	produce(1, "b", 65) // and b's
	// Each checkpoint's offsets are the group's committed offsets too, as
	// Kafka's tools read them: 3 records read on partition 0, 2 on 1.
	run(second, func() bool {
		return len(b.Committed("counts")) == 2 && b.GroupOffsets("counters") == "orders/0 3, orders/1 2"
	})

	got := b.Committed("counts")
	slices.Sort(got)
	want := []string{"a 2026-05-28T20:27:00.000Z 2", "b 2026-05-28T20:27:00.000Z 1"}
	if !slices.Equal(got, want) {
		t.Errorf("counts:\n got %q\nwant %q\nlog:\n%s", got, want, log.String())
	}
	for _, line := range []string{"orders/0: restored checkpoint 1 from counters-state", "orders/1: restored checkpoint 1 from counters-state",
		"weir: orders/0: resuming from ", "weir: orders/1: resuming from "} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("the second instance did not restore both tasks from the changelog (no %q):\n%s", line, log.String())
		}
	}
}

// An instance of a group that reads its input directly refuses an input
// that has more partitions than its changelog: the keys would move to
// other tasks than their state. It names the way on.
func TestGrownInputRefused(t *testing.T) {
	b := clitest.StartBroker(t, "orders:2", "counts:1")
	brokers := []string{b.Addr}
	conn := kafka.Config{Brokers: brokers, Topic: "orders"}
	if err := kafka.EnsureChangelog(context.Background(), conn, "counters-state", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(b.Client()).CreatePartitions(context.Background(), 1, "orders"); err != nil {
		t.Fatal(err)
	}
	var decoded atomic.Int64
	g, err := group.New(group.Config{Conn: conn, Group: "counters", Changelog: "counters-state",
		SessionTimeout: 6 * time.Second, TransactionalID: "weir-orders", TransactionTimeout: time.Minute,
		Task: pipelineTask(brokers, kafka.Start{}, &decoded)})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "orders has more partitions than the 2 it had when the group started (its changelog counters-state has as many): a key's events would go to another task than its state; read it with source.kafka.repartition: true") {
		t.Errorf("Run: %v", err)
	}
}

// A task written with the Go API follows the group's watermark while its
// partition is idle, as a job file's does: the window of a quiet
// partition closes once the busy one's watermark passes it.
func TestPipelineTaskFollowsTheGroupsWatermark(t *testing.T) {
	b := clitest.StartBroker(t, "orders:2", "counts:1")
	brokers := []string{b.Addr}
	produce := func(part int32, card string, sec int64) {
		v := fmt.Sprintf(`{"card":%q,"at":%d}`, card, 1_780_000_020_000+sec*1000)
		b.ProduceKeyed("orders", part, [][]byte{[]byte(v)}, [][]byte{[]byte(card)})
	}
	produce(1, "q", 5) // the quiet partition: one order
	for m := range int64(4) {
		produce(0, "a", m*60+5) // the busy one: a minute's order each
	}
	var log clitest.Buffer
	var decoded atomic.Int64
	g, err := group.New(group.Config{Conn: kafka.Config{Brokers: brokers, Topic: "orders"}, Group: "counters", Changelog: "counters-state",
		SessionTimeout: 6 * time.Second, TransactionalID: "weir-orders", TransactionTimeout: time.Minute, Log: &log, ShareWatermarks: true,
		Task: pipelineTaskWith(brokers, kafka.Start{}, &decoded, watermark.BoundedOutOfOrderness(0).WithInterval(0).WithIdleness(time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	want := []string{"a 2026-05-28T20:27:00.000Z 1", "a 2026-05-28T20:28:00.000Z 1", "a 2026-05-28T20:29:00.000Z 1", "q 2026-05-28T20:27:00.000Z 1"}
	var got []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = b.Committed("counts"); len(got) >= len(want) {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("instance: %v\n%s", err, log.String())
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("counts:\n got %q\nwant %q\nlog:\n%s", got, want, log.String())
	}
}
