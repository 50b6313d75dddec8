package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/plan"
)

type liveOrders struct {
	Rate  float64 // orders a second, on average
	Limit int     // stop after so many (0: never)
	Seed  uint64
	// Avro, when set, encodes the orders as Avro in a schema registry's
	// framing, Protobuf as Protobuf, JSONSchema as JSON so framed; else
	// they are JSON lines.
	Avro       *avroOrders
	Protobuf   *protoOrders
	JSONSchema *jsonSchemaOrders
}

// The demo's orders, in real time.
const (
	lateShare      = 0.02 // from phones that were offline, 5 s to 1 min late: some within the job's allowed lateness
	tooLateShare   = 0.003
	lateMin        = 5 * time.Second
	lateMax        = time.Minute
	tooLateMin     = 2 * time.Minute
	tooLateMax     = 5 * time.Minute
	orderSendSlop  = 300 * time.Millisecond // an order on time is sent within this of its event time
	stolenEvery    = 10 * time.Second       // a stolen card, on average
	stolenOrdersLo = 5                      // ... pays 5 to 30 times
	stolenOrdersHi = 30
	stolenSpanLo   = 10 * time.Second // ... within 10 s to 60 s
	stolenSpanHi   = 60 * time.Second
	customers      = 100_000
)

// produceOrders produces the fraud job's orders into the orders topic,
// keyed by card, o.Rate a second on average, as they happen: an order's
// event time (ts) and arrival are the moment it is sent, a little before,
// and the late ones' event time is earlier (lateShare, tooLateShare). A
// stolen card starts paying every stolenEvery on average, 5 to 30 times in
// 10 to 60 seconds, which the job's alerts catch. It returns how many it
// produced.
func produceOrders(ctx context.Context, addr string, o liveOrders, log io.Writer) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(10*time.Millisecond))
	if err != nil {
		fmt.Fprintln(log, "weir kafka:", err)
		return 0
	}
	defer cl.Close()
	r := rand.New(rand.NewPCG(o.Seed, 7))
	type stolen struct {
		card, user int64
		left       int
		gap        time.Duration
		next       time.Time
	}
	var cards []*stolen
	now := time.Now()
	nextOrder, nextStolen := now, now.Add(time.Duration(r.ExpFloat64()*float64(stolenEvery)))
	gap := float64(time.Second) / o.Rate
	n, fakes := 0, int64(customers)
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	var arena fastjson.Arena
	for o.Limit == 0 || n < o.Limit {
		// The next thing due: an ordinary order, a stolen card's, or a
		// card that starts being used.
		due, which := nextOrder, -1
		for i, c := range cards {
			if c.next.Before(due) {
				due, which = c.next, i
			}
		}
		if nextStolen.Before(due) {
			due, which = nextStolen, -2
		}
		if o.Limit == 0 {
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
					return n
				case <-time.After(wait):
				}
			}
		}
		if ctx.Err() != nil {
			return n
		}
		var card, user, cents int64
		switch which {
		case -2:
			k := stolenOrdersLo + r.IntN(stolenOrdersHi-stolenOrdersLo+1)
			span := stolenSpanLo + time.Duration(r.Int64N(int64(stolenSpanHi-stolenSpanLo)))
			cards = append(cards, &stolen{card: 2 * int64(r.IntN(customers)), user: fakes, left: k, gap: span / time.Duration(k), next: due})
			fakes++
			nextStolen = due.Add(time.Duration(r.ExpFloat64() * float64(stolenEvery)))
			continue
		case -1:
			// Regulars order more often; some have a second card.
			f := r.Float64()
			user = int64(customers * f * math.Sqrt(f))
			card = 2 * user
			if user%4 == 0 && r.Float64() < 0.3 {
				card++
			}
			cents = 350 + 10*r.Int64N(116) // 3.50 to 15.00
			nextOrder = due.Add(time.Duration(r.ExpFloat64() * gap))
		default:
			c := cards[which]
			card, user, cents = c.card, c.user, 800+10*r.Int64N(220) // dearer
			if c.left--; c.left == 0 {
				cards = append(cards[:which], cards[which+1:]...)
			} else {
				c.next = due.Add(c.gap/2 + time.Duration(r.Int64N(int64(c.gap))))
			}
		}
		sent := time.Now()
		if o.Limit > 0 {
			sent = due // as fast as it goes: the times it would have had
		}
		ts := sent.Add(-time.Duration(r.Int64N(int64(orderSendSlop))))
		switch x := r.Float64(); {
		case x < tooLateShare:
			ts = sent.Add(-tooLateMin - time.Duration(r.Int64N(int64(tooLateMax-tooLateMin))))
		case x < tooLateShare+lateShare:
			ts = sent.Add(-lateMin - time.Duration(r.Int64N(int64(lateMax-lateMin))))
		}
		n++
		arena.Reset()
		v := arena.NewObject()
		v.Set("order_id", arena.NewString(fmt.Sprintf("o%09d", n)))
		v.Set("card", arena.NewString(fmt.Sprintf("card_%08d", card)))
		v.Set("user_id", arena.NewString(fmt.Sprintf("u%07d", user)))
		v.Set("amount", arena.NewNumberString(fmt.Sprintf("%d.%02d", cents/100, cents%100)))
		v.Set("ts", arena.NewString(ts.UTC().Format("2006-01-02T15:04:05.000Z")))
		v.Set("arrival", arena.NewString(sent.UTC().Format("2006-01-02T15:04:05.000Z")))
		rec := orderRecord(v, v.MarshalTo(nil))
		switch {
		case o.Avro != nil:
			rec.Value, err = o.Avro.encode(v)
		case o.Protobuf != nil:
			rec.Value, err = o.Protobuf.encode(v)
		case o.JSONSchema != nil:
			rec.Value, err = o.JSONSchema.encode(v)
		}
		if err != nil {
			fmt.Fprintln(log, "weir kafka:", err)
			return n
		}
		cl.Produce(ctx, rec, nil)
		select {
		case <-report.C:
			fmt.Fprintf(log, "weir kafka: %d orders produced\n", n)
		default:
		}
	}
	cl.Flush(ctx)
	return n
}

