// Package exec is weir's runtime: the window operator that executes a
// window.Strategy over keyed events, the timers it needs, and the stages that
// move batches of events between goroutines.
//
// Everything here is driven by explicit calls (an event, a watermark advance,
// a processing-time advance), never by reading a clock, so that a replay of a
// recorded stream and a test produce exactly the same results as a live run
// with the same arrivals.
package exec

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// none marks an unset timer or instant in window state.
const none = mtime.MinTime

// OutKind tells what an Out carries.
type OutKind uint8

const (
	// OutPane is a pane (or a retraction).
	OutPane OutKind = iota
	// OutLate is an event too late for all of its windows, or for some
	// of them (Late.Reason says which).
	OutLate
	// OutBarrier is an instance's snapshot at a checkpoint barrier.
	OutBarrier
	// OutProgress says that every output of its step has been emitted and
	// where the operator's clocks stand after it (Config.Progress): the
	// watermark in Pane.Watermark, processing time in Pane.EmittedAt, and
	// Pane.Final set after the end of the input.
	OutProgress
)

// Out is one output of the window operator, with the keys that order it.
//
// Outputs are ordered by Step (the input item that caused them), then Phase
// (panes and late events, then progress, then barriers), then At (the timer
// instant, for outputs of timers; none for outputs of an event), then Seq
// (the creation sequence of the window). That order does not depend on how
// keys are spread over parallel instances, so merging the outputs of several
// instances by (Step, Phase, At, Seq) gives the same bytes as one instance.
type Out[K comparable, T, O any] struct {
	Step    uint64
	Phase   uint8
	At      mtime.Time
	Seq     uint64
	Kind    OutKind
	Pane    window.Pane[K, O]
	Late    window.LateEvent[K, T]
	Barrier *Barrier
}

// Less reports whether o sorts before p.
func (o *Out[K, T, O]) Less(p *Out[K, T, O]) bool {
	if o.Step != p.Step {
		return o.Step < p.Step
	}
	if o.Phase != p.Phase {
		return o.Phase < p.Phase
	}
	if o.At != p.At {
		return o.At < p.At
	}
	return o.Seq < p.Seq
}

// Stats counts what the operator did. Every event given to Event is counted
// exactly once in Accepted or TooLate.
type Stats struct {
	// Accepted events were added to at least one window.
	Accepted int64
	// TooLate events were too late for every window they belong to.
	TooLate int64
	// LateAccepted events (a subset of Accepted) were added to a window the
	// watermark had already passed: they are late, but within the allowed
	// lateness.
	LateAccepted int64
	// PartlyLate events (a subset of Accepted) were added to some of their
	// windows and too late for others (a sliding window's earlier ones):
	// each is also emitted as a late event of
	// window.ReasonLateForSomeWindows, so that every event-to-window
	// membership is in a pane or in the late events.
	PartlyLate int64
	// Panes counts panes emitted, retractions included; Fired counts
	// windows that emitted at least one pane.
	Panes int64
	Fired int64
	// Windows counts windows created; Open is how many hold state now.
	Windows int64
	Open    int64
	// TriggerFinished events (a subset of TooLate, or of PartlyLate when
	// other windows took them) came for a window whose composite trigger
	// had finished: each is a late event of window.ReasonTriggerFinished.
	TriggerFinished int64
	// Dropped counts too-late drops per window, across keys. An event of a
	// sliding window too late for some of its windows is counted in each of
	// those, even when it was added to the others. It keeps MaxDropped
	// windows at most: the drops of older ones are summed under one entry,
	// EarlierWindows(end), so that it stays bounded however many windows
	// get too-late events (a session of its own each).
	Dropped map[window.Window]int64
	// Keys is the number of keys holding state.
	Keys int64
	// PanesByTiming counts panes (retractions included) by timing: early,
	// on time, late.
	PanesByTiming [3]int64
	// Withdrawn counts the events taken back out of their windows
	// (Withdraw): the earlier versions of revised events. WithdrawMissed
	// counts those that could not be, a window of theirs being closed
	// (the caller checks before with the watermark, the allowed lateness
	// and Closed: a job leaves none). Both are
	// this run's: a checkpoint does not keep them (the head that withdraws
	// counts its revisions).
	Withdrawn, WithdrawMissed int64
}

// liveStats is what an operator instance publishes of its Stats after each
// batch, for metrics read from other goroutines while it runs.
type liveStats struct {
	accepted, tooLate, lateAccepted, partlyLate, panes, fired, windows, keys atomic.Int64
	triggerFinished                                                          atomic.Int64
	byTiming                                                                 [3]atomic.Int64
}

func (op *WindowOp[K, T, A, O]) publish() {
	l := &op.live
	l.accepted.Store(op.Accepted)
	l.tooLate.Store(op.TooLate)
	l.lateAccepted.Store(op.LateAccepted)
	l.partlyLate.Store(op.PartlyLate)
	l.triggerFinished.Store(op.TriggerFinished)
	l.panes.Store(op.Panes)
	l.fired.Store(op.Fired)
	l.windows.Store(op.Windows)
	l.keys.Store(int64(op.state.len()))
	for i := range op.byTiming {
		l.byTiming[i].Store(op.byTiming[i])
	}
	op.openGauge.Store(op.Open)
}

type win[A, O any] struct {
	w   window.Window
	seq uint64
	acc A
	// more is what only early firings, throttled late firings and
	// retractions need: nil in a window that has needed none of it, as
	// most windows of most jobs, which hold 8 bytes here instead of 48.
	more *winMore[O]
	// The revision and the flags last, packed into one word (every byte of
	// a window is a byte of every key). A revision past 2^31 would take a
	// firing a second for 68 years; a checkpoint that says so is refused.
	rev         int32
	late        bool // the watermark has passed End-1: on-time fired or created late
	latePending bool
	hasLast     bool
	lastTiming  window.Timing
}

// winMore is the part of a window's state that only some triggers and
// modes use.
type winMore[O any] struct {
	n     int64      // elements since the last firing, counted only for early firings and late counts
	early mtime.Time // the pending early firing
	// late firings (throttled)
	lateAt   mtime.Time
	lastLate mtime.Time
	// the last pane, for retractions
	last O
	// trg is the state of a composite trigger (trigger.Program).
	trg *trgState
}

// trgState is a window's state of a composite trigger, with the shape of
// the trigger (trigger.Program.Shape) it is the state of, for a restore
// into a job whose trigger changed.
type trgState struct {
	shape uint64
	s     []trigger.NodeState
}

// What a window without more has: no element counted, no firing pending,
// no pane to retract.
func (st *win[A, O]) count() int64 {
	if st.more == nil {
		return 0
	}
	return st.more.n
}

func (st *win[A, O]) earlyAt() mtime.Time {
	if st.more == nil {
		return none
	}
	return st.more.early
}

func (st *win[A, O]) lateFireAt() mtime.Time {
	if st.more == nil {
		return none
	}
	return st.more.lateAt
}

func (st *win[A, O]) lastLateAt() mtime.Time {
	if st.more == nil {
		return none
	}
	return st.more.lastLate
}

