package bench

import (
	"context"
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
		run         func(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64)
	}{
		{"q0", "pass-through of bids", q0},
		{"q1", "currency conversion of bid prices", q1},
		{"q2", "bids on auctions whose id is a multiple of 123", q2},
		{"q5", "hot items: bids per auction in sliding windows of 10 s every 2 s, the auctions with the most bids", q5},
		{"q7", "highest bid of each tumbling window of 10 s", q7},
		{"q8", "new users: persons who opened an auction in the tumbling window of 10 s in which they joined", q8},
		{"q11", "user sessions: bids per bidder per session (gap 10 s)", q11},
	} {
		register(Bench{
			Name: "nexmark-" + q.name, Group: "nexmark", About: "Nexmark " + q.name + ": " + q.about,
			Run: func(d time.Duration) (int64, map[string]float64, string, error) { return nexmark(d, q.run) },
		})
	}
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
}

func nexmark(d time.Duration, query func(*weir.Pipeline, weir.Stream[nexEvent], *int64)) (int64, map[string]float64, string, error) {
	p := weir.NewPipeline()
	var n, out int64
	g := gen.NewNexmark(gen.NexmarkConfig{Seed: 1})
	src := weir.FromSeq(p, func(yield func(nexEvent, mtime.Time) bool) {
		var e gen.NexmarkEvent
		start := time.Now()
		for i := 0; runFor(start, d, i) && g.Next(&e); i++ {
			v := nexEvent{kind: e.Kind, ts: e.Time()}
			switch e.Kind {
			case gen.KindPerson:
				v.id, v.name = e.Person.ID, e.Person.Name
			case gen.KindAuction:
				v.id, v.seller = e.Auction.ID, e.Auction.Seller
			case gen.KindBid:
				v.auction, v.bidder, v.price = e.Bid.Auction, e.Bid.Bidder, e.Bid.Price
			}
			if !yield(v, mtime.MinTime) {
				return
			}
			n++
		}
	})
	query(p, src, &out)
	err := p.Run(context.Background())
	return n, map[string]float64{"results": float64(out)}, "", err
}

func bids(s weir.Stream[nexEvent]) weir.Stream[nexEvent] {
	return weir.Filter(s, func(e nexEvent) bool { return e.kind == gen.KindBid })
}

func stamp(s weir.Stream[nexEvent]) weir.Timestamped[nexEvent] {
	return weir.WithTimestamps(s, func(e nexEvent) mtime.Time { return e.ts }, watermark.BoundedOutOfOrderness(4*time.Second))
}

func count[T any](out *int64) func(T) error {
	return func(T) error { *out++; return nil }
}

type bidOut struct {
	auction, bidder int64
	price           float64
	ts              mtime.Time
}

func q0(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64) {
	weir.Sink(weir.Map(bids(s), func(e nexEvent) bidOut {
		return bidOut{e.auction, e.bidder, float64(e.price), e.ts}
	}), count[bidOut](out))
}

func q1(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64) {
	weir.Sink(weir.Map(bids(s), func(e nexEvent) bidOut {
		return bidOut{e.auction, e.bidder, 0.908 * float64(e.price), e.ts}
	}), count[bidOut](out))
}

func q2(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64) {
	weir.Sink(weir.Filter(bids(s), func(e nexEvent) bool { return e.auction%123 == 0 }), count[nexEvent](out))
}

// q5 counts bids per auction per sliding window; the sink keeps, per window,
// the auctions whose count is the window's largest. The on-time panes of one
// window come together (one watermark advance fires them in order of window
// end), so the sink closes a window when the next one starts.
func q5(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64) {
	counts, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamp(bids(s)), func(e nexEvent) int64 { return e.auction }),
		window.NewStrategy(window.SlidingWindows(10*time.Second, 2*time.Second))), aggregate.Count[nexEvent]())
	var cur window.Window
	var best int64
	var hot []int64
	flush := func() {
		*out += int64(len(hot))
		hot, best = hot[:0], 0
	}
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

func q7(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64) {
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
	weir.Sink(top, func(pn weir.Pane[int, []bidOut]) error { *out += int64(len(pn.Value)); return nil })
}

// newUser is q8's accumulator: did the person join in the window, and did
// they open an auction in it.
type newUser struct {
	name            string
	joined, auction bool
}

func q8(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64) {
	pa := weir.Filter(s, func(e nexEvent) bool { return e.kind == gen.KindPerson || e.kind == gen.KindAuction })
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
			*out++
		}
		return nil
	})
}

func q11(p *weir.Pipeline, s weir.Stream[nexEvent], out *int64) {
	sessions, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamp(bids(s)), func(e nexEvent) int64 { return e.bidder }),
		window.NewStrategy(window.SessionWindows(10*time.Second))), aggregate.Count[nexEvent]())
	weir.Sink(sessions, count[weir.Pane[int64, int64]](out))
}
