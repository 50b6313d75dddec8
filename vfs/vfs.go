// Package vfs is the file system weir writes its checkpoints and its output
// files through: the real one (OS), and, for tests, a file system in memory
// that can crash at any operation and keeps only what was made durable
// (NewCrashable), as Pebble's vfs does.
//
// Durability follows POSIX as strict file systems apply it: a file's
// contents are durable once the file is synced; a file's existence (and a
// rename, and a removal) once its directory is synced.
package vfs

import (
	"io"
	"os"
)

// FS is a file system.
type FS interface {
	MkdirAll(dir string) error
	// WriteFile creates (or replaces) a file with data and syncs it (not
	// its directory).
	WriteFile(path string, data []byte) error
	ReadFile(path string) ([]byte, error)
	// ReadDir lists the names in a directory, sorted.
	ReadDir(dir string) ([]string, error)
	Rename(from, to string) error
	RemoveAll(path string) error
	// SyncDir makes the entries of a directory durable.
	SyncDir(dir string) error
	// OpenFile opens a file for reading and writing (creating it with
	// os.O_CREATE, emptying it with os.O_TRUNC).
	OpenFile(path string, flag int) (File, error)
	Stat(path string) (os.FileInfo, error)
}

// File is an open file.
type File interface {
	io.WriterAt
	io.ReaderAt
	Truncate(size int64) error
	Sync() error
	Stat() (os.FileInfo, error)
	Close() error
}

// OS is the real file system. What it creates is its owner's alone: files
// 0600, directories 0700 (checkpoints and outputs hold event data, often
// personal data).
var OS FS = osFS{}

// The modes OS creates files and directories with.
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

type osFS struct{}

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, DirMode) }

func (osFS) WriteFile(path string, data []byte) error { return writeFile(path, data, true) }

func writeFile(path string, data []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, FileMode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (osFS) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

func (osFS) ReadDir(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) Rename(from, to string) error { return os.Rename(from, to) }
func (osFS) RemoveAll(path string) error  { return os.RemoveAll(path) }

func (osFS) SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (osFS) OpenFile(path string, flag int) (File, error) {
	return os.OpenFile(path, flag|os.O_RDWR, FileMode)
}

func (osFS) Stat(path string) (os.FileInfo, error) { return os.Stat(path) }

// Scratch is the real file system for a directory whose contents need not
// survive a crash, because whoever uses it rebuilds them after one (a
// consumer group's task restores its checkpoint directory from the
// changelog): OS without the syncs, which make nothing durable here.
var Scratch FS = scratchFS{}

type scratchFS struct{ osFS }

func (scratchFS) WriteFile(path string, data []byte) error { return writeFile(path, data, false) }
func (scratchFS) SyncDir(string) error                     { return nil }

func (scratchFS) OpenFile(path string, flag int) (File, error) {
	f, err := os.OpenFile(path, flag|os.O_RDWR, FileMode)
	if err != nil {
		return nil, err
	}
	return scratchFile{f}, nil
}

type scratchFile struct{ *os.File }

func (scratchFile) Sync() error { return nil }

// OnDisk says whether fs keeps its files at their paths in the real file
// system (OS and Scratch), where other programs, hard links and locks see
// them.
func OnDisk(fs FS) bool { return fs == OS || fs == Scratch }
