package watermark

import "github.com/weirstream/weir/mtime"

// Tracker is the bounded out-of-orderness watermark of a set of input
// partitions. Each partition p has its own W_p = max event time seen on p -
// delay - 1 ms; the combined watermark is the minimum over the partitions that
// are not idle, and it never goes back.
//
// A partition is idle once it has had no event for the idleness timeout of
// processing time; it stops holding the watermark back. When every partition
// is idle the combined watermark is the largest W_p, as in Flink's
// StatusWatermarkValve. An idle partition rejoins with its next event, and the
// combined watermark does not move backwards when it does.
//
// With a quiet bound (Strategy.Quiet), once no partition has had an event
// or a backlog for that long, the combined watermark is at least now -
// Quiet: it follows the processing clock while the whole stream is quiet.
//
// A floor from outside (SetFloor: a consumer group's watermark) moves the
// combined watermark only while every partition is idle: then it is the
// larger of the largest W_p and the floor.
//
// A Tracker is not safe for concurrent use.
type Tracker struct {
	delay mtime.Time
	idle  mtime.Time
	drift mtime.Time
	quiet mtime.Time
	// last is the processing time of the last event or backlog of any
	// partition; seen says a partition has had an event.
	last  mtime.Time
	seen  bool
	parts []partition
	out   mtime.Time
	floor mtime.Time
}

type partition struct {
	max        mtime.Time // largest event time seen, MinTime if none
	lastActive mtime.Time // processing time of the last event
	idle       bool
	caughtUp   bool // its source says nothing is waiting to be read
}

// NewTracker returns a tracker for the strategy's delay, idleness and
// alignment.
func NewTracker(s Strategy) *Tracker {
	return &Tracker{delay: s.Delay, idle: s.Idle, drift: s.MaxDrift, quiet: s.Quiet, out: mtime.MinTime, floor: mtime.MinTime, last: mtime.MinTime}
}

// SetFloor sets the watermark that the combined watermark follows while
// every partition is idle (MinTime: none). A task of a consumer group sets
// the group's watermark there: the minimum over the group's partitions that
// are not idle, so that the windows of a quiet partition close as those of
// a quiet partition of one job do. It takes effect at the next Current.
func (t *Tracker) SetFloor(w mtime.Time) { t.floor = w }

// Floor is the floor SetFloor set last (MinTime: none).
func (t *Tracker) Floor() mtime.Time { return t.floor }

// AllIdle reports whether every partition is idle (true too when there is
// none): then the floor applies. Idleness timeouts are applied by Current;
// an event makes its partition active at once.
func (t *Tracker) AllIdle() bool {
	for i := range t.parts {
		if !t.parts[i].idle {
			return false
		}
	}
	return true
}

// AddPartition declares partition p (0-based) before its first event, so that
// it holds the watermark back from the start (a Kafka partition known at
// start). now is the processing time from which its idleness counts.
func (t *Tracker) AddPartition(p int, now mtime.Time) {
	t.grow(p, now)
}

func (t *Tracker) grow(p int, now mtime.Time) {
	for len(t.parts) <= p {
		t.parts = append(t.parts, partition{max: mtime.MinTime, lastActive: now})
	}
}

// IdleTimeout is the idleness timeout (0: partitions never turn idle by
// time).
func (t *Tracker) IdleTimeout() mtime.Time { return t.idle }

// MaxDrift is how far a partition's watermark may run ahead of the slowest
// before its source pauses it (0: no alignment); the tracker does not pause
// anything itself.
func (t *Tracker) MaxDrift() mtime.Time { return t.drift }

// Partitions is the number of partitions known.
func (t *Tracker) Partitions() int { return len(t.parts) }

// Observe records an event with event time ts on partition p at processing
// time now. The partition becomes active.
func (t *Tracker) Observe(p int, ts, now mtime.Time) {
	if p >= len(t.parts) {
		t.grow(p, now)
	}
	pt := &t.parts[p]
	if ts > pt.max {
		pt.max = ts
	}
	pt.lastActive = now
	pt.idle = false
	t.last, t.seen = max(t.last, now), true
}

