package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

// tinyInput is three events, one too late, one broken line.
const tinyInput = `{"k":"a","ts":"2026-01-01T00:00:01Z","at":"2026-01-01T00:00:01Z"}
{"k":"b","ts":"2026-01-01T00:01:30Z","at":"2026-01-01T00:01:31Z"}
not json
{"k":"a","ts":"2026-01-01T00:00:02Z","at":"2026-01-01T00:01:32Z"}
`

func setup(t *testing.T, job string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(tinyInput), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	return dir
}

// snapshot is every file under dir with its contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			files[p] = string(b)
		}
		return nil
	})
	return files
}

func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s was deleted", p)
		} else if a != b {
			t.Errorf("%s was changed", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was written", p)
		}
	}
}

// An output that is the job file, or the input under another name (a
// symbolic or a hard link), is refused before anything is written: exit 2,
// one line naming the field.
func TestOutputsNeverOverwriteJobOrInput(t *testing.T) {
	cases := map[string]struct {
		setup func(dir string) string // returns the output path to use
		want  string
	}{
		"the job file":           {func(string) string { return "job.yaml" }, "output: " + "%s/job.yaml is the job file (under another name): it would be overwritten"},
		"a symlink to the input": {func(d string) string { os.Symlink("input.jsonl", filepath.Join(d, "link.jsonl")); return "link.jsonl" }, "output: %s/link.jsonl is the input (source.file) (under another name): it would be overwritten"},
		"a hard link to the input": {func(d string) string {
			os.Link(filepath.Join(d, "input.jsonl"), filepath.Join(d, "hard.jsonl"))
			return "hard.jsonl"
		}, "output: %s/hard.jsonl is the input (source.file) (under another name): it would be overwritten"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := setup(t, "")
			out := c.setup(dir)
			job := strings.Replace(jobText, "output: results.jsonl", "output: "+out, 1)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
			before := snapshot(t, dir)
			code, _, stderr := runCLI(t, dir, "run", "job.yaml")
			want := fmt.Sprintf(c.want, dir)
			if code != 2 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("exit %d: %q\nwant %q", code, stderr, want)
			}
			sameFiles(t, before, snapshot(t, dir))
		})
	}
	// A summary that is another job's file that is not weir output.
	dir := setup(t, "")
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("my notes\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(strings.Replace(jobText, "summary: summary.json", "summary: notes.txt", 1)), 0o644)
	before := snapshot(t, dir)
	if code, _, stderr := runCLI(t, dir, "run", "job.yaml"); code != 2 || !strings.Contains(stderr, "summary: "+dir+"/notes.txt exists, and weir has no record of writing it") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	sameFiles(t, before, snapshot(t, dir))
}

// A state directory that is not weir's is never emptied: refused, with
// nothing deleted.
func TestStateDirIsNeverEmptied(t *testing.T) {
	dir := setup(t, "")
	os.WriteFile(filepath.Join(dir, "unrelated.txt"), []byte("keep me\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(jobText+"state: {backend: pebble, dir: .}\n"), 0o644)
	before := snapshot(t, dir)
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	if code != 2 || !strings.Contains(stderr, "job.yaml:11: state: dir "+dir+" is not empty and is not a weir state directory") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	sameFiles(t, before, snapshot(t, dir))
	// An empty directory of the user's is used, emptied after, and kept.
	os.Mkdir(filepath.Join(dir, "st"), 0o755)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(jobText+"state: {backend: pebble, dir: st}\n"), 0o644)
	if code, _, stderr := runCLI(t, dir, "run", "job.yaml"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "st")); err != nil || len(entries) != 0 {
		t.Errorf("the state directory after the run: %v %v", entries, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "unrelated.txt")); string(b) != "keep me\n" {
		t.Error("an unrelated file was touched")
	}
}

