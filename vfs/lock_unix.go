//go:build unix

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive lock on f without waiting: it fails if
// another open file (of this process or another) holds one. The lock goes
// with the file's closing, or its process's end, however it ends.
func TryLock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }

// Unlock releases the lock TryLock took.
func Unlock(f *os.File) { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }
