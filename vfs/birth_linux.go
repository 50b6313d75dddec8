package vfs

import "golang.org/x/sys/unix"

// birth is the file's creation time from statx, 0 where the file system
// does not keep it.
func birth(path string) int64 {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return st.Btime.Sec*1e9 + int64(st.Btime.Nsec)
}
