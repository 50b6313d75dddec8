package gen

import (
	"io"
	"math"
	"math/bits"
	"strconv"
	"sync"

	"github.com/weirstream/weir/mtime"
)

// The Nexmark generator follows the rules of the reference generator of the
// Nexmark benchmark (github.com/nexmark/nexmark, NexmarkGenerator,
// GeneratorConfig and the Person, Auction and Bid generators): event n is a
// person, an auction or a bid by n modulo the sum of the proportions; ids
// start at 1000; bids and auctions point at hot auctions, sellers and bidders
// or at recent ones, up to 10 ids ahead; prices are 10^(6u) dollar cents;
// strings and the extra payload have the reference lengths. It is written
// from those rules; it draws its random numbers in its own order, so its
// values are not those of the Java generator.

const (
	nexFirstPersonID   = 1000
	nexFirstAuctionID  = 1000
	nexFirstCategoryID = 10
	nexCategories      = 5
	nexIDLead          = 10  // ids ahead of the last one that may be referenced
	nexHotBatch        = 100 // hot auctions, sellers and bidders are the first of a batch of 100
	nexChannels        = 10000
)

// NexmarkKind tells which record a NexmarkEvent holds.
type NexmarkKind uint8

// The three kinds of Nexmark events.
const (
	KindPerson NexmarkKind = iota + 1
	KindAuction
	KindBid
)

// String returns "person", "auction" or "bid", as in the "type" of a JSON line.
func (k NexmarkKind) String() string {
	switch k {
	case KindPerson:
		return "person"
	case KindAuction:
		return "auction"
	case KindBid:
		return "bid"
	}
	return "NexmarkKind(" + strconv.Itoa(int(k)) + ")"
}

// Person is a new user of the auction site. The byte slices belong to the
// generator and are overwritten by the next call of Nexmark.Next; copy what
// you keep.
type Person struct {
	ID           int64
	Name         string // "Peter Shultz"
	EmailAddress []byte
	CreditCard   []byte // "1234 5678 9012 3456"
	City         string
	State        string
	DateTime     mtime.Time
	Extra        []byte // padding to the average size of a person
}

// Auction is a new item for sale. Prices are in cents. The byte slices belong
// to the generator and are overwritten by the next call of Nexmark.Next.
type Auction struct {
	ID          int64
	ItemName    []byte
	Description []byte
	InitialBid  int64
	Reserve     int64
	DateTime    mtime.Time
	Expires     mtime.Time
	Seller      int64 // a Person.ID
	Category    int64 // 10 to 14
	Extra       []byte
}

// Bid is a bid for an auction. The price is in cents. Extra belongs to the
// generator and is overwritten by the next call of Nexmark.Next.
type Bid struct {
	Auction  int64 // an Auction.ID
	Bidder   int64 // a Person.ID
	Price    int64
	Channel  string // "Google", "Facebook", "Baidu", "Apple" or "channel-N"
	URL      string
	DateTime mtime.Time
	Extra    []byte
}

// NexmarkEvent is one event of the Nexmark stream: Kind says which of
// Person, Auction and Bid holds it; the other two are stale.
type NexmarkEvent struct {
	Kind    NexmarkKind
	Person  Person
	Auction Auction
	Bid     Bid
}

