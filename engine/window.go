package engine

import (
	"fmt"
	"slices"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Codec encodes a window stage's keys, accumulators and results for
// checkpoints and the Pebble backend. weir's front doors provide it.
type Codec[K comparable, A, O any] = exec.Codec[K, A, O]

// SetStore keeps the sets of an aggregate (SetUser) in the state database
// when a window stage has one: see exec.SetStore.
type SetStore = exec.SetStore

// SetSource reads the sets a checkpoint holds for a restored key.
type SetSource = exec.SetSource

// SetUser is an optional interface of an aggregate whose accumulators hold
// sets that grow with their input: see exec.SetUser.
type SetUser[A any] = exec.SetUser[A]

// Absorber is an optional interface of an aggregate that merges an
// accumulator the runtime drops by taking it over: see exec.Absorber.
type Absorber[A any] = exec.Absorber[A]

// MergedResulter is an optional interface of an aggregate that makes the
// result of a sliding window's slices without merging them: see
// exec.MergedResulter.
type MergedResulter[A, O any] = exec.MergedResulter[A, O]

// WindowConfig configures a window stage.
type WindowConfig[K comparable, T, A, O any] struct {
	// Name identifies the stage in checkpoints ("window", "stage-2").
	Name      string
	Strategy  window.Strategy
	Watermark watermark.Strategy
	// Agg is the aggregate function; NewAgg, when set, gives each operator
	// instance one of its own (one that keeps free lists).
	Agg    aggregate.Func[T, A, O]
	NewAgg func() aggregate.Func[T, A, O]
	// Parallelism is the number of operator instances (at least 1).
	Parallelism int
	BatchSize   int
	// Hash puts keys in key groups; it must be stable from run to run.
	Hash func(K) uint64
	// Codec encodes state; required with checkpoints or State.
	Codec Codec[K, A, O]
	// RestoreCodec, when set, reads the checkpoint the job resumes from
	// instead of Codec: its state was written by a job with other
	// aggregates, or in an earlier format (see Engine.Restore).
	RestoreCodec Codec[K, A, O]
	// State keeps windows and timers in this database instead of memory.
	State *state.DB
	// Panes and Late, when set, are the streams the stage's outputs go to
	// (a front door that handed them out before the stage was built).
	Panes *Stream[window.Pane[K, O]]
	Late  *Stream[window.LateEvent[K, T]]
}

// Window is a windowed aggregation: its clocks (processing time and
// watermark, per partition) on the side of its input, its operator instances
// in goroutines of their own, and its outputs, panes and too-late events,
// delivered in order from one goroutine.
//
// Its input side is called from the goroutine of its upstream: the source
// loop (through a head) or the stage before it. As a Consumer of an
// upstream's signals it follows that upstream's processing time and, with a
// scripted watermark, its watermark.
type Window[K comparable, T, A, O any] struct {
	e     *Engine
	cfg   WindowConfig[K, T, A, O]
	p     *Participant
	op    *Operator[K, T, A, O]
	ended bool
	// restored is the number of operator instances of the checkpoint the
	// stage was restored from, 0 when it started afresh.
	restored int
	// closed is the end before which an earlier run closed every window
	// (exec.WindowOp.Closed): no window before it is open.
	closed mtime.Time

	// Panes receives the panes (retractions included), Late the events too
	// late for all of their windows.
	Panes *Stream[window.Pane[K, O]]
	Late  *Stream[window.LateEvent[K, T]]

	// merge side
	bars    []*exec.Barrier
	acked   chan struct{} // closed when the last barrier's snapshots are acknowledged
	stats   WindowStats
	latency histogram // on-time panes: wall clock at the sinks - firing
}

// stageBarrier travels through the operator instances with a checkpoint
// barrier: the stage's clocks as they were when it entered.
type stageBarrier struct {
	b      *CheckpointBarrier
	driver []byte
}

// NewWindow builds a window stage, restoring its state if the job resumes.
func NewWindow[K comparable, T, A, O any](e *Engine, cfg WindowConfig[K, T, A, O]) (*Window[K, T, A, O], error) {
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 1
	}
	if err := cfg.Strategy.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Watermark.Validate(); err != nil {
		return nil, err
	}
	if (e.Checkpointed() || cfg.State != nil) && (cfg.Codec == nil || cfg.Hash == nil) {
		return nil, fmt.Errorf("engine: window stage %s: checkpoints need a codec and a stable hash of the keys", cfg.Name)
	}
	p, err := e.participant(cfg.Name, partWindow)
	if err != nil {
		return nil, err
	}
	w := &Window[K, T, A, O]{e: e, cfg: cfg, p: p, Panes: cfg.Panes, Late: cfg.Late}
	if w.Panes == nil {
		w.Panes = &Stream[window.Pane[K, O]]{}
	}
	if w.Late == nil {
		w.Late = &Stream[window.LateEvent[K, T]]{}
	}
	xc := exec.Config[K, T, A, O]{
		Strategy: cfg.Strategy, Agg: cfg.Agg, NewAgg: cfg.NewAgg, Parallelism: cfg.Parallelism,
		BatchSize: cfg.BatchSize, Hash: cfg.Hash, Codec: cfg.Codec, RestoreCodec: cfg.RestoreCodec, State: cfg.State,
		Live: e.Live(), Progress: true, Emit: w.emit,
		// A stage whose windows cannot carry over starts them afresh,
		// keeping its clocks and counts (DropState).
		DropRestored: e.restore.DroppedPart(p.name),
	}
	var driverState []byte
	if files := p.Restored(); len(files) > 0 {
		driverState = p.File("clock")
		d := enc.NewDecoder(driverState)
		xc.Step = d.Uvarint()
		n := d.Count(exec.KeyGroups)
		w.restored = n
		for i := range n {
			op := p.File(fmt.Sprintf("op-%d", i))
			if op == nil {
				return nil, fmt.Errorf("%s: its state %s is missing", e.resumed.Path, p.FileName(fmt.Sprintf("op-%d", i)))
			}
			xc.Restore = append(xc.Restore, op)
			dir, err := e.materialize(p, fmt.Sprintf("op-%d.db.", i))
			if err != nil {
				return nil, fmt.Errorf("cannot restore %s: %w", e.resumed.Path, err)
			}
			defer removeDir(dir)
			xc.RestoreDirs = append(xc.RestoreDirs, dir)
		}
		if d.Err() != nil {
			return nil, fmt.Errorf("%s: %s is corrupt", e.resumed.Path, p.FileName("clock"))
		}
		driverState = driverState[len(driverState)-d.Len():]
	}
	w.op = newOperator(xc, cfg.Watermark, nil)
	if err := w.op.r.Err(); err != nil {
		return nil, fmt.Errorf("cannot restore %s: %w", e.resumed.Path, err)
	}
	w.closed = mtime.MinTime
	for _, op := range w.op.r.Ops() {
		w.closed = max(w.closed, op.Closed())
	}
	if driverState != nil {
		if err := w.op.d.RestoreState(enc.NewDecoder(driverState)); err != nil {
			return nil, fmt.Errorf("cannot restore %s: %s: %w", e.resumed.Path, p.FileName("clock"), err)
		}
	}
	e.addStage(w)
	e.OnStatus(w.status)
	return w, nil
}

