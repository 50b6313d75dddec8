//go:build !release

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

const kafkaUsage = `Usage: weir kafka [flags]

Starts a DEVELOPMENT Kafka broker on 127.0.0.1 (franz-go's kfake, in memory,
nothing written to disk unless --data), with the topics of the fraud demo:
orders (3 partitions), alerts, orders-late and orders-quarantine. It is for
trying weir without a Kafka of your own, not for production.

With --orders it also produces the fraud job's orders live into the orders
topic, --rate a second on average, keyed by card, until Ctrl-C: each order's
event time is the moment it is sent, but 2% come from phones that were
offline, 5 s to 1 minute late, and 0.3% 2 to 5 minutes late, so that the
job has late events to accept and too-late ones to set aside; a stolen
card every 10 seconds or so pays 5 to 30 times in 10 to 60 seconds. It
prints every alert the job commits to the alerts topic (read_committed),
an Avro one decoded to JSON through the --registry. Run the job beside
it: weir run --http 127.0.0.1:8080 examples/fraud/kafka.yaml (with
--registry, examples/fraud/kafka-avro.yaml: Avro orders in, Avro alerts out)

Flags:
`

// cmdKafka runs the development broker until Ctrl-C.
func cmdKafka(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir kafka", stderr)
	port := fs.Int("port", 9092, "the port to listen on (127.0.0.1 only)")
	orders := fs.Bool("orders", false, "produce the fraud job's orders live into the orders topic, and print the alerts")
	rate := fs.Float64("rate", 50, "with --orders: orders a second, on average")
	data := fs.String("data", "", "keep the broker's data in this `directory` across restarts")
	registry := fs.Int("registry", 0, "serve a schema registry on this `port` too (127.0.0.1 only); with --orders, the orders are Avro (or --format) in its framing")
	format := fs.String("format", "avro", "with --registry and --orders: the orders' `format`, avro, protobuf (shop.Order of examples/fraud/orders.proto) or json_schema (JSON of examples/fraud/orders.schema.json)")
	fs.Usage = func() {
		fmt.Fprint(stderr, kafkaUsage)
		fs.PrintDefaults()
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 || *rate <= 0 || *format != "avro" && *format != "protobuf" && *format != "json_schema" {
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
	if err := compactAlerts(addr); err != nil {
		fmt.Fprintln(stderr, "weir kafka:", err)
		return 1
	}
	fmt.Fprintf(stderr, "weir kafka: a DEVELOPMENT broker (kfake, in memory) on %s, not for production\n", addr)
	fmt.Fprintf(stderr, "weir kafka: topics orders (3 partitions), alerts (compacted: the job revises its panes), orders-late, orders-quarantine; Ctrl-C stops it\n")
	live := liveOrders{Rate: *rate}
	regURL := ""
	if *registry != 0 {
		url, reg, closeReg, err := serveRegistry(*registry)
		if err != nil {
			fmt.Fprintln(stderr, "weir kafka: --registry:", err)
			return 1
		}
		defer closeReg()
		fmt.Fprintf(stderr, "weir kafka: a DEVELOPMENT schema registry (srfake, in memory) on %s\n", url)
		regURL = url
		switch {
		case *orders && *format == "protobuf":
			if live.Protobuf, err = newProtoOrders(reg); err != nil {
				fmt.Fprintln(stderr, "weir kafka: --registry:", err)
				return 1
			}
			fmt.Fprintf(stderr, "weir kafka: the orders are Protobuf (shop.Order), their schema orders-value (id %d)\n", live.Protobuf.id)
		case *orders && *format == "json_schema":
			if live.JSONSchema, err = newJSONSchemaOrders(reg); err != nil {
				fmt.Fprintln(stderr, "weir kafka: --registry:", err)
				return 1
			}
			fmt.Fprintf(stderr, "weir kafka: the orders are JSON, their JSON Schema orders-value (id %d)\n", live.JSONSchema.id)
		case *orders:
			if live.Avro, err = newAvroOrders(reg); err != nil {
				fmt.Fprintln(stderr, "weir kafka: --registry:", err)
				return 1
			}
			fmt.Fprintf(stderr, "weir kafka: the orders are Avro, their schema orders-value (id %d)\n", live.Avro.id)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *orders {
		go produceOrders(ctx, addr, live, stderr)
		go printAlerts(ctx, addr, regURL, stdout)
	}
	<-ctx.Done()
	return 0
}

// liveOrders says how produceOrders produces.
