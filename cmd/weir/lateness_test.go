package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stream in arrival order: the third line is a minute late.
const latenessInput = `{"ts":"2026-01-01T00:00:10Z","arrival":"2026-01-01T00:00:11Z","platform":"iOS"}
{"ts":"2026-01-01T00:01:10Z","arrival":"2026-01-01T00:01:11Z","platform":"web"}
{"ts":"2026-01-01T00:00:20Z","arrival":"2026-01-01T00:01:20Z","platform":"iOS"}
{"ts":"2026-01-01T00:01:30Z","arrival":"2026-01-01T00:01:31Z","platform":"web"}
`

func runLateness(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, dir, append([]string{"lateness"}, args...)...)
}

func latenessDir(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(latenessInput), 0o644)
	return dir
}

func TestLatenessText(t *testing.T) {
	dir := latenessDir(t)
	code, stdout, stderr := runLateness(t, dir, "events.jsonl", "--by", "platform", "--delays", "none,2s,5m", "--plot", "out.svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"4 lines: 4 events, 0 rejected", "by platform", "Table 1", "25.00%", "Recommendation"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "out.svg"))
	if err != nil || !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("plot: %v %.40q", err, svg)
	}
}

func TestLatenessJSONAndCSV(t *testing.T) {
	dir := latenessDir(t)
	code, stdout, stderr := runLateness(t, dir, "--format", "json", "--target", "30%", "events.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Events int64 `json:"events"`
		Delays []struct {
			Label   string `json:"label"`
			TooLate int64  `json:"too_late_events"`
		} `json:"delays"`
		Recommendation struct {
			Met   bool `json:"met"`
			Delay struct {
				Label string `json:"label"`
			} `json:"delay"`
		} `json:"recommendation"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Events != 4 || len(rep.Delays) != 6 || rep.Delays[0].TooLate != 1 || rep.Delays[2].TooLate != 0 ||
		!rep.Recommendation.Met || rep.Recommendation.Delay.Label != "none" {
		t.Errorf("json: %+v", rep)
	}
	code, stdout, stderr = runLateness(t, dir, "--format", "csv", "-o", "table1.csv", "events.jsonl")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	f, _ := os.Open(filepath.Join(dir, "table1.csv"))
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 7 || rows[0][0] != "delay" || rows[1][0] != "none" || rows[1][2] != "1" {
		t.Errorf("csv: %v %v", err, rows)
	}
}

func TestLatenessJob(t *testing.T) {
	dir := latenessDir(t)
	// The job's own input need not exist when FILE is given; its field
	// names and window size are used.
	os.WriteFile(filepath.Join(dir, "events.csv"), []byte("when,got\n2026-01-01T00:00:10Z,1767225611000\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: live.jsonl}\ntime: {field: when, arrival_field: got}\n"+
		"window: {tumbling: 5m}\naggregates: {n: count}\noutput: out.jsonl\n"), 0o644)
	code, stdout, stderr := runLateness(t, dir, "--job", "job.yaml", "--format", "json", "events.csv")
	if code != 0 || !strings.Contains(stdout, `"time_field": "when"`) || !strings.Contains(stdout, `"window_ms": 300000`) {
		t.Errorf("exit %d: %s %s", code, stdout, stderr)
	}
	// Without FILE, the job's input is read, and must exist.
	code, _, stderr = runLateness(t, dir, "--job", "job.yaml")
	if code != 2 || !strings.Contains(stderr, "live.jsonl does not exist") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// A job without an arrival field cannot be measured.
	os.WriteFile(filepath.Join(dir, "wall.yaml"), []byte("source: {file: events.jsonl}\ntime: {field: ts}\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: out.jsonl\n"), 0o644)
	code, _, stderr = runLateness(t, dir, "--job", "wall.yaml")
	if code != 2 || !strings.Contains(stderr, "no time.arrival_field") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Usage and input errors exit 2 with one line (or the usage text).
func TestLatenessErrors(t *testing.T) {
	dir := latenessDir(t)
	os.WriteFile(filepath.Join(dir, "events.csv"), []byte("ts,arrival\n2026-01-01T00:00:10Z,2026-01-01T00:00:11Z\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{nil, "Usage: weir lateness"},
		{[]string{"a.jsonl", "b.jsonl"}, "Usage: weir lateness"},
		{[]string{"--frobnicate", "events.jsonl"}, "flag provided but not defined"},
		{[]string{"nowhere.jsonl"}, "weir lateness: cannot read nowhere.jsonl: no such file or directory"},
		{[]string{"--time", "event_time", "events.csv"}, `events.csv has no column "event_time"`},
		{[]string{"--time", "event_time", "events.jsonl"}, `no event time in field "event_time"`},
		{[]string{"--delays", "2x", "events.jsonl"}, `--delays: "2x" is not a duration`},
		{[]string{"--target", "200%", "events.jsonl"}, "--target"},
		{[]string{"--format", "xml", "events.jsonl"}, "--format must be text, json or csv"},
		{[]string{"--plot", "out.gif", "events.jsonl"}, "--plot"},
		{[]string{"--input-format", "avro", "events.jsonl"}, "unknown input format"},
		{[]string{"--job", "job.yaml", "--time", "x", "events.jsonl"}, "weir lateness:"},
	}
	for _, c := range cases {
		code, stdout, stderr := runLateness(t, dir, c.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
		if !strings.Contains(c.want, "Usage") && !strings.Contains(c.want, "flag provided") && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: not one line: %q", c.args, stderr)
		}
	}
	if code, stdout, _ := runLateness(t, dir, "-h"); code != 0 || stdout != "" {
		t.Errorf("-h: exit %d", code)
	}
}