// Time returns the event time of the event.
func (e *NexmarkEvent) Time() mtime.Time {
	switch e.Kind {
	case KindPerson:
		return e.Person.DateTime
	case KindAuction:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}

// NexmarkConfig configures a Nexmark generator. The zero value of a field
// means the reference generator's default, given in brackets.
type NexmarkConfig struct {
	// Events is the number of events to generate; 0 or less means no end.
	Events int64
	// Seed seeds the random generator.
	Seed uint64
	// BaseTime is the event time of the first event [DefaultStart].
	BaseTime mtime.Time
	// Rate is the number of events per second of event time [10,000].
	Rate int

	// PersonProportion, AuctionProportion and BidProportion are the
	// proportions of the three kinds [1, 3, 46]: out of every 50 events, the
	// first is a person, the next 3 auctions and the other 46 bids.
	PersonProportion, AuctionProportion, BidProportion int
	// HotAuctionRatio: a bid is for a hot auction with chance 1-1/ratio [2].
	HotAuctionRatio int
	// HotSellersRatio: an auction is by a hot seller with chance 1-1/ratio [4].
	HotSellersRatio int
	// HotBiddersRatio: a bid is by a hot bidder with chance 1-1/ratio [4].
	HotBiddersRatio int
	// NumActivePeople is how many of the latest persons may sell or bid [1000].
	NumActivePeople int
	// NumInFlightAuctions is how many of the latest auctions get bids, and
	// sets how long auctions last [100].
	NumInFlightAuctions int
	// AvgPersonByteSize, AvgAuctionByteSize and AvgBidByteSize set the length
	// of the Extra payloads [200, 500, 100].
	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int
}

func (c NexmarkConfig) withDefaults() NexmarkConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.BaseTime == 0 {
		c.BaseTime = DefaultStart
	}
	def(&c.Rate, 10000)
	if c.PersonProportion <= 0 && c.AuctionProportion <= 0 && c.BidProportion <= 0 {
		c.PersonProportion, c.AuctionProportion, c.BidProportion = 1, 3, 46
	}
	// Every kind must occur: bids need auctions and persons.
	def(&c.PersonProportion, 1)
	def(&c.AuctionProportion, 1)
	c.BidProportion = max(c.BidProportion, 0)
	def(&c.HotAuctionRatio, 2)
	def(&c.HotSellersRatio, 4)
	def(&c.HotBiddersRatio, 4)
	def(&c.NumActivePeople, 1000)
	def(&c.NumInFlightAuctions, 100)
	def(&c.AvgPersonByteSize, 200)
	def(&c.AvgAuctionByteSize, 500)
	def(&c.AvgBidByteSize, 100)
	return c
}

// Nexmark generates the Nexmark stream in event-time order, without
// allocating once it runs. It is not safe for concurrent use.
type Nexmark struct {
	c           NexmarkConfig
	r           rng
	n           int64 // events generated
	total       int64 // sum of the proportions
	auctionSpan int64 // events until NumInFlightAuctions more auctions

	email, card, item, desc, extra []byte
}

// NewNexmark returns a generator of the stream that cfg describes.
func NewNexmark(cfg NexmarkConfig) *Nexmark {
	c := cfg.withDefaults()
	g := &Nexmark{c: c}
	g.r.pcg.Seed(c.Seed, 0x4e65786d61726b)
	g.total = int64(c.PersonProportion + c.AuctionProportion + c.BidProportion)
	g.auctionSpan = int64(c.NumInFlightAuctions) * g.total / int64(c.AuctionProportion)
	g.email = make([]byte, 0, 32)
	g.card = make([]byte, 0, 20)
	g.item = make([]byte, 0, 20)
	g.desc = make([]byte, 0, 100)
	g.extra = make([]byte, 0, max(c.AvgPersonByteSize, c.AvgAuctionByteSize, c.AvgBidByteSize)*6/5+1)
	nexTables.Do(buildNexmarkTables)
	return g
}

// Config returns the configuration, defaults filled in.
func (g *Nexmark) Config() NexmarkConfig { return g.c }

// Next fills e with the next event and reports whether there was one: it
// returns false once Config().Events events have been generated.
func (g *Nexmark) Next(e *NexmarkEvent) bool {
	if g.c.Events > 0 && g.n >= g.c.Events {
		return false
	}
	id := g.n
	g.n++
	ts := g.timestamp(id)
	switch rem := id % g.total; {
	case rem < int64(g.c.PersonProportion):
		e.Kind = KindPerson
		g.person(&e.Person, id, ts)
	case rem < int64(g.c.PersonProportion+g.c.AuctionProportion):
		e.Kind = KindAuction
		g.auction(&e.Auction, id, ts)
	default:
		e.Kind = KindBid
		g.bid(&e.Bid, id, ts)
	}
	return true
}

// timestamp is the event time of event n: events are evenly spaced at Rate.
func (g *Nexmark) timestamp(n int64) mtime.Time {
	return g.c.BaseTime + mtime.Time(n*1000/int64(g.c.Rate))
}

// lastPerson is the base-0 id of the latest person at event id (the current
// one if id is a person).
func (g *Nexmark) lastPerson(id int64) int64 {
	p := int64(g.c.PersonProportion)
	epoch, off := id/g.total, id%g.total
	if off >= p {
		off = p - 1
	}
	return epoch*p + off
}

