package exec

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Target receives a keyed stream in arrival order: events, and advances of
// processing time and of the watermark. Runner implements it; a Driver feeds
// one.
type Target[K comparable, T any] interface {
	Event(key K, ts, now mtime.Time, v T)
	// Aside sends an event that is not to be counted in its windows: it
	// comes out as a late event with the reason given, in stream order.
	Aside(key K, ts, now mtime.Time, v T, reason string)
	Proc(now mtime.Time)
	Watermark(w, now mtime.Time)
	// End ends a bounded input: the watermark moves to the end of time.
	End(now mtime.Time)
}

// Withdrawer is a Target that can take an event back out of its windows:
// the earlier version of a revised event (see WindowOp.Withdraw). Runner
// implements it.
type Withdrawer[K comparable, T any] interface {
	Withdraw(key K, ts, now mtime.Time, v T, fire bool)
}

type itemKind uint8

const (
	iEvent itemKind = iota
	iProc
	iWatermark
	iEnd
	iBarrier
	iAside
	iWithdraw
)

type item[K comparable, T any] struct {
	kind itemKind
	step uint64
	ts   mtime.Time // event time, or the watermark
	now  mtime.Time
	key  K
	val  T
	tag  any // iBarrier; the reason of iAside; whether an iWithdraw fires
}

// Barrier is the output of an operator instance at a checkpoint barrier: its
// snapshot. Every output before it in the stream belongs to the checkpoint,
// none after it.
//
// The snapshot of an instance that keeps its state in memory is written
// beside the operator, which goes on: State, Err and Took are valid once
// Wait returns.
type Barrier struct {
	Tag      any           // what Runner.Barrier was given
	Instance int           // which instance
	Of       int           // how many instances
	State    []byte        // the instance's snapshot
	Err      error         // why there is no snapshot
	Took     time.Duration // how long the operator stopped for it
	// Snapshot, with a state database, is the Pebble checkpoint that holds
	// the instance's keys (State then says so): the checkpoint store keeps
	// its files, then it is released.
	Snapshot *state.Snapshot
	ready    chan struct{} // closed when the snapshot is complete; nil if it was at once
}

// Wait waits until the instance's snapshot is complete.
func (b *Barrier) Wait() {
	if b.ready != nil {
		<-b.ready
	}
}

// Ready says whether the snapshot is complete, so that Wait would not wait.
func (b *Barrier) Ready() bool {
	if b.ready == nil {
		return true
	}
	select {
	case <-b.ready:
		return true
	default:
		return false
	}
}

type Config[K comparable, T, A, O any] struct {
	Strategy window.Strategy
	Agg      aggregate.Func[T, A, O]
	// NewAgg, when set, gives each instance an aggregate function of its
	// own (one that keeps free lists or slabs, which are not shared between
	// goroutines); Agg is then not used.
	NewAgg func() aggregate.Func[T, A, O]
	// Parallelism is the number of operator instances, each in its own
	// goroutine, each owning the keys that Hash sends to it. 0 runs the
	// operator inline, in the caller's goroutine, with Emit called
	// synchronously: for tests and harnesses.
	Parallelism int
	// Hash puts keys in key groups (hash % KeyGroups), which are spread
	// over instances; required when Parallelism > 1 or with a Codec. It must
	// be the same from run to run for a checkpoint to be restored.
	Hash func(K) uint64
	// Codec encodes state for checkpoints; required for Barrier.
	Codec Codec[K, A, O]
	// RestoreCodec, when set, reads Restore instead of Codec: the state of a
	// checkpoint taken by a job whose aggregates or format have changed
	// since.
	RestoreCodec Codec[K, A, O]
	// DropRestored restores Restore's clocks and statistics only, leaving
	// its keys' windows behind (see RestoreOptions.DropKeys).
	DropRestored bool
	// Restore holds the operator snapshots of a checkpoint to start from,
	// taken with any parallelism; Step is the step number it reached. A
	// snapshot taken with a state database has its keys in a Pebble
	// checkpoint: RestoreDirs holds its directory (at the same index).
	Restore     [][]byte
	RestoreDirs []string
	Step        uint64
	// State, when set, keeps the instances' keys and timers in this
	// database (with a bounded cache in memory) instead of in memory; it
	// needs a Codec and a Hash.
	State *state.DB
	// BatchSize is the number of items per instance batch (default 1024).
	BatchSize int
	// Live sends a batch on as soon as the watermark or processing time
	// advances, instead of when it is full, so that panes reach the sink
	// without waiting for more events (a live source; replays batch).
	Live bool
	// Progress adds an OutProgress output after every advance of processing
	// time or of the watermark, and after the end: what a downstream stage
	// needs to follow this one's clocks.
	Progress bool
	// Emit receives the outputs in their canonical order, from one goroutine.
	// The slice is reused after Emit returns. An error stops the runner.
	Emit func([]Out[K, T, O]) error
}

