package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/source"
)

// runJob writes a job file and its input into a fresh directory, runs it,
// and returns the directory.
func runJob(t *testing.T, yaml, input string) (string, *Summary) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), loadJob(t, dir, yaml), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

// loadJob writes yaml as dir/job.yaml and loads it.
func loadJob(t *testing.T, dir, yaml string) *jobfile.Job {
	t.Helper()
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := jobfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }

const fraudJob = `
name: fraud
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
id: event_id
dedup_horizon: 1h
max_future: 10m
watermark: {delay: 2s, interval: 0s}
window: {tumbling: 1m}
aggregates: {orders: count, spent: sum(amount), biggest: max(amount), avg: avg(amount), cards: count_distinct(user)}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`

// Every quarantine reason, and the identity read = accepted + duplicates +
// too_late + quarantined on a file with every kind of bad line.
func TestQuarantineAndAccounting(t *testing.T) {
	in := lines(
		`{"event_id": "e1", "card": "c1", "ts": "2026-09-07T12:00:01Z", "arrival": "2026-09-07T12:00:02Z", "amount": 5, "user": "u1"}`,
		`this is not json`,
		`{"event_id": "e2", "card": "c1", "arrival": "2026-09-07T12:00:03Z", "amount": 1}`,
		`{"event_id": "e3", "card": "c1", "ts": "yesterday", "arrival": "2026-09-07T12:00:04Z", "amount": 1}`,
		`{"event_id": "e4", "card": "c1", "ts": 1788782405, "arrival": "2026-09-07T12:00:05Z", "amount": 1}`,
		`{"event_id": "e5", "card": "c1", "ts": "2026-09-07T13:00:00Z", "arrival": "2026-09-07T12:00:06Z", "amount": 1}`,
		`{"event_id": "e6", "ts": "2026-09-07T12:00:06Z", "arrival": "2026-09-07T12:00:07Z", "amount": 1}`,
		`{"card": "c1", "ts": "2026-09-07T12:00:07Z", "arrival": "2026-09-07T12:00:08Z", "amount": 1}`,
		`{"event_id": "e1", "card": "c1", "ts": "2026-09-07T12:00:01Z", "arrival": "2026-09-07T12:00:09Z", "amount": 5}`,
		`{"event_id": "e7", "card": "c1", "ts": "2026-09-07T12:00:10Z", "arrival": "2026-09-07T12:00:11Z", "amount": 7.5, "user": "u2"}`,
		`{"event_id": "e8", "card": "c1", "ts": "2026-09-07T12:00:11Z", "arrival": "2026-09-07T12:00:12Z", "amount": "seven"}`,
		`{"event_id": "e9", "card": "c1", "ts": "2026-09-07T12:00:12Z", "amount": 1}`,
		`{"event_id": "e10", "card": {"n": 1}, "ts": "2026-09-07T12:00:12Z", "arrival": "2026-09-07T12:00:13Z"}`,
		`[1, 2]`,
		`{"event_id": "e11", "card": "c2", "ts": "2026-09-07T12:01:30Z", "arrival": "2026-09-07T12:01:31Z", "amount": 1}`,
		`{"event_id": "e12", "card": "c2", "ts": "2026-09-07T11:59:59Z", "arrival": "2026-09-07T12:01:32Z", "amount": 1}`,
		``,
		`{"event_id": "e13", "card": "c1", "ts": "2026-09-07T12:00:13Z", "arrival": "not a time"}`,
		`{"event_id": "e14", "card": "c1", "ts": "2026-09-07T12:00:14Z", "arrival": "2026-09-07T12:00:14Z", "amount": 1`,
	)
	dir, sum := runJob(t, fraudJob, in)
	wantQ := lines(
		`{"reason":"not_json","line":2,"set_aside_at":"2026-09-07T12:00:02.000Z","raw":"this is not json"}`,
		`{"reason":"no_event_time","line":3,"set_aside_at":"2026-09-07T12:00:03.000Z","arrival":"2026-09-07T12:00:03.000Z","raw":"{\"event_id\": \"e2\", \"card\": \"c1\", \"arrival\": \"2026-09-07T12:00:03Z\", \"amount\": 1}"}`,
		`{"reason":"bad_event_time","line":4,"set_aside_at":"2026-09-07T12:00:04.000Z","arrival":"2026-09-07T12:00:04.000Z","raw":"{\"event_id\": \"e3\", \"card\": \"c1\", \"ts\": \"yesterday\", \"arrival\": \"2026-09-07T12:00:04Z\", \"amount\": 1}"}`,
		`{"reason":"implausible_event_time","line":5,"set_aside_at":"2026-09-07T12:00:05.000Z","arrival":"2026-09-07T12:00:05.000Z","raw":"{\"event_id\": \"e4\", \"card\": \"c1\", \"ts\": 1788782405, \"arrival\": \"2026-09-07T12:00:05Z\", \"amount\": 1}"}`,
		`{"reason":"future_event_time","line":6,"set_aside_at":"2026-09-07T12:00:06.000Z","arrival":"2026-09-07T12:00:06.000Z","raw":"{\"event_id\": \"e5\", \"card\": \"c1\", \"ts\": \"2026-09-07T13:00:00Z\", \"arrival\": \"2026-09-07T12:00:06Z\", \"amount\": 1}"}`,
		`{"reason":"no_key","line":7,"set_aside_at":"2026-09-07T12:00:07.000Z","arrival":"2026-09-07T12:00:07.000Z","raw":"{\"event_id\": \"e6\", \"ts\": \"2026-09-07T12:00:06Z\", \"arrival\": \"2026-09-07T12:00:07Z\", \"amount\": 1}"}`,
		`{"reason":"no_id","line":8,"set_aside_at":"2026-09-07T12:00:08.000Z","arrival":"2026-09-07T12:00:08.000Z","raw":"{\"card\": \"c1\", \"ts\": \"2026-09-07T12:00:07Z\", \"arrival\": \"2026-09-07T12:00:08Z\", \"amount\": 1}"}`,
		`{"reason":"bad_value","line":11,"detail":"amount is not a number","set_aside_at":"2026-09-07T12:00:12.000Z","arrival":"2026-09-07T12:00:12.000Z","raw":"{\"event_id\": \"e8\", \"card\": \"c1\", \"ts\": \"2026-09-07T12:00:11Z\", \"arrival\": \"2026-09-07T12:00:12Z\", \"amount\": \"seven\"}"}`,
		`{"reason":"no_arrival_time","line":12,"set_aside_at":"2026-09-07T12:00:12.000Z","raw":"{\"event_id\": \"e9\", \"card\": \"c1\", \"ts\": \"2026-09-07T12:00:12Z\", \"amount\": 1}"}`,
		`{"reason":"no_key","line":13,"set_aside_at":"2026-09-07T12:00:13.000Z","arrival":"2026-09-07T12:00:13.000Z","raw":"{\"event_id\": \"e10\", \"card\": {\"n\": 1}, \"ts\": \"2026-09-07T12:00:12Z\", \"arrival\": \"2026-09-07T12:00:13Z\"}"}`,
		`{"reason":"not_json","line":14,"set_aside_at":"2026-09-07T12:00:13.000Z","raw":"[1, 2]"}`,
		`{"reason":"bad_arrival_time","line":18,"set_aside_at":"2026-09-07T12:01:32.000Z","raw":"{\"event_id\": \"e13\", \"card\": \"c1\", \"ts\": \"2026-09-07T12:00:13Z\", \"arrival\": \"not a time\"}"}`,
		`{"reason":"not_json","line":19,"set_aside_at":"2026-09-07T12:01:32.000Z","raw":"{\"event_id\": \"e14\", \"card\": \"c1\", \"ts\": \"2026-09-07T12:00:14Z\", \"arrival\": \"2026-09-07T12:00:14Z\", \"amount\": 1"}`,
	)
	if got := read(t, dir, "quarantine.jsonl"); got != wantQ {
		t.Errorf("quarantine:\n%s\nwant:\n%s", got, wantQ)
	}
	wantR := lines(
		`{"key":"c1","window_start":"2026-09-07T12:00:00.000Z","window_end":"2026-09-07T12:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-09-07T12:01:27.999Z","emitted_at":"2026-09-07T12:01:31.000Z","orders":2,"spent":12.5,"biggest":7.5,"avg":6.25,"cards":2}`,
		`{"key":"c2","window_start":"2026-09-07T12:01:00.000Z","window_end":"2026-09-07T12:02:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-09-07T12:01:32.000Z","orders":1,"spent":1,"biggest":1,"avg":1,"cards":0}`,
	)
	if got := read(t, dir, "results.jsonl"); got != wantR {
		t.Errorf("results:\n%s\nwant:\n%s", got, wantR)
	}
	wantL := lines(`{"reason":"too_late","key":"c2","window_start":"2026-09-07T11:59:00.000Z","window_end":"2026-09-07T12:00:00.000Z","watermark":"2026-09-07T12:01:27.999Z","event_time":"2026-09-07T11:59:59.000Z","line":16,"set_aside_at":"2026-09-07T12:01:32.000Z","event":{"event_id": "e12", "card": "c2", "ts": "2026-09-07T11:59:59Z", "arrival": "2026-09-07T12:01:32Z", "amount": 1}}`)
	if got := read(t, dir, "late.jsonl"); got != wantL {
		t.Errorf("late:\n%s\nwant:\n%s", got, wantL)
	}
	if sum.Read != 18 || sum.Accepted != 3 || sum.Duplicates != 1 || sum.TooLate != 1 || sum.Quarantined != 13 || sum.BlankLines != 1 {
		t.Errorf("summary: %+v", sum)
	}
	if sum.Read != sum.Accepted+sum.Duplicates+sum.TooLate+sum.Quarantined {
		t.Errorf("accounting identity broken: %+v", sum)
	}
	var file map[string]any
	if err := json.Unmarshal([]byte(read(t, dir, "summary.json")), &file); err != nil {
		t.Fatal(err)
	}
	if file["read"] != 18.0 || file["quarantined"] != 13.0 || file["panes_written"] != 2.0 {
		t.Errorf("summary.json: %v", file)
	}
	reasons := file["quarantine_reasons"].(map[string]any)
	if reasons["not_json"] != 3.0 || reasons["no_key"] != 2.0 {
		t.Errorf("reasons: %v", reasons)
	}
	drops := file["too_late_by_window"].([]any)
	if len(drops) != 1 || drops[0].(map[string]any)["window_start"] != "2026-09-07T11:59:00.000Z" {
		t.Errorf("drops: %v", drops)
	}
}

