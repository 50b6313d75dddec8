package exec

import (
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
)

// Driver is the source side of a job: it owns the processing clock and the
// watermark, and turns arrivals into the ordered stream of a Target.
//
// Processing time only moves when the caller says so (Advance): from each
// line's arrival time in a replay, from the wall clock in a live run. A
// processing-time instant T (a periodic watermark emission, a partition going
// idle) is handled before the first arrival at or after T. Before every
// watermark emitted at T, and before every event, the Target's processing
// time is advanced to that instant when the trigger uses processing-time
// timers, so that their panes come out in time order.
type Driver[K comparable, T any] struct {
	t Target[K, T]
	clock
}

// clock is the driver's state, whatever it feeds: its methods are one
// piece of code for every Driver.
type clock struct {
	s         watermark.Strategy
	tracker   *watermark.Tracker
	procItems bool

	now     mtime.Time // processing time
	sent    mtime.Time // processing time last sent to the target
	wm      mtime.Time // last watermark emitted
	dirty   bool       // events since the last periodic emission
	nextDue mtime.Time // the periodic emission that covers them
	ended   bool
}

// NewDriver returns a driver feeding t. procTimers says whether the
// operator sets processing-time timers (trigger.UsesProcessingTime).
func NewDriver[K comparable, T any](t Target[K, T], s watermark.Strategy, procTimers bool) *Driver[K, T] {
	return &Driver[K, T]{t: t, clock: clock{
		s: s, tracker: watermark.NewTracker(s), procItems: procTimers,
		now: mtime.MinTime, sent: mtime.MinTime, wm: mtime.MinTime,
	}}
}

// Tracker is the bounded watermark's per-partition state.
func (d *clock) Tracker() *watermark.Tracker { return d.tracker }

// Now is the current processing time.
func (d *clock) Now() mtime.Time { return d.now }

// Watermark is the last watermark emitted.
func (d *clock) Watermark() mtime.Time { return d.wm }

// Advance moves processing time to now (never backwards), first handling
// every periodic watermark emission and idleness timeout due by then, each
// at its own instant, and then firing the processing-time timers due by now
// (when the trigger has any): whatever comes next, an event, a duplicate, a
// rejected line or nothing at all, comes after them, as Beam's TestStream
// advances processing time before every element.
func (d *Driver[K, T]) Advance(now mtime.Time) {
	if now <= d.now || d.ended {
		return
	}
	if d.s.Kind == watermark.Bounded {
		for {
			at := d.nextInstant()
			if at > now {
				break
			}
			d.now = max(d.now, at)
			d.dirty = false
			d.emit(d.tracker.Current(at), at)
		}
	}
	d.now = now
	d.proc(now)
}

// nextInstant is the next processing time at which the bounded watermark may
// change: the periodic emission covering recent events, or the instant (for
// a periodic watermark, the first emission at or after it) a partition turns
// idle.
func (d *clock) nextInstant() mtime.Time {
	at := mtime.MaxTime
	if d.dirty {
		at = d.nextDue
	}
	if idle := d.tracker.NextIdle(); idle < mtime.MaxTime {
		if d.s.Interval > 0 {
			idle = mtime.AlignUp(idle, d.s.Interval)
		}
		at = min(at, idle)
	}
	if q := d.tracker.QuietFrom(); q < mtime.MaxTime {
		// Quiet from q: the watermark follows the clock, moved at every
		// emission (every DefaultInterval when the interval is 0).
		step := d.s.Interval
		if step <= 0 {
			step = mtime.Millis(watermark.DefaultInterval)
		}
		at = min(at, mtime.AlignUp(max(q, d.now+1), step))
	}
	return at
}

func (d *Driver[K, T]) proc(at mtime.Time) {
	if d.procItems && at > d.sent {
		d.sent = at
		d.t.Proc(at)
	}
}

func (d *Driver[K, T]) emit(w, at mtime.Time) {
	if w <= d.wm {
		return
	}
	d.proc(at)
	d.wm = w
	d.t.Watermark(w, at)
}

// Event sends an event with event time ts, seen on input partition part, at
// the current processing time. A bounded watermark learns of it (after every
// event when the interval is 0, else at the next periodic emission).
func (d *Driver[K, T]) Event(part int, key K, ts mtime.Time, v T) {
	d.proc(d.now)
	d.t.Event(key, ts, d.now, v)
	if d.s.Kind != watermark.Bounded {
		return
	}
	d.tracker.Observe(part, ts, d.now)
	if d.s.Interval == 0 {
		d.emit(d.tracker.Current(d.now), d.now)
	} else if !d.dirty {
		d.dirty = true
		// the first emission after now: one at exactly now came before
		// this event
		d.nextDue = mtime.AlignUp(d.now+1, d.s.Interval)
	}
}

