package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/source"
)

// Consumer-group jobs: throughput with one and two instances (in this
// process, sharing its cores), and the time a task takes to restore its
// state from its changelog after a takeover.

// GroupPartitions is the number of partitions of the group benchmarks'
// orders topic.
const GroupPartitions = 4

// RestoreKeys is the number of keys of group-restore-1m.
var RestoreKeys = 1_000_000

func init() {
	for _, n := range []int{1, 2} {
		register(Bench{
			Name: fmt.Sprintf("group-%d", n), Group: "kafka",
			About: fmt.Sprintf("the fraud job of kafka-fraud as a consumer group of %d instance(s) in one process, the orders in %d partitions (a task each), exactly-once alerts, a checkpoint a second into the changelog topic", n, GroupPartitions),
			Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
				c, err := ordersCluster(GroupPartitions, "alerts")
				if err != nil {
					return nil, nil, err
				}
				return func(time.Duration) (int64, map[string]float64, string, error) { return groupRun(c, n) }, c.Close, nil
			},
		})
	}
	register(Bench{
		Name: "group-restore-1m", Group: "kafka",
		About: "a task of a group job holds 1M keys (hour windows, one partition); its instance stops, another takes the partition over: the time from the assignment until the task runs (fencing, reading the changelog, restoring); events are the keys restored",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			c, err := keysCluster(RestoreKeys)
			if err != nil {
				return nil, nil, err
			}
			return func(time.Duration) (int64, map[string]float64, string, error) { return groupRestore(c) }, c.Close, nil
		},
	})
	register(Bench{
		Name: "group-restore-1m-standby", Group: "kafka",
		About: "group-restore-1m with source.kafka.standby: 1: the instance that takes the partition over kept its changelog read as its standby, and reads only what came since",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			c, err := keysCluster(RestoreKeys)
			if err != nil {
				return nil, nil, err
			}
			return func(time.Duration) (int64, map[string]float64, string, error) { return groupRestoreStandby(c) }, c.Close, nil
		},
	})
}

const groupFraudJob = `name: bench-group
source: {kafka: {brokers: [%[1]s], topic: orders, group: %[2]s, session_timeout: 6s}}
time: {field: ts}
key: card
id: order_id
dedup_horizon: 1h
max_future: none
watermark: {delay: 2s, interval: 200ms, idle: 10s}
window: {tumbling: 1m}
aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}
having: "orders >= 5"
output: {kafka: {brokers: [%[1]s], topic: alerts}}
checkpoint: {interval: 1s}
`

var groupSeq atomic.Int64

