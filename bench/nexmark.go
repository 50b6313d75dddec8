package bench

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// The Nexmark queries, as the nexmark repository defines them (its Flink
// SQL), on events from gen.Nexmark generated in the same process: 10,000
// events per second of event time, watermark 4 s of bounded out-of-orderness
// (the repository's), arrival by the wall clock. Throughput counts every
// event of the stream (persons, auctions and bids), as Nexmark does.
func init() {
	for _, q := range []struct {
		name, about string
		run         func(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut)
		// The query's hand-written floor (nexmark_floor.go), if it has one.
		floor      func(d time.Duration, events int64, out *nexOut) int64
		floorAbout string
	}{
		{"q0", "pass-through of bids", q0, nil, ""},
		{"q1", "currency conversion of bid prices", q1, nil, ""},
		{"q2", "bids on auctions whose id is a multiple of 123", q2, nil, ""},
		{"q3", "local item suggestion: the auctions of category 10 by sellers in OR, ID or CA, each with its seller's name (weir.TemporalJoin of the auctions with the persons as a table)", q3,
			floorQ3, "a map of the persons of OR, ID and CA, each auction of category 10 looked up in it"},
		{"q5", "hot items: bids per auction in sliding windows of 10 s every 2 s, the auctions with the most bids", q5,
			floorQ5, "a map of bids per auction per 2 s slice, 5 slices summed when a window closes"},
		{"q7", "highest bid of each tumbling window of 10 s", q7,
			floorQ7, "the window's highest price and its bids in two variables"},
		{"q8", "new users: persons who opened an auction in the tumbling window of 10 s in which they joined", q8,
			floorQ8, "one map of person -> (joined, opened an auction) per window"},
		{"q8-cogroup", "q8 as a co-group of the persons and the auctions by person (weir.CoGroup), each input with a type of its own (a person's id and name, an auction's seller, as Nexmark's SQL selects them) and an aggregate of its own", q8CoGroup, nil, ""},
		{"q11", "user sessions: bids per bidder per session (gap 10 s)", q11,
			floorQ11, "one map of bidder -> open session, ended sessions swept every second of event time"},
	} {
		register(Bench{
			Name: "nexmark-" + q.name, Group: "nexmark", About: "Nexmark " + q.name + ": " + q.about,
			Run: func(d time.Duration) (int64, map[string]float64, string, error) {
				var out nexOut
				n, err := nexmark(d, 0, q.run, &out)
				return n, map[string]float64{"results": float64(out.n)}, "", err
			},
		})
		if q.floor != nil {
			register(Bench{
				Name: "nexmark-" + q.name + "-floor", Group: "nexmark",
				About: "the floor for nexmark-" + q.name + ", a hand-written loop over the same events: " + q.floorAbout,
				Run: func(d time.Duration) (int64, map[string]float64, string, error) {
					var out nexOut
					n := q.floor(d, 0, &out)
					return n, map[string]float64{"results": float64(out.n)}, "", nil
				},
			})
		}
	}
	// The generator takes most of the time of the queries above (its
	// goroutine a whole core, q8's pipeline about a sixth of one), so two
	// of them compare the generator with itself; and two benchmarks run
	// minutes apart see the machine at different speeds. q8 over one
	// input and as a co-group are compared again, by turns, on events
	// generated ahead.
	register(Bench{
		Name: "nexmark-q8-replay", Group: "nexmark",
		About: fmt.Sprintf("nexmark-q8 and nexmark-q8-cogroup run by turns on %d events generated ahead, outside the measured time, and read from memory, for the benchmark's duration: the two pipelines' own costs, side by side (its events are both queries')", replayEvents),
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			xs := nexEvents(replayEvents)
			return func(d time.Duration) (int64, map[string]float64, string, error) {
				queries := []struct {
					name string
					run  func(*weir.Pipeline, weir.Stream[nexEvent], *nexOut)
				}{{"q8", q8}, {"q8-cogroup", q8CoGroup}}
				var took [2]time.Duration
				var cpu [2]float64
				var events, results int64
				start := time.Now()
				runs := 0
				for ; runs == 0 || time.Since(start) < d; runs++ {
					for i, q := range queries {
						var out nexOut
						t, c := time.Now(), cpuTime()
						if err := nexmarkOver(xs, q.run, &out); err != nil {
							return events, nil, "", err
						}
						took[i] += time.Since(t)
						cpu[i] += cpuTime() - c
						if (runs > 0 || i > 0) && out.n != results {
							return events, nil, "", fmt.Errorf("run %d of %s made %d results, the first run of q8 %d", runs+1, q.name, out.n, results)
						}
						events, results = events+int64(len(xs)), out.n
					}
				}
				per := float64(runs) * float64(len(xs))
				return events, map[string]float64{
					"results":                float64(results),
					"q8_events_per_sec":      per / took[0].Seconds(),
					"cogroup_events_per_sec": per / took[1].Seconds(),
					"cogroup_time_ratio":     took[1].Seconds() / took[0].Seconds(),
					"cogroup_cpu_ratio":      cpu[1] / cpu[0],
				}, fmt.Sprintf("%d runs each", runs), nil
			}, func() {}, nil
		},
	})
}

