package freeport

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// A port taken in between is given up for another; any other failure
// ends Start at once, and a port that is always taken after attempts.
func TestStart(t *testing.T) {
	var ports []int
	err := Start(func(port int) error {
		ports = append(ports, port)
		if len(ports) < 3 {
			return fmt.Errorf("server on port %d: %w", port, syscall.EADDRINUSE)
		}
		return nil
	})
	if err != nil || len(ports) != 3 {
		t.Fatalf("%v after %d ports", err, len(ports))
	}
	other := errors.New("no such binary")
	calls := 0
	if err := Start(func(int) error { calls++; return other }); err != other || calls != 1 {
		t.Errorf("another failure: %v after %d calls", err, calls)
	}
	calls = 0
	if err := Start(func(int) error { calls++; return syscall.EADDRINUSE }); !errors.Is(err, syscall.EADDRINUSE) || calls != attempts {
		t.Errorf("always taken: %v after %d calls", err, calls)
	}
}
