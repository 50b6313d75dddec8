package weirtest

import (
	"fmt"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/process"
)

// ProcessHarness runs a keyed process function (package process)
// synchronously, as Flink's KeyedOneInputStreamOperatorTestHarness runs a
// KeyedProcessOperator: the test sends elements, watermarks and processing
// time, and reads every output, in order, with the watermarks between
// them. Snapshot and RestoreProcessHarness take its state and timers to a
// new harness, as a checkpoint and a restore do.
type ProcessHarness[K comparable, T, O any] struct {
	op    *process.Op[K, T, O]
	out   []O
	trace []Processed[O]
	sides map[string][]any
}

// Processed is one output of a ProcessHarness, in the order it came: an
// element of the main output (Value), of a side output (Side names it,
// SideValue holds it), or the watermark going on (IsWatermark).
type Processed[O any] struct {
	Value       O
	Side        string
	SideValue   any
	Watermark   mtime.Time
	IsWatermark bool
}

// String is the output as a test compares it: "v", "side: v" or
// "watermark 42".
func (p Processed[O]) String() string {
	switch {
	case p.IsWatermark:
		return fmt.Sprintf("watermark %d", p.Watermark)
	case p.Side != "":
		return fmt.Sprintf("%s: %v", p.Side, p.SideValue)
	}
	return fmt.Sprint(p.Value)
}

// NewProcessHarness returns a harness running f. The watermark and
// processing time start at mtime.MinTime.
func NewProcessHarness[K comparable, T, O any](f process.Func[K, T, O]) (*ProcessHarness[K, T, O], error) {
	h := &ProcessHarness[K, T, O]{sides: map[string][]any{}}
	sides := map[string]any{}
	for _, s := range f.Sides {
		if s == nil {
			continue
		}
		name := s.Name()
		sides[name] = process.Collect(s, func(v any) {
			h.sides[name] = append(h.sides[name], v)
			h.trace = append(h.trace, Processed[O]{Side: name, SideValue: v})
		})
	}
	op, err := process.New(process.Config[K, T, O]{Func: f, Sides: sides, Emit: func(o O) {
		h.out = append(h.out, o)
		h.trace = append(h.trace, Processed[O]{Value: o})
	}})
	if err != nil {
		return nil, err
	}
	h.op = op
	return h, nil
}

// ProcessElement sends v of key at event time ts; the function's error,
// if any, is returned.
func (h *ProcessHarness[K, T, O]) ProcessElement(key K, v T, ts mtime.Time) error {
	return h.op.Element(key, ts, v)
}

// ProcessWatermark moves the watermark to w: the event-time timers it
// reaches fire, then the watermark goes on (in Trace). A w at or below the
// current one changes nothing.
func (h *ProcessHarness[K, T, O]) ProcessWatermark(w mtime.Time) error {
	if w <= h.op.Watermark() {
		return nil
	}
	err := h.op.AdvanceWatermark(w)
	h.trace = append(h.trace, Processed[O]{Watermark: w, IsWatermark: true})
	return err
}

// SetProcessingTime moves processing time to t: the processing-time
// timers it reaches fire.
func (h *ProcessHarness[K, T, O]) SetProcessingTime(t mtime.Time) error {
	return h.op.AdvanceProcessingTime(t)
}

// End ends the input, as a bounded input's end does: the watermark moves
// to the end of time and every event-time timer fires.
func (h *ProcessHarness[K, T, O]) End() error { return h.op.AdvanceWatermark(mtime.MaxTime) }

// Output is the main output so far, in order.
func (h *ProcessHarness[K, T, O]) Output() []O { return h.out }

// Side is the side output name so far, in order.
func (h *ProcessHarness[K, T, O]) Side(name string) []any { return h.sides[name] }

// Trace is every output so far, main and side, with the watermarks, in
// the order they came.
func (h *ProcessHarness[K, T, O]) Trace() []Processed[O] { return h.trace }

// Keys is the number of keys with state or timers.
func (h *ProcessHarness[K, T, O]) Keys() int { return h.op.Keys() }

// Timers is the number of timers set, by domain.
func (h *ProcessHarness[K, T, O]) Timers() (event, processing int) { return h.op.Timers() }

// Snapshot is the function's state and timers, and the clocks, as a
// checkpoint keeps them.
func (h *ProcessHarness[K, T, O]) Snapshot() ([]byte, error) {
	b := h.op.AppendHeader(nil)
	return h.op.AppendKeys(b, process.JSONKeys[K]{}, func(K) uint64 { return 0 }, 1, func(int) bool { return true })
}

// RestoreProcessHarness returns a harness running f from a Snapshot, with
// nothing output yet.
func RestoreProcessHarness[K comparable, T, O any](f process.Func[K, T, O], snapshot []byte) (*ProcessHarness[K, T, O], error) {
	h, err := NewProcessHarness(f)
	if err != nil {
		return nil, err
	}
	d := enc.NewDecoder(snapshot)
	if err := h.op.RestoreHeader(d); err != nil {
		return nil, err
	}
	if err := h.op.RestoreKeys(d, process.JSONKeys[K]{}); err != nil {
		return nil, err
	}
	return h, nil
}
