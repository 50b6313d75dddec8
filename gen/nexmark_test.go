package gen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weirstream/weir/mtime"
)

// TestNexmarkRules checks the rules of the reference generator on 200,000
// events.
func TestNexmarkRules(t *testing.T) {
	const n = 200_000
	g := NewNexmark(NexmarkConfig{Events: n, Seed: 1})
	c := g.Config()
	var e NexmarkEvent
	lastPerson, lastAuction := int64(nexFirstPersonID-1), int64(nexFirstAuctionID-1)
	var count, bids, hotAuctions, hotBidders, aheadAuction, aheadBidder, extra int64
	var minPrice, maxPrice int64 = 1 << 62, 0
	channels := map[string]bool{}
	for g.Next(&e) {
		i := count
		count++
		// 1:3:46, in this order, in every 50 events.
		want := KindBid
		switch i % 50 {
		case 0:
			want = KindPerson
		case 1, 2, 3:
			want = KindAuction
		}
		if e.Kind != want {
			t.Fatalf("event %d is a %s, want a %s", i, e.Kind, want)
		}
		if ts := e.Time(); ts != c.BaseTime+mtimeOf(i/10) {
			t.Fatalf("event %d at %s, want 10 events a millisecond", i, ts)
		}
		switch e.Kind {
		case KindPerson:
			p := &e.Person
			if p.ID != lastPerson+1 {
				t.Fatalf("person %d after %d", p.ID, lastPerson)
			}
			lastPerson = p.ID
			if len(p.CreditCard) != 19 || !bytes.Contains(p.EmailAddress, []byte("@")) ||
				!bytes.HasSuffix(p.EmailAddress, []byte(".com")) || p.Name == "" || p.City == "" || len(p.State) != 2 {
				t.Fatalf("person %+v", p)
			}
		case KindAuction:
			a := &e.Auction
			if a.ID != lastAuction+1 {
				t.Fatalf("auction %d after %d", a.ID, lastAuction)
			}
			lastAuction = a.ID
			if a.Seller < nexFirstPersonID || a.Seller > lastPerson+nexIDLead {
				t.Fatalf("auction %d sold by person %d, the last is %d", a.ID, a.Seller, lastPerson)
			}
			if a.Category < 10 || a.Category > 14 || a.Reserve < a.InitialBid+100 || a.Expires <= a.DateTime ||
				len(a.ItemName) > 19 || len(a.Description) > 99 {
				t.Fatalf("auction %+v", a)
			}
		case KindBid:
			b := &e.Bid
			bids++
			if b.Auction < nexFirstAuctionID || b.Auction > lastAuction+nexIDLead {
				t.Fatalf("bid for auction %d, the last is %d", b.Auction, lastAuction)
			}
			if b.Bidder < nexFirstPersonID || b.Bidder > lastPerson+nexIDLead {
				t.Fatalf("bid by person %d, the last is %d", b.Bidder, lastPerson)
			}
			if b.Auction > lastAuction {
				aheadAuction++
			}
			if b.Bidder > lastPerson {
				aheadBidder++
			}
			if (b.Auction-nexFirstAuctionID)%100 == 0 {
				hotAuctions++
			}
			if (b.Bidder-nexFirstPersonID)%100 == 1 {
				hotBidders++
			}
			minPrice, maxPrice = min(minPrice, b.Price), max(maxPrice, b.Price)
			extra += int64(len(b.Extra))
			channels[b.Channel] = true
			if !strings.HasPrefix(b.URL, "https://www.nexmark.com/") {
				t.Fatalf("bid url %s", b.URL)
			}
		}
	}
	if count != n {
		t.Fatalf("%d events, want %d", count, n)
	}
	if lastPerson-nexFirstPersonID+1 != n/50 || lastAuction-nexFirstAuctionID+1 != 3*n/50 || bids != 46*n/50 {
		t.Fatalf("persons up to %d, auctions up to %d, %d bids", lastPerson, lastAuction, bids)
	}
	share := func(x int64) float64 { return float64(x) / float64(bids) }
	t.Logf("bids: %.1f%% for hot auctions, %.1f%% by hot bidders, %.2f%% for auctions and %.2f%% by persons not there yet; prices %d to %d cents; extra %.1f bytes; %d channels",
		100*share(hotAuctions), 100*share(hotBidders), 100*share(aheadAuction), 100*share(aheadBidder), minPrice, maxPrice, float64(extra)/float64(bids), len(channels))
	// Hot auctions take half of the bids (HotAuctionRatio 2), hot bidders
	// three quarters (HotBiddersRatio 4); a few bids are for ids up to 10
	// ahead, as in the reference generator.
	if s := share(hotAuctions); s < 0.49 || s > 0.52 {
		t.Errorf("hot auctions: %.3f of the bids", s)
	}
	if s := share(hotBidders); s < 0.74 || s > 0.77 {
		t.Errorf("hot bidders: %.3f of the bids", s)
	}
	if share(aheadAuction) > 0.06 || share(aheadBidder) > 0.02 {
		t.Errorf("too many bids for ids that do not exist yet")
	}
	if minPrice < 100 || maxPrice > 100_000_000 || minPrice > 200 || maxPrice < 50_000_000 {
		t.Errorf("prices from %d to %d cents", minPrice, maxPrice)
	}
	if avg := float64(extra) / float64(bids); avg < 64 || avg > 72 {
		t.Errorf("bid extra of %.1f bytes on average, want 68", avg)
	}
	if len(channels) < 1000 {
		t.Errorf("%d channels", len(channels))
	}
}

