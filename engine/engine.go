package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// Config is what a front door tells the engine about a job.
type Config struct {
	// Name is the job's name, in logs and checkpoints.
	Name string
	// Live says processing time is the wall clock: records arriving without
	// a time are stamped with it when the engine takes their batch, and a
	// ticker advances it every Tick while no input comes, so that
	// processing-time timers fire at their time. Without Live, processing
	// time moves only with the arrival times the records carry (a replay).
	Live bool
	// Tick is how often a live job's clock advances without input
	// (default 20 ms).
	Tick time.Duration
	// Checkpoint configures durable checkpoints; an empty Dir disables
	// them.
	Checkpoint Checkpointing
	// NoSavepointOnStop skips the savepoint normally taken when the job is
	// stopped (ctx cancelled, Control.Stop).
	NoSavepointOnStop bool
	// StopGrace is how long a stop waits for the stages to reach the
	// savepoint before it gives up on it and stops at once (default 1 s).
	StopGrace time.Duration
	// StopWait is how long a stop waits, once the stages have seen it, for
	// the savepoint (or the record of the end of the input) to be written
	// and committed, before every sink call is aborted (default twice
	// StopGrace and a second).
	StopWait time.Duration
	// Log receives one line per notable event ("weir: " and the message);
	// nil discards them.
	Log io.Writer
	// CheckpointAfter, when set, is asked after every batch (numbered from
	// 1) whether to take a checkpoint or a savepoint there, and which: tests
	// put them at known places with it.
	CheckpointAfter func(batch int64) (checkpoint.Kind, bool)
	// StopAfter, when set, is asked after every batch (numbered from 1)
	// whether to stop the job there, as Control.Stop does (with a
	// savepoint): tests stop a job at a known place with it, where a
	// cancelled context stops it wherever the reading has got to.
	StopAfter func(batch int64) bool
}

// Checkpointing configures durable checkpoints.
type Checkpointing struct {
	Dir      string
	Interval time.Duration
	Keep     int
	// MaxHeld bounds the output a sink holds in memory for its next
	// pre-commit (connector.Holder: an exactly-once file or table): when one
	// holds this many bytes, a checkpoint is taken at once instead of at the
	// interval, and reading pauses until the sink has handed its output to
	// it, so that memory does not grow with the interval or with a burst of
	// panes. 0 is DefaultMaxHeld; a negative value sets no bound.
	MaxHeld int64
	// KeepSavepoints is how many savepoints stay: a new one prunes the
	// oldest beyond it, and logs what it removed (0: every one stays).
	KeepSavepoints    int
	TolerableFailures int
	// Fingerprint identifies what the job computes: a checkpoint of an
	// earlier layout, which has no shape, restores only into a job with its
	// fingerprint.
	Fingerprint string
	// Shape describes the parts of the job that hold state: it is recorded
	// in every checkpoint, and a restore compares the checkpoint's with it
	// (CompareShapes), refusing what cannot carry over.
	Shape *Shape
	// DropState names the kinds of state (StateWindows, StateDedup,
	// StateJoin, StateProcess) a restore starts afresh when the
	// checkpoint's cannot carry over (weir run --drop-state), keeping the
	// rest: positions, counts, other state.
	DropState []string
	// From restores this checkpoint or savepoint directory instead of the
	// newest one in Dir.
	From string
	// Fresh starts the job from its beginning whatever the directory holds:
	// its checkpoints and savepoints are left behind, kept but never
	// restored (checkpoint.Store.Abandon), and every sink gets every result
	// again (a topic holds the earlier runs' results too). It is how a
	// front door runs a finished job again on purpose (RerunError), or
	// starts over from a checkpoint it cannot restore.
	Fresh bool
	// FS is the file system checkpoints are written to (tests inject
	// failures); nil is the real one.
	FS checkpoint.FS
	// Delivery is the promise the job makes about its sinks' output over a
	// restart: a sink that cannot keep it is refused (NewSink). Zero means
	// ExactlyOnce when checkpoints are on.
	Delivery connector.Guarantee
	// DeliverySet says Delivery was chosen (AtLeastOnce is its zero value).
	DeliverySet bool
	// OnEnd, when set, is called once the output of the end of the input
	// is committed, and before the end is recorded as such: the front door
	// writes what it writes when a job ends (its summary) there, so that a
	// run that dies before the record leaves the next one to write it. An
	// error fails the job (its output stays committed).
	OnEnd func() error
	// FinalRecord, when set, gives what the record of the end of the input
	// keeps for the front door (its summary of the run): a run that resumes
	// only to commit that record's output (Engine.Finishing) gets it back.
	FinalRecord func() []byte
	// Publish, when set, is called with each checkpoint once it is written
	// to Dir and before the sinks commit it: its manifest (without the
	// files' entries) and its files, as they were written. A job whose
	// state lives elsewhere (a task's Kafka changelog) sends it there, into
	// the transaction the sinks commit. An error stops the job, with
	// nothing of the checkpoint committed.
	Publish func(ctx context.Context, m checkpoint.Manifest, files []checkpoint.Input) error
}

