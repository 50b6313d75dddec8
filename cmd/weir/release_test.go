package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// maxReleaseBytes is the most the release binary may weigh: 50 MB (MiB,
// as the sizes in docs/performance.md are given).
const maxReleaseBytes = 50 << 20

// The release build (.ci/release: -tags release -trimpath -ldflags "-s -w",
// CGO_ENABLED=0) for linux/amd64 is at most 50 MB, and the two commands it
// leaves out still answer, saying where they went.
func TestReleaseBuild(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "weir")
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "release", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release build: %v\n%s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release binary, linux/amd64: %d bytes (%.1f MB of at most %d)", st.Size(), float64(st.Size())/(1<<20), maxReleaseBytes>>20)
	if st.Size() > maxReleaseBytes {
		t.Errorf("the release binary is %d bytes (%.1f MB), more than %d MB: see docs/performance.md, \"The binary's size\"", st.Size(), float64(st.Size())/(1<<20), maxReleaseBytes>>20)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return // a binary for another system
	}
	for _, c := range []struct{ cmd, says string }{
		{"bench", "go run ./cmd/weir bench"},
		{"kafka", "go run ./cmd/weir kafka"},
	} {
		out, err := exec.Command(bin, c.cmd).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.says) || !strings.Contains(string(out), "not in the release build") {
			t.Errorf("weir %s in the release build: %v\n%s", c.cmd, err, out)
		}
	}
	if out, err := exec.Command(bin, "help").Output(); err != nil || !strings.Contains(string(out), "weir lateness") || !strings.Contains(string(out), "weir kafka") {
		t.Errorf("weir help in the release build: %v\n%s", err, out)
	}
}
