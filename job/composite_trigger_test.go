package job

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// triggerPanes reads a JSON lines output of panes as "start #rev TIMING n=N
// final=F" lines.
func triggerPanes(t *testing.T, dir, file string) []string {
	t.Helper()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, file)), "\n") {
		var p struct {
			Start  string `json:"window_start"`
			Rev    int    `json:"revision"`
			Timing string `json:"timing"`
			Final  bool   `json:"final"`
			N      int    `json:"n"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s #%d %s n=%d final=%v", p.Start[11:19], p.Rev, p.Timing, p.N, p.Final))
	}
	return got
}

// A composite trigger from the job file: early and late firings every two
// events around the watermark, and no closing pane that repeats the last
// (Beam's AfterWatermark.pastEndOfWindow().withEarlyFirings(
// AfterPane.elementCountAtLeast(2)).withLateFirings(
// AfterPane.elementCountAtLeast(2)) with FIRE_IF_NON_EMPTY).
func TestCompositeTriggerJob(t *testing.T) {
	dir, sum := runJob(t, `
source: {file: input.jsonl}
time: {field: ts}
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 1m
trigger: {after_watermark: {early: {count: 2}, late: {count: 2}}, closing: if_changed}
aggregates: {n: count}
output: out.jsonl
`, lines(
		`{"ts":"2026-09-01T00:00:01Z"}`, `{"ts":"2026-09-01T00:00:02Z"}`, // early, n=2
		`{"ts":"2026-09-01T00:00:03Z"}`, `{"ts":"2026-09-01T00:00:12Z"}`, // on time, n=3
		`{"ts":"2026-09-01T00:00:04Z"}`, `{"ts":"2026-09-01T00:00:05Z"}`, // late, n=5
		`{"ts":"2026-09-01T00:01:40Z"}`, // closes [0, 10) with no pane: nothing since
	))
	want := []string{
		"00:00:00 #1 EARLY n=2 final=false",
		"00:00:00 #2 ON_TIME n=3 final=false",
		"00:00:00 #3 LATE n=5 final=false",
		"00:00:10 #1 ON_TIME n=1 final=true",
		"00:01:40 #1 ON_TIME n=1 final=true",
	}
	if got := triggerPanes(t, dir, "out.jsonl"); strings.Join(got, "\n") != strings.Join(want, "\n") || sum.LateAccepted != 2 {
		t.Errorf("panes:\n%s\nwant\n%s\nlate accepted %d", strings.Join(got, "\n"), strings.Join(want, "\n"), sum.LateAccepted)
	}
}

// finishedTriggerJob fires a window's panes early, by two events, until
// the watermark passes its end: then its trigger has finished.
const finishedTriggerJob = `
source: {file: input.jsonl}
time: {field: ts}
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 1m
trigger: {or_finally: {trigger: {repeatedly: {count: 2}}, until: {after_watermark: {}}}}
aggregates: {n: count}
output: out.jsonl
late_output: late.jsonl
`

// A window whose trigger finished takes no more events, as in Beam: with
// after_watermark and no late firings, a late event within the allowed
// lateness goes to the late output as trigger_finished and is counted too
// late; the summary still balances.
func TestCompositeTriggerFinishedJob(t *testing.T) {
	dir, sum := runJob(t, finishedTriggerJob, lines(
		`{"ts":"2026-09-01T00:00:01Z"}`, `{"ts":"2026-09-01T00:00:02Z"}`, // early, n=2
		`{"ts":"2026-09-01T00:00:03Z"}`, `{"ts":"2026-09-01T00:00:12Z"}`, // on time, final
		`{"ts":"2026-09-01T00:00:04Z"}`, // the window's trigger finished
	))
	want := []string{
		"00:00:00 #1 EARLY n=2 final=false",
		"00:00:00 #2 ON_TIME n=3 final=true",
		"00:00:10 #1 ON_TIME n=1 final=true",
	}
	if got := triggerPanes(t, dir, "out.jsonl"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("panes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	late := read(t, dir, "late.jsonl")
	if strings.Count(late, "\n") != 1 || !strings.Contains(late, `"reason":"trigger_finished"`) || !strings.Contains(late, `"2026-09-01T00:00:04`) {
		t.Errorf("late output:\n%s", late)
	}
	if sum.Read != 5 || sum.Accepted != 4 || sum.TooLate != 1 || sum.TriggerFinished != 1 {
		t.Errorf("read %d, accepted %d, too late %d (%d trigger finished)", sum.Read, sum.Accepted, sum.TooLate, sum.TriggerFinished)
	}
	if text := sum.Text(); !strings.Contains(text, "1 too late (1 for windows whose trigger had finished)") {
		t.Errorf("summary: %s", text)
	}
}

