package bench

import (
	"time"

	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/mtime"
)

// The hand-written floors of the Nexmark queries weir runs: the same
// computation over the same generated stream (gen.Nexmark, seed 1, read for
// about the same time, every event counted) with plain maps and slices in
// one loop, no engine. The generator gives the events in event-time order,
// so a floor closes a window when the first event past its end comes, and
// the rest at the end of the input, as weir's watermark does; they make the
// same results as weir's queries (see nexmark_test.go). nexmark.go registers
// them beside their queries.

// nexGen returns the generator the queries read.
func nexGen(events int64) *gen.Nexmark {
	return gen.NewNexmark(gen.NexmarkConfig{Seed: 1, Events: events})
}

// floorQ5 is q5: bids per auction in sliding windows of 10 s every 2 s, and
// per window the auctions with the most bids (all of them if tied). Bids are
// counted per auction in 2 s slices; a window is the sum of the 5 slices it
// spans, made when the window closes. Windows start at multiples of 2 s
// (weir's alignment): the first event's slice is the last slice of the
// first window.
func floorQ5(d time.Duration, events int64, out *nexOut) int64 {
	const size, slide = 10_000, 2_000
	const k = size / slide
	var slices [k]map[int64]int64 // slice j is slices[j%k]
	for i := range slices {
		slices[i] = map[int64]int64{}
	}
	sum := map[int64]int64{}
	var hot []int64
	// closeWindow emits the window ending at slice j's start: slices j-k to
	// j-1, and frees slice j-k's map for slice j.
	closeWindow := func(j int64) {
		clear(sum)
		for i := j - k; i < j; i++ {
			for a, c := range slices[floorMod(i, k)] {
				sum[a] += c
			}
		}
		var best int64
		hot = hot[:0]
		for a, c := range sum {
			switch {
			case c > best:
				best, hot = c, append(hot[:0], a)
			case c == best:
				hot = append(hot, a)
			}
		}
		start := mtime.Time(j*slide - size)
		for _, a := range hot {
			out.add(nexResult{start: start, end: start + size, key: a, a: best})
		}
		clear(slices[floorMod(j, k)])
	}
	g := nexGen(events)
	var e gen.NexmarkEvent
	cur, started := int64(0), false // the slice of the latest bid
	start := time.Now()
	i := 0
	for ; runFor(start, d, i) && g.Next(&e); i++ {
		if e.Kind != gen.KindBid {
			continue
		}
		j := floorDiv(int64(e.Bid.DateTime), slide)
		switch {
		case !started:
			cur, started = j, true
		case j > cur:
			for t := cur + 1; t <= min(j, cur+k); t++ {
				closeWindow(t)
			}
			cur = j
		}
		slices[floorMod(j, k)][e.Bid.Auction]++
	}
	if started {
		for t := cur + 1; t <= cur+k; t++ {
			closeWindow(t)
		}
	}
	return int64(i)
}

// floorQ7 is q7: per tumbling window of 10 s, the bids with the highest
// price.
func floorQ7(d time.Duration, events int64, out *nexOut) int64 {
	const size = 10_000
	var price int64
	var top []bidOut
	cur := mtime.MinTime
	flush := func() {
		for _, b := range top {
			out.add(nexResult{start: cur, end: cur + size, key: b.auction, a: b.bidder, b: int64(b.price), c: int64(b.ts)})
		}
		price, top = 0, top[:0]
	}
	g := nexGen(events)
	var e gen.NexmarkEvent
	start := time.Now()
	i := 0
	for ; runFor(start, d, i) && g.Next(&e); i++ {
		if e.Kind != gen.KindBid {
			continue
		}
		b := &e.Bid
		if w := b.DateTime - floorMod(b.DateTime, size); w != cur {
			flush()
			cur = w
		}
		switch {
		case b.Price > price:
			price, top = b.Price, append(top[:0], bidOut{b.Auction, b.Bidder, float64(b.Price), b.DateTime})
		case b.Price == price:
			top = append(top, bidOut{b.Auction, b.Bidder, float64(b.Price), b.DateTime})
		}
	}
	flush()
	return int64(i)
}

