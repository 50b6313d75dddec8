package gen

import (
	"io"

	"github.com/weirstream/weir/mtime"
)

// The figures of the ledger streams.
const (
	// ledgerLateShare of the phone orders whose event is sent arrive 5
	// minutes to 6 hours late (the phone offline), as in Steep.
	ledgerLateShare = 0.011
	ledgerDupShare  = 0.001 // events sent twice
	ledgerJitter    = 150.0 // ms, the mean network jitter of an on-time event
)

// The figures of the checkout_start events (LedgerCheckouts).
const (
	// checkoutOnlineLost is the share of the orders whose order_completed
	// event is never sent whose checkout_start arrives within 2 s: the
	// phone was online moments before the order, as in Steep (98.8%).
	checkoutOnlineLost = 0.988
	// A checkout starts 300 ms to 1.8 s before its order.
	checkoutLeadMin, checkoutLeadSpan = 300, 1500
)

// ledgerLost is the share of the orders of each platform whose
// order_completed event the app never sends.
var ledgerLost = [...]float64{platIOS: 0.01, platAndroid: 0.04, platWeb: 0}

// LedgerLostShare is the share of the orders of a platform ("iOS",
// "Android", "web") whose order_completed event LedgerEvents never writes:
// 1%, 4% and none. It is 0 for any other name.
func LedgerLostShare(platform string) float64 {
	for i, n := range platNames {
		if n == platform {
			return ledgerLost[i]
		}
	}
	return 0
}

// ledgerOrder is one order and what becomes of its event.
type ledgerOrder struct {
	seq      uint64 // order number, from 0
	ts       mtime.Time
	plat     uint8
	cents    int64
	lost     bool       // the app never sends the event
	sent     mtime.Time // the event's time, on the phone
	arrival  mtime.Time
	dup      bool       // sent twice
	arrival2 mtime.Time // of the second delivery
}

// ledgerGen draws the orders, one after another, the same way for both
// streams: the ledger and the events agree on every order.
type ledgerGen struct {
	r      *rng
	seq    uint64
	warped float64
	gapW   float64
	n      [len(platNames)]int64
	lost   [len(platNames)]int64
}

func newLedgerGen(o Options) *ledgerGen {
	span := float64(int64(o.Days) * int64(day))
	return &ledgerGen{r: newRNG(o.Seed, 0x1ed9e5), warped: teaShop.warp(o.Start), gapW: span / float64(o.Events)}
}

func (g *ledgerGen) next() ledgerOrder {
	r := g.r
	g.warped += r.exp() * g.gapW
	o := ledgerOrder{seq: g.seq, ts: teaShop.unwarp(g.warped)}
	g.seq++
	switch x := r.float(); {
	case x < 0.46:
		o.plat = platIOS
	case x < 0.80:
		o.plat = platAndroid
	default:
		o.plat = platWeb
	}
	for items := 1 + r.intn(3); items > 0; items-- {
		o.cents += teaPrices[r.intn(len(teaPrices))]
	}
	// Lost events, with feedback: the lost share of each platform stays
	// within an order of its figure.
	p := o.plat
	g.n[p]++
	owed := ledgerLost[p]*float64(g.n[p]) - float64(g.lost[p])
	if x := r.float(); x < owed {
		o.lost = true
		g.lost[p]++
	}
	o.sent = o.ts + 80 + mtime.Time(r.intn(400)) // the app confirms the order
	late := r.float() < ledgerLateShare && o.plat != platWeb
	if late {
		o.arrival = o.sent + drawLateness(r)
	} else {
		o.arrival = o.sent + steepBase + mtime.Time(ledgerJitter*platJitter[o.plat]*r.expMax(steepJitterX)+0.5)
	}
	if r.float() < ledgerDupShare {
		o.dup = true
		o.arrival2 = o.arrival + 200 + mtime.Time(r.intn(400))
	}
	return o
}

// userOf is the user who placed order seq: one of about a third as many
// users as orders, drawn by a hash, so that the streams that name users
// draw nothing from the orders' generator.
func userOf(seq uint64, o Options) uint64 {
	users := max(uint64(o.Events)/3, 1)
	return mix(seq^mix(o.Seed^0x05e7)) % users
}

