//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifySavepoint sends SIGUSR1, the savepoint signal, to c.
func notifySavepoint(c chan<- os.Signal) { signal.Notify(c, syscall.SIGUSR1) }

// askSavepoint asks process pid for a savepoint.
func askSavepoint(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(syscall.SIGUSR1)
}
