package engine

import (
	"fmt"
	"io"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/internal/join"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
)

// JoinSpec is an interval join's bounds (in milliseconds, each inclusive
// unless said exclusive), mode and allowed lateness, or a temporal join's
// (Temporal) or a window join's (Window) mode and allowed lateness: see
// join.Config.
type JoinSpec = join.Config

// JoinMode is what a join emits: JoinInner, JoinLeftOuter or JoinAnti.
type JoinMode = join.Mode

// The modes of a join.
const (
	// JoinInner emits the joined pairs.
	JoinInner = join.Inner
	// JoinLeftOuter emits the joined pairs and, once the watermark has
	// passed its interval, every left record that joined nothing.
	JoinLeftOuter = join.LeftOuter
	// JoinAnti emits only the left records that joined nothing, once the
	// watermark has passed their interval.
	JoinAnti = join.Anti
)

// ReasonTooLateForJoin is the reason of a record that came after the join
// let go of what it could have joined: at or behind the combined watermark
// (minus the allowed lateness).
const ReasonTooLateForJoin = "too_late_for_join"

// Joined is one output of a join: a left record and the right record it
// joined, or (Matched false) a left record that joined nothing within its
// interval (in a temporal join: found no version valid at its time), whose
// Right is the zero value. A temporal join's pair has the left record's
// time: the version's is at or before it.
type Joined[K comparable, L, R any] struct {
	Key   K
	Left  L
	Right R
	// LeftTime and RightTime are the records' event times (RightTime is
	// mtime.MinTime when unmatched); Time is the later of the two, the
	// output's event time (LeftTime when unmatched).
	LeftTime, RightTime, Time mtime.Time
	Matched                   bool
	// Watermark is the join's combined watermark when it was emitted.
	Watermark mtime.Time
}

// JoinLate is a record that came too late for the join (Reason
// ReasonTooLateForJoin): Side says which input it came on, "left" (Left is
// set) or "right" (Right is set).
type JoinLate[K comparable, L, R any] struct {
	Key       K
	Side      string
	Left      L
	Right     R
	Timestamp mtime.Time
	Watermark mtime.Time
	Reason    string
	// At is the processing time at which it was set aside.
	At mtime.Time
}

// JoinStatus is what a join stage holds and did, in a status report.
type JoinStatus struct {
	Name string `json:"name"`
	// Keys with records buffered; the records buffered on each side.
	Keys  int64 `json:"keys"`
	Left  int64 `json:"buffered_left"`
	Right int64 `json:"buffered_right"`
	// Pairs joined, left records that joined nothing (emitted by a left
	// outer or anti join, counted by an inner one too), records too late
	// on each side.
	Pairs     int64 `json:"pairs"`
	Unmatched int64 `json:"unmatched"`
	LateLeft  int64 `json:"late_left"`
	LateRight int64 `json:"late_right"`
}

// JoinConfig configures a join stage.
type JoinConfig[K comparable, L, R any] struct {
	// Name identifies the stage in checkpoints.
	Name string
	Spec JoinSpec
	// Watermark is the strategy of both inputs' watermarks, over the
	// partitions of both: the combined watermark is their minimum, without
	// the idle ones.
	Watermark watermark.Strategy
	// Parallelism is the number of parts the state is kept in, by key
	// group, as a window stage's operator instances keep theirs: a
	// checkpoint restores at any parallelism.
	Parallelism int
	// Hash puts keys in key groups; it must be stable from run to run.
	Hash func(K) uint64
	// Codec encodes keys, left records (as accumulators) and right
	// records (as results); required with checkpoints.
	Codec Codec[K, L, R]
	// State keeps the buffers and their expiries in this database
	// instead of memory, with its cache budget of them decoded in memory
	// (state.DB.CacheBudget); it needs Codec and Hash. Checkpoints are
	// the same on both backends: a job restores from either into either.
	State *state.DB
	// Deletes, in a temporal join (Spec.Temporal), says which right
	// records are deletions of their key's row; nil: none is.
	Deletes func(R) bool
	// Out and Late, when set, are the streams the stage's outputs go to.
	Out  *Stream[Joined[K, L, R]]
	Late *Stream[JoinLate[K, L, R]]
}

