package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/weirstream/weir/engine"
)

// handleSignals turns signals into calls of the job's control handle: the
// first SIGINT or SIGTERM stops the job (with a savepoint, within a second),
// a second one exits at once (the job resumes from its last checkpoint, as
// after a crash); the savepoint signal (SIGUSR1, where there is one) takes a
// savepoint and goes on. The returned function stops the handling.
func handleSignals(ctx context.Context, stop context.CancelFunc, ctl *engine.Control, log io.Writer) func() {
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
	return func() {
		close(done)
		signal.Stop(term)
		signal.Stop(sp)
	}
}
