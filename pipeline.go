package weir

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/translate"
)

// Pipeline is a graph of streams from its sources to its sinks. Build it
// with the source functions (From, FromSeq, FromSlice, Read), the stream
// functions and the sinks (Sink, SinkTo), then call Run once.
//
// A pipeline is a plan (package plan), as a job file is: every function
// adds a node to it, and Run hands it to the one translator both front
// doors share (package translate), which builds it on weir's engine: its
// sources are read in goroutines of their own, each windowed aggregation
// runs its operator instances in goroutines of their own, and, with
// Checkpoints, the engine takes consistent checkpoints and commits the
// sinks after each.
type Pipeline struct {
	o options

	g      plan.Graph
	legacy []string // what the aggregations compute, as the fingerprint of a checkpoint before layout 4 had it
	feeds  int
	sinks  int
	stages int
	steps  int             // transforms
	names  map[string]bool // kind and name of every part
	// unnamed are the positional names of the parts without a name.
	unnamed []string
	err     error
	started bool
	ctl     chan *engine.Control

	mu      sync.Mutex
	eng     *engine.Engine // while it runs
	aborted error          // Abort before Run started the engine
}

// options are a pipeline's settings, as its Options gave them, in any
// order: validate checks them once, when the pipeline is made.
type options struct {
	cfg         engine.Config
	parallelism int
	batchSize   int
	live        bool
	task        *group.Task
	interval    time.Duration // InGroup's
	dirSet      bool          // Checkpoints was given
	disk        *onDisk       // StateOnDisk's databases, or nil: state in memory
	errs        []error
}

// optionError is an option given a value it cannot take, naming it.
func (o *options) fail(option, format string, args ...any) {
	o.errs = append(o.errs, fmt.Errorf("weir: %s: %s", option, fmt.Sprintf(format, args...)))
}

// validate checks the options once they are all given: their values, and
// the ones that conflict.
func (o *options) validate() error {
	if o.task != nil {
		if o.dirSet && o.cfg.Checkpoint.Dir != o.task.Dir {
			o.fail("InGroup", "the task checkpoints into its own directory (%s); Checkpoints names another (%s)", o.task.Dir, o.cfg.Checkpoint.Dir)
		}
		o.cfg.Checkpoint.Dir = o.task.Dir
		if !o.dirSet || o.cfg.Checkpoint.Interval == 0 {
			o.cfg.Checkpoint.Interval = o.interval
		}
		if o.cfg.Checkpoint.Keep == 0 {
			o.cfg.Checkpoint.Keep = 3
		}
		o.live = true
		if o.cfg.Log == nil {
			o.cfg.Log = o.task.Log
		}
		if o.cfg.Checkpoint.Fresh {
			o.fail("Fresh", "a group's task starts from its changelog")
		}
	}
	if o.cfg.Checkpoint.Fresh && o.cfg.Checkpoint.From != "" {
		o.fail("Fresh", "and RestoreFrom: start from the beginning, or from a checkpoint, not both")
	}
	if o.cfg.Checkpoint.Dir == "" {
		for _, opt := range []struct {
			name string
			set  bool
		}{{"RestoreFrom", o.cfg.Checkpoint.From != ""}, {"Fresh", o.cfg.Checkpoint.Fresh}, {"DropState", len(o.cfg.Checkpoint.DropState) > 0}} {
			if opt.set {
				o.fail(opt.name, "needs Checkpoints: there is no checkpoint directory")
			}
		}
	}
	if len(o.cfg.Checkpoint.DropState) > 0 {
		if err := engine.CheckDropState(o.cfg.Checkpoint.DropState); err != nil {
			o.fail("DropState", "%v", err)
		}
	}
	return errors.Join(o.errs...)
}

// Option configures a Pipeline. Options may come in any order: NewPipeline
// checks them once, and Run returns an error naming the first that cannot
// take its value.
type Option func(*options)

