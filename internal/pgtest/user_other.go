//go:build !linux

package pgtest

import (
	"errors"
	"os"
	"syscall"
)

// clusterUser is how the cluster's processes run: as this process's user,
// which must not be root.
func clusterUser(dir string) (*syscall.SysProcAttr, error) {
	if os.Geteuid() == 0 {
		return nil, errors.New("PostgreSQL refuses to run as root: run the tests as another user")
	}
	return nil, nil
}