// An id is remembered for the horizon, in event time: a repeat within it is
// a duplicate. An event at or before the watermark minus the horizon cannot
// be checked (a first delivery would have been forgotten): it is never
// counted, but goes to the late output as beyond_dedup_horizon. The
// boundary: ts + horizon <= W is beyond, ts + horizon = W + 1 ms is checked.
func TestDedupHorizon(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
id: id
dedup_horizon: 10s
watermark: {from_field: wm}
window: {tumbling: 1m}
allowed_lateness: 5m
trigger: {late: none}
aggregates: {n: count}
output: results.jsonl
late_output: late.jsonl
`
	in := lines(
		`{"id": "a", "ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:05Z"}`,
		`{"id": "a", "ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:06Z"}`,
		`{"id": 7, "ts": "2026-01-01T00:00:06Z", "arrival": "2026-01-01T00:00:07Z"}`,
		`{"id": "7", "ts": "2026-01-01T00:00:06Z", "arrival": "2026-01-01T00:00:07Z"}`,
		`{"wm": "2026-01-01T00:00:14.999Z", "arrival": "2026-01-01T00:00:15Z"}`,
		`{"id": "a", "ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:16Z"}`,
		`{"wm": "2026-01-01T00:00:15Z", "arrival": "2026-01-01T00:00:17Z"}`,
		`{"id": "a", "ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:18Z"}`,
		`{"id": 7, "ts": "2026-01-01T00:00:06Z", "arrival": "2026-01-01T00:00:19Z"}`,
		`{"id": "c", "ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:20Z"}`,
		`{"id": "b", "ts": "2026-01-01T00:00:05.001Z", "arrival": "2026-01-01T00:00:21Z"}`,
	)
	dir, sum := runJob(t, job, in)
	// a, 7, "7" (a string is not the number) and b are counted; a twice
	// and 7 once are duplicates; a (at 00:00:05 once W is 00:00:15) and c
	// (never seen, but as old) are beyond the horizon.
	if sum.Read != 9 || sum.Accepted != 4 || sum.Duplicates != 3 || sum.BeyondDedupHorizon != 2 || sum.TooLate != 0 || sum.WatermarkLines != 2 {
		t.Errorf("summary %+v", sum)
	}
	if sum.Read != sum.Accepted+sum.Duplicates+sum.TooLate+sum.BeyondDedupHorizon+sum.Quarantined {
		t.Errorf("the accounts do not balance: %+v", sum)
	}
	if got := read(t, dir, "results.jsonl"); !strings.Contains(got, `"n":4`) {
		t.Errorf("results: %s", got)
	}
	want := lines(
		`{"reason":"beyond_dedup_horizon","key":null,"window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:01:00.000Z","watermark":"2026-01-01T00:00:15.000Z","event_time":"2026-01-01T00:00:05.000Z","line":8,"set_aside_at":"2026-01-01T00:00:18.000Z","event":{"id": "a", "ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:18Z"}}`,
		`{"reason":"beyond_dedup_horizon","key":null,"window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:01:00.000Z","watermark":"2026-01-01T00:00:15.000Z","event_time":"2026-01-01T00:00:05.000Z","line":10,"set_aside_at":"2026-01-01T00:00:20.000Z","event":{"id": "c", "ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:20Z"}}`,
	)
	if got := read(t, dir, "late.jsonl"); got != want {
		t.Errorf("late output:\n%s\nwant:\n%s", got, want)
	}
}

// Per-partition watermarks: partition p1 goes quiet and holds the watermark
// back until it is idle; it rejoins without moving the watermark back.
func TestIdlePartitionJob(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival, partition_field: p}
watermark: {delay: 0s, interval: 0s, idle: 5s}
window: {tumbling: 10s}
aggregates: {n: count}
output: results.jsonl
late_output: late.jsonl
`
	in := lines(
		`{"p": "p0", "ts": "2026-01-01T00:00:01Z", "arrival": "2026-01-01T00:00:01Z"}`,
		`{"p": "p1", "ts": "2026-01-01T00:00:02Z", "arrival": "2026-01-01T00:00:02Z"}`,
		`{"p": "p0", "ts": "2026-01-01T00:00:12Z", "arrival": "2026-01-01T00:00:03Z"}`,
		`{"p": "p0", "ts": "2026-01-01T00:00:13Z", "arrival": "2026-01-01T00:00:08Z"}`,
		`{"p": "p1", "ts": "2026-01-01T00:00:04Z", "arrival": "2026-01-01T00:00:09Z"}`,
	)
	dir, sum := runJob(t, job, in)
	// p1 is idle from 00:00:07 (last event at 00:00:02 + 5 s): W jumps to
	// 12.999 and [0,10) fires then, before the line that arrives at 00:00:08.
	want := lines(
		`{"key":null,"window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:00:10.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-01-01T00:00:11.999Z","emitted_at":"2026-01-01T00:00:07.000Z","n":2}`,
		`{"key":null,"window_start":"2026-01-01T00:00:10.000Z","window_end":"2026-01-01T00:00:20.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-01-01T00:00:09.000Z","n":2}`,
	)
	if got := read(t, dir, "results.jsonl"); got != want {
		t.Errorf("results:\n%s\nwant:\n%s", got, want)
	}
	if sum.TooLate != 1 || !strings.Contains(read(t, dir, "late.jsonl"), `"watermark":"2026-01-01T00:00:12.999Z"`) {
		t.Errorf("the rejoining partition's old event should be too late at W=12.999: %+v\n%s", sum, read(t, dir, "late.jsonl"))
	}
}

