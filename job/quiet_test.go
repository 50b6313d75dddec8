package job

import (
	"strings"
	"testing"
)

// A quiet night: the last window before it closes in the night when the
// watermark follows the clock once the stream is quiet (watermark.quiet),
// not when the next event comes in the morning; an event of the night's
// window that comes after the bound is too late. Processing time is the
// lines' arrival times.
func TestQuietStreamClosesTheLastWindow(t *testing.T) {
	in := `{"k":"a","ts":"2026-03-02T22:00:10Z","at":"2026-03-02T22:00:10Z"}
{"k":"a","ts":"2026-03-02T22:00:50Z","at":"2026-03-02T22:00:50.500Z"}
{"k":"a","ts":"2026-03-02T22:00:40Z","at":"2026-03-03T07:00:00Z"}
{"k":"a","ts":"2026-03-03T07:00:01Z","at":"2026-03-03T07:00:01Z"}
`
	for _, c := range []struct {
		quiet, pane, late string
	}{
		// Without: the window stays open all night (here, to the end of
		// the input), and the event of 22:00:40 that comes in the morning
		// is still in time for it.
		{"", `{"key":"a","window_start":"2026-03-02T22:00:00.000Z","window_end":"2026-03-02T22:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-03-03T07:00:01.000Z","n":3}`, "0 too late"},
		// With 5m: at 22:06:00 (the first emission at which now - 5m
		// reaches the window's end), and that event is too late.
		{"quiet: 5m, ", `{"key":"a","window_start":"2026-03-02T22:00:00.000Z","window_end":"2026-03-02T22:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-03-02T22:01:00.000Z","emitted_at":"2026-03-02T22:06:00.000Z","n":2}`, "1 too late"},
	} {
		dir, sum := runJob(t, `name: night
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: k
watermark: {`+c.quiet+`delay: 2s, interval: 200ms}
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
`, in)
		first := strings.SplitN(read(t, dir, "results.jsonl"), "\n", 2)[0]
		if first != c.pane {
			t.Errorf("%q: the first pane\n%s\nwant\n%s", c.quiet, first, c.pane)
		}
		if !strings.Contains(sum.Text(), c.late) {
			t.Errorf("%q: %s", c.quiet, sum.Text())
		}
	}
}
