package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
)

const upgradeJob = `name: orders
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: card
id: order_id
watermark: {delay: 1s, interval: 200ms}
window: {tumbling: 10s}
allowed_lateness: 5s
aggregates: {orders: count, spent: sum(amount)}
output: [results.jsonl, {sqlite: {path: totals.db, table: totals}}]
checkpoint: {dir: ckpt, interval: 1h}
`

// upgradeDir is a directory where the job ran to the end of its input with
// a savepoint after its first batch (ckpt/savepoints/sp-00000001).
func upgradeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	const t0 = 1_788_000_000_000
	for i := range 1500 {
		fmt.Fprintf(&b, `{"order_id":"o%d","card":"c%d","amount":%d.%02d,"ts":%d,"at":%d}`+"\n", i, i%5, i%40, i%100, t0+i*400-(i%7)*150, t0+i*400)
	}
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(b.String()), 0o600)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(upgradeJob), 0o600)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = job.Run(context.Background(), j, job.Options{CheckpointAfter: func(b int64) (checkpoint.Kind, bool) {
		return checkpoint.Savepoint, b == 1
	}})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

const sp1 = "ckpt/savepoints/sp-00000001"

// weir run --from SP --check says what carries over, by what rule, what
// restarts and what is refused, running nothing: exit 0, or 1 with the
// refusal; a bad job file is 2.
func TestCheckRestore(t *testing.T) {
	dir := upgradeDir(t)
	snap := treeOf(t, dir)
	const head = `restoring ckpt/savepoints/sp-00000001 (layout 4) into job.yaml:
carries over  source          its position
carries over  de-duplication  its de-duplication ids
`
	const outs = `carries over  output[0]       its commit record
carries over  output[1]       its commit record
`
	for _, c := range []struct {
		name, old, new string
		flags          []string
		code           int
		stdout, stderr string
	}{
		{"unchanged", "", "", nil, 0, head + `carries over  window          its open windows
` + outs, ""},
		{"carried", "{orders: count, spent: sum(amount)}", "{orders: count, spent: sum(amount), biggest: max(amount)}\nparallelism: 2", nil, 0, `restoring ckpt/savepoints/sp-00000001 (layout 4) into job.yaml:
carries over  source              its position
carries over  de-duplication      its de-duplication ids
carries over  window              its open windows
by rule       aggregates.biggest  added: max(amount): the open windows start it from zero, and their panes say it is partial
carries over  parallelism         1 -> 2
carries over  output[0]           its commit record
carries over  output[1]           its commit record
`, ""},
		{"refused", "{tumbling: 10s}", "{tumbling: 1m}", nil, 1, head + `refused       window          tumbling 10s -> tumbling 1m0s: its open windows would be lost
` + outs, "weir: job.yaml: window: tumbling 10s in ckpt/savepoints/sp-00000001, tumbling 1m0s now: restoring would lose the open windows of 5 keys; --drop-state=windows starts them afresh, keeping the positions and the de-duplication ids\n"},
		{"dropped", "{tumbling: 10s}", "{tumbling: 1m}", []string{"--drop-state=windows"}, 0, head + `restarts      window          tumbling 10s -> tumbling 1m0s: its open windows dropped (--drop-state=windows)
` + outs, ""},
		{"bad drop", "", "", []string{"--drop-state=positions"}, 2, "", "weir: --drop-state: \"positions\" is not a kind of state a restore may drop: windows, dedup, join or process\n"},
		{"bad job", "{tumbling: 10s}", "{tumbling: 1x}", nil, 2, "", "weir: job.yaml:7: window.tumbling: expected a duration such as 2s, 5m or 1h, got \"1x\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(strings.Replace(upgradeJob, c.old, c.new, 1)), 0o600)
			code, stdout, stderr := runCLI(t, dir, append([]string{"run", "--from", sp1, "--check", "job.yaml"}, c.flags...)...)
			if code != c.code || stdout != c.stdout || stderr != c.stderr {
				t.Errorf("exit %d\n%s\nstderr:\n%s\nwant exit %d\n%s\nstderr:\n%s", code, stdout, stderr, c.code, c.stdout, c.stderr)
			}
		})
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(upgradeJob), 0o600)
	if got := treeOf(t, dir); got != snap {
		t.Errorf("--check wrote:\n%s\nbefore:\n%s", got, snap)
	}
}