func (st *win[A, O]) lastPane() O {
	if st.more == nil {
		var zero O
		return zero
	}
	return st.more.last
}

// newMore is a winMore with nothing pending.
func newMore[O any]() *winMore[O] {
	return &winMore[O]{early: none, lateAt: none, lastLate: none}
}

// moreOf is st's more, taken from the operator's spares, or cut from a
// slab of them, when it has none.
func (op *WindowOp[K, T, A, O]) moreOf(st *win[A, O]) *winMore[O] {
	if st.more == nil {
		if n := len(op.freeMore); n > 0 {
			st.more = op.freeMore[n-1]
			op.freeMore = op.freeMore[:n-1]
		} else {
			if len(op.moreSlab) == 0 {
				op.moreSlab = make([]winMore[O], moreSlab)
			}
			st.more = &op.moreSlab[0]
			op.moreSlab = op.moreSlab[1:]
			*st.more = winMore[O]{early: none, lateAt: none, lastLate: none}
		}
	}
	return st.more
}

// moreSlab is how many winMores an operator instance allocates at once.
const moreSlab = 256

// maxFreeMore is how many spare winMores an operator instance keeps.
const maxFreeMore = 4096

// dropMore gives st's more back to the operator's spares, st being gone.
func (op *WindowOp[K, T, A, O]) dropMore(st *win[A, O]) {
	if m := st.more; m != nil && len(op.freeMore) < maxFreeMore {
		*m = winMore[O]{early: none, lateAt: none, lastLate: none}
		op.freeMore = append(op.freeMore, m)
	}
	st.more = nil
}

// counted counts an element of st, for the triggers that fire early by
// count or when an element came since the last firing.
func (op *WindowOp[K, T, A, O]) counted(st *win[A, O]) {
	if op.early || op.prog != nil || (st.late && op.lateCount) {
		op.moreOf(st).n++
	}
}

type keyState[A, O any] struct {
	wins []win[A, O]
	// inline is where wins starts: most keys of most jobs have one window
	// (a tumbling window, a session), and keeping it in the same
	// allocation as the key state saves a cache miss per event. A key with
	// more moves them to an array of the operator's (WindowOp.addWin),
	// and back here when one is left (WindowOp.remove). One, not two: the
	// window is a sixth of a key's memory, a key holds two only while its
	// last window waits for the watermark or with sliding windows, and
	// every key holds inline whole.
	inline [1]win[A, O]
	// slices hold the accumulators of sliding windows when the operator
	// slices: each event is added to the one slice (of gcd(size, slide))
	// that contains it, and a window's value is the merge of its slices.
	// Sorted by start.
	slices []slice[A]
}

type slice[A any] struct {
	start mtime.Time
	acc   A
}

func (ks *keyState[A, O]) find(w window.Window) int {
	for i := range ks.wins {
		if ks.wins[i].w == w {
			return i
		}
	}
	return -1
}

// WindowOp executes a windowing strategy and an aggregate function over keyed
// events. It is single-threaded: a parallel job runs one WindowOp per key
// partition.
//
// Calls must come in input order: Event, AdvanceProc, AdvanceWatermark and End,
// each with a step number larger than the previous one and a processing time
// that does not go back. Outputs accumulate until Take.
type WindowOp[K comparable, T, A, O any] struct {
	strategy  window.Strategy
	trg       trigger.Trigger
	agg       aggregate.Func[T, A, O]
	lateness  mtime.Time
	merging   bool
	gap       mtime.Time
	slice     mtime.Time // slice length when sliding windows share slices, else 0
	tumble    window.Tumbling
	early     bool                  // the trigger fires early
	lateCount bool                  // the trigger fires late panes by count
	prog      *trigger.Program      // the composite trigger, if it is one
	trgShape  uint64                // prog.Shape()
	tctx      trigger.Ctx           // its context, reused
	trgParts  [][]trigger.NodeState // the states of the sessions a merge merges
	release   func(A)               // the aggregate's Releaser, if it has one
	absorb    func(A, A) A          // the aggregate's Absorber, if it has one
	mem       *memStore[K, A, O]    // state, when in memory (a direct call in the hot path)
	// events and timers look ahead in mem over the events of a batch (see
	// Runner.instance) and the timers due.
	events, timers lookahead[K, A, O]
	pebble         *pebbleStore[K, A, O] // state, when in a state database
	evKeys         []K                   // the keys of a batch's events, for the Pebble store's prefetch
	db             *state.DB
	// settle is the aggregate's SetUser.Settle, if it keeps sets; sets,
	// with a state database, is the store it keeps them in.
	settle func(A, SetSource) (A, error)
	sets   *pebbleSets
	// mergedResult is the aggregate's MergedResulter, if it has one: a
	// sliding window's result of its slices (parts), without their merge.
	mergedResult func([]A) O
	parts        []A
	// retract is the aggregate's Retracter, if it has one; withdrawing
	// says that the event at hand is taken out of its windows (Withdraw).
	retract     func(A, T) A
	withdrawing bool

	wm        mtime.Time
	lateLimit mtime.Time // max(wm - lateness, closed); see tooLate
	// closed is the end before which an earlier run closed every window (a
	// restored late limit): a longer allowed lateness opens none again.
	closed mtime.Time
	now    mtime.Time
	step   uint64

	state keyStore[K, A, O]
	et    timerStore[K] // event time: on-time firings and cleanups
	pt    timerStore[K] // processing time: early and held-back late firings
	wbuf  []window.Window
	ibuf  []int
	// freeWins are arrays of windows kept from keys that went back to one
	// window, for keys that outgrow theirs (addWin); arrays is how many
	// keys hold their windows in arrays, arraysPeak the most at once.
	freeWins           [][]win[A, O]
	arrays, arraysPeak int
	freeMore           []*winMore[O]
	moreSlab           []winMore[O]

	out       []Out[K, T, O]
	byTiming  [3]int64
	snapHint  int          // size of the last snapshot, to allocate the next at once
	spill     func()       // called as outputs pile up during one call; may take them
	aborted   *atomic.Bool // set by the runner: drop the work at hand
	openGauge atomic.Int64 // Open, published for progress reports
	live      liveStats    // Stats, published after every batch
	Stats
}

