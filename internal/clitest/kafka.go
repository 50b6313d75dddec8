package clitest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/brokerconns"
	"github.com/weirstream/weir/internal/freeport"
)

// Broker is a kfake cluster on 127.0.0.1 for weir processes to talk to.
type Broker struct {
	T    testing.TB
	C    *kfake.Cluster
	Addr string
	Port int
	Dir  string // where it keeps its data, across Start

	conns brokerconns.Conns
}

// StartBroker starts a cluster with the topics (name:partitions), keeping
// its data in a directory so that it can be stopped (Broker.C.Close) and
// started again on its port (Broker.Start).
func StartBroker(t testing.TB, topics ...string) *Broker {
	b := &Broker{T: t, Dir: t.TempDir()}
	// Its first start takes another port if its first is taken (a restart
	// keeps it).
	if err := freeport.Start(func(port int) error {
		b.Port = port
		return b.start(topics...)
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.C.Close() })
	return b
}

// Start starts the cluster on its port, with the topics (name:partitions):
// again, after the broker was closed.
func (b *Broker) Start(topics ...string) {
	if err := b.start(topics...); err != nil {
		b.T.Fatal(err)
	}
}

func (b *Broker) start(topics ...string) error {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(b.Port), kfake.DataDir(b.Dir), kfake.GroupMinSessionTimeout(time.Second),
		kfake.ListenFn(b.conns.Listen)}
	for _, tp := range topics {
		name, parts, _ := strings.Cut(tp, ":")
		n := 1
		fmt.Sscan(parts, &n)
		opts = append(opts, kfake.SeedTopics(int32(n), name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	b.C, b.Addr = c, c.ListenAddrs()[0]
	return nil
}

// Clients is the broker's view of the clients connected to it whose ids
// begin with prefix: the client ids of its open connections, each once.
func (b *Broker) Clients(prefix string) []string { return b.conns.Clients(prefix) }

// Connections is how many connections of clients whose ids begin with
// prefix the broker holds open.
func (b *Broker) Connections(prefix string) int { return b.conns.Connections(prefix) }

// Client is a client of the cluster, closed when the test ends.
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr)}, opts...)...)
	if err != nil {
		b.T.Fatal(err)
	}
	b.T.Cleanup(cl.Close)
	return cl
}

// GroupOffsets is a consumer group's committed offsets as Kafka's tools
// read them ("orders/0 3, orders/1 2"), by topic and partition number
// (orders/2 before orders/10), or the error that prevents it.
func (b *Broker) GroupOffsets(group string) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if err != nil {
		return err.Error()
	}
	var rs []kadm.OffsetResponse
	offs.Each(func(o kadm.OffsetResponse) { rs = append(rs, o) })
	slices.SortFunc(rs, func(a, b kadm.OffsetResponse) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	out := make([]string, len(rs))
	for i, o := range rs {
		out[i] = fmt.Sprintf("%s/%d %d", o.Topic, o.Partition, o.At)
	}
	return strings.Join(out, ", ")
}

// ProduceLines writes lines to a partition of a topic, in order.
func (b *Broker) ProduceLines(topic string, part int32, lines [][]byte) {
	b.ProduceKeyed(topic, part, lines, nil)
}

// ProduceKeyed writes lines to a partition, each with its key (keys may be
// nil: no keys).
func (b *Broker) ProduceKeyed(topic string, part int32, lines, keys [][]byte) {
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	ctx := context.Background()
	errc := make(chan error, 1)
	for i, l := range lines {
		r := &kgo.Record{Topic: topic, Partition: part, Value: l}
		if keys != nil {
			r.Key = keys[i]
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.T.Fatal(err)
	}
	select {
	case err := <-errc:
		b.T.Fatal(err)
	default:
	}
}

// Committed reads every committed record of a topic that is there now.
func (b *Broker) Committed(topic string) []string {
	cl := b.Client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	var out []string
	idle := 0
	for idle < 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return out
}

// CommittedRecords is Committed for records that say where they came
// from: each with its input partition in front, as "p2 ", and without
// what a live run differs in (WithoutEmittedAt).
func (b *Broker) CommittedRecords(topic string) []string {
	var out []string
	for _, l := range b.Committed(topic) {
		_, p, ok := strings.Cut(fastjson.GetString([]byte(l), "partition"), "/")
		if !ok {
			out = append(out, WithoutEmittedAt(l))
			continue
		}
		out = append(out, "p"+p+" "+WithoutEmittedAt(l))
	}
	return out
}

// WaitCommitted polls topic until it holds n records (CommittedRecords),
// for at most limit, and returns what it holds.
func (b *Broker) WaitCommitted(topic string, n int, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	var got []string
	for time.Now().Before(deadline) {
		if got = b.CommittedRecords(topic); len(got) >= n {
			break
		}
		time.Sleep(time.Second)
	}
	return got
}

// WithoutEmittedAt drops the processing times a live run differs in (when
// a pane was emitted, when a record was set aside), and
// says where a record was as a file does: the line of a record is its offset
// plus one (the records of one partition are the lines of the file).
func WithoutEmittedAt(line string) string {
	var m map[string]any
	if json.Unmarshal([]byte(line), &m) != nil {
		return line
	}
	delete(m, "emitted_at")
	delete(m, "set_aside_at")
	if off, ok := m["offset"].(float64); ok {
		delete(m, "offset")
		delete(m, "partition")
		m["line"] = off + 1
	}
	b, _ := json.Marshal(m)
	return string(b)
}
