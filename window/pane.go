package window

import "github.com/weirstream/weir/mtime"

// Timing says where a pane stands relative to the watermark.
type Timing uint8

const (
	// Early panes come before the watermark passed the window's end: a
	// provisional result from an early firing.
	Early Timing = iota
	// OnTime is the pane fired when the watermark passed the window's end
	// (W >= End-1 ms). A window has at most one.
	OnTime
	// Late panes come after the watermark passed the window's end: late
	// events within the allowed lateness, and the closing pane.
	Late
)

// String returns EARLY, ON_TIME or LATE.
func (t Timing) String() string {
	switch t {
	case Early:
		return "EARLY"
	case OnTime:
		return "ON_TIME"
	case Late:
		return "LATE"
	}
	return "UNKNOWN"
}

// Pane is one result of one window of one key: the value of the aggregation at
// a firing, and what the firing was.
//
// Revisions count a window's panes from 1; a retraction repeats the revision,
// timing and value of the pane it withdraws, with Retract set, and comes right
// before the pane that replaces it. Final is set on the last pane a window will
// ever emit, so that a reader always learns that a window is closed.
type Pane[K comparable, O any] struct {
	Key      K
	Window   Window
	Revision int
	Timing   Timing
	Final    bool
	Retract  bool
	// Watermark is the input watermark when the pane was emitted.
	Watermark mtime.Time
	// EmittedAt is the processing time of the emission.
	EmittedAt mtime.Time
	Value     O
}

// Status is a pane's standing as a business reads it: provisional until
// the final pane, which is closed; a retraction withdraws its pane.
func Status(final, retract bool) string {
	switch {
	case retract:
		return "retracted"
	case final:
		return "closed"
	}
	return "provisional"
}

// LateEvent is an event that came too late for every window it belongs to:
// the watermark had passed End-1+allowed lateness of each when it arrived.
// Window is the last of them (the one that closed most recently).
//
// An event too late for some of its windows only (a sliding window's
// earlier ones, closed when it came) is added to the others and is a
// LateEvent too, of ReasonLateForSomeWindows: Window is the last window it
// missed, and it missed every window of its time that ends no later
// (MissedWindows lists them).
type LateEvent[K comparable, T any] struct {
	Key       K
	Timestamp mtime.Time
	Window    Window
	Watermark mtime.Time
	Value     T
	// Reason is empty for an event too late for its windows,
	// ReasonLateForSomeWindows for one too late for some of them, and
	// ReasonBeyondDedupHorizon for one the de-duplication state could no
	// longer check: it is routed aside instead of risking a second count;
	// ReasonTriggerFinished for one whose window's trigger had finished.
	Reason string
	// At is the processing time at which it was set aside.
	At mtime.Time
}

// ReasonBeyondDedupHorizon is the Reason of a LateEvent whose event time is
// at or before the watermark minus the de-duplication horizon: an earlier
// delivery of it would have been forgotten already, so it cannot be told
// from a duplicate.
const ReasonBeyondDedupHorizon = "beyond_dedup_horizon"

// ReasonTriggerFinished is the Reason of a LateEvent that came for a window
// whose composite trigger had finished (trigger.Of): the window fires no
// more, as in Beam, and the event is counted too late.
const ReasonTriggerFinished = "trigger_finished"

// ReasonTriggerFinishedForSomeWindows is the Reason of a LateEvent that
// was added to some of its windows (sliding ones) and came for another
// whose composite trigger had finished: Window is that one.
const ReasonTriggerFinishedForSomeWindows = "trigger_finished_for_some_windows"

// PartlyTaken reports whether a late event of reason r was added to some
// of its windows: a late output that holds only what no window counted
// leaves it out.
func PartlyTaken(r string) bool {
	return r == ReasonLateForSomeWindows || r == ReasonTriggerFinishedForSomeWindows
}

// ReasonLateForSomeWindows is the Reason of a LateEvent that was added to
// some of its windows and came too late for the others.
const ReasonLateForSomeWindows = "late_for_some_windows"

// ReasonSuperseded is the Reason of a LateEvent of a versioned job that is
// an older version of an event than the one applied (it arrived after a
// revision): it is never applied.
const ReasonSuperseded = "superseded"

// ReasonRevisionTooLate is the Reason of a LateEvent of a versioned job
// that revises an event whose earlier version cannot be withdrawn, or whose
// own windows cannot take it, the allowed lateness of one of their windows
// having passed: the revision is not applied, and the results keep the
// earlier version.
const ReasonRevisionTooLate = "revision_too_late"

// MissedWindows appends to buf the windows of a the late event l missed, in
// ascending order of start, and returns the extended slice: for an event
// late for some of its windows, those of its time that end no later than
// l.Window; for another, every window of its time.
func MissedWindows[K comparable, T any](a Assigner, l *LateEvent[K, T], buf []Window) []Window {
	n := len(buf)
	buf = a.Assign(l.Timestamp, buf)
	if l.Reason != ReasonLateForSomeWindows {
		return buf
	}
	out := buf[:n]
	for _, w := range buf[n:] {
		if w.End <= l.Window.End {
			out = append(out, w)
		}
	}
	return out
}