// lastAuction is the base-0 id of the latest auction at event id (the current
// one if id is an auction).
func (g *Nexmark) lastAuction(id int64) int64 {
	p, a := int64(g.c.PersonProportion), int64(g.c.AuctionProportion)
	epoch, off := id/g.total, id%g.total
	switch {
	case off < p:
		epoch--
		off = a - 1
	case off >= p+a:
		off = a - 1
	default:
		off -= p
	}
	return epoch*a + off
}

// somePerson picks one of the active persons, or one of the next few.
func (g *Nexmark) somePerson(id int64) int64 {
	people := g.lastPerson(id) + 1
	active := min(people, int64(g.c.NumActivePeople))
	return people - active + g.r.int64n(active+nexIDLead)
}

// someAuction picks one of the auctions in flight, or one of the next few.
func (g *Nexmark) someAuction(id int64) int64 {
	last := g.lastAuction(id)
	first := max(last-int64(g.c.NumInFlightAuctions), 0)
	return first + g.r.int64n(last-first+1+nexIDLead)
}

func (g *Nexmark) person(p *Person, id int64, ts mtime.Time) {
	t := &nexTab
	p.ID = g.lastPerson(id) + nexFirstPersonID
	p.Name = t.names[g.r.intn(len(t.names))]
	e := g.appendString(g.email[:0], 7, ' ')
	e = append(e, '@')
	e = g.appendString(e, 5, ' ')
	g.email = append(e, ".com"...)
	c := g.card[:0]
	for i := range 4 {
		if i > 0 {
			c = append(c, ' ')
		}
		c = appendPadded(c, int64(g.r.intn(10000)), 4)
	}
	g.card = c
	p.EmailAddress, p.CreditCard = g.email, g.card
	p.City = nexCities[g.r.intn(len(nexCities))]
	p.State = nexStates[g.r.intn(len(nexStates))]
	p.DateTime = ts
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = g.appendExtra(size, g.c.AvgPersonByteSize)
}

func (g *Nexmark) auction(a *Auction, id int64, ts mtime.Time) {
	a.ID = g.lastAuction(id) + nexFirstAuctionID
	if g.r.intn(g.c.HotSellersRatio) > 0 {
		a.Seller = g.lastPerson(id) / nexHotBatch * nexHotBatch
	} else {
		a.Seller = g.somePerson(id)
	}
	a.Seller += nexFirstPersonID
	a.Category = nexFirstCategoryID + int64(g.r.intn(nexCategories))
	a.InitialBid = g.price()
	a.Reserve = a.InitialBid + g.price()
	a.DateTime = ts
	// Auctions last until about NumInFlightAuctions more have started.
	horizon := int64(g.timestamp(id+g.auctionSpan) - ts)
	a.Expires = ts + 1 + mtime.Time(g.r.int64n(max(2*horizon, 1)))
	g.item = g.appendString(g.item[:0], 20, ' ')
	g.desc = g.appendString(g.desc[:0], 100, ' ')
	a.ItemName, a.Description = g.item, g.desc
	a.Extra = g.appendExtra(8+len(a.ItemName)+len(a.Description)+8+8+8+8+8, g.c.AvgAuctionByteSize)
}

func (g *Nexmark) bid(b *Bid, id int64, ts mtime.Time) {
	t := &nexTab
	if g.r.intn(g.c.HotAuctionRatio) > 0 {
		b.Auction = g.lastAuction(id) / nexHotBatch * nexHotBatch
	} else {
		b.Auction = g.someAuction(id)
	}
	b.Auction += nexFirstAuctionID
	if g.r.intn(g.c.HotBiddersRatio) > 0 {
		// The second person of the batch, so that hot bidders are not hot
		// sellers.
		b.Bidder = g.lastPerson(id)/nexHotBatch*nexHotBatch + 1
	} else {
		b.Bidder = g.somePerson(id)
	}
	b.Bidder += nexFirstPersonID
	b.Price = g.price()
	if g.r.intn(2) > 0 {
		i := g.r.intn(len(nexHotChannels))
		b.Channel, b.URL = nexHotChannels[i], t.hotURLs[i]
	} else {
		i := g.r.intn(nexChannels)
		b.Channel, b.URL = t.channels[i], t.urls[i]
	}
	b.DateTime = ts
	b.Extra = g.appendExtra(8+8+8+8, g.c.AvgBidByteSize)
}

