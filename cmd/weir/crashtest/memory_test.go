package crashtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

// peakRSS runs weir and returns its peak resident memory and its output.
// It reads the high-water mark from /proc (VmHWM) until the process exits:
// the rusage of a child would count the memory of this test process, which
// a fork inherits before the exec.
func peakRSS(t *testing.T, dir string, args ...string) (int64, string) {
	t.Helper()
	cmd := exec.Command(clitest.Bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var hwm int64
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	for {
		if b, err := os.ReadFile(status); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					var kb int64
					fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
					hwm = max(hwm, kb*1024)
				}
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("weir %v: %v\n%s", args, err, out.String())
			}
			return hwm, out.String()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A job whose window state is more than four times its memory budget (400K
// keys, each with an hour-long window) completes on the Pebble backend with
// a peak resident memory under the budget plus 256 MiB; the memory backend
// shows how large the state is.
func TestPebbleStateLargerThanMemory(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	const keys = 400_000
	base := int64(1_780_000_000_000)
	for i := 0; i < keys; i++ {
		ts := base + int64(i)*2
		fmt.Fprintf(w, `{"k":"key-%08d","u":"user-%d","v":%d,"ts":%d,"arrival":%d}`+"\n", i*7919%keys, i%5000, i%100, ts, ts+5)
	}
	w.Flush()
	f.Close()
	job := `name: big-state
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 1h}
allowed_lateness: 10m
aggregates: {n: count, total: sum(v), users: count_distinct(u), top: max(v)}
output: results.jsonl
`
	const budget = 64 << 20
	os.WriteFile(filepath.Join(dir, "mem.yaml"), []byte(job), 0o644)
	os.WriteFile(filepath.Join(dir, "pebble.yaml"), []byte(job+"state: {backend: pebble, memory_budget: 64MiB}\n"), 0o644)
	memRSS, _ := peakRSS(t, dir, "run", "--quiet", "mem.yaml")
	os.Rename(filepath.Join(dir, "results.jsonl"), filepath.Join(dir, "mem.jsonl"))
	pebRSS, out := peakRSS(t, dir, "run", "pebble.yaml")
	want, _ := os.ReadFile(filepath.Join(dir, "mem.jsonl"))
	got, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	t.Logf("peak RSS: memory backend %d MiB, pebble backend %d MiB (budget %d MiB)\n%s", memRSS>>20, pebRSS>>20, budget>>20, out)
	if memRSS < 4*budget {
		t.Errorf("the state is not four times the budget: the memory backend peaked at %d MiB", memRSS>>20)
	}
	if pebRSS >= budget+256<<20 {
		t.Errorf("pebble backend peaked at %d MiB, over the budget + 256 MiB", pebRSS>>20)
	}
	if string(got) != string(want) || strings.Count(string(want), `"revision":1,`) != keys {
		t.Errorf("the backends disagree (%d and %d bytes)", len(want), len(got))
	}
}
