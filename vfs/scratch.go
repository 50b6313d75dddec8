package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ScratchMark is the file that makes a directory a scratch directory of a
// weir process: it holds the process id, and the process holds a lock on
// it for as long as it runs.
const ScratchMark = "WEIR-SCRATCH"

// scratch is the lock file of each scratch directory this process holds.
var scratch struct {
	sync.Mutex
	held map[string]*os.File
}

// MkdirScratch makes a new, empty directory for what the process needs
// only while it runs (a group task's working checkpoints, a Pebble database
// rebuilt from a changelog, a restore's files), and holds it until
// RemoveScratch. It is the directory data inside a new one in parent (the
// system's temporary directory if parent is ""), named prefix and a random
// suffix, which holds the process's mark (ScratchMark) beside it. A
// process that ends without removing its directories (killed, or its machine stopped) leaves them
// behind; MkdirScratch removes those of the same prefix in parent first,
// so that crashes that repeat do not fill the disk. It removes only
// directories that carry ScratchMark, whose lock no living process holds.
func MkdirScratch(parent, prefix string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	SweepScratch(parent, prefix)
	var dir string
	var f *os.File
	var err error
	// The mark is created and then locked: a sweep of another process
	// that comes between may take its lock first and remove the
	// directory, and then this one starts again with another.
	for range 3 {
		if dir, err = os.MkdirTemp(parent, prefix); err != nil {
			return "", err
		}
		f, err = os.OpenFile(filepath.Join(dir, ScratchMark), os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
		if err == nil {
			if err = TryLock(f); err == nil {
				if _, err = fmt.Fprintf(f, "%d\n", os.Getpid()); err == nil {
					break
				}
			}
			f.Close()
		}
		os.RemoveAll(dir)
	}
	if err != nil {
		return "", fmt.Errorf("cannot mark %s as this process's: %w", dir, err)
	}
	scratch.Lock()
	if scratch.held == nil {
		scratch.held = map[string]*os.File{}
	}
	data := filepath.Join(dir, "data")
	scratch.held[data] = f
	scratch.Unlock()
	if err := os.Mkdir(data, DirMode); err != nil {
		RemoveScratch(data)
		return "", err
	}
	return data, nil
}

// RemoveScratch removes a directory MkdirScratch made, and releases it.
func RemoveScratch(dir string) error {
	scratch.Lock()
	f := scratch.held[dir]
	delete(scratch.held, dir)
	scratch.Unlock()
	if f == nil {
		return fmt.Errorf("%s is not a scratch directory of this process", dir)
	}
	// The mark goes last, once released (a file open cannot be removed
	// everywhere), so that a removal cut short leaves a directory still
	// marked, for the next sweep.
	err := removeAllBut(filepath.Dir(dir), ScratchMark)
	f.Close()
	if err != nil {
		return err
	}
	return os.RemoveAll(filepath.Dir(dir))
}

// SweepScratch removes the scratch directories named prefix and more in
// parent whose processes have ended, and returns their paths.
func SweepScratch(parent, prefix string) []string {
	es, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var gone []string
	for _, e := range es {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if removeDead(dir) {
			gone = append(gone, dir)
		}
	}
	return gone
}

// removeDead removes dir if it carries a mark no process holds.
func removeDead(dir string) bool {
	scratch.Lock()
	_, ours := scratch.held[filepath.Join(dir, "data")]
	scratch.Unlock()
	if ours {
		return false
	}
	mark := filepath.Join(dir, ScratchMark)
	st, err := os.Lstat(mark)
	if err != nil || !st.Mode().IsRegular() {
		return false // not weir's, or not a scratch directory
	}
	f, err := os.OpenFile(mark, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := TryLock(f); err != nil {
		return false // its process runs
	}
	// A mark without its process's id is one being made: its process
	// locks it, then writes its id. Taking it between would remove the
	// directory under that process.
	if pid, err := io.ReadAll(f); err != nil || len(pid) == 0 {
		return false
	}
	// Held now by this process, the directory is removed with its mark
	// last, once released.
	if removeAllBut(dir, ScratchMark) != nil {
		return false
	}
	f.Close()
	return os.RemoveAll(dir) == nil
}

// removeAllBut removes what dir holds but the entry named keep.
func removeAllBut(dir, keep string) error {
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range es {
		if e.Name() != keep {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}