// RestoredInstances is the number of operator instances of the checkpoint
// the stage was restored from (its parallelism then), 0 when it started
// afresh.
func (w *Window[K, T, A, O]) RestoredInstances() int { return w.restored }

// LiveStats is what the operators did so far, as they last published it.
func (w *Window[K, T, A, O]) LiveStats() WindowStats { return w.op.r.LiveStats() }

// status adds the stage's windows, panes and latency to a report.
func (w *Window[K, T, A, O]) status(s *Status) {
	st := w.op.r.LiveStats()
	if s.WatermarkDelay == 0 && w.cfg.Watermark.Kind == watermark.Bounded {
		s.WatermarkDelay = int64(w.cfg.Watermark.Delay)
	}
	s.OpenWindows += st.Open
	s.Keys += st.Keys
	if s.PanesByTiming == nil {
		s.PanesByTiming = map[string]int64{}
	}
	for i, n := range st.PanesByTiming {
		s.PanesByTiming[window.Timing(i).String()] += n
	}
	w.latency.add(&s.PaneLatency)
}

// Event sends an event with event time ts, of input partition part, at the
// current processing time.
func (w *Window[K, T, A, O]) Event(part int, key K, ts mtime.Time, v T) {
	w.op.d.Event(part, key, ts, v)
}

// Observe tells the watermark of an event that is not sent on (a duplicate
// still shows that its partition is alive and how far it got).
// Aside implements Target.
func (w *Window[K, T, A, O]) Aside(part int, key K, ts mtime.Time, v T, reason string) {
	w.op.d.Aside(part, key, ts, v, reason)
}

// Withdraw implements Target: the event is taken back out of its windows
// (exec.WindowOp.Withdraw), in stream order.
func (w *Window[K, T, A, O]) Withdraw(key K, ts mtime.Time, v T, fire bool) {
	w.op.d.Withdraw(key, ts, v, fire)
}

