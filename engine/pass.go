package engine

import (
	"sync/atomic"

	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
)

// Passed is an event a head passed on through a Pass: its key, event
// time and value; Reason is set for an event set aside (Pass.Aside).
type Passed[K comparable, T any] struct {
	Key    K
	Time   mtime.Time
	Value  T
	Reason string
	// Watermark and At are the watermark and the processing time when it
	// passed.
	Watermark, At mtime.Time
}

// Pass is the target of a head whose events go on without windows (a job
// file's lookup join): each event in arrival order to Out, with the
// source loop's signals and the watermark between them, and each event the
// head set aside (beyond the de-duplication horizon) to SetAside. Nothing is
// too late for it; it keeps no state of its own.
type Pass[K comparable, T any] struct {
	d     *exec.Driver[K, T]
	wm    watermark.Strategy
	ended bool
	sent  mtime.Time // the processing time last passed on
	// accepted counts the events passed on, from the count it was built
	// with (a restore's).
	accepted atomic.Int64

	// Out receives the events, SetAside the events set aside.
	Out, SetAside *Stream[Passed[K, T]]
}

// NewPass builds a Pass whose watermark follows wm.
func NewPass[K comparable, T any](wm watermark.Strategy) *Pass[K, T] {
	p := &Pass[K, T]{wm: wm, sent: mtime.MinTime, Out: &Stream[Passed[K, T]]{}, SetAside: &Stream[Passed[K, T]]{}}
	p.d = exec.NewDriver[K, T]((*passTarget[K, T])(p), wm, false)
	return p
}

// SetAccepted sets the count of the events passed on so far: those of the
// runs before a restore, before the first event.
func (p *Pass[K, T]) SetAccepted(n int64) { p.accepted.Store(n) }

// Push makes the pass a Consumer[struct{}].
func (p *Pass[K, T]) Push(struct{}) {}

// Signal passes the source loop's signals on; the watermark is the
// pass's own, which goes on as it moves, and processing time goes on as
// it moves, from the source loop or from the records' arrivals.
func (p *Pass[K, T]) Signal(s Signal) {
	switch s.Kind {
	case Proc:
		p.Advance(s.Now)
		return
	case Watermark:
		p.d.Advance(s.Now)
		if p.wm.Kind == watermark.Scripted {
			p.d.SetWatermark(s.Watermark)
		}
		return
	case End, Stop:
		if p.ended {
			return
		}
		p.ended = true
		if s.Kind == End {
			p.d.End()
		}
	}
	p.Out.Signal(s)
	p.SetAside.Signal(s)
}

// Event implements Target.
func (p *Pass[K, T]) Event(part int, key K, ts mtime.Time, v T) { p.d.Event(part, key, ts, v) }

// Aside implements Target.
func (p *Pass[K, T]) Aside(part int, key K, ts mtime.Time, v T, reason string) {
	p.d.Aside(part, key, ts, v, reason)
}

// Observe implements Target.
func (p *Pass[K, T]) Observe(part int, ts mtime.Time) { p.d.Observe(part, ts) }

// AddPartition implements Target.
func (p *Pass[K, T]) AddPartition(part int, now mtime.Time) {
	p.d.Tracker().AddPartition(part, now)
}

// SetBacklog implements Target.
func (p *Pass[K, T]) SetBacklog(part int, backlog int64, now mtime.Time) {
	p.d.Tracker().SetBacklog(part, backlog, now)
	p.d.Refresh()
}

// Withdraw does nothing: a pass has no windows (CanWithdraw).
func (p *Pass[K, T]) Withdraw(K, mtime.Time, T, bool) {}

// SameWindows implements Target: a pass has no windows.
func (p *Pass[K, T]) SameWindows(a, b mtime.Time) bool { return false }

// Open implements Target: a pass has no windows.
func (p *Pass[K, T]) Open(mtime.Time) bool { return false }

// CanWithdraw implements Target: a pass has no windows.
func (p *Pass[K, T]) CanWithdraw() bool { return false }

// SetFloor implements Target.
func (p *Pass[K, T]) SetFloor(w mtime.Time) { p.d.SetFloor(w) }

// Advance implements Target.
func (p *Pass[K, T]) Advance(now mtime.Time) {
	p.d.Advance(now)
	if now > p.sent && !p.ended {
		p.sent = now
		p.Out.Signal(Signal{Kind: Proc, Now: now})
		p.SetAside.Signal(Signal{Kind: Proc, Now: now})
	}
}

// SetWatermark implements Target.
func (p *Pass[K, T]) SetWatermark(w mtime.Time) { p.d.SetWatermark(w) }

// Watermark implements Target.
func (p *Pass[K, T]) Watermark() mtime.Time { return p.d.Watermark() }

// Now implements Target.
func (p *Pass[K, T]) Now() mtime.Time { return p.d.Now() }

// Tracker implements Target.
func (p *Pass[K, T]) Tracker() *watermark.Tracker { return p.d.Tracker() }

// Progress implements Target: the watermark; a pass holds no keys.
func (p *Pass[K, T]) Progress() (mtime.Time, int64) { return p.d.Watermark(), 0 }

// LiveStats implements Target: the events passed on are accepted.
func (p *Pass[K, T]) LiveStats() WindowStats { return WindowStats{Accepted: p.accepted.Load()} }

// passTarget is the pass as the target of its watermark's driver.
type passTarget[K comparable, T any] Pass[K, T]

func (t *passTarget[K, T]) Event(key K, ts, now mtime.Time, v T) {
	t.accepted.Add(1)
	t.Out.Push(Passed[K, T]{Key: key, Time: ts, Value: v, Watermark: t.d.Watermark(), At: now})
}

func (t *passTarget[K, T]) Aside(key K, ts, now mtime.Time, v T, reason string) {
	t.SetAside.Push(Passed[K, T]{Key: key, Time: ts, Value: v, Reason: reason, Watermark: t.d.Watermark(), At: now})
}

func (t *passTarget[K, T]) Proc(mtime.Time) {}

func (t *passTarget[K, T]) Watermark(w, now mtime.Time) {
	t.Out.Signal(Signal{Kind: Watermark, Watermark: w, Now: now})
	t.SetAside.Signal(Signal{Kind: Watermark, Watermark: w, Now: now})
}

func (t *passTarget[K, T]) End(mtime.Time) {}
