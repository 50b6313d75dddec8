// Package trigger says when in processing time a window's results are
// emitted: Beam's early / on-time / late model.
//
// Every trigger fires on time, when the watermark passes the end of the window
// (W >= End-1 ms), even if nothing arrived since an early pane. Around that it
// may fire early (before the watermark, every N elements or every D of
// processing time) and late (after the watermark, for late events within the
// allowed lateness: for each one, throttled, or never). When the allowed
// lateness runs out the window closes with a final pane, always or only if
// an event came since its last pane (Closing). A trigger that is
// FinalOnly writes only the last pane a window will ever emit, like Kafka
// Streams' suppress or RisingWave's EMIT ON WINDOW CLOSE.
//
// The usual triggers are built with the functions below, and run on the
// window operator's fast path:
//
//	trigger.AfterWatermark()                                  // on time; late: every element
//	trigger.AfterWatermark().EarlyEvery(time.Minute, true)    // plus aligned early firings
//	trigger.AfterWatermark().EarlyCount(100).LateThrottled(time.Minute)
//	trigger.AfterWatermark().LateCount(10)                    // a late pane per 10 late events
//	trigger.OnClose()                                         // only the final pane
//	trigger.AfterWatermark().ClosingIfChanged()               // no closing pane that repeats the last
//
// Any other trigger composes Beam's: AfterCount, AfterProcessingTime,
// PastEndOfWindow with early and late firings, AfterEach, AfterFirst,
// AfterAll, Repeatedly, OrFinally and Never (see Expr and Of), and runs as a
// state machine per window (Program).
//
//	trigger.Of(trigger.Repeatedly(trigger.AfterFirst(trigger.AfterCount(100), trigger.AfterProcessingTime(time.Minute))))
package trigger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir/mtime"
)

// LateKind says how late events within the allowed lateness fire.
type LateKind uint8

const (
	// LateEach fires a late pane for every late event (Beam's AfterCount(1)).
	LateEach LateKind = iota
	// LateNone fires no late panes: late events only change the closing pane.
	LateNone
	// LateThrottled fires at most one late pane per window per LatePeriod; an
	// update held back is emitted when its period runs out or when the window
	// closes, never kept silently.
	LateThrottled
	// LateCount fires a late pane once LateElements late events have come
	// since the window's last pane (Beam's
	// Late(Repeatedly(AfterPane.elementCountAtLeast(N)))); fewer are in the
	// closing pane, never kept silently.
	LateCount
)

// Trigger is the firing policy of a window. The zero value is
// AfterWatermark(): on time, and a late pane for every late event.
type Trigger struct {
	// EarlyDelay, when positive, fires an early pane D of processing time
	// after the first element of a pane (unaligned), or at the next multiple
	// of D of the processing clock (EarlyAligned).
	EarlyDelay   mtime.Time
	EarlyAligned bool
	// EarlyElements, when positive, fires an early pane when a pane has that
	// many elements. With EarlyDelay too, whichever comes first fires, and
	// both start again.
	EarlyElements int
	// Late is how late events within the allowed lateness fire; LatePeriod
	// is the period of LateThrottled.
	Late       LateKind
	LatePeriod mtime.Time
	// LateElements is the count of LateCount.
	LateElements int
	// FinalOnly writes only the final pane of each window.
	FinalOnly bool
	// Closing says whether the pane a window closes with (when its allowed
	// lateness runs out) is written when nothing came since its last pane.
	Closing Closing
	// Composite, when set, is the trigger (Of), and the fields above but
	// Closing are not used.
	Composite *Expr
}

// Closing is what a window does when its allowed lateness runs out: Beam's
// ClosingBehavior.
type Closing uint8

const (
	// ClosingAlways writes a closing pane, final, even when nothing came
	// since the window's last pane (Beam's FIRE_ALWAYS): a reader learns
	// from the pane itself that the window is final.
	ClosingAlways Closing = iota
	// ClosingIfChanged writes the closing pane only if an event came since
	// the window's last pane (Beam's FIRE_IF_NON_EMPTY): no pane repeats
	// the one before it, and a window whose last pane was not marked final
	// is final once the watermark passes its end plus the allowed
	// lateness.
	ClosingIfChanged
)

// AfterWatermark fires on time, and for every late event.
func AfterWatermark() Trigger { return Trigger{} }

// OnClose writes only the final pane of each window: at the watermark with no
// allowed lateness, or when the allowed lateness runs out.
func OnClose() Trigger { return Trigger{FinalOnly: true} }

// EarlyEvery adds early firings every d of processing time; aligned fires at
// multiples of d of the processing clock, unaligned d after the first element
// of each pane.
func (t Trigger) EarlyEvery(d time.Duration, aligned bool) Trigger {
	t.EarlyDelay, t.EarlyAligned = mtime.Millis(d), aligned
	return t
}

// EarlyCount adds early firings every n elements.
func (t Trigger) EarlyCount(n int) Trigger {
	t.EarlyElements = n
	return t
}

// LateEach fires a late pane for every late event (the default).
func (t Trigger) LateEach() Trigger {
	t.Late, t.LatePeriod, t.LateElements = LateEach, 0, 0
	return t
}

// LateNone fires no late panes; late events show in the closing pane.
func (t Trigger) LateNone() Trigger {
	t.Late, t.LatePeriod, t.LateElements = LateNone, 0, 0
	return t
}