// DefaultMaxHeld is Checkpointing.MaxHeld's default: 64 MiB per sink.
const DefaultMaxHeld = 64 << 20

// Engine runs one job. Build it with New and the constructors of this
// package (AddSource, NewWindow, NewSink, NewHead), then call Run once.
type Engine struct {
	cfg Config
	log func(string)

	inputs []*input
	roots  []Consumer[struct{}] // receive the source loop's signals
	parts  []*Participant
	names  map[string]bool
	starts []func(ctx context.Context) error
	stages []stage
	status []func(*Status)
	// holder is the partition the last status found holding the
	// watermark back ("" none), since holderSince (heldBack).
	holder      string
	holderSince mtime.Time
	closers     []func() error

	store         *checkpoint.Store
	resumed       *checkpoint.Checkpoint
	resumedLayout int
	restore       *RestoreReport // what the restore of resumed does
	nextID        uint64
	// added names the sinks the restored checkpoint does not know.
	added []string
	// rerun is the checkpoint that records that the last run finished,
	// when this run starts the job again from its beginning; unsafe names
	// the sinks that cannot take back what that run wrote (RerunError).
	rerun  string
	unsafe []string
	// finishing: the job resumes from the record of the end of its input,
	// whose output was not committed: it commits it and ends.
	finishing bool
	// recommitted: a sink committed again what the restored checkpoint
	// left pending, and starting it may fence what it committed.
	recommitted bool
	onStarted   []func(ctx context.Context) error // after starts: sinks that start producers (connector.Starter)
	coord       *coordinator
	// held is what each sink that holds its output (connector.Holder) holds
	// now; heldWake wakes the source loop when one passes the bound or
	// drops below it, and when a checkpoint completes.
	held     []*heldOutput
	heldWake chan struct{}
	heldLog  bool // the first early checkpoint was logged

	// failure
	failOnce sync.Once
	failErr  error
	failed   chan struct{}
	// sinkCtx is given to every sink call; cancelled when the job aborts.
	sinkCtx    context.Context
	sinkCancel context.CancelFunc

	control     chan controlReq
	loopStarted bool
	running     atomic.Bool
	// stopAsked: Run's ctx was cancelled. What fails after the stop had to
	// cut the job short (a sink call aborted) is the stop, not a failure.
	stopAsked atomic.Bool
	finished  chan struct{}
	now       mtime.Time // the loop's processing time

	statusMu   sync.Mutex
	lastStatus Status
}

// stage is what the engine needs of a window stage to stop it at once.
type stage interface{ abort() }

