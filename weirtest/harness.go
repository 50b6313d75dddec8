// Package weirtest scripts streams for tests: events, watermark advances and
// processing-time advances, and collects every pane and late event, exactly
// and in order. It is what weir's own tests use, and it is meant for yours.
//
// Harness drives one windowed aggregation directly, like Flink's operator
// test harness; ProcessHarness one keyed process function (package
// process), like Flink's KeyedOneInputStreamOperatorTestHarness.
// TestStream is a scripted source for a whole pipeline, like Beam's
// TestStream.
//
// Nothing here reads a clock or sleeps: processing time is whatever the test
// says it is.
package weirtest

import (
	"fmt"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// At parses an RFC 3339 instant; it panics on a malformed one (for tests).
func At(s string) mtime.Time {
	t, err := mtime.Parse([]byte(s))
	if err != nil {
		panic(fmt.Sprintf("weirtest.At(%q): %v", s, err))
	}
	return t
}

// Harness runs one windowed aggregation synchronously. By default the
// watermark is scripted (AdvanceWatermark); with WithWatermark it is computed
// from the events as in a job, per partition.
type Harness[K comparable, T, A, O any] struct {
	op    *engine.Operator[K, T, A, O]
	wm    watermark.Strategy
	panes []window.Pane[K, O]
	late  []window.LateEvent[K, T]
	order []Output[K, T, O]
}

// Output is a pane or a late event, in the order the harness saw them.
type Output[K comparable, T, O any] struct {
	Pane *window.Pane[K, O]
	Late *window.LateEvent[K, T]
}

// HarnessOption configures a Harness.
type HarnessOption func(*harnessConfig)

type harnessConfig struct {
	wm watermark.Strategy
}

// WithWatermark computes the watermark from the events with s (bounded
// out-of-orderness), instead of scripting it.
func WithWatermark(s watermark.Strategy) HarnessOption {
	return func(c *harnessConfig) { c.wm = s }
}

// NewHarness returns a harness for a windowing strategy and an aggregate
// function. Processing time starts at mtime.MinTime; set it with
// AdvanceProcessingTime.
func NewHarness[K comparable, T, A, O any](s window.Strategy, f aggregate.Func[T, A, O], opts ...HarnessOption) (*Harness[K, T, A, O], error) {
	cfg := harnessConfig{wm: watermark.ScriptedWatermark()}
	for _, o := range opts {
		o(&cfg)
	}
	h := &Harness[K, T, A, O]{wm: cfg.wm}
	op, err := engine.NewOperator(engine.OperatorConfig[K, T, A, O]{
		Strategy: s, Watermark: cfg.wm, Agg: f,
		Pane: func(p *window.Pane[K, O]) {
			c := *p
			h.panes = append(h.panes, c)
			h.order = append(h.order, Output[K, T, O]{Pane: &c})
		},
		Late: func(l *window.LateEvent[K, T]) {
			c := *l
			h.late = append(h.late, c)
			h.order = append(h.order, Output[K, T, O]{Late: &c})
		},
	})
	if err != nil {
		return nil, err
	}
	h.op = op
	return h, nil
}

// AdvanceProcessingTime moves processing time to t (never backwards), firing
// the processing-time triggers and periodic watermarks due by then.
func (h *Harness[K, T, A, O]) AdvanceProcessingTime(t mtime.Time) *Harness[K, T, A, O] {
	h.op.Advance(t)
	return h
}

// Add sends an event with event time ts for key, at the current processing
// time, on partition 0.
func (h *Harness[K, T, A, O]) Add(key K, ts mtime.Time, v T) *Harness[K, T, A, O] {
	return h.AddOn(0, key, ts, v)
}

// AddOn sends an event on an input partition (per-partition watermarks).
func (h *Harness[K, T, A, O]) AddOn(part int, key K, ts mtime.Time, v T) *Harness[K, T, A, O] {
	h.op.Event(part, key, ts, v)
	return h
}

// AdvanceWatermark moves a scripted watermark to w at the current processing
// time; a w at or below the current one changes nothing.
func (h *Harness[K, T, A, O]) AdvanceWatermark(w mtime.Time) *Harness[K, T, A, O] {
	if h.wm.Kind != watermark.Scripted {
		panic("weirtest: AdvanceWatermark needs a scripted watermark")
	}
	h.op.SetWatermark(w)
	return h
}

// End ends the input: the watermark moves to the end of time and every window
// fires and closes.
func (h *Harness[K, T, A, O]) End() *Harness[K, T, A, O] {
	h.op.End()
	return h
}

// Watermark is the current watermark.
func (h *Harness[K, T, A, O]) Watermark() mtime.Time { return h.op.Watermark() }

// Panes returns every pane emitted so far, in order.
func (h *Harness[K, T, A, O]) Panes() []window.Pane[K, O] { return h.panes }

// Late returns every too-late event so far, in order.
func (h *Harness[K, T, A, O]) Late() []window.LateEvent[K, T] { return h.late }

// Outputs returns panes and late events interleaved, in the order emitted.
func (h *Harness[K, T, A, O]) Outputs() []Output[K, T, O] { return h.order }

// Stats counts what the aggregation did with the events it was given.
type Stats struct {
	Accepted     int64 // added to at least one window
	TooLate      int64 // too late for every window
	LateAccepted int64 // late, but within the allowed lateness
	PartlyLate   int64 // accepted, and too late for some of its windows
	Panes        int64 // panes emitted, retractions included
	WindowsFired int64 // windows that emitted at least one pane
	OpenWindows  int64 // windows holding state now
	// Dropped counts too-late drops per window, over all keys.
	Dropped map[window.Window]int64
}

// Stats returns the counts so far.
func (h *Harness[K, T, A, O]) Stats() Stats {
	s := h.op.Stats()
	return Stats{s.Accepted, s.TooLate, s.LateAccepted, s.PartlyLate, s.Panes, s.Fired, s.Open, s.Dropped}
}

// TakePanes returns the panes emitted since the last call and forgets them.
func (h *Harness[K, T, A, O]) TakePanes() []window.Pane[K, O] {
	p := h.panes
	h.panes = nil
	return p
}