// LateThrottled fires at most one late pane per window per d.
func (t Trigger) LateThrottled(d time.Duration) Trigger {
	t.Late, t.LatePeriod, t.LateElements = LateThrottled, mtime.Millis(d), 0
	return t
}

// LateCount fires a late pane every n late events of a window; the late
// events since the last one are in the closing pane.
func (t Trigger) LateCount(n int) Trigger {
	t.Late, t.LatePeriod, t.LateElements = LateCount, 0, n
	return t
}

// ClosingIfChanged writes the closing pane only if an event came since the
// window's last pane.
func (t Trigger) ClosingIfChanged() Trigger {
	t.Closing = ClosingIfChanged
	return t
}

// HasEarly reports whether the trigger fires before the watermark.
func (t Trigger) HasEarly() bool {
	if t.Composite != nil {
		return t.Composite.uses(OpCount) || t.Composite.uses(OpProcessingTime)
	}
	return !t.FinalOnly && (t.EarlyDelay > 0 || t.EarlyElements > 0)
}

// UsesProcessingTime reports whether the trigger sets processing-time timers.
func (t Trigger) UsesProcessingTime() bool {
	if t.Composite != nil {
		return t.Composite.uses(OpProcessingTime)
	}
	return !t.FinalOnly && (t.EarlyDelay > 0 || t.Late == LateThrottled)
}

// Validate reports a configuration error.
func (t Trigger) Validate() error {
	if t.Composite != nil {
		switch {
		case t.Closing > ClosingIfChanged:
			return errors.New("unknown closing behaviour")
		case t.EarlyDelay != 0 || t.EarlyAligned || t.EarlyElements != 0 || t.Late != LateEach || t.LatePeriod != 0 || t.LateElements != 0 || t.FinalOnly:
			return errors.New("a composite trigger (Of) takes no early, late or final-only settings: compose them in it (PastEndOfWindow().WithEarlyFirings, WithLateFirings)")
		}
		return t.Composite.Validate()
	}
	switch {
	case t.EarlyDelay < 0:
		return errors.New("early period must not be negative")
	case t.EarlyElements < 0:
		return errors.New("early count must not be negative")
	case t.Late == LateThrottled && t.LatePeriod <= 0:
		return errors.New("late throttle period must be a positive duration")
	case t.Late == LateCount && t.LateElements < 1:
		return errors.New("late count must be at least 1")
	case t.Late > LateCount:
		return errors.New("unknown late firing")
	case t.Closing > ClosingIfChanged:
		return errors.New("unknown closing behaviour")
	}
	return nil
}

// String describes the trigger, as Beam would write it.
func (t Trigger) String() string {
	closing := ""
	if t.Closing == ClosingIfChanged {
		closing = ".Closing(FireIfNonEmpty)"
	}
	if t.Composite != nil {
		return "Of(" + t.Composite.String() + ")" + closing
	}
	if t.FinalOnly {
		return "OnClose()" + closing
	}
	var b strings.Builder
	b.WriteString("AfterWatermark()")
	if t.EarlyDelay > 0 {
		kind := "UnalignedDelay"
		if t.EarlyAligned {
			kind = "AlignedDelay"
		}
		fmt.Fprintf(&b, ".Early(%s(%s))", kind, mtime.FormatDuration(t.EarlyDelay))
	}
	if t.EarlyElements > 0 {
		fmt.Fprintf(&b, ".Early(AfterCount(%d))", t.EarlyElements)
	}
	switch t.Late {
	case LateEach:
		b.WriteString(".Late(AfterCount(1))")
	case LateThrottled:
		fmt.Fprintf(&b, ".Late(Throttled(%s))", mtime.FormatDuration(t.LatePeriod))
	case LateCount:
		fmt.Fprintf(&b, ".Late(Repeatedly(AfterCount(%d)))", t.LateElements)
	case LateNone:
		b.WriteString(".Late(Never())")
	}
	b.WriteString(closing)
	return b.String()
}

// Describe says in words when the trigger fires panes, as a job file's
// trigger field sets it: "at the watermark; early every 1m0s of processing
// time, aligned to the clock; late: a pane per late event".
func (t Trigger) Describe() string {
	if t.Composite != nil {
		d := t.Composite.Describe()
		if t.Closing == ClosingIfChanged {
			d += "; closing: only if an event came since the last pane"
		}
		return d
	}
	if t.FinalOnly {
		return "once, when the window closes (final_only)"
	}
	var b strings.Builder
	b.WriteString("at the watermark")
	if t.EarlyDelay > 0 {
		fmt.Fprintf(&b, "; early every %s of processing time", mtime.FormatDuration(t.EarlyDelay))
		if t.EarlyAligned {
			b.WriteString(", aligned to the clock")
		} else {
			b.WriteString(" after the first event of a pane")
		}
	}
	if t.EarlyElements > 0 {
		fmt.Fprintf(&b, "; early every %d events", t.EarlyElements)
	}
	switch t.Late {
	case LateEach:
		b.WriteString("; late: a pane per late event")
	case LateThrottled:
		fmt.Fprintf(&b, "; late: at most a pane per %s", mtime.FormatDuration(t.LatePeriod))
	case LateCount:
		fmt.Fprintf(&b, "; late: a pane per %d late events", t.LateElements)
	case LateNone:
		b.WriteString("; late: none")
	}
	if t.Closing == ClosingIfChanged {
		b.WriteString("; closing: only if an event came since the last pane")
	}
	return b.String()
}