func TestPerfectWatermarkNeverLate(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
watermark: {perfect: true}
window: {tumbling: 10s}
aggregates: {n: count}
output: results.jsonl
`
	in := lines(
		`{"ts": "2026-01-01T00:00:05Z", "arrival": "2026-01-01T00:00:06Z"}`,
		`{"ts": "2026-01-01T00:00:15Z", "arrival": "2026-01-01T00:00:16Z"}`,
		`garbage`,
		`{"ts": "2026-01-01T00:00:01Z", "arrival": "2026-01-01T00:00:30Z"}`,
		`{"ts": "2026-01-01T00:00:25Z", "arrival": "2026-01-01T00:00:31Z"}`,
	)
	dir, sum := runJob(t, job, in)
	want := lines(
		`{"key":null,"window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:00:10.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-01-01T00:00:24.999Z","emitted_at":"2026-01-01T00:00:30.000Z","n":2}`,
		`{"key":null,"window_start":"2026-01-01T00:00:10.000Z","window_end":"2026-01-01T00:00:20.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-01-01T00:00:24.999Z","emitted_at":"2026-01-01T00:00:30.000Z","n":1}`,
		`{"key":null,"window_start":"2026-01-01T00:00:20.000Z","window_end":"2026-01-01T00:00:30.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-01-01T00:00:31.000Z","n":1}`,
	)
	if got := read(t, dir, "results.jsonl"); got != want || sum.TooLate != 0 {
		t.Errorf("results:\n%s\nwant:\n%s\n%+v", got, want, sum)
	}
}

func TestHavingAndRetractions(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 1m
mode: retracting
aggregates: {n: count, total: sum(v)}
having: "n >= 2 && key != 'skip'"
output: results.jsonl
`
	in := lines(
		`{"k": "a", "v": 1, "ts": "2026-01-01T00:00:01Z", "arrival": "2026-01-01T00:00:01Z"}`,
		`{"k": "skip", "v": 1, "ts": "2026-01-01T00:00:01Z", "arrival": "2026-01-01T00:00:01Z"}`,
		`{"k": "skip", "v": 1, "ts": "2026-01-01T00:00:02Z", "arrival": "2026-01-01T00:00:01Z"}`,
		`{"k": "a", "v": 2, "ts": "2026-01-01T00:00:12Z", "arrival": "2026-01-01T00:00:12Z"}`,
		`{"k": "a", "v": 4, "ts": "2026-01-01T00:00:03Z", "arrival": "2026-01-01T00:00:13Z"}`,
	)
	dir, sum := runJob(t, job, in)
	// a [0,10): #1 n=1 is filtered out, so is its retraction; #2 n=2 is
	// written, and so are its retraction and the closing #3.
	want := lines(
		`{"key":"a","window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:00:10.000Z","revision":2,"timing":"LATE","final":false,"retract":false,"status":"provisional","mode":"retracting","version":1,"watermark":"2026-01-01T00:00:11.999Z","emitted_at":"2026-01-01T00:00:13.000Z","n":2,"total":5}`,
		`{"key":"a","window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:00:10.000Z","revision":2,"timing":"LATE","final":false,"retract":true,"status":"retracted","mode":"retracting","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-01-01T00:00:13.000Z","n":2,"total":5}`,
		`{"key":"a","window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:00:10.000Z","revision":3,"timing":"LATE","final":true,"retract":false,"status":"closed","mode":"retracting","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-01-01T00:00:13.000Z","n":2,"total":5}`,
	)
	if got := read(t, dir, "results.jsonl"); got != want {
		t.Errorf("results:\n%s\nwant:\n%s", got, want)
	}
	if sum.PanesWritten != 3 || sum.PanesFired <= 3 {
		t.Errorf("summary %+v", sum)
	}
}

