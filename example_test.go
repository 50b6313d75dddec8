package weir_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/process"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Order is a payment from the orders topic of seed 000.
type Order struct {
	Card    string
	Amount  float64
	At      mtime.Time // when it was paid: event time
	Arrival mtime.Time // when it reached the job: processing time
}

func at(s string) mtime.Time {
	t, err := mtime.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return t
}

// The fraud job of seed 000: orders per card per minute, by event time, with
// a 2 s watermark delay; a late payment goes to a side output for the
// nightly report instead of disappearing.
func Example_fraud() {
	orders := []Order{
		{"card-1", 12.5, at("2026-09-07T12:00:01Z"), at("2026-09-07T12:00:01.2Z")},
		{"card-1", 30, at("2026-09-07T12:00:20Z"), at("2026-09-07T12:00:20.1Z")},
		{"card-2", 8, at("2026-09-07T12:00:30Z"), at("2026-09-07T12:00:30.3Z")},
		{"card-1", 99, at("2026-09-07T12:00:59Z"), at("2026-09-07T12:00:59.4Z")},
		{"card-1", 5, at("2026-09-07T12:01:03Z"), at("2026-09-07T12:01:03.1Z")}, // W passes 12:01
		{"card-2", 7, at("2026-09-07T12:00:50Z"), at("2026-09-07T12:01:04Z")},   // too late
		{"card-2", 3, at("2026-09-07T12:01:30Z"), at("2026-09-07T12:01:30.2Z")},
	}
	p := weir.NewPipeline()
	src := weir.FromSeq(p, func(yield func(Order, mtime.Time) bool) {
		for _, o := range orders {
			if !yield(o, o.Arrival) {
				return
			}
		}
	})
	stamped := weir.WithTimestamps(src, func(o Order) mtime.Time { return o.At },
		watermark.BoundedOutOfOrderness(2*time.Second).WithInterval(0))
	byCard := weir.KeyBy(stamped, func(o Order) string { return o.Card })
	counts, late := weir.Aggregate(
		weir.Window(byCard, window.NewStrategy(window.TumblingWindows(time.Minute))),
		aggregate.Count[Order]())
	weir.Sink(counts, func(pn weir.Pane[string, int64]) error {
		fmt.Printf("%s %s orders=%d %s final=%v\n", pn.Key, pn.Window.Start.Time().Format("15:04"), pn.Value, pn.Timing, pn.Final)
		return nil
	})
	weir.Sink(late, func(l weir.Late[string, Order]) error {
		fmt.Printf("late: %s paid %.2f at %s\n", l.Key, l.Value.Amount, l.Timestamp.Time().Format("15:04:05"))
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// card-1 12:00 orders=3 ON_TIME final=true
	// card-2 12:00 orders=1 ON_TIME final=true
	// late: card-2 paid 7.00 at 12:00:50
	// card-1 12:01 orders=1 ON_TIME final=true
	// card-2 12:01 orders=1 ON_TIME final=true
}

// Allowed lateness and accumulation: a late order within the lateness is
// added and the window fires again with the corrected total; when the
// lateness runs out the window closes with a final pane.
func ExampleAggregate_allowedLateness() {
	p := weir.NewPipeline()
	src := weir.FromSeq(p, func(yield func(Order, mtime.Time) bool) {
		yield(Order{"c", 10, at("2026-09-07T12:00:10Z"), 0}, at("2026-09-07T12:00:11Z"))
		yield(Order{"c", 20, at("2026-09-07T12:01:05Z"), 0}, at("2026-09-07T12:01:06Z"))
		yield(Order{"c", 5, at("2026-09-07T12:00:40Z"), 0}, at("2026-09-07T12:01:30Z")) // late, within 5 min
	})
	stamped := weir.WithTimestamps(src, func(o Order) mtime.Time { return o.At },
		watermark.BoundedOutOfOrderness(0).WithInterval(0))
	spent, _ := weir.Aggregate(
		weir.Window(weir.KeyBy(stamped, func(o Order) string { return o.Card }),
			window.NewStrategy(window.TumblingWindows(time.Minute)).WithLateness(5*time.Minute)),
		aggregate.Sum(func(o Order) float64 { return o.Amount }))
	weir.Sink(spent, func(pn weir.Pane[string, float64]) error {
		fmt.Printf("%s #%d %s spent=%g final=%v\n", pn.Window.Start.Time().Format("15:04"), pn.Revision, pn.Timing, pn.Value, pn.Final)
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 12:00 #1 ON_TIME spent=10 final=false
	// 12:00 #2 LATE spent=15 final=false
	// 12:01 #1 ON_TIME spent=20 final=true
	// 12:00 #3 LATE spent=15 final=true
}

// A process-window function sees all of a window's elements.
func ExampleProcess() {
	p := weir.NewPipeline()
	src := weir.FromSeq(p, func(yield func(Order, mtime.Time) bool) {
		for i, amt := range []float64{3, 9, 4} {
			yield(Order{"c", amt, at("2026-09-07T12:00:00Z") + mtime.Time(i*1000), 0}, 0)
		}
	})
	stamped := weir.WithTimestamps(src, func(o Order) mtime.Time { return o.At }, watermark.BoundedOutOfOrderness(0))
	biggest, _ := weir.Process(
		weir.Window(weir.KeyBy(stamped, func(o Order) string { return o.Card }),
			window.NewStrategy(window.TumblingWindows(time.Minute))),
		func(card string, w window.Window, orders []Order) string {
			best := orders[0]
			for _, o := range orders {
				if o.Amount > best.Amount {
					best = o
				}
			}
			return fmt.Sprintf("%s: %d orders, biggest %g at %s", card, len(orders), best.Amount, best.At.Time().Format("15:04:05"))
		})
	weir.Sink(biggest, func(pn weir.Pane[string, string]) error { fmt.Println(pn.Value); return nil })
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// c: 3 orders, biggest 9 at 12:00:01
}

// memoryLines is a source of your own: JSON lines held in memory, as one
// partition whose position is the index of the next line. A checkpoint stores
// that position, and a restore opens the source at it.
type memoryLines struct {
	lines []string
	next  int
}

func (s *memoryLines) Open(ctx context.Context, position []byte) error {
	if position != nil {
		s.next = int(binary.BigEndian.Uint64(position))
	}
	return nil
}

func (s *memoryLines) Read(ctx context.Context, b *connector.Batch) error {
	if s.next == 0 {
		b.Partitions = []connector.Partition{{Name: "memory"}}
	}
	for ; s.next < len(s.lines) && len(b.Records) < 2; s.next++ {
		b.Records = append(b.Records, connector.Record{Value: []byte(s.lines[s.next]), Offset: int64(s.next + 1), Arrival: mtime.Time(s.next)})
	}
	b.Position = binary.BigEndian.AppendUint64(nil, uint64(s.next))
	if s.next == len(s.lines) {
		return io.EOF
	}
	return nil
}

func (s *memoryLines) Close() error { return nil }

// alerts is a sink of your own: it prints the panes it is given. Printing
// cannot be taken back, so it is at-least-once: a pipeline with checkpoints
// accepts it only with weir.Delivery(connector.AtLeastOnce).
type alerts struct{}

func (alerts) Open(context.Context, connector.Resume) error { return nil }
func (alerts) Write(_ context.Context, panes []weir.Pane[string, int64]) error {
	for _, p := range panes {
		fmt.Printf("%s: %d orders in the minute from %s (%s)\n", p.Key, p.Value, p.Window.Start.Time().Format("15:04"), p.Timing)
	}
	return nil
}
func (alerts) Flush(context.Context) error                       { return nil }
func (alerts) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }
func (alerts) Commit(context.Context, uint64, []byte) error      { return nil }
func (alerts) Guarantee() connector.Guarantee                    { return connector.AtLeastOnce }
func (alerts) Close() error                                      { return nil }

// A source and a sink of your own, against the public interfaces of package
// connector: records are decoded into elements (a line that is not an order
// goes to the rejected stream), counted per card and minute, and printed.
func Example_ownSourceAndSink() {
	type order struct {
		Card string     `json:"card"`
		At   mtime.Time `json:"at"`
	}
	src := &memoryLines{lines: []string{
		`{"card":"c1","at":1788782400000}`,
		`{"card":"c1","at":1788782410000}`,
		`not an order`,
		`{"card":"c2","at":1788782420000}`,
		`{"card":"c1","at":1788782470000}`,
	}}
	p := weir.NewPipeline()
	orders, rejected := weir.Read(p, "orders", src, func(r connector.Record) (order, error) {
		var o order
		err := json.Unmarshal(r.Value, &o)
		return o, err
	})
	weir.Sink(rejected, func(r weir.Rejected) error {
		fmt.Printf("line %d rejected: %v\n", r.Record.Offset, r.Err)
		return nil
	})
	stamped := weir.WithTimestamps(orders, func(o order) mtime.Time { return o.At }, watermark.BoundedOutOfOrderness(0))
	counts, _ := weir.Aggregate(
		weir.Window(weir.KeyBy(stamped, func(o order) string { return o.Card }), window.NewStrategy(window.TumblingWindows(time.Minute))),
		aggregate.Count[order]())
	weir.SinkTo(counts, "alerts", alerts{})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// line 3 rejected: invalid character 'o' in literal null (expecting 'u')
	// c1: 2 orders in the minute from 12:00 (ON_TIME)
	// c2: 1 orders in the minute from 12:00 (ON_TIME)
	// c1: 1 orders in the minute from 12:01 (ON_TIME)
}

// Every part of a checkpointed pipeline named: a restore finds each one's
// state by its name, so a source, an aggregation or a sink can be added
// ahead of another later. A part without a name would be checkpointed by
// its position, and the log would warn of it when the pipeline starts.
func ExampleNamed() {
	dir, _ := os.MkdirTemp("", "weir-example")
	defer os.RemoveAll(dir)
	orders := []Order{
		{"card-1", 12.5, at("2026-09-07T12:00:01Z"), at("2026-09-07T12:00:01Z")},
		{"card-1", 30, at("2026-09-07T12:00:20Z"), at("2026-09-07T12:00:20Z")},
		{"card-2", 8, at("2026-09-07T12:00:30Z"), at("2026-09-07T12:00:30Z")},
	}
	p := weir.NewPipeline(weir.Checkpoints(dir, time.Minute), weir.Delivery(connector.AtLeastOnce), weir.Log(os.Stdout))
	src := weir.FromSlice(p, orders, weir.Named("orders"))
	stamped := weir.WithTimestamps(src, func(o Order) mtime.Time { return o.At }, watermark.BoundedOutOfOrderness(2*time.Second))
	spent, _ := weir.Aggregate(
		weir.Window(weir.KeyBy(stamped, func(o Order) string { return o.Card }), window.NewStrategy(window.TumblingWindows(time.Minute))),
		aggregate.Sum(func(o Order) float64 { return o.Amount }), weir.Named("spent"))
	weir.Sink(spent, func(pn weir.Pane[string, float64]) error {
		fmt.Printf("%s spent %.2f in the minute from %s\n", pn.Key, pn.Value, pn.Window.Start.Time().Format("15:04"))
		return nil
	}, weir.Named("print"))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// card-1 spent 42.50 in the minute from 12:00
	// card-2 spent 8.00 in the minute from 12:00
}

// Two aggregations of one read: per-card counts per minute and the total
// spent per hour, from the same stream, each named so that a restore finds
// its state (a job file's aggregations).
func Example_severalAggregations() {
	orders := []Order{
		{"card-1", 12.5, at("2026-09-07T12:00:01Z"), at("2026-09-07T12:00:01Z")},
		{"card-1", 30, at("2026-09-07T12:00:20Z"), at("2026-09-07T12:00:20Z")},
		{"card-2", 8, at("2026-09-07T12:01:30Z"), at("2026-09-07T12:01:30Z")},
	}
	p := weir.NewPipeline()
	src := weir.FromSlice(p, orders, weir.Named("orders"))
	stamped := weir.WithTimestamps(src, func(o Order) mtime.Time { return o.At }, watermark.BoundedOutOfOrderness(2*time.Second))
	perCard, _ := weir.Aggregate(
		weir.Window(weir.KeyBy(stamped, func(o Order) string { return o.Card }), window.NewStrategy(window.TumblingWindows(time.Minute))),
		aggregate.Count[Order](), weir.Named("per_card"))
	hourly, _ := weir.Aggregate(
		weir.Window(weir.KeyBy(stamped, func(Order) string { return "all" }), window.NewStrategy(window.TumblingWindows(time.Hour))),
		aggregate.Sum(func(o Order) float64 { return o.Amount }), weir.Named("hourly"))
	weir.Sink(perCard, func(pn weir.Pane[string, int64]) error {
		fmt.Printf("%s: %d orders in the minute from %s\n", pn.Key, pn.Value, pn.Window.Start.Time().Format("15:04"))
		return nil
	}, weir.Named("cards"))
	weir.Sink(hourly, func(pn weir.Pane[string, float64]) error {
		fmt.Printf("%.2f spent in the hour from %s\n", pn.Value, pn.Window.Start.Time().Format("15:04"))
		return nil
	}, weir.Named("hours"))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Unordered output:
	// card-1: 2 orders in the minute from 12:00
	// card-2: 1 orders in the minute from 12:01
	// 50.50 spent in the hour from 12:00
}

// Event is an order or a payment of one, from a shop's stream.
type Event struct {
	Kind  string // "order" or "payment"
	Order string
	At    mtime.Time
}

// The orders without a payment within 10 minutes: an anti join of the
// orders with the payments, by order, emitted once the watermark passes
// each order's time plus 10 minutes.
func ExampleIntervalJoin() {
	events := []Event{
		{"order", "A-1", at("2026-09-07T12:00:00Z")},
		{"order", "A-2", at("2026-09-07T12:01:00Z")},
		{"payment", "A-1", at("2026-09-07T12:04:00Z")},
		{"order", "A-3", at("2026-09-07T12:05:00Z")},
		{"payment", "A-2", at("2026-09-07T12:12:00Z")}, // 11 minutes: too late
		{"payment", "A-3", at("2026-09-07T12:14:00Z")},
		{"order", "A-4", at("2026-09-07T12:30:00Z")},
	}
	p := weir.NewPipeline()
	all := weir.FromSlice(p, events)
	side := func(kind string) weir.Keyed[string, Event] {
		s := weir.Filter(all, func(e Event) bool { return e.Kind == kind })
		stamped := weir.WithTimestamps(s, func(e Event) mtime.Time { return e.At },
			watermark.BoundedOutOfOrderness(time.Minute).WithInterval(0))
		return weir.KeyBy(stamped, func(e Event) string { return e.Order })
	}
	unpaid, late := weir.IntervalJoin(side("order"), side("payment"), 0, 10*time.Minute, weir.Anti())
	weir.Sink(unpaid, func(j weir.Joined[string, Event, Event]) error {
		fmt.Printf("%s ordered at %s: no payment within 10 minutes\n", j.Key, j.LeftTime)
		return nil
	})
	weir.Sink(late, func(l weir.JoinLate[string, Event, Event]) error {
		fmt.Printf("%s: %s\n", l.Key, l.Reason)
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// A-2 ordered at 2026-09-07T12:01:00.000Z: no payment within 10 minutes
	// A-4 ordered at 2026-09-07T12:30:00.000Z: no payment within 10 minutes
}

// CardEvent is an order paid by card, or a change of the card's limit.
type CardEvent struct {
	Kind   string // "order" or "limit"
	Card   string
	Amount float64 // the order's amount, or the card's new limit
	At     mtime.Time
}

// Each order against the card's limit as it was when the order was
// placed: a temporal join of the orders with the limits' changelog. The
// limit raised at 12:05 comes after the order of 12:06 has arrived, but
// the order waits for the watermark to pass its time, and joins it.
func ExampleTemporalJoin() {
	events := []CardEvent{
		{"limit", "c1", 100, at("2026-09-07T12:00:00Z")},
		{"order", "c1", 80, at("2026-09-07T12:01:00Z")},
		{"order", "c1", 150, at("2026-09-07T12:06:00Z")},
		{"limit", "c1", 200, at("2026-09-07T12:05:00Z")},
		{"order", "c2", 10, at("2026-09-07T12:07:00Z")}, // c2 has no limit
		{"order", "c1", 180, at("2026-09-07T12:09:00Z")},
		{"limit", "c1", 50, at("2026-09-07T12:10:00Z")},
		{"order", "c1", 60, at("2026-09-07T12:20:00Z")},
	}
	p := weir.NewPipeline()
	all := weir.FromSlice(p, events)
	side := func(kind string) weir.Keyed[string, CardEvent] {
		s := weir.Filter(all, func(e CardEvent) bool { return e.Kind == kind })
		stamped := weir.WithTimestamps(s, func(e CardEvent) mtime.Time { return e.At },
			watermark.BoundedOutOfOrderness(2*time.Minute).WithInterval(0))
		return weir.KeyBy(stamped, func(e CardEvent) string { return e.Card })
	}
	checked, _ := weir.TemporalJoin(side("order"), side("limit"), weir.LeftOuter())
	weir.Sink(checked, func(j weir.Joined[string, CardEvent, CardEvent]) error {
		switch {
		case !j.Matched:
			fmt.Printf("%s %s: %.0f, no limit known\n", j.Key, j.LeftTime, j.Left.Amount)
		case j.Left.Amount > j.Right.Amount:
			fmt.Printf("%s %s: %.0f over the limit of %.0f set at %s\n", j.Key, j.LeftTime, j.Left.Amount, j.Right.Amount, j.RightTime)
		default:
			fmt.Printf("%s %s: %.0f within the limit of %.0f\n", j.Key, j.LeftTime, j.Left.Amount, j.Right.Amount)
		}
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// c1 2026-09-07T12:01:00.000Z: 80 within the limit of 100
	// c1 2026-09-07T12:06:00.000Z: 150 within the limit of 200
	// c2 2026-09-07T12:07:00.000Z: 10, no limit known
	// c1 2026-09-07T12:09:00.000Z: 180 within the limit of 200
	// c1 2026-09-07T12:20:00.000Z: 60 over the limit of 50 set at 2026-09-07T12:10:00.000Z
}

// A rule no window covers, with state and a timer per card (the fraud
// detector of Flink's DataStream tutorial, in event time): an order under
// 1.00 followed within a minute by one over 500.00 is an alert; the small
// order's flag clears a minute after it. Orders behind the watermark go to
// a side output.
func ExampleKeyedProcess() {
	orders := []CardEvent{
		{"order", "c1", 0.50, at("2026-09-07T12:00:00Z")},
		{"order", "c2", 0.10, at("2026-09-07T12:00:10Z")},
		{"order", "c1", 700, at("2026-09-07T12:00:30Z")}, // 30 s after c1's small one
		{"order", "c2", 20, at("2026-09-07T12:00:40Z")},
		{"order", "c2", 900, at("2026-09-07T12:01:30Z")},  // 80 s after c2's small one
		{"order", "c1", 0.20, at("2026-09-07T12:00:05Z")}, // behind the watermark
	}
	small := process.NewValue[mtime.Time]("small-order")
	late := process.NewOutput[CardEvent]("late")
	detector := process.Func[string, CardEvent, string]{
		State: []process.State{small},
		Sides: []process.Side{late},
		Element: func(c *process.Context[string, string], o CardEvent) error {
			if o.At <= c.Watermark() {
				late.Emit(c, o)
				return nil
			}
			if at, ok := small.Get(c); ok && o.Amount > 500 && o.At-at <= 60_000 {
				c.Emit(fmt.Sprintf("alert %s: %.0f at %s, %s after a small order", c.Key(), o.Amount, o.At, time.Duration(o.At-at)*time.Millisecond))
				small.Clear(c)
				c.DeleteEventTimer(at + 60_000)
			}
			if o.Amount < 1 {
				small.Set(c, o.At)
				c.EventTimer(o.At + 60_000)
			}
			return nil
		},
		Timer: func(c *process.Context[string, string], t process.Timer) error {
			small.Clear(c)
			c.Emit(fmt.Sprintf("%s: small order flag cleared at %s", c.Key(), t.Time))
			return nil
		},
	}
	p := weir.NewPipeline()
	stamped := weir.WithTimestamps(weir.FromSlice(p, orders), func(e CardEvent) mtime.Time { return e.At },
		watermark.BoundedOutOfOrderness(10*time.Second).WithInterval(0))
	alerts := weir.KeyedProcess(weir.KeyBy(stamped, func(e CardEvent) string { return e.Card }), detector)
	weir.Sink(alerts, func(s string) error { fmt.Println(s); return nil })
	weir.Sink(weir.SideOutput(alerts, late), func(e CardEvent) error {
		fmt.Printf("late: %s %.2f at %s\n", e.Card, e.Amount, e.At)
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// alert c1: 700 at 2026-09-07T12:00:30.000Z, 30s after a small order
	// c2: small order flag cleared at 2026-09-07T12:01:10.000Z
	// late: c1 0.20 at 2026-09-07T12:00:05.000Z
}

// Each order with its card's limit as the limits table has it when the
// order passes (a lookup join, at processing time): here the table is a
// function, as connector/table's SQLiteLookup and PostgresLookup are for
// a database. The cache serves c1's second order.
func ExampleLookupJoin() {
	limits := map[string]float64{"c1": 100, "c2": 20}
	table := connector.LookupFunc[string, float64](func(_ context.Context, cards []string) (map[string]float64, error) {
		rows := map[string]float64{}
		for _, c := range cards {
			if l, ok := limits[c]; ok {
				rows[c] = l
			}
		}
		return rows, nil
	})
	p := weir.NewPipeline()
	orders := weir.FromSlice(p, []CardEvent{
		{"order", "c1", 80, at("2026-09-07T12:01:00Z")},
		{"order", "c2", 30, at("2026-09-07T12:02:00Z")},
		{"order", "c3", 10, at("2026-09-07T12:03:00Z")},
		{"order", "c1", 150, at("2026-09-07T12:04:00Z")},
	})
	looked, failed := weir.LookupJoin(orders, func(o CardEvent) string { return o.Card }, table,
		weir.LookupCache(10_000, time.Minute), weir.LookupBatch(1, 1))
	weir.Sink(looked, func(l weir.Looked[string, CardEvent, float64]) error {
		switch {
		case !l.Found:
			fmt.Printf("%s %.0f: no limit\n", l.Key, l.Value.Amount)
		case l.Value.Amount > l.Row:
			fmt.Printf("%s %.0f: over the limit of %.0f (cached: %v)\n", l.Key, l.Value.Amount, l.Row, l.Cached)
		default:
			fmt.Printf("%s %.0f: within the limit of %.0f (cached: %v)\n", l.Key, l.Value.Amount, l.Row, l.Cached)
		}
		return nil
	})
	weir.Sink(failed, func(f weir.LookupFailed[string, CardEvent]) error {
		fmt.Printf("%s: %s: %s\n", f.Key, f.Reason, f.Err)
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// c1 80: within the limit of 100 (cached: false)
	// c2 30: over the limit of 20 (cached: false)
	// c3 10: no limit
	// c1 150: over the limit of 100 (cached: true)
}

// Person and Auction are Nexmark's: a person who joined, an auction a
// seller opened.
type (
	Person struct {
		ID, Name string
		At       mtime.Time
	}
	Auction struct {
		Seller string
		At     mtime.Time
	}
)

// The persons who opened an auction in the 10 seconds in which they joined
// (Nexmark q8): a co-group of the persons and the auctions by person, per
// tumbling window, each input with an aggregate of its own.
func ExampleCoGroup() {
	p := weir.NewPipeline()
	wm := watermark.BoundedOutOfOrderness(time.Second).WithInterval(0)
	persons := weir.KeyBy(weir.WithTimestamps(weir.FromSlice(p, []Person{
		{"p1", "Ada", at("2026-09-07T12:00:01Z")},
		{"p2", "Bo", at("2026-09-07T12:00:03Z")},
		{"p3", "Cy", at("2026-09-07T12:00:12Z")},
	}), func(x Person) mtime.Time { return x.At }, wm), func(x Person) string { return x.ID })
	auctions := weir.KeyBy(weir.WithTimestamps(weir.FromSlice(p, []Auction{
		{"p1", at("2026-09-07T12:00:04Z")},
		{"p3", at("2026-09-07T12:00:09Z")}, // before p3 joined
		{"p1", at("2026-09-07T12:00:05Z")},
		{"p3", at("2026-09-07T12:00:15Z")},
	}), func(x Auction) mtime.Time { return x.At }, wm), func(x Auction) string { return x.Seller })
	name := aggregate.Of(func() string { return "" }, func(_ string, x Person) string { return x.Name },
		func(a, b string) string { return max(a, b) }, func(a string) string { return a })
	panes, _ := weir.CoGroup(persons, auctions, window.NewStrategy(window.TumblingWindows(10*time.Second)), name, aggregate.Count[Auction]())
	weir.Sink(panes, func(pn weir.Pane[string, weir.CoGrouped[string, int64]]) error {
		if pn.Value.Left != "" && pn.Value.Right > 0 {
			fmt.Printf("%s (%s) joined and opened %d auctions in [%s, %s)\n", pn.Value.Left, pn.Key, pn.Value.Right, pn.Window.Start, pn.Window.End)
		}
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Ada (p1) joined and opened 2 auctions in [2026-09-07T12:00:00.000Z, 2026-09-07T12:00:10.000Z)
	// Cy (p3) joined and opened 1 auctions in [2026-09-07T12:00:10.000Z, 2026-09-07T12:00:20.000Z)
}

// Click and Impression are an ad's: a click on it, an impression of it.
type (
	Click struct {
		ID, Ad string
		At     mtime.Time
	}
	Impression struct {
		ID, Ad string
		At     mtime.Time
	}
)

// Each click with the impressions of its ad in the same minute: a window
// join of the clicks and the impressions, by ad, per tumbling minute.
func ExampleWindowJoin() {
	p := weir.NewPipeline()
	wm := watermark.BoundedOutOfOrderness(10 * time.Second).WithInterval(0)
	clicks := weir.KeyBy(weir.WithTimestamps(weir.FromSlice(p, []Click{
		{"c1", "a1", at("2026-09-07T12:00:45Z")},
		{"c2", "a2", at("2026-09-07T12:01:05Z")},
	}), func(c Click) mtime.Time { return c.At }, wm), func(c Click) string { return c.Ad })
	impressions := weir.KeyBy(weir.WithTimestamps(weir.FromSlice(p, []Impression{
		{"i1", "a1", at("2026-09-07T12:00:05Z")},
		{"i2", "a2", at("2026-09-07T12:00:50Z")}, // the minute before c2's
		{"i3", "a1", at("2026-09-07T12:00:40Z")},
	}), func(i Impression) mtime.Time { return i.At }, wm), func(i Impression) string { return i.Ad })
	joined, _ := weir.WindowJoin(clicks, impressions, window.NewStrategy(window.TumblingWindows(time.Minute)))
	weir.Sink(joined, func(j weir.WindowJoined[string, Click, Impression]) error {
		fmt.Printf("%s: click %s, impression %s in [%s, %s)\n", j.Key, j.Left.ID, j.Right.ID, j.Window.Start, j.Window.End)
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// a1: click c1, impression i1 in [2026-09-07T12:00:00.000Z, 2026-09-07T12:01:00.000Z)
	// a1: click c1, impression i3 in [2026-09-07T12:00:00.000Z, 2026-09-07T12:01:00.000Z)
}
