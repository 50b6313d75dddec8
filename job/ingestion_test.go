package job

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/weirstream/weir/mtime"
)

// A backfill: events of a month ago replayed now. Arrivals 400 ms apart;
// before line split the events are 30 days old (their ts), after it they
// are live (ts a little before the arrival).
func backfillInput(lines, split int) string {
	const t0, month = 1_788_000_000_000, 30 * 24 * 3_600_000
	var b strings.Builder
	for i := range lines {
		arr := int64(t0 + i*400)
		ts := arr - int64(i%7)*120
		if i < split {
			ts -= month
		}
		fmt.Fprintf(&b, `{"card":"c%d","ts":%d,"arrival":%d}`+"\n", i%5, ts, arr)
	}
	return b.String()
}

// backfillFinals counts the input's events by card and 10-second window of
// the time when(i, ts, arrival) gives each: the final panes a job must end
// with, "card start count", sorted.
func backfillFinals(t *testing.T, input string, when func(i int, ts, arrival int64) int64) []string {
	t.Helper()
	counts := map[string]int{}
	for i, l := range strings.Split(strings.TrimSpace(input), "\n") {
		var e struct {
			Card        string
			TS, Arrival int64
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		at := when(i, e.TS, e.Arrival)
		counts[fmt.Sprintf("%s %d", e.Card, at-at%10_000)]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(out)
	return out
}

// finalPanes are the final panes of results.jsonl in dir, "card start
// count", sorted.
func finalPanes(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n") {
		var p struct {
			Key         string
			WindowStart string `json:"window_start"`
			N           int
			Final       bool
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if p.Final {
			out = append(out, fmt.Sprintf("%s %s %d", p.Key, p.WindowStart, p.N))
		}
	}
	sort.Strings(out)
	return out
}

// startsAsText makes each "card millis count" line's window start the text
// a pane writes (RFC 3339, UTC, milliseconds).
func startsAsText(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		var card string
		var start, n int64
		fmt.Sscan(l, &card, &start, &n)
		out[i] = fmt.Sprintf("%s %s %d", card, mtime.Time(start), n)
	}
	sort.Strings(out)
	return out
}

const ingestionJob = `name: backfill
source: {file: input.jsonl}
time: {ingestion: true, arrival_field: arrival}
key: card
watermark: {delay: 1s}
window: {tumbling: 10s}
aggregates: {n: count}
output: results.jsonl
checkpoint: {dir: ckpt, interval: 1h}
`

// With time.ingestion, every event's time is its arrival: a month-old
// replay is counted in the windows of when it came, none of it late.
func TestIngestionTime(t *testing.T) {
	input := backfillInput(1500, 1500)
	dir, sum := runJobIn(t, ingestionJob, input, Options{})
	if sum.Read != 1500 || sum.Accepted != 1500 || sum.TooLate != 0 || sum.LateAccepted != 0 {
		t.Errorf("read %d, accepted %d, late %d, too late %d; want 1500 accepted, none late", sum.Read, sum.Accepted, sum.LateAccepted, sum.TooLate)
	}
	want := startsAsText(backfillFinals(t, input, func(_ int, _, arrival int64) int64 { return arrival }))
	expectLines(t, "final panes", finalPanes(t, dir), want)
	if len(want) < 100 {
		t.Fatalf("%d windows: too few to tell", len(want))
	}
}

// The switch-over the docs describe: a backfill read with ingestion time,
// a savepoint once caught up, restored into the job that reads the events'
// own time. The restore carries the windows over, saying so; the events
// before the savepoint count by their arrival, those after by their ts; no
// event is late. And the way back carries over too.
func TestIngestionThenEventTime(t *testing.T) {
	eventJob := strings.Replace(ingestionJob, "time: {ingestion: true, arrival_field: arrival}", "time: {field: ts, arrival_field: arrival}", 1)
	for _, c := range []struct {
		name        string
		first, then string
		split       int    // the backfill's lines, of the first job
		note        string // the restore's change
	}{
		{"ingestion then event time", ingestionJob, eventJob, 1024, "carries over time: removed: was ingestion (each event's arrival)"},
		{"event time then ingestion", eventJob, ingestionJob, 0, "carries over time: added: ingestion (each event's arrival)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			input := backfillInput(1500, c.split)
			dir, stopped := runJobIn(t, c.first, input, Options{stopAfter: 1})
			if stopped.Savepoint == "" {
				t.Fatal("the stopped run took no savepoint")
			}
			if stopped.Read != 1024 {
				t.Fatalf("the first batch read %d lines, want 1024", stopped.Read)
			}
			sum, log, err := upRestore(t, dir, stopped.Savepoint, c.then, Options{})
			if err != nil {
				t.Fatalf("the restore: %v\n%s", err, log)
			}
			if !slices.Equal(sum.RestoreChanges, []string{c.note}) {
				t.Errorf("the restore's changes %q, want [%q]", sum.RestoreChanges, c.note)
			}
			// The restored run's counts go on from the savepoint's.
			if sum.Read != 1500 || sum.Accepted != 1500 || sum.TooLate != 0 || sum.LateAccepted != 0 {
				t.Errorf("read %d, accepted %d, late %d, too late %d: want 1500 accepted, none late", sum.Read, sum.Accepted, sum.LateAccepted, sum.TooLate)
			}
			first := strings.Contains(c.first, "ingestion")
			want := startsAsText(backfillFinals(t, input, func(i int, ts, arrival int64) int64 {
				if (i < 1024) == first {
					return arrival
				}
				return ts
			}))
			expectLines(t, "final panes", finalPanes(t, dir), want)
		})
	}
}
