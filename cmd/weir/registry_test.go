package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	_ "github.com/weirstream/weir/formats" // the avro format
	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// weir kafka --registry --orders: the orders are Avro in the registry's
// framing, and read by weir's avro format through the registry, each is the
// order the same seed produces as JSON: its card, its amount to the cent,
// its event time's distance to its arrival.
func TestKafkaOrdersAsAvro(t *testing.T) {
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
	av, err := newAvroOrders(reg)
	if err != nil {
		t.Fatal(err)
	}
	if got := produceOrders(context.Background(), b.Addr, liveOrders{Rate: 1e9, Limit: n, Seed: 7, Avro: av}, &log); got != n {
		t.Fatalf("%d Avro orders: %s", got, log.String())
	}
	k, _ := plan.LookupFormat("avro")
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
		t.Fatalf("%d JSON and %d Avro orders read", len(jsonOrders), len(avroOrders))
	}
	for id, j := range jsonOrders {
		a := avroOrders[id]
		// Each run starts at its own clock: the times a run gives an
		// order are the same relative to its arrival (each written to the
		// millisecond, so within one).
		ts, _ := mtime.Parse(j.GetStringBytes("ts"))
		arr, _ := mtime.Parse(j.GetStringBytes("arrival"))
		if a == nil || a.Get("amount").String() != j.Get("amount").String() || string(a.GetStringBytes("card")) != string(j.GetStringBytes("card")) ||
			abs(a.GetInt64("arrival")-a.GetInt64("ts")-int64(arr-ts)) > 1 {
			t.Fatalf("%s: JSON %s, Avro %s", id, j, a)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