// price is a price in cents from $1 to $1,000,000, even on a log scale.
func (g *Nexmark) price() int64 {
	return int64(math.Round(math.Pow(10, g.r.float()*6) * 100))
}

// appendString appends 3 to maxLen-1 random lower-case letters, about one in
// 13 of them replaced by space; with space ' ' the result is trimmed.
func (g *Nexmark) appendString(b []byte, maxLen int, space byte) []byte {
	return appendRandomString(&g.r, b, maxLen, space)
}

func appendRandomString(r *rng, b []byte, maxLen int, space byte) []byte {
	n := 3 + r.intn(maxLen-3)
	start := len(b)
	var x uint64
	k := 0
	for range n {
		if k == 0 {
			x, k = r.u64(), 7 // 338^7 < 2^64
		}
		c := x % 338 // 338 = 13*26: one in 13 is a space
		x /= 338
		k--
		if c < 26 {
			b = append(b, space)
		} else {
			b = append(b, byte('a'+c%26))
		}
	}
	if space != ' ' {
		return b
	}
	s := b[start:]
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := len(s)
	for j > i && s[j-1] == ' ' {
		j--
	}
	copy(s, s[i:j])
	return b[:start+j-i]
}

// appendExtra returns the extra payload: letters, so that an event of size
// bytes grows to avg bytes on average.
func (g *Nexmark) appendExtra(size, avg int) []byte {
	b := g.extra[:0]
	if size > avg {
		return b
	}
	want := avg - size
	delta := int(math.Round(float64(want) * 0.2))
	n := want - delta
	if delta > 0 {
		n += g.r.intn(2 * delta)
	}
	var x uint64
	k := 0
	for range n {
		if k == 0 {
			x, k = g.r.u64(), 13 // 26^13 < 2^64
		}
		b = append(b, byte('a'+x%26))
		x /= 26
		k--
	}
	g.extra = b
	return b
}

var (
	nexFirstNames  = [...]string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	nexLastNames   = [...]string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	nexCities      = [...]string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	nexStates      = [...]string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	nexHotChannels = [...]string{"Google", "Facebook", "Baidu", "Apple"}
)

// nexTab holds the strings built once: full names, and the channels with
// their URLs (fixed per channel, the same for every seed).
var (
	nexTables sync.Once
	nexTab    struct {
		names          []string
		channels, urls []string
		hotURLs        [len(nexHotChannels)]string
	}
)

func buildNexmarkTables() {
	t := &nexTab
	for _, f := range nexFirstNames {
		for _, l := range nexLastNames {
			t.names = append(t.names, f+" "+l)
		}
	}
	r := newRNG(0x4e45584d41524b, 0x75726c)
	baseURL := func(b []byte) []byte {
		b = append(b, "https://www.nexmark.com/"...)
		for range 3 {
			b = appendRandomString(r, b, 5, '_')
			b = append(b, '/')
		}
		return append(b, "item.htm?query=1"...)
	}
	var b []byte
	for i := range t.hotURLs {
		b = baseURL(b[:0])
		t.hotURLs[i] = string(b)
	}
	// All the channels and URLs in one string, sliced.
	var all []byte
	ends := make([]int, 0, 2*nexChannels)
	for i := range nexChannels {
		all = append(all, "channel-"...)
		all = strconv.AppendInt(all, int64(i), 10)
		ends = append(ends, len(all))
		all = baseURL(all)
		if r.intn(10) > 0 {
			all = append(all, "&channel_id="...)
			id := int64(int32(bits.Reverse32(uint32(i))))
			all = strconv.AppendInt(all, max(id, -id), 10)
		}
		ends = append(ends, len(all))
	}
	s := string(all)
	t.channels = make([]string, nexChannels)
	t.urls = make([]string, nexChannels)
	start := 0
	for i := range nexChannels {
		t.channels[i] = s[start:ends[2*i]]
		t.urls[i] = s[ends[2*i]:ends[2*i+1]]
		start = ends[2*i+1]
	}
}

