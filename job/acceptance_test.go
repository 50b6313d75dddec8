package job

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
)

// The acceptance record of a run: the input's scope, the settings, the
// accounting, panes by revision and timing, too-late records by window, and
// the table read back and compared with the final panes; a row changed by
// hand is found.
func TestAcceptanceRecord(t *testing.T) {
	job := `name: shops
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: shop
id: id
dedup_horizon: 10m
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
allowed_lateness: 1m
aggregates: {orders: count, amount: sum(amount)}
output: [results.jsonl, {sqlite: {path: results.db, table: shops}}]
late_output: late.jsonl
acceptance: acceptance.json
`
	in := lines(
		`{"id":"A","shop":"s1","amount":10.25,"ts":"2026-09-07T12:00:10Z","at":"2026-09-07T12:00:10Z"}`,
		`{"id":"B","shop":"s1","amount":5,"ts":"2026-09-07T12:00:20Z","at":"2026-09-07T12:00:20Z"}`,
		`{"id":"X","shop":"s2","amount":1,"ts":"2026-09-07T12:01:05Z","at":"2026-09-07T12:01:05Z"}`,
		`{"id":"C","shop":"s1","amount":2.5,"ts":"2026-09-07T12:00:40Z","at":"2026-09-07T12:01:30Z"}`,
		`{"id":"Y","shop":"s2","amount":1,"ts":"2026-09-07T12:02:30Z","at":"2026-09-07T12:02:30Z"}`,
		`{"id":"D","shop":"s1","amount":4,"ts":"2026-09-07T12:00:50Z","at":"2026-09-07T12:02:40Z"}`,
		`not json`,
	)
	dir, _ := runJob(t, job, in)
	var a Acceptance
	if err := json.Unmarshal([]byte(read(t, dir, "acceptance.json")), &a); err != nil {
		t.Fatal(err)
	}
	if a.Job != "shops" || a.Version != 1 || a.Input.Lines != 7 || a.Input.Events != 6 || a.Input.FirstEventTime != "2026-09-07T12:00:10.000Z" || a.Input.LastEventTime != "2026-09-07T12:02:30.000Z" {
		t.Errorf("input %+v", a.Input)
	}
	if s := a.Settings; s.Window != "tumbling 1m0s" && !strings.HasPrefix(s.Window, "tumbling") || s.DedupHorizon != "10m0s" || s.AllowedLateness != "1m0s" || s.Aggregates != "orders, amount" {
		t.Errorf("settings %+v", s)
	}
	c := a.Accounting
	if c.Read != 7 || c.Accepted != 5 || c.LateAccepted != 1 || c.TooLate != 1 || c.Quarantined != 1 || !c.Balanced {
		t.Errorf("accounting %+v", c)
	}
	panes, _ := json.Marshal(a.Panes)
	if want := `[{"timing":"ON_TIME","revision":1,"panes":3},{"timing":"LATE","revision":2,"panes":2},{"timing":"LATE","revision":3,"panes":1}]`; string(panes) != want {
		t.Errorf("panes %s\nwant  %s", panes, want)
	}
	if len(a.TooLateByWindow) != 1 || a.TooLateByWindow[0].Dropped != 1 || a.TooLateByWindow[0].Start != "2026-09-07T12:00:00.000Z" {
		t.Errorf("too late %+v", a.TooLateByWindow)
	}
	if len(a.Sinks) != 1 || a.Sinks[0].Windows != 3 || a.Sinks[0].Equal != 3 || a.Sinks[0].Differ != 0 || a.Sinks[0].Verdict != "rows equal to the final panes" {
		t.Errorf("sinks %+v", a.Sinks)
	}
	md := read(t, dir, "acceptance.md")
	for _, s := range []string{"# Acceptance record: shops", "7 read = 5 accepted (1 late within the allowed lateness) + 0 duplicates + 1 too late + 0 beyond the de-duplication horizon + 1 quarantined: balanced.",
		"| output[1] | shops | 3 | 3 | 0 | 0 | 0 | rows equal to the final panes |"} {
		if !strings.Contains(md, s) {
			t.Errorf("the Markdown lacks %q:\n%s", s, md)
		}
	}

	// A row changed by hand: the next run's verification finds it.
	db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE shops SET orders = 99 WHERE shop = 's1'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), j, Options{Log: os.Stderr}); err != nil {
		t.Fatal(err)
	}
	a = Acceptance{}
	json.Unmarshal([]byte(read(t, dir, "acceptance.json")), &a)
	s := a.Sinks[0]
	if s.Equal != 2 || s.Differ != 1 || s.Verdict != "1 windows differ" || len(s.Differences) != 1 ||
		s.Differences[0] != "s1 [2026-09-07T12:00:00.000Z, 2026-09-07T12:01:00.000Z): orders 99, the last pane 3" {
		t.Errorf("after the change: %+v", s)
	}
}