// Parallelism runs every windowed aggregation in n operator instances, each
// in its own goroutine and owning a share of the keys (default 1; from 1 to
// 256). Results are the same, in the same order, for every n.
func Parallelism(n int) Option {
	return func(o *options) {
		if n < 1 || n > 256 {
			o.fail("Parallelism", "expected 1 to 256 operator instances, got %d", n)
			return
		}
		o.parallelism = n
	}
}

// BatchSize sets how many events cross from the source goroutine to an
// operator instance at a time (default 1024; at least 1).
func BatchSize(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.fail("BatchSize", "expected at least 1 event, got %d", n)
			return
		}
		o.batchSize = n
	}
}

// Live makes processing time the wall clock: the engine advances it every
// few milliseconds whether or not input arrives, so that processing-time
// triggers (early panes, throttled late panes), periodic watermarks and
// idleness act on time in a stream that goes quiet, and results reach
// non-transactional sinks within 100 ms. Without Live, processing time moves
// with the elements: their arrival times, or the wall clock when they come
// without one.
func Live() Option { return func(o *options) { o.live = true } }

// Checkpoints takes a checkpoint into dir every interval (more than 0):
// the sources' positions, every windowed aggregation's state and the sinks'
// pre-commits. Run resumes from the newest complete checkpoint in dir; a
// stopped pipeline (ctx cancelled) takes a savepoint there. An
// aggregation's keys and accumulators (and, retracting, its results) are
// stored as JSON: one whose types JSON cannot round-trip (unexported
// fields, channels, funcs, complex numbers, interfaces) is refused when it
// is built, naming the field, unless the type has MarshalJSON and
// UnmarshalJSON (or MarshalText and UnmarshalText) of its own.
func Checkpoints(dir string, interval time.Duration) Option {
	return func(o *options) {
		if dir == "" || interval <= 0 {
			o.fail("Checkpoints", "expected a directory and an interval above 0, got %q and %s", dir, interval)
			return
		}
		o.cfg.Checkpoint.Dir, o.cfg.Checkpoint.Interval, o.dirSet = dir, interval, true
		if o.cfg.Checkpoint.Keep == 0 {
			o.cfg.Checkpoint.Keep = 3
		}
	}
}

// MaxHeldOutput bounds the output an exactly-once file or table sink holds
// in memory until the next checkpoint (default 64 MiB, as the job file's
// checkpoint.max_held_output): a sink that holds n bytes gets a checkpoint
// at once instead of at the interval, and reading waits until its output
// has gone to it. 0 keeps the default; a negative n sets no bound.
func MaxHeldOutput(n int64) Option { return func(o *options) { o.cfg.Checkpoint.MaxHeld = n } }

// RestoreFrom restores a given checkpoint or savepoint directory instead of
// the newest checkpoint (with Checkpoints).
func RestoreFrom(dir string) Option { return func(o *options) { o.cfg.Checkpoint.From = dir } }

// Fresh starts the pipeline from its beginning whatever its checkpoint
// directory holds (with Checkpoints): the checkpoints there are left
// behind, kept but never restored, and every sink gets every result again.
// Without it, a pipeline whose last run finished and that has a sink that
// cannot take back what that run wrote (a topic, a function) is refused
// (an *engine.RerunError): a second run would write every result twice.
func Fresh() Option { return func(o *options) { o.cfg.Checkpoint.Fresh = true } }

// Delivery sets the promise the pipeline makes about its sinks' output over
// a restart from a checkpoint (default connector.ExactlyOnce): a sink that
// cannot keep it is refused when the pipeline runs. A Sink function is
// at-least-once: a pipeline with checkpoints and Sink functions says
// Delivery(connector.AtLeastOnce).
func Delivery(g connector.Guarantee) Option {
	return func(o *options) {
		o.cfg.Checkpoint.Delivery, o.cfg.Checkpoint.DeliverySet = g, true
	}
}