// replayEvents is how many events the replayed queries read a run.
const replayEvents = 1_000_000

// nexEvents generates the first n events of the stream.
func nexEvents(n int64) []nexEvent {
	g := nexGen(n)
	xs := make([]nexEvent, 0, n)
	var e gen.NexmarkEvent
	for g.Next(&e) {
		xs = append(xs, toNexEvent(&e))
	}
	return xs
}

// nexmarkOver runs query on the events xs, arriving now by the wall clock.
func nexmarkOver(xs []nexEvent, query func(*weir.Pipeline, weir.Stream[nexEvent], *nexOut), out *nexOut) error {
	p := weir.NewPipeline()
	return runQuery(p, weir.FromSlice(p, xs), query, out)
}

// runQuery runs query on the stream src of p.
func runQuery(p *weir.Pipeline, src weir.Stream[nexEvent], query func(*weir.Pipeline, weir.Stream[nexEvent], *nexOut), out *nexOut) error {
	query(p, src, out)
	err := p.Run(context.Background())
	if out.end != nil {
		out.end()
	}
	return err
}

// nexEvent is the part of a Nexmark event the queries read (the generator
// reuses its byte slices, so what a query keeps is copied here).
type nexEvent struct {
	kind    gen.NexmarkKind
	ts      mtime.Time
	id      int64 // person or auction id
	auction int64
	bidder  int64
	price   int64
	seller  int64
	name    string
	// state is a person's (q3); category an auction's (q3).
	state    string
	category int64
}

// nexOut is where a query's results go: n counts them; keep, when set (in
// tests), is given each of them; end, when a query sets it, is called once
// the pipeline has stopped.
type nexOut struct {
	n    int64
	keep func(nexResult)
	end  func()
}

// nexResult is one result of a query, as the tests compare them: a window
// (or session), a key, and the query's figures.
type nexResult struct {
	start, end mtime.Time
	key        int64 // auction (q5, q7), person (q8), bidder (q11)
	a, b, c    int64 // q5, q11: the count; q7: bidder, price, event time
	name       string
}

func (o *nexOut) add(r nexResult) {
	o.n++
	if o.keep != nil {
		o.keep(r)
	}
}

// nexmark runs query on the generated stream for about d, or over its first
// events events if events > 0, and returns the number of events read.
func nexmark(d time.Duration, events int64, query func(*weir.Pipeline, weir.Stream[nexEvent], *nexOut), out *nexOut) (int64, error) {
	p := weir.NewPipeline()
	var n int64
	g := nexGen(events)
	src := weir.FromSeq(p, func(yield func(nexEvent, mtime.Time) bool) {
		var e gen.NexmarkEvent
		start := time.Now()
		for i := 0; runFor(start, d, i) && g.Next(&e); i++ {
			if !yield(toNexEvent(&e), mtime.MinTime) {
				return
			}
			n++
		}
	})
	err := runQuery(p, src, query, out)
	return n, err
}

// toNexEvent copies what the queries read of e.
func toNexEvent(e *gen.NexmarkEvent) nexEvent {
	v := nexEvent{kind: e.Kind, ts: e.Time()}
	switch e.Kind {
	case gen.KindPerson:
		v.id, v.name, v.state = e.Person.ID, e.Person.Name, e.Person.State
	case gen.KindAuction:
		v.id, v.seller, v.category = e.Auction.ID, e.Auction.Seller, e.Auction.Category
	case gen.KindBid:
		v.auction, v.bidder, v.price = e.Bid.Auction, e.Bid.Bidder, e.Bid.Price
	}
	return v
}

func bids(s weir.Stream[nexEvent]) weir.Stream[nexEvent] {
	return weir.Filter(s, func(e nexEvent) bool { return e.kind == gen.KindBid })
}

// nexWatermark is the queries' watermark, the nexmark repository's: 4 s
// of bounded out-of-orderness.
var nexWatermark = watermark.BoundedOutOfOrderness(4 * time.Second)

