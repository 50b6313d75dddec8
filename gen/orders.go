package gen

import (
	"io"
	"math"

	"github.com/weirstream/weir/mtime"
)

const (
	ordersMaxDelay   = 50   // ms: the order service is on Steep's own servers
	ordersFraudShare = 0.02 // stolen cards never make more than this share
	ordersBurstsHour = 3.0  // stolen cards an hour, when the stream is dense enough
	ordersBurstMean  = 17.5 // orders of a stolen card: 5 to 30
)

// orderRow is one line of the orders stream.
type orderRow struct {
	ts, arrival mtime.Time
	seq         uint64 // order number, in event-time order
	card, user  int64
	cents       int64
}

func (a *orderRow) before(b *orderRow) bool {
	if a.arrival != b.arrival {
		return a.arrival < b.arrival
	}
	return a.seq < b.seq
}

// burst is a stolen card being used: many orders in a minute or two, from one
// to three fresh accounts.
type burst struct {
	next   mtime.Time
	id     uint64
	card   int64
	user   int64 // the first of the fake accounts
	nusers int
	left   int
	gap    float64 // mean gap between orders, ms
}

func (a *burst) before(b *burst) bool {
	if a.next != b.next {
		return a.next < b.next
	}
	return a.id < b.id
}

type ordersGen struct {
	r     *rng
	o     *out
	n     int
	lines int
	seq   uint64
	users int64
	fakes int64 // next fake account

	warped     float64 // warped time of the next ordinary order
	gapW       float64 // mean warped gap between ordinary orders
	endW       float64 // warped time of the end of the stream
	spanW      float64
	normal     float64 // ordinary orders expected
	nnormal    int     // ordinary orders so far
	nextNormal mtime.Time
	burstGap   float64 // mean gap between stolen cards, ms
	burstsHour float64 // stolen cards an hour
	nextBurst  mtime.Time
	nbursts    uint64
	end        mtime.Time // the end of the days: no order at or after it

	bursts   minHeap[burst, *burst]
	arrivals minHeap[orderRow, *orderRow]

	tsFmt, arrFmt timeFmt
}

// Orders writes the orders topic of Steep's fraud job (the book's chapter 14)
// to w: o.Events JSON lines over o.Days days of event time from o.Start, in
// arrival order. Each line has the fields
//
//	order_id  "o000000001", numbered in event-time order
//	card      "card_00024690"
//	user_id   "u0012345"
//	amount    a number with two decimals
//	ts        event time: when the order service took the order
//	arrival   when it reached the topic, 0 to 50 ms later
//
// The orders come from Steep's own servers, so nothing is late. Ordinary
// customers order a few teas now and then, with the shop's daily rhythm; each
// card pays rarely. A few times an hour a stolen card pays 5 to 30 times
// within a minute or two, from one to three fresh accounts (user ids from
// u9000000 up): the bursts the fraud job is meant to catch. In sparse streams
// the stolen cards are fewer, so that they never make more than 2% of the
// orders.
func Orders(w io.Writer, o Options) error {
	o = o.withDefaults()
	g := newOrdersGen(w, o)
	g.run()
	return g.o.flush()
}

func newOrdersGen(w io.Writer, o Options) *ordersGen {
	g := &ordersGen{
		r: newRNG(o.Seed, 0x0dde5),
		o: newOut(w),
		n: o.Events,
	}
	g.users = max(1000, int64(o.Events)/3)
	g.fakes = max(9_000_000, 10*g.users)
	hours := float64(o.Days) * 24
	perHour := min(ordersBurstsHour, ordersFraudShare*float64(o.Events)/hours/ordersBurstMean)
	g.burstGap, g.burstsHour = float64(hour)/perHour, perHour
	normal := max(float64(o.Events)-perHour*hours*ordersBurstMean, 1)
	span := float64(int64(o.Days) * int64(day))
	g.gapW = span / normal
	g.normal = normal
	g.warped = teaShop.warp(o.Start)
	g.spanW = span
	g.endW = g.warped + span
	g.end = o.Start + mtime.Time(int64(o.Days)*int64(day))
	g.advanceNormal()
	g.nextBurst = o.Start + mtime.Time(g.r.exp()*g.burstGap)
	return g
}