// weir savepoint inspect prints what a savepoint holds.
func TestSavepointInspect(t *testing.T) {
	dir := upgradeDir(t)
	code, stdout, stderr := runCLI(t, dir, "savepoint", "inspect", sp1)
	want := `savepoint 1 of orders, layout 4, 148.4 KiB
fingerprint 46c794a9963d1669
created TIME
operators:
  window: 5 keys, 515 B in 1 instance, watermark 2026-08-29T10:46:47.799Z
    window tumbling 10s, key card, time.field ts, aggregates {orders: count, spent: sum(amount)}, mode accumulating
  head: 1024 events read, 1024 de-duplication ids, 13.0 KiB
sources:
  input: line 1024 (byte offset 86694)
sinks:
  output[0] results:file:results.jsonl: 0 items committed, pending: checkpoint 1 (400 items, 122.5 KiB)
  output[1] results:sqlite:totals.db#totals: 0 items committed, pending: checkpoint 1 (400 items, 12.4 KiB)
`
	stdout = regexp.MustCompile(`(?m)^created \S+Z$`).ReplaceAllString(stdout, "created TIME")
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("exit %d\n%s\nstderr:\n%s\nwant:\n%s", code, stdout, stderr, want)
	}
	code, _, stderr = runCLI(t, dir, "savepoint", "inspect", "nowhere")
	if code != 2 || stderr != "weir: nowhere: not a checkpoint directory\n" {
		t.Errorf("no directory: exit %d %s", code, stderr)
	}
}

// treeOf is every file under dir with its size.
func treeOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "job.yaml" {
			info, _ := d.Info()
			rel, _ := filepath.Rel(dir, p)
			fmt.Fprintf(&b, "%s %d %s\n", rel, info.Size(), info.ModTime())
		}
		return err
	})
	return b.String()
}

// The operations page's upgrade, step by step, run as the page shows it:
// the job stopped with a savepoint (upgradeDir's), the savepoint
// inspected, the job file changed as the page says, the restore checked,
// and the job run from the savepoint. Every line the page shows of each
// command is in its output, in order.
func TestOperationsPageUpgradeAsShown(t *testing.T) {
	s := clitest.PageSession(t, "../../docs/operations.md", "kill -TERM $(cat ckpt/weir.pid)")
	dir := upgradeDir(t)
	var ran []string
	for _, st := range s.Steps {
		args := shellWords(st.Command)
		switch args[0] {
		case "kill":
			continue // upgradeDir's run took the savepoint
		case "$EDITOR":
			if st.Comment != "biggest: max(amount); parallelism: 2" {
				t.Fatalf("the page edits the job as %q; this test as biggest: max(amount); parallelism: 2", st.Comment)
			}
			b, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(b), "sum(amount)}", "sum(amount), biggest: max(amount)}\nparallelism: 2", 1)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(edited), 0o600)
			ran = append(ran, st.Command)
			continue
		}
		code, stdout, stderr := clitest.Run(t, dir, args[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", st.Command, code, stdout, stderr)
		}
		// The savepoint was created by this run, not when the page's was.
		out := createdAt.ReplaceAllString(stdout+stderr, "created 2026-09-07T12:00:03.512Z")
		if missing := clitest.MissingLine(st.Output, out); missing != "" {
			t.Errorf("%s: the page shows %q, which the output lacks:\n%s%s", st.Command, missing, stdout, stderr)
		}
		ran = append(ran, st.Command)
	}
	want := []string{
		"weir savepoint inspect ckpt/savepoints/sp-00000001",
		"$EDITOR job.yaml",
		"weir run --from ckpt/savepoints/sp-00000001 --check job.yaml",
		"weir run --from ckpt/savepoints/sp-00000001 job.yaml",
	}
	if strings.Join(ran, "\n") != strings.Join(want, "\n") {
		t.Errorf("the page's upgrade runs\n%s\nthis test knows\n%s", strings.Join(ran, "\n"), strings.Join(want, "\n"))
	}
}

// createdAt is the line of a savepoint's inspection that says when it was
// created, to the millisecond.
var createdAt = regexp.MustCompile(`(?m)^created \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