// NewWindowOp returns an operator for a validated strategy.
func NewWindowOp[K comparable, T, A, O any](s window.Strategy, agg aggregate.Func[T, A, O]) *WindowOp[K, T, A, O] {
	op := &WindowOp[K, T, A, O]{
		strategy:  s,
		trg:       s.Trigger,
		agg:       agg,
		lateness:  s.AllowedLateness,
		merging:   s.Assigner.Merging(),
		wm:        mtime.MinTime,
		lateLimit: mtime.MinTime,
		closed:    mtime.MinTime,
		now:       mtime.MinTime,
		state:     newMemStore[K, A, O](),
		et:        newTimerQueue[K](),
		pt:        newTimerQueue[K](),
	}
	if sa, ok := s.Assigner.(window.Session); ok {
		op.gap = sa.Gap
	}
	op.tumble, _ = s.Assigner.(window.Tumbling)
	op.early = s.Trigger.HasEarly()
	op.lateCount = s.Trigger.Late == trigger.LateCount && !s.Trigger.FinalOnly
	if c := s.Trigger.Composite; c != nil {
		op.prog = trigger.Compile(*c, op.merging)
		op.trgShape = op.prog.Shape()
		op.early, op.lateCount = false, false
	}
	if r, ok := agg.(aggregate.Releaser[A]); ok {
		op.release = r.Release
	}
	if a, ok := agg.(Absorber[A]); ok {
		op.absorb = a.Absorb
	}
	if m, ok := agg.(MergedResulter[A, O]); ok {
		op.mergedResult = m.MergedResult
	}
	if u, ok := agg.(SetUser[A]); ok {
		op.settle = u.Settle
	}
	if r, ok := agg.(aggregate.Retracter[T, A]); ok {
		op.retract = r.Retract
	}
	op.mem = op.state.(*memStore[K, A, O])
	// Sliding windows share work through slices, except in discarding mode,
	// where a pane holds only what came since that window's own last firing.
	if sl, ok := s.Assigner.(window.Sliding); ok && sl.Size > sl.Slide && s.Mode != window.Discarding && op.prog == nil {
		op.slice = gcd(sl.Size, sl.Slide)
	}
	op.Dropped = map[window.Window]int64{}
	return op
}

// usePebble keeps the operator's keys and timers in a state database.
func (op *WindowOp[K, T, A, O]) usePebble(db *state.DB, inst int, c Codec[K, A, O], hash func(K) uint64, cacheLimit int64) {
	w := &pebbleWriter{db: db.DB}
	op.pebble = newPebbleStore(w, inst, c, hash, cacheLimit)
	op.state, op.db = op.pebble, db
	op.mem = nil
	op.et = newPebbleTimers[K](w, inst, 'e', c)
	op.pt = newPebbleTimers[K](w, inst, 'p', c)
	// An aggregate whose accumulators hold sets keeps them in the
	// database too: in memory they would grow past any budget.
	if u, ok := op.agg.(SetUser[A]); ok {
		op.sets = newPebbleSets(db.DB, inst)
		op.pebble.sets = op.sets
		u.UseSets(op.sets)
	}
}

// StoreErr is the first failure of the operator's state storage.
func (op *WindowOp[K, T, A, O]) StoreErr() error {
	for _, e := range []error{op.state.error(), op.et.error(), op.pt.error()} {
		if e != nil {
			return e
		}
	}
	if op.sets != nil {
		return op.sets.err
	}
	return nil
}

// Close releases the operator's state storage.
func (op *WindowOp[K, T, A, O]) Close() error {
	var first error
	if op.sets != nil {
		op.sets.commit()
		first = op.sets.err
	}
	for _, e := range []error{op.state.close(), op.et.close(), op.pt.close()} {
		if e != nil && first == nil {
			first = e
		}
	}
	return first
}

// idle lets go, between batches, of what the operator's state storage
// holds only while it works.
func (op *WindowOp[K, T, A, O]) idle() {
	if op.sets != nil {
		op.sets.idle()
	}
}

// Watermark is the operator's input watermark.
func (op *WindowOp[K, T, A, O]) Watermark() mtime.Time { return op.wm }

// Take returns the outputs accumulated since the last call and forgets them.
// The slice is reused by the operator after the next call to Take.
func (op *WindowOp[K, T, A, O]) Take() []Out[K, T, O] {
	o := op.out
	op.out = op.out[:0]
	return o
}

func (op *WindowOp[K, T, A, O]) setNow(step uint64, now mtime.Time) {
	op.step = step
	if now > op.now {
		op.now = now
	}
}

// Event adds the event v with event time ts, arriving at processing time now,
// to every window of key it belongs to, and fires what its arrival triggers.
// It fires no processing-time timer: the caller advances processing time with
// AdvanceProc first, as a step of its own.
func (op *WindowOp[K, T, A, O]) Event(step uint64, key K, ts, now mtime.Time, v T) {
	op.setNow(step, now)
	if op.tumble.Size > 0 {
		op.tumblingEvent(key, ts, v)
		return
	}
	if op.merging {
		op.sessionEvent(key, ts, v)
		return
	}
	op.wbuf = op.strategy.Assigner.Assign(ts, op.wbuf[:0])
	if op.slice > 0 {
		op.slicedEvent(key, ts, v)
		return
	}
	var ks *keyState[A, O]
	accepted, late, missed, closed := false, false, -1, -1
	for i, w := range op.wbuf {
		if op.tooLate(w) {
			op.drop(w)
			missed = i
			continue
		}
		if ks == nil {
			ks = op.state.getOrCreate(key)
		}
		j := ks.find(w)
		if j < 0 {
			j = op.create(ks, key, w, op.step)
		}
		st := &ks.wins[j]
		if op.prog != nil && st.finished() {
			op.drop(w)
			closed = i
			continue
		}
		st.acc = op.add(st.acc, v)
		op.counted(st)
		accepted = true
		if st.late {
			late = true
		}
		op.onElement(key, ks, st)
	}
	if closed >= 0 {
		switch {
		case !accepted && missed < 0:
			op.closedLate(key, ts, v, op.wbuf[closed])
			return
		case !accepted:
			op.TriggerFinished++ // and too late for the others
		default:
			// Taken by some windows, set aside by one whose trigger
			// finished: counted once as partly late, written with the
			// reason of each kind of window it missed.
			op.TriggerFinished++
			if missed < 0 {
				op.PartlyLate++
			}
			op.out = append(op.out, Out[K, T, O]{
				Step: op.step, At: none, Kind: OutLate,
				Late: window.LateEvent[K, T]{Key: key, Timestamp: ts, Window: op.wbuf[closed], Watermark: op.wm, Value: v, Reason: window.ReasonTriggerFinishedForSomeWindows, At: op.now},
			})
		}
	}
	op.account(accepted, late, key, ts, v)
	if accepted && missed >= 0 {
		op.partlyLate(key, ts, v, op.wbuf[missed])
	}
}

// MaxDropped is the most windows Stats.Dropped counts drops of one by one.
const MaxDropped = 1024

// EarlierWindows is the entry of Stats.Dropped that sums the drops of
// windows older than those it counts one by one, the latest of which ended
// at end.
func EarlierWindows(end mtime.Time) window.Window {
	return window.Window{Start: mtime.MinTime, End: end}
}

// IsEarlierWindows reports whether w is an EarlierWindows entry.
func IsEarlierWindows(w window.Window) bool {
	return w.Start == mtime.MinTime && w.End != mtime.MaxTime
}

// drop counts a too-late event of window w; beyond MaxDropped windows, the
// oldest is folded into the entry of earlier windows.
func (op *WindowOp[K, T, A, O]) drop(w window.Window) {
	op.Dropped[w]++
	if len(op.Dropped) > MaxDropped {
		foldDropped(op.Dropped)
	}
}