// New returns an engine for cfg. With checkpoints, it opens the checkpoint
// store and loads the checkpoint the job will resume from: the newest complete
// one, or Checkpoint.From.
func New(cfg Config) (*Engine, error) {
	if cfg.Tick <= 0 {
		cfg.Tick = 20 * time.Millisecond
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = time.Second
	}
	if cfg.StopWait <= 0 {
		cfg.StopWait = 2*cfg.StopGrace + time.Second
	}
	e := &Engine{
		cfg: cfg, names: map[string]bool{}, failed: make(chan struct{}),
		control: make(chan controlReq), finished: make(chan struct{}), now: mtime.MinTime, heldWake: make(chan struct{}, 1),
		// What a status asked before the loop's first answer says: no
		// processing time and no watermark yet, never the zero value's
		// 1970 (which a console would draw its charts' axes from).
		lastStatus: Status{Job: cfg.Name, State: "running", Live: cfg.Live, ProcessingTime: mtime.MinTime, Watermark: mtime.MinTime},
	}
	e.log = func(s string) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "weir: %s\n", s)
		}
	}
	e.sinkCtx, e.sinkCancel = context.WithCancel(context.Background())
	if cfg.Checkpoint.Dir != "" {
		if err := e.openCheckpoints(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Discard releases what New took (the checkpoint directory's lock), for an
// engine that will not run.
func (e *Engine) Discard() {
	if !e.running.Load() && e.store != nil {
		e.store.Close()
	}
}

// Logf writes a line to the job's log.
func (e *Engine) Logf(format string, args ...any) { e.log(fmt.Sprintf(format, args...)) }

// Live reports whether processing time is the wall clock.
func (e *Engine) Live() bool { return e.cfg.Live }

// Checkpointed reports whether the job takes checkpoints.
func (e *Engine) Checkpointed() bool { return e.store != nil }

// Resumed is the checkpoint the job resumes from, or nil.
func (e *Engine) Resumed() *checkpoint.Checkpoint { return e.resumed }

// Restore is what the restore of the checkpoint the job resumes from does
// with its state, part by part, or nil when the job starts afresh.
func (e *Engine) Restore() *RestoreReport { return e.restore }

// RerunRefusal is the error that refuses this run, before anything is
// read or written: the last run of the job finished, this one would start
// it again from its beginning, and some of its sinks cannot take back what
// that run wrote (they are not connector.Rewriters). Run returns it too;
// a front door calls it once its sinks are made, to refuse the job before
// it starts anything.
func (e *Engine) RerunRefusal() error {
	if e.rerun == "" || len(e.unsafe) == 0 {
		return nil
	}
	return &RerunError{Job: e.cfg.Name, Checkpoint: e.rerun, Sinks: slices.Clone(e.unsafe)}
}

// Finishing reports whether the job resumes only to commit the output of a
// run that had reached the end of its input (it crashed before its last
// commits), and returns what that run's final record kept
// (Checkpointing.FinalRecord). Such a run reads nothing.
func (e *Engine) Finishing() (bool, []byte) {
	if !e.finishing {
		return false, nil
	}
	return true, e.resumed.Files[finalRecordName]
}

// AddedSinks names the sinks that the checkpoint the job resumes from does
// not know: they were added to the job since, start afresh, and get only
// the results from the restore point on.
func (e *Engine) AddedSinks() []string { return e.added }

// Fail stops the job with err (the first error wins). Any component may call
// it, from any goroutine.
func (e *Engine) Fail(err error) {
	if err == nil {
		return
	}
	e.failOnce.Do(func() {
		e.failErr = err
		close(e.failed)
	})
}

// Abort stops the job at once with err: every stage drops its work and
// every sink call returns, so that what was not committed stays so (a stop
// that waits on a broker gone away). Any goroutine may call it.
func (e *Engine) Abort(err error) {
	e.Fail(err)
	e.abortAll()
}

// WatchState stops the job at once (Abort) when the state database db
// cannot write in the background (a full disk): Pebble would hold the
// job's writes back for ever. failed words the error from db's (see
// StateHint). It returns how to stop watching.
func (e *Engine) WatchState(db *state.DB, failed func(error) error) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-db.Failed():
			e.Abort(failed(db.Err()))
		}
	}()
	return func() { close(done) }
}