// Aside sends an event the job does not count (beyond the de-duplication
// horizon) to the late events, in stream order. A bounded watermark learns
// of its partition's activity, as for a duplicate.
func (d *Driver[K, T]) Aside(part int, key K, ts mtime.Time, v T, reason string) {
	d.proc(d.now)
	d.t.Aside(key, ts, d.now, v, reason)
	d.Observe(part, ts)
}

// Withdraw takes an event that was sent back out of its windows (the
// earlier version of a revised event), in stream order, when the target
// can (Withdrawer); it reports whether it could. It is not an arrival: the
// watermark learns nothing of it. fire: see WindowOp.Withdraw.
func (d *Driver[K, T]) Withdraw(key K, ts mtime.Time, v T, fire bool) bool {
	wd, ok := d.t.(Withdrawer[K, T])
	if !ok {
		return false
	}
	d.proc(d.now)
	wd.Withdraw(key, ts, d.now, v, fire)
	return true
}

// Refresh makes a bounded watermark look at its partitions again at the next
// emission (after every event when the interval is 0: now), when something
// other than an event changed them (a source's backlog report).
func (d *Driver[K, T]) Refresh() {
	if d.s.Kind != watermark.Bounded || d.ended {
		return
	}
	if d.s.Interval == 0 {
		d.emit(d.tracker.Current(d.now), d.now)
	} else if !d.dirty {
		d.dirty = true
		d.nextDue = mtime.AlignUp(d.now+1, d.s.Interval)
	}
}

// SetFloor gives a bounded watermark the floor it follows while every
// partition is idle (watermark.Tracker.SetFloor), looked at the next
// emission (at once when the interval is 0).
func (d *Driver[K, T]) SetFloor(w mtime.Time) {
	if d.s.Kind != watermark.Bounded || w == d.tracker.Floor() {
		return
	}
	d.tracker.SetFloor(w)
	d.Refresh()
}

// Observe tells a bounded watermark about an event that is not sent on (a
// duplicate delivery still shows the partition is alive and how far it got).
func (d *clock) Observe(part int, ts mtime.Time) {
	if d.s.Kind == watermark.Bounded {
		d.tracker.Observe(part, ts, d.now)
	}
}

// SetWatermark moves a scripted or perfect watermark to w at the current
// processing time; a w at or below the current watermark changes nothing.
func (d *Driver[K, T]) SetWatermark(w mtime.Time) {
	d.emit(w, d.now)
}

// End ends a bounded input at the current processing time: the watermark
// moves to the end of time and no processing-time timer fires any more.
func (d *Driver[K, T]) End() {
	if d.ended {
		return
	}
	d.ended = true
	d.wm = mtime.MaxTime
	d.t.End(d.now)
}

// AppendState appends the driver's state (clock, watermark, partitions) for
// a checkpoint.
func (d *clock) AppendState(b []byte) []byte {
	for _, v := range []mtime.Time{d.now, d.sent, d.wm, d.nextDue} {
		b = enc.AppendVarint(b, int64(v))
	}
	b = enc.AppendBool(b, d.dirty)
	st := d.tracker.State()
	b = enc.AppendVarint(b, int64(st.Out))
	b = enc.AppendUvarint(b, uint64(len(st.Max)))
	for i := range st.Max {
		b = enc.AppendVarint(b, int64(st.Max[i]))
		b = enc.AppendVarint(b, int64(st.LastActive[i]))
		b = enc.AppendBool(b, st.Idle[i])
	}
	return b
}

// RestoreState reads what AppendState wrote.
func (d *clock) RestoreState(dec *enc.Decoder) error {
	for _, p := range []*mtime.Time{&d.now, &d.sent, &d.wm, &d.nextDue} {
		*p = mtime.Time(dec.Varint())
	}
	d.dirty = dec.Bool()
	var st watermark.TrackerState
	st.Out = mtime.Time(dec.Varint())
	n := dec.Items(1 << 20)
	for range n {
		st.Max = append(st.Max, mtime.Time(dec.Varint()))
		st.LastActive = append(st.LastActive, mtime.Time(dec.Varint()))
		st.Idle = append(st.Idle, dec.Bool())
	}
	if err := dec.Err(); err != nil {
		return err
	}
	d.tracker.Restore(st)
	return nil
}
