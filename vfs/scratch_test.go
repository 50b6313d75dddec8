package vfs

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A child process of the test: it makes a scratch directory in
// $SCRATCH_PARENT, writes into it, prints its path and runs until it is
// killed or its standard input closes (a test's end, however it ends).
func TestScratchChild(t *testing.T) {
	parent := os.Getenv("SCRATCH_PARENT")
	if parent == "" {
		return // run by TestScratchOfAKilledProcess only
	}
	dir, err := MkdirScratch(parent, "weir-tasks-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "3", "chk-00000001"), DirMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "3", "chk-00000001", "MANIFEST"), []byte("{}"), FileMode); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(dir + "\n")
	io.Copy(io.Discard, os.Stdin)
}

// startChild runs TestScratchChild in a process of its own and returns it
// with the directory it made.
func startChild(t *testing.T, parent string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestScratchChild$")
	cmd.Env = append(os.Environ(), "SCRATCH_PARENT="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child printed no directory: %v", err)
	}
	return cmd, strings.TrimSpace(line)
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// What a killed process left is removed by the next MkdirScratch of the
// same prefix; what a living one holds, what is not marked as weir's and
// what has another prefix stay.
func TestScratchOfAKilledProcess(t *testing.T) {
	parent := t.TempDir()
	killed, dead := startChild(t, parent)
	_, alive := startChild(t, parent)
	if err := killed.Process.Kill(); err != nil { // kill -9
		t.Fatal(err)
	}
	killed.Wait()
	// Not weir's: a directory of the same prefix without the mark, and
	// one whose mark is a directory.
	for _, d := range []string{"weir-tasks-user", "weir-tasks-odd/" + ScratchMark} {
		if err := os.MkdirAll(filepath.Join(parent, d), DirMode); err != nil {
			t.Fatal(err)
		}
	}
	other, err := MkdirScratch(parent, "weir-state-")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, parent); len(got) != 5 {
		t.Fatalf("before: %v", got)
	}
	mine, err := MkdirScratch(parent, "weir-tasks-")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Base(filepath.Dir(alive)), filepath.Base(filepath.Dir(mine)), filepath.Base(filepath.Dir(other)), "weir-tasks-odd", "weir-tasks-user"}
	slices.Sort(want)
	if got := names(t, parent); !slices.Equal(got, want) {
		t.Errorf("after: %v, want %v (%s removed)", got, want, filepath.Base(filepath.Dir(dead)))
	}
	if got := names(t, filepath.Dir(mine)); !slices.Equal(got, []string{ScratchMark, "data"}) {
		t.Errorf("a new scratch directory holds %v", got)
	}
	if got := names(t, mine); len(got) != 0 {
		t.Errorf("a new scratch directory's data holds %v", got)
	}
	// Its own directories are not swept by the process itself.
	if gone := SweepScratch(parent, "weir-"); len(gone) != 0 {
		t.Errorf("swept %v", gone)
	}
	for _, d := range []string{mine, other} {
		if err := RemoveScratch(d); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Dir(d)); !os.IsNotExist(err) {
			t.Errorf("%s stays: %v", d, err)
		}
	}
	if err := RemoveScratch(filepath.Join(parent, "weir-tasks-user", "data")); err == nil {
		t.Error("RemoveScratch removed a directory it did not make")
	}
}

// A directory whose mark is there but not yet written (its process has
// made it and is about to lock it) is not swept: a sweep that took it then
// removed the directory under the process that was making it, whose next
// step failed (seen with four instances of a group starting at once).
func TestScratchBeingMadeIsNotSwept(t *testing.T) {
	parent := t.TempDir()
	making := filepath.Join(parent, "weir-tasks-making")
	if err := os.MkdirAll(making, DirMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(making, ScratchMark), nil, FileMode); err != nil {
		t.Fatal(err)
	}
	if gone := SweepScratch(parent, "weir-tasks-"); len(gone) != 0 {
		t.Errorf("swept %v, a directory being made", gone)
	}
	if _, err := os.Stat(making); err != nil {
		t.Errorf("the directory being made: %v", err)
	}
}