// StateHint is what to say after a state database's error err: when the
// disk is full (or cannot be written), how to go on, with setting the
// front door's words for where the state directory is set; "" otherwise.
func StateHint(err error, setting string) string {
	if !connector.StorageFull(err) {
		return ""
	}
	return " (the disk is full: free room there, or set " + setting + " on a larger disk; the job resumes from its last checkpoint)"
}

// Err is the error the job failed with, if any.
func (e *Engine) Err() error {
	select {
	case <-e.failed:
		return e.failErr
	default:
		return nil
	}
}

// OnSignal adds a consumer of the source loop's signals: processing-time
// advances, flushes, barriers, and the end or stop of the input. Heads
// subscribe their stages this way.
func (e *Engine) OnSignal(c Consumer[struct{}]) { e.roots = append(e.roots, c) }

// OnStart adds a function run when the job starts, before any input is read
// (sinks open and commit what the restored checkpoint left pending).
func (e *Engine) OnStart(f func(ctx context.Context) error) { e.starts = append(e.starts, f) }

// OnStatus adds a function that fills in its part of a status report; it is
// called in the source loop's goroutine.
func (e *Engine) OnStatus(f func(*Status)) { e.status = append(e.status, f) }

func (e *Engine) addStage(s stage) { e.stages = append(e.stages, s) }

// Now is processing time as the source loop last saw it; call it from the
// source loop only.
func (e *Engine) Now() mtime.Time { return e.now }

// Run runs the job until its input ends, ctx is done, Control.Stop is called
// or a component fails. When the input ends, every window fires and closes
// and, with checkpoints, a final checkpoint records that the job finished.
// When the job is stopped it takes a savepoint (unless NoSavepointOnStop) and
// returns ErrStopped wrapped in a *StoppedError that names it.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("engine: Run called twice")
	}
	defer close(e.finished)
	defer e.sinkCancel()
	// A stop takes effect whatever the job is doing, from the first instant:
	// committing a restored checkpoint's output, reading, handing a batch
	// to a busy stage, recording the end of the input. If the loop has not
	// seen the stop within the grace period, or the job has not stopped
	// within a second one after it, every stage and sink call is aborted.
	looped := make(chan struct{})
	returned := make(chan struct{})
	defer close(returned)
	go e.watchStop(ctx, looped, returned)
	if e.store != nil {
		defer e.store.Close()
		e.coord = newCoordinator(e)
		go e.coord.run()
	}
	if err := e.RerunRefusal(); err != nil {
		return err
	}
	if e.rerun != "" {
		e.log(fmt.Sprintf("the last run of %s finished (%s); starting from the beginning (every output writes its results anew)", e.cfg.Name, e.rerun))
	}
	for _, f := range e.starts {
		if err := f(e.sinkCtx); err != nil {
			return e.startFailed(err)
		}
	}
	if e.recommitted {
		if err := e.recordRecommitted(); err != nil {
			return e.startFailed(err)
		}
	}
	for _, f := range e.onStarted {
		if err := f(e.sinkCtx); err != nil {
			return e.startFailed(err)
		}
	}
	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.finishing {
		// The input had ended: nothing to read, the end to record again
		// with its output committed.
		close(looped)
		return e.shutdown(reasonEnded, nil)
	}
	for _, in := range e.inputs {
		if err := in.start(loopCtx); err != nil {
			return e.startFailed(err)
		}
	}
	reason, sp := e.loop(loopCtx, ctx)
	close(looped)
	cancel()
	return e.shutdown(reason, sp)
}