// floorQ8 is q8: the persons who opened an auction in the tumbling window of
// 10 s in which they joined.
func floorQ8(d time.Duration, events int64, out *nexOut) int64 {
	const size = 10_000
	users := map[int64]newUser{}
	cur := mtime.MinTime
	flush := func() {
		for id, u := range users {
			if u.joined && u.auction {
				out.add(nexResult{start: cur, end: cur + size, key: id, name: u.name})
			}
		}
		clear(users)
	}
	g := nexGen(events)
	var e gen.NexmarkEvent
	start := time.Now()
	i := 0
	for ; runFor(start, d, i) && g.Next(&e); i++ {
		var id int64
		var ts mtime.Time
		switch e.Kind {
		case gen.KindPerson:
			id, ts = e.Person.ID, e.Person.DateTime
		case gen.KindAuction:
			id, ts = e.Auction.Seller, e.Auction.DateTime
		default:
			continue
		}
		if w := ts - floorMod(ts, size); w != cur {
			flush()
			cur = w
		}
		u := users[id]
		if e.Kind == gen.KindPerson {
			u.name, u.joined = e.Person.Name, true
		} else {
			u.auction = true
		}
		users[id] = u
	}
	flush()
	return int64(i)
}

// floorQ3 is q3: the persons of OR, ID and CA in a map by id, each auction
// of category 10 looked up in it as it comes (its seller came before it).
func floorQ3(d time.Duration, events int64, out *nexOut) int64 {
	type person struct{ name, state string }
	persons := map[int64]person{}
	g := nexGen(events)
	var e gen.NexmarkEvent
	start := time.Now()
	i := 0
	for ; runFor(start, d, i) && g.Next(&e); i++ {
		switch {
		case e.Kind == gen.KindPerson && q3States[e.Person.State]:
			persons[e.Person.ID] = person{e.Person.Name, e.Person.State}
		case e.Kind == gen.KindAuction && e.Auction.Category == 10:
			if p, ok := persons[e.Auction.Seller]; ok {
				out.add(nexResult{key: e.Auction.ID, a: e.Auction.Seller, name: p.name + " " + p.state})
			}
		}
	}
	return int64(i)
}

// floorQ11 is q11: bids per bidder per session, a session ending 10 s after
// its last bid. A bid before its bidder's session ends extends it (a bid just
// at the end starts a new one: sessions that touch stay apart, as in weir);
// every second of event time the sessions that have ended are emitted and
// dropped.
func floorQ11(d time.Duration, events int64, out *nexOut) int64 {
	const gap, sweep = 10_000, 1_000
	type session struct {
		start, end mtime.Time
		n          int64
	}
	open := map[int64]session{}
	emit := func(bidder int64, s session) {
		out.add(nexResult{start: s.start, end: s.end, key: bidder, a: s.n})
	}
	next := mtime.MinTime // the event time of the next sweep
	g := nexGen(events)
	var e gen.NexmarkEvent
	start := time.Now()
	i := 0
	for ; runFor(start, d, i) && g.Next(&e); i++ {
		if e.Kind != gen.KindBid {
			continue
		}
		ts := e.Bid.DateTime
		if ts >= next {
			for b, s := range open {
				if s.end <= ts {
					emit(b, s)
					delete(open, b)
				}
			}
			next = ts + sweep
		}
		s, ok := open[e.Bid.Bidder]
		switch {
		case ok && ts < s.end:
			s.end = max(s.end, ts+gap)
			s.n++
		default:
			if ok {
				emit(e.Bid.Bidder, s)
			}
			s = session{ts, ts + gap, 1}
		}
		open[e.Bid.Bidder] = s
	}
	for b, s := range open {
		emit(b, s)
	}
	return int64(i)
}

func floorMod[T ~int64](a, b T) T {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
