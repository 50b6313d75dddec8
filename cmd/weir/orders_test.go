package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/clitest"
)

// The development broker's orders are keyed by their own card: the
// consumer-group example relies on it to keep each card's windows in one
// task. A key read from the parser's buffer after the next line was parsed
// named another order's card.
func TestKafkaOrdersKeyedByCard(t *testing.T) {
	b := clitest.StartBroker(t, "orders:3")
	var log bytes.Buffer
	want := produceOrders(context.Background(), b.Addr, liveOrders{Rate: 1e9, Limit: 3000}, &log)
	if want != 3000 {
		t.Fatalf("%d orders produced: %s", want, log.String())
	}
	cl := b.Client(kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	deadline := time.Now().Add(30 * time.Second)
	n, wrong, late, tooLate := 0, 0, 0, 0
	now := time.Now()
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
			// The event time is the moment of sending, or from a phone
			// that was offline.
			ts, _ := time.Parse(time.RFC3339, fastjson.GetString(r.Value, "ts"))
			switch behind := now.Sub(ts); {
			case behind > tooLateMin-time.Second:
				tooLate++
			case behind > lateMin-time.Second:
				late++
			case behind < -time.Minute:
				wrong++
			}
		})
	}
	if n != want || wrong != 0 {
		t.Errorf("%d of %d orders read, %d of them keyed by another card or stamped in the future", n, want, wrong)
	}
	// 2% late, 0.3% too late: 60 and 9 of 3000, give or take.
	if late < 30 || late > 100 || tooLate < 2 || tooLate > 25 {
		t.Errorf("%d late and %d too-late orders of %d", late, tooLate, n)
	}
}
