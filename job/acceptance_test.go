package job

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	j, err := Load(filepath.Join(dir, "job.yaml"))
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
