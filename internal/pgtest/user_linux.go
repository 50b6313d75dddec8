package pgtest

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// clusterUser is how the cluster's processes run: as this process's user,
// or, for root, as the user postgres, to whom dir is given. The server dies
// with this process.
func clusterUser(dir string) (*syscall.SysProcAttr, error) {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT}
	if os.Geteuid() != 0 {
		return attr, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL refuses to run as root, and there is no user postgres to run it as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return nil, err
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 && st.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
			return nil, fmt.Errorf("%s is not reachable by the user postgres, who runs the cluster for root: %s lets no one else through (use a directory made by os.MkdirTemp)", dir, d)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}}
	return attr, nil
}