// Sums of money beyond the 15 significant digits of SQLite's NUMERIC are
// stored exactly (in the exact companion column) and verified exactly: a
// cent changed by hand is found.
func TestExactSumsInSQLite(t *testing.T) {
	job := `name: spend
source: {file: input.jsonl}
time: {field: ts}
key: shop
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {spent: sum(amount)}
output: [results.jsonl, {sqlite: {path: results.db, table: spend}}]
acceptance: acceptance.json
`
	var in strings.Builder
	var cents int64
	for i := range 3000 {
		c := int64(9_876_543_210_900 + i%99 + 1) // 98,765,432,109.01 to .99
		cents += c
		fmt.Fprintf(&in, `{"shop":"s1","amount":%d.%02d,"ts":"2026-09-07T12:00:%02dZ"}`+"\n", c/100, c%100, i%60)
	}
	want := fmt.Sprintf("%d.%02d", cents/100, cents%100)
	if want != "296296296328489.65" { // 17 significant digits
		t.Fatalf("the total is %s", want)
	}
	dir, _ := runJob(t, job, in.String())
	db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var exact, number string
	if err := db.QueryRow(`SELECT spent_exact, CAST(spent AS TEXT) FROM spend WHERE shop = 's1'`).Scan(&exact, &number); err != nil {
		t.Fatal(err)
	}
	if exact != want {
		t.Errorf("spent_exact %s, want %s (the number column: %s)", exact, want, number)
	}
	var a Acceptance
	json.Unmarshal([]byte(read(t, dir, "acceptance.json")), &a)
	if s := a.Sinks[0]; s.Equal != 1 || s.Differ != 0 {
		t.Errorf("verified %+v", s)
	}

	// A cent less, which the number column cannot tell: the next run's
	// verification finds it.
	if _, err := db.Exec(`UPDATE spend SET spent_exact = '296296296328489.64'`); err != nil {
		t.Fatal(err)
	}
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), j, Options{}); err != nil {
		t.Fatal(err)
	}
	a = Acceptance{}
	json.Unmarshal([]byte(read(t, dir, "acceptance.json")), &a)
	if s := a.Sinks[0]; s.Differ != 1 || len(s.Differences) != 1 ||
		s.Differences[0] != "s1 [2026-09-07T12:00:00.000Z, 2026-09-07T12:01:00.000Z): spent 296296296328489.64, the last pane 296296296328489.65" {
		t.Errorf("after the change: %+v", s)
	}
}

// A table's value is the pane's digit for digit when the pane's is exact,
// within rounding when it is a float.
func TestSameNumber(t *testing.T) {
	dec := func(i int64, scale int8) outVal { return outVal{kind: vDec, i: i, scale: scale} }
	cases := []struct {
		have string
		want outVal
		same bool
	}{
		{"473.50", dec(4735, 1), true},
		{"473.5", dec(47350, 2), true},
		{"12345678901234567.89", dec(1234567890123456789, 2), true},
		{"12345678901234567.88", dec(1234567890123456789, 2), false},
		{"12345678901234568", dec(1234567890123456789, 2), false},
		{"0.00", dec(0, 2), true},
		{"-0.05", dec(-5, 2), true},
		{"10", outVal{kind: vInt, i: 10}, true},
		{"10.0", outVal{kind: vInt, i: 10}, true},
		{"9223372036854775806", outVal{kind: vInt, i: 9223372036854775807}, false},
		{"0.3", outVal{kind: vFloat, f: 0.1 + 0.2}, true},
		{"1.0e+21", outVal{kind: vFloat, f: 1e21}, true},
		{"2.5", outVal{kind: vFloat, f: 2.6}, false},
	}
	for _, c := range cases {
		if got := sameNumber(c.have, c.want); got != c.same {
			t.Errorf("sameNumber(%q, %s) = %v", c.have, appendOutVal(nil, c.want), got)
		}
	}
}

// The acceptance record's Markdown sums every part of the summary's
// accounting: the events the job's where kept out of its windows and a
// versioned job's superseded events and revisions too late are in the line
// that adds up to the lines read, as in the JSON record.
func TestAcceptanceMarkdownAddsUp(t *testing.T) {
	dir, sum := runJob(t, versionsJob+"where: amount > 1\nacceptance: acceptance.json\n", versionsInput)
	a := sum.Accounting
	if a.Read != 12 || a.Accepted != 6 || a.Duplicates != 1 || a.Filtered != 1 || a.Superseded != 1 || a.RevisionsTooLate != 1 || a.Quarantined != 2 || !a.Balanced() {
		t.Errorf("the summary's counts %+v", a)
	}
	md := read(t, dir, "acceptance.md")
	want := "12 read = 6 accepted (1 late within the allowed lateness) + 1 duplicates + 1 filtered out by where + 0 too late + 0 beyond the de-duplication horizon + 1 superseded + 1 revisions too late + 2 quarantined: balanced.\n"
	if !strings.Contains(md, "## Accounting\n\n"+want) {
		t.Errorf("the Markdown's accounting is not\n%s\n%s", want, md)
	}
}
