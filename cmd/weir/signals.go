package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/weirstream/weir/engine"
)

// signals turns signals into calls of the job's control handle: the first
// SIGINT or SIGTERM stops the job (with a savepoint, within a second), a
// second one exits at once (the job resumes from its last checkpoint, as
// after a crash); the savepoint signal (SIGUSR1, where there is one) takes a
// savepoint and goes on. It is installed before anything else, so that a
// signal while the job is still starting (restoring a large checkpoint) is a
// stop too, never the end of the process.
type signals struct {
	ctl  atomic.Pointer[engine.Control]
	stop func()
}

// handleSignals handles signals from now on: the first stop signal calls
// stop. Call attach once the job's engine exists, and the returned
// signals' stop when it is over.
func handleSignals(ctx context.Context, stop context.CancelFunc, log io.Writer) *signals {
	s := &signals{}
	term := make(chan os.Signal, 2)
	signal.Notify(term, os.Interrupt, syscall.SIGTERM)
	sp := make(chan os.Signal, 1)
	notifySavepoint(sp)
	done := make(chan struct{})
	go func() {
		stopping := false
		for {
			select {
			case <-done:
				return
			case <-term:
				if stopping {
					fmt.Fprintln(log, "weir: second signal: exiting at once; the job resumes from its last checkpoint")
					os.Exit(1)
				}
				stopping = true
				stop()
			case <-sp:
				ctl := s.ctl.Load()
				if ctl == nil {
					fmt.Fprintln(log, "weir: no savepoint: the job is still starting")
					continue
				}
				go func() {
					path, err := ctl.Savepoint(ctx)
					if err != nil {
						fmt.Fprintln(log, "weir: the savepoint failed:", err)
						return
					}
					fmt.Fprintln(log, "weir: savepoint", path)
				}()
			}
		}
	}()
	s.stop = func() {
		close(done)
		signal.Stop(term)
		signal.Stop(sp)
	}
	return s
}

// attach gives the handler the job's control handle, for savepoints.
func (s *signals) attach(ctl *engine.Control) { s.ctl.Store(ctl) }