// DropState starts afresh, on a restore, the kinds of state that could not
// carry over into the pipeline as it is now: engine.StateWindows (the open
// windows of an aggregation whose window, key type or aggregate changed)
// and engine.StateDedup (the ids of a de-duplication whose id changed),
// engine.StateJoin (the buffered records of a join whose kind, key or
// record types changed) and engine.StateProcess (the state and timers of a
// keyed process function whose key type or a state's type changed),
// keeping the sources' positions and the sinks' commits. Without it such a
// restore is refused.
func DropState(kinds ...string) Option {
	return func(o *options) { o.cfg.Checkpoint.DropState = append(o.cfg.Checkpoint.DropState, kinds...) }
}

// Log sends the engine's log lines (a checkpoint that failed, a restore) to
// w.
func Log(w io.Writer) Option { return func(o *options) { o.cfg.Log = w } }

// InGroup makes the pipeline the task t of an instance of a consumer group
// (package group: group.Config's Task function builds it). It checkpoints
// every interval into t.Dir, resuming from the checkpoint the group read
// back there from the task's partition of the changelog, and publishes each
// checkpoint to that partition in the transaction that commits the
// pipeline's Kafka sinks, which write through t.Txn (kafka.Sink's Txn): one
// transaction of the task's thread holds a checkpoint's output, state and
// input position, whichever instance runs the task. A checkpoint that fails
// stops the task (the group starts it again from its last committed one),
// and the pipeline is Live; its source reads t.Partition of t.Topic alone
// through t.Txn too (kafka.Source's Txn), and each checkpoint's offset
// becomes the group's, for Kafka's lag tools. With the group's
// ShareWatermarks, the aggregations of what the source reads follow the
// group's watermark while the task's partition is idle (a watermark
// strategy WithIdleness), as a job file's task does. The pipeline logs to
// t.Log unless Log says otherwise. Checkpoints, if also given, must name
// t.Dir.
func InGroup(t *group.Task, interval time.Duration) Option {
	return func(o *options) {
		if t == nil || interval <= 0 {
			o.fail("InGroup", "expected a task and an interval above 0")
			return
		}
		o.task, o.interval = t, interval
	}
}

// Name names the pipeline in logs and checkpoints (default "pipeline").
func Name(name string) Option { return func(o *options) { o.cfg.Name = name } }

// NewPipeline returns an empty pipeline with the options given, in any
// order; an option that cannot take its value makes Run fail, naming it.
func NewPipeline(opts ...Option) *Pipeline {
	p := &Pipeline{ctl: make(chan *engine.Control, 1)}
	p.o = options{parallelism: 1, batchSize: 1024}
	p.o.cfg.Name = "pipeline"
	p.o.cfg.Checkpoint.TolerableFailures = 3
	for _, o := range opts {
		o(&p.o)
	}
	if err := p.o.validate(); err != nil {
		p.err = err
	}
	p.g.Name = p.o.cfg.Name
	return p
}

func (p *Pipeline) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("weir: "+format, args...)
	}
}

// checkpointed says the pipeline takes checkpoints.
func (p *Pipeline) checkpointed() bool { return p.o.cfg.Checkpoint.Dir != "" }

// encoded says why the pipeline encodes its keyed state ("" when it does
// not): checkpoints, or state on disk.
func (p *Pipeline) encoded() string {
	switch {
	case p.checkpointed():
		return "checkpointed"
	case p.o.disk != nil:
		return "kept on disk (StateOnDisk)"
	}
	return ""
}

// add adds a node to the pipeline's plan.
func (p *Pipeline) add(n *plan.Node) { p.g.Add(n) }

// goDrop is how a Go program drops a kind of state deliberately on a
// restore (engine.DropWords): the option DropState.
func goDrop(kind string) string { return `weir.DropState("` + kind + `")` }

// Plan is the pipeline's plan, as Run hands it to the translator: what weir
// plan prints of a job file, for a Go program.
func (p *Pipeline) Plan() *plan.Graph { return &p.g }

