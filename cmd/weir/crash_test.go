package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeCrashInput writes n events in arrival order: 1000 cards, jitter of up
// to 2 s, 1% of events up to 10 minutes late, 0.5% repeated deliveries, 0.1%
// lines that are not JSON.
func writeCrashInput(t *testing.T, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(42, 42))
	now := int64(1_780_000_000_000)
	var recent []string
	for i := 0; i < n; i++ {
		now += int64(r.IntN(4))
		ts := now - int64(r.IntN(2000))
		if r.IntN(100) == 0 {
			ts -= int64(r.IntN(600_000))
		}
		if r.IntN(1000) == 0 {
			fmt.Fprintf(w, "not json %d\n", i)
			continue
		}
		if r.IntN(200) == 0 && len(recent) > 0 {
			dup := recent[r.IntN(len(recent))]
			fmt.Fprintf(w, "%s\"arrival\":%d}\n", dup, now)
		}
		line := fmt.Sprintf(`{"id":"e%d","card":"c%d","amount":%d.%02d,"ts":%d,`, i, r.IntN(1000), r.IntN(200), r.IntN(100), ts)
		fmt.Fprintf(w, "%s\"arrival\":%d}\n", line, now)
		recent = append(recent, line)
		if len(recent) > 200 {
			recent = recent[1:]
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

const crashJob = `name: crash
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
id: id
dedup_horizon: 10m
watermark: {delay: 1s, interval: 200ms}
window: {tumbling: 1m}
allowed_lateness: 2m
trigger: {late: 5s}
aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`

var outputsToCompare = []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"}

// crashReference writes the 1M-event input in a new directory and runs the
// job on it without checkpoints, in its subdirectory ref.
func crashReference(t *testing.T) (dir, ref string) {
	if testing.Short() {
		t.Skip("a 1M-event replay: not in -short")
	}
	dir = t.TempDir()
	writeCrashInput(t, filepath.Join(dir, "input.jsonl"), 1_000_000)
	ref = filepath.Join(dir, "ref")
	os.Mkdir(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(strings.Replace(crashJob, "input.jsonl", "../input.jsonl", 1)), 0o644)
	if out, err := exec.Command(weirBin, "run", "--quiet", filepath.Join(ref, "job.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	return dir, ref
}

// sameAsReference checks that dir's outputs are byte for byte ref's.
func sameAsReference(t *testing.T, dir, ref string) {
	t.Helper()
	for _, f := range outputsToCompare {
		want, _ := os.ReadFile(filepath.Join(ref, f))
		got, _ := os.ReadFile(filepath.Join(dir, f))
		if len(want) < 1000 {
			t.Fatalf("%s: the reference is too small (%d bytes)", f, len(want))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the uninterrupted run (%d bytes, want %d)", f, len(got), len(want))
		}
	}
}

// startWeir starts weir with args in dir; its standard error goes to the
// buffer returned (read it once the command has exited).
func startWeir(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(weirBin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr
}

// weirRun starts weir run --quiet on a job file, to be killed.
func weirRun(t *testing.T, dir, jobFile string) *exec.Cmd {
	cmd, _ := startWeir(t, dir, "run", "--quiet", jobFile)
	return cmd
}

// crashAndCompare runs the job without checkpoints for reference, then with
// checkpoints, killed with SIGKILL at 10 random points (fixed seed) and
// restarted each time (with the parallelism of each restart from
// parallelisms, cycled), and checks that the outputs are byte-identical.
func crashAndCompare(t *testing.T, extra string, parallelisms []int) {
	crashAndCompareEvery(t, extra, parallelisms, "150ms", 100, 800)
}

// crashAndCompareEvery is crashAndCompare with a checkpoint interval and a
// range of kill delays (milliseconds).
func crashAndCompareEvery(t *testing.T, extra string, parallelisms []int, interval string, killMin, killMax int) {
	crashAndCompareWith(t, []string{extra}, parallelisms, interval, killMin, killMax)
}

// crashAndCompareWith is crashAndCompareEvery with the extra lines of the
// job file taken in turn from extras, run after run.
func crashAndCompareWith(t *testing.T, extras []string, parallelisms []int, interval string, killMin, killMax int) {
	dir, ref := crashReference(t)
	r := rand.New(rand.NewPCG(10, 10))
	start := time.Now()
	for i := 0; i < 10; i++ {
		p, extra := parallelisms[i%len(parallelisms)], extras[i%len(extras)]
		job := crashJob + fmt.Sprintf("parallelism: %d\ncheckpoint: {dir: ckpt, interval: %s}\n%s", p, interval, extra)
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
		cmd := weirRun(t, dir, "job.yaml")
		time.Sleep(time.Duration(killMin+r.IntN(killMax-killMin)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	p, extra := parallelisms[10%len(parallelisms)], extras[10%len(extras)]
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(crashJob+fmt.Sprintf("parallelism: %d\ncheckpoint: {dir: ckpt, interval: %s}\n%s", p, interval, extra)), 0o644)
	cmd := exec.Command(weirBin, "run", "job.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	t.Logf("10 crashes and the final run took %s; final run said:\n%s", time.Since(start).Round(time.Millisecond), out)
	sameAsReference(t, dir, ref)
	for _, k := range []string{`"read": 1`, `"too_late": `, `"duplicates": `} {
		if b, _ := os.ReadFile(filepath.Join(dir, "summary.json")); !bytes.Contains(b, []byte(k)) {
			t.Errorf("summary lacks %s", k)
		}
	}
	sumRef, _ := os.ReadFile(filepath.Join(ref, "summary.json"))
	sumGot, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if !bytes.Equal(sumRef, sumGot) {
		t.Errorf("summary differs:\n%s\nwant:\n%s", sumGot, sumRef)
	}
}

func TestKillNineExactlyOnce(t *testing.T) {
	crashAndCompare(t, "", []int{1})
}

func TestKillNineRestoreWithOtherParallelism(t *testing.T) {
	crashAndCompare(t, "", []int{2, 1, 3})
}

// SIGTERM takes a savepoint and exits 0; weir savepoint asks a running job
// for one; a run restored from either (with another parallelism) ends with
// the output of an uninterrupted run.
func TestSigtermAndSavepointCommand(t *testing.T) {
	dir, ref := crashReference(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(crashJob+"checkpoint: {dir: ckpt, interval: 10s}\n"), 0o644)

	cmd, stderr := startWeir(t, dir, "run", "job.yaml")
	// weir savepoint, while the job runs
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "ckpt", "weir.pid")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	sp := exec.Command(weirBin, "savepoint", "job.yaml")
	sp.Dir = dir
	out, err := sp.CombinedOutput()
	if err != nil {
		t.Fatalf("weir savepoint: %v\n%s", err, out)
	}
	first := strings.TrimSpace(string(out))
	if !strings.Contains(first, filepath.Join("ckpt", "savepoints", "sp-")) {
		t.Fatalf("weir savepoint printed %q", out)
	}
	// SIGTERM: a savepoint, and exit 0
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped before the end of the input; savepoint "+filepath.Join(dir, "ckpt", "savepoints", "sp-")) {
		t.Fatalf("stderr: %s", stderr.String())
	}
	// Resume from the savepoint weir savepoint took, with parallelism 2.
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(crashJob+"parallelism: 2\ncheckpoint: {dir: ckpt, interval: 10s}\n"), 0o644)
	resume := exec.Command(weirBin, "run", "--from", first, "job.yaml")
	resume.Dir = dir
	if out, err := resume.CombinedOutput(); err != nil || !strings.Contains(string(out), "resuming from "+first) {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	sameAsReference(t, dir, ref)
}

// A checkpoint directory that cannot be created: a clear error at start,
// exit 1.
func TestUnwritableCheckpointDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(`{"id":"a","card":"c","amount":1,"ts":1780000000000,"arrival":1780000000000}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "blocker"), []byte("a file, not a directory"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(crashJob+"checkpoint: {dir: blocker/ckpt}\n"), 0o644)
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	if code != 1 || !strings.Contains(stderr, "cannot open the checkpoint directory "+filepath.Join(dir, "blocker", "ckpt")+": not a directory") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// The Pebble backend, with a budget far below the state: its checkpoints
// are Pebble checkpoints kept incrementally in the store's shared objects.
func TestKillNinePebbleBackend(t *testing.T) {
	crashAndCompareEvery(t, "state: {backend: pebble, memory_budget: 8MiB}\n", []int{1, 2}, "200ms", 300, 2000)
}

// A checkpoint of either backend restores into the other, with another
// parallelism: the keys of a Pebble checkpoint are split by key group again.
func TestKillNineAcrossBackends(t *testing.T) {
	crashAndCompareWith(t, []string{"state: {backend: pebble, memory_budget: 8MiB}\n", ""}, []int{2, 1, 3}, "200ms", 300, 2000)
}
