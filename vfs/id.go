package vfs

import "os"

// ID identifies a file across renames: its device, inode and, where the
// file system keeps it, its birth time (an inode number is reused as soon
// as a file is deleted; a birth time is not). The zero ID is unknown (a
// system without inodes): two unknown IDs are not the same file.
type ID struct {
	Dev, Ino uint64
	// Born is the file's creation time in nanoseconds, 0 where the file
	// system does not say.
	Born int64
}

// Known reports whether the ID identifies a file.
func (id ID) Known() bool { return id.Dev != 0 || id.Ino != 0 }

// IDOf is the identity of the file st describes (a result of Stat), without
// its birth time where only PathID can read it (Linux).
func IDOf(st os.FileInfo) ID {
	if m, ok := st.(memInfo); ok {
		return ID{Dev: 1, Ino: m.n.ino}
	}
	return sysID(st)
}

// PathID is the identity of the file at path, birth time included where the
// system keeps it.
func PathID(fsys FS, path string) (ID, error) {
	st, err := fsys.Stat(path)
	if err != nil {
		return ID{}, err
	}
	id := IDOf(st)
	if _, ok := st.(memInfo); !ok && id.Born == 0 {
		id.Born = birth(path)
	}
	return id, nil
}
