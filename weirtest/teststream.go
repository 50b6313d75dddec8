package weirtest

import (
	"context"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/mtime"
)

// TestStream is a scripted source for a whole pipeline, as Beam's TestStream:
// elements arriving at given processing times, and watermark advances. Use it
// with weir.From and a watermark.ScriptedWatermark() strategy (or any other:
// then the script's watermark lines are ignored and the strategy computes it).
//
//	ts := weirtest.NewTestStream[Score]().
//		AdvanceProcessingTime(weirtest.At("2026-01-05T12:05:19Z")).
//		AddElements(Score{"Julie", 5, weirtest.At("2026-01-05T12:00:26Z")}).
//		AdvanceWatermarkTo(weirtest.At("2026-01-05T12:02:00Z"))
//	scores := weir.From(p, ts)
//
// When the script ends, the input ends: the watermark moves to the end of
// time and every window fires and closes.
type TestStream[T any] struct {
	steps []step[T]
	now   mtime.Time
}

type step[T any] struct {
	kind int // 0 element, 1 watermark, 2 processing time
	v    T
	t    mtime.Time
}

// NewTestStream returns an empty script; processing time starts at 0
// (1970-01-01T00:00:00Z) until advanced.
func NewTestStream[T any]() *TestStream[T] { return &TestStream[T]{} }

// AddElements adds elements arriving at the current processing time.
func (s *TestStream[T]) AddElements(vs ...T) *TestStream[T] {
	for _, v := range vs {
		s.steps = append(s.steps, step[T]{kind: 0, v: v, t: s.now})
	}
	return s
}

// AdvanceWatermarkTo moves the watermark to w.
func (s *TestStream[T]) AdvanceWatermarkTo(w mtime.Time) *TestStream[T] {
	s.steps = append(s.steps, step[T]{kind: 1, t: w})
	return s
}

// AdvanceProcessingTime moves processing time to t.
func (s *TestStream[T]) AdvanceProcessingTime(t mtime.Time) *TestStream[T] {
	if t > s.now {
		s.now = t
		s.steps = append(s.steps, step[T]{kind: 2, t: t})
	}
	return s
}

// Run implements weir.Source.
func (s *TestStream[T]) Run(ctx context.Context, out weir.Emitter[T]) error {
	for _, st := range s.steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch st.kind {
		case 0:
			out.Emit(st.v, st.t)
		case 1:
			out.Watermark(st.t)
		case 2:
			out.AdvanceProcessingTime(st.t)
		}
	}
	return nil
}
