package kindtest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/kindtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/plan"
)

// A source kind and a sink kind registered by a package of their own
// (internal/kindtest, as a user's connector would be) are read by the job
// file like its own: the source's records decoded as JSON lines, the
// results, the too-late events and the rejected lines written to the sink
// as the job writes them to a file, exactly once at each checkpoint; weir
// plan shows them and the job file's schema lists their settings.
func TestRegisteredKindsFromAJobFile(t *testing.T) {
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf(`{"card":"c%d","ts":%d,"at":%d}`, i%3, 1_780_000_000_000+int64(i)*1000, 1_780_000_000_000+int64(i)*1000))
	}
	lines = append(lines, "not json", `{"card":"c1","ts":1780000000000,"at":1780000300000}`)
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = fmt.Sprintf("%q", l)
	}
	for _, n := range []string{"kinds-results", "kinds-late", "kinds-quarantine"} {
		kindtest.Reset(n)
	}
	dir := t.TempDir()
	yaml := fmt.Sprintf(`name: kinds
source: {memlines: {lines: [%s], label: orders}}
time: {field: ts, arrival_field: at}
key: card
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count}
output: [{memsink: {name: kinds-results}}, results.jsonl]
late_output: {memsink: {name: kinds-late}}
quarantine: {memsink: {name: kinds-quarantine}}
checkpoint: {dir: ckpt, interval: 1h}
acceptance: acceptance.json
`, strings.Join(quoted, ", "))
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := job.Run(context.Background(), j, job.Options{CheckpointAfter: func(int64) (checkpoint.Kind, bool) { return checkpoint.Periodic, true }})
	if err != nil {
		t.Fatal(err)
	}
	results, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	file := strings.Split(strings.TrimSuffix(string(results), "\n"), "\n")
	if got := kindtest.Committed("kinds-results"); !slices.Equal(got, file) || len(got) != 18 || sum.PanesWritten != 18 {
		t.Errorf("the registered sink holds %d panes, the file %d (summary %d):\n%s", len(got), len(file), sum.PanesWritten, strings.Join(got, "\n"))
	}
	if k := kindtest.Kinds("kinds-results"); len(k) != 18 || k[0] != plan.Pane {
		t.Errorf("kinds %v", k)
	}
	if late := kindtest.Committed("kinds-late"); len(late) != 1 || !strings.Contains(late[0], `"reason":"too_late"`) || kindtest.Kinds("kinds-late")[0] != plan.LateEvent {
		t.Errorf("late: %q", late)
	}
	if q := kindtest.Committed("kinds-quarantine"); len(q) != 1 || !strings.Contains(q[0], `"reason":"not_json"`) || !strings.Contains(q[0], `"line":301`) {
		t.Errorf("quarantine: %q", q)
	}
	// The acceptance record names the source as the plan does.
	if acc, err := os.ReadFile(filepath.Join(dir, "acceptance.json")); err != nil || !strings.Contains(string(acc), `"sources": [
      "memlines orders"
    ]`) {
		t.Errorf("the acceptance record's sources (%v):\n%s", err, acc)
	}
	text := job.Plan(j).String()
	for _, want := range []string{"source       input", "memlines orders as json", "memsink kinds-results", "memsink kinds-late"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan does not show %q:\n%s", want, text)
		}
	}
	if s := string(jobfile.Schema()); !strings.Contains(s, `"memsink"`) || !strings.Contains(s, `"memlines"`) || !strings.Contains(s, "the lines, in arrival order") {
		t.Error("the schema does not list the registered kinds")
	}
	// Their settings are checked when the file is read, naming the field.
	for bad, want := range map[string]string{
		`{memsink: {}}`:              "job.yaml:8: output.memsink.name: missing: the name they are kept under",
		`{memsink: {name: x, y: 1}}`: `job.yaml:8: output.memsink.y: unknown field "y"; expected one of name`,
		`{memsink: {name: ""}}`:      "job.yaml:8: output.memsink.name: expected a name",
	} {
		y := strings.Replace(yaml, "output: [{memsink: {name: kinds-results}}, results.jsonl]", "output: "+bad, 1)
		os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(y), 0o644)
		if _, err := jobfile.Load(filepath.Join(dir, "bad.yaml")); err == nil || !strings.HasSuffix(err.Error(), strings.TrimPrefix(want, "job.yaml")) {
			t.Errorf("%s: %v, want %s", bad, err, want)
		}
	}
}
