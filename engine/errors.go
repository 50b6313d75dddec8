package engine

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/connector"
)

// Backoff is how long the engine waits before trying a retryable operation
// again: doubling from 100 ms up to 10 s.
func Backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 7)
	return min(d, 10*time.Second)
}

// retry runs f until it succeeds, fails with an error that is not retryable
// (connector.Retryable), or the job stops; each retry is logged once, and
// recovery too.
func retry(e *Engine, what string, f func() error) error {
	return retryUntil(e, e.sinkCtx.Done(), what, f(), f)
}

// retryAfter is retry after a first attempt that returned err: a caller on a
// hot path makes its first attempt itself, so that it builds the closure f
// only when that attempt failed.
func retryAfter(e *Engine, what string, err error, f func() error) error {
	return retryUntil(e, e.sinkCtx.Done(), what, err, f)
}

// retryUntil is retryAfter until done is closed: the sinks' context for
// what writes, the source loop's for what reads.
func retryUntil(e *Engine, done <-chan struct{}, what string, err error, f func() error) error {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			err = f()
		}
		if err == nil {
			if attempt > 0 {
				e.log(fmt.Sprintf("%s: succeeded after %d retries", what, attempt))
			}
			return nil
		}
		if !connector.Retryable(err) {
			return err
		}
		wait := Backoff(attempt)
		e.log(fmt.Sprintf("%s: %v; retrying in %s", what, err, wait))
		select {
		case <-time.After(wait):
		case <-done:
			return err
		}
	}
}

// Retry runs f as the engine retries its own operations: again while it fails
// with a retryable error (connector.Retryable), with Backoff between
// attempts, logging each retry, until the job stops. Connectors use it for
// what they cannot afford to lose (a commit).
func (e *Engine) Retry(what string, f func() error) error { return retry(e, what, f) }
