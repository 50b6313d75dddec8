package gen

import (
	"io"
	"math"

	"github.com/weirstream/weir/mtime"
)

// The figures of Steep's stream (chapter 14, "Two clocks" and Table 1).
const (
	steepLateShare = 0.009 // lines that arrive 5 minutes to 6 hours late
	steepDupShare  = 0.001 // lines that are a second delivery of an event

	// steepJitterC is the mean network jitter in units of the mean gap
	// between events, calibrated so that 12.1% of the lines arrive after a
	// line that happened later (late lines and second deliveries included).
	steepJitterC = 0.231
	// steepJitterTie is added to the mean jitter: the millisecond resolution
	// of the times hides some overtaking (ties), more so in dense streams.
	steepJitterTie = 0.6 // ms
	// steepSigmaMax caps the mean jitter of sparse streams so that every
	// on-time line, second deliveries included, still arrives within 2 s:
	// 25 + 300*1.25*3.5 + 600 ms at most.
	steepSigmaMax = 300.0 // ms
	steepJitterX  = 3.5   // the jitter is truncated at this many means
	steepBase     = 25    // ms, the fastest delivery

	steepMaxTaps = 60 // taps in one session at most
)

// Platforms, as written in "platform".
const (
	platIOS = iota
	platAndroid
	platWeb
)

var platNames = [...]string{"iOS", "Android", "web"}

// jitter factor of each platform: phones on mobile networks are slower.
var platJitter = [...]float64{1.0, 1.25, 0.6}

// Event names, as written in "event_name"; evEnd ends a session.
const (
	evAppOpen = iota
	evSearch
	evProductView
	evAddToCart
	evCheckoutStart
	evOrderCompleted
	evEnd
)

var eventNames = [...]string{"app_open", "search", "product_view", "add_to_cart", "checkout_start", "order_completed"}

// steepNext is the funnel: for each event, the probability of each next event
// (the last column ends the session).
var steepNext = [evEnd][evEnd + 1]float64{
	evAppOpen:        {evSearch: 0.22, evProductView: 0.62, evEnd: 0.16},
	evSearch:         {evSearch: 0.08, evProductView: 0.80, evEnd: 0.12},
	evProductView:    {evSearch: 0.08, evProductView: 0.46, evAddToCart: 0.22, evEnd: 0.24},
	evAddToCart:      {evProductView: 0.32, evCheckoutStart: 0.50, evEnd: 0.18},
	evCheckoutStart:  {evOrderCompleted: 0.82, evEnd: 0.18},
	evOrderCompleted: {evProductView: 0.12, evEnd: 0.88},
}

// steepExpect is, for each event, the expected number of taps of a session
// from that event on (that tap included), from the funnel.
var steepExpect = func() (e [evEnd + 1]float64) {
	for range 2000 {
		var n [evEnd + 1]float64
		for s := range evEnd {
			n[s] = 1
			for t := range evEnd {
				n[s] += steepNext[s][t] * e[t]
			}
		}
		e = n
	}
	return e
}()

// teaPrices is the menu, in cents.
var teaPrices = [...]int64{350, 420, 450, 480, 520, 550, 590, 650, 720, 850}

// lateness quantiles of the offline phones, read from Table 1: 41% of the
// late events are more than an hour late, 12% more than 3 hours, none more
// than 6 hours. Between the points the lateness is log-uniform.
var lateQuantiles = [...]struct {
	p float64
	t mtime.Time
}{{0, 5 * minute}, {0.589, hour}, {0.878, 3 * hour}, {1, 6 * hour}}

// steepRow is one line of the stream.
type steepRow struct {
	ts, arrival mtime.Time
	seq         uint64 // event number: the event_id is derived from it
	user        int64
	card        int64 // -1: no card
	cents       int64
	name, plat  uint8
	dup         bool // this line is the second delivery
	redeliver   bool // offline events: deliver twice when the phone is back
}