// orderRecord is the record of one order line, keyed by its card. The
// record owns its bytes: the producer keeps them until the broker has them,
// while the parser and the line reader reuse theirs for the next line.
func orderRecord(v *fastjson.Value, line []byte) *kgo.Record {
	return &kgo.Record{Topic: "orders", Key: bytes.Clone(v.GetStringBytes("card")), Value: bytes.Clone(line)}
}

// compactAlerts makes the alerts topic compacted, as a topic of panes that
// are revised should be: its consumers read it as a table.
func compactAlerts(addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	policy := "compact"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: &policy}}, "alerts")
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = rs.On("alerts", nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return fmt.Errorf("cannot make the alerts topic compacted: %w", err)
	}
	return nil
}

// printAlerts prints what the job commits to the alerts topic: a JSON
// pane as it is, an Avro one (a job's format: avro output, its schema in
// the registry at registry, when there is one) decoded to JSON by weir's
// own avro format.
func printAlerts(ctx context.Context, addr, registry string, out io.Writer) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("alerts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return
	}
	defer cl.Close()
	var dec plan.Decoder
	if k, ok := plan.LookupFormat("avro"); ok && registry != "" {
		if cfg, err := k.Parse(plan.Values{}, &plan.Registry{URL: registry}); err == nil {
			dec, _ = cfg.New(plan.Env{}, "alerts")
		}
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := r.Value
			if dec != nil && len(v) > 0 && v[0] == 0 {
				j, err := dec.AppendJSON(nil, v)
				if err != nil {
					fmt.Fprintf(out, "alert: %x (%v)\n", v, err)
					return
				}
				v = j
			}
			fmt.Fprintf(out, "alert: %s\n", v)
		})
	}
}
