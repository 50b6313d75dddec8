package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/mtime"
)

// Assigner decides which windows an event belongs to. The set is closed:
// Tumbling, Sliding, Session and Global are the only assigners.
type Assigner interface {
	// Assign appends to buf the windows that contain t, in ascending order of
	// start, and returns the extended slice. For a session assigner it is the
	// event's own proto-session [t, t+gap), before merging.
	Assign(t mtime.Time, buf []Window) []Window
	// Merging reports whether windows merge (sessions).
	Merging() bool
	// Validate reports a configuration error, naming the bad parameter.
	Validate() error
	// String describes the assigner, e.g. "tumbling 1m0s".
	String() string

	sealed()
}

// Tumbling windows have a fixed size and do not overlap: every event belongs to
// exactly one. Offset shifts their starts: with Size 1h and Offset 15m windows
// start at hh:15.
type Tumbling struct {
	Size   mtime.Time
	Offset mtime.Time
}

// TumblingWindows returns a tumbling assigner of the given size.
func TumblingWindows(size time.Duration) Tumbling { return Tumbling{Size: mtime.Millis(size)} }

// WithOffset returns the assigner with its windows shifted by offset.
func (a Tumbling) WithOffset(offset time.Duration) Tumbling {
	a.Offset = mtime.Millis(offset)
	return a
}

// Start returns the start of the window that contains t.
func (a Tumbling) Start(t mtime.Time) mtime.Time { return t - floorMod(t-a.Offset, a.Size) }

// Assign implements Assigner.
func (a Tumbling) Assign(t mtime.Time, buf []Window) []Window {
	s := a.Start(t)
	return append(buf, Window{s, s + a.Size})
}

// Merging implements Assigner.
func (Tumbling) Merging() bool { return false }

// Validate implements Assigner.
func (a Tumbling) Validate() error {
	if a.Size <= 0 {
		return errors.New("size must be a positive duration")
	}
	if a.Offset <= -a.Size || a.Offset >= a.Size {
		return fmt.Errorf("offset %s must be shorter than the size %s", mtime.FormatDuration(a.Offset), mtime.FormatDuration(a.Size))
	}
	return nil
}

func (a Tumbling) String() string { return "tumbling " + mtime.FormatDuration(a.Size) }
func (Tumbling) sealed()          {}

// Sliding windows have a fixed size and start every Slide, so they overlap
// when Slide < Size and an event belongs to every window that contains it
// (Size/Slide of them when Slide divides Size).
type Sliding struct {
	Size   mtime.Time
	Slide  mtime.Time
	Offset mtime.Time
}

// SlidingWindows returns a sliding assigner.
func SlidingWindows(size, slide time.Duration) Sliding {
	return Sliding{Size: mtime.Millis(size), Slide: mtime.Millis(slide)}
}

// WithOffset returns the assigner with its windows shifted by offset.
func (a Sliding) WithOffset(offset time.Duration) Sliding {
	a.Offset = mtime.Millis(offset)
	return a
}

// Assign implements Assigner.
func (a Sliding) Assign(t mtime.Time, buf []Window) []Window {
	last := t - floorMod(t-a.Offset, a.Slide)
	// Starts s with t-Size < s <= last, stepping back by Slide.
	n := (last-(t-a.Size)-1)/a.Slide + 1
	first := last - (n-1)*a.Slide
	for s := first; s <= last; s += a.Slide {
		buf = append(buf, Window{s, s + a.Size})
	}
	return buf
}

// Merging implements Assigner.
func (Sliding) Merging() bool { return false }

// MaxWindowsPerEvent is the most windows a sliding window may put one event
// in (size / slide): beyond it, a job would spend its life creating windows
// (24 h every 1 ms is 86.4 million per event).
const MaxWindowsPerEvent = 10_000

// Validate implements Assigner.
func (a Sliding) Validate() error {
	switch {
	case a.Size <= 0:
		return errors.New("size must be a positive duration")
	case a.Slide <= 0:
		return errors.New("slide must be a positive duration")
	case a.Slide > a.Size:
		return fmt.Errorf("slide %s is larger than the size %s: events between windows would be lost",
			mtime.FormatDuration(a.Slide), mtime.FormatDuration(a.Size))
	case a.Offset <= -a.Slide || a.Offset >= a.Slide:
		return fmt.Errorf("offset %s must be shorter than the slide %s", mtime.FormatDuration(a.Offset), mtime.FormatDuration(a.Slide))
	case (a.Size+a.Slide-1)/a.Slide > MaxWindowsPerEvent:
		return fmt.Errorf("size %s and slide %s put every event in %d windows; at most %d are allowed (a longer slide, or a tumbling window)",
			mtime.FormatDuration(a.Size), mtime.FormatDuration(a.Slide), (a.Size+a.Slide-1)/a.Slide, MaxWindowsPerEvent)
	}
	return nil
}

func (a Sliding) String() string {
	return "sliding " + mtime.FormatDuration(a.Size) + " every " + mtime.FormatDuration(a.Slide)
}
func (Sliding) sealed() {}

// Session windows group a key's events into bursts: a session stays open while
// events keep coming less than Gap apart and ends Gap after its last event.
// Each event starts as its own proto-session [t, t+Gap); sessions that overlap
// merge, including when a late event bridges two sessions that already fired.
// Sessions that merely touch (one ends where the other starts) stay apart, as
// in Beam.
type Session struct {
	Gap mtime.Time
}

// SessionWindows returns a session assigner with the given gap.
func SessionWindows(gap time.Duration) Session { return Session{Gap: mtime.Millis(gap)} }

// Assign implements Assigner.
func (a Session) Assign(t mtime.Time, buf []Window) []Window {
	return append(buf, Window{t, t + a.Gap})
}

// Merging implements Assigner.
func (Session) Merging() bool { return true }

// Validate implements Assigner.
func (a Session) Validate() error {
	if a.Gap <= 0 {
		return errors.New("gap must be a positive duration")
	}
	return nil
}

func (a Session) String() string { return "session gap " + mtime.FormatDuration(a.Gap) }
func (Session) sealed()          {}

// Global puts every event of a key into one window that closes only when the
// input ends. Use it with early firings to get running results.
type Global struct{}

// GlobalWindows returns the global assigner.
func GlobalWindows() Global { return Global{} }

// Assign implements Assigner.
func (Global) Assign(_ mtime.Time, buf []Window) []Window { return append(buf, GlobalWindow) }

// Merging implements Assigner.
func (Global) Merging() bool { return false }

// Validate implements Assigner.
func (Global) Validate() error { return nil }

func (Global) String() string { return "global" }
func (Global) sealed()        {}

// Overlap reports whether two windows share an instant (touching windows do
// not overlap).
func Overlap(a, b Window) bool { return a.Start < b.End && b.Start < a.End }

// Length is the length of a's windows: a tumbling or sliding window's
// size, a session's gap (its least length); 0 for the global window.
func Length(a Assigner) mtime.Time {
	switch a := a.(type) {
	case Tumbling:
		return a.Size
	case Sliding:
		return a.Size
	case Session:
		return a.Gap
	}
	return 0
}