// SetBacklog records what the source of partition p reports at processing
// time now: records waiting to be read (backlog > 0) keep it active, so that
// it never turns idle while it is only behind (Flink's withIdleness counts
// only a partition that is caught up); a partition that is caught up and has
// never had an event does not hold the watermark back (it may never get
// one). A negative backlog is unknown and changes nothing.
func (t *Tracker) SetBacklog(p int, backlog int64, now mtime.Time) {
	if backlog < 0 {
		return
	}
	if p >= len(t.parts) {
		t.grow(p, now)
	}
	pt := &t.parts[p]
	pt.caughtUp = backlog == 0
	if backlog > 0 {
		pt.lastActive = max(pt.lastActive, now)
		pt.idle = false
		t.last = max(t.last, now)
	}
}

// Current is the combined watermark as of processing time now: partitions
// whose idleness timeout has run out by now are marked idle first. The result
// never decreases from one call to the next.
func (t *Tracker) Current(now mtime.Time) mtime.Time {
	if len(t.parts) == 0 {
		t.out = max(t.out, t.floor)
		return t.out
	}
	min, max := mtime.MaxTime, mtime.MinTime
	active := false
	for i := range t.parts {
		pt := &t.parts[i]
		if t.idle > 0 && !pt.idle && now-pt.lastActive >= t.idle {
			pt.idle = true
		}
		if pt.max == mtime.MinTime && pt.caughtUp {
			pt.idle = true // caught up, and never an event
		}
		w := t.partWatermark(pt)
		if w > max {
			max = w
		}
		if !pt.idle {
			active = true
			if w < min {
				min = w
			}
		}
	}
	w := min
	if !active {
		w = max
		if t.floor > w {
			w = t.floor
		}
	}
	if q := t.QuietFrom(); now >= q && now-t.quiet > w {
		w = now - t.quiet
	}
	if w > t.out {
		t.out = w
	}
	return t.out
}

func (t *Tracker) partWatermark(pt *partition) mtime.Time {
	if pt.max == mtime.MinTime {
		return mtime.MinTime
	}
	return pt.max.Add(-t.delay - 1)
}

// NextIdle is the earliest processing time at which a partition that is now
// active would turn idle, or MaxTime if none can (idleness off, or all idle).
func (t *Tracker) NextIdle() mtime.Time {
	next := mtime.MaxTime
	if t.idle <= 0 {
		return next
	}
	for i := range t.parts {
		if pt := &t.parts[i]; !pt.idle && pt.lastActive+t.idle < next {
			next = pt.lastActive + t.idle
		}
	}
	return next
}

// QuietFrom is the processing time from which the whole stream is quiet
// and the watermark follows the clock: Quiet after the last event or
// backlog of any partition. MaxTime if there is no quiet bound or no
// partition has had an event yet (there is no window to close).
func (t *Tracker) QuietFrom() mtime.Time {
	if t.quiet <= 0 || !t.seen {
		return mtime.MaxTime
	}
	return t.last.Add(t.quiet)
}

// PartitionWatermark is W_p of partition p: its largest event time - delay
// - 1 ms, or MinTime before its first event.
func (t *Tracker) PartitionWatermark(p int) mtime.Time {
	if p >= len(t.parts) {
		return mtime.MinTime
	}
	return t.partWatermark(&t.parts[p])
}

// Idle reports whether partition p is idle (as of the last Current).
func (t *Tracker) Idle(p int) bool { return p < len(t.parts) && t.parts[p].idle }

// TrackerState is the part of a Tracker a checkpoint keeps.
type TrackerState struct {
	Max        []mtime.Time
	LastActive []mtime.Time
	Idle       []bool
	Out        mtime.Time
}

// State returns a copy of the tracker's state.
func (t *Tracker) State() TrackerState {
	s := TrackerState{Out: t.out}
	for _, p := range t.parts {
		s.Max = append(s.Max, p.max)
		s.LastActive = append(s.LastActive, p.lastActive)
		s.Idle = append(s.Idle, p.idle)
	}
	return s
}

// Restore replaces the tracker's state.
func (t *Tracker) Restore(s TrackerState) {
	t.parts = t.parts[:0]
	for i := range s.Max {
		t.parts = append(t.parts, partition{max: s.Max[i], lastActive: s.LastActive[i], idle: s.Idle[i]})
		t.last = max(t.last, s.LastActive[i])
		t.seen = t.seen || s.Max[i] != mtime.MinTime
	}
	t.out = s.Out
}