// A job folder named as the checkpoint directory, holding files under
// names weir uses itself (shared/, .tmp-), is refused with nothing deleted;
// files put later into weir's own checkpoint directory survive its
// pruning.
func TestCheckpointDirIsNeverEmptied(t *testing.T) {
	dir := setup(t, "")
	mine := map[string]string{"shared/reports/q3.txt": "q3 revenue\n", "shared/contacts.txt": "alice\n", ".tmp-notes": "call the bank\n"}
	for name, text := range mine {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(jobText+"checkpoint: {dir: .}\n"), 0o644)
	before := snapshot(t, dir)
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	want := "weir: job.yaml:11: checkpoint: dir " + dir + " holds .tmp-notes, which weir did not write: weir deletes old checkpoints in its checkpoint directory, and keeps them only in a directory that is new, empty or marked WEIR-CHECKPOINTS by weir; choose another directory\n"
	if code != 2 || stderr != want {
		t.Errorf("exit %d: %q\nwant %q", code, stderr, want)
	}
	sameFiles(t, before, snapshot(t, dir))
	// The same files in weir's own directory, between two runs that
	// checkpoint and prune.
	ck := filepath.Join(dir, "ck")
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(jobText+"checkpoint: {dir: ck, keep: 1}\n"), 0o644)
	if code, _, stderr := runCLI(t, dir, "run", "job.yaml"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for name, text := range mine {
		os.MkdirAll(filepath.Dir(filepath.Join(ck, name)), 0o755)
		os.WriteFile(filepath.Join(ck, name), []byte(text), 0o644)
	}
	for run := 0; run < 2; run++ {
		if code, _, stderr := runCLI(t, dir, "run", "job.yaml"); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	for name, text := range mine {
		if b, err := os.ReadFile(filepath.Join(ck, name)); err != nil || string(b) != text {
			t.Errorf("ck/%s: %q, %v", name, b, err)
		}
	}
	entries, _ := os.ReadDir(ck)
	var chk []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "chk-") {
			chk = append(chk, e.Name())
		}
	}
	if len(chk) != 1 {
		t.Errorf("checkpoints kept with keep: 1: %v", chk)
	}
}

// weir savepoint never signals a process a killed run left in weir.pid, and
// two runs cannot share a checkpoint directory.
func TestSavepointStalePidAndOneRunPerDirectory(t *testing.T) {
	dir, _ := clitest.CrashReference(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(clitest.CrashJob+"checkpoint: {dir: ckpt, interval: 10s}\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "ckpt"), 0o755)
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Process.Kill()
	os.WriteFile(filepath.Join(dir, "ckpt", "weir.pid"), []byte(strconv.Itoa(victim.Process.Pid)+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ckpt", "LOCK"), []byte(strconv.Itoa(victim.Process.Pid)+"\n"), 0o644)
	code, _, stderr := runCLI(t, dir, "savepoint", "job.yaml")
	if code != 1 || !strings.Contains(stderr, "no job is running with the checkpoint directory "+filepath.Join(dir, "ckpt")) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the unrelated process was signalled: %v", err)
	}
	// A run holds the directory; a second one is refused while it runs.
	first := exec.Command(clitest.Bin, "run", "--quiet", "job.yaml")
	first.Dir = dir
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(filepath.Join(dir, "ckpt", "weir.pid")); strings.TrimSpace(string(b)) == strconv.Itoa(first.Process.Pid) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	second := exec.Command(clitest.Bin, "run", "--quiet", "job.yaml")
	second.Dir = dir
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is in use by process "+strconv.Itoa(first.Process.Pid)) {
		t.Errorf("a second run: %v\n%s", err, out)
	}
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
}

// Every checkpoint corrupt, or an output file cut short after a crash: the
// job refuses to run, says what it found and how to start over, exit 1.
func TestRefusesToStartOverSilently(t *testing.T) {
	dir, _ := clitest.CrashReference(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(clitest.CrashJob+"checkpoint: {dir: ckpt, interval: 100ms}\n"), 0o644)
	cmd := clitest.StartRun(t, dir, "job.yaml")
	time.Sleep(700 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	manifests, _ := filepath.Glob(filepath.Join(dir, "ckpt", "*", "MANIFEST"))
	sps, _ := filepath.Glob(filepath.Join(dir, "ckpt", "savepoints", "*", "MANIFEST"))
	manifests = append(manifests, sps...)
	if len(manifests) < 2 {
		t.Fatalf("checkpoints: %v", manifests)
	}
	// Every checkpoint corrupt: no start from scratch.
	saved := map[string][]byte{}
	for _, m := range manifests {
		b, _ := os.ReadFile(m)
		saved[m] = append([]byte(nil), b...)
		b[len(b)/2] ^= 1
		os.WriteFile(m, b, 0o644)
	}
	code, _, stderr := runCLI(t, dir, "run", "--quiet", "job.yaml")
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("holds %d checkpoints and none is complete and intact; weir will not start over by itself", len(manifests))) ||
		!strings.Contains(stderr, "move "+filepath.Join(dir, "ckpt")+" away") {
		t.Errorf("corrupt checkpoints: exit %d: %s", code, stderr)
	}
	for m, b := range saved {
		os.WriteFile(m, b, 0o644)
	}
	// The output lost what the checkpoints had committed: no run may
	// write after the hole.
	res := filepath.Join(dir, "results.jsonl")
	os.Truncate(res, 10)
	code, _, stderr = runCLI(t, dir, "run", "--quiet", "job.yaml")
	if code != 1 || !strings.Contains(stderr, res+" holds 10 bytes, fewer than the ") ||
		!strings.Contains(stderr, "to start over from the beginning, move the checkpoint directory away") {
		t.Errorf("truncated output: exit %d: %s", code, stderr)
	}
	os.Remove(res)
	code, _, stderr = runCLI(t, dir, "run", "--quiet", "job.yaml")
	if code != 1 || !strings.Contains(stderr, res+" is gone, but the checkpoint had committed") {
		t.Errorf("deleted output: exit %d: %s", code, stderr)
	}
}

// The exit codes: --help is a success for every command; flags may follow
// the job file.
func TestExitCodes(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"savepoint", "-h"}, {"bench", "--help"}, {"gen", "--help"}, {"lateness", "--help"}} {
		if code, _, stderr := runCLI(t, t.TempDir(), args...); code != 0 || !strings.Contains(stderr, "Usage") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
	dir := setup(t, jobText)
	if code, _, stderr := runCLI(t, dir, "run", "job.yaml", "--quiet"); code != 0 || stderr != "" {
		t.Errorf("a flag after the job file: exit %d %s", code, stderr)
	}
	for name, c := range map[string]struct {
		job, want string
	}{
		"missing output directory": {strings.Replace(jobText, "output: results.jsonl", "output: nodir/results.jsonl", 1), "job.yaml:7: output: the directory " + dir + "/nodir does not exist"},
		"checkpoint dir is a file": {jobText + "checkpoint: {dir: input.jsonl}\n", "job.yaml:11: checkpoint: dir " + dir + "/input.jsonl is a file, not a directory"},
	} {
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(c.job), 0o644)
		if code, _, stderr := runCLI(t, dir, "run", "job.yaml"); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d %s", name, code, stderr)
		}
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(jobText), 0o644)
	if code, _, stderr := runCLI(t, dir, "run", "--from", "nowhere", "job.yaml"); code != 2 || !strings.Contains(stderr, "--from nowhere: not a checkpoint directory") {
		t.Errorf("missing --from: exit %d %s", code, stderr)
	}
}