// watchStop aborts the job when it does not stop in time after ctx is done.
func (e *Engine) watchStop(ctx context.Context, looped, returned <-chan struct{}) {
	select {
	case <-ctx.Done():
	case <-returned:
		return
	}
	e.stopAsked.Store(true)
	t := time.NewTimer(e.cfg.StopGrace)
	defer t.Stop()
	select {
	case <-returned:
		return
	case <-t.C:
		e.log(fmt.Sprintf("the job did not see the stop within %s: stopping at once, without a savepoint", e.cfg.StopGrace))
		e.abortAll()
		return
	case <-looped:
	}
	// The loop has stopped; the savepoint, or the record of the end of the
	// input, has a grace period of its own, and then this one.
	t.Reset(e.cfg.StopWait)
	select {
	case <-returned:
	case <-t.C:
		e.log(fmt.Sprintf("the job did not stop within %s of the stop: stopping at once", e.cfg.StopGrace+e.cfg.StopWait))
		e.abortAll()
	}
}

// startFailed ends a job that could not start: with err, or, when a stop
// cut its start short, as stopped (it resumes from its last checkpoint).
func (e *Engine) startFailed(err error) error {
	if e.stopAsked.Load() && e.sinkCtx.Err() != nil {
		e.shutdown(reasonFailed, nil)
		return &StoppedError{}
	}
	e.Fail(err)
	e.shutdown(reasonFailed, nil)
	return e.failErr
}

type stopReason uint8

const (
	reasonEnded stopReason = iota
	reasonStopped
	reasonFailed
)

