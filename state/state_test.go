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