// Runner runs a windowed aggregation over a keyed stream, with batches
// between the caller (the source stage), the operator instances and the
// sink.
//
// Outputs reach Emit in the same order, byte for byte, whatever the
// parallelism: each item gets a step number, and the outputs of the instances
// are merged by (step, timer instant, window sequence).
type Runner[K comparable, T, A, O any] struct {
	cfg     Config[K, T, A, O]
	ops     []*WindowOp[K, T, A, O]
	step    uint64
	dropped int64 // keys left behind by the restore (DropRestored)

	// pipelined mode
	cur     [][]item[K, T]
	in      []chan []item[K, T]
	out     []chan chunk[K, T, O]
	inFree  chan []item[K, T]
	outFree chan []Out[K, T, O]
	merged  []Out[K, T, O]
	wg      sync.WaitGroup
	failed  atomic.Bool
	aborted atomic.Bool
	abort   chan struct{}
	errMu   sync.Mutex
	err     error
	ended   bool

	// progress, readable while running
	wm   atomic.Int64
	open atomic.Int64
}

// NewRunner starts a runner. The caller must call End (or Stop) and then Wait.
func NewRunner[K comparable, T, A, O any](cfg Config[K, T, A, O]) *Runner[K, T, A, O] {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1024
	}
	n := max(cfg.Parallelism, 1)
	if n > 1 && cfg.Hash == nil {
		panic("exec: Parallelism > 1 needs a Hash")
	}
	r := &Runner[K, T, A, O]{cfg: cfg, step: cfg.Step, abort: make(chan struct{})}
	r.wm.Store(int64(mtime.MinTime))
	if _, ok := cfg.Agg.(SetUser[A]); ok && cfg.State != nil && cfg.NewAgg == nil && n > 1 {
		panic("exec: an aggregate that keeps sets in the state database is one per instance: Config.NewAgg")
	}
	for i := range n {
		agg := cfg.Agg
		if cfg.NewAgg != nil {
			agg = cfg.NewAgg()
		}
		op := NewWindowOp[K](cfg.Strategy, agg)
		op.aborted = &r.aborted
		if cfg.State != nil {
			op.usePebble(cfg.State, i, cfg.Codec, cfg.Hash, cfg.State.CacheBudget()/int64(n))
		}
		r.ops = append(r.ops, op)
	}
	if len(cfg.Restore) > 0 {
		c := cfg.Codec
		if cfg.RestoreCodec != nil {
			c = cfg.RestoreCodec
		}
		var err error
		if r.dropped, err = Restore(r.ops, cfg.Restore, cfg.RestoreDirs, c, RestoreOptions{DropKeys: cfg.DropRestored}); err != nil {
			r.fail(err)
		}
		for _, op := range r.ops {
			op.idle()
		}
	}
	if cfg.Parallelism == 0 {
		return r
	}
	r.cur = make([][]item[K, T], n)
	r.in = make([]chan []item[K, T], n)
	r.out = make([]chan chunk[K, T, O], n)
	r.inFree = make(chan []item[K, T], 4*n+4)
	r.outFree = make(chan []Out[K, T, O], 4*n+4)
	for i := range n {
		r.cur[i] = make([]item[K, T], 0, cfg.BatchSize)
		r.in[i] = make(chan []item[K, T], 2)
		r.out[i] = make(chan chunk[K, T, O], 4)
		r.wg.Add(1)
		go r.instance(i)
	}
	r.wg.Add(1)
	go r.sink()
	return r
}

