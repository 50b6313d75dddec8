package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
)

// The console's recent panes are the panes the outputs get: after having,
// not every pane the windows fire.
func TestConsolePanesAreTheOutputs(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"job.yaml", "orders.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../examples/fraud", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	j, err := jobfile.LoadWith(filepath.Join(dir, "job.yaml"), jobfile.LoadOptions{Set: []string{`output=["-"]`}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rn, err := Build(j, Options{Console: true, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rn.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	written := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if sum.PanesFired < 1000 || int64(len(written)) != sum.PanesWritten || len(written) > 50 {
		t.Fatalf("%d panes fired, %d written: not what the test needs", sum.PanesFired, len(written))
	}
	rec := httptest.NewRecorder()
	rn.Console().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/panes", nil))
	var panes []json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &panes); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range panes {
		got = append(got, string(p))
	}
	if strings.Join(got, "\n") != strings.Join(written, "\n") {
		t.Errorf("/api/panes (%d):\n%s\nwant the output's %d:\n%s", len(got), strings.Join(got, "\n"), len(written), strings.Join(written, "\n"))
	}
}

// A secret that came into the job's name from a variable (a token named
// like one) is shown as the variable on every path the name takes: every
// log line, the summary, the acceptance record, the status and the
// metrics' labels; so is a secret that came into a partition's name (a
// topic), a label of its own.
func TestSecretInTheJobsName(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	t.Setenv("WEIR_JOB_TOKEN", token)
	dir := t.TempDir()
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, `{"card":"c%d","ts":%d,"src":"feed-%s"}`+"\n", i%3, 1_780_000_000_000+int64(i)*1000, token)
	}
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: "job-${WEIR_JOB_TOKEN}"
source: {file: input.jsonl}
time: {field: ts, partition_field: src}
key: card
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
summary: summary.json
acceptance: acceptance.json
`), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "job-${WEIR_JOB_TOKEN}" {
		t.Fatalf("the job's name is %q", j.Name)
	}
	var log bytes.Buffer
	rn, err := Build(j, Options{Console: true, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := rn.Console()
	srv.Ended(rn.Engine())
	shown := map[string]string{"the log": log.String()}
	for _, f := range []string{"summary.json", "acceptance.json", "acceptance.md"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		shown[f] = string(b)
	}
	for _, path := range []string{"/metrics", "/api/status"} {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		shown[path] = rec.Body.String()
	}
	for where, text := range shown {
		if strings.Contains(text, token) {
			t.Errorf("%s shows the token:\n%s", where, text)
		}
		if where != "the log" && where != "acceptance.md" && !strings.Contains(text, "job-${WEIR_JOB_TOKEN}") {
			t.Errorf("%s does not name the job as job-${WEIR_JOB_TOKEN}:\n%.2000s", where, text)
		}
	}
	if !strings.Contains(shown["/metrics"], `weir_partition_idle{job_name="job-${WEIR_JOB_TOKEN}",partition="feed-${WEIR_JOB_TOKEN}"}`) {
		t.Errorf("/metrics does not label the partition with the variable:\n%s", shown["/metrics"])
	}
}

// The console shows the settings with every value that came from a
// variable as the ${NAME} it came from, and the job file redacted.
func TestConsoleShowsVariablesByName(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("WEIR_OUT_DIR", dir)
	t.Setenv("WEIR_CK", "ck")
	yaml := strings.Replace(minimal, "output: results.jsonl", `output: "${WEIR_OUT_DIR}/results.jsonl"`, 1) +
		"checkpoint: {dir: \"${WEIR_CK}\"}\nhttp: {listen: \"127.0.0.1:0\", token: s3cret}\n"
	os.WriteFile(filepath.Join(dir, "input.jsonl"), nil, 0o644)
	path := filepath.Join(dir, "job.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	j, err := jobfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rn, err := Build(j, Options{Console: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Engine().Discard()
	c := rn.Console()
	var got []string
	for _, s := range c.Job.Settings {
		got = append(got, s.Name+": "+s.Value)
	}
	want := []string{"output: ${WEIR_OUT_DIR}/results.jsonl", "checkpoints: every 10s in ${WEIR_OUT_DIR}/${WEIR_CK}"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("settings %q lack %q", got, w)
		}
	}
	if !strings.Contains(c.Job.Text, `token: "[redacted]"`) || strings.Contains(c.Job.Text, "s3cret") || c.Access.Token != "s3cret" {
		t.Errorf("text %s, access %+v", c.Job.Text, c.Access)
	}
}