// Join is an event-time interval, temporal or window join of two keyed
// inputs of the source loop (see package join for its rules). It runs in the goroutine that
// feeds it: its inputs' elements and signals come from the source loop, in
// one order, so that a checkpoint barrier is aligned across both inputs as
// it comes, and the same input in the same order gives the same output.
//
// The left input calls Left, the right input Right, and the source loop's
// signals come through Signal, once (the signals of the right input, the
// same ones, are ignored: RightSignal).
type Join[K comparable, L, R any] struct {
	e        *Engine
	cfg      JoinConfig[K, L, R]
	p        *Participant
	op       *join.Op[K, L, R]
	d        *exec.Driver[K, sided[L, R]]
	declared bool
	ended    bool
	restored int

	// Out receives the joined pairs (and unmatched left records), Late
	// the records too late for the join.
	Out  *Stream[Joined[K, L, R]]
	Late *Stream[JoinLate[K, L, R]]
}

// sided is a record of either input.
type sided[L, R any] struct {
	side join.Side
	l    L
	r    R
}

// NewJoin builds a join stage, restoring its state if the job resumes.
func NewJoin[K comparable, L, R any](e *Engine, cfg JoinConfig[K, L, R]) (*Join[K, L, R], error) {
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 1
	}
	if err := cfg.Watermark.Validate(); err != nil {
		return nil, err
	}
	if e.Checkpointed() && (cfg.Codec == nil || cfg.Hash == nil) {
		return nil, fmt.Errorf("engine: join %s: checkpoints need a codec and a stable hash of the keys", cfg.Name)
	}
	if cfg.State != nil && (cfg.Codec == nil || cfg.Hash == nil) {
		return nil, fmt.Errorf("engine: join %s: a state database needs a codec and a stable hash of the keys", cfg.Name)
	}
	p, err := e.participant(cfg.Name, partJoin)
	if err != nil {
		return nil, err
	}
	j := &Join[K, L, R]{e: e, cfg: cfg, p: p, Out: cfg.Out, Late: cfg.Late}
	if j.Out == nil {
		j.Out = &Stream[Joined[K, L, R]]{}
	}
	if j.Late == nil {
		j.Late = &Stream[JoinLate[K, L, R]]{}
	}
	if j.op, err = join.New(cfg.Spec, j.emit); err != nil {
		return nil, fmt.Errorf("engine: join %s: %w", cfg.Name, err)
	}
	j.op.Deletes(cfg.Deletes)
	if cfg.State != nil {
		j.op.OnDisk(cfg.State, cfg.Name, cfg.Codec, cfg.Hash, exec.KeyGroups, cfg.State.CacheBudget())
	}
	j.d = exec.NewDriver[K, sided[L, R]]((*joinTarget[K, L, R])(j), cfg.Watermark, false)
	if clock := p.File("clock"); clock != nil {
		if err := j.restore(clock); err != nil {
			return nil, fmt.Errorf("cannot restore %s: %s: %w", e.resumed.Path, p.FileName("clock"), err)
		}
		j.declared = true
	}
	e.OnStatus(j.status)
	return j, nil
}

func (j *Join[K, L, R]) restore(clock []byte) error {
	n, err := restoreParted(j.e, j.p, clock, func(d *enc.Decoder) error {
		if err := j.d.RestoreState(d); err != nil {
			return err
		}
		return j.op.RestoreHeader(d)
	}, func(r io.Reader) error { return j.op.RestoreKeysFrom(r, j.cfg.Codec) })
	j.restored = n
	return err
}

// RestoredInstances is the parallelism of the checkpoint the stage was
// restored from, 0 when it started afresh.
func (j *Join[K, L, R]) RestoredInstances() int { return j.restored }

// Stats is what the join holds and did so far.
func (j *Join[K, L, R]) Stats() JoinStatus {
	st := j.op.Stats()
	l, r := j.op.Buffered()
	return JoinStatus{Name: j.cfg.Name, Keys: int64(j.op.Keys()), Left: l, Right: r,
		Pairs: st.Pairs, Unmatched: st.Unmatched, LateLeft: st.Late[join.Left], LateRight: st.Late[join.Right]}
}

func (j *Join[K, L, R]) status(s *Status) {
	st := j.Stats()
	s.Keys += st.Keys
	s.Joins = append(s.Joins, st)
}