// Results are byte-identical whatever the parallelism.
func TestParallelismSameBytes(t *testing.T) {
	var in strings.Builder
	for i := range 3000 {
		ts := 1_780_000_000_000 + i*137 - (i%7)*900
		if i%97 == 0 {
			ts -= 40_000
		}
		arr := 1_780_000_000_000 + i*137
		in.WriteString(`{"k":"k` + itoa(i%13) + `","v":` + itoa(i%10) + `,"ts":` + itoa(ts) + `,"arrival":` + itoa(arr) + `}` + "\n")
	}
	base := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
watermark: {delay: 1s, interval: 200ms}
window: {sliding: {size: 10s, slide: 3s}}
allowed_lateness: 20s
trigger: {early: 2s, early_aligned: true, late: 1s}
mode: retracting
aggregates: {n: count, total: sum(v), hi: max(v)}
output: results.jsonl
late_output: late.jsonl
`
	d1, _ := runJob(t, base+"parallelism: 1\n", in.String())
	d4, _ := runJob(t, base+"parallelism: 4\n", in.String())
	for _, f := range []string{"results.jsonl", "late.jsonl"} {
		a, b := read(t, d1, f), read(t, d4, f)
		if a != b || len(a) < 1000 {
			t.Errorf("%s differs between parallelism 1 and 4 (or is too short: %d bytes)", f, len(a))
		}
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// The Pebble backend, with a cache far smaller than the state, gives the
// same bytes as memory, de-duplication included.
func TestPebbleBackendSameBytes(t *testing.T) {
	var in strings.Builder
	for i := range 20000 {
		ts := 1_780_000_000_000 + i*37 - (i%11)*500
		if i%89 == 0 {
			ts -= 50_000
		}
		id := i
		if i%53 == 0 {
			id = i - 7
		}
		in.WriteString(`{"id":` + itoa(id) + `,"k":"k` + itoa(i%997) + `","v":` + itoa(i%10) + `,"ts":` + itoa(ts) + `,"arrival":` + itoa(1_780_000_000_000+i*37) + `}` + "\n")
	}
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
id: id
dedup_horizon: 20s
watermark: {delay: 1s, interval: 0s}
window: {session: {gap: 3s}}
allowed_lateness: 20s
mode: retracting
aggregates: {n: count, total: sum(v), vs: count_distinct(v)}
output: results.jsonl
late_output: late.jsonl
`
	mem, sm := runJob(t, job, in.String())
	disk, sd := runJob(t, job+"state: {backend: pebble, memory_budget: 64KiB}\nparallelism: 2\n", in.String())
	for _, f := range []string{"results.jsonl", "late.jsonl"} {
		if a, b := read(t, mem, f), read(t, disk, f); a != b || len(a) < 1000 {
			t.Errorf("%s differs between memory and pebble (%d and %d bytes)", f, len(a), len(b))
		}
	}
	if sm.Duplicates == 0 || sm.Duplicates != sd.Duplicates || sm.TooLate != sd.TooLate {
		t.Errorf("summaries differ: %+v\n%+v", sm, sd)
	}
}