// Control is the running pipeline's control handle (savepoint, status,
// stop); it waits until Run has started the engine or ctx is done.
func (p *Pipeline) Control(ctx context.Context) (*engine.Control, error) {
	select {
	case c := <-p.ctl:
		p.ctl <- c
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Abort stops the pipeline at once, without a savepoint: with Checkpoints,
// the next run resumes from the last checkpoint, and Run returns err. An
// Abort before Run makes Run return err at once.
func (p *Pipeline) Abort(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eng != nil {
		p.eng.Abort(err)
	} else if p.aborted == nil {
		p.aborted = err
	}
}

// Status reports the running pipeline, waiting at most timeout for it;
// before Run has started it, and after it ended, a Status with the state
// "stopped".
func (p *Pipeline) Status(ctx context.Context, timeout time.Duration) engine.Status {
	p.mu.Lock()
	e := p.eng
	p.mu.Unlock()
	if e == nil {
		return engine.Status{Job: p.o.cfg.Name, State: "stopped"}
	}
	return e.Control().Status(ctx, timeout)
}

// Run executes the pipeline until its sources end (then every window fires
// and closes) or ctx is done (then windows stay open, a savepoint is taken
// with Checkpoints, and Run returns an error wrapping engine.ErrStopped that
// names it). It returns the first error of a source or of a sink.
func (p *Pipeline) Run(ctx context.Context) (err error) {
	if p.err != nil {
		return p.err
	}
	if p.started {
		return errors.New("weir: a pipeline runs once")
	}
	p.started = true
	if p.feeds == 0 {
		return errors.New("weir: the pipeline has no source (call From)")
	}
	if p.sinks == 0 {
		return errors.New("weir: the pipeline has no sink: its results would go nowhere (call Sink)")
	}
	o := &p.o
	o.cfg.Live = o.live
	tc := translate.Config{Engine: o.cfg, Task: o.task}
	if p.checkpointed() {
		// A checkpoint of a weir before layout 4 restores by the
		// fingerprint; a later one by the shape, part by part.
		sum := sha256.Sum256([]byte(strings.Join(p.legacy, "\n")))
		tc.Fingerprint = hex.EncodeToString(sum[:8])
	}
	if d := o.disk; d != nil {
		// A database per aggregation, join and keyed process function,
		// and for the ids of a join's right input, each within its share.
		n := int64(0)
		for _, nd := range p.g.Nodes {
			switch op := nd.Op.(type) {
			case *plan.Aggregation, *plan.Process:
				n++
			case *plan.Join:
				n++
				if len(op.Dedup) == 2 && op.Dedup[1] != nil {
					n++
				}
			}
		}
		d.share = d.budget / max(n, 1)
		defer func() {
			if cerr := d.close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	job, err := translate.Build(&p.g, tc)
	if err != nil {
		return goError(err)
	}
	e := job.Engine
	if c := e.Resumed(); c != nil {
		e.Logf("resuming from %s", c.Path)
		for _, ch := range e.Restore().Changes {
			if ch.Verdict != engine.Carried || ch.Was != ch.Now {
				e.Logf("restore: %s", ch.Say(goDrop))
			}
		}
	}
	if w := p.warnUnnamed(); w != "" && e.Checkpointed() {
		e.Logf("%s", w)
	}
	p.mu.Lock()
	if p.aborted != nil {
		p.mu.Unlock()
		e.Discard()
		return p.aborted
	}
	p.eng = e
	p.mu.Unlock()
	p.ctl <- e.Control()
	err = e.Run(ctx)
	p.mu.Lock()
	p.eng = nil
	p.mu.Unlock()
	if errors.Is(err, engine.ErrStopped) && ctx.Err() != nil {
		return errors.Join(ctx.Err(), err)
	}
	return err
}

// goError words the engine's refusals in the terms of the Go API: its
// options, where the job file names its flags.
func goError(err error) error {
	var se *engine.SetupError
	var re *engine.RestoreRefusedError
	var lb *engine.LeftBehindError
	var rr *engine.RerunError
	switch {
	case errors.As(err, &rr):
		return fmt.Errorf("weir: %w; to run it again on purpose, give the option weir.Fresh()", err)
	case !errors.As(err, &se):
	case errors.As(err, &re):
		se.Msg = "weir: " + se.Field + ": " + re.Say(goDrop)
	case errors.As(err, &lb):
		se.Msg = "weir: " + lb.Say("weir.RestoreFrom")
	}
	return err
}