// Ledger writes the ledger of the orders of Steep, the tea shop of the book's
// chapter 14: what its order database holds, one line per order, o.Events
// lines over about o.Days days from o.Start, in order. Each line has the
// fields
//
//	order_id  "o000000001", numbered in time order
//	user_id   "u0000001": who placed it (about a third as many users as orders)
//	platform  "iOS", "Android" or "web": where the order was placed
//	amount    a number with two decimals
//	ts        when the order was placed
//
// LedgerEvents writes, with the same options, the order_completed events
// the app sent for these orders: joined by order_id (weir lateness
// --ledger), they show the late-or-lost figure.
func Ledger(w io.Writer, o Options) error {
	o = o.withDefaults()
	g := newLedgerGen(o)
	out := newOut(w)
	var tf timeFmt
	for range o.Events {
		if out.err != nil {
			break
		}
		ord := g.next()
		b := append(out.buf, `{"order_id":"o`...)
		b = appendPadded(b, int64(ord.seq+1), 9)
		b = append(b, `","user_id":"u`...)
		b = appendPadded(b, int64(userOf(ord.seq, o)+1), 7)
		b = append(b, `","platform":"`...)
		b = append(b, platNames[ord.plat]...)
		b = append(b, `","amount":`...)
		b = appendCents(b, ord.cents)
		b = append(b, `,"ts":"`...)
		b = tf.append(b, ord.ts)
		out.buf = append(b, `"}`...)
		out.line()
	}
	return out.flush()
}

// ledgerEvent is one line of LedgerEvents.
type ledgerEvent struct {
	arrival, ts mtime.Time
	seq         uint64
	plat        uint8
	dup         bool
}