// SameWindows implements Target: whether events at a and b belong to the
// same windows.
func (w *Window[K, T, A, O]) SameWindows(a, b mtime.Time) bool {
	as := w.cfg.Strategy.Assigner
	return slices.Equal(as.Assign(a, nil), as.Assign(b, nil))
}

// Open implements Target: whether every window of an event at ts can
// still take it (or give it back), the watermark being where the stage's
// input last emitted it.
func (w *Window[K, T, A, O]) Open(ts mtime.Time) bool {
	s := w.cfg.Strategy
	limit := max(w.op.d.Watermark().Add(-s.AllowedLateness), w.closed)
	for _, x := range s.Assigner.Assign(ts, nil) {
		if x.MaxTimestamp() <= limit {
			return false
		}
	}
	return true
}

// CanWithdraw implements Target: whether the aggregate can take an event
// back out (aggregate.Retracter) and the windows are not sessions (a
// session would keep the extent a withdrawn event gave it).
func (w *Window[K, T, A, O]) CanWithdraw() bool {
	ops := w.op.r.Ops()
	// A composite trigger may finish a window, which then takes nothing,
	// a withdrawal neither.
	return len(ops) > 0 && ops[0].CanWithdraw() && !w.cfg.Strategy.Assigner.Merging() && w.cfg.Strategy.Trigger.Composite == nil
}

// Observe implements Target.
func (w *Window[K, T, A, O]) Observe(part int, ts mtime.Time) { w.op.d.Observe(part, ts) }

// AddPartition declares partition part before its first event, at processing
// time now, so that it holds the watermark back until it is idle.
func (w *Window[K, T, A, O]) AddPartition(part int, now mtime.Time) {
	w.op.d.Tracker().AddPartition(part, now)
}

// SetBacklog passes a source's report on partition part to the watermark
// (see watermark.Tracker.SetBacklog) and has it looked at again.
func (w *Window[K, T, A, O]) SetBacklog(part int, backlog int64, now mtime.Time) {
	w.op.d.Tracker().SetBacklog(part, backlog, now)
	w.op.d.Refresh()
}

// SetFloor gives the watermark the floor it follows while every partition
// is idle (see watermark.Tracker.SetFloor): a group's watermark.
func (w *Window[K, T, A, O]) SetFloor(floor mtime.Time) { w.op.d.SetFloor(floor) }

// Advance moves processing time to now (never back), firing first the
// periodic watermarks, idleness timeouts and processing-time timers due by
// then.
func (w *Window[K, T, A, O]) Advance(now mtime.Time) { w.op.d.Advance(now) }

// SetWatermark moves a scripted or perfect watermark to wm.
func (w *Window[K, T, A, O]) SetWatermark(wm mtime.Time) { w.op.d.SetWatermark(wm) }

// Watermark is the last watermark the stage's input emitted.
func (w *Window[K, T, A, O]) Watermark() mtime.Time { return w.op.d.Watermark() }

// Now is the stage's processing time.
func (w *Window[K, T, A, O]) Now() mtime.Time { return w.op.d.Now() }

// Tracker is the per-partition state of a bounded watermark.
func (w *Window[K, T, A, O]) Tracker() *watermark.Tracker { return w.op.d.Tracker() }

// Progress is the operator's watermark and open windows as of its last
// batch; safe from any goroutine.
func (w *Window[K, T, A, O]) Progress() (mtime.Time, int64) { return w.op.r.Progress() }

// Stats is what the operators did; call it once the stage has ended or
// stopped.
func (w *Window[K, T, A, O]) Stats() WindowStats { return w.stats }

// DroppedKeys is the number of keys whose windows the restore left behind:
// their layout changed, and the job said to start them afresh
// (Checkpointing.DropState).
func (w *Window[K, T, A, O]) DroppedKeys() int64 { return w.op.r.DroppedKeys() }

// RestoredKeys is the number of keys with state the stage restored from the
// checkpoint the job resumes from; call it before Run.
func (w *Window[K, T, A, O]) RestoredKeys() int64 {
	if w.e.running.Load() {
		return 0
	}
	return w.op.r.Stats().Keys
}

