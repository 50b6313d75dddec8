package job

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
)

// A 10-minute window every minute, with events up to 12 minutes late: an
// event 1 to 9 minutes late is too late for its earlier windows and in
// time for the later ones. Every event-to-window membership is in a final
// pane or in the late output: an event too late for all of its windows
// names the last of them (too_late), one too late for some lists those it
// missed (late_for_some_windows) and is counted apart in the summary.
// Both ways a sliding window is kept: slices shared by the windows
// (accumulating), and a window's own accumulator (discarding).
func TestEveryMembershipOfAPartlyLateEvent(t *testing.T) {
	for _, mode := range []string{"accumulating", "discarding"} {
		t.Run(mode, func(t *testing.T) { everyMembership(t, mode, true) })
	}
	// By default they are counted, not written: the late output holds
	// only what no window counted.
	t.Run("count", func(t *testing.T) { everyMembership(t, "accumulating", false) })
}

func everyMembership(t *testing.T, mode string, write bool) {
	const t0 = 1_780_000_000_000
	const minute = 60_000
	r := rand.New(rand.NewPCG(7, 47))
	var in strings.Builder
	n := 3000
	for i := range n {
		at := int64(t0 + i*1000)
		ts := at
		if r.IntN(5) == 0 {
			ts -= r.Int64N(12 * minute)
		}
		fmt.Fprintf(&in, `{"id":%d,"ts":%d,"at":%d}`+"\n", i, ts, at)
	}
	partlyField := "late_for_some_windows: write\n"
	if !write {
		partlyField = ""
	}
	dir, sum := runJob(t, partlyField+`name: sliding
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
watermark: {delay: 0s, interval: 0s}
window: {sliding: {size: 10m, slide: 1m}}
mode: `+mode+`
aggregates: {n: count}
output: results.jsonl
late_output: late.jsonl
summary: summary.json
`, in.String())
	members := 0
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n") {
		var p struct {
			Final bool
			N     int
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatal(err)
		}
		if p.Final || mode == "discarding" {
			members += p.N
		}
	}
	missed, partly, tooLate := 0, 0, 0
	seen := map[int]bool{}
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "late.jsonl")), "\n") {
		var rec struct {
			Reason        string
			WindowStart   string `json:"window_start"`
			WindowEnd     string `json:"window_end"`
			WindowsMissed []struct {
				WindowStart string `json:"window_start"`
				WindowEnd   string `json:"window_end"`
			} `json:"windows_missed"`
			Event struct{ ID, TS int }
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if seen[rec.Event.ID] {
			t.Errorf("event %d in the late output twice", rec.Event.ID)
		}
		seen[rec.Event.ID] = true
		switch rec.Reason {
		case "too_late":
			tooLate++
			missed += 10
		case "late_for_some_windows":
			if !write {
				t.Errorf("%s: written without late_for_some_windows: write", l)
			}
			partly++
			missed += len(rec.WindowsMissed)
			last := rec.WindowsMissed[len(rec.WindowsMissed)-1]
			if len(rec.WindowsMissed) >= 10 || last.WindowStart != rec.WindowStart || last.WindowEnd != rec.WindowEnd {
				t.Errorf("%s: missed windows do not end with the window named", l)
			}
			for _, w := range rec.WindowsMissed {
				s, _ := mtime.Parse([]byte(w.WindowStart))
				e, _ := mtime.Parse([]byte(w.WindowEnd))
				ts := mtime.Time(rec.Event.TS)
				if e-s != mtime.Millis(10*time.Minute) || ts < s || ts >= e {
					t.Errorf("%s: event at %d is not in %v", l, rec.Event.TS, w)
				}
			}
		default:
			t.Errorf("reason %q", rec.Reason)
		}
	}
	if !write {
		// The count alone accounts for them: each missed from 1 to 9.
		if members+missed >= n*10 || members+missed+9*int(sum.LateForSomeWindows) < n*10 || sum.LateForSomeWindows == 0 || sum.LateWritten != int64(tooLate) {
			t.Errorf("%d memberships + %d missed, %d late for some windows, %d late written", members, missed, sum.LateForSomeWindows, sum.LateWritten)
		}
		return
	}
	if members+missed != n*10 {
		t.Errorf("%d memberships in final panes + %d missed = %d, want %d", members, missed, members+missed, n*10)
	}
	if partly == 0 || tooLate == 0 {
		t.Fatalf("the input has %d partly late and %d too-late events: it tests nothing", partly, tooLate)
	}
	if sum.LateForSomeWindows != int64(partly) || sum.TooLate != int64(tooLate) || sum.LateWritten != int64(partly+tooLate) || !sum.Balanced() {
		t.Errorf("summary: %d late for some windows, %d too late, %d late written (late output: %d, %d)",
			sum.LateForSomeWindows, sum.TooLate, sum.LateWritten, partly, tooLate)
	}
	if want := fmt.Sprintf("(0 late within allowed lateness, %d too late for some of their windows)", partly); !strings.Contains(sum.Text(), want) {
		t.Errorf("summary text lacks %q:\n%s", want, sum.Text())
	}
	var file struct {
		LateForSomeWindows *int `json:"late_for_some_windows"`
	}
	if err := json.Unmarshal([]byte(read(t, dir, "summary.json")), &file); err != nil || file.LateForSomeWindows == nil || *file.LateForSomeWindows != partly {
		t.Errorf("summary.json: late_for_some_windows %v (%v)", file.LateForSomeWindows, err)
	}
}

// Sessions in retracting mode with allowed lateness and no late event: with
// closing: if_changed a session writes its on-time pane and nothing more
// (by default, a retraction and a final revision 2 with the same values
// follow it); the summary counts the windows either way.
func TestClosingIfChangedWritesOnePanePerUnchangedSession(t *testing.T) {
	const t0 = 1_780_000_000_000
	const minute = 60_000
	var in strings.Builder
	for i := range 300 {
		// 100 users a minute apart, 3 rounds of 100 minutes, a session of
		// 2 events each; then a clock key a minute apart for an hour, so
		// that the watermark passes each session's end and its lateness
		// one after the other.
		s, u := i/100, i%100
		at := int64(t0 + s*100*minute + u*minute)
		fmt.Fprintf(&in, `{"u":"u%d","ts":%d}`+"\n"+`{"u":"u%d","ts":%d}`+"\n", u, at, u, at+1000)
	}
	for k := range 60 {
		fmt.Fprintf(&in, `{"u":"clock","ts":%d}`+"\n", t0+300*minute+k*minute)
	}
	for _, c := range []struct {
		closing string
		panes   int
	}{{"", 3*300 + 1}, {"trigger: {closing: if_changed}\n", 300 + 1}} {
		dir, sum := runJob(t, c.closing+`name: sessions
source: {file: input.jsonl}
time: {field: ts}
watermark: {delay: 0s, interval: 0s}
key: u
window: {session: {gap: 5m}}
allowed_lateness: 2m
mode: retracting
aggregates: {n: count}
output: results.jsonl
`, in.String())
		lines := strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n")
		if len(lines) != c.panes || sum.PanesWritten != int64(c.panes) || sum.WindowsFired != 301 {
			t.Errorf("%q: %d panes (%d written), %d windows fired; want %d panes, 301 windows", c.closing, len(lines), sum.PanesWritten, sum.WindowsFired, c.panes)
		}
		for _, l := range lines {
			if c.closing != "" && !strings.Contains(l, `"clock"`) && (!strings.Contains(l, `"n":2`) || !strings.Contains(l, `"timing":"ON_TIME"`)) {
				t.Errorf("%s", l)
			}
		}
	}
}