// Sums of plain decimals are exact (money adds up to the cent); numbers with
// an exponent or too many digits fall back to floating point.
func TestExactDecimalSums(t *testing.T) {
	a := &aggs{list: []jobfile.Aggregate{{Name: "s", Kind: jobfile.AggSum}}, field: []int{0}}
	cases := []struct {
		in   []string
		want string
	}{
		{[]string{"0.1", "0.2"}, "0.3"},
		{[]string{"23.70", "449.80"}, "473.5"},
		{[]string{"5", "-7.25", "2.250"}, "0"},
		{[]string{"-0.05", "-0.05"}, "-0.1"},
		{[]string{"1e2", "0.5"}, "100.5"},
		{[]string{"9223372036854775", "9223372036854775.8"}, "18446744073709550.8"},
		{[]string{"9223372036854775807", "1"}, "9223372036854776000"}, // overflow: floating point
	}
	for _, c := range cases {
		acc := a.New()
		for _, s := range c.in {
			var v value
			if d, sc, ok := parseDecimal([]byte(s)); ok && source.IsIntText([]byte(s)) {
				v = value{kind: vInt, dec: d, exact: true}
			} else {
				var f float64
				json.Unmarshal([]byte(s), &f)
				v = value{kind: vFloat, f: f}
				v.dec, v.scale, v.exact = d, sc, ok
			}
			acc = a.Add(acc, record{vals: []value{v}})
		}
		// also through a merge, as sessions do
		merged := a.Merge(a.New(), acc)
		for _, got := range []string{string(appendOutVal(nil, a.Result(acc)[0])), string(appendOutVal(nil, a.Result(merged)[0]))} {
			if got != c.want {
				t.Errorf("sum %v = %s, want %s", c.in, got, c.want)
			}
		}
	}
}

