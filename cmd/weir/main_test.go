package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/clitest"
)

// TestMain builds the weir command once, for the tests that run it as a
// process (clitest.Bin); the others call run in this process.
func TestMain(m *testing.M) { clitest.Main(m) }

// The conformance scenarios: the copy in testdata, and the shared suite
// beside the repository when it is there (it may hold more scenarios).
func TestConformance(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("the conformance checker needs python3")
	}
	suites := []string{"../../testdata/conformance"}
	if _, err := os.Stat("../../../shared/conformance/check"); err == nil {
		suites = append(suites, "../../../shared/conformance")
	}
	for _, s := range suites {
		cmd := exec.Command("python3", filepath.Join(s, "check"), "--weir", clitest.Bin)
		out, err := cmd.CombinedOutput()
		t.Logf("%s:\n%s", s, out)
		if err != nil {
			t.Errorf("conformance suite %s failed: %v", s, err)
		}
		if !strings.Contains(string(out), " passed, 0 failed") {
			t.Errorf("%s: no pass line", s)
		}
	}
}

func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cwd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(cwd)
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

const jobText = `name: t
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: k
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`

// A bad job file: a one-line error naming the file and the field, exit code
// 2, and nothing written.
func TestBadJobExitsTwoAndWritesNothing(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"typo":          {strings.Replace(jobText, "window:", "windw:", 1), `job.yaml:5: windw: unknown field "windw" (did you mean "window"?)`},
		"no size":       {strings.Replace(jobText, "{tumbling: 1m}", "{sliding: {slide: 1m}}", 1), "window.sliding.size: missing"},
		"slide > size":  {strings.Replace(jobText, "{tumbling: 1m}", "{sliding: {size: 1m, slide: 2m}}", 1), "window.sliding.slide: slide 2m0s is larger than the size 1m0s"},
		"bad having":    {jobText + "having: \"n >> 2\"\n", "having: expression \"n >> 2\" does not compile"},
		"missing input": {strings.Replace(jobText, "input.jsonl", "nowhere.jsonl", 1), "source.file: input nowhere.jsonl does not exist"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(c.yaml), 0o644)
			os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(`{"k":"a","ts":"2026-01-01T00:00:00Z","at":"2026-01-01T00:00:00Z"}`+"\n"), 0o644)
			code, _, stderr := runCLI(t, dir, "run", "job.yaml")
			if code != 2 {
				t.Errorf("exit code %d", code)
			}
			if !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "weir: job.yaml") {
				t.Errorf("stderr %q does not contain %q on one line", stderr, c.want)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 {
				t.Errorf("files written: %v", entries)
			}
		})
	}
}

func TestRunWritesSummary(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(jobText), 0o644)
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(strings.Join([]string{
		`{"k":"a","ts":"2026-01-01T00:00:00Z","at":"2026-01-01T00:00:00Z"}`,
		`{"k":"a","ts":"2026-01-01T00:02:00Z","at":"2026-01-01T00:02:00Z"}`,
		`{"k":"a","ts":"2026-01-01T00:00:30Z","at":"2026-01-01T00:02:01Z"}`,
		`oops`,
	}, "\n")), 0o644)
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "read 4 lines") || !strings.Contains(stderr, "2 accepted") ||
		!strings.Contains(stderr, "1 too late") || !strings.Contains(stderr, "1 quarantined (not_json 1)") {
		t.Errorf("summary on stderr: %s", stderr)
	}
	late, _ := os.ReadFile(filepath.Join(dir, "late.jsonl"))
	if !strings.Contains(string(late), `"reason":"too_late"`) {
		t.Errorf("late: %s", late)
	}
}

func TestUsage(t *testing.T) {
	if code, _, stderr := runCLI(t, t.TempDir()); code != 2 || !strings.Contains(stderr, "Usage:") {
		t.Errorf("no args: %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, t.TempDir(), "frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown: %d %s", code, stderr)
	}
	if code, stdout, _ := runCLI(t, t.TempDir(), "help"); code != 0 || !strings.Contains(stdout, "weir run") {
		t.Errorf("help: %d %s", code, stdout)
	}
	if code, _, _ := runCLI(t, t.TempDir(), "run"); code != 2 {
		t.Errorf("run without a job: %d", code)
	}
}

// The standard input and output path: weir run reads "-" and writes "-".
func TestStdinToStdout(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: \"-\"}\ntime: {field: ts, arrival_field: at}\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: \"-\"\n"), 0o644)
	cmd := exec.Command(clitest.Bin, "run", "--quiet", "job.yaml")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(`{"ts":"2026-01-01T00:00:00Z","at":"2026-01-01T00:00:01Z"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"key":null,"window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-01-01T00:00:01.000Z","n":1}` + "\n"
	if string(out) != want {
		t.Errorf("got %s", out)
	}
}