func mtimeOf(ms int64) mtime.Time { return mtime.Time(ms) }

func TestNexmarkNoAlloc(t *testing.T) {
	g := NewNexmark(NexmarkConfig{Seed: 1})
	var e NexmarkEvent
	for range 1000 {
		g.Next(&e)
	}
	if a := testing.AllocsPerRun(10000, func() { g.Next(&e) }); a != 0 {
		t.Errorf("%v allocations an event", a)
	}
}

func TestNexmarkJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := NexmarkJSON(&buf, Options{Events: 5000, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	g := NewNexmark(NexmarkConfig{Events: 5000, Seed: 4})
	var e NexmarkEvent
	kinds := map[string]int{}
	for i, line := range lines(buf.Bytes()) {
		if !g.Next(&e) {
			t.Fatalf("more lines than events")
		}
		if got := e.AppendJSON(nil); !bytes.Equal(got, line) {
			t.Fatalf("line %d: %s, AppendJSON gives %s", i+1, line, got)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		kind, _ := m["type"].(string)
		kinds[kind]++
		if kind != e.Kind.String() || m["ts"] != e.Time().String() {
			t.Fatalf("line %d: type %v ts %v for a %s at %s", i+1, m["type"], m["ts"], e.Kind, e.Time())
		}
		want := map[string][]string{
			"person":  {"id", "name", "emailAddress", "creditCard", "city", "state", "ts", "extra"},
			"auction": {"id", "itemName", "description", "initialBid", "reserve", "ts", "expires", "seller", "category", "extra"},
			"bid":     {"auction", "bidder", "price", "channel", "url", "ts", "extra"},
		}[kind]
		if len(m) != len(want)+1 {
			t.Fatalf("line %d: fields %v, want type and %v", i+1, m, want)
		}
		for _, f := range want {
			if _, ok := m[f]; !ok {
				t.Fatalf("line %d: no %s: %s", i+1, f, line)
			}
		}
	}
	if kinds["person"] != 100 || kinds["auction"] != 300 || kinds["bid"] != 4600 {
		t.Errorf("kinds %v", kinds)
	}
}

func TestNexmarkConfig(t *testing.T) {
	g := NewNexmark(NexmarkConfig{Events: 10, Rate: 1, PersonProportion: 2, AuctionProportion: 2, BidProportion: 1})
	var e NexmarkEvent
	var kinds []string
	for g.Next(&e) {
		kinds = append(kinds, e.Kind.String())
	}
	if got := strings.Join(kinds, " "); got != "person person auction auction bid person person auction auction bid" {
		t.Errorf("kinds %s", got)
	}
	if e.Time() != DefaultStart+9000 {
		t.Errorf("the 10th event at 1 a second at %s", e.Time())
	}
	if KindBid.String() != "bid" || NexmarkKind(9).String() != "NexmarkKind(9)" {
		t.Error("NexmarkKind.String")
	}
}