// advanceNormal draws the time of the next ordinary order. The pace follows
// the orders still to write, so that the stream ends close to the end of its
// days.
func (g *ordersGen) advanceNormal() {
	gap := g.gapW
	if due := g.normal * (g.endW - g.warped) / g.spanW; due > 0 {
		// The ordinary orders still to write: those the stream has left,
		// less the stolen cards' to come in the time left.
		rest := float64(g.endW-g.warped) / float64(day) * 24
		left := max(float64(g.n-g.lines)-float64(g.bursts.len())*ordersBurstMean/2-rest*g.burstsHour*ordersBurstMean, 1)
		f := max(left/due, 0.5)
		if g.endW-g.warped > g.spanW/50 {
			f = min(f, 2) // in the last 2% of the days, as fast as the orders left need
		}
		gap /= f
	} else {
		gap /= 2
	}
	step := g.r.exp() * gap
	if rest := g.endW - g.warped; step >= rest && rest > 0 {
		// Never past the end of the days (a long draw, when there are
		// few orders to spread over them): the rest of the way, shortened.
		step = rest * (1 - math.Exp(-step/rest))
	}
	g.warped += step
	g.nextNormal = min(teaShop.unwarp(g.warped), g.end-1)
}

func (g *ordersGen) run() {
	for g.lines < g.n && g.o.err == nil {
		switch {
		case g.bursts.len() > 0 && g.bursts.min().next <= g.nextNormal && g.bursts.min().next <= g.nextBurst:
			b := g.bursts.pop()
			if b.next >= g.end {
				continue // a stolen card at the end of the days: it stops there
			}
			u := b.user + int64(g.r.intn(b.nusers))
			g.order(b.next, b.card, u, g.cents(2+g.r.intn(5), 3))
			if b.left--; b.left > 0 {
				b.next += 300 + mtime.Time(g.r.exp()*b.gap)
				g.bursts.push(b)
			}
		case g.nextBurst <= g.nextNormal:
			g.startBurst()
		default:
			f := g.r.float()
			u := int64(float64(g.users) * f * math.Sqrt(f)) // regulars order more often
			card := 2 * u
			if mix(uint64(u))%4 == 0 && g.r.float() < 0.3 {
				card++ // a second card
			}
			items := 1
			if x := g.r.float(); x < 0.08 {
				items = 3
			} else if x < 0.35 {
				items = 2
			}
			g.order(g.nextNormal, card, u, g.cents(items, 0))
			g.nnormal++
			g.advanceNormal()
		}
	}
	for g.arrivals.len() > 0 && g.o.err == nil {
		r := g.arrivals.pop()
		g.write(&r)
	}
}

// ordersBurstRoom is the longest a stolen card's orders last (30 orders in
// at most 2 minutes, 300 ms apart at least): no burst starts closer to the
// end of the days.
const ordersBurstRoom mtime.Time = 3 * 60_000

// startBurst starts using a stolen card: 5 to 30 orders within 30 s to 2 min.
func (g *ordersGen) startBurst() {
	g.nbursts++
	k := 5 + g.r.intn(26)
	span := 30000 + g.r.float()*90000
	b := burst{
		next:   g.nextBurst,
		id:     g.nbursts,
		card:   2 * int64(g.r.intn(int(g.users))),
		user:   g.fakes,
		nusers: 1 + g.r.intn(3),
		left:   k,
		gap:    span / float64(k),
	}
	g.fakes += int64(b.nusers)
	g.bursts.push(b)
	g.nextBurst += mtime.Time(g.r.exp() * g.burstGap)
	if g.nextBurst > g.end-ordersBurstRoom {
		g.nextBurst = mtime.MaxTime // none that would run past the end of the days
	}
}

// cents prices an order of items teas; the first pricey ones come from the
// dearer half of the menu.
func (g *ordersGen) cents(items, pricey int) int64 {
	var c int64
	for i := range items {
		if i < pricey {
			c += teaPrices[len(teaPrices)/2+g.r.intn(len(teaPrices)/2)]
		} else {
			c += teaPrices[g.r.intn(len(teaPrices))]
		}
	}
	return c
}

func (g *ordersGen) order(ts mtime.Time, card, user, cents int64) {
	for g.arrivals.len() > 0 && g.arrivals.min().arrival < ts {
		r := g.arrivals.pop()
		g.write(&r)
	}
	g.seq++
	g.arrivals.push(orderRow{
		ts:      ts,
		arrival: ts + mtime.Time(g.r.intn(ordersMaxDelay+1)),
		seq:     g.seq,
		card:    card,
		user:    user,
		cents:   cents,
	})
	g.lines++
}

func (g *ordersGen) write(r *orderRow) {
	b := g.o.buf
	b = append(b, `{"order_id":"o`...)
	b = appendPadded(b, int64(r.seq), 9)
	b = append(b, `","card":"`...)
	b = appendCard(b, r.card)
	b = append(b, `","user_id":"`...)
	b = appendUser(b, r.user)
	b = append(b, `","amount":`...)
	b = appendCents(b, r.cents)
	b = append(b, `,"ts":"`...)
	b = g.tsFmt.append(b, r.ts)
	b = append(b, `","arrival":"`...)
	b = g.arrFmt.append(b, r.arrival)
	b = append(b, `"}`...)
	g.o.buf = b
	g.o.line()
}