// foldDropped folds the oldest window of m into its entry of earlier
// windows.
func foldDropped(m map[window.Window]int64) {
	var oldest, earlier window.Window
	found, hasEarlier := false, false
	for w := range m {
		switch {
		case IsEarlierWindows(w):
			earlier, hasEarlier = w, true
		case !found || w.End < oldest.End || (w.End == oldest.End && w.Start < oldest.Start):
			oldest, found = w, true
		}
	}
	if !found {
		return
	}
	n, end := m[oldest], oldest.End
	delete(m, oldest)
	if hasEarlier {
		n += m[earlier]
		end = max(end, earlier.End)
		delete(m, earlier)
	}
	m[EarlierWindows(end)] = n
}

// getOrCreate is state.getOrCreate, without the interface call for memory.
func (op *WindowOp[K, T, A, O]) getOrCreate(key K) *keyState[A, O] {
	if op.mem != nil {
		return op.mem.getOrCreate(key)
	}
	return op.state.getOrCreate(key)
}

// tumblingEvent is Event for tumbling windows (one window per event), the
// most common case, kept short.
func (op *WindowOp[K, T, A, O]) tumblingEvent(key K, ts mtime.Time, v T) {
	start := op.tumble.Start(ts)
	w := window.Window{Start: start, End: start + op.tumble.Size}
	if op.tooLate(w) {
		op.drop(w)
		op.wbuf = append(op.wbuf[:0], w)
		op.account(false, false, key, ts, v)
		return
	}
	ks := op.getOrCreate(key)
	i := ks.find(w)
	if i < 0 {
		i = op.create(ks, key, w, op.step)
	}
	st := &ks.wins[i]
	if op.prog != nil && st.finished() {
		op.drop(w)
		op.closedLate(key, ts, v, w)
		return
	}
	st.acc = op.add(st.acc, v)
	op.counted(st)
	op.Accepted++
	if st.late {
		op.LateAccepted++
	}
	op.onElement(key, ks, st)
}

// slicedEvent is Event for sliding windows that share slices: the event is
// added once, to its slice, and counted in each window it is not too late
// for. (A window it is too late for has been deleted with its claim on the
// slice, so sharing the slice cannot change it.)
func (op *WindowOp[K, T, A, O]) slicedEvent(key K, ts mtime.Time, v T) {
	accepted, missed := false, -1
	for i, w := range op.wbuf {
		if op.tooLate(w) {
			op.drop(w)
			missed = i
		} else {
			accepted = true
		}
	}
	if !accepted {
		op.account(false, false, key, ts, v)
		return
	}
	ks := op.state.getOrCreate(key)
	sl, added := ks.sliceAt(ts - floorMod(ts, op.slice, op.sliceOffset()))
	if added {
		sl.acc = op.agg.New()
	}
	sl.acc = op.add(sl.acc, v)
	late := false
	for _, w := range op.wbuf {
		if op.tooLate(w) {
			continue
		}
		i := ks.find(w)
		if i < 0 {
			i = op.create(ks, key, w, op.step)
		}
		st := &ks.wins[i]
		op.counted(st)
		late = late || st.late
		op.onElement(key, ks, st)
	}
	op.account(true, late, key, ts, v)
	if missed >= 0 {
		op.partlyLate(key, ts, v, op.wbuf[missed])
	}
}

func (op *WindowOp[K, T, A, O]) sliceOffset() mtime.Time {
	return op.strategy.Assigner.(window.Sliding).Offset
}

// floorMod is (t - offset) mod d, in [0, d).
func floorMod(t, d, offset mtime.Time) mtime.Time {
	m := (t - offset) % d
	if m < 0 {
		m += d
	}
	return m
}