// ordersCluster starts a broker holding the benchmark's orders, keyed by
// card, in parts partitions (Kafka's default partitioner), and the output
// topics, of one partition each.
func ordersCluster(parts int, outputs ...string) (*kfake.Cluster, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(parts), "orders"), kfake.SeedTopics(1, outputs...), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := gen.Orders(&buf, gen.Options{Events: KafkaOrders, Seed: 1}); err != nil {
		c.Close()
		return nil, err
	}
	lines := source.NewLines(&buf, 0, 0, 0)
	err = produce(c, func() (key, value []byte, ok bool) {
		ln, ok := lines.Next()
		if !ok {
			return nil, nil, false
		}
		card := ln.Text[bytes.Index(ln.Text, []byte(`"card":"`))+8:]
		card = card[:bytes.IndexByte(card, '"')]
		return bytes.Clone(card), bytes.Clone(ln.Text), true
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func produce(c *kfake.Cluster, next func() (key, value []byte, ok bool)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(200_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	for {
		k, v, ok := next()
		if !ok {
			break
		}
		cl.Produce(ctx, &kgo.Record{Topic: "orders", Key: k, Value: v}, nil)
	}
	return cl.Flush(ctx)
}

// runGroups runs n instances of the group job text until done says the
// tasks are where they should be.
func runGroups(text string, n int, done func([]job.GroupStatus) bool) error {
	j, err := jobfile.Parse([]byte(text), "bench.yaml", ".")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var groups []*job.Group
	errs := make(chan error, n)
	for range n {
		g, err := job.NewGroup(j, job.Options{})
		if err != nil {
			return err
		}
		groups = append(groups, g)
		go func() { errs <- g.Run(ctx) }()
	}
	for {
		sts := make([]job.GroupStatus, len(groups))
		for i, g := range groups {
			sts[i] = g.Status(ctx)
		}
		if done(sts) {
			break
		}
		select {
		case err := <-errs:
			return fmt.Errorf("an instance stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	for range n {
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// caughtUp reports whether every one of parts partitions has a running
// task that has read its partition to the end and committed a checkpoint
// since (caught notes when each was first seen at the end).
func caughtUp(sts []job.GroupStatus, parts int, caught map[int32]time.Time) bool {
	ok := 0
	for _, g := range sts {
		for _, t := range g.Tasks {
			st := t.Status
			if t.State != "running" || len(st.Partitions) == 0 || st.Partitions[0].Backlog != 0 {
				delete(caught, t.Partition)
				continue
			}
			at, seen := caught[t.Partition]
			if !seen {
				caught[t.Partition] = time.Now()
				continue
			}
			if st.Checkpoint.At.After(at) {
				ok++
			}
		}
	}
	return ok == parts
}

func groupRun(c *kfake.Cluster, n int) (int64, map[string]float64, string, error) {
	name := fmt.Sprintf("bench-%d-%d", n, groupSeq.Add(1))
	caught := map[int32]time.Time{}
	// The steady throughput: from when every partition's task runs (the
	// group's first rebalances done) to when every one has read its
	// partition to the end, so that splitting is measured apart from the
	// instances' joining.
	var stableAt time.Time
	var readAtStable int64
	err := runGroups(fmt.Sprintf(groupFraudJob, c.ListenAddrs()[0], name), n, func(sts []job.GroupStatus) bool {
		if stableAt.IsZero() {
			running, read := 0, int64(0)
			for _, g := range sts {
				for _, t := range g.Tasks {
					if t.State == "running" {
						running++
					}
					read += t.Status.Counts.Read
				}
			}
			if running == GroupPartitions {
				stableAt, readAtStable = time.Now(), read
			}
		}
		return caughtUp(sts, GroupPartitions, caught)
	})
	if err != nil {
		return 0, nil, "", err
	}
	figs := map[string]float64{"instances": float64(n)}
	var end time.Time
	for _, at := range caught {
		if at.After(end) {
			end = at
		}
	}
	if !stableAt.IsZero() && end.After(stableAt) {
		figs["steady_events_per_sec"] = float64(int64(KafkaOrders)-readAtStable) / end.Sub(stableAt).Seconds()
		figs["read_before_stable"] = float64(readAtStable)
	}
	return int64(KafkaOrders), figs, "", nil
}

const restoreJob = `name: bench-restore
source: {kafka: {brokers: [%[1]s], topic: orders, group: %[2]s, session_timeout: 6s}}
time: {field: ts}
key: card
max_future: none
watermark: {delay: 2s, interval: 200ms}
window: {tumbling: 1h}
aggregates: {orders: count, spent: sum(amount)}
output: {kafka: {brokers: [%[1]s], topic: alerts}}
checkpoint: {interval: 10s}
`

// keysCluster starts a broker with one partition of n orders, each of its
// own card, in the first half hour of an hour window: every key stays.
func keysCluster(n int) (*kfake.Cluster, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"), kfake.SeedTopics(1, "alerts"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	i := 0
	err = produce(c, func() ([]byte, []byte, bool) {
		if i == n {
			return nil, nil, false
		}
		i++
		card := fmt.Appendf(nil, "k%07d", i)
		ts := int64(gen.DefaultStart) + int64(i)*1_800_000/int64(n)
		return card, fmt.Appendf(nil, `{"card":%q,"amount":%d.25,"ts":%d}`, card, i%500, ts), true
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// groupRestoreStandby is groupRestore with a standby: the second instance
// joins while the first runs the task, keeps the task's changelog read,
// and takes the task over when the first stops.
func groupRestoreStandby(c *kfake.Cluster) (int64, map[string]float64, string, error) {
	name := fmt.Sprintf("bench-restore-standby-%d", groupSeq.Add(1))
	text := strings.Replace(fmt.Sprintf(restoreJob, c.ListenAddrs()[0], name), "session_timeout: 6s}", "session_timeout: 6s, standby: 1}", 1)
	j, err := jobfile.Parse([]byte(text), "bench.yaml", ".")
	if err != nil {
		return 0, nil, "", err
	}
	var gs [2]*job.Group
	var cancels [2]context.CancelFunc
	errs := make(chan error, 2)
	start := func(i int) error {
		g, err := job.NewGroup(j, job.Options{})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		gs[i], cancels[i] = g, cancel
		go func() { errs <- g.Run(ctx) }()
		return nil
	}
	defer func() {
		for _, c := range cancels {
			if c != nil {
				c()
			}
		}
	}()
	wait := func(done func() bool) error {
		for deadline := time.Now().Add(10 * time.Minute); !done(); {
			select {
			case err := <-errs:
				return fmt.Errorf("an instance stopped: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return errors.New("timed out")
			}
		}
		return nil
	}
	ctx := context.Background()
	if err := start(0); err != nil {
		return 0, nil, "", err
	}
	caught := map[int32]time.Time{}
	if err := wait(func() bool { return caughtUp([]job.GroupStatus{gs[0].Status(ctx)}, 1, caught) }); err != nil {
		return 0, nil, "", err
	}
	// The standby joins, and reads the changelog while the task runs.
	if err := start(1); err != nil {
		return 0, nil, "", err
	}
	if err := wait(func() bool { return len(gs[1].Status(ctx).Standby) == 1 }); err != nil {
		return 0, nil, "", err
	}
	time.Sleep(5 * time.Second)
	cancels[0]()
	if err := <-errs; err != nil {
		return 0, nil, "", err
	}
	var r job.TaskRestore
	if err := wait(func() bool {
		for _, t := range gs[1].Status(ctx).Tasks {
			if t.State == "running" {
				r = t.Restored
				return true
			}
		}
		return false
	}); err != nil {
		return 0, nil, "", err
	}
	if r.Keys != int64(RestoreKeys) || r.Standby == 0 {
		return 0, nil, "", fmt.Errorf("restored %d keys (%d changelog records read as the standby), want %d", r.Keys, r.Standby, RestoreKeys)
	}
	figures := restoreFigures(r)
	figures["standby_records"] = float64(r.Standby)
	return r.Keys, figures, "", nil
}

// restoreFigures are what a takeover's restore reports.
func restoreFigures(r job.TaskRestore) map[string]float64 {
	ms := float64(r.Millis)
	return map[string]float64{
		"restore_ms": ms, "ms_per_million_keys": ms * 1e6 / float64(r.Keys), "changelog_mib": float64(r.Bytes) / (1 << 20),
	}
}

func groupRestore(c *kfake.Cluster) (int64, map[string]float64, string, error) {
	name := fmt.Sprintf("bench-restore-%d", groupSeq.Add(1))
	text := fmt.Sprintf(restoreJob, c.ListenAddrs()[0], name)
	// The first instance reads every key; it stops with a savepoint in
	// the changelog.
	caught := map[int32]time.Time{}
	if err := runGroups(text, 1, func(sts []job.GroupStatus) bool { return caughtUp(sts, 1, caught) }); err != nil {
		return 0, nil, "", err
	}
	// The next one restores them.
	var r job.TaskRestore
	err := runGroups(text, 1, func(sts []job.GroupStatus) bool {
		for _, t := range sts[0].Tasks {
			if t.State == "running" {
				r = t.Restored
				return true
			}
		}
		return false
	})
	if err != nil {
		return 0, nil, "", err
	}
	if r.Keys != int64(RestoreKeys) {
		return 0, nil, "", fmt.Errorf("restored %d keys, want %d", r.Keys, RestoreKeys)
	}
	return r.Keys, restoreFigures(r), "", nil
}
