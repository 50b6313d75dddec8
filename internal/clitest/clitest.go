// Package clitest runs the weir command as a user does, for the tests that
// need a real process: one killed with SIGKILL, stopped with SIGSTOP, run
// with fewer file descriptors, or several at once in a consumer group. Main
// builds the command once per test binary; the inputs, brokers and
// databases those tests share are here too, so that each test package holds
// only its tests.
package clitest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/weirstream/weir/internal/freeport"
)

// Bin is the weir command built by Main.
var Bin string

// cleanups are what Main undoes once the tests ran (temporary directories,
// a PostgreSQL cluster).
var cleanups struct {
	sync.Mutex
	fns []func()
}

func atExit(f func()) {
	cleanups.Lock()
	defer cleanups.Unlock()
	cleanups.fns = append(cleanups.fns, f)
}

// Main is a test package's TestMain: it builds the weir command into a
// temporary directory (Bin), runs the tests, stops what they started and
// exits with their status.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "weir-bin-")
	if err != nil {
		panic(err)
	}
	Bin = filepath.Join(dir, "weir")
	if out, err := exec.Command("go", "build", "-o", Bin, "github.com/weirstream/weir/cmd/weir").CombinedOutput(); err != nil {
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	cleanups.Lock()
	for i := len(cleanups.fns) - 1; i >= 0; i-- {
		cleanups.fns[i]()
	}
	cleanups.Unlock()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Start starts weir with args in dir; its standard error goes to the
// buffer returned, which may be read while it runs.
func Start(t testing.TB, dir string, args ...string) (*exec.Cmd, *Buffer) {
	t.Helper()
	cmd := exec.Command(Bin, args...)
	cmd.Dir = dir
	stderr := &Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

// Buffer is what a process writes, safe to read while it writes.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// StartRun starts weir run --quiet on a job file, to be killed.
func StartRun(t testing.TB, dir, jobFile string) *exec.Cmd {
	cmd, _ := Start(t, dir, "run", "--quiet", jobFile)
	return cmd
}

// Run runs weir with args in dir to its end and returns its exit code,
// standard output and standard error.
func Run(t testing.TB, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(Bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now
// (freeport.Find).
func FreePort(t testing.TB) int {
	port, err := freeport.Find()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