func (a *steepRow) before(b *steepRow) bool {
	if a.arrival != b.arrival {
		return a.arrival < b.arrival
	}
	// Lines that arrive in the same millisecond are in no particular order:
	// sort them by a hash of their event number rather than by event time.
	if ha, hb := mix(a.seq), mix(b.seq); ha != hb {
		return ha < hb
	}
	return !a.dup && b.dup
}

// steepSession is one visit to the app: a burst of taps a few seconds apart.
type steepSession struct {
	id      uint64
	next    mtime.Time // event time of the next tap
	state   uint8      // event of the next tap
	plat    uint8
	user    int64
	card    int64
	cart    int64 // cents in the cart
	taps    int
	offline bool       // in a tunnel: the events wait on the phone
	expect  float64    // late lines still expected from this session
	pending []steepRow // offline events, in event-time order
}

type sessRef struct {
	next mtime.Time
	id   uint64
	s    *steepSession
}

func (a *sessRef) before(b *sessRef) bool {
	if a.next != b.next {
		return a.next < b.next
	}
	return a.id < b.id
}

type steepGen struct {
	r     *rng
	o     *out
	key   uint64 // scrambles event ids
	n     int    // lines to write
	users int64

	lines     int // lines generated (written or waiting)
	lateLines int
	lateOwed  float64 // late lines expected from open offline sessions
	seq       uint64
	nsess     uint64

	sigma     float64 // mean jitter, ms
	meanLines float64 // expected lines of a session
	pOffline  float64 // base chance that a phone session is offline
	warped    float64 // warped time of the next session start
	endW      float64 // warped time of the end of the stream
	spanW     float64 // warped length of the stream
	gapW      float64 // mean warped gap between session starts
	openLines float64 // lines still expected from the open sessions
	nextStart mtime.Time

	sessions minHeap[sessRef, *sessRef]
	arrivals minHeap[steepRow, *steepRow]
	free     []*steepSession

	tsFmt, arrFmt timeFmt
}

// Steep writes the app event stream of Steep, the tea shop of the book's
// chapter 14, to w: o.Events JSON lines over o.Days days of event time from
// o.Start, in arrival order. Each line has the fields
//
//	event_id    a 16-digit hexadecimal id, unique per event
//	user_id     "u0012345"
//	card        "card_00024690", on checkout_start and order_completed only
//	platform    "iOS", "Android" or "web"
//	event_name  app_open, search, product_view, add_to_cart,
//	            checkout_start or order_completed
//	amount      a number with two decimals, on order_completed only
//	ts          event time, on the device
//	arrival     processing time, at Steep's server
//
// Users visit in sessions: an app_open, then a few taps a few seconds apart
// down a shopping funnel, more in the morning and at lunch than at night.
// With the default options the stream measures what the book reports: 99.1%
// of the lines arrive within 2 s of their event time, 0.9% between 5 minutes
// and about 6 hours late (whole phone sessions in a tunnel, never web), 12.1%
// of the lines arrive after a line with a later event time, and 0.1% of the
// lines repeat an earlier event_id (a second delivery, with the same fields
// and a later arrival). See the package documentation for how density
// affects the reordering.
func Steep(w io.Writer, o Options) error {
	o = o.withDefaults()
	g := newSteepGen(w, o)
	g.run()
	return g.o.flush()
}

func newSteepGen(w io.Writer, o Options) *steepGen {
	g := &steepGen{
		r:   newRNG(o.Seed, 0x5ee9),
		o:   newOut(w),
		key: mix(o.Seed ^ 0x57ee9),
		n:   o.Events,
	}
	g.users = max(500, int64(o.Events)/15)
	span := float64(int64(o.Days) * int64(day))
	g.sigma = min(steepJitterC*span/float64(o.Events)+steepJitterTie, steepSigmaMax)
	g.meanLines = steepExpect[evAppOpen] * (1 + steepDupShare)
	g.pOffline = steepLateShare / 0.8 // 80% of the sessions are on phones
	g.gapW = span / (float64(o.Events) / g.meanLines)
	g.warped = teaShop.warp(o.Start)
	g.endW = g.warped + span
	g.spanW = span
	g.advanceStart()
	return g
}

