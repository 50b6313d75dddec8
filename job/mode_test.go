package job

import (
	"strings"
	"testing"
)

// Every pane says its job's mode, so that a reader of the results alone
// knows to replace (accumulating, retracting) or to add up (discarding):
// the early, on-time and late panes and the retractions alike.
func TestModeInEveryPane(t *testing.T) {
	input := `{"k":"a","ts":"2026-01-01T00:00:01Z"}
{"k":"a","ts":"2026-01-01T00:00:02Z"}
{"k":"a","ts":"2026-01-01T00:00:12Z"}
{"k":"a","ts":"2026-01-01T00:00:03Z"}
`
	for _, mode := range []string{"accumulating", "discarding", "retracting"} {
		t.Run(mode, func(t *testing.T) {
			dir, _ := runJobIn(t, "source: {file: input.jsonl}\ntime: {field: ts}\nkey: k\nwatermark: {delay: 0s, interval: 0s}\nwindow: {tumbling: 10s}\nallowed_lateness: 1m\n"+
				"trigger: {early_count: 1}\nmode: "+mode+"\naggregates: {n: count}\noutput: results.jsonl\n", input, Options{})
			lines := strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n")
			timings := map[string]bool{}
			for _, l := range lines {
				if !strings.Contains(l, `,"mode":"`+mode+`",`) {
					t.Errorf("a pane without its mode %s: %s", mode, l)
				}
				for _, tm := range []string{"EARLY", "ON_TIME", "LATE"} {
					if strings.Contains(l, `"timing":"`+tm+`"`) {
						timings[tm] = true
					}
				}
			}
			if len(timings) != 3 {
				t.Errorf("panes of timings %v, want early, on time and late:\n%s", timings, strings.Join(lines, "\n"))
			}
		})
	}
}
