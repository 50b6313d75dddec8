// Package window is weir's windowing model: where in event time results are
// computed (assigners: tumbling, sliding, session, global), and what a result
// says about itself (panes: revision, timing, final, retract).
//
// The model is pure data. The runtime that executes it lives in
// internal/exec; this package only describes windows and answers questions
// such as "which windows does an event at t belong to".
//
// Every window is half-open, [Start, End): an event exactly at End belongs to
// the next window. Its largest timestamp is End-1 ms, and that is the instant
// the watermark must reach for the window to be complete.
package window

import (
	"fmt"

	"github.com/weirstream/weir/mtime"
)

// Window is a half-open interval of event time, [Start, End).
type Window struct {
	Start mtime.Time
	End   mtime.Time
}

// GlobalWindow is the one window of the global assigner: all of time. It is
// complete only when the input ends (the watermark reaches mtime.MaxTime).
var GlobalWindow = Window{Start: mtime.MinTime, End: mtime.MaxTime + 1}

// MaxTimestamp is the largest event time inside w: End-1 ms. A window fires
// on time when the watermark reaches it.
func (w Window) MaxTimestamp() mtime.Time { return w.End - 1 }

// Contains reports whether t is in [Start, End).
func (w Window) Contains(t mtime.Time) bool { return t >= w.Start && t < w.End }

// IsGlobal reports whether w is the global window.
func (w Window) IsGlobal() bool { return w == GlobalWindow }

// String prints the window as [start, end).
func (w Window) String() string {
	if w.IsGlobal() {
		return "[global)"
	}
	return fmt.Sprintf("[%s, %s)", w.Start, w.End)
}

// floorMod is a mod b in [0, b) for b > 0, also for negative a.
func floorMod(a, b mtime.Time) mtime.Time {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