// A rejected line does not make a partition of its own: it would hold the
// watermark back until it went idle.
func TestRejectedLineMakesNoPartition(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival, partition_field: p}
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 10s}
aggregates: {total: sum(v)}
output: results.jsonl
quarantine: quarantine.jsonl
`
	in := lines(
		`{"p": "p0", "v": 1, "ts": "2026-01-01T00:00:01Z", "arrival": "2026-01-01T00:00:01Z"}`,
		`{"p": "p9", "v": "x", "ts": "2026-01-01T00:00:02Z", "arrival": "2026-01-01T00:00:02Z"}`,
		`{"p": "p0", "v": 2, "ts": "2026-01-01T00:00:12Z", "arrival": "2026-01-01T00:00:03Z"}`,
	)
	dir, _ := runJob(t, job, in)
	// [0,10) fires at 00:00:03, when p0's watermark passes its end; a p9
	// partition would have held it until the end of the input.
	if got := read(t, dir, "results.jsonl"); !strings.Contains(got, `"window_end":"2026-01-01T00:00:10.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-01-01T00:00:11.999Z","emitted_at":"2026-01-01T00:00:03.000Z"`) {
		t.Errorf("results:\n%s", got)
	}
}

// In a replay, every line advances processing time to its arrival before it
// is applied, firing the timers due by then: a line that is not an event (a
// duplicate, a rejected line, a watermark-only line) fires an early pane
// whose time has come, which the end of the input would otherwise lose.
func TestReplayEveryLineAdvancesTime(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
id: id
watermark: {from_field: wm}
window: {tumbling: 1m}
trigger: {early: 1s}
aggregates: {n: count}
output: results.jsonl
quarantine: quarantine.jsonl
`
	first := `{"id":1,"k":"a","ts":"2026-01-01T00:00:01Z","arrival":"2026-01-01T00:00:01Z"}`
	for name, line := range map[string]string{
		"duplicate":      `{"id":1,"k":"a","ts":"2026-01-01T00:00:01Z","arrival":"2026-01-01T00:00:03Z"}`,
		"rejected":       `{"id":2,"ts":"2026-01-01T00:00:02Z","arrival":"2026-01-01T00:00:03Z"}`,
		"watermark-only": `{"wm":"2026-01-01T00:00:00Z","arrival":"2026-01-01T00:00:03Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir, _ := runJob(t, job, lines(first, line))
			got := strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n")
			want := `{"key":"a","window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:01:00.000Z","revision":1,"timing":"EARLY","final":false,"retract":false,"status":"provisional","mode":"accumulating","version":1,"watermark":"`
			if len(got) != 2 || !strings.HasPrefix(got[0], want) || !strings.Contains(got[0], `"emitted_at":"2026-01-01T00:00:02.000Z","n":1}`) {
				t.Errorf("results:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}

// Numbers JSON has not (NaN, inf) and numbers too large for a float are
// rejected as bad_value, never summed into a null; keys that are not valid
// UTF-8 are rejected (written as JSON, two of them would read the same), and
// ids are compared byte for byte.
func TestPoisonedValuesAreQuarantined(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
id: id
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count, total: sum(v), hi: max(v), mean: avg(v)}
output: results.jsonl
quarantine: quarantine.jsonl
`
	ev := func(id, k, v string) string {
		return `{"id":` + id + `,"k":` + k + `,"v":` + v + `,"ts":"2026-01-01T00:00:01Z","arrival":"2026-01-01T00:00:01Z"}`
	}
	in := lines(
		ev(`"1"`, `"a"`, `NaN`),
		ev(`"2"`, `"a"`, `nan`),
		ev(`"3"`, `"a"`, `inf`),
		ev(`"4"`, `"a"`, `-Inf`),
		ev(`"5"`, `"a"`, `1e400`),
		ev(`"6"`, `"a"`, `2.5`),
		ev(`"7"`, "\"\xff\"", `1`),
		ev(`"8"`, "\"\xfe\"", `1`),
		ev(`NaN`, `"a"`, `1`),
		ev(`"x`+"\xff"+`"`, `"a"`, `1`),
		ev(`"x`+"\xfe"+`"`, `"a"`, `1`),
		ev(`"9"`, `nan`, `1`),
	)
	dir, sum := runJob(t, job, in)
	q := read(t, dir, "quarantine.jsonl")
	for _, want := range []string{
		`"reason":"bad_value","line":1,"detail":"v is not a JSON number (NaN)"`,
		`"reason":"bad_value","line":2,"detail":"v is not a JSON number (nan)"`,
		`"reason":"bad_value","line":3,"detail":"v is not a JSON number (inf)"`,
		`"reason":"bad_value","line":4,"detail":"v is not a JSON number (-Inf)"`,
		`"reason":"bad_value","line":5,"detail":"v is too large for a number (1e400)"`,
		`"reason":"bad_key","line":7,"detail":"k is not valid UTF-8"`,
		`"reason":"bad_key","line":8,"detail":"k is not valid UTF-8"`,
		`"reason":"no_id","line":9`,
		`"reason":"bad_key","line":12,"detail":"k is not a JSON number"`,
	} {
		if !strings.Contains(q, want) {
			t.Errorf("quarantine lacks %s:\n%s", want, q)
		}
	}
	// Lines 6, 10 and 11: three events, two ids that differ only in an
	// invalid byte are two ids.
	want := `{"key":"a","window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-01-01T00:00:01.000Z","n":3,"total":4.5,"hi":2.5,"mean":1.5}` + "\n"
	if got := read(t, dir, "results.jsonl"); got != want {
		t.Errorf("results:\n%s\nwant:\n%s", got, want)
	}
	if sum.Quarantined != 9 || sum.Duplicates != 0 || sum.Accepted != 3 {
		t.Errorf("summary %+v", sum)
	}
}

// A job of more than accInline aggregates cuts its accumulators' extra slots
// from a slab: windows growing in number (every card's first order) must not
// cost an allocation each, and accumulators cut from one slab stay apart.
func TestAccumulatorsBeyondInlineShareASlab(t *testing.T) {
	a := &aggs{list: []jobfile.Aggregate{{Name: "n", Kind: jobfile.AggCount}, {Name: "m", Kind: jobfile.AggCount}, {Name: "o", Kind: jobfile.AggCount}, {Name: "p", Kind: jobfile.AggCount}}, field: []int{-1, -1, -1, -1}}
	const n = 1024
	accs := make([]acc, 0, n)
	allocs := testing.AllocsPerRun(1, func() {
		accs = accs[:0]
		for range n {
			accs = append(accs, a.New())
		}
	})
	if max := float64(n/moreSlab + 1); allocs > max {
		t.Errorf("%d accumulators of 4 aggregates: %.0f allocations, want at most %.0f", n, allocs, max)
	}
	for i := range accs {
		for range i % 5 {
			accs[i] = a.Add(accs[i], record{})
		}
	}
	for i, c := range accs {
		for k := range a.list {
			if got := c.slot(k).i; got != int64(i%5) {
				t.Fatalf("accumulator %d, aggregate %d: count %d, want %d", i, k, got, i%5)
			}
		}
	}
}

// The memory backend holds no bound: a job that sets memory_budget with it
// hears so at start, and hears when the state passes the budget even when
// the job ends before the first periodic check (the end is a check too).
func TestMemoryBudgetOfAShortJob(t *testing.T) {
	var in strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&in, `{"card":"c%d","ts":%d}`+"\n", i, 1_780_000_000_000+int64(i))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in.String()), 0o644)
	j := loadJob(t, dir, "name: short\nsource: {file: input.jsonl}\ntime: {field: ts}\nkey: card\nwindow: {tumbling: 1h}\naggregates: {n: count}\noutput: results.jsonl\nstate: {memory_budget: 1MiB}\n")
	if !slices.ContainsFunc(j.Warnings(), func(w string) bool {
		return strings.HasPrefix(w, "state.memory_budget 1 MiB is no bound with the memory backend")
	}) {
		t.Errorf("the job's warnings do not say the memory backend holds no bound: %q", j.Warnings())
	}
	var log bytes.Buffer
	start := time.Now()
	if _, err := Run(context.Background(), j, Options{Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "more than memory_budget (1 MiB), with up to ") {
		t.Errorf("a job of %s over 20000 keys with memory_budget 1MiB said nothing of it:\n%s", time.Since(start), log.String())
	}
}
