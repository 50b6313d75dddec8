package job

import (
	"strings"
	"testing"
)

// A producer whose clock is 10 minutes behind makes every event of its look
// late; time.sent_field corrects each event time by the device's own send
// time, so that its events count in the minute they happened (each moved
// later by its send's own travel time, which the correction cannot tell
// from the clock's error: the good clock's event of 12:01:30 counts at
// 12:01:30.100, and moves the watermark so). A line without a send time is
// quarantined for it, never counted uncorrected.
func TestSentTimeCorrectsASlowClock(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival, sent_field: sent}
key: device
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
`
	in := lines(
		// The good clock: event time, send time and arrival agree.
		`{"device":"good","ts":"2026-09-07T12:00:10Z","sent":"2026-09-07T12:00:10.200Z","arrival":"2026-09-07T12:00:10.300Z"}`,
		// The slow clock, 10 min behind: happened at 12:00:20 and 12:00:40.
		`{"device":"slow","ts":"2026-09-07T11:50:20Z","sent":"2026-09-07T11:50:20.100Z","arrival":"2026-09-07T12:00:20.200Z"}`,
		`{"device":"slow","ts":"2026-09-07T11:50:40Z","sent":"2026-09-07T11:50:41Z","arrival":"2026-09-07T12:00:41.100Z"}`,
		`{"device":"good","ts":"2026-09-07T12:01:30Z","sent":"2026-09-07T12:01:30.100Z","arrival":"2026-09-07T12:01:30.200Z"}`,
		`{"device":"slow","ts":"2026-09-07T11:51:30Z","arrival":"2026-09-07T12:01:31Z"}`,
	)
	dir, sum := runJobIn(t, job, in, Options{})
	want := lines(
		`{"key":"good","window_start":"2026-09-07T12:00:00.000Z","window_end":"2026-09-07T12:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-09-07T12:01:29.099Z","emitted_at":"2026-09-07T12:01:30.200Z","n":1}`,
		`{"key":"slow","window_start":"2026-09-07T12:00:00.000Z","window_end":"2026-09-07T12:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-09-07T12:01:29.099Z","emitted_at":"2026-09-07T12:01:30.200Z","n":2}`,
		`{"key":"good","window_start":"2026-09-07T12:01:00.000Z","window_end":"2026-09-07T12:02:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-09-07T12:01:31.000Z","n":1}`,
	)
	if got := read(t, dir, "results.jsonl"); got != want {
		t.Errorf("results:\n%s\nwant:\n%s", got, want)
	}
	if got := read(t, dir, "late.jsonl"); got != "" {
		t.Errorf("late events: %s", got)
	}
	q := read(t, dir, "quarantine.jsonl")
	if sum.Accepted != 4 || sum.TooLate != 0 || sum.Quarantined != 1 || strings.Count(q, "\n") != 1 || !strings.Contains(q, `"reason":"no_sent_time"`) {
		t.Errorf("%d accepted, %d too late, %d quarantined: %s", sum.Accepted, sum.TooLate, sum.Quarantined, q)
	}
}
