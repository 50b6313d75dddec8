//go:build !unix

package main

import (
	"errors"
	"os"
)

// notifySavepoint: there is no savepoint signal on this system.
func notifySavepoint(chan<- os.Signal) {}

// askSavepoint is not possible without a savepoint signal.
func askSavepoint(int) error {
	return errors.New("this system has no savepoint signal; stop the job (Ctrl-C) to take one")
}
