//go:build unix

package state

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A state directory weir makes is its owner's alone, whatever the umask.
func TestStateDirIsTheOwnersAlone(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "state")
	db, err := Open(dir, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Checkpoint(Span{nil, []byte{0xff}}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, filepath.Join(dir, MarkerName): 0o600, filepath.Join(dir, "snapshots"): os.ModeDir | 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode()&(os.ModeDir|os.ModePerm) != want {
			t.Errorf("%s: %v %v, want %v", p, st.Mode(), err, want)
		}
	}
}

// Claim makes a state directory of databases in directories of their own:
// a new or empty one, or one already weir's, gets the marker and keeps
// what is in it; a directory of someone else's files is refused and left
// as it is.
func TestClaim(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "state")
	if err := Claim(dir); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "weir-state-1")
	if err := os.Mkdir(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Claim(dir); err != nil {
		t.Fatalf("claimed again: %v", err)
	}
	if err := CheckDir(dir); err != nil {
		t.Fatalf("claimed, then checked: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("what the directory held: %v", err)
	}
	theirs := t.TempDir()
	if err := os.WriteFile(filepath.Join(theirs, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Claim(theirs); err == nil {
		t.Fatal("claimed a directory of someone else's files")
	}
	if _, err := os.Stat(filepath.Join(theirs, MarkerName)); !os.IsNotExist(err) {
		t.Fatalf("marked a directory of someone else's files: %v", err)
	}
}
