package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Scratch is OS without its syncs: what one writes, the other reads, with
// the same modes, and both are on disk where a Crashable is not.
func TestScratchIsOSWithoutSyncs(t *testing.T) {
	for _, fs := range []FS{OS, Scratch} {
		dir := filepath.Join(t.TempDir(), "a", "b")
		if err := fs.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "f")
		if err := fs.WriteFile(p, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		f, err := fs.OpenFile(filepath.Join(dir, "g"), os.O_CREATE)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("world"), 2); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fs.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		if err := fs.Rename(filepath.Join(dir, "g"), filepath.Join(dir, "h")); err != nil {
			t.Fatal(err)
		}
		// The other file system, and the os package, read what it wrote.
		other := OS
		if fs == OS {
			other = Scratch
		}
		if b, err := other.ReadFile(p); err != nil || string(b) != "hello" {
			t.Fatalf("%T: read back %q, %v", fs, b, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "h")); err != nil || !bytes.Equal(b, []byte("\x00\x00world")) {
			t.Fatalf("%T: read back %q, %v", fs, b, err)
		}
		for _, name := range []string{"f", "h"} {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != FileMode {
				t.Errorf("%T: %s has mode %v, want %v", fs, name, st.Mode().Perm(), FileMode)
			}
		}
		if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != DirMode {
			t.Errorf("%T: the directory has mode %v (%v), want %v", fs, st.Mode().Perm(), err, DirMode)
		}
		if names, err := other.ReadDir(dir); err != nil || len(names) != 2 || names[0] != "f" || names[1] != "h" {
			t.Errorf("%T: the directory lists %v, %v", fs, names, err)
		}
		if !OnDisk(fs) {
			t.Errorf("%T is not on disk", fs)
		}
	}
	if OnDisk(NewCrashable()) {
		t.Error("a Crashable is on disk")
	}
}
