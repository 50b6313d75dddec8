package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/clitest"
)

// The development broker's orders are keyed by their own card: the
// consumer-group example relies on it to keep each card's windows in one
// task. A key read from the parser's buffer after the next line was parsed
// named another order's card.
func TestKafkaOrdersKeyedByCard(t *testing.T) {
	b := clitest.StartBroker(t, "orders:3")
	var log bytes.Buffer
	want := produceOrders(context.Background(), b.Addr, 3000, 1e9, &log)
	if want < 2900 {
		t.Fatalf("%d orders produced: %s", want, log.String())
	}
	cl := b.Client(kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	deadline := time.Now().Add(30 * time.Second)
	n, wrong := 0, 0
	for n < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			n++
			var o struct{ Card string }
			if err := json.Unmarshal(r.Value, &o); err != nil || o.Card != string(r.Key) {
				wrong++
			}
		})
	}
	if n != want || wrong != 0 {
		t.Errorf("%d of %d orders read, %d of them keyed by another card", n, want, wrong)
	}
}
