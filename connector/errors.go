package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// Error is a failure of a source or sink, with what it was doing. It wraps
// the cause: errors.Is and errors.As see through it.
type Error struct {
	// Connector names the source or sink ("output", "source", "kafka
	// orders").
	Connector string
	// Op is what failed: "open", "read", "write", "commit", ...
	Op string
	// Partition names the partition concerned, if any.
	Partition string
	Err       error
}

func (e *Error) Error() string {
	s := e.Connector + ": " + e.Op
	if e.Partition != "" {
		s += " " + e.Partition
	}
	return s + ": " + errText(e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// errText drops the path an *os.PathError repeats when the error names it
// already.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) && pe == err {
		return pe.Op + " " + pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// retryableError marks an error as worth retrying or not, whatever its cause.
type retryableError struct {
	err       error
	retryable bool
}

func (e *retryableError) Error() string   { return e.err.Error() }
func (e *retryableError) Unwrap() error   { return e.err }
func (e *retryableError) Retryable() bool { return e.retryable }

// Transient marks err as worth retrying (a broker that is restarting).
func Transient(err error) error { return &retryableError{err, true} }

// Permanent marks err as not worth retrying (a table that does not accept the
// rows), whatever its cause looks like.
func Permanent(err error) error { return &retryableError{err, false} }

// StorageFull reports whether err says a disk is full or cannot be written:
// no space, a quota, a read-only file system. Such an error does not heal
// by a retry; the job stops at once and names the path.
func StorageFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// Retryable reports whether an operation that failed with err may succeed if
// tried again: the one place weir decides it. In order:
//
//   - nil, and a cancelled or expired context: no (the job is stopping).
//   - an error in the chain with a Retryable() bool method (Transient,
//     Permanent, a connector's own classification): its answer.
//   - a network error: yes for timeouts, refused and reset connections and
//     closed pipes; a lost connection comes back.
//   - io.ErrUnexpectedEOF: yes (a connection cut mid-reply).
//   - no space, read-only file system, permission denied: no; these do not
//     heal by themselves, and the job should say so and stop.
//   - anything else: no.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	switch {
	case StorageFull(err), errors.Is(err, syscall.EACCES),
		errors.Is(err, syscall.EPERM), errors.Is(err, os.ErrPermission):
		return false
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// RefusedError is what a sink's Write returns when it has written every
// item it was given but some it refuses for a reason of their own: a value
// the database cannot store (a NUL in a text, a key longer than its index
// takes), a record larger than the topic takes. Retrying cannot mend them,
// and they must not stop the job: the engine counts them and hands them to
// the sink's dead-letter output, if it has one.
type RefusedError struct {
	// Items are the refused items, by their index in the slice given to
	// Write, in order.
	Items []RefusedItem
}

// RefusedItem is one item a sink refused, and why.
type RefusedItem struct {
	Index  int
	Reason string
}

// Error gives the reason of the refused item, or counts them and gives the
// first one's.
func (e *RefusedError) Error() string {
	if len(e.Items) == 1 {
		return "1 item refused: " + e.Items[0].Reason
	}
	return fmt.Sprintf("%d items refused; the first: %s", len(e.Items), e.Items[0].Reason)
}

// Retryable implements the rule of Retryable: a refusal is never retried.
func (e *RefusedError) Retryable() bool { return false }
