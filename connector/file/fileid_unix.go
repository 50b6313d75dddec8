//go:build unix

package file

import (
	"os"
	"syscall"
)

func idOf(st os.FileInfo) fileID {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(s.Dev), ino: uint64(s.Ino)}
	}
	return fileID{}
}