// loop is the source loop. It returns why it stopped; a stop asked through
// Control carries the reply channel of its savepoint.
func (e *Engine) loop(ctx, parent context.Context) (stopReason, *savepointReq) {
	var tick, ckpt <-chan time.Time
	if e.cfg.Live {
		t := time.NewTicker(e.cfg.Tick)
		defer t.Stop()
		tick = t.C
	}
	if e.store != nil && e.cfg.Checkpoint.Interval > 0 {
		t := time.NewTicker(e.cfg.Checkpoint.Interval)
		defer t.Stop()
		ckpt = t.C
	}
	batches := make(chan *inputBatch, 2*len(e.inputs)+2)
	e.loopStarted = true
	merged := e.merging()
	for _, in := range e.inputs {
		out := batches
		if merged {
			// Each input's batches wait apart, for its turn.
			in.ch = make(chan *inputBatch, 2)
			out = in.ch
		}
		go in.run(ctx, out)
	}
	open := len(e.inputs)
	if open == 0 {
		return reasonEnded, nil
	}
	dirty := false
	var nbatch, ticks int64
	var unstalled chan struct{}
	if e.coord != nil {
		unstalled = e.coord.unstalled
	}
	var stopAt *savepointReq
	// afterBatch takes the checkpoint or the stop a test put after the
	// batch just handed over; it reports a stop.
	afterBatch := func() bool {
		if nbatch++; e.cfg.CheckpointAfter != nil && e.store != nil {
			if kind, ok := e.cfg.CheckpointAfter(nbatch); ok {
				e.barrier(kind, nil)
			}
		}
		if e.cfg.StopAfter != nil && e.cfg.StopAfter(nbatch) {
			stopAt = &savepointReq{reply: make(chan savepointResult, 1)}
			return true
		}
		return false
	}
	stalled := func() bool { return e.coord.Stalled() != "" || (e.coord != nil && !e.holdBack()) }
	for {
		// While a sink's commit is retried (a database down), nothing more
		// is read: what waits for the commit stays as it is, however long
		// the outage (backpressure).
		in := batches
		if merged {
			// The records in hand, in their order, until the input whose
			// record comes next needs its next batch.
			wait, stop, delivered := e.deliverMerged(afterBatch, stalled)
			if delivered {
				dirty = true
				if e.cfg.Live {
					e.signal(Signal{Kind: Flush})
					dirty = false
				}
			}
			switch {
			case stop:
				return reasonStopped, stopAt
			case wait == nil && e.allEnded():
				return reasonEnded, nil
			case wait != nil:
				in = wait.ch
			}
			if wait != nil && wait.cur != nil {
				in = nil // stalled, with records in hand
			}
		}
		if stalled() {
			in = nil
		}
		// A source that acknowledges only what checkpoints hold, and has
		// as much unacknowledged as its origin lets it, gets a checkpoint
		// now rather than at the interval.
		if in != nil && e.store != nil && e.coord != nil && e.coord.inflight.Load() == 0 && e.sourceWaiting() != nil {
			e.barrier(checkpoint.Periodic, nil)
		}
		select {
		case <-unstalled:
		case <-e.heldWake:
		case <-e.failed:
			return reasonFailed, nil
		case <-ctx.Done():
			if parent.Err() != nil {
				return reasonStopped, nil
			}
			return reasonFailed, nil
		case b := <-in:
			if merged && b.err == nil {
				b.in.take(b)
				continue
			}
			if b.err != nil {
				if errors.Is(b.err, io.EOF) {
					b.in.ended = true
					if open--; open == 0 {
						return reasonEnded, nil
					}
					continue
				}
				e.Fail(b.err)
				return reasonFailed, nil
			}
			e.deliver(b)
			dirty = true
			if afterBatch() {
				return reasonStopped, stopAt
			}
			if e.cfg.Live {
				e.signal(Signal{Kind: Flush})
				dirty = false
			}
		case <-tick:
			e.advance(mtime.Now())
			if ticks++; ticks%reportEvery == 0 {
				for _, in := range e.inputs {
					in.report(e.now)
				}
			}
			if dirty {
				e.signal(Signal{Kind: Flush})
				dirty = false
			}
		case <-ckpt:
			if e.coord.inflight.Load() == 0 {
				e.barrier(checkpoint.Periodic, nil)
			}
		case req := <-e.control:
			switch req.kind {
			case ctlSavepoint:
				if e.store == nil {
					req.reply <- savepointResult{err: ErrNoCheckpoints}
					continue
				}
				e.barrier(checkpoint.Savepoint, req.reply)
			case ctlStatus:
				req.status <- e.makeStatus()
			case ctlStop:
				return reasonStopped, &savepointReq{reply: req.reply, noSavepoint: req.noSavepoint}
			}
		}
	}
}

// Advance moves processing time to now (never back), signalling it to every
// consumer of the source loop: a feed calls it, in the source loop, before it
// delivers an element that arrived at now.
func (e *Engine) Advance(now mtime.Time) { e.advance(now) }

// ScriptWatermark signals a scripted watermark w to every consumer of the
// source loop (stages with a scripted watermark follow it); a feed calls it
// in the source loop.
func (e *Engine) ScriptWatermark(w mtime.Time) {
	e.signal(Signal{Kind: Watermark, Watermark: w, Now: e.now})
}

// reportEvery is how many ticks go between two looks at the sources'
// reports of their partitions.
const reportEvery = 10

// advance moves processing time to now and tells the heads.
func (e *Engine) advance(now mtime.Time) {
	if now > e.now {
		e.now = now
		e.signal(Signal{Kind: Proc, Now: now})
	}
}

func (e *Engine) signal(s Signal) {
	for _, c := range e.roots {
		c.Signal(s)
	}
}

// savepointReq is a stop asked through Control.
type savepointReq struct {
	reply       chan savepointResult
	noSavepoint bool
}