// DroppedKeys is the number of keys whose windows the restore left behind
// (Config.DropRestored).
func (r *Runner[K, T, A, O]) DroppedKeys() int64 { return r.dropped }

// Ops gives access to the operator instances; only safe after Wait, or in
// inline mode.
func (r *Runner[K, T, A, O]) Ops() []*WindowOp[K, T, A, O] { return r.ops }

func (r *Runner[K, T, A, O]) nextStep() uint64 {
	r.step++
	return r.step
}

// Event implements Target.
func (r *Runner[K, T, A, O]) Event(key K, ts, now mtime.Time, v T) {
	s := r.nextStep()
	if r.cfg.Parallelism == 0 {
		r.ops[0].Event(s, key, ts, now, v)
		r.emitInline()
		return
	}
	r.enqueue(key, item[K, T]{kind: iEvent, step: s, ts: ts, now: now, key: key, val: v})
}

// enqueue adds it to the batch of the instance that owns key, and sends
// the batches once that one is full.
func (r *Runner[K, T, A, O]) enqueue(key K, it item[K, T]) {
	i := 0
	if len(r.ops) > 1 {
		i = instanceOf(int(r.cfg.Hash(key)%KeyGroups), len(r.ops))
	}
	r.cur[i] = append(r.cur[i], it)
	if len(r.cur[i]) >= r.cfg.BatchSize {
		r.Flush()
	}
}

// Aside implements Target.
func (r *Runner[K, T, A, O]) Aside(key K, ts, now mtime.Time, v T, reason string) {
	s := r.nextStep()
	if r.cfg.Parallelism == 0 {
		r.ops[0].Aside(s, key, ts, now, v, reason)
		r.emitInline()
		return
	}
	r.enqueue(key, item[K, T]{kind: iAside, step: s, ts: ts, now: now, key: key, val: v, tag: reason})
}

// Withdraw implements Withdrawer.
func (r *Runner[K, T, A, O]) Withdraw(key K, ts, now mtime.Time, v T, fire bool) {
	s := r.nextStep()
	if r.cfg.Parallelism == 0 {
		r.ops[0].Withdraw(s, key, ts, now, v, fire)
		r.emitInline()
		return
	}
	r.enqueue(key, item[K, T]{kind: iWithdraw, step: s, ts: ts, now: now, key: key, val: v, tag: fire})
}

// Proc implements Target.
func (r *Runner[K, T, A, O]) Proc(now mtime.Time) { r.broadcast(iProc, 0, now) }

// Watermark implements Target.
func (r *Runner[K, T, A, O]) Watermark(w, now mtime.Time) { r.broadcast(iWatermark, w, now) }

// End implements Target. It flushes everything; call Wait for the outcome.
func (r *Runner[K, T, A, O]) End(now mtime.Time) {
	r.broadcast(iEnd, mtime.MaxTime, now)
	r.finish()
}

// Step is the number of the last item given to the runner; a checkpoint
// keeps it so that a restored run numbers its items as the original did.
func (r *Runner[K, T, A, O]) Step() uint64 { return r.step }

// Barrier asks every instance for a snapshot, in stream order: each emits a
// Barrier output after all the outputs of the items before it. The barrier
// itself is not an item (it takes no step), so taking checkpoints changes
// nothing in the results. It is sent at once.
func (r *Runner[K, T, A, O]) Barrier(tag any) {
	if r.cfg.Parallelism == 0 {
		op := r.ops[0]
		op.out = append(op.out, r.barrierOut(op, 0, r.step, tag))
		r.emitInline()
		return
	}
	for i := range r.cur {
		r.cur[i] = append(r.cur[i], item[K, T]{kind: iBarrier, step: r.step, tag: tag})
	}
	r.Flush()
}

