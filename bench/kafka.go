package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// KafkaOrders is the number of orders of the Kafka benchmarks.
var KafkaOrders = 1_000_000

func init() {
	register(Bench{
		Name: "kafka-fraud", Group: "kafka",
		About: "the fraud job from an orders topic (3 partitions) to an exactly-once alerts topic, checkpoints every second, on an in-process broker",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			c, err := kafkaCluster()
			if err != nil {
				return nil, nil, err
			}
			return func(time.Duration) (int64, map[string]float64, string, error) { return kafkaFraud(c) }, c.Close, nil
		},
	})
	register(Bench{
		Name: "kafka-floor", Group: "kafka",
		About: "the floor for kafka-fraud: a franz-go program that consumes the same orders and writes records in one transaction a second, no engine",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			c, err := kafkaCluster()
			if err != nil {
				return nil, nil, err
			}
			return func(time.Duration) (int64, map[string]float64, string, error) { return kafkaFloor(c, false) }, c.Close, nil
		},
	})
	register(Bench{
		Name: "kafka-parse-floor", Group: "kafka",
		About: "kafka-floor that also parses every order and reads the fields the job reads (time, key, id, amount) with weir's JSON parser, no engine",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			c, err := kafkaCluster()
			if err != nil {
				return nil, nil, err
			}
			return func(time.Duration) (int64, map[string]float64, string, error) { return kafkaFloor(c, true) }, c.Close, nil
		},
	})
}

const kafkaFraudJob = `name: bench-fraud
source: {kafka: {brokers: [%[1]s], topic: orders}}
time: {field: ts}
key: card
id: order_id
dedup_horizon: 1h
max_future: none
watermark: {delay: 2s, interval: 200ms, idle: 10s}
window: {tumbling: 1m}
aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}
having: "orders >= 5"
output: {kafka: {brokers: [%[1]s], topic: alerts, delivery: exactly_once}}
checkpoint: {dir: %[2]s, interval: 1s}
`

// kafkaCluster starts a broker holding the benchmark's orders, keyed by
// card, in three partitions.
func kafkaCluster() (*kfake.Cluster, error) { return ordersCluster(3, "alerts", "floor-out") }

func kafkaFraud(c *kfake.Cluster) (int64, map[string]float64, string, error) {
	dir, err := os.MkdirTemp("", "weir-bench-kafka-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	j, err := jobfile.Parse([]byte(fmt.Sprintf(kafkaFraudJob, c.ListenAddrs()[0], filepath.Join(dir, "ckpt"))), "bench.yaml", dir)
	if err != nil {
		return 0, nil, "", err
	}
	rn, err := job.Build(j, job.Options{})
	if err != nil {
		return 0, nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var sum *job.Summary
	go func() {
		var err error
		sum, err = rn.Run(ctx)
		done <- err
	}()
	// The stream does not end: stop when every order has been read and a
	// checkpoint after it has committed.
	ctl := rn.Engine().Control()
	for {
		st := ctl.Status(ctx, time.Second)
		if st.Counts.Read >= int64(KafkaOrders) && st.Checkpoint.At.After(st.At.Add(-time.Second)) {
			break
		}
		select {
		case err := <-done:
			return 0, nil, "", fmt.Errorf("the job stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		return 0, nil, "", err
	}
	return sum.Read, map[string]float64{"alerts": float64(sum.PanesWritten)}, "", nil
}

// kafkaFloor consumes every order (read_committed) and writes as many
// records as the job writes alerts, in one transaction a second: the Kafka
// work of the job without the job. With parse, it also parses each order
// and reads the job's fields, as jsonl-parse-only does.
func kafkaFloor(c *kfake.Cluster, parse bool) (int64, map[string]float64, string, error) {
	addr := c.ListenAddrs()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr...), kgo.ConsumeTopics("orders"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, nil, "", err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr...), kgo.TransactionalID("floor"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return 0, nil, "", err
	}
	defer prod.Close()
	ctx := context.Background()
	var n, written int64
	var p fastjson.Parser
	var keyBytes, bad int64
	var last mtime.Time
	var spent float64
	next := time.Now().Add(time.Second)
	begin := func() error { return prod.BeginTransaction() }
	if err := begin(); err != nil {
		return 0, nil, "", err
	}
	for n < int64(KafkaOrders) {
		fs := cons.PollRecords(ctx, 1024)
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if parse {
				if v, err := p.ParseBytes(r.Value); err == nil {
					ts, _ := source.Time(v.Get("ts"))
					last = max(last, ts)
					keyBytes += int64(len(v.GetStringBytes("card")) + len(v.GetStringBytes("order_id")))
					spent += v.GetFloat64("amount")
				} else {
					bad++
				}
			}
			// About one alert per 1,500 orders, as the job finds.
			if n%1500 == 0 {
				prod.Produce(ctx, &kgo.Record{Topic: "floor-out", Key: r.Key, Value: r.Value}, nil)
				written++
			}
		})
		if time.Now().After(next) || n >= int64(KafkaOrders) {
			if err := prod.Flush(ctx); err != nil {
				return n, nil, "", err
			}
			if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return n, nil, "", err
			}
			if err := begin(); err != nil {
				return n, nil, "", err
			}
			next = time.Now().Add(time.Second)
		}
	}
	prod.EndTransaction(ctx, kgo.TryAbort)
	extra := map[string]float64{"written": float64(written)}
	if parse {
		extra["key_bytes"], extra["unparsed"] = float64(keyBytes), float64(bad)
	}
	return n, extra, "", nil
}