// Watermark is the join's combined watermark.
func (j *Join[K, L, R]) Watermark() mtime.Time { return j.op.Watermark() }

// declare makes the two inputs' first partitions known to the watermark,
// so that neither moves it alone before the other has said anything (until
// it is idle).
func (j *Join[K, L, R]) declare() {
	if !j.declared {
		j.declared = true
		j.d.Tracker().AddPartition(1, j.d.Now())
	}
}

// Left sends a record of the left input, of its watermark partition part.
func (j *Join[K, L, R]) Left(part int, key K, ts mtime.Time, v L) {
	j.declare()
	j.d.Event(sidePart(part, join.Left), key, ts, sided[L, R]{side: join.Left, l: v})
}

// Right sends a record of the right input, of its watermark partition part.
func (j *Join[K, L, R]) Right(part int, key K, ts mtime.Time, v R) {
	j.declare()
	j.d.Event(sidePart(part, join.Right), key, ts, sided[L, R]{side: join.Right, r: v})
}

// Signal takes the source loop's signals (from the left input).
func (j *Join[K, L, R]) Signal(s Signal) {
	switch s.Kind {
	case Proc:
		j.d.Advance(s.Now)
		j.declare()
	case Watermark:
		j.d.Advance(s.Now)
		j.declare()
		if j.cfg.Watermark.Kind == watermark.Scripted {
			j.d.SetWatermark(s.Watermark)
		}
		return // the join's own watermark goes on instead
	case Barrier:
		j.barrier(s.Barrier)
	case End:
		if j.ended {
			return
		}
		j.ended = true
		j.d.End()
	case Stop:
		if j.ended {
			return
		}
		j.ended = true
	}
	j.Out.Signal(s)
	j.Late.Signal(s)
}

// RightSignal takes the right input's signals: the source loop's, which
// Signal takes already.
func (j *Join[K, L, R]) RightSignal(Signal) {}

// barrier acknowledges a checkpoint with the join's state: its clocks and
// combined watermark, and its buffers by key group, in as many parts as
// its parallelism. Buffers in a state database are written from it into
// a file a part, read a key at a time (the same bytes), never whole in
// memory.
func (j *Join[K, L, R]) barrier(b *CheckpointBarrier) {
	head := func(clock []byte) []byte {
		return j.op.AppendHeader(j.d.AppendState(clock))
	}
	if db := j.cfg.State; db != nil {
		ackPartedDB(b, j.p, j.cfg.Parallelism, head, db, "join "+j.cfg.Name, func(w io.Writer, keep func(int) bool) error {
			return j.op.WriteKeys(w, j.cfg.Codec, j.cfg.Hash, exec.KeyGroups, keep)
		}, j.op.Err)
		return
	}
	ackParted(b, j.p, j.cfg.Parallelism, head, func(keep func(int) bool) ([]byte, error) {
		b := j.op.AppendKeys(nil, j.cfg.Codec, j.cfg.Hash, exec.KeyGroups, keep)
		if err := j.op.Err(); err != nil {
			return nil, fmt.Errorf("join %s: %w", j.cfg.Name, err)
		}
		return b, nil
	})
}

// joinTarget is the join as the target of its watermark's driver.
type joinTarget[K comparable, L, R any] Join[K, L, R]

// Event implements exec.Target: a record on its way into the operator.
func (j *joinTarget[K, L, R]) Event(key K, ts, _ mtime.Time, v sided[L, R]) {
	if v.side == join.Left {
		j.op.AddLeft(key, ts, v.l)
	} else {
		j.op.AddRight(key, ts, v.r)
	}
}

// Aside implements exec.Target; a join sets nothing aside before it.
func (j *joinTarget[K, L, R]) Aside(key K, ts, now mtime.Time, v sided[L, R], _ string) {
	j.Event(key, ts, now, v)
}

// Proc implements exec.Target: the join has no processing-time timers.
func (j *joinTarget[K, L, R]) Proc(mtime.Time) {}

// Watermark implements exec.Target: the combined watermark moved.
func (j *joinTarget[K, L, R]) Watermark(w, now mtime.Time) {
	j.op.Advance(w)
	j.checkState()
	s := Signal{Kind: Watermark, Watermark: w, Now: now}
	j.Out.Signal(s)
	j.Late.Signal(s)
}