// barrierOut sorts after every output of its step (At is the end of time).
func (r *Runner[K, T, A, O]) barrierOut(op *WindowOp[K, T, A, O], i int, step uint64, tag any) Out[K, T, O] {
	t0 := time.Now()
	bar := &Barrier{Tag: tag, Instance: i, Of: len(r.ops)}
	switch {
	case op.mem != nil:
		op.snapshotBeside(bar, r.cfg.Codec, r.cfg.Hash, t0)
	case op.pebble != nil:
		bar.State, bar.Snapshot, bar.Err = op.snapshotPebble(nil)
		bar.Took = time.Since(t0)
	default:
		bar.State, bar.Err = op.Snapshot(nil, r.cfg.Codec, r.cfg.Hash)
		bar.Took = time.Since(t0)
	}
	return Out[K, T, O]{Step: step, Phase: 2, At: mtime.MaxTime, Seq: uint64(i), Kind: OutBarrier, Barrier: bar}
}

// Stop ends the runner without ending the input: windows stay open (a job
// stopped for a savepoint). Call Wait afterwards.
func (r *Runner[K, T, A, O]) Stop() { r.finish() }

// Abort makes the instances drop what they are doing and the runner stop
// emitting, at once: for a job that must stop now, whatever its state (a
// stop that cannot wait for a savepoint). It is safe to call from any
// goroutine, more than once; the caller still calls Stop (or End) and Wait.
// Nothing the runner does after Abort may be checkpointed.
func (r *Runner[K, T, A, O]) Abort() {
	if r.aborted.CompareAndSwap(false, true) {
		close(r.abort)
	}
}

func (r *Runner[K, T, A, O]) finish() {
	if r.ended {
		return
	}
	r.ended = true
	if r.cfg.Parallelism == 0 {
		return
	}
	r.Flush()
	for _, c := range r.in {
		close(c)
	}
}

func (r *Runner[K, T, A, O]) broadcast(k itemKind, ts, now mtime.Time) {
	s := r.nextStep()
	if r.cfg.Parallelism == 0 {
		op := r.ops[0]
		switch k {
		case iProc:
			op.AdvanceProc(s, now)
		case iWatermark:
			op.AdvanceWatermark(s, ts, now)
		case iEnd:
			op.End(s, now)
		}
		r.progress(op, s, k)
		r.wm.Store(int64(op.Watermark()))
		r.emitInline()
		return
	}
	full := false
	for i := range r.cur {
		r.cur[i] = append(r.cur[i], item[K, T]{kind: k, step: s, ts: ts, now: now})
		full = full || len(r.cur[i]) >= r.cfg.BatchSize
	}
	if full || r.cfg.Live {
		r.Flush()
	}
}

// progress appends the progress output of a broadcast item, on the first
// instance only: the merge puts it after the outputs of its step from every
// instance.
func (r *Runner[K, T, A, O]) progress(op *WindowOp[K, T, A, O], step uint64, k itemKind) {
	if !r.cfg.Progress {
		return
	}
	op.out = append(op.out, Out[K, T, O]{
		Step: step, Phase: 1, At: mtime.MaxTime, Kind: OutProgress,
		Pane: window.Pane[K, O]{Watermark: op.wm, EmittedAt: op.now, Final: k == iEnd},
	})
}

func (r *Runner[K, T, A, O]) emitInline() {
	outs := r.ops[0].Take()
	if len(outs) == 0 || r.failed.Load() {
		return
	}
	if err := r.cfg.Emit(outs); err != nil {
		r.fail(err)
	}
}

// Flush sends the items gathered so far to the instances (a live source calls
// it to bound latency; batches also go when full).
func (r *Runner[K, T, A, O]) Flush() {
	if r.cfg.Parallelism == 0 {
		return
	}
	if r.failed.Load() {
		for i := range r.cur {
			clear(r.cur[i])
			r.cur[i] = r.cur[i][:0]
		}
		return
	}
	for i := range r.cur {
		select {
		case r.in[i] <- r.cur[i]:
		case <-r.abort:
			clear(r.cur[i])
			r.cur[i] = r.cur[i][:0]
			continue
		}
		select {
		case b := <-r.inFree:
			r.cur[i] = b[:0]
		default:
			r.cur[i] = make([]item[K, T], 0, r.cfg.BatchSize)
		}
	}
}