func (a *ledgerEvent) before(b *ledgerEvent) bool {
	if a.arrival != b.arrival {
		return a.arrival < b.arrival
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return !a.dup && b.dup
}

// LedgerEvents writes the order_completed events of the orders of Ledger
// (with the same options), as Steep's app sent them, in arrival order. Each
// line has the fields
//
//	event_id    a 16-digit hexadecimal id (a second delivery repeats it)
//	order_id    the order's id in the ledger
//	platform    "iOS", "Android" or "web"
//	event_name  "order_completed"
//	ts          event time, on the device: 80 to 480 ms after the order
//	arrival     processing time, at Steep's server
//
// Some events are never sent: 1% of the iOS orders, 4% of the Android ones,
// none on the web (LedgerLostShare); those that are sent arrive within about
// 2 s, except 1.1% of the phones' that arrive 5 minutes to 6 hours late
// (offline, as in Steep), and 0.1% arrive twice. The events go on for a day
// after the last order of the ledger, with the orders placed after it (ids
// the ledger does not hold), so that every entry of the ledger is watched
// for at least a day. So o.Events is the number of orders of the ledger,
// not of lines: there are about twice as many.
func LedgerEvents(w io.Writer, o Options) error {
	o = o.withDefaults()
	g := newLedgerGen(o)
	out := newOut(w)
	lines := appEvents{out: out, key: mix(o.Seed ^ 0x1ed9e5e7), id: `","order_id":"o`, name: "order_completed"}
	lines.idOf = func(e *ledgerEvent) (int64, int) { return int64(e.seq + 1), 9 }
	var end mtime.Time
	for i := 0; out.err == nil; i++ {
		ord := g.next()
		if i == o.Events-1 {
			end = ord.ts + day
		}
		if i >= o.Events && ord.ts > end {
			break
		}
		// Every event still to come arrives after this order.
		lines.writeBefore(ord.ts)
		if ord.lost {
			continue
		}
		lines.arrivals.push(ledgerEvent{arrival: ord.arrival, ts: ord.sent, seq: ord.seq, plat: ord.plat})
		if ord.dup {
			lines.arrivals.push(ledgerEvent{arrival: ord.arrival2, ts: ord.sent, seq: ord.seq, plat: ord.plat, dup: true})
		}
	}
	lines.writeAll()
	return out.flush()
}

// appEvents writes the events of Steep's app that the ledger's orders
// cause, in arrival order: each is held until every event still to come
// arrives after it. A line has the fields event_id (a hash of the order),
// an id (the order's, or its user's: idOf gives the number and its
// digits), platform, event_name, ts and arrival.
type appEvents struct {
	out      *out
	key      uint64 // of the event ids
	id, name string // `","order_id":"o` and order_completed
	idOf     func(*ledgerEvent) (n int64, digits int)
	arrivals minHeap[ledgerEvent, *ledgerEvent]
	ts, arr  timeFmt
}

// writeBefore writes the events held that arrive before t.
func (a *appEvents) writeBefore(t mtime.Time) {
	for a.arrivals.len() > 0 && a.arrivals.min().arrival < t && a.out.err == nil {
		a.writeNext()
	}
}

// writeAll writes every event held.
func (a *appEvents) writeAll() {
	for a.arrivals.len() > 0 && a.out.err == nil {
		a.writeNext()
	}
}

// writeNext writes the event held that arrives first.
func (a *appEvents) writeNext() {
	e := a.arrivals.pop()
	b := append(a.out.buf, `{"event_id":"`...)
	b = appendHex16(b, mix(e.seq^a.key))
	b = append(b, a.id...)
	n, digits := a.idOf(&e)
	b = appendPadded(b, n, digits)
	b = append(b, `","platform":"`...)
	b = append(b, platNames[e.plat]...)
	b = append(b, `","event_name":"`...)
	b = append(b, a.name...)
	b = append(b, `","ts":"`...)
	b = a.ts.append(b, e.ts)
	b = append(b, `","arrival":"`...)
	b = a.arr.append(b, e.arrival)
	a.out.buf = append(b, `"}`...)
	a.out.line()
}

// LedgerCheckouts writes the checkout_start events of the orders of Ledger
// (with the same options), in arrival order: the same user's event moments
// before each order, which tells whether the phone was online then. Each
// line has the fields
//
//	event_id    a 16-digit hexadecimal id
//	user_id     the order's user, as in the ledger
//	platform    "iOS", "Android" or "web"
//	event_name  "checkout_start"
//	ts          event time, on the device: 300 ms to 1.8 s before the order
//	arrival     processing time, at Steep's server
//
// Of the orders whose order_completed event is never sent (LedgerEvents),
// 98.8% have a checkout_start that arrives within 2 s: their phones were
// online, and the event was never sent. The rest, and 1.1% of the other
// phone orders' checkouts, arrive 5 minutes to 6 hours late (offline).
// weir lateness --ledger --seen joins them to the ledger by user.
func LedgerCheckouts(w io.Writer, o Options) error {
	o = o.withDefaults()
	g := newLedgerGen(o)
	r := newRNG(o.Seed, 0xc4ec0)
	out := newOut(w)
	lines := appEvents{out: out, key: mix(o.Seed ^ 0xc4ec0e7), id: `","user_id":"u`, name: "checkout_start"}
	lines.idOf = func(e *ledgerEvent) (int64, int) { return int64(userOf(e.seq, o) + 1), 7 }
	for range o.Events {
		if out.err != nil {
			break
		}
		ord := g.next()
		c := ledgerEvent{seq: ord.seq, plat: ord.plat, ts: ord.ts - checkoutLeadMin - mtime.Time(r.intn(checkoutLeadSpan))}
		offline := false
		if ord.plat != platWeb {
			if ord.lost {
				offline = r.float() >= checkoutOnlineLost
			} else {
				offline = r.float() < ledgerLateShare
			}
		}
		if offline {
			c.arrival = c.ts + drawLateness(r)
		} else {
			c.arrival = c.ts + steepBase + mtime.Time(ledgerJitter*platJitter[c.plat]*r.expMax(steepJitterX)+0.5)
		}
		// Every checkout still to come starts after this order's time
		// less the longest lead, and arrives after that.
		lines.writeBefore(ord.ts - checkoutLeadMin - checkoutLeadSpan)
		lines.arrivals.push(c)
	}
	lines.writeAll()
	return out.flush()
}
