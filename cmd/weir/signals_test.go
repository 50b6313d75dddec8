//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

// A stop signal is handled from the first instant: SIGTERM while the job
// is still restoring a large checkpoint stops it as any stop does (exit 0,
// a savepoint), instead of ending the process by the signal.
func TestSignalWhileRestoring(t *testing.T) {
	dir := t.TempDir()
	f, _ := os.Create(filepath.Join(dir, "input.jsonl"))
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range 400_000 {
		fmt.Fprintf(w, `{"id":"order-%07d","ts":%d}`+"\n", i, 1_780_000_000_000+i)
	}
	w.Flush()
	f.Close()
	job := `name: restore
source: {file: input.jsonl, follow: true}
time: {field: ts}
key: id
watermark: {delay: 1h}
window: {tumbling: 1h}
aggregates: {n: count}
output: results.jsonl
checkpoint: {dir: ckpt, interval: 1h}
http: 127.0.0.1:%d
`
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(job, clitest.FreePort(t))), 0o644)
	// The first run reads everything, waits for more, takes a savepoint of
	// 400,000 open windows, and is stopped.
	first := exec.Command(clitest.Bin, "run", "--quiet", "job.yaml")
	first.Dir = dir
	var ferr strings.Builder
	first.Stderr = &ferr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		code, out, _ := runCLI(t, dir, "status", "--json", "job.yaml")
		if code == 0 && strings.Contains(out, `"read":400000,`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A savepoint of 400,000 open windows, asked for as a user would (it
	// waits for it however loaded the machine is); then the stop.
	if code, out, errOut := runCLI(t, dir, "savepoint", "job.yaml"); code != 0 {
		t.Fatalf("weir savepoint: exit %d\n%s%s\n%s", code, out, errOut, ferr.String())
	}
	first.Process.Signal(syscall.SIGTERM)
	if err := first.Wait(); err != nil {
		t.Fatalf("the first run: %v", err)
	}
	sps, _ := filepath.Glob(filepath.Join(dir, "ckpt", "savepoints", "sp-*"))
	if len(sps) == 0 {
		t.Fatalf("no savepoint:\n%s", ferr.String())
	}
	// The second run is stopped while it restores.
	second := exec.Command(clitest.Bin, "run", "job.yaml")
	second.Dir = dir
	var stderr strings.Builder
	second.Stderr = &stderr
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	// Once it reads the savepoint: its signal handling is in place then (a
	// process still in the Go runtime's start, on a loaded machine, would
	// end on the signal, as any program does).
	restoring(t, second.Process.Pid, filepath.Join(dir, "ckpt", "savepoints"))
	second.Process.Signal(syscall.SIGTERM)
	err := second.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			t.Fatalf("the signal ended the process (%v) instead of stopping the job:\n%s", st.Signal(), stderr.String())
		}
	}
	if err != nil || !strings.Contains(stderr.String(), "stopped before the end of the input") {
		t.Errorf("the second run: %v\n%s", err, stderr.String())
	}
}

// restoring waits until process pid has a file under dir open (it reads
// its savepoint), for at most 10 s; without /proc, 50 ms.
func restoring(t *testing.T, pid int, dir string) {
	t.Helper()
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	if _, err := os.Stat(fds); err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		entries, _ := os.ReadDir(fds)
		for _, e := range entries {
			if to, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && strings.HasPrefix(to, dir) {
				return
			}
		}
	}
	t.Logf("the run opened nothing under %s within 10 s", dir)
}