// Signal implements Consumer[struct{}]: the upstream's signals.
func (w *Window[K, T, A, O]) Signal(s Signal) {
	switch s.Kind {
	case Proc:
		w.op.d.Advance(s.Now)
	case Watermark:
		w.op.d.Advance(s.Now)
		if w.cfg.Watermark.Kind == watermark.Scripted {
			w.op.d.SetWatermark(s.Watermark)
		}
	case Flush:
		w.op.r.Flush()
	case Barrier:
		st := enc.AppendUvarint(nil, w.op.r.Step())
		st = enc.AppendUvarint(st, uint64(w.cfg.Parallelism))
		st = w.op.d.AppendState(st)
		w.op.r.Barrier(&stageBarrier{b: s.Barrier, driver: st})
	case End:
		w.end(false)
	case Stop:
		w.end(true)
	}
}

// Push makes Window a Consumer of anything whose elements it ignores.
func (w *Window[K, T, A, O]) Push(struct{}) {}

// end ends (or stops) the operators, waits for them, and passes the signal
// on to the stage's consumers.
func (w *Window[K, T, A, O]) end(stop bool) {
	if w.ended {
		return
	}
	w.ended = true
	if stop {
		w.op.r.Stop()
	} else {
		w.op.d.End()
	}
	if err := w.op.r.Wait(); err != nil {
		w.e.Fail(err)
	}
	if w.acked != nil {
		<-w.acked // every barrier the operators took is acknowledged
	}
	w.stats = w.op.r.Stats()
	s := Signal{Kind: End}
	if stop {
		s.Kind = Stop
	}
	w.Panes.Signal(s)
	w.Late.Signal(s)
}

func (w *Window[K, T, A, O]) abort() { w.op.r.Abort() }

// ack acknowledges a checkpoint barrier with the operators' snapshots. A
// snapshot written beside its operator may not be complete yet: then the
// acknowledgement waits for it in a goroutine of its own, after the
// acknowledgement of the barrier before, so that checkpoints complete in
// order, while the stage goes on.
func (w *Window[K, T, A, O]) ack(sb *stageBarrier, bars []*exec.Barrier) {
	send := func() {
		files := []File{{Name: w.p.FileName("clock"), Data: sb.driver}}
		var err error
		for i, bo := range bars {
			bo.Wait()
			if bo.Snapshot != nil {
				fs, serr := sb.b.snapshotFiles(w.p, fmt.Sprintf("op-%d.db.", i), bo.Snapshot)
				if serr != nil && err == nil {
					err = serr
				}
				files = append(files, fs...)
			}
			if bo.Err != nil && err == nil {
				err = bo.Err
			}
			files = append(files, File{Name: w.p.FileName(fmt.Sprintf("op-%d", i)), Data: bo.State})
		}
		if err != nil {
			sb.b.Fail(w.p, err)
			return
		}
		sb.b.Ack(w.p, files...)
	}
	ready := true
	if w.acked != nil {
		select {
		case <-w.acked:
		default:
			ready = false
		}
	}
	for _, bo := range bars {
		ready = ready && bo.Ready()
	}
	if ready {
		send()
		return
	}
	prev, done := w.acked, make(chan struct{})
	w.acked = done
	go func() {
		if prev != nil {
			<-prev
		}
		send()
		close(done)
	}()
}

// emit runs in the runner's merging goroutine.
func (w *Window[K, T, A, O]) emit(outs []exec.Out[K, T, O]) error {
	now := mtime.MinTime
	if w.e.Live() {
		now = mtime.Now()
	}
	for i := range outs {
		o := &outs[i]
		switch o.Kind {
		case exec.OutPane:
			if now != mtime.MinTime && o.Pane.Timing == window.OnTime && !o.Pane.Retract {
				w.latency.observe(float64(now - o.Pane.EmittedAt))
			}
			w.Panes.Push(o.Pane)
		case exec.OutLate:
			w.Late.Push(o.Late)
		case exec.OutProgress:
			if o.Pane.Final {
				continue // the end: passed on once the operators are done
			}
			s := Signal{Kind: Watermark, Watermark: o.Pane.Watermark, Now: o.Pane.EmittedAt}
			w.Panes.Signal(s)
			w.Late.Signal(s)
		case exec.OutBarrier:
			bo := o.Barrier
			if w.bars == nil {
				w.bars = make([]*exec.Barrier, bo.Of)
			}
			w.bars[bo.Instance] = bo
			if bo.Instance != bo.Of-1 {
				continue
			}
			sb := bo.Tag.(*stageBarrier)
			w.ack(sb, w.bars)
			w.bars = nil
			s := Signal{Kind: Barrier, Barrier: sb.b}
			w.Panes.Signal(s)
			w.Late.Signal(s)
		}
	}
	if w.e.Live() {
		w.Panes.Signal(Signal{Kind: Flush})
		w.Late.Signal(Signal{Kind: Flush})
	}
	return w.e.Err()
}
