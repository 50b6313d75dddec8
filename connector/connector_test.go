package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

func TestRetryable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("write: %w", context.DeadlineExceeded), false},
		{&Error{Connector: "output", Op: "write", Err: syscall.ENOSPC}, false},
		{&os.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, false},
		{syscall.ECONNREFUSED, true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNRESET}, true},
		{io.ErrUnexpectedEOF, true},
		{Transient(errors.New("broker restarting")), true},
		{Permanent(syscall.ECONNREFUSED), false},
		{errors.New("some other failure"), false},
	}
	for _, c := range cases {
		if got := Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestGuarantee(t *testing.T) {
	for _, c := range []struct {
		has, want Guarantee
		ok        bool
	}{
		{AtLeastOnce, ExactlyOnce, false}, {Idempotent, ExactlyOnce, true}, {ExactlyOnce, ExactlyOnce, true},
		{AtLeastOnce, AtLeastOnce, true}, {AtLeastOnce, Idempotent, false},
	} {
		if got := c.has.Satisfies(c.want); got != c.ok {
			t.Errorf("%s satisfies %s: %v", c.has, c.want, got)
		}
	}
	e := &Error{Connector: "kafka alerts", Op: "commit", Partition: "alerts/2", Err: syscall.ECONNRESET}
	if e.Error() != "kafka alerts: commit alerts/2: connection reset by peer" || !errors.Is(e, syscall.ECONNRESET) {
		t.Errorf("%v", e)
	}
}
