package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/source"
)

const kafkaUsage = `Usage: weir kafka [flags]

Starts a DEVELOPMENT Kafka broker on 127.0.0.1 (franz-go's kfake, in memory,
nothing written to disk unless --data), with the topics of the fraud demo:
orders (3 partitions), alerts, orders-late and orders-quarantine. It is for
trying weir without a Kafka of your own, not for production.

With --orders it also produces the orders stream of the fraud job live into
the orders topic (a day of orders, --speed times faster than real time),
and prints every alert the job commits to the alerts topic (read_committed).
Run the job beside it: weir run examples/fraud/kafka.yaml

Flags:
`

// cmdKafka runs the development broker until Ctrl-C.
func cmdKafka(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir kafka", stderr)
	port := fs.Int("port", 9092, "the port to listen on (127.0.0.1 only)")
	orders := fs.Bool("orders", false, "produce the fraud job's orders live into the orders topic, and print the alerts")
	speed := fs.Float64("speed", 60, "with --orders: how many times faster than real time the orders come")
	events := fs.Int("events", 200_000, "with --orders: how many orders the day holds")
	data := fs.String("data", "", "keep the broker's data in this `directory` across restarts")
	fs.Usage = func() {
		fmt.Fprint(stderr, kafkaUsage)
		fs.PrintDefaults()
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 || *speed <= 0 {
		fs.Usage()
		return 2
	}
	opts := []kfake.Opt{kfake.Ports(*port), kfake.SeedTopics(3, "orders"), kfake.SeedTopics(1, "alerts", "orders-late", "orders-quarantine")}
	if *data != "" {
		opts = append(opts, kfake.DataDir(*data))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(stderr, "weir kafka:", err)
		return 1
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	fmt.Fprintf(stderr, "weir kafka: a DEVELOPMENT broker (kfake, in memory) on %s, not for production\n", addr)
	fmt.Fprintf(stderr, "weir kafka: topics orders (3 partitions), alerts, orders-late, orders-quarantine; Ctrl-C stops it\n")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *orders {
		go produceOrders(ctx, addr, *events, *speed, stderr)
		go printAlerts(ctx, addr, stdout)
	}
	<-ctx.Done()
	return 0
}

// produceOrders writes a day of the fraud job's orders into the orders
// topic, keyed by card, each at its arrival time divided by speed from now.
// It returns how many it produced.
func produceOrders(ctx context.Context, addr string, events int, speed float64, log io.Writer) int {
	var buf bytes.Buffer
	if err := gen.Orders(&buf, gen.Options{Events: events, Seed: 1}); err != nil {
		fmt.Fprintln(log, "weir kafka: generating orders:", err)
		return 0
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(10*time.Millisecond))
	if err != nil {
		fmt.Fprintln(log, "weir kafka:", err)
		return 0
	}
	defer cl.Close()
	lines := source.NewLines(&buf, 0, 0, 0)
	var p fastjson.Parser
	start := time.Now()
	first := int64(-1)
	n := 0
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	for {
		ln, ok := lines.Next()
		if !ok {
			if err := cl.Flush(ctx); err != nil {
				return n
			}
			fmt.Fprintf(log, "weir kafka: the day of %d orders is all produced\n", n)
			return n
		}
		v, err := p.ParseBytes(ln.Text)
		if err != nil {
			continue
		}
		arr, _ := source.Time(v.Get("arrival"))
		if first < 0 {
			first = int64(arr)
		}
		due := start.Add(time.Duration(float64(int64(arr)-first)/speed) * time.Millisecond)
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
				return n
			case <-time.After(wait):
			}
		}
		cl.Produce(ctx, orderRecord(v, ln.Text), nil)
		n++
		select {
		case <-report.C:
			fmt.Fprintf(log, "weir kafka: %d orders produced\n", n)
		default:
		}
	}
}

// orderRecord is the record of one order line, keyed by its card. The
// record owns its bytes: the producer keeps them until the broker has them,
// while the parser and the line reader reuse theirs for the next line.
func orderRecord(v *fastjson.Value, line []byte) *kgo.Record {
	return &kgo.Record{Topic: "orders", Key: bytes.Clone(v.GetStringBytes("card")), Value: bytes.Clone(line)}
}

// printAlerts prints what the job commits to the alerts topic.
func printAlerts(ctx context.Context, addr string, out io.Writer) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("alerts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachRecord(func(r *kgo.Record) { fmt.Fprintf(out, "alert: %s\n", r.Value) })
	}
}