// A having expression that fails on some panes does not stop the job: they
// are written unfiltered, counted, and the first is logged with the job file
// and the pane.
func TestHavingThatFailsOnAPane(t *testing.T) {
	dir := setup(t, strings.Replace(jobText, "summary: summary.json", "summary: summary.json\nhaving: \"int(key) > 0\"", 1))
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, `job.yaml: having "int(key) > 0" failed on the pane of key "a", window [2026-01-01T00:00:00.000Z, 2026-01-01T00:01:00.000Z), revision 1`) ||
		!strings.Contains(stderr, "the having expression failed on 2 panes; they were written unfiltered") {
		t.Errorf("stderr: %s", stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "results.jsonl")); bytes.Count(b, []byte("\n")) != 2 {
		t.Errorf("results: %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "summary.json")); !bytes.Contains(b, []byte(`"having_errors": 2`)) {
		t.Errorf("summary: %s", b)
	}
}

// SIGTERM stops a job that is busy (every event lands in 3,600 windows)
// long before it would end, and the restart from its savepoint, or from the
// beginning, ends with the output of an uninterrupted run.
func TestStopABusyJob(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1M-event input")
	}
	dir := t.TempDir()
	clitest.WriteCrashInput(t, filepath.Join(dir, "input.jsonl"), 1_000_000)
	job := strings.Replace(clitest.CrashJob, "window: {tumbling: 1m}", "window: {sliding: {size: 1h, slide: 1s}}", 1) + "checkpoint: {dir: ckpt, interval: 1h}\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	cmd, stderr := clitest.Start(t, dir, "run", "job.yaml")
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("SIGTERM was ignored for a minute:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped before the end of the input") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// A checkpoint directory that cannot be created: a clear error at start,
// exit 1.
func TestUnwritableCheckpointDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(`{"id":"a","card":"c","amount":1,"ts":1780000000000,"arrival":1780000000000}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "blocker"), []byte("a file, not a directory"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(clitest.CrashJob+"checkpoint: {dir: blocker/ckpt}\n"), 0o644)
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	if msg := "cannot open the checkpoint directory " + filepath.Join(dir, "blocker", "ckpt") + ": "; code != 1 || !strings.Contains(stderr, msg) ||
		!strings.Contains(stderr[strings.Index(stderr, msg):], ": not a directory") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
