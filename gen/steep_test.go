package gen

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/weirstream/weir/mtime"
)

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: %.3f%%, want %.3f%% ± %.3f", what, got, want, tol)
	}
}

// TestSteepShape measures the figures of the chapter on 200,000 lines.
func TestSteepShape(t *testing.T) {
	o := Options{Events: 200_000, Seed: 1}
	s := measure(t, Steep, o, "event_id")
	s.report(t)
	if s.Lines != o.Events {
		t.Fatalf("%d lines, want %d", s.Lines, o.Events)
	}
	if s.Unsorted > 0 {
		t.Errorf("%d lines arrive before the line above them", s.Unsorted)
	}
	if s.Early > 0 || s.TooLate > 0 {
		t.Errorf("%d lines arrive before they happen, %d more than 6 hours late", s.Early, s.TooLate)
	}
	within(t, "within 2 s", pct(s.Within2s, s.Lines), 99.1, 0.2)
	within(t, "late, 5 min to 6 h", pct(s.Late, s.Lines), 0.9, 0.1)
	if b := pct(s.Between, s.Lines); b > 0.01 {
		t.Errorf("%.3f%% arrive between 2 s and 5 min late", b)
	}
	if s.WebLate > 0 {
		t.Errorf("%d web lines are late", s.WebLate)
	}
	within(t, "out of order", pct(s.OutOfOrder, s.Lines), 12.1, 0.5)
	within(t, "second deliveries", pct(s.Dups, s.Lines), 0.1, 0.03)
	// Table 1: 0.37% of the events are more than an hour late, 0.11% more
	// than 3 hours, out of 0.9%.
	within(t, "late by more than 1 h, of the late", pct(s.LateOver1h, s.Late), 41, 6)
	within(t, "late by more than 3 h, of the late", pct(s.LateOver3h, s.Late), 12, 4)
	// The lines cover the day.
	if s.Start < DefaultStart || s.Start > DefaultStart+10*minute ||
		s.End < DefaultStart+day-10*minute || s.End > DefaultStart+day+10*minute {
		t.Errorf("event times from %s to %s, want one day from %s", s.Start, s.End, DefaultStart)
	}
}

// TestSteepDefault measures the default stream: a million lines over a day.
func TestSteepDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("a million lines")
	}
	s := measure(t, Steep, Options{Seed: 1}, "event_id")
	s.report(t)
	if s.Lines != DefaultEvents || s.Unsorted > 0 || s.Between > 0 || s.WebLate > 0 || s.TooLate > 0 {
		t.Errorf("%+v", s)
	}
	within(t, "within 2 s", pct(s.Within2s, s.Lines), 99.1, 0.2)
	within(t, "late, 5 min to 6 h", pct(s.Late, s.Lines), 0.9, 0.1)
	within(t, "out of order", pct(s.OutOfOrder, s.Lines), 12.1, 0.5)
	within(t, "second deliveries", pct(s.Dups, s.Lines), 0.1, 0.03)
}

// TestSteepDensity checks that the share of out-of-order lines does not
// depend on the density of the stream.
func TestSteepDensity(t *testing.T) {
	for _, o := range []Options{
		{Events: 100_000, Seed: 2, Days: 1},
		{Events: 200_000, Seed: 3, Days: 2, Start: DefaultStart + 7*hour + 123},
		{Events: 500_000, Seed: 4, Days: 1},
	} {
		s := measure(t, Steep, o, "event_id")
		s.report(t)
		within(t, "out of order", pct(s.OutOfOrder, s.Lines), 12.1, 0.5)
		within(t, "within 2 s", pct(s.Within2s, s.Lines), 99.1, 0.2)
		within(t, "late", pct(s.Late, s.Lines), 0.9, 0.1)
		start := o.withDefaults().Start
		end := start + mtime.Time(o.Days)*day
		if s.Start < start || s.End > end+hour || s.End < end-hour {
			t.Errorf("%+v: event times from %s to %s", o, s.Start, s.End)
		}
	}
}

// TestSteepSparse checks that a sparse stream keeps its lines within 2 s
// (the jitter has a cap), at the price of less reordering.
func TestSteepSparse(t *testing.T) {
	s := measure(t, Steep, Options{Events: 20_000, Seed: 5, Days: 1}, "event_id")
	s.report(t)
	if s.Between > 0 || s.WebLate > 0 || s.Unsorted > 0 {
		t.Errorf("%+v", s)
	}
	within(t, "within 2 s", pct(s.Within2s, s.Lines), 99.1, 0.3)
}

type steepLine struct {
	EventID   string   `json:"event_id"`
	UserID    string   `json:"user_id"`
	Card      *string  `json:"card"`
	Platform  string   `json:"platform"`
	EventName string   `json:"event_name"`
	Amount    *float64 `json:"amount"`
	TS        string   `json:"ts"`
	Arrival   string   `json:"arrival"`
}

// TestSteepFields decodes every line with encoding/json and checks the
// fields, the sessions, and the second deliveries.
func TestSteepFields(t *testing.T) {
	data := generate(t, Steep, Options{Events: 50_000, Seed: 9})
	first := map[string]steepLine{}
	names := map[string]int{}
	platforms := map[string]int{}
	userPlatform := map[string]string{}
	for i, line := range lines(data) {
		var l steepLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		names[l.EventName]++
		platforms[l.Platform]++
		if p, ok := userPlatform[l.UserID]; ok && p != l.Platform {
			t.Fatalf("user %s on %s and %s", l.UserID, p, l.Platform)
		}
		userPlatform[l.UserID] = l.Platform
		order := l.EventName == "checkout_start" || l.EventName == "order_completed"
		if (l.Card != nil) != order {
			t.Fatalf("line %d: card on %s: %s", i+1, l.EventName, line)
		}
		if (l.Amount != nil) != (l.EventName == "order_completed") {
			t.Fatalf("line %d: amount on %s: %s", i+1, l.EventName, line)
		}
		if l.Amount != nil && (*l.Amount < 3.5 || *l.Amount > 500) {
			t.Fatalf("line %d: amount %v", i+1, *l.Amount)
		}
		if len(l.EventID) != 16 {
			t.Fatalf("line %d: event_id %q", i+1, l.EventID)
		}
		if f, ok := first[l.EventID]; ok {
			// A second delivery: the same event, arriving later.
			l2 := l
			l2.Arrival = f.Arrival
			if !jsonEqual(f, l2) || l.Arrival <= f.Arrival {
				t.Fatalf("line %d repeats %s with changes: %+v then %+v", i+1, l.EventID, f, l)
			}
			continue
		}
		first[l.EventID] = l
	}
	for _, n := range eventNames {
		if names[n] == 0 {
			t.Errorf("no %s", n)
		}
	}
	t.Logf("events %v, platforms %v, users %d", names, platforms, len(userPlatform))
	if names["app_open"] < names["order_completed"] || names["order_completed"] == 0 {
		t.Errorf("funnel: %v", names)
	}
	total := float64(len(lines(data)))
	within(t, "iOS", 100*float64(platforms["iOS"])/total, 46, 8)
	within(t, "web", 100*float64(platforms["web"])/total, 20, 8)
}

func jsonEqual(a, b steepLine) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
