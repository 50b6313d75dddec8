package gen

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/mtime"
)

type orderLine struct {
	OrderID string   `json:"order_id"`
	Card    string   `json:"card"`
	UserID  string   `json:"user_id"`
	Amount  *float64 `json:"amount"`
	TS      string   `json:"ts"`
	Arrival string   `json:"arrival"`
}

func TestOrdersShape(t *testing.T) {
	o := Options{Events: 200_000, Seed: 1}
	type order struct {
		ts   mtime.Time
		user string
	}
	byCard := map[string][]order{}
	ids := map[string]bool{}
	m := newMeasurer(t, "order_id")
	n := 0
	m.eachLine = func(line []byte) {
		n++
		if n%10 == 0 { // encoding/json on a sample of the lines
			var l orderLine
			if err := json.Unmarshal(line, &l); err != nil || l.Amount == nil || *l.Amount <= 0 ||
				l.OrderID == "" || l.Card == "" || l.UserID == "" {
				t.Fatalf("line %d: %v: %s", n, err, line)
			}
		}
		card := string(field(line, "card"))
		byCard[card] = append(byCard[card], order{timeField(t, line, "ts"), string(field(line, "user_id"))})
		ids[string(field(line, "order_id"))] = true
		if d := timeField(t, line, "arrival") - timeField(t, line, "ts"); d < 0 || d > ordersMaxDelay {
			t.Fatalf("line %d arrives %d ms after it happens: %s", n, d, line)
		}
	}
	if err := Orders(m, o); err != nil {
		t.Fatal(err)
	}
	s := m.s
	s.report(t)
	if s.Lines != o.Events || len(ids) != o.Events || s.Dups > 0 {
		t.Fatalf("%d lines, %d order ids, %d duplicates", s.Lines, len(ids), s.Dups)
	}
	if s.Unsorted > 0 {
		t.Errorf("%d lines arrive before the line above them", s.Unsorted)
	}
	if s.Within2s != s.Lines {
		t.Errorf("%d lines are late", s.Lines-s.Within2s)
	}
	if s.Start < DefaultStart || s.End > DefaultStart+day+hour || s.End < DefaultStart+day-hour {
		t.Errorf("event times from %s to %s", s.Start, s.End)
	}

	// Bursts: cards that pay 5 times or more within a minute.
	var bursty, once int
	var counts []int
	for card, os := range byCard {
		counts = append(counts, len(os))
		if len(os) == 1 {
			once++
		}
		sort.Slice(os, func(i, j int) bool { return os[i].ts < os[j].ts })
		for i := 0; i+4 < len(os); i++ {
			if os[i+4].ts-os[i].ts <= minute {
				bursty++
				for _, x := range os[i : i+5] {
					if !strings.HasPrefix(x.user, "u9") {
						t.Errorf("card %s pays 5 times in a minute from user %s, not a fresh account", card, x.user)
					}
				}
				break
			}
		}
	}
	sort.Ints(counts)
	t.Logf("%d cards: median %d orders, max %d, %d pay once; %d cards pay 5 times within a minute",
		len(counts), counts[len(counts)/2], counts[len(counts)-1], once, bursty)
	if bursty < 24 || bursty > 150 {
		t.Errorf("%d stolen cards in a day, want a few an hour", bursty)
	}
	if counts[len(counts)/2] > 3 {
		t.Errorf("the median card pays %d times: cards should pay rarely", counts[len(counts)/2])
	}
}

// Every order's event time is within the days the stream covers, however
// few orders they hold, and there are exactly as many as asked.
func TestOrdersWithinTheirDays(t *testing.T) {
	for _, days := range []int{1, 2} {
		for _, n := range []int{1, 2, 3, 10, 100, 10_000} {
			o := Options{Events: n, Seed: 1, Days: days}.withDefaults()
			end := o.Start + mtime.Time(int64(days)*int64(day))
			lines := strings.Split(strings.TrimSuffix(string(generate(t, Orders, o)), "\n"), "\n")
			if len(lines) != n {
				t.Errorf("%d orders over %d days: %d lines", n, days, len(lines))
			}
			for _, l := range lines {
				ts, err := mtime.Parse([]byte(fastjson.GetString([]byte(l), "ts")))
				if err != nil || ts < o.Start || ts >= end {
					t.Errorf("%d orders over %d days: %s is not within [%s, %s)", n, days, l, o.Start, end)
					break
				}
			}
		}
	}
}