// AppendJSON appends e as one JSON object, without a newline:
//
//	{"type":"person","id":…,"name":…,"emailAddress":…,"creditCard":…,"city":…,"state":…,"ts":…,"extra":…}
//	{"type":"auction","id":…,"itemName":…,"description":…,"initialBid":…,"reserve":…,"ts":…,"expires":…,"seller":…,"category":…,"extra":…}
//	{"type":"bid","auction":…,"bidder":…,"price":…,"channel":…,"url":…,"ts":…,"extra":…}
//
// The names are those of the Nexmark schema, except the event time dateTime,
// which is "ts" (RFC 3339 UTC with milliseconds, as is "expires").
func (e *NexmarkEvent) AppendJSON(b []byte) []byte {
	var tf timeFmt
	return e.appendJSON(b, &tf)
}

func (e *NexmarkEvent) appendJSON(b []byte, tf *timeFmt) []byte {
	switch e.Kind {
	case KindPerson:
		p := &e.Person
		b = append(b, `{"type":"person","id":`...)
		b = strconv.AppendInt(b, p.ID, 10)
		b = append(b, `,"name":"`...)
		b = appendJSONString(b, p.Name)
		b = append(b, `","emailAddress":"`...)
		b = appendJSONString(b, p.EmailAddress)
		b = append(b, `","creditCard":"`...)
		b = appendJSONString(b, p.CreditCard)
		b = append(b, `","city":"`...)
		b = appendJSONString(b, p.City)
		b = append(b, `","state":"`...)
		b = appendJSONString(b, p.State)
		b = append(b, `","ts":"`...)
		b = tf.append(b, p.DateTime)
		b = append(b, `","extra":"`...)
		b = appendJSONString(b, p.Extra)
	case KindAuction:
		a := &e.Auction
		b = append(b, `{"type":"auction","id":`...)
		b = strconv.AppendInt(b, a.ID, 10)
		b = append(b, `,"itemName":"`...)
		b = appendJSONString(b, a.ItemName)
		b = append(b, `","description":"`...)
		b = appendJSONString(b, a.Description)
		b = append(b, `","initialBid":`...)
		b = strconv.AppendInt(b, a.InitialBid, 10)
		b = append(b, `,"reserve":`...)
		b = strconv.AppendInt(b, a.Reserve, 10)
		b = append(b, `,"ts":"`...)
		b = tf.append(b, a.DateTime)
		b = append(b, `","expires":"`...)
		b = a.Expires.AppendFormat(b)
		b = append(b, `","seller":`...)
		b = strconv.AppendInt(b, a.Seller, 10)
		b = append(b, `,"category":`...)
		b = strconv.AppendInt(b, a.Category, 10)
		b = append(b, `,"extra":"`...)
		b = appendJSONString(b, a.Extra)
	default:
		x := &e.Bid
		b = append(b, `{"type":"bid","auction":`...)
		b = strconv.AppendInt(b, x.Auction, 10)
		b = append(b, `,"bidder":`...)
		b = strconv.AppendInt(b, x.Bidder, 10)
		b = append(b, `,"price":`...)
		b = strconv.AppendInt(b, x.Price, 10)
		b = append(b, `,"channel":"`...)
		b = appendJSONString(b, x.Channel)
		b = append(b, `","url":"`...)
		b = appendJSONString(b, x.URL)
		b = append(b, `","ts":"`...)
		b = tf.append(b, x.DateTime)
		b = append(b, `","extra":"`...)
		b = appendJSONString(b, x.Extra)
	}
	return append(b, `"}`...)
}

// WriteJSON writes the generator's remaining events to w as JSON lines (see
// NexmarkEvent.AppendJSON), in event-time order. With no Events limit it
// writes until w fails.
func (g *Nexmark) WriteJSON(w io.Writer) error {
	o := newOut(w)
	var e NexmarkEvent
	var tf timeFmt
	for o.err == nil && g.Next(&e) {
		o.buf = e.appendJSON(o.buf, &tf)
		o.line()
	}
	return o.flush()
}

// NexmarkJSON writes o.Events Nexmark events to w as JSON lines, starting at
// o.Start, at the reference rate of 10,000 events a second of event time
// (o.Days is not used), with the reference generator's defaults. Use
// NewNexmark and WriteJSON for other settings.
func NexmarkJSON(w io.Writer, o Options) error {
	o = o.withDefaults()
	return NewNexmark(NexmarkConfig{Events: int64(o.Events), Seed: o.Seed, BaseTime: o.Start}).WriteJSON(w)
}
