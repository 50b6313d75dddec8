package trigger

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir/mtime"
)

// Op is the kind of a composite trigger's node.
type Op uint8

const (
	// OpNever never fires (Beam's Never.ever()).
	OpNever Op = iota
	// OpCount fires once a pane has N elements (AfterPane.elementCountAtLeast).
	OpCount
	// OpProcessingTime fires D of processing time after the first element of
	// a pane, or at the next multiple of D of the clock when aligned
	// (AfterProcessingTime.pastFirstElementInPane()).
	OpProcessingTime
	// OpEndOfWindow fires when the watermark passes the end of the window
	// (AfterWatermark.pastEndOfWindow()).
	OpEndOfWindow
	// OpWatermark is OpEndOfWindow with early and late firings
	// (AfterWatermark.pastEndOfWindow().withEarlyFirings(e).withLateFirings(l)).
	OpWatermark
	// OpEach runs its children one after the other (AfterEach.inOrder).
	OpEach
	// OpFirst fires once, when any child fires (AfterFirst.of).
	OpFirst
	// OpAll fires once, when every child has fired (AfterAll.of).
	OpAll
	// OpRepeatedly fires whenever its child fires, starting it again each
	// time (Repeatedly.forever).
	OpRepeatedly
	// OpOrFinally fires as its first child does until its second fires,
	// which fires and finishes it (t.orFinally(until)).
	OpOrFinally
)

// Expr is a composite trigger: Beam's trigger state machines, built with
// the functions below and given to a window by Of. A window fires a pane
// whenever its trigger is ready; a trigger that finishes closes the window
// (its pane is final), and an event that comes for it later is too late
// (it goes to the late output with ReasonTriggerFinished, counted as too
// late), as in Beam.
//
//	trigger.Of(trigger.Repeatedly(trigger.AfterFirst(trigger.AfterCount(100), trigger.AfterProcessingTime(time.Minute))))
//	trigger.Of(trigger.PastEndOfWindow().WithEarlyFirings(trigger.AfterCount(10)).WithLateFirings(trigger.AfterProcessingTime(time.Minute)))
//	trigger.Of(trigger.OrFinally(trigger.Repeatedly(trigger.AfterCount(2)), trigger.PastEndOfWindow()))
type Expr struct {
	Op      Op
	N       int64      // OpCount
	Delay   mtime.Time // OpProcessingTime
	Aligned bool       // OpProcessingTime
	// Subs are the children: the early and late firings of OpWatermark
	// (Late absent when it has none), the trigger and until of
	// OpOrFinally, the repeated trigger of OpRepeatedly.
	Subs []Expr
}

// Never never fires: a window with it fires only when it closes.
func Never() Expr { return Expr{Op: OpNever} }

// AfterCount fires once a pane has at least n elements.
func AfterCount(n int) Expr { return Expr{Op: OpCount, N: int64(n)} }

// AfterProcessingTime fires d of processing time after the first element of
// a pane.
func AfterProcessingTime(d time.Duration) Expr {
	return Expr{Op: OpProcessingTime, Delay: mtime.Millis(d)}
}

// AlignedTo makes a processing-time trigger fire at the next multiple of
// its delay of the processing clock instead (Beam's alignedTo).
func (e Expr) AlignedTo() Expr {
	e.Aligned = true
	return e
}

// PastEndOfWindow fires when the watermark passes the end of the window.
func PastEndOfWindow() Expr { return Expr{Op: OpEndOfWindow} }

// WithEarlyFirings fires e, again and again, before the watermark passes
// the end of the window. e must be PastEndOfWindow() or come from it.
func (e Expr) WithEarlyFirings(early Expr) Expr {
	return e.watermark(&early, nil)
}

// WithLateFirings fires l, again and again, after the watermark passed
// the end of the window, for late events within the allowed lateness.
// Without it, the on-time pane finishes the trigger.
func (e Expr) WithLateFirings(late Expr) Expr {
	return e.watermark(nil, &late)
}

func (e Expr) watermark(early, late *Expr) Expr {
	w := Expr{Op: OpWatermark, Subs: []Expr{Never()}}
	switch e.Op {
	case OpWatermark:
		w.Subs = append([]Expr(nil), e.Subs...)
	case OpEndOfWindow:
	default:
		return Expr{Op: OpWatermark, N: -1} // Validate refuses it
	}
	if early != nil {
		w.Subs[0] = *early
	}
	if late != nil {
		w.Subs = append(w.Subs[:1], *late)
	}
	return w
}

// AfterEach runs ts one after the other: it fires whenever the running one
// fires, and finishes when the last finishes.
func AfterEach(ts ...Expr) Expr { return Expr{Op: OpEach, Subs: ts} }

// AfterFirst fires once, when any of ts fires.
func AfterFirst(ts ...Expr) Expr { return Expr{Op: OpFirst, Subs: ts} }

// AfterAll fires once, when every one of ts has fired.
func AfterAll(ts ...Expr) Expr { return Expr{Op: OpAll, Subs: ts} }