// advanceStart draws the start of the next session. The pace follows the
// lines still to write, so that the stream ends close to the end of its days.
func (g *steepGen) advanceStart() {
	gap := g.gapW
	left := float64(g.n-g.lines) - g.openLines // lines of sessions not started
	if due := float64(g.n) * (g.endW - g.warped) / g.spanW; due > 0 {
		gap /= min(max(left/due, 0.5), 2)
	} else {
		gap /= 2
	}
	g.warped += g.r.exp() * gap
	g.nextStart = teaShop.unwarp(g.warped)
}

func (g *steepGen) run() {
	for g.lines < g.n && g.o.err == nil {
		if g.sessions.len() == 0 || g.nextStart <= g.sessions.min().next {
			s := g.startSession(g.nextStart)
			g.advanceStart()
			g.tap(s)
			continue
		}
		ref := g.sessions.pop()
		g.tap(ref.s)
	}
	// The stream ends: phones still offline deliver what they hold.
	for i := range g.sessions.a {
		if s := g.sessions.a[i].s; s.offline && len(s.pending) > 0 {
			g.deliverOffline(s)
		}
	}
	for g.arrivals.len() > 0 && g.o.err == nil {
		r := g.arrivals.pop()
		g.write(&r)
	}
}

func (g *steepGen) startSession(at mtime.Time) *steepSession {
	var s *steepSession
	if n := len(g.free); n > 0 {
		s = g.free[n-1]
		g.free = g.free[:n-1]
	} else {
		s = &steepSession{}
	}
	g.nsess++
	f := g.r.float()
	u := int64(float64(g.users) * f * math.Sqrt(f)) // regulars come back more often
	h := mix(uint64(u) ^ g.key)
	*s = steepSession{id: g.nsess, next: at, state: evAppOpen, user: u, card: 2 * u, pending: s.pending[:0]}
	switch p := h % 100; {
	case p < 46:
		s.plat = platIOS
	case p < 80:
		s.plat = platAndroid
	default:
		s.plat = platWeb
	}
	if (h>>32)%4 == 0 && g.r.float() < 0.3 {
		s.card++ // a second card
	}
	g.openLines += steepExpect[evAppOpen] * (1 + steepDupShare)
	if s.plat != platWeb {
		// A phone in a tunnel, with feedback that keeps the late share on
		// its target rather than only on average.
		owed := steepLateShare*float64(g.lines) - float64(g.lateLines) - g.lateOwed
		gain := min(max(1+owed/(2*g.meanLines), 0), 4)
		if g.r.float() < g.pOffline*gain {
			s.offline = true
			s.expect = g.meanLines
			g.lateOwed += s.expect
		}
	}
	return s
}

// tap writes the session's next event and schedules the one after.
func (g *steepGen) tap(s *steepSession) {
	ts := s.next
	g.drain(ts)
	r := steepRow{ts: ts, seq: g.seq, user: s.user, card: -1, name: s.state, plat: s.plat}
	g.seq++
	switch s.state {
	case evAddToCart:
		q := int64(1)
		if x := g.r.float(); x < 0.03 {
			q = 3
		} else if x < 0.2 {
			q = 2
		}
		s.cart += q * teaPrices[g.r.intn(len(teaPrices))]
	case evCheckoutStart:
		r.card = s.card
	case evOrderCompleted:
		r.card = s.card
		r.cents = s.cart
		s.cart = 0
	}
	k := 1
	dup := g.lines+2 <= g.n && g.r.float() < steepDupShare
	if dup {
		k = 2
	}
	g.lines += k
	if s.offline {
		r.redeliver = dup
		s.pending = append(s.pending, r)
		g.lateLines += k
		d := min(float64(k), s.expect)
		s.expect -= d
		g.lateOwed -= d
	} else {
		x := g.r.expMax(steepJitterX)
		r.arrival = ts + steepBase + mtime.Time(g.sigma*platJitter[s.plat]*x+0.5)
		g.arrivals.push(r)
		if dup {
			g.redeliver(r)
		}
	}
	s.taps++
	next := g.nextEvent(s.state)
	g.openLines -= steepExpect[s.state] * (1 + steepDupShare)
	if next == evEnd || s.taps >= steepMaxTaps {
		g.endSession(s)
		return
	}
	g.openLines += steepExpect[next] * (1 + steepDupShare)
	s.state = next
	gap := 700 + g.r.exp()*3500 // a few seconds between taps
	s.next = ts + mtime.Time(min(gap, 45000))
	g.sessions.push(sessRef{s.next, s.id, s})
}

