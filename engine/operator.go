package engine

import (
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// WindowStats is what a window operator did: events accepted and too late,
// panes by timing, windows and keys.
type WindowStats = exec.Stats

// OperatorConfig configures an Operator.
type OperatorConfig[K comparable, T, A, O any] struct {
	Strategy  window.Strategy
	Watermark watermark.Strategy
	Agg       aggregate.Func[T, A, O]
	// Pane receives every pane (retractions included) and Late every event
	// too late for all of its windows, or for some of them (its Reason is
	// window.ReasonLateForSomeWindows), in the order the operator emits them,
	// during the call that caused them. The pointers are valid for the call
	// only.
	Pane func(*window.Pane[K, O])
	Late func(*window.LateEvent[K, T])
	// Emitted, when set, is told of every watermark w the clocks emit, with
	// the processing time now at which they emit it, after the operator has
	// fired what w closes.
	Emitted func(w, now mtime.Time)
}

// Operator is a window operator with its clocks (processing time and the
// watermark, per partition), driven by explicit calls in the caller's
// goroutine. It decides, for every event, which windows it joins or that it
// is too late, and fires panes as the trigger says.
//
// Every window stage of a job is built on one (Window runs its instances in
// goroutines of their own, checkpointed, and merges their outputs); an
// Operator by itself is for what replays a stream deterministically and
// needs each output at the call that caused it: weir lateness replaying a
// file once per candidate watermark, the console's simulator, the test
// harness. The same calls give the same outputs, in the same order, as a job
// reading the same arrivals.
type Operator[K comparable, T, A, O any] struct {
	r *exec.Runner[K, T, A, O]
	d *exec.Driver[K, T]
}

// NewOperator returns an operator with nothing in it, its processing time
// and watermark at mtime.MinTime.
func NewOperator[K comparable, T, A, O any](cfg OperatorConfig[K, T, A, O]) (*Operator[K, T, A, O], error) {
	if err := cfg.Strategy.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Watermark.Validate(); err != nil {
		return nil, err
	}
	emit := func(outs []exec.Out[K, T, O]) error {
		for i := range outs {
			switch o := &outs[i]; o.Kind {
			case exec.OutPane:
				if cfg.Pane != nil {
					cfg.Pane(&o.Pane)
				}
			case exec.OutLate:
				if cfg.Late != nil {
					cfg.Late(&o.Late)
				}
			}
		}
		return nil
	}
	xc := exec.Config[K, T, A, O]{Strategy: cfg.Strategy, Agg: cfg.Agg, Emit: emit}
	return newOperator(xc, cfg.Watermark, cfg.Emitted), nil
}

// newOperator builds the operator of xc, fed by clocks of strategy wm: inline
// (Parallelism 0) for NewOperator, with instances of their own for a window
// stage.
func newOperator[K comparable, T, A, O any](xc exec.Config[K, T, A, O], wm watermark.Strategy, emitted func(w, now mtime.Time)) *Operator[K, T, A, O] {
	o := &Operator[K, T, A, O]{r: exec.NewRunner(xc)}
	var t exec.Target[K, T] = o.r
	if emitted != nil {
		t = watermarkTap[K, T, A, O]{o.r, emitted}
	}
	o.d = exec.NewDriver[K, T](t, wm, xc.Strategy.Trigger.UsesProcessingTime())
	return o
}

// watermarkTap passes the clocks' calls on to the operator and tells of
// each watermark once the operator has taken it.
type watermarkTap[K comparable, T, A, O any] struct {
	*exec.Runner[K, T, A, O]
	emitted func(w, now mtime.Time)
}

// Watermark implements exec.Target.
func (t watermarkTap[K, T, A, O]) Watermark(w, now mtime.Time) {
	t.Runner.Watermark(w, now)
	t.emitted(w, now)
}

// Advance moves processing time to now (never back), first emitting the
// periodic watermarks and idleness timeouts due by then, each at its own
// instant, then firing the processing-time timers due by now.
func (o *Operator[K, T, A, O]) Advance(now mtime.Time) { o.d.Advance(now) }

// Event sends an event of input partition part with event time ts, at the
// current processing time.
func (o *Operator[K, T, A, O]) Event(part int, key K, ts mtime.Time, v T) {
	o.d.Event(part, key, ts, v)
}

// SetWatermark moves a scripted watermark to w at the current processing
// time; a w at or below the current one changes nothing.
func (o *Operator[K, T, A, O]) SetWatermark(w mtime.Time) { o.d.SetWatermark(w) }

// Watermark is the last watermark the clocks emitted.
func (o *Operator[K, T, A, O]) Watermark() mtime.Time { return o.d.Watermark() }

// Now is the operator's processing time.
func (o *Operator[K, T, A, O]) Now() mtime.Time { return o.d.Now() }

// OpenWindows is the number of windows holding state now.
func (o *Operator[K, T, A, O]) OpenWindows() int64 {
	var n int64
	for _, op := range o.r.Ops() {
		n += op.OpenWindows()
	}
	return n
}

// End ends the input: the watermark moves to the end of time and every
// window fires and closes. Nothing may be sent after it.
func (o *Operator[K, T, A, O]) End() error {
	o.d.End()
	return o.r.Wait()
}

// Stats is what the operator did so far.
func (o *Operator[K, T, A, O]) Stats() WindowStats { return o.r.Stats() }

// IsEarlierWindows reports whether w is the entry of WindowStats.Dropped
// that sums the drops of windows too old to be kept one by one.
func IsEarlierWindows(w window.Window) bool { return exec.IsEarlierWindows(w) }
