package gen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/weirstream/weir/mtime"
)

// The ledger and its events: deterministic, pinned, and consistent with each
// other and with the figures they promise.
func TestLedgerStreams(t *testing.T) {
	for _, c := range []struct {
		name   string
		write  func(io.Writer, Options) error
		golden string // sha256 of the stream of 10,000 orders with seed 1
	}{
		{"ledger", Ledger, "e0047790d57508a3d955462ce6a37f0278804bf6a33747e264d0e3c7f7db21c7"},
		{"ledger-events", LedgerEvents, "2d4b258339bd1c8dd6704b519416d094a81c22049c6a1989b4a1acca260d39c0"},
		{"ledger-checkouts", LedgerCheckouts, "faf424fde8306f39fa23428c5405a4ecc7eb02811eec0029435f23aa965727b1"},
	} {
		o := Options{Events: 20_000, Seed: 7}
		a, _ := digest(t, c.write, o)
		b, _ := digest(t, c.write, o)
		o.Seed = 8
		s8, _ := digest(t, c.write, o)
		if a != b || a == s8 {
			t.Errorf("%s: not deterministic, or the seed does nothing", c.name)
		}
		g, _ := digest(t, c.write, Options{Events: 10_000, Seed: 1})
		if got := fmt.Sprintf("%x", g); got != c.golden {
			t.Errorf("%s: sha256 %s, want %s: if the change of output is meant, update the golden sum", c.name, got, c.golden)
		}
	}
	if _, n := digest(t, Ledger, Options{Events: 12345, Seed: 3, Days: 2}); n != 12345 {
		t.Errorf("ledger: %d lines, want 12345", n)
	}
	if err := Ledger(&failWriter{n: 2}, Options{Events: 100_000}); err == nil {
		t.Error("ledger: no write error")
	}
	if err := LedgerEvents(&failWriter{n: 2}, Options{Events: 100_000}); err == nil {
		t.Error("ledger-events: no write error")
	}
	if err := LedgerCheckouts(&failWriter{n: 2}, Options{Events: 100_000}); err == nil {
		t.Error("ledger-checkouts: no write error")
	}

	const orders = 100_000
	type entry struct {
		plat   string
		ts     mtime.Time
		events int
	}
	var ledger, events bytes.Buffer
	Ledger(&ledger, Options{Events: orders, Seed: 1})
	LedgerEvents(&events, Options{Events: orders, Seed: 1})
	entries := map[string]*entry{}
	var last mtime.Time
	sc := bufio.NewScanner(&ledger)
	for sc.Scan() {
		var l struct {
			ID       string  `json:"order_id"`
			Platform string  `json:"platform"`
			Amount   float64 `json:"amount"`
			TS       string  `json:"ts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		ts, _ := mtime.Parse([]byte(l.TS))
		if ts < last || l.Amount <= 0 {
			t.Fatalf("ledger line %s", sc.Text())
		}
		last = ts
		entries[l.ID] = &entry{plat: l.Platform, ts: ts}
	}
	if len(entries) != orders || last < DefaultStart+day-hour || last > DefaultStart+day+hour {
		t.Fatalf("ledger: %d orders up to %s", len(entries), last)
	}
	var prev, lastArr mtime.Time
	lines, unmatched, late, dups := 0, 0, 0, 0
	sc = bufio.NewScanner(&events)
	for sc.Scan() {
		var e struct {
			EventID   string `json:"event_id"`
			OrderID   string `json:"order_id"`
			Platform  string `json:"platform"`
			EventName string `json:"event_name"`
			TS        string `json:"ts"`
			Arrival   string `json:"arrival"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		lines++
		ts, _ := mtime.Parse([]byte(e.TS))
		arr, _ := mtime.Parse([]byte(e.Arrival))
		if arr < prev || arr < ts || e.EventName != "order_completed" || len(e.EventID) != 16 {
			t.Fatalf("events line %d: %s", lines, sc.Text())
		}
		prev, lastArr = arr, arr
		en := entries[e.OrderID]
		if en == nil {
			unmatched++
			continue
		}
		if en.plat != e.Platform || ts < en.ts+80 || ts >= en.ts+480 {
			t.Fatalf("event %s of %+v", sc.Text(), en)
		}
		if en.events++; en.events > 1 {
			dups++
		}
		if arr-ts >= 5*minute {
			late++
			if en.plat == "web" || arr-ts > 6*hour+minute {
				t.Fatalf("late event %s", sc.Text())
			}
		}
	}
	n := map[string]int{}
	lost := map[string]int{}
	for _, e := range entries {
		n[e.plat]++
		if e.events == 0 {
			lost[e.plat]++
		}
	}
	for _, p := range []string{"iOS", "Android", "web"} {
		share := float64(lost[p]) / float64(n[p])
		if d := share - LedgerLostShare(p); d < -0.0002 || d > 0.0002 {
			t.Errorf("%s: %.4f%% of %d orders lost, want %v%%", p, 100*share, n[p], 100*LedgerLostShare(p))
		}
	}
	if f := float64(n["iOS"]) / orders; f < 0.45 || f > 0.47 {
		t.Errorf("iOS: %.3f of the orders", f)
	}
	// A day of orders after the ledger: about as many again, unmatched.
	if unmatched < orders*9/10 || unmatched > orders*11/10 || lastArr < last+day {
		t.Errorf("%d unmatched events, the last arriving at %s (the ledger ends at %s)", unmatched, lastArr, last)
	}
	if f := float64(late) / float64(orders); f < 0.006 || f > 0.011 {
		t.Errorf("late: %.4f", f)
	}
	if f := float64(dups) / float64(orders); f < 0.0005 || f > 0.0015 {
		t.Errorf("duplicates: %.4f", f)
	}
	if LedgerLostShare("kiosk") != 0 {
		t.Error("unknown platform")
	}
}

// The checkout_start events: one per order of the ledger, by its user, 300 ms
// to 1.8 s before it, in arrival order; 98.8% of the orders whose
// order_completed is never sent have theirs within 2 s (the phone online),
// and about 1.1% of the other phone orders' arrive 5 minutes to 6 hours late.
func TestLedgerCheckouts(t *testing.T) {
	const orders = 100_000
	o := Options{Events: orders, Seed: 1}
	var ledger, events, checkouts bytes.Buffer
	Ledger(&ledger, o)
	LedgerEvents(&events, o)
	LedgerCheckouts(&checkouts, o)
	type order struct {
		user, plat string
		ts         mtime.Time
		sent       bool
		checkouts  int
	}
	var byID []*order
	sc := bufio.NewScanner(&ledger)
	for sc.Scan() {
		var l struct {
			UserID   string `json:"user_id"`
			Platform string `json:"platform"`
			TS       string `json:"ts"`
		}
		json.Unmarshal(sc.Bytes(), &l)
		ts, _ := mtime.Parse([]byte(l.TS))
		byID = append(byID, &order{user: l.UserID, plat: l.Platform, ts: ts})
	}
	users := map[string]bool{}
	for _, o := range byID {
		users[o.user] = true
	}
	if len(byID) != orders || len(users) < orders/4 || len(users) > orders/3 {
		t.Fatalf("%d orders by %d users", len(byID), len(users))
	}
	sc = bufio.NewScanner(&events)
	for sc.Scan() {
		var e struct {
			OrderID string `json:"order_id"`
		}
		json.Unmarshal(sc.Bytes(), &e)
		var n int
		if _, err := fmt.Sscanf(e.OrderID, "o%d", &n); err == nil && n <= orders {
			byID[n-1].sent = true
		}
	}
	// Each checkout is matched to its order by user and time: the order of
	// that user 300 ms to 1.8 s after it.
	byUser := map[string][]*order{}
	for _, o := range byID {
		byUser[o.user] = append(byUser[o.user], o)
	}
	var prev mtime.Time
	lines := 0
	onlineLost, lost, lateSent, sent := 0, 0, 0, 0
	sc = bufio.NewScanner(&checkouts)
	for sc.Scan() {
		var c struct {
			EventID   string `json:"event_id"`
			UserID    string `json:"user_id"`
			Platform  string `json:"platform"`
			EventName string `json:"event_name"`
			TS        string `json:"ts"`
			Arrival   string `json:"arrival"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		lines++
		ts, _ := mtime.Parse([]byte(c.TS))
		arr, _ := mtime.Parse([]byte(c.Arrival))
		if arr < prev || arr < ts || c.EventName != "checkout_start" || len(c.EventID) != 16 {
			t.Fatalf("checkouts line %d: %s", lines, sc.Text())
		}
		prev = arr
		var of *order
		for _, o := range byUser[c.UserID] {
			if o.ts-ts >= 300 && o.ts-ts < 1800 && o.plat == c.Platform && o.checkouts == 0 {
				of = o
				break
			}
		}
		if of == nil {
			t.Fatalf("a checkout of no order: %s", sc.Text())
		}
		of.checkouts++
		online := arr-ts < 2000
		if !online && (of.plat == "web" || arr-ts < 5*minute || arr-ts > 6*hour+minute) {
			t.Fatalf("checkout %s of %+v", sc.Text(), of)
		}
		switch {
		case !of.sent:
			lost++
			if online {
				onlineLost++
			}
		case of.plat != "web":
			sent++
			if !online {
				lateSent++
			}
		}
	}
	if lines != orders {
		t.Errorf("%d checkouts of %d orders", lines, orders)
	}
	if f := float64(onlineLost) / float64(lost); lost < 1500 || f < 0.98 || f > 0.995 {
		t.Errorf("%d of %d orders never sent had their checkout within 2 s: %.4f, want about 0.988", onlineLost, lost, f)
	}
	if f := float64(lateSent) / float64(sent); f < 0.009 || f > 0.013 {
		t.Errorf("%d of %d phone orders sent had their checkout late: %.4f, want about 0.011", lateSent, sent, f)
	}
}