// redeliver queues a second delivery of r: the app retried because the
// server's answer was lost.
func (g *steepGen) redeliver(r steepRow) {
	r.dup = true
	r.redeliver = false
	r.arrival += 200 + mtime.Time(g.r.intn(400)) // within 2 s even at the jitter cap
	g.arrivals.push(r)
}

func (g *steepGen) nextEvent(from uint8) uint8 {
	x := g.r.float()
	p := &steepNext[from]
	for t := range evEnd {
		if x < p[t] {
			return uint8(t)
		}
		x -= p[t]
	}
	return evEnd
}

func (g *steepGen) endSession(s *steepSession) {
	if s.offline {
		g.deliverOffline(s)
	}
	g.free = append(g.free, s)
}

// deliverOffline sends the events an offline phone kept: when it is back
// online, 5 minutes to 6 hours later, all together and in order.
func (g *steepGen) deliverOffline(s *steepSession) {
	g.lateOwed -= s.expect
	s.expect = 0
	if len(s.pending) == 0 {
		return
	}
	first, last := s.pending[0].ts, s.pending[len(s.pending)-1].ts
	at := first + g.lateness()
	if earliest := last + 5*minute + mtime.Time(g.r.intn(30000)); at < earliest {
		at = earliest
	}
	for _, r := range s.pending {
		at += 5 + mtime.Time(g.r.intn(35))
		r.arrival = at + steepBase
		dup := r.redeliver
		r.redeliver = false
		g.arrivals.push(r)
		if dup {
			g.redeliver(r)
		}
	}
	s.pending = s.pending[:0]
}

// lateness draws how long an offline phone keeps its events.
func (g *steepGen) lateness() mtime.Time { return drawLateness(g.r) }

// drawLateness draws how long an offline phone keeps its events, from
// lateQuantiles.
func drawLateness(r *rng) mtime.Time {
	x := r.float()
	q := lateQuantiles[:]
	i := 1
	for i < len(q)-1 && x >= q[i].p {
		i++
	}
	a, b := q[i-1], q[i]
	f := (x - a.p) / (b.p - a.p)
	la, lb := math.Log(float64(a.t)), math.Log(float64(b.t))
	return mtime.Time(math.Exp(la + f*(lb-la)))
}

// drain writes every line that has arrived before clock: no line generated
// from now on can arrive earlier.
func (g *steepGen) drain(clock mtime.Time) {
	for g.arrivals.len() > 0 && g.arrivals.min().arrival < clock {
		r := g.arrivals.pop()
		g.write(&r)
	}
}

func (g *steepGen) write(r *steepRow) {
	b := g.o.buf
	b = append(b, `{"event_id":"`...)
	b = appendHex16(b, mix(r.seq^g.key))
	b = append(b, `","user_id":"`...)
	b = appendUser(b, r.user)
	if r.card >= 0 {
		b = append(b, `","card":"`...)
		b = appendCard(b, r.card)
	}
	b = append(b, `","platform":"`...)
	b = append(b, platNames[r.plat]...)
	b = append(b, `","event_name":"`...)
	b = append(b, eventNames[r.name]...)
	b = append(b, '"')
	if r.name == evOrderCompleted {
		b = append(b, `,"amount":`...)
		b = appendCents(b, r.cents)
	}
	b = append(b, `,"ts":"`...)
	b = g.tsFmt.append(b, r.ts)
	b = append(b, `","arrival":"`...)
	b = g.arrFmt.append(b, r.arrival)
	b = append(b, `"}`...)
	g.o.buf = b
	g.o.line()
}