func stamp(s weir.Stream[nexEvent]) weir.Timestamped[nexEvent] {
	return weir.WithTimestamps(s, func(e nexEvent) mtime.Time { return e.ts }, nexWatermark)
}

type bidOut struct {
	auction, bidder int64
	price           float64
	ts              mtime.Time
}

func q0(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	weir.Sink(weir.Map(bids(s), func(e nexEvent) bidOut {
		return bidOut{e.auction, e.bidder, float64(e.price), e.ts}
	}), func(bidOut) error { out.n++; return nil })
}

func q1(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	weir.Sink(weir.Map(bids(s), func(e nexEvent) bidOut {
		return bidOut{e.auction, e.bidder, 0.908 * float64(e.price), e.ts}
	}), func(bidOut) error { out.n++; return nil })
}

func q2(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	weir.Sink(weir.Filter(bids(s), func(e nexEvent) bool { return e.auction%123 == 0 }), func(nexEvent) error { out.n++; return nil })
}

// q5 counts bids per auction per sliding window; the sink keeps, per window,
// the auctions whose count is the window's largest. The on-time panes of one
// window come together (one watermark advance fires them in order of window
// end), so the sink closes a window when the next one starts, and the last
// one when the pipeline has stopped.
func q5(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	counts, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamp(bids(s)), func(e nexEvent) int64 { return e.auction }),
		window.NewStrategy(window.SlidingWindows(10*time.Second, 2*time.Second))), aggregate.Count[nexEvent]())
	var cur window.Window
	var best int64
	var hot []int64
	flush := func() {
		for _, a := range hot {
			out.add(nexResult{start: cur.Start, end: cur.End, key: a, a: best})
		}
		hot, best = hot[:0], 0
	}
	out.end = flush
	weir.Sink(counts, func(pn weir.Pane[int64, int64]) error {
		if pn.Window != cur {
			flush()
			cur = pn.Window
		}
		switch {
		case pn.Value > best:
			best, hot = pn.Value, append(hot[:0], pn.Key)
		case pn.Value == best:
			hot = append(hot, pn.Key)
		}
		return nil
	})
}

// maxBids is q7's accumulator: the highest price and the bids that paid it.
type maxBids struct {
	price int64
	bids  []bidOut
}

func q7(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	highest := aggregate.Of(
		func() maxBids { return maxBids{} },
		func(a maxBids, e nexEvent) maxBids {
			switch {
			case e.price > a.price:
				a.price, a.bids = e.price, append(a.bids[:0], bidOut{e.auction, e.bidder, float64(e.price), e.ts})
			case e.price == a.price:
				a.bids = append(a.bids, bidOut{e.auction, e.bidder, float64(e.price), e.ts})
			}
			return a
		},
		func(a, b maxBids) maxBids {
			if b.price > a.price {
				return maxBids{b.price, append([]bidOut(nil), b.bids...)}
			}
			if b.price == a.price {
				a.bids = append(a.bids, b.bids...)
			}
			return a
		},
		func(a maxBids) []bidOut { return append([]bidOut(nil), a.bids...) })
	top, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamp(bids(s)), func(nexEvent) int { return 0 }),
		window.NewStrategy(window.TumblingWindows(10*time.Second))), highest)
	weir.Sink(top, func(pn weir.Pane[int, []bidOut]) error {
		for _, b := range pn.Value {
			out.add(nexResult{start: pn.Window.Start, end: pn.Window.End, key: b.auction, a: b.bidder, b: int64(b.price), c: int64(b.ts)})
		}
		return nil
	})
}

// q3States are the states of q3's sellers.
var q3States = map[string]bool{"OR": true, "ID": true, "CA": true}

// q3 is Nexmark's local item suggestion, an incremental join of the
// auctions with the persons: as a temporal join, the persons a table that
// each auction looks its seller up in, as of the auction's time (the
// generator's sellers are persons generated before their auctions).
func q3(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	auctions := weir.KeyBy(stamp(weir.Filter(s, func(e nexEvent) bool { return e.kind == gen.KindAuction && e.category == 10 })),
		func(e nexEvent) int64 { return e.seller })
	persons := weir.KeyBy(stamp(weir.Filter(s, func(e nexEvent) bool { return e.kind == gen.KindPerson && q3States[e.state] })),
		func(e nexEvent) int64 { return e.id })
	joined, _ := weir.TemporalJoin(auctions, persons)
	weir.Sink(joined, func(j weir.Joined[int64, nexEvent, nexEvent]) error {
		out.add(nexResult{key: j.Left.id, a: j.Key, name: j.Right.name + " " + j.Right.state})
		return nil
	})
}

