// Package crashtest kills weir runs of a million-event replay with SIGKILL
// and checks that their restarts write what an uninterrupted run writes,
// byte for byte: with the memory and the Pebble backend, across the two,
// with another parallelism, and through SIGTERM and weir savepoint; and a
// Pebble state four times its memory budget. It holds tests only; they run
// the weir command that TestMain builds.
package crashtest

import (
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

	"github.com/weirstream/weir/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

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
	dir, ref := clitest.CrashReference(t)
	r := rand.New(rand.NewPCG(10, 10))
	start := time.Now()
	for i := 0; i < 10; i++ {
		p, extra := parallelisms[i%len(parallelisms)], extras[i%len(extras)]
		job := clitest.CrashJob + fmt.Sprintf("parallelism: %d\ncheckpoint: {dir: ckpt, interval: %s}\n%s", p, interval, extra)
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
		cmd := clitest.StartRun(t, dir, "job.yaml")
		time.Sleep(time.Duration(killMin+r.IntN(killMax-killMin)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	p, extra := parallelisms[10%len(parallelisms)], extras[10%len(extras)]
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(clitest.CrashJob+fmt.Sprintf("parallelism: %d\ncheckpoint: {dir: ckpt, interval: %s}\n%s", p, interval, extra)), 0o644)
	cmd := exec.Command(clitest.Bin, "run", "job.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	t.Logf("10 crashes and the final run took %s; final run said:\n%s", time.Since(start).Round(time.Millisecond), out)
	clitest.SameAsReference(t, dir, ref)
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
	dir, ref := clitest.CrashReference(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(clitest.CrashJob+"checkpoint: {dir: ckpt, interval: 10s}\n"), 0o644)

	cmd, stderr := clitest.Start(t, dir, "run", "job.yaml")
	// weir savepoint, while the job runs
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "ckpt", "weir.pid")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	sp := exec.Command(clitest.Bin, "savepoint", "job.yaml")
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
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(clitest.CrashJob+"parallelism: 2\ncheckpoint: {dir: ckpt, interval: 10s}\n"), 0o644)
	resume := exec.Command(clitest.Bin, "run", "--from", first, "job.yaml")
	resume.Dir = dir
	if out, err := resume.CombinedOutput(); err != nil || !strings.Contains(string(out), "resuming from "+first) {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	clitest.SameAsReference(t, dir, ref)
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