// chunk is a part of an instance's outputs for one round; the last chunk of
// a round has last set. A long watermark advance (a million windows closing
// at the end of the input) sends its panes in chunks, so that neither memory
// nor the sink waits for all of them.
type chunk[K comparable, T, O any] struct {
	outs []Out[K, T, O]
	last bool
}

// chunkSize is how many outputs an instance gathers before sending them on in
// the middle of a round.
const chunkSize = 8192

func (r *Runner[K, T, A, O]) instance(i int) {
	defer r.wg.Done()
	op := r.ops[i]
	send := func(last bool) {
		var fresh []Out[K, T, O]
		select {
		case fresh = <-r.outFree:
		default:
		}
		outs := op.out
		op.out = fresh[:0]
		r.out[i] <- chunk[K, T, O]{outs, last}
	}
	op.spill = func() {
		if len(op.out) >= chunkSize {
			send(false)
		}
	}
	for b := range r.in[i] {
		if op.mem != nil {
			keys := op.events.run(op.mem, len(b))
			for j := range b {
				keys[j] = b[j].key // a zero key for what is not an event: harmless
			}
			op.events.plan()
		} else if op.pebble != nil {
			keys := op.evKeys[:0]
			for j := range b {
				if b[j].kind == iEvent {
					keys = append(keys, b[j].key)
				}
			}
			op.pebble.prefetchKeys(keys, 1)
			clear(keys)
			op.evKeys = keys[:0]
		}
		for j := range b {
			if r.aborted.Load() {
				break
			}
			if op.mem != nil {
				op.events.step(j)
			}
			it := &b[j]
			switch it.kind {
			case iEvent:
				op.Event(it.step, it.key, it.ts, it.now, it.val)
			case iAside:
				op.Aside(it.step, it.key, it.ts, it.now, it.val, it.tag.(string))
			case iWithdraw:
				op.Withdraw(it.step, it.key, it.ts, it.now, it.val, it.tag.(bool))
			case iProc:
				op.AdvanceProc(it.step, it.now)
			case iWatermark:
				op.AdvanceWatermark(it.step, it.ts, it.now)
			case iEnd:
				op.End(it.step, it.now)
			case iBarrier:
				op.out = append(op.out, r.barrierOut(op, i, it.step, it.tag))
			}
			if i == 0 && it.kind != iEvent && it.kind != iBarrier && it.kind != iAside && it.kind != iWithdraw {
				r.progress(op, it.step, it.kind)
			}
		}
		clear(b)
		select {
		case r.inFree <- b:
		default:
		}
		op.idle()
		if err := op.StoreErr(); err != nil {
			r.fail(err)
		}
		op.publish()
		if i == 0 {
			r.wm.Store(int64(op.Watermark()))
		}
		send(true)
	}
	close(r.out[i])
}

// sink merges the instances' outputs, round by round, into canonical order
// and emits them. Each instance's outputs are in order, so a streaming k-way
// merge emits an output as soon as every instance has either sent one that
// sorts after it or finished the round.
func (r *Runner[K, T, A, O]) sink() {
	defer r.wg.Done()
	n := len(r.out)
	bufs := make([][]Out[K, T, O], n)
	pos := make([]int, n)
	done := make([]bool, n)
	emit := func(batch []Out[K, T, O]) {
		if len(batch) > 0 && !r.failed.Load() && !r.aborted.Load() {
			if err := r.cfg.Emit(batch); err != nil {
				r.fail(err)
			}
		}
	}
	recycle := func(b []Out[K, T, O]) {
		clear(b)
		select {
		case r.outFree <- b[:0]:
		default:
		}
	}
	for {
		for i := range done {
			done[i] = false
		}
		for {
			// Refill every instance that has nothing at hand and has not
			// finished the round.
			for i := range bufs {
				for pos[i] >= len(bufs[i]) && !done[i] {
					if bufs[i] != nil {
						recycle(bufs[i])
					}
					c, ok := <-r.out[i]
					if !ok {
						// Instances close after their last round; drain the others.
						for j := range r.out {
							for range r.out[j] {
							}
						}
						return
					}
					bufs[i], pos[i], done[i] = c.outs, 0, c.last
				}
			}
			if n == 1 {
				emit(bufs[0][pos[0]:])
				pos[0] = len(bufs[0])
			} else {
				r.merged = r.merged[:0]
				for len(r.merged) < chunkSize {
					best := -1
					for i := range bufs {
						if pos[i] < len(bufs[i]) && (best < 0 || bufs[i][pos[i]].Less(&bufs[best][pos[best]])) {
							best = i
						}
					}
					if best < 0 {
						break
					}
					r.merged = append(r.merged, bufs[best][pos[best]])
					pos[best]++
					if pos[best] == len(bufs[best]) && !done[best] {
						break // wait for more of this instance before going on
					}
				}
				emit(r.merged)
			}
			finished := true
			for i := range bufs {
				if pos[i] < len(bufs[i]) || !done[i] {
					finished = false
				}
			}
			if finished {
				break
			}
		}
		var open int64
		for i := range bufs {
			open += r.ops[i].openGauge.Load()
		}
		r.open.Store(open)
	}
}

