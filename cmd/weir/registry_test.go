package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/formats" // the avro, protobuf and json_schema formats
	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// weir kafka --registry --orders: the orders are Avro in the registry's
// framing, and read by weir's avro format through the registry, each is the
// order the same seed produces as JSON: its card, its amount to the cent,
// its event time's distance to its arrival.
func TestKafkaOrdersAsAvro(t *testing.T) {
	checkOrdersInFormat(t, "avro")
}

// weir kafka --registry --orders --format protobuf: the same, as Protobuf's
// shop.Order of examples/fraud/orders.proto.
func TestKafkaOrdersAsProtobuf(t *testing.T) {
	src, err := os.ReadFile("../../examples/fraud/orders.proto")
	if err != nil || string(src) != ordersProto {
		t.Fatalf("ordersProto is not examples/fraud/orders.proto: %v", err)
	}
	checkOrdersInFormat(t, "protobuf")
}

// weir kafka --registry --orders --format json_schema: the same, as JSON
// lines framed with the id of examples/fraud/orders.schema.json, each
// valid under it.
func TestKafkaOrdersAsJSONSchema(t *testing.T) {
	src, err := os.ReadFile("../../examples/fraud/orders.schema.json")
	if err != nil || string(src) != ordersJSONSchema {
		t.Fatalf("ordersJSONSchema is not examples/fraud/orders.schema.json: %v", err)
	}
	checkOrdersInFormat(t, "json_schema")
}

// checkOrdersInFormat produces the orders as JSON and in the format, and
// checks that each is the same order.
func checkOrdersInFormat(t *testing.T, format string) {
	url, reg, closeReg, err := serveRegistry(0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeReg()
	if resp, err := http.Get(url + "/subjects"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the registry does not answer: %v", err)
	}
	b := clitest.StartBroker(t, "orders:3")
	var log bytes.Buffer
	const n = 500
	if got := produceOrders(context.Background(), b.Addr, liveOrders{Rate: 1e9, Limit: n, Seed: 7}, &log); got != n {
		t.Fatalf("%d JSON orders: %s", got, log.String())
	}
	live := liveOrders{Rate: 1e9, Limit: n, Seed: 7}
	switch format {
	case "protobuf":
		live.Protobuf, err = newProtoOrders(reg)
	case "json_schema":
		live.JSONSchema, err = newJSONSchemaOrders(reg)
	default:
		live.Avro, err = newAvroOrders(reg)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := produceOrders(context.Background(), b.Addr, live, &log); got != n {
		t.Fatalf("%d %s orders: %s", got, format, log.String())
	}
	k, _ := plan.LookupFormat(format)
	cfg, err := k.Parse(plan.Values{}, &plan.Registry{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := cfg.New(plan.Env{}, "orders")
	if err != nil {
		t.Fatal(err)
	}
	cl := b.Client(kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	jsonOrders, avroOrders := map[string]*fastjson.Value{}, map[string]*fastjson.Value{}
	deadline := time.Now().Add(30 * time.Second)
	for len(jsonOrders)+len(avroOrders) < 2*n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			into, value := jsonOrders, r.Value
			if len(value) > 0 && value[0] == 0 {
				into = avroOrders
				if value, err = dec.AppendJSON(nil, r.Value); err != nil {
					t.Fatalf("%x: %v", r.Value, err)
				}
			}
			v, err := fastjson.ParseBytes(value)
			if err != nil {
				t.Fatal(err)
			}
			if string(v.GetStringBytes("card")) != string(r.Key) {
				t.Errorf("keyed %s: %s", r.Key, value)
			}
			into[string(v.GetStringBytes("order_id"))] = v
		})
	}
	if len(jsonOrders) != n || len(avroOrders) != n {
		t.Fatalf("%d JSON and %d %s orders read", len(jsonOrders), len(avroOrders), format)
	}
	for id, j := range jsonOrders {
		a := avroOrders[id]
		// Each run starts at its own clock: the times a run gives an
		// order are the same relative to its arrival (each written to the
		// millisecond, so within one).
		ts, _ := mtime.Parse(j.GetStringBytes("ts"))
		arr, _ := mtime.Parse(j.GetStringBytes("arrival"))
		if a == nil {
			t.Fatalf("%s: no %s order", id, format)
		}
		ats, aarr := a.GetInt64("ts"), a.GetInt64("arrival")
		if format == "protobuf" || format == "json_schema" {
			// Timestamps, or JSON's strings, in RFC 3339.
			t1, _ := mtime.Parse(a.GetStringBytes("ts"))
			t2, _ := mtime.Parse(a.GetStringBytes("arrival"))
			ats, aarr = int64(t1), int64(t2)
		}
		sameAmount := a.Get("amount").String() == j.Get("amount").String()
		if format == "protobuf" {
			sameAmount = a.GetFloat64("amount") == j.GetFloat64("amount") // a double
		}
		if !sameAmount || string(a.GetStringBytes("card")) != string(j.GetStringBytes("card")) ||
			ats == 0 || abs(aarr-ats-int64(arr-ts)) > 1 {
			t.Fatalf("%s: JSON %s, %s %s", id, j, format, a)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// weir kafka --orders --registry prints the alerts a job writes as Avro
// (format: avro) decoded to JSON by weir's avro format (timestamp-millis as
// epoch milliseconds), and JSON alerts as they are.
func TestPrintAlertsDecodesAvro(t *testing.T) {
	url, _, closeReg, err := serveRegistry(0)
	if err != nil {
		t.Fatal(err)
	}
	defer closeReg()
	b := clitest.StartBroker(t, "alerts")
	shape := plan.PaneShape{Job: "fraud", Keys: []string{"key"}, Windowed: true,
		Aggregates: []plan.AggregateShape{{Name: "orders", Type: plan.Integer}, {Name: "spent", Type: plan.Number}}}
	avro, err := formats.NewAvroPanes(shape, &plan.Registry{URL: url}, "alerts", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := avro.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	key, value := avro.Record(&plan.PaneFields{Keys: []any{"card_7"}, Start: 1_788_000_000_000, End: 1_788_000_060_000, Revision: 1,
		Timing: "ON_TIME", Final: true, Mode: "accumulating", Version: 1, Watermark: 1_788_000_062_000, Emitted: 1_788_000_062_500, Values: []any{int64(5), "110.70"}})
	cl := b.Client(kgo.DefaultProduceTopic("alerts"))
	for _, r := range []*kgo.Record{{Value: []byte(`{"key":"card_1","orders":6}`)}, {Key: key, Value: value}} {
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan struct{})
	go func() { printAlerts(ctx, b.Addr, url, &out); close(done) }()
	want := `alert: {"key":"card_1","orders":6}
alert: {"key":"card_7","window_start":1788000000000,"window_end":1788000060000,"revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":1788000062000,"emitted_at":1788000062500,"orders":5,"spent":"110.70","partial":[]}
`
	for deadline := time.Now().Add(30 * time.Second); out.String() != want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