// End implements exec.Target: both inputs ended; every buffered left
// record that joined nothing is emitted (left outer and anti joins).
func (j *joinTarget[K, L, R]) End(mtime.Time) {
	j.op.Advance(mtime.MaxTime)
	j.checkState()
}

// checkState stops the job when the join's state database failed (what it
// emitted since the last checkpoint is not committed).
func (j *joinTarget[K, L, R]) checkState() {
	if err := j.op.Err(); err != nil {
		j.e.Fail(fmt.Errorf("join %s: %w", j.cfg.Name, err))
	}
}

func (j *Join[K, L, R]) emit(o *join.Out[K, L, R]) {
	switch o.Kind {
	case join.OutPair:
		j.Out.Push(Joined[K, L, R]{Key: o.Key, Left: o.Left, Right: o.Right, LeftTime: o.LeftTime, RightTime: o.RightTime,
			Time: max(o.LeftTime, o.RightTime), Matched: true, Watermark: o.Watermark})
	case join.OutUnmatched:
		j.Out.Push(Joined[K, L, R]{Key: o.Key, Left: o.Left, Right: o.Right, LeftTime: o.LeftTime, RightTime: mtime.MinTime,
			Time: o.LeftTime, Watermark: o.Watermark})
	case join.OutLate:
		l := JoinLate[K, L, R]{Key: o.Key, Side: o.Side.String(), Left: o.Left, Right: o.Right, Timestamp: o.LeftTime,
			Watermark: o.Watermark, Reason: ReasonTooLateForJoin, At: j.d.Now()}
		if o.Side == join.Right {
			l.Timestamp = o.RightTime
		}
		j.Late.Push(l)
	}
}

// JoinState is a join stage's state in a checkpoint.
type JoinState struct {
	Name string
	// Instances is the number of parts its buffers are kept in.
	Instances int
	Watermark mtime.Time
	// Keys with buffered records; Bytes the size of the stage's files.
	Keys, Bytes int64
}

// inspectJoin reads what a checkpoint holds of the join name.
func inspectJoin(c *checkpoint.Checkpoint, name string) (JoinState, error) {
	var wm mtime.Time
	ps, err := inspectParted(c, name, func(d *enc.Decoder) (err error) {
		wm, err = join.ReadWatermark(d)
		return err
	})
	return JoinState{Name: name, Instances: ps.instances, Watermark: wm, Keys: ps.keys, Bytes: ps.bytes}, err
}

// LeftTarget is the join's left input as the target of a head: a head of
// the left input's records (decoded, validated and accounted for as a
// window stage's head does) feeds the join through it, and passes the
// source loop's signals on to it.
func (j *Join[K, L, R]) LeftTarget() Target[K, L] {
	return &joinLeft[K, L, R]{joinInput[K, L, R]{j: j, left: true}}
}

// RightTarget is the join's right input as the target of a head; the
// signals it passes on are the left target's (the source loop's), so it
// ignores them.
func (j *Join[K, L, R]) RightTarget() Target[K, R] {
	return &joinRight[K, L, R]{joinInput[K, L, R]{j: j}}
}

// joinInput is one input of a join as a head's Target (joinLeft,
// joinRight). The watermark partitions of the two inputs are apart in the
// join's clock (the left input's partition p is 2p, the right input's
// 2p+1), so that each input holds the combined watermark back. A join
// keeps no windows: it has nothing to withdraw, and a head with versions
// is refused.
type joinInput[K comparable, L, R any] struct {
	j    *Join[K, L, R]
	left bool
}

type joinLeft[K comparable, L, R any] struct{ joinInput[K, L, R] }

type joinRight[K comparable, L, R any] struct{ joinInput[K, L, R] }

func (t *joinLeft[K, L, R]) Event(part int, key K, ts mtime.Time, v L)  { t.j.Left(part, key, ts, v) }
func (t *joinRight[K, L, R]) Event(part int, key K, ts mtime.Time, v R) { t.j.Right(part, key, ts, v) }