func (r *Runner[K, T, A, O]) fail(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
	r.failed.Store(true)
}

// Err is the first error of the sink, if any.
func (r *Runner[K, T, A, O]) Err() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// Wait waits for the instances and the sink to finish after End or Stop, and
// returns the first error of the sink or of the state storage.
func (r *Runner[K, T, A, O]) Wait() error {
	r.wg.Wait()
	for _, op := range r.ops {
		if err := op.Close(); err != nil {
			r.fail(err)
		}
	}
	return r.Err()
}

// LiveStats sums what the instances published after their last batch
// (Dropped is left out); safe to call while the runner runs.
func (r *Runner[K, T, A, O]) LiveStats() Stats {
	var s Stats
	if r.cfg.Parallelism == 0 {
		return s
	}
	for _, op := range r.ops {
		l := &op.live
		s.Accepted += l.accepted.Load()
		s.TooLate += l.tooLate.Load()
		s.LateAccepted += l.lateAccepted.Load()
		s.PartlyLate += l.partlyLate.Load()
		s.TriggerFinished += l.triggerFinished.Load()
		s.Panes += l.panes.Load()
		s.Fired += l.fired.Load()
		s.Windows += l.windows.Load()
		s.Keys += l.keys.Load()
		s.Open += op.openGauge.Load()
		for i := range s.PanesByTiming {
			s.PanesByTiming[i] += l.byTiming[i].Load()
		}
	}
	return s
}

// Stats sums the statistics of the instances; call it after Wait.
func (r *Runner[K, T, A, O]) Stats() Stats {
	var s Stats
	s.Dropped = map[window.Window]int64{}
	for _, op := range r.ops {
		s.Keys += int64(op.state.len())
		for i := range s.PanesByTiming {
			s.PanesByTiming[i] += op.byTiming[i]
		}
		s.Accepted += op.Accepted
		s.TooLate += op.TooLate
		s.LateAccepted += op.LateAccepted
		s.PartlyLate += op.PartlyLate
		s.Withdrawn += op.Withdrawn
		s.WithdrawMissed += op.WithdrawMissed
		s.TriggerFinished += op.TriggerFinished
		s.Panes += op.Panes
		s.Fired += op.Fired
		s.Windows += op.Windows
		s.Open += op.Open
		for w, n := range op.Dropped {
			s.Dropped[w] += n
		}
	}
	// The instances' entries of earlier windows are one.
	var earlier window.Window
	var n int64
	found := false
	for w, c := range s.Dropped {
		if IsEarlierWindows(w) {
			if !found || w.End > earlier.End {
				earlier = w
			}
			found, n = true, n+c
			delete(s.Dropped, w)
		}
	}
	if found {
		s.Dropped[earlier] = n
	}
	return s
}

// Progress reports the watermark and the number of open windows, as of the
// last batch; safe to call while running.
func (r *Runner[K, T, A, O]) Progress() (wm mtime.Time, open int64) {
	if r.cfg.Parallelism == 0 {
		return r.ops[0].Watermark(), r.ops[0].Open
	}
	return mtime.Time(r.wm.Load()), r.open.Load()
}