// newUser is q8's accumulator: did the person join in the window, and did
// they open an auction in it.
type newUser struct {
	name            string
	joined, auction bool
}

// personsAndAuctions are the events q8 reads: the bids, most of the
// events, dropped with one filter.
func personsAndAuctions(s weir.Stream[nexEvent]) weir.Stream[nexEvent] {
	return weir.Filter(s, func(e nexEvent) bool { return e.kind == gen.KindPerson || e.kind == gen.KindAuction })
}

func q8(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	pa := personsAndAuctions(s)
	join := aggregate.Of(
		func() newUser { return newUser{} },
		func(a newUser, e nexEvent) newUser {
			if e.kind == gen.KindPerson {
				a.name, a.joined = e.name, true
			} else {
				a.auction = true
			}
			return a
		},
		func(a, b newUser) newUser {
			if b.joined {
				a.name, a.joined = b.name, true
			}
			a.auction = a.auction || b.auction
			return a
		},
		func(a newUser) newUser { return a })
	users, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamp(pa), func(e nexEvent) int64 {
		if e.kind == gen.KindPerson {
			return e.id
		}
		return e.seller
	}), window.NewStrategy(window.TumblingWindows(10*time.Second))), join)
	weir.Sink(users, func(pn weir.Pane[int64, newUser]) error {
		if pn.Value.joined && pn.Value.auction {
			out.add(nexResult{start: pn.Window.Start, end: pn.Window.End, key: pn.Key, name: pn.Value.name})
		}
		return nil
	})
}

// q8Person and q8Auction are what q8 reads of a person and of an auction,
// as Nexmark's SQL for q8 selects them: the person's id and name, the
// auction's seller, and the times that window them.
type q8Person struct {
	id   int64
	ts   mtime.Time
	name string
}

type q8Auction struct {
	seller int64
	ts     mtime.Time
}

// q8CoGroup is q8 as a co-group: the persons (their name) and the
// auctions (whether there was one) by person, per tumbling window, the
// watermark the least of the two inputs'. Each input has a type of its
// own, which a union cannot: each carries what q8 reads of it, where q8
// over one input carries whole events.
func q8CoGroup(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	// The bids, most of the events, are dropped once, as q8 drops them.
	pa := personsAndAuctions(s)
	persons := weir.KeyBy(weir.WithTimestamps(weir.Map(weir.Filter(pa, func(e nexEvent) bool { return e.kind == gen.KindPerson }),
		func(e nexEvent) q8Person { return q8Person{e.id, e.ts, e.name} }), func(p q8Person) mtime.Time { return p.ts }, nexWatermark),
		func(p q8Person) int64 { return p.id })
	auctions := weir.KeyBy(weir.WithTimestamps(weir.Map(weir.Filter(pa, func(e nexEvent) bool { return e.kind == gen.KindAuction }),
		func(e nexEvent) q8Auction { return q8Auction{e.seller, e.ts} }), func(a q8Auction) mtime.Time { return a.ts }, nexWatermark),
		func(a q8Auction) int64 { return a.seller })
	name := aggregate.Of(func() string { return "" }, func(_ string, p q8Person) string { return p.name },
		func(a, b string) string { return cmp.Or(b, a) }, func(a string) string { return a })
	opened := aggregate.Of(func() bool { return false }, func(bool, q8Auction) bool { return true },
		func(a, b bool) bool { return a || b }, func(a bool) bool { return a })
	users, _ := weir.CoGroup(persons, auctions, window.NewStrategy(window.TumblingWindows(10*time.Second)), name, opened)
	weir.Sink(users, func(pn weir.Pane[int64, weir.CoGrouped[string, bool]]) error {
		if pn.Value.Left != "" && pn.Value.Right {
			out.add(nexResult{start: pn.Window.Start, end: pn.Window.End, key: pn.Key, name: pn.Value.Left})
		}
		return nil
	})
}

func q11(p *weir.Pipeline, s weir.Stream[nexEvent], out *nexOut) {
	sessions, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamp(bids(s)), func(e nexEvent) int64 { return e.bidder }),
		window.NewStrategy(window.SessionWindows(10*time.Second))), aggregate.Count[nexEvent]())
	weir.Sink(sessions, func(pn weir.Pane[int64, int64]) error {
		out.add(nexResult{start: pn.Window.Start, end: pn.Window.End, key: pn.Key, a: pn.Value})
		return nil
	})
}
