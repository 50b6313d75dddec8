package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirstream/weir/vfs"
)

// LockName is the lock file of a store: held by the one job that writes
// checkpoints into the directory, and holding its process id.
const LockName = "LOCK"

// ErrLocked is returned by Open when another process holds the store.
var ErrLocked = errors.New("checkpoint directory in use")

// LockedError says which process holds a store.
type LockedError struct {
	Dir string
	PID int // 0 if unknown
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("%s is in use by %s (another weir run of the same job?): two jobs writing one checkpoint directory would corrupt each other's output", e.Dir, who)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// lockDir takes the store's lock, without waiting, and writes the process id
// into it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := vfs.TryLock(f); err != nil {
		f.Close()
		pid, _ := readPID(filepath.Join(dir, LockName))
		return nil, &LockedError{Dir: dir, PID: pid}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Holder reports the process that holds the store in dir: its pid and
// whether it is running. A lock file left by a process that was killed is not
// held: running is false, whatever pid it names.
func Holder(dir string) (pid int, running bool, err error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	defer f.Close()
	pid, _ = readPID(path)
	if err := vfs.TryLock(f); err != nil {
		return pid, true, nil
	}
	vfs.Unlock(f)
	return pid, false, nil
}

// Close releases the store's lock.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	vfs.Unlock(s.lock)
	err := s.lock.Close()
	s.lock = nil
	return err
}