func gcd(a, b mtime.Time) mtime.Time {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// sliceAt returns the slice starting at start, adding an empty one (added
// true, its accumulator for the caller to set) if there is none.
func (ks *keyState[A, O]) sliceAt(start mtime.Time) (s *slice[A], added bool) {
	i := len(ks.slices)
	for i > 0 && ks.slices[i-1].start > start {
		i--
	}
	if i > 0 && ks.slices[i-1].start == start {
		return &ks.slices[i-1], false
	}
	var zero slice[A]
	ks.slices = append(ks.slices, zero)
	copy(ks.slices[i+1:], ks.slices[i:])
	ks.slices[i] = slice[A]{start: start}
	return &ks.slices[i], true
}

// accOf is the accumulator of a window: its own, or the merge of its slices.
func (op *WindowOp[K, T, A, O]) accOf(ks *keyState[A, O], st *win[A, O]) A {
	if op.slice == 0 {
		return st.acc
	}
	acc := op.agg.New()
	for i := range ks.slices {
		if sl := &ks.slices[i]; sl.start >= st.w.Start && sl.start < st.w.End {
			acc = op.agg.Merge(acc, sl.acc)
		}
	}
	return acc
}

// slicesOf is the accumulators of a window's slices, in order, in a slice
// the operator reuses.
func (op *WindowOp[K, T, A, O]) slicesOf(ks *keyState[A, O], st *win[A, O]) []A {
	op.parts = op.parts[:0]
	for i := range ks.slices {
		if sl := &ks.slices[i]; sl.start >= st.w.Start && sl.start < st.w.End {
			op.parts = append(op.parts, sl.acc)
		}
	}
	return op.parts
}

// pruneSlices drops the slices before every remaining window: no window that
// can still fire contains them.
func (op *WindowOp[K, T, A, O]) pruneSlices(ks *keyState[A, O]) {
	if op.slice == 0 || len(ks.slices) == 0 {
		return
	}
	first := mtime.MaxTime
	for i := range ks.wins {
		first = min(first, ks.wins[i].w.Start)
	}
	n := 0
	for n < len(ks.slices) && ks.slices[n].start < first {
		n++
	}
	if n > 0 {
		if op.release != nil {
			for i := range n {
				op.release(ks.slices[i].acc)
			}
		}
		copy(ks.slices, ks.slices[n:])
		clear(ks.slices[len(ks.slices)-n:])
		ks.slices = ks.slices[:len(ks.slices)-n]
	}
}

// add adds v to acc, or takes it back out while the operator withdraws.
func (op *WindowOp[K, T, A, O]) add(acc A, v T) A {
	if op.withdrawing {
		return op.retract(acc, v)
	}
	return op.agg.Add(acc, v)
}

// Closed is the end before which an earlier run closed every window (a
// restored late limit): set by a restore, before the operator runs.
func (op *WindowOp[K, T, A, O]) Closed() mtime.Time { return op.closed }

// CanWithdraw reports whether the aggregate can take an event back out of
// its accumulators (aggregate.Retracter), which Withdraw needs.
func (op *WindowOp[K, T, A, O]) CanWithdraw() bool { return op.retract != nil }

// Withdraw takes the event v with event time ts back out of every window of
// key it belongs to (the earlier version of a revised event), with the
// aggregate's Retracter, and fires what that change triggers, as the
// arrival of an event would: a window the watermark has passed gets a late
// pane as the trigger says. It is counted in Withdrawn, never in Accepted.
// When a window of ts is too late (closed), nothing is withdrawn and it is
// counted in WithdrawMissed. Session windows cannot withdraw (a session
// would keep the extent the withdrawn event gave it): the caller refuses
// them.
//
// Without fire, the event is only taken out of the accumulators, and
// nothing fires: for a revision whose new version comes next, to the same
// key and windows, so that they fire once, with the new version in place
// of the old, as the trigger says of an event.
func (op *WindowOp[K, T, A, O]) Withdraw(step uint64, key K, ts, now mtime.Time, v T, fire bool) {
	op.setNow(step, now)
	if op.retract == nil || op.merging {
		op.WithdrawMissed++
		return
	}
	op.wbuf = op.strategy.Assigner.Assign(ts, op.wbuf[:0])
	for _, w := range op.wbuf {
		if op.tooLate(w) {
			op.WithdrawMissed++
			return
		}
	}
	if !fire {
		op.takeOut(key, ts, v)
		op.Withdrawn++
		return
	}
	accepted, late := op.Accepted, op.LateAccepted
	op.withdrawing = true
	op.Event(step, key, ts, now, v)
	op.withdrawing = false
	op.Accepted, op.LateAccepted = accepted, late
	op.Withdrawn++
}

// takeOut retracts v from the accumulators of key's windows in op.wbuf
// (or from its slice), without firing anything.
func (op *WindowOp[K, T, A, O]) takeOut(key K, ts mtime.Time, v T) {
	ks := op.getOrCreate(key)
	if op.slice > 0 {
		sl, added := ks.sliceAt(ts - floorMod(ts, op.slice, op.sliceOffset()))
		if added {
			sl.acc = op.agg.New()
		}
		sl.acc = op.retract(sl.acc, v)
		return
	}
	for _, w := range op.wbuf {
		i := ks.find(w)
		if i < 0 {
			i = op.create(ks, key, w, op.step)
		}
		ks.wins[i].acc = op.retract(ks.wins[i].acc, v)
	}
}

// Aside emits the event v as a late event with the reason given, without
// adding it to any window or counting it: the caller counts it. Window is
// the last window its time belongs to.
func (op *WindowOp[K, T, A, O]) Aside(step uint64, key K, ts, now mtime.Time, v T, reason string) {
	op.setNow(step, now)
	op.wbuf = op.strategy.Assigner.Assign(ts, op.wbuf[:0])
	var w window.Window
	if len(op.wbuf) > 0 {
		w = op.wbuf[len(op.wbuf)-1]
	}
	op.out = append(op.out, Out[K, T, O]{
		Step: op.step, At: none, Kind: OutLate,
		Late: window.LateEvent[K, T]{Key: key, Timestamp: ts, Window: w, Watermark: op.wm, Value: v, Reason: reason, At: op.now},
	})
}

func (op *WindowOp[K, T, A, O]) account(accepted, late bool, key K, ts mtime.Time, v T) {
	if !accepted {
		op.TooLate++
		w := op.wbuf[len(op.wbuf)-1]
		op.out = append(op.out, Out[K, T, O]{
			Step: op.step, At: none, Kind: OutLate,
			Late: window.LateEvent[K, T]{Key: key, Timestamp: ts, Window: w, Watermark: op.wm, Value: v, At: op.now},
		})
		return
	}
	op.Accepted++
	if late {
		op.LateAccepted++
	}
}

// partlyLate counts an event added to some of its windows and too late for
// the others, the last of which is w, and emits it as a late event, so that
// its memberships of those windows are not lost without a trace.
func (op *WindowOp[K, T, A, O]) partlyLate(key K, ts mtime.Time, v T, w window.Window) {
	op.PartlyLate++
	op.out = append(op.out, Out[K, T, O]{
		Step: op.step, At: none, Kind: OutLate,
		Late: window.LateEvent[K, T]{Key: key, Timestamp: ts, Window: w, Watermark: op.wm, Value: v, Reason: window.ReasonLateForSomeWindows, At: op.now},
	})
}

// tooLate reports whether an event for w arriving now is too late:
// End-1+lateness <= W.
func (op *WindowOp[K, T, A, O]) tooLate(w window.Window) bool {
	return w.MaxTimestamp() <= op.lateLimit
}

// setWatermark sets the watermark and lateLimit = W - lateness: a window is
// too late when End-1 <= lateLimit (End-1+lateness <= W, without overflow),
// or when an earlier run closed it (closed).
func (op *WindowOp[K, T, A, O]) setWatermark(w mtime.Time) {
	op.wm = w
	op.lateLimit = max(w.Add(-op.lateness), op.closed)
}

// create adds an empty window to ks and registers its first timer: on time
// at End-1, or, for a window whose first event comes after the watermark
// passed its end, the cleanup at End-1+lateness.
func (op *WindowOp[K, T, A, O]) create(ks *keyState[A, O], key K, w window.Window, seq uint64) int {
	st := win[A, O]{w: w, seq: seq}
	if op.slice == 0 {
		st.acc = op.agg.New()
	}
	if w.MaxTimestamp() <= op.wm {
		st.late = true
		op.et.add(w.MaxTimestamp().Add(op.lateness), newTimer(key, w, seq, tCleanup))
	} else {
		op.et.add(w.MaxTimestamp(), newTimer(key, w, seq, tOnTime))
	}
	op.addWin(ks, st)
	op.Windows++
	op.Open++
	return len(ks.wins) - 1
}

// The spare window arrays an operator instance keeps are none of more than
// 8 windows.
const maxFreeWinsCap = 8

// addWin appends st to ks's windows. A key outgrowing its inline window
// takes a spare array the operator kept from a key that went back to one,
// so that keys that come and go allocate nothing.
func (op *WindowOp[K, T, A, O]) addWin(ks *keyState[A, O], st win[A, O]) {
	if len(ks.wins) == cap(ks.wins) {
		if len(ks.wins) == len(ks.inline) {
			op.arrays++
			op.arraysPeak = max(op.arraysPeak, op.arrays)
		}
		if n := len(op.freeWins); n > 0 && cap(op.freeWins[n-1]) > len(ks.wins) {
			w := append(op.freeWins[n-1], ks.wins...)
			op.freeWins[n-1] = nil
			op.freeWins = op.freeWins[:n-1]
			clear(ks.wins)
			ks.wins = w
		}
	}
	ks.wins = append(ks.wins, st)
}

// inlineWins moves ks's windows, at most one, back into the key state,
// keeping the array they were in for another key.
func (op *WindowOp[K, T, A, O]) inlineWins(ks *keyState[A, O]) {
	if cap(ks.wins) == 0 || &ks.wins[:1][0] == &ks.inline[0] {
		return
	}
	w := ks.wins
	ks.wins = ks.inline[:len(w)]
	copy(ks.wins, w)
	op.arrays = max(op.arrays-1, 0) // a restored key's array was not counted
	// As many spare arrays as keys have held arrays at once: they will
	// again when their next windows overlap. Spare and used arrays together
	// are never more than the most that were used at once, so keeping them
	// holds no memory the state did not hold already.
	if w = w[:cap(w)]; op.arrays+len(op.freeWins) < op.arraysPeak && cap(w) <= maxFreeWinsCap {
		clear(w)
		op.freeWins = append(op.freeWins, w[:0])
	}
}

func (op *WindowOp[K, T, A, O]) remove(key K, ks *keyState[A, O], i int) {
	if op.release != nil && op.slice == 0 {
		op.release(ks.wins[i].acc)
	}
	last := len(ks.wins) - 1
	op.dropMore(&ks.wins[i])
	ks.wins[i] = ks.wins[last]
	var zero win[A, O]
	ks.wins[last] = zero
	ks.wins = ks.wins[:last]
	op.Open--
	if last <= 1 {
		op.inlineWins(ks)
	}
	if last == 0 {
		if op.release != nil {
			for i := range ks.slices {
				op.release(ks.slices[i].acc)
			}
		}
		op.state.remove(key, ks)
		return
	}
	op.pruneSlices(ks)
}

// onElement applies the trigger to a window that has just received an
// element.
func (op *WindowOp[K, T, A, O]) onElement(key K, ks *keyState[A, O], st *win[A, O]) {
	if op.prog != nil {
		op.compositeElement(key, ks, st)
		return
	}
	t := &op.trg
	if t.FinalOnly || (!st.late && !op.early) {
		return
	}
	if st.late {
		switch t.Late {
		case trigger.LateNone:
			st.latePending = true // for the closing pane
		case trigger.LateEach:
			op.fire(key, ks, st, window.Late, false, none, op.now)
		case trigger.LateThrottled:
			if last := st.lastLateAt(); last == none || op.now-last >= t.LatePeriod {
				op.fire(key, ks, st, window.Late, false, none, op.now)
				op.moreOf(st).lastLate = op.now
			} else if !st.latePending {
				st.latePending = true
				if m := op.moreOf(st); m.lateAt == none {
					m.lateAt = m.lastLate + t.LatePeriod
					op.pt.add(m.lateAt, newTimer(key, st.w, st.seq, tLate))
				}
			}
		case trigger.LateCount:
			// counted has counted the element.
			if st.count() >= int64(t.LateElements) {
				op.fire(key, ks, st, window.Late, false, none, op.now)
			} else {
				st.latePending = true
			}
		}
		return
	}
	if t.EarlyElements > 0 && st.count() >= int64(t.EarlyElements) {
		op.fire(key, ks, st, window.Early, false, none, op.now)
		return
	}
	if t.EarlyDelay > 0 && st.earlyAt() == none {
		at := op.now + t.EarlyDelay
		if t.EarlyAligned {
			at = mtime.AlignUp(op.now, t.EarlyDelay)
		}
		op.moreOf(st).early = at
		op.pt.add(at, newTimer(key, st.w, st.seq, tEarly))
	}
}

// fire emits a pane of st: first, in retracting mode, the retraction of the
// previous pane. at orders timer outputs; emitAt is the processing time the
// pane carries.
func (op *WindowOp[K, T, A, O]) fire(key K, ks *keyState[A, O], st *win[A, O], timing window.Timing, final bool, at, emitAt mtime.Time) {
	mode := op.strategy.Mode
	if mode == window.Retracting && st.hasLast {
		op.emit(key, st, st.rev, st.lastTiming, false, true, st.lastPane(), at, emitAt)
	}
	st.rev++
	var v O
	if op.slice > 0 && op.mergedResult != nil {
		v = op.mergedResult(op.slicesOf(ks, st))
	} else {
		v = op.agg.Result(op.accOf(ks, st))
	}
	op.emit(key, st, st.rev, timing, final, false, v, at, emitAt)
	switch mode {
	case window.Discarding:
		if op.release != nil {
			op.release(st.acc)
		}
		st.acc = op.agg.New()
	case window.Retracting:
		op.moreOf(st).last = v
		st.lastTiming, st.hasLast = timing, true
	}
	if m := st.more; m != nil {
		m.n, m.early = 0, none
	}
	if timing == window.Late {
		st.latePending = false
	}
}

func (op *WindowOp[K, T, A, O]) emit(key K, st *win[A, O], rev int32, timing window.Timing, final, retract bool, v O, at, emitAt mtime.Time) {
	op.Panes++
	op.byTiming[timing]++
	if rev == 1 && !retract {
		op.Fired++
	}
	// Outputs of an event come from the one instance that owns its key: they
	// keep their order (Seq 0). Outputs of timers are ordered by window.
	var seq uint64
	if at != none {
		seq = st.seq
	}
	op.out = append(op.out, Out[K, T, O]{
		Step: op.step, At: at, Seq: seq, Kind: OutPane,
		Pane: window.Pane[K, O]{
			Key: key, Window: st.w, Revision: int(rev), Timing: timing, Final: final, Retract: retract,
			Watermark: op.wm, EmittedAt: emitAt, Value: v,
		},
	})
}

// AdvanceWatermark moves the watermark to w (a w at or below the current one
// changes nothing) at processing time now, firing on-time panes of the
// windows whose end it passes and closing those whose allowed lateness ran
// out, in the order of their timers. Like Event, it fires no processing-time
// timer.
func (op *WindowOp[K, T, A, O]) AdvanceWatermark(step uint64, w, now mtime.Time) {
	op.setNow(step, now)
	if w <= op.wm {
		return
	}
	op.setWatermark(w)
	for {
		t, ok := op.et.next()
		if !ok || t > w {
			return
		}
		if op.aborted != nil && op.aborted.Load() {
			return
		}
		t, b := op.et.pop()
		read := 0 // timers of b whose keys the Pebble store has read
		for j, r := range b {
			if op.pebble != nil && j == read {
				read += op.pebble.prefetch(b[j:])
			}
			op.timerAhead(b, j)
			op.eventTimer(t, r)
			if op.spill != nil && len(op.out) >= chunkSize {
				op.spill()
			}
		}
		op.et.recycle(b)
	}
}

// timerAhead is the step of the memory store's lookahead at the j-th of
// the timers due b. It plans them timerRun at a time, each run with the
// keys after it that its last steps look ahead to, so that its buffer stays
// small when a million keys' windows end at once.
func (op *WindowOp[K, T, A, O]) timerAhead(b []timerRef[K], j int) {
	if op.mem == nil {
		return
	}
	at := j % timerRun
	if at == 0 {
		keys := op.timers.run(op.mem, min(timerRun+aheadKey, len(b)-j))
		for i := range keys {
			keys[i] = b[j+i].key
		}
		op.timers.plan()
	}
	op.timers.step(at)
}

// timerRun is how many timers' keys the lookahead plans at a time.
const timerRun = 1024

func (op *WindowOp[K, T, A, O]) eventTimer(t mtime.Time, r timerRef[K]) {
	ks := op.state.get(r.key)
	if ks == nil {
		return
	}
	i := ks.find(r.win)
	if i < 0 {
		return
	}
	st := &ks.wins[i]
	cleanupAt := st.w.MaxTimestamp().Add(op.lateness)
	if op.prog != nil {
		op.compositeTimer(t, r, ks, i, cleanupAt)
		return
	}
	switch r.kind() {
	case tOnTime:
		if st.late || st.w.MaxTimestamp() != t {
			return
		}
		// One firing per watermark advance: when the on-time firing and the
		// cleanup fall on the same watermark, the on-time pane is final.
		closing := cleanupAt <= op.wm
		st.late = true
		if st.more != nil {
			st.more.early = none
		}
		if !op.trg.FinalOnly || closing {
			op.fire(r.key, ks, st, window.OnTime, closing, t, op.now)
		}
		op.closeOrAwaitCleanup(r.key, ks, i, closing, cleanupAt)
	case tCleanup:
		if !st.late || cleanupAt != t {
			return
		}
		// Closing if changed: a window that has written a pane and had no
		// event since (latePending: a late one not yet in a pane) closes
		// without one.
		if op.trg.Closing != trigger.ClosingIfChanged || st.rev == 0 || st.latePending {
			op.fire(r.key, ks, st, window.Late, true, t, op.now)
		}
		op.remove(r.key, ks, i)
	}
}

// AdvanceProc moves processing time to now, firing the processing-time timers
// due by then (early firings, held-back late firings), each at its own
// instant.
func (op *WindowOp[K, T, A, O]) AdvanceProc(step uint64, now mtime.Time) {
	op.setNow(step, now)
	op.fireProc(op.now)
}

func (op *WindowOp[K, T, A, O]) fireProc(now mtime.Time) {
	for {
		t, ok := op.pt.next()
		if !ok || t > now {
			return
		}
		t, b := op.pt.pop()
		for j, r := range b {
			op.timerAhead(b, j)
			op.procTimer(t, r)
		}
		op.pt.recycle(b)
	}
}

func (op *WindowOp[K, T, A, O]) procTimer(t mtime.Time, r timerRef[K]) {
	ks := op.state.get(r.key)
	if ks == nil {
		return
	}
	i := ks.find(r.win)
	if i < 0 {
		return
	}
	st := &ks.wins[i]
	if op.prog != nil {
		if r.kind() == tEarly {
			op.compositeProc(t, r.key, ks, st)
		}
		return
	}
	switch r.kind() {
	case tEarly:
		if st.late || st.earlyAt() != t {
			return
		}
		st.more.early = none
		if st.more.n > 0 {
			op.fire(r.key, ks, st, window.Early, false, t, t)
		}
	case tLate:
		if st.lateFireAt() != t {
			return
		}
		st.more.lateAt = none
		if st.latePending {
			op.fire(r.key, ks, st, window.Late, false, t, t)
			st.more.lastLate = t
		}
	}
}

// End is the end of a bounded input: the watermark moves to the end of time,
// so every window fires and closes. Processing-time timers do not fire.
func (op *WindowOp[K, T, A, O]) End(step uint64, now mtime.Time) {
	op.AdvanceWatermark(step, mtime.MaxTime, now)
}

// sessionEvent adds an event to the sessions of its key, merging the sessions
// that its proto-session [ts, ts+gap) overlaps into a new window.
func (op *WindowOp[K, T, A, O]) sessionEvent(key K, ts mtime.Time, v T) {
	proto := window.Window{Start: ts, End: ts + op.gap}
	op.wbuf = append(op.wbuf[:0], proto)
	merged := proto
	ks := op.state.get(key)
	op.ibuf = op.ibuf[:0]
	if ks != nil {
		for i := range ks.wins {
			if w := ks.wins[i].w; window.Overlap(w, proto) {
				op.ibuf = append(op.ibuf, i)
				merged.Start = min(merged.Start, w.Start)
				merged.End = max(merged.End, w.End)
			}
		}
	}
	var st *win[A, O]
	switch {
	case len(op.ibuf) == 0:
		// A session of its own. Merging cannot rescue an event whose
		// proto-session is too late: a live session it overlapped would
		// have ended later and so not be too late either.
		if op.tooLate(proto) {
			op.drop(proto)
			op.account(false, false, key, ts, v)
			return
		}
		ks = op.state.getOrCreate(key)
		st = &ks.wins[op.create(ks, key, proto, op.step)]
	case len(op.ibuf) == 1 && ks.wins[op.ibuf[0]].w == merged:
		// Inside an existing session: the same window.
		st = &ks.wins[op.ibuf[0]]
	default:
		st = op.merge(key, ks, merged)
	}
	if op.prog != nil && st.finished() {
		op.drop(st.w)
		op.closedLate(key, ts, v, st.w)
		return
	}
	st.acc = op.add(st.acc, v)
	op.counted(st)
	op.account(true, st.late, key, ts, v)
	op.onElement(key, ks, st)
}

// merge replaces the sessions in op.ibuf by one new window: its revisions
// start again at 1, it keeps the earliest pending early timer of its parts,
// and in retracting mode every part that had fired is retracted now.
func (op *WindowOp[K, T, A, O]) merge(key K, ks *keyState[A, O], merged window.Window) *win[A, O] {
	slices.SortFunc(op.ibuf, func(a, b int) int {
		return cmp.Compare(ks.wins[a].w.Start, ks.wins[b].w.Start)
	})
	m := win[A, O]{w: merged, acc: op.agg.New(), seq: ^uint64(0)}
	n, early := int64(0), none
	for _, i := range op.ibuf {
		p := &ks.wins[i]
		if op.strategy.Mode == window.Retracting && p.hasLast {
			op.emit(key, p, p.rev, p.lastTiming, false, true, p.lastPane(), none, op.now)
		}
		if op.absorb != nil {
			m.acc = op.absorb(m.acc, p.acc)
		} else {
			m.acc = op.agg.Merge(m.acc, p.acc)
			if op.release != nil {
				op.release(p.acc)
			}
		}
		n += p.count()
		m.seq = min(m.seq, p.seq)
		if e := p.earlyAt(); e != none && (early == none || e < early) {
			early = e
		}
	}
	var trg *trgState
	if op.prog != nil {
		// Beam's onMerge: each node's state from its parts'.
		op.trgParts = op.trgParts[:0]
		for _, i := range op.ibuf {
			op.trgParts = append(op.trgParts, op.trgOf(&ks.wins[i]))
		}
		trg = &trgState{shape: op.trgShape, s: op.prog.New()}
		op.prog.OnMerge(trg.s, op.trgParts, op.ctx(&win[A, O]{w: merged}, op.now))
		clear(op.trgParts)
	}
	slices.Sort(op.ibuf)
	for j := len(op.ibuf) - 1; j >= 0; j-- {
		i, last := op.ibuf[j], len(ks.wins)-1
		op.dropMore(&ks.wins[i])
		ks.wins[i] = ks.wins[last]
		ks.wins[last] = win[A, O]{}
		ks.wins = ks.wins[:last]
		op.Open--
	}
	if merged.MaxTimestamp() <= op.wm {
		m.late = true
		early = none
		op.et.add(merged.MaxTimestamp().Add(op.lateness), newTimer(key, merged, m.seq, tCleanup))
	} else {
		op.et.add(merged.MaxTimestamp(), newTimer(key, merged, m.seq, tOnTime))
		if early != none {
			op.pt.add(early, newTimer(key, merged, m.seq, tEarly))
		}
	}
	if n != 0 || early != none || trg != nil {
		mm := op.moreOf(&m)
		mm.n, mm.early, mm.trg = n, early, trg
	}
	op.addWin(ks, m)
	op.Windows++
	op.Open++
	st := &ks.wins[len(ks.wins)-1]
	if trg != nil {
		op.setTimers(key, st)
	}
	return st
}

// OpenWindows is the number of windows holding state.
func (op *WindowOp[K, T, A, O]) OpenWindows() int64 { return op.Open }

// finished reports whether st's composite trigger has finished: the
// window fires no more and takes no event.
func (st *win[A, O]) finished() bool {
	return st.more != nil && st.more.trg != nil && st.more.trg.s[0].Finished
}

// closedLate counts an event that came only for windows whose composite
// trigger had finished, the last of them w, and emits it as a late event
// of window.ReasonTriggerFinished.
func (op *WindowOp[K, T, A, O]) closedLate(key K, ts mtime.Time, v T, w window.Window) {
	op.TooLate++
	op.TriggerFinished++
	op.out = append(op.out, Out[K, T, O]{
		Step: op.step, At: none, Kind: OutLate,
		Late: window.LateEvent[K, T]{Key: key, Timestamp: ts, Window: w, Watermark: op.wm, Value: v, Reason: window.ReasonTriggerFinished, At: op.now},
	})
}

// trgOf is st's composite trigger state, new if it has none.
func (op *WindowOp[K, T, A, O]) trgOf(st *win[A, O]) []trigger.NodeState {
	m := op.moreOf(st)
	if m.trg == nil {
		m.trg = &trgState{shape: op.trgShape, s: op.prog.New()}
	}
	return m.trg.s
}

// ctx is the composite trigger's context for st at processing time now.
func (op *WindowOp[K, T, A, O]) ctx(st *win[A, O], now mtime.Time) *trigger.Ctx {
	op.tctx.Now, op.tctx.EndReached = now, st.w.MaxTimestamp() <= op.wm
	op.tctx.Timers = op.tctx.Timers[:0]
	return &op.tctx
}

// setTimers sets the processing-time timers the composite trigger asked
// for.
func (op *WindowOp[K, T, A, O]) setTimers(key K, st *win[A, O]) {
	for _, at := range op.tctx.Timers {
		op.pt.add(at, newTimer(key, st.w, st.seq, tEarly))
	}
	op.tctx.Timers = op.tctx.Timers[:0]
}

// compositeElement runs the composite trigger on an element st has just
// taken (counted in more.n), and fires if it is ready.
func (op *WindowOp[K, T, A, O]) compositeElement(key K, ks *keyState[A, O], st *win[A, O]) {
	s := op.trgOf(st)
	c := op.ctx(st, op.now)
	op.prog.OnElement(s, c)
	op.setTimers(key, st)
	if op.prog.ShouldFire(s, c) {
		timing := window.Early
		if st.late {
			timing = window.Late
		}
		op.compositeFire(key, ks, st, timing, false, none, op.now)
	}
}

// compositeFire fires st, whose composite trigger is ready (or, closing,
// whose allowed lateness ran out): Beam's ReduceFnRunner.onTrigger. The pane
// is written if an element came since the last one, on time (Beam's
// on-time FIRE_ALWAYS), or when it is the last and Closing is always;
// it is final when the trigger finished or the window closes. A finished
// window forgets its contents and stays, empty, until its allowed lateness
// runs out, to set aside the events that still come for it; a finished
// session is removed at once (it reports true), as Beam forgets a closed
// merging window: a later event starts a session of its own.
func (op *WindowOp[K, T, A, O]) compositeFire(key K, ks *keyState[A, O], st *win[A, O], timing window.Timing, closing bool, at, emitAt mtime.Time) (removed bool) {
	s := op.trgOf(st)
	if op.prog.ShouldFire(s, &op.tctx) {
		op.prog.OnFire(s, &op.tctx)
		op.setTimers(key, st)
	}
	final := closing || op.prog.Finished(s)
	if st.more.n > 0 || timing == window.OnTime || (final && op.trg.Closing == trigger.ClosingAlways) {
		op.fire(key, ks, st, timing, final, at, emitAt)
	}
	st.more.n = 0
	if final && !closing {
		if op.merging {
			op.remove(key, ks, ks.find(st.w))
			return true
		}
		if op.release != nil {
			op.release(st.acc)
		}
		st.acc = op.agg.New()
	}
	return false
}

// compositeTimer is eventTimer for a composite trigger.
func (op *WindowOp[K, T, A, O]) compositeTimer(t mtime.Time, r timerRef[K], ks *keyState[A, O], i int, cleanupAt mtime.Time) {
	st := &ks.wins[i]
	switch r.kind() {
	case tOnTime:
		if st.late || st.w.MaxTimestamp() != t {
			return
		}
		st.late = true
		closing := cleanupAt <= op.wm
		if !st.finished() {
			s, c := op.trgOf(st), op.ctx(st, op.now)
			switch {
			case op.prog.ShouldFire(s, c):
				if op.compositeFire(r.key, ks, st, window.OnTime, closing, t, op.now) {
					return
				}
			case closing && (st.more.n > 0 || op.trg.Closing == trigger.ClosingAlways):
				op.fire(r.key, ks, st, window.OnTime, true, t, op.now)
			}
		}
		op.closeOrAwaitCleanup(r.key, ks, i, closing, cleanupAt)
	case tCleanup:
		if !st.late || cleanupAt != t {
			return
		}
		// The closing pane of a window whose trigger has not finished:
		// always, or only if an event came since its last pane.
		if !st.finished() && (st.count() > 0 || op.trg.Closing == trigger.ClosingAlways || st.rev == 0) {
			op.fire(r.key, ks, st, window.Late, true, t, op.now)
		}
		op.remove(r.key, ks, i)
	}
}

// closeOrAwaitCleanup ends the on-time firing of window i of a key: the
// window is removed when the watermark has passed its cleanup already
// (closing), else its cleanup timer is set.
func (op *WindowOp[K, T, A, O]) closeOrAwaitCleanup(key K, ks *keyState[A, O], i int, closing bool, cleanupAt mtime.Time) {
	if closing {
		op.remove(key, ks, i)
		return
	}
	st := &ks.wins[i]
	op.et.add(cleanupAt, newTimer(key, st.w, st.seq, tCleanup))
}

// compositeProc is a processing-time timer of a composite trigger at t.
func (op *WindowOp[K, T, A, O]) compositeProc(t mtime.Time, key K, ks *keyState[A, O], st *win[A, O]) {
	if st.finished() || st.more == nil || st.more.trg == nil {
		return
	}
	if op.prog.ShouldFire(st.more.trg.s, op.ctx(st, t)) {
		timing := window.Early
		if st.late {
			timing = window.Late
		}
		op.compositeFire(key, ks, st, timing, false, t, t)
	}
}