// shutdown ends the job: the end of the input (every window fires, a final
// checkpoint), a stop (a savepoint, then the stages stop), or a failure (the
// stages are aborted).
func (e *Engine) shutdown(reason stopReason, req *savepointReq) error {
	var sp chan savepointResult
	switch reason {
	case reasonEnded:
		e.cascade(Signal{Kind: End}, false)
	case reasonStopped:
		noSP := e.cfg.NoSavepointOnStop
		if req != nil {
			noSP = req.noSavepoint
		}
		if e.store != nil && !noSP && e.Err() == nil {
			sp = make(chan savepointResult, 1)
			e.barrier(checkpoint.Savepoint, sp)
		}
		e.cascade(Signal{Kind: Stop}, true)
	case reasonFailed:
		e.abortAll()
		e.cascade(Signal{Kind: Stop}, false)
	}
	err := e.Err()
	var spPath string
	if e.coord != nil {
		if reason == reasonEnded && err == nil {
			e.finalCheckpoint()
		}
		e.coord.close()
		if sp != nil {
			r := <-sp
			spPath = r.path
			if r.err != nil && e.Err() == nil {
				e.log(fmt.Sprintf("no savepoint: %v", r.err))
			}
		}
		err = e.Err()
	}
	e.closeInputs()
	for _, c := range e.closers {
		if cerr := c(); cerr != nil && err == nil && reason != reasonFailed {
			err = cerr
			e.Fail(cerr)
		}
	}
	if err != nil {
		if req != nil && req.reply != nil {
			req.reply <- savepointResult{err: err}
		}
		return err
	}
	if reason == reasonStopped || (e.stopAsked.Load() && e.sinkCtx.Err() != nil) {
		// Stopped, or cut short by a stop (the end of the input not
		// recorded, or output not flushed): the next run resumes from the
		// last checkpoint.
		stopped := &StoppedError{Savepoint: spPath}
		if req != nil && req.reply != nil {
			req.reply <- savepointResult{path: spPath}
		}
		return stopped
	}
	return nil
}

// cascade delivers End or Stop down the tree of stages, each waiting for its
// operators. A stop gets StopGrace to finish (the savepoint's barrier reaches
// every stage), then the stages are aborted.
//
// A stop after a failure (the stages aborted already) waits StopWait at
// most: a stage stuck where no abort reaches (a write to a full state disk
// that does not return) is left behind, so that the job stops and says why.
func (e *Engine) cascade(s Signal, grace bool) {
	if s.Kind == End {
		e.signal(s)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.signal(s)
	}()
	if grace {
		select {
		case <-done:
			return
		case <-time.After(e.cfg.StopGrace):
		case <-e.failed:
		}
		e.log(fmt.Sprintf("the job did not reach a consistent point within %s of the stop: stopping at once, without a savepoint", e.cfg.StopGrace))
		e.abortAll()
	}
	select {
	case <-done:
	case <-time.After(e.cfg.StopWait):
		e.log(fmt.Sprintf("a stage did not stop within %s of being aborted (a write that does not return: a full disk?); the job stops without it", e.cfg.StopWait))
	}
}

// abortAll makes every stage drop its work and every sink call return.
func (e *Engine) abortAll() {
	for _, s := range e.stages {
		s.abort()
	}
	e.sinkCancel()
	if e.coord != nil {
		e.coord.abandon()
	}
}

func (e *Engine) closeInputs() {
	for _, in := range e.inputs {
		in.close(e.loopStarted)
	}
}

// ErrStopped is wrapped by the error Run returns when the job was stopped
// before the end of its input.
var ErrStopped = errors.New("stopped before the end of the input")

// ErrNoCheckpoints is returned for a savepoint asked of a job without a
// checkpoint directory.
var ErrNoCheckpoints = errors.New("the job has no checkpoint directory: it cannot take savepoints")

// StoppedError is returned by Run when the job was stopped: it names the
// savepoint taken, if any.
type StoppedError struct {
	Savepoint string
}

func (e *StoppedError) Error() string {
	if e.Savepoint == "" {
		return ErrStopped.Error()
	}
	return ErrStopped.Error() + "; savepoint " + e.Savepoint
}

func (e *StoppedError) Unwrap() error { return ErrStopped }
