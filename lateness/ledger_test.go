package lateness

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
)

// JSON lines use sample_weight by default, as CSV and Parquet do: a line
// without it (or with null) weighs 1, one with anything but a non-negative
// number is rejected.
func TestJSONSampleWeight(t *testing.T) {
	lines := strings.Join([]string{
		jsonLine(at(0, 10, 0), at(0, 10, 500), `,"sample_weight":3,"platform":"iOS"`),  // 500 ms
		jsonLine(at(0, 20, 0), at(0, 21, 0), `,"platform":"web"`),                      // 1 s, weighs 1
		jsonLine(at(0, 30, 0), at(10, 30, 0), `,"sample_weight":0.5,"platform":"iOS"`), // 10 min
		jsonLine(at(0, 40, 0), at(0, 41, 0), `,"sample_weight":"x"`),                   // rejected
		jsonLine(at(0, 50, 0), at(0, 51, 0), `,"sample_weight":-1`),                    // rejected
		jsonLine(at(1, 0, 0), at(1, 3, 0), `,"sample_weight":null,"platform":"web"`),   // 3 s, weighs 1
	}, "\n") + "\n"
	path := writeFile(t, "w.jsonl", lines)
	r, err := Analyze(path, Options{By: []string{"platform"}, Delays: []time.Duration{0}})
	if err != nil {
		t.Fatal(err)
	}
	if r.WeightField != "sample_weight" || r.Events != 4 || r.Rejected != 2 || r.RejectReasons["bad_weight"] != 2 || r.Weight != 5.5 {
		t.Fatalf("read: weight field %q, %d events weighing %v, rejected %v", r.WeightField, r.Events, r.Weight, r.RejectReasons)
	}
	// Buckets: under 2 s 3 + 1, 2 s to 5 min 1, 5 min to 1 h 0.5.
	for i, w := range []float64{4, 1, 0.5, 0, 0} {
		b := r.Travel.Buckets[i]
		if b.Weight != w || b.Percent != 100*w/5.5 {
			t.Errorf("bucket %s: weight %v, %v%%, want %v, %v%%", b.Label, b.Weight, b.Percent, w, 100*w/5.5)
		}
	}
	g := r.By[0].Groups
	if g[0].Value != "iOS" || g[0].Weight != 3.5 || g[0].Percent != 100*3.5/5.5 || g[0].BucketPercent[0] != 100*3/3.5 ||
		g[1].Value != "web" || g[1].Weight != 2 || g[1].BucketPercent[1] != 50 {
		t.Errorf("groups: %+v", g)
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if !strings.Contains(text.String(), `Weighted by "sample_weight": the events stand for 6 real events`) ||
		!strings.Contains(text.String(), "bad_weight 2") {
		t.Errorf("text:\n%s", text.String())
	}
	// --no-weight: every line counts once, none is rejected.
	r, err = Analyze(path, Options{NoWeight: true, Delays: []time.Duration{0}})
	if err != nil || r.WeightField != "" || r.Events != 6 || r.Weight != 6 || r.Rejected != 0 {
		t.Errorf("no weight: %v %+v", err, r)
	}
	// A weight field named must be on every line.
	r, err = Analyze(path, Options{Weight: "sample_weight", Delays: []time.Duration{0}})
	if err != nil || r.Events != 2 || r.Weight != 3.5 || r.RejectReasons["bad_weight"] != 4 {
		t.Errorf("named weight: %v %d %v %v", err, r.Events, r.Weight, r.RejectReasons)
	}
	// Lines all without the field: unweighted, as before.
	r, err = Analyze(writeFile(t, "u.jsonl", smallStream()), Options{})
	if err != nil || r.WeightField != "" || r.Weight != float64(r.Events) {
		t.Errorf("no weights: %v %q %v", err, r.WeightField, r.Weight)
	}
	// Every line rejected for its weight: the message names the default.
	_, err = Analyze(writeFile(t, "bad.jsonl", jsonLine(at(0, 1, 0), at(0, 2, 0), `,"sample_weight":"1"`)+"\n"), Options{})
	if !IsUsage(err) || !strings.Contains(err.Error(), `the weight "sample_weight" is missing or not a non-negative number`) {
		t.Errorf("bad weights: %v", err)
	}
}

// t1 is the start of the hand-made ledger.
var t1 = mtime.Time(1767225600000) // 2026-01-01T00:00:00Z

// hm is t1 plus hours:minutes:seconds.millis.
func hm(h, m, s, ms int64) mtime.Time { return t1 + mtime.Time(h*3600000+m*60000+s*1000+ms) }

// smallLedger is a ledger and its events whose every number is worked out
// by hand in TestLedgerSmall.
func smallLedger(t *testing.T) (ledger, events string) {
	entry := func(id, plat string, ts mtime.Time) string {
		s := `{"order_id":` + id
		if plat != "" {
			s += `,"platform":"` + plat + `"`
		}
		return s + `,"ts":"` + ts.String() + `"}`
	}
	l := []string{
		entry(`"A1"`, "Android", hm(0, 0, 0, 0)),
		entry(`"A2"`, "Android", hm(0, 1, 0, 0)),
		entry(`"A3"`, "Android", hm(0, 2, 0, 0)), // never arrives
		entry(`"A4"`, "", hm(0, 3, 0, 0)),        // group from its event
		entry(`"I1"`, "iOS", hm(0, 4, 0, 0)),
		entry(`"I2"`, "iOS", hm(0, 5, 0, 0)),
		entry(`777`, "iOS", hm(0, 6, 30, 0)), // a number; the event writes "777"
		entry(`"W1"`, "web", hm(0, 6, 0, 0)),
		entry(`"X"`, "", hm(0, 7, 0, 0)), // never arrives: group (none)
		entry(`"W2"`, "web", hm(0, 8, 0, 0)),
		entry(`"K1"`, "kiosk", hm(0, 9, 0, 0)),
		entry(`"K2"`, "kiosk", hm(0, 10, 0, 0)), // its only event is rejected
		entry(`"K3"`, "kiosk", hm(0, 11, 0, 0)),
		entry(`"Y1"`, "Android", hm(5, 0, 0, 0)),                     // never arrives, 2 h 05 before the last arrival
		entry(`"A1"`, "web", hm(0, 12, 0, 0)),                        // a duplicate id: the first entry is kept
		`{"platform":"web","ts":"` + hm(0, 13, 0, 0).String() + `"}`, // no id
		`{"order_id":"B1","ts":"yesterday"}`,                         // bad time
		`not json`,
		``,
	}
	ev := func(id, plat string, arr mtime.Time) string {
		s := `{`
		if id != "" {
			s += `"order_id":"` + id + `",`
		}
		if plat != "" {
			s += `"platform":"` + plat + `",`
		}
		return s + `"ts":"` + (arr - 50).String() + `","arrival":"` + arr.String() + `"}`
	}
	e := []string{
		ev("A1", "Android", hm(0, 0, 0, 500)),                       // 500 ms
		ev("A2", "Android", hm(0, 11, 0, 0)),                        // 10 min
		ev("A4", "Android", hm(0, 3, 2, 0)),                         // 2 s
		ev("I1", "iOS", hm(0, 4, 30, 0)),                            // 30 s, but
		ev("I1", "iOS", hm(0, 4, 2, 0)),                             // the first arrival: 2 s
		ev("I2", "iOS", hm(7, 5, 0, 0)),                             // 7 h: after the longest wait; the last arrival
		ev("777", "iOS", hm(0, 7, 30, 0)),                           // exactly 1 min
		ev("W1", "web", hm(0, 5, 59, 0)),                            // 1 s before its entry
		ev("K1", "kiosk", hm(5, 9, 0, 0)),                           // 5 h
		ev("K3", "kiosk", hm(0, 11, 30, 0)),                         // 30 s
		ev("Z9", "web", hm(0, 20, 0, 0)),                            // not in the ledger
		ev("", "iOS", hm(0, 21, 0, 0)),                              // no id
		`{"order_id":"K2","ts":"` + hm(0, 10, 0, 0).String() + `"}`, // rejected: no arrival
		ev("Z8", "", hm(0, 22, 0, 0)),                               // not in the ledger, no platform
	}
	return writeFile(t, "ledger.jsonl", strings.Join(l, "\n")+"\n"), writeFile(t, "events.jsonl", strings.Join(e, "\n")+"\n")
}

var smallWaits = []time.Duration{time.Minute, time.Hour, 6 * time.Hour}

func TestLedgerSmall(t *testing.T) {
	ledger, events := smallLedger(t)
	r, err := AnalyzeLedger(events, Options{By: []string{"platform"}}, LedgerOptions{Path: ledger, Match: "order_id", Waits: smallWaits})
	if err != nil {
		t.Fatal(err)
	}
	if r.LedgerLines != 18 || r.LedgerBlankLines != 1 || r.LedgerEntries != 14 || r.LedgerRejected != 3 || r.LedgerDuplicates != 1 ||
		!reflect.DeepEqual(r.LedgerRejectReasons, map[string]int64{"no_match_field": 1, "bad_entry_time": 1, "not_json": 1}) {
		t.Errorf("ledger: %d lines (%d blank), %d entries, %d rejected %v, %d duplicates",
			r.LedgerLines, r.LedgerBlankLines, r.LedgerEntries, r.LedgerRejected, r.LedgerRejectReasons, r.LedgerDuplicates)
	}
	if r.EventLines != 14 || r.Events != 13 || r.EventsRejected != 1 || r.EventRejectReasons["no_arrival_time"] != 1 ||
		r.MatchedEvents != 10 || r.DuplicateEvents != 1 || r.UnmatchedEvents != 2 || r.EventsWithoutMatch != 1 ||
		r.LastArrival != hm(7, 5, 0, 0).String() || r.LedgerTimeField != "ts" || r.ByField != "platform" ||
		!reflect.DeepEqual(r.WaitsMS, []int64{60000, 3600000, 21600000}) {
		t.Errorf("events: %+v", r)
	}
	type want struct {
		value                                  string
		entries, arrived                       int64
		within                                 [3]int64
		later, never, young, neverYoung, early int64
		p50, p99, max                          int64 // -1: nil
		dups, unmatched, flat                  int64 // flat -1: nil
		verdict                                string
	}
	wants := []want{
		{"Android", 5, 3, [3]int64{2, 3, 3}, 0, 2, 1, 1, 0, 2000, 600000, 600000, 0, 0, 3600000, VerdictTooRecent},
		{"iOS", 3, 3, [3]int64{2, 2, 2}, 1, 0, 0, 0, 0, 60000, 25200000, 25200000, 1, 0, -1, VerdictComplete},
		{"kiosk", 3, 2, [3]int64{1, 1, 2}, 0, 1, 0, 0, 0, 30000, 18000000, 18000000, 0, 0, 21600000, VerdictMaybeLate},
		{"web", 2, 1, [3]int64{1, 1, 1}, 0, 1, 0, 0, 1, -1000, -1000, -1000, 0, 1, 60000, VerdictLost},
		{"(none)", 1, 0, [3]int64{0, 0, 0}, 0, 1, 0, 0, 0, -1, -1, -1, 0, 1, -1, VerdictLost},
		{"(all)", 14, 9, [3]int64{6, 7, 8}, 1, 5, 1, 1, 1, 30000, 25200000, 25200000, 1, 2, -1, VerdictMaybeLate},
	}
	got := append(append([]LedgerGroup(nil), r.Groups...), r.All)
	if len(got) != len(wants) {
		t.Fatalf("%d groups, want %d: %+v", len(got), len(wants), got)
	}
	opt := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for i, w := range wants {
		g := got[i]
		ok := g.Value == w.value && g.Entries == w.entries && g.Arrived == w.arrived && g.Later == w.later &&
			g.NeverArrived == w.never && g.WatchedLess == w.young && g.NeverArrivedWatchedLess == w.neverYoung &&
			g.ArrivedBeforeEntry == w.early && opt(g.WaitP50MS) == w.p50 && opt(g.WaitP99MS) == w.p99 && opt(g.WaitMaxMS) == w.max &&
			g.DuplicateEvents == w.dups && g.UnmatchedEvents == w.unmatched && opt(g.FlatWithinMS) == w.flat && g.Verdict == w.verdict &&
			g.ArrivedPercent == pct(float64(w.arrived), float64(w.entries)) && g.NeverArrivedPercent == pct(float64(w.never), float64(w.entries)) &&
			g.LaterPercent == pct(float64(w.later), float64(w.entries))
		for k, n := range w.within {
			wt := g.Within[k]
			ok = ok && wt.Arrived == n && wt.WaitMS == int64(mtime.Millis(smallWaits[k])) &&
				wt.Percent == pct(float64(n), float64(w.entries)) && wt.PercentOfArrived == pct(float64(n), float64(w.arrived))
		}
		if !ok {
			t.Errorf("group %d: got %+v\nwant %+v", i, g, w)
		}
	}
	conclusions := map[string]string{
		"Android": "Android: 40.00% of ledger entries never arrived, and of those that arrived, 100.00% arrived within 1 h; but 1 of the entries without an event were made less than 6 h before the last event arrived: record the events for longer before concluding.",
		"iOS":     "iOS: every ledger entry has its event, but 33.33% of them arrived later than 6 h.",
		"kiosk":   "kiosk: 33.33% of ledger entries have no event yet, and events were still arriving late: 50.00% of those that arrived came after 1 h. Some of the missing may be late rather than lost: try longer --waits, or record the events for longer.",
		"web":     "web: 50.00% of ledger entries never arrived; of those that arrived, 100.00% arrived within 1 min: the missing events are not late, they are lost.",
	}
	for _, g := range got {
		if c, ok := conclusions[g.Value]; ok && g.Conclusion != c {
			t.Errorf("%s:\n got %s\nwant %s", g.Value, g.Conclusion, c)
		}
	}

	// Text, JSON and CSV say the same.
	var text, js, cs bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Ledger: 18 lines: 14 entries", "bad_entry_time 1, no_match_field 1, not_json 1",
		"1 repeating the id of an earlier entry", "10 have the id of a ledger entry (1 of them repeat an id", "2 match no entry",
		"1 have no \"order_id\"", "1 entries (7.14%) were made less than 6 h before", "1 events arrived before the time of their entry",
		"by platform", "Late, or lost?", "the missing events are not late, they are lost"} {
		if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	if err := r.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"never_arrived_percent": 40,`) {
		t.Errorf("json: %v\n%s", err, js.String())
	}
	if err := r.WriteCSV(&cs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil || len(rows) != 7 {
		t.Fatalf("csv: %v %v", err, rows)
	}
	head := strings.Join(rows[0], ",")
	if !strings.HasPrefix(head, "group,entries,arrived,arrived_percent,within_1m,within_1m_percent,within_1h,within_1h_percent,within_6h,within_6h_percent,arrived_later,") {
		t.Errorf("csv header: %s", head)
	}
	if strings.Join(rows[1], ",") != "Android,5,3,60.0000,2,40.0000,3,60.0000,3,60.0000,0,0.0000,2,40.0000,1,1,0,2000,600000,600000,0,0,3600000,too_recent" ||
		strings.Join(rows[6], ",") != "(all),14,9,64.2857,6,42.8571,7,50.0000,8,57.1429,1,7.1429,5,35.7143,1,1,1,30000,25200000,25200000,1,2,,maybe_late" {
		t.Errorf("csv rows:\n%s\n%s", strings.Join(rows[1], ","), strings.Join(rows[6], ","))
	}

	// The plot: deterministic, both formats.
	dir := t.TempDir()
	for _, c := range []struct{ name, prefix string }{{"p.svg", "<?xml"}, {"p.png", "\x89PNG\r\n\x1a\n"}} {
		p := filepath.Join(dir, c.name)
		if err := r.WritePlotFile(p); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		if !bytes.HasPrefix(b, []byte(c.prefix)) || len(b) < 1000 {
			t.Errorf("%s: %d bytes, %q", c.name, len(b), b[:min(len(b), 16)])
		}
		var again bytes.Buffer
		if err := r.WritePlot(&again, strings.TrimPrefix(filepath.Ext(c.name), ".")); err != nil || !bytes.Equal(again.Bytes(), b) {
			t.Errorf("%s: two drawings differ (%v)", c.name, err)
		}
	}
	if err := r.WritePlotFile(filepath.Join(dir, "p.gif")); !IsUsage(err) {
		t.Errorf("gif: %v", err)
	}

	// Without --by: one group, all.
	r2, err := AnalyzeLedger(events, Options{}, LedgerOptions{Path: ledger, Match: "order_id", Waits: smallWaits})
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Groups) != 0 || !reflect.DeepEqual(r2.All, r.All) {
		t.Errorf("without --by: %+v\nwant %+v", r2.All, r.All)
	}
	text.Reset()
	r2.WriteText(&text)
	if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), "All entries: 35.71% of ledger entries have no event yet") {
		t.Errorf("text without --by:\n%s", text.String())
	}
}

// A CSV ledger (ids as text), a ledger time field of its own, the default
// waits.
func TestLedgerCSV(t *testing.T) {
	ledger := writeFile(t, "orders.csv", "order_id,placed_at,platform\n"+
		"1,"+hm(0, 0, 0, 0).String()+",iOS\n"+
		"2,"+strconv.FormatInt(int64(hm(0, 1, 0, 0)), 10)+",iOS\n"+
		"3,"+hm(0, 2, 0, 0).String()+",\n"+
		","+hm(0, 3, 0, 0).String()+",iOS\n")
	events := writeFile(t, "events.jsonl", strings.Join([]string{
		`{"order_id":1,"ts":"` + hm(0, 0, 0, 100).String() + `","arrival":"` + hm(0, 0, 0, 300).String() + `"}`,
		`{"order_id":"3","platform":"web","ts":"` + hm(0, 2, 0, 100).String() + `","arrival":"` + hm(30, 0, 0, 0).String() + `"}`,
	}, "\n")+"\n")
	r, err := AnalyzeLedger(events, Options{By: []string{"platform"}}, LedgerOptions{Path: ledger, Match: "order_id", Time: "placed_at"})
	if err != nil {
		t.Fatal(err)
	}
	if r.LedgerFormat != FormatCSV || r.LedgerEntries != 3 || r.LedgerRejectReasons["no_match_field"] != 1 || r.LedgerTimeField != "placed_at" ||
		len(r.WaitsMS) != 5 || r.All.Arrived != 2 || r.All.Later != 1 || r.All.NeverArrived != 1 {
		t.Fatalf("csv ledger: %+v", r)
	}
	if g := r.Groups; len(g) != 2 || g[0].Value != "iOS" || g[0].Entries != 2 || g[0].Within[0].Arrived != 1 ||
		g[1].Value != "web" || g[1].Entries != 1 || g[1].Later != 1 {
		t.Errorf("groups: %+v", r.Groups)
	}
}

func TestLedgerErrors(t *testing.T) {
	ledger, events := smallLedger(t)
	cases := []struct {
		events string
		o      Options
		l      LedgerOptions
		want   string
	}{
		{events, Options{}, LedgerOptions{Path: ledger}, "needs --match"},
		{events, Options{}, LedgerOptions{Match: "order_id"}, "no ledger file"},
		{events, Options{By: []string{"a", "b"}}, LedgerOptions{Path: ledger, Match: "order_id"}, "one --by field"},
		{"-", Options{}, LedgerOptions{Path: "-", Match: "order_id"}, "both be read from standard input"},
		{events, Options{}, LedgerOptions{Path: ledger, Match: "order_id", Waits: []time.Duration{0}}, "a wait must be positive"},
		{events, Options{}, LedgerOptions{Path: ledger, Match: "id"}, `no line of ` + ledger + ` has an id in field "id" (choose it with --match)`},
		{events, Options{}, LedgerOptions{Path: ledger, Match: "order_id", Time: "when"}, `no entry time in field "when" (choose it with --ledger-time)`},
		{events, Options{}, LedgerOptions{Path: filepath.Join(t.TempDir(), "none.jsonl"), Match: "order_id"}, "cannot read"},
		{events, Options{ArrivalField: "got"}, LedgerOptions{Path: ledger, Match: "order_id"}, `no arrival time in field "got"`},
		{writeFile(t, "e.csv", "ts,arrival\n"), Options{}, LedgerOptions{Path: ledger, Match: "order_id"}, `has no column "order_id" for --match`},
		{writeFile(t, "noid.jsonl", jsonLine(at(0, 1, 0), at(0, 2, 0), `,"id":"A1"`)+"\n"), Options{}, LedgerOptions{Path: ledger, Match: "order_id"},
			`has an id in field "order_id" (choose it with --match)`},
	}
	for _, c := range cases {
		_, err := AnalyzeLedger(c.events, c.o, c.l)
		if !IsUsage(err) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v %+v: %v, want %q", c.o, c.l, err, c.want)
		}
	}
}

func TestFmtPctFloor(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{{100, "100.00%"}, {99.9999, "99.99%"}, {4.1, "4.10%"}, {100 * 41.0 / 1000, "4.10%"}, {0, "0.00%"}, {12.349, "12.34%"}} {
		p, want := c.p, c.want
		if got := fmtPctFloor(p); got != want {
			t.Errorf("fmtPctFloor(%v) = %s, want %s", p, got, want)
		}
	}
	if math.Abs(FlatShare-0.999) > 0 {
		t.Error("FlatShare")
	}
}

// Ledger ids that differ only beyond 64 bits are two entries: a ledger join
// compares ids by their text (a number as written), so each finds its own
// event.
func TestLedgerBigIntegerIDs(t *testing.T) {
	entry := func(id string, ts mtime.Time) string { return `{"order_id":` + id + `,"ts":"` + ts.String() + `"}` }
	ev := func(id string, arr mtime.Time) string {
		return `{"order_id":` + id + `,"ts":"` + (arr - 50).String() + `","arrival":"` + arr.String() + `"}`
	}
	ledger := writeFile(t, "ledger.jsonl", strings.Join([]string{
		entry(`18446744073709551615`, hm(0, 0, 0, 0)),
		entry(`18446744073709551614`, hm(0, 1, 0, 0)),
		entry(`100000000000000000001`, hm(0, 2, 0, 0)),
		entry(`100000000000000000000`, hm(0, 3, 0, 0)),
	}, "\n")+"\n")
	events := writeFile(t, "events.jsonl", strings.Join([]string{
		ev(`18446744073709551615`, hm(0, 0, 1, 0)),
		ev(`100000000000000000000`, hm(0, 3, 2, 0)),
	}, "\n")+"\n")
	r, err := AnalyzeLedger(events, Options{}, LedgerOptions{Path: ledger, Match: "order_id", Waits: smallWaits})
	if err != nil {
		t.Fatal(err)
	}
	if r.LedgerEntries != 4 || r.LedgerDuplicates != 0 || r.MatchedEvents != 2 || r.UnmatchedEvents != 0 ||
		r.All.Arrived != 2 || r.All.NeverArrived != 2 || r.All.WaitMaxMS == nil || *r.All.WaitMaxMS != 2000 {
		t.Errorf("%d entries, %d duplicates; %d events matched, %d unmatched; %d arrived, %d never; want 4, 0; 2, 0; 2, 2 (waits 1 s and 2 s)",
			r.LedgerEntries, r.LedgerDuplicates, r.MatchedEvents, r.UnmatchedEvents, r.All.Arrived, r.All.NeverArrived)
	}
}

// Were the devices online? Of the entries that never arrived, those whose
// user has an event in the --seen file at most 2 s before the entry (not
// after it) that arrived within 2 s of happening; worked out by hand.
func TestLedgerSeenOnline(t *testing.T) {
	entry := func(id, user, plat string, ts mtime.Time) string {
		s := `{"order_id":"` + id + `","platform":"` + plat + `"`
		if user != "" {
			s += `,"user_id":"` + user + `"`
		}
		return s + `,"ts":"` + ts.String() + `"}`
	}
	ledger := writeFile(t, "ledger.jsonl", strings.Join([]string{
		entry("O1", "u1", "iOS", hm(0, 0, 0, 0)),     // arrives: not looked at
		entry("O2", "u2", "iOS", hm(0, 1, 0, 0)),     // never arrives; u2 seen 1.5 s before: online
		entry("O3", "u3", "iOS", hm(0, 2, 0, 0)),     // never; u3 seen 2.5 s before: too early
		entry("O4", "u4", "Android", hm(0, 3, 0, 0)), // never; u4 seen 0.5 s after: not before it
		entry("O5", "u5", "Android", hm(0, 4, 0, 0)), // never; u5 seen 1 s before, arrived 3 s later: offline
		entry("O6", "u6", "Android", hm(0, 5, 0, 0)), // never; u6 seen exactly 2 s before, arrived in 2 s: online
		entry("O7", "", "Android", hm(0, 6, 0, 0)),   // never; no user
		entry("O8", "u2", "Android", hm(0, 7, 0, 0)), // never; u2's event at 0:01 is long before
		entry("O9", "u9", "Android", hm(0, 8, 0, 0)), // never; u9's only event is rejected
	}, "\n")+"\n")
	events := writeFile(t, "events.jsonl", `{"order_id":"O1","ts":"`+hm(0, 0, 0, 200).String()+`","arrival":"`+hm(0, 0, 0, 400).String()+`"}`+"\n")
	seen := func(user string, ts, arr mtime.Time) string {
		return `{"user_id":"` + user + `","event_name":"checkout_start","ts":"` + ts.String() + `","arrival":"` + arr.String() + `"}`
	}
	checkouts := writeFile(t, "checkouts.jsonl", strings.Join([]string{
		seen("u1", hm(0, 0, 0, -900), hm(0, 0, 0, -800)),
		seen("u2", hm(0, 1, 0, -1500), hm(0, 1, 0, -1400)),
		seen("u3", hm(0, 2, 0, -2500), hm(0, 2, 0, -2400)),
		seen("u4", hm(0, 3, 0, 500), hm(0, 3, 0, 600)),
		seen("u5", hm(0, 4, 0, -1000), hm(0, 4, 2, 0)),
		seen("u6", hm(0, 5, 0, -2000), hm(0, 5, 0, 0)),
		seen("u7", hm(0, 6, 0, -1000), hm(0, 6, 0, -900)),                                                                          // a user of no entry
		`{"user_id":"u9","ts":"` + hm(0, 8, 0, -500).String() + `"}`,                                                               // no arrival: rejected
		`{"event_name":"checkout_start","ts":"` + hm(0, 8, 0, -500).String() + `","arrival":"` + hm(0, 8, 0, -400).String() + `"}`, // no user
	}, "\n")+"\n")
	r, err := AnalyzeLedger(events, Options{By: []string{"platform"}}, LedgerOptions{Path: ledger, Match: "order_id", Waits: smallWaits, Seen: checkouts})
	if err != nil {
		t.Fatal(err)
	}
	if r.SeenBy != "user_id" || r.SeenWithinMS != 2000 || r.SeenLines != 9 || r.SeenEvents != 8 || r.SeenRejected != 1 ||
		r.SeenRejectReason["no_arrival_time"] != 1 || r.SeenWithoutBy != 1 {
		t.Errorf("seen: %s within %d ms, %d lines, %d events, %d rejected %v, %d without the user; want user_id, 2000; 9, 8, 1 no_arrival_time, 1",
			r.SeenBy, r.SeenWithinMS, r.SeenLines, r.SeenEvents, r.SeenRejected, r.SeenRejectReason, r.SeenWithoutBy)
	}
	type got struct {
		value                 string
		never, online, noUser int64
	}
	var gs []got
	for _, g := range append(r.Groups, r.All) {
		gs = append(gs, got{g.Value, g.NeverArrived, g.NeverArrivedSeenOnline, g.NeverArrivedWithoutBy})
	}
	want := []got{{"Android", 6, 1, 1}, {"iOS", 2, 1, 0}, {"(all)", 8, 2, 1}}
	if !slices.Equal(gs, want) {
		t.Errorf("groups (value, never arrived, seen online, without user): %v, want %v", gs, want)
	}
	if p := r.All.NeverArrivedSeenOnlinePercent; p != 25 {
		t.Errorf("seen online: %v%% of the never arrived, want 25%%", p)
	}
	if w := "All entries: of the 8 entries that never arrived, 2 (25.00%) had an event of the same user_id in " + checkouts +
		" at most 2 s before the entry, which arrived within 2 s of happening: those devices were online moments before; the others may have been offline. (1 of the entries have no user_id.)"; r.All.Online != w {
		t.Errorf("online:\n%s\nwant\n%s", r.All.Online, w)
	}
	// The same with a window of 3 s: u3 (2.5 s before) and u5 (arrived in
	// 3 s) count too.
	r, err = AnalyzeLedger(events, Options{}, LedgerOptions{Path: ledger, Match: "order_id", Waits: smallWaits, Seen: checkouts, SeenWithin: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.All.NeverArrivedSeenOnline != 4 {
		t.Errorf("within 3 s: %d seen online, want 4", r.All.NeverArrivedSeenOnline)
	}
	// Without --seen, nothing of it is in the report.
	r, err = AnalyzeLedger(events, Options{}, LedgerOptions{Path: ledger, Match: "order_id", Waits: smallWaits})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.WriteText(&b)
	if r.All.Online != "" || strings.Contains(b.String(), "online") {
		t.Errorf("without --seen: %q\n%s", r.All.Online, b.String())
	}
	for _, c := range []struct {
		l    LedgerOptions
		want string
	}{
		{LedgerOptions{Path: ledger, Match: "order_id", SeenBy: "user_id"}, "need --seen"},
		{LedgerOptions{Path: ledger, Match: "order_id", Seen: checkouts, SeenWithin: -time.Second}, "--seen-within must be positive"},
		{LedgerOptions{Path: ledger, Match: "order_id", Seen: checkouts, SeenBy: "device"}, `"device"`},
	} {
		_, err := AnalyzeLedger(events, Options{}, c.l)
		if !IsUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.l, err, c.want)
		}
	}
}