// Aside sets a record of the left input aside to the join's late output,
// with the head's reason: a record whose id the head can no longer check
// (beyond the de-duplication horizon), which the join must not take as
// new. The head counted it.
func (t *joinLeft[K, L, R]) Aside(part int, key K, ts mtime.Time, v L, reason string) {
	t.j.aside(JoinLate[K, L, R]{Key: key, Side: join.Left.String(), Left: v, Timestamp: ts, Reason: reason})
}

// Aside: see joinLeft.Aside.
func (t *joinRight[K, L, R]) Aside(part int, key K, ts mtime.Time, v R, reason string) {
	t.j.aside(JoinLate[K, L, R]{Key: key, Side: join.Right.String(), Right: v, Timestamp: ts, Reason: reason})
}

// aside sends a record a head set aside to the late output, in stream
// order, with the join's watermark and the processing time.
func (j *Join[K, L, R]) aside(l JoinLate[K, L, R]) {
	j.declare()
	l.Watermark, l.At = j.d.Watermark(), j.d.Now()
	j.Late.Push(l)
}

// Withdraw does nothing: a join's head has no versions (CanWithdraw).
func (t *joinLeft[K, L, R]) Withdraw(K, mtime.Time, L, bool) {}

// Withdraw: see joinLeft.Withdraw.
func (t *joinRight[K, L, R]) Withdraw(K, mtime.Time, R, bool) {}

// WatermarkPartition implements PartitionMapper.
func (t *joinInput[K, L, R]) WatermarkPartition(p int) int { return t.part(p) }

// part is the join's watermark partition of the input's partition p.
func (t *joinInput[K, L, R]) part(p int) int {
	if t.left {
		return sidePart(p, join.Left)
	}
	return sidePart(p, join.Right)
}

// sidePart is the join's watermark partition of partition p of an input:
// the two inputs' are apart, so that each holds the combined watermark
// back.
func sidePart(p int, side join.Side) int { return 2*p + int(side) }

func (t *joinInput[K, L, R]) Observe(part int, ts mtime.Time) {
	t.j.declare()
	t.j.d.Observe(t.part(part), ts)
}

func (t *joinInput[K, L, R]) AddPartition(part int, now mtime.Time) {
	t.j.declare()
	t.j.d.Tracker().AddPartition(t.part(part), now)
}

func (t *joinInput[K, L, R]) SetBacklog(part int, backlog int64, now mtime.Time) {
	t.j.d.Tracker().SetBacklog(t.part(part), backlog, now)
	t.j.d.Refresh()
}

func (t *joinInput[K, L, R]) SameWindows(a, b mtime.Time) bool { return false }
func (t *joinInput[K, L, R]) Open(mtime.Time) bool             { return false }
func (t *joinInput[K, L, R]) CanWithdraw() bool                { return false }
func (t *joinInput[K, L, R]) SetFloor(w mtime.Time)            { t.j.d.SetFloor(w) }
func (t *joinInput[K, L, R]) Advance(now mtime.Time)           { t.j.d.Advance(now) }
func (t *joinInput[K, L, R]) SetWatermark(w mtime.Time)        { t.j.d.SetWatermark(w) }
func (t *joinInput[K, L, R]) Watermark() mtime.Time            { return t.j.d.Watermark() }
func (t *joinInput[K, L, R]) Now() mtime.Time                  { return t.j.d.Now() }
func (t *joinInput[K, L, R]) Tracker() *watermark.Tracker      { return t.j.d.Tracker() }

// LiveStats are the input's records the join took, and those too late
// for it: the input's accounting, as a window stage's are.
func (t *joinInput[K, L, R]) LiveStats() WindowStats {
	st := t.j.op.Stats()
	if t.left {
		return WindowStats{Accepted: st.Left, TooLate: st.Late[join.Left]}
	}
	return WindowStats{Accepted: st.Right, TooLate: st.Late[join.Right]}
}

// Progress is the combined watermark and the keys with records buffered.
func (t *joinInput[K, L, R]) Progress() (mtime.Time, int64) {
	return t.j.d.Watermark(), int64(t.j.op.Keys())
}

// Push makes the input a Consumer[struct{}].
func (t *joinInput[K, L, R]) Push(struct{}) {}

// Signal passes the source loop's signals on to the join, from the left
// input's head; the right input's are the same ones.
func (t *joinInput[K, L, R]) Signal(s Signal) {
	if t.left {
		t.j.Signal(s)
	}
}
