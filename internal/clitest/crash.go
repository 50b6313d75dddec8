package clitest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// WriteCrashInput writes n events in arrival order: 1000 cards, jitter of
// up to 2 s, 1% of events up to 10 minutes late, 0.5% repeated deliveries,
// 0.1% lines that are not JSON. The same n gives the same bytes.
func WriteCrashInput(t testing.TB, path string, n int) {
	t.Helper()
	if err := writeCrashInput(path, n); err != nil {
		t.Fatal(err)
	}
}

func writeCrashInput(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
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
		f.Close()
		return err
	}
	return f.Close()
}

// CrashEvents is how many events the crash tests replay.
const CrashEvents = 1_000_000

// CrashJob is the job the crash tests replay: late events within and beyond
// the allowed lateness, duplicates, bad lines, a side output and a
// quarantine.
const CrashJob = `name: crash
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

// CrashOutputs are the files of CrashJob that a run must write byte for
// byte as an uninterrupted run does.
var CrashOutputs = []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"}

// The CrashEvents-event input and CrashJob's uninterrupted run of it,
// made once per test binary: every crash test compares with the same run.
var shared struct {
	once     sync.Once
	dir, ref string
	err      error
}

func makeShared() {
	dir, err := os.MkdirTemp("", "weir-crash-")
	if err != nil {
		shared.err = err
		return
	}
	atExit(func() { os.RemoveAll(dir) })
	shared.dir = dir
	in := filepath.Join(dir, "input.jsonl")
	if shared.err = writeCrashInput(in, CrashEvents); shared.err != nil {
		return
	}
	ref := filepath.Join(dir, "ref")
	os.Mkdir(ref, 0o755)
	os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(strings.Replace(CrashJob, "input.jsonl", "../input.jsonl", 1)), 0o644)
	if out, err := exec.Command(Bin, "run", "--quiet", filepath.Join(ref, "job.yaml")).CombinedOutput(); err != nil {
		shared.err = fmt.Errorf("reference run: %v\n%s", err, out)
		return
	}
	shared.ref = ref
}

// CrashInput copies the CrashEvents-event input of CrashJob to path
// (written once per test binary).
func CrashInput(t testing.TB, path string) {
	t.Helper()
	shared.once.Do(makeShared)
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	if err := copyFile(filepath.Join(shared.dir, "input.jsonl"), path); err != nil {
		t.Fatal(err)
	}
}

// CrashReference makes a new directory holding the input of CrashJob
// (input.jsonl) and returns it, with the directory of CrashJob's
// uninterrupted run of that input (without checkpoints), which the caller
// must not change. Not in -short: a million-event replay.
func CrashReference(t testing.TB) (dir, ref string) {
	t.Helper()
	if testing.Short() {
		t.Skip("a 1M-event replay: not in -short")
	}
	dir = t.TempDir()
	CrashInput(t, filepath.Join(dir, "input.jsonl"))
	return dir, shared.ref
}

// SameAsReference checks that dir's CrashOutputs are byte for byte ref's.
func SameAsReference(t testing.TB, dir, ref string) {
	t.Helper()
	for _, f := range CrashOutputs {
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

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// KillRuns runs weir run job.yaml in dir n times, each killed with SIGKILL
// after a random wait of minMs to maxMs milliseconds (drawn from r), then
// once more to its end; it returns what that last run said, and fails the
// test if it failed.
func KillRuns(t testing.TB, dir string, r *rand.Rand, n, minMs, maxMs int) []byte {
	t.Helper()
	for range n {
		cmd := StartRun(t, dir, "job.yaml")
		time.Sleep(time.Duration(minMs+r.IntN(maxMs-minMs)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	cmd := exec.Command(Bin, "run", "job.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	return out
}