// The events that came for a window whose trigger had finished are counted
// apart, as the summary counts them, in every figure of a run: the status
// (/api/status), /metrics and the acceptance record; the events too late
// for the allowed lateness are not among them.
func TestTriggerFinishedInEveryFigure(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(lines(
		`{"ts":"2026-09-01T00:00:01Z"}`, `{"ts":"2026-09-01T00:00:02Z"}`, // early, n=2
		`{"ts":"2026-09-01T00:00:03Z"}`, `{"ts":"2026-09-01T00:00:12Z"}`, // on time, final
		`{"ts":"2026-09-01T00:00:04Z"}`, `{"ts":"2026-09-01T00:00:05Z"}`, // the window's trigger finished
		`{"ts":"2026-09-01T00:01:20Z"}`, // [00:00, 00:10) is past its allowed lateness
		`{"ts":"2026-09-01T00:00:06Z"}`, // too late
	)), 0o644)
	j := loadJob(t, dir, "name: finished"+finishedTriggerJob+"acceptance: acceptance.json\n")
	rn, err := Build(j, Options{Console: true})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rn.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 8 || sum.Accepted != 5 || sum.TooLate != 3 || sum.TriggerFinished != 2 {
		t.Fatalf("read %d, accepted %d, too late %d (%d trigger finished)", sum.Read, sum.Accepted, sum.TooLate, sum.TriggerFinished)
	}
	srv := rn.Console()
	srv.Ended(rn.Engine())
	get := func(path string) string {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Body.String()
	}
	var st struct {
		Status struct {
			Counts map[string]any `json:"counts"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(get("/api/status")), &st); err != nil {
		t.Fatal(err)
	}
	if c := st.Status.Counts; fmt.Sprint(c["read"], " ", c["too_late"], " ", c["trigger_finished"]) != "8 3 2" {
		got := fmt.Sprint(c["read"], " ", c["too_late"], " ", c["trigger_finished"])
		t.Errorf("the status's read, too_late and trigger_finished: %s, want 8 3 2", got)
	}
	var metrics []string
	for _, l := range strings.Split(get("/metrics"), "\n") {
		if strings.HasPrefix(l, "weir_late_records_") || strings.HasPrefix(l, `weir_records_total{job_name="finished",outcome="too_late"}`) {
			metrics = append(metrics, l)
		}
	}
	want := `weir_late_records_accepted_total{job_name="finished"} 0
weir_late_records_dropped_total{job_name="finished"} 3
weir_late_records_partly_dropped_total{job_name="finished"} 0
weir_late_records_trigger_finished_total{job_name="finished"} 2
weir_records_total{job_name="finished",outcome="too_late"} 3`
	if got := strings.Join(metrics, "\n"); got != want {
		t.Errorf("/metrics:\n%s\nwant\n%s", got, want)
	}
	var a Acceptance
	if err := json.Unmarshal([]byte(read(t, dir, "acceptance.json")), &a); err != nil {
		t.Fatal(err)
	}
	if a.Accounting.TooLate != 3 || a.Accounting.TriggerFinished != 2 {
		t.Errorf("the acceptance record's too late %d, trigger finished %d", a.Accounting.TooLate, a.Accounting.TriggerFinished)
	}
	md := read(t, dir, "acceptance.md")
	if want := "8 read = 5 accepted (0 late within the allowed lateness) + 0 duplicates + 3 too late (2 for windows whose trigger had finished) + 0 beyond the de-duplication horizon + 0 quarantined: balanced.\n"; !strings.Contains(md, want) {
		t.Errorf("the Markdown's accounting is not\n%s\n%s", want, md)
	}
}

// Of a sliding window's events that came for a window whose trigger had
// finished, some are too late for every window and some were taken by
// others (too late for some of their windows): the summary and the
// acceptance record do not say that all of them are among the too late.
func TestTriggerFinishedOfSlidingWindows(t *testing.T) {
	yaml := strings.Replace(finishedTriggerJob, "window: {tumbling: 10s}", "window: {sliding: {size: 10s, slide: 5s}}", 1)
	dir, sum := runJob(t, yaml+"acceptance: acceptance.json\n", lines(
		`{"ts":"2026-09-01T00:00:01Z"}`, `{"ts":"2026-09-01T00:00:02Z"}`, // early in [-5 s, 5 s) and [0, 10 s)
		`{"ts":"2026-09-01T00:00:06Z"}`, `{"ts":"2026-09-01T00:00:11Z"}`, // both on time, final
		`{"ts":"2026-09-01T00:00:04Z"}`, // for both, finished: too late
		`{"ts":"2026-09-01T00:00:08Z"}`, // for [0, 10 s), finished; [5 s, 15 s) takes it
		`{"ts":"2026-09-01T00:01:30Z"}`, // [0, 10 s) and [5 s, 15 s) past their allowed lateness
		`{"ts":"2026-09-01T00:00:09Z"}`, // too late
	))
	if sum.Read != 8 || sum.Accepted != 6 || sum.TooLate != 2 || sum.LateForSomeWindows != 1 || sum.TriggerFinished != 2 {
		t.Fatalf("read %d, accepted %d, too late %d, too late for some windows %d, trigger finished %d", sum.Read, sum.Accepted, sum.TooLate, sum.LateForSomeWindows, sum.TriggerFinished)
	}
	if want := "6 accepted (0 late within allowed lateness, 1 too late for some of their windows), 0 duplicates, 2 too late (2, of these and of those too late for some of their windows, for windows whose trigger had finished), 0 quarantined\n"; !strings.Contains(sum.Text(), want) {
		t.Errorf("summary:\n%s\nwant\n%s", sum.Text(), want)
	}
	if want := "8 read = 6 accepted (0 late within the allowed lateness, 1 too late for some of their windows) + 0 duplicates + 2 too late (2, of these and of those too late for some of their windows, for windows whose trigger had finished) + 0 beyond the de-duplication horizon + 0 quarantined: balanced.\n"; !strings.Contains(read(t, dir, "acceptance.md"), want) {
		t.Errorf("the Markdown's accounting is not\n%s\n%s", want, read(t, dir, "acceptance.md"))
	}
}