// Repeatedly fires whenever t fires, and starts t again each time.
func Repeatedly(t Expr) Expr { return Expr{Op: OpRepeatedly, Subs: []Expr{t}} }

// OrFinally fires as t does until until fires: that firing is the last.
func OrFinally(t, until Expr) Expr { return Expr{Op: OpOrFinally, Subs: []Expr{t, until}} }

// Of is the trigger that fires as e says. Closing (ClosingIfChanged) still
// says whether a window whose trigger has not finished writes a closing
// pane when nothing came since its last one.
func Of(e Expr) Trigger { return Trigger{Composite: &e} }

// Validate reports a configuration error of e.
func (e Expr) Validate() error {
	switch e.Op {
	case OpNever, OpEndOfWindow:
	case OpCount:
		if e.N < 1 {
			return errors.New("an element count must be at least 1")
		}
	case OpProcessingTime:
		if e.Delay <= 0 {
			return errors.New("a processing-time delay must be positive")
		}
	case OpWatermark:
		if e.N < 0 || len(e.Subs) < 1 || len(e.Subs) > 2 {
			return errors.New("early and late firings go with PastEndOfWindow() only")
		}
	case OpEach, OpFirst, OpAll:
		if len(e.Subs) == 0 {
			return fmt.Errorf("%s needs at least one trigger", opNames[e.Op])
		}
	case OpRepeatedly:
		if len(e.Subs) != 1 {
			return errors.New("Repeatedly takes one trigger")
		}
	case OpOrFinally:
		if len(e.Subs) != 2 {
			return errors.New("OrFinally takes a trigger and an until trigger")
		}
	default:
		return errors.New("unknown trigger")
	}
	for i := range e.Subs {
		if err := e.Subs[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

var opNames = [...]string{"Never", "AfterCount", "AfterProcessingTime", "PastEndOfWindow", "PastEndOfWindow", "AfterEach", "AfterFirst", "AfterAll", "Repeatedly", "OrFinally"}

// String writes e as the Go calls that build it.
func (e Expr) String() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e Expr) write(b *strings.Builder) {
	switch e.Op {
	case OpCount:
		fmt.Fprintf(b, "AfterCount(%d)", e.N)
		return
	case OpProcessingTime:
		fmt.Fprintf(b, "AfterProcessingTime(%s)", mtime.FormatDuration(e.Delay))
		if e.Aligned {
			b.WriteString(".AlignedTo()")
		}
		return
	case OpWatermark:
		b.WriteString("PastEndOfWindow()")
		if len(e.Subs) > 0 && e.Subs[0].Op != OpNever {
			b.WriteString(".WithEarlyFirings(")
			e.Subs[0].write(b)
			b.WriteString(")")
		}
		if len(e.Subs) > 1 {
			b.WriteString(".WithLateFirings(")
			e.Subs[1].write(b)
			b.WriteString(")")
		}
		return
	}
	b.WriteString(opNames[min(int(e.Op), len(opNames)-1)])
	b.WriteString("(")
	for i, s := range e.Subs {
		if i > 0 {
			b.WriteString(", ")
		}
		s.write(b)
	}
	b.WriteString(")")
}

// Describe says in words when e fires.
func (e Expr) Describe() string {
	var b strings.Builder
	e.describe(&b)
	return b.String()
}

func (e Expr) describe(b *strings.Builder) {
	list := func(word string) {
		b.WriteString(word)
		b.WriteString(" of (")
		for i, s := range e.Subs {
			if i > 0 {
				b.WriteString("; ")
			}
			s.describe(b)
		}
		b.WriteString(")")
	}
	switch e.Op {
	case OpNever:
		b.WriteString("never")
	case OpCount:
		fmt.Fprintf(b, "after %d events", e.N)
	case OpProcessingTime:
		if e.Aligned {
			fmt.Fprintf(b, "at the next multiple of %s of processing time", mtime.FormatDuration(e.Delay))
		} else {
			fmt.Fprintf(b, "%s of processing time after the first event of a pane", mtime.FormatDuration(e.Delay))
		}
	case OpEndOfWindow:
		b.WriteString("at the watermark")
	case OpWatermark:
		b.WriteString("at the watermark")
		if e.Subs[0].Op != OpNever {
			b.WriteString("; early, each time: ")
			e.Subs[0].describe(b)
		}
		if len(e.Subs) > 1 {
			b.WriteString("; late, each time: ")
			e.Subs[1].describe(b)
		} else {
			b.WriteString("; then finished")
		}
	case OpEach:
		list("each in turn")
	case OpFirst:
		list("once, at the first")
	case OpAll:
		list("once, when all have fired")
	case OpRepeatedly:
		b.WriteString("repeatedly ")
		e.Subs[0].describe(b)
	case OpOrFinally:
		e.Subs[0].describe(b)
		b.WriteString(", until ")
		e.Subs[1].describe(b)
	}
}

// uses reports whether op is somewhere in e.
func (e Expr) uses(op Op) bool {
	if e.Op == op {
		return true
	}
	for i := range e.Subs {
		if e.Subs[i].uses(op) {
			return true
		}
	}
	return false
}
