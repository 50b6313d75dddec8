// Package freeport gives the servers tests start (brokers, databases) a
// TCP port on 127.0.0.1.
package freeport

import (
	"errors"
	"net"
	"syscall"
)

// Find is a TCP port on 127.0.0.1 that nothing listens on now: now only,
// for another process may take it before a server binds it (see Start).
func Find() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// attempts is how many ports Start tries.
const attempts = 10

// Start starts a server on a port Find gives: start is called with it,
// and again with another when it fails because a process (a test beside
// this one) took the port in between, an error that is
// syscall.EADDRINUSE. It returns start's last error.
func Start(start func(port int) error) error {
	var err error
	for range attempts {
		var port int
		if port, err = Find(); err != nil {
			return err
		}
		if err = start(port); !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
	}
	return err
}
