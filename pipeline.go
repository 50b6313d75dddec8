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
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
)

// Pipeline is a graph of streams from its sources to its sinks. Build it
// with the source functions (From, FromSeq, FromSlice, Read), the stream
// functions and the sinks (Sink, SinkTo), then call Run once.
//
// A pipeline runs on weir's engine, as a job file does: its sources are read
// in goroutines of their own, each windowed aggregation runs its operator
// instances in goroutines of their own, and, with Checkpoints, the engine
// takes consistent checkpoints and commits the sinks after each.
type Pipeline struct {
	cfg         engine.Config
	parallelism int
	batchSize   int
	live        bool

	builders []func(e *engine.Engine) error
	shape    []string      // what the aggregations compute: the fingerprint
	parts    []engine.Part // the parts that hold state: the shape
	feeds    int
	sinks    int
	stages   int
	names    map[string]bool // kind and name of every part
	unnamed  []string        // the positional names of the parts without a name
	err      error
	started  bool
	ctl      chan *engine.Control

	mu      sync.Mutex
	eng     *engine.Engine // while it runs
	aborted error          // Abort before Run started the engine

	// groupWatermark is the group's watermark a task follows while its
	// partition is idle (InGroup with the group's ShareWatermarks), and
	// followers the aggregations of the streams read from sources, which
	// follow it (built anew with each engine).
	groupWatermark func(own mtime.Time, idle bool) mtime.Time
	followers      []follower
}

// follower is an aggregation that follows the group's watermark: its
// watermark, told of the source's partition as a job file's head tells it.
type follower interface {
	SetBacklog(part int, backlog int64, now mtime.Time)
	SetFloor(floor mtime.Time)
	Watermark() mtime.Time
	Tracker() *watermark.Tracker
}

// followGroup hands the group's watermark to the aggregations that follow
// it, with the source's report of its partition (one: a group's task reads
// one); the source loop calls it.
func (p *Pipeline) followGroup(reports []connector.PartitionReport, now mtime.Time) {
	if p.groupWatermark == nil {
		return
	}
	for _, f := range p.followers {
		for _, r := range reports {
			f.SetBacklog(r.Partition, r.Backlog, now)
		}
		f.SetFloor(p.groupWatermark(f.Watermark(), f.Tracker().AllIdle()))
	}
}

// Option configures a Pipeline.
type Option func(*Pipeline)

// Parallelism runs every windowed aggregation in n operator instances, each in
// its own goroutine and owning a share of the keys (default 1). Results are
// the same, in the same order, for every n.
func Parallelism(n int) Option { return func(p *Pipeline) { p.parallelism = max(n, 1) } }

// BatchSize sets how many events cross from the source goroutine to an
// operator instance at a time (default 1024).
func BatchSize(n int) Option { return func(p *Pipeline) { p.batchSize = n } }

// Live makes processing time the wall clock: the engine advances it every
// few milliseconds whether or not input arrives, so that processing-time
// triggers (early panes, throttled late panes), periodic watermarks and
// idleness act on time in a stream that goes quiet, and results reach
// non-transactional sinks within 100 ms. Without Live, processing time moves
// with the elements: their arrival times, or the wall clock when they come
// without one.
func Live() Option { return func(p *Pipeline) { p.live = true } }

// Checkpoints takes a checkpoint into dir every interval: the sources'
// positions, every windowed aggregation's state and the sinks' pre-commits.
// Run resumes from the newest complete checkpoint in dir; a stopped pipeline
// (ctx cancelled) takes a savepoint there. An aggregation's keys and
// accumulators (and, retracting, its results) are stored as JSON: one whose
// types JSON cannot round-trip (unexported fields, channels, funcs, complex
// numbers, interfaces) is refused when it is built, naming the field, unless
// the type has MarshalJSON and UnmarshalJSON (or MarshalText and
// UnmarshalText) of its own.
func Checkpoints(dir string, interval time.Duration) Option {
	return func(p *Pipeline) {
		p.cfg.Checkpoint.Dir, p.cfg.Checkpoint.Interval = dir, interval
		if p.cfg.Checkpoint.Keep == 0 {
			p.cfg.Checkpoint.Keep = 3
		}
	}
}

// MaxHeldOutput bounds the output an exactly-once file or table sink holds
// in memory until the next checkpoint (default 64 MiB, as the job file's
// checkpoint.max_held_output): a sink that holds n bytes gets a checkpoint
// at once instead of at the interval, and reading waits until its output
// has gone to it. 0 keeps the default; a negative n sets no bound.
func MaxHeldOutput(n int64) Option { return func(p *Pipeline) { p.cfg.Checkpoint.MaxHeld = n } }

// Fresh starts the pipeline from its beginning whatever its checkpoint
// directory holds (with Checkpoints): the checkpoints there are left
// behind, kept but never restored, and every sink gets every result again.
// Without it, a pipeline whose last run finished and that has a sink that
// cannot take back what that run wrote (a topic, a function) is refused
// (an *engine.RerunError): a second run would write every result twice.
func Fresh() Option { return func(p *Pipeline) { p.cfg.Checkpoint.Fresh = true } }

// RestoreFrom restores a given checkpoint or savepoint directory instead of
// the newest checkpoint (with Checkpoints).
func RestoreFrom(dir string) Option { return func(p *Pipeline) { p.cfg.Checkpoint.From = dir } }

// Delivery sets the promise the pipeline makes about its sinks' output over
// a restart from a checkpoint (default connector.ExactlyOnce): a sink that
// cannot keep it is refused when the pipeline runs. A Sink function is
// at-least-once: a pipeline with checkpoints and Sink functions says
// Delivery(connector.AtLeastOnce).
func Delivery(g connector.Guarantee) Option {
	return func(p *Pipeline) {
		p.cfg.Checkpoint.Delivery, p.cfg.Checkpoint.DeliverySet = g, true
	}
}

// Log sends the engine's log lines (a checkpoint that failed, a restore) to
// w.
func Log(w io.Writer) Option { return func(p *Pipeline) { p.cfg.Log = w } }

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
// t.Log unless Log says otherwise.
func InGroup(t *group.Task, interval time.Duration) Option {
	return func(p *Pipeline) {
		Checkpoints(t.Dir, interval)(p)
		if p.cfg.Checkpoint.FS == nil {
			p.cfg.Checkpoint.FS = t.FS
		}
		p.cfg.Checkpoint.Publish = t.Publish
		p.cfg.Checkpoint.TolerableFailures = 0
		p.cfg.StopWait = t.StopWait
		p.live = true
		if p.cfg.Log == nil {
			p.cfg.Log = t.Log
		}
		p.groupWatermark = t.GroupWatermark
	}
}

// Name names the pipeline in logs and checkpoints (default "pipeline").
func Name(name string) Option { return func(p *Pipeline) { p.cfg.Name = name } }

// NewPipeline returns an empty pipeline.
func NewPipeline(opts ...Option) *Pipeline {
	p := &Pipeline{parallelism: 1, batchSize: 1024, ctl: make(chan *engine.Control, 1)}
	p.cfg.Name = "pipeline"
	p.cfg.Checkpoint.TolerableFailures = 3
	for _, o := range opts {
		o(p)
	}
	return p
}

func (p *Pipeline) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("weir: "+format, args...)
	}
}

// build adds a step run when the pipeline starts, in the order the graph was
// built.
func (p *Pipeline) build(f func(e *engine.Engine) error) { p.builders = append(p.builders, f) }

// goDrop is how a Go program drops a kind of state deliberately on a
// restore (engine.DropWords): the option DropState.
func goDrop(kind string) string { return `weir.DropState("` + kind + `")` }

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
		return engine.Status{Job: p.cfg.Name, State: "stopped"}
	}
	return e.Control().Status(ctx, timeout)
}

// Run executes the pipeline until its sources end (then every window fires
// and closes) or ctx is done (then windows stay open, a savepoint is taken
// with Checkpoints, and Run returns an error wrapping engine.ErrStopped that
// names it). It returns the first error of a source or of a sink.
func (p *Pipeline) Run(ctx context.Context) error {
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
	p.cfg.Live = p.live
	if p.cfg.Checkpoint.Dir != "" {
		// A checkpoint of a weir before layout 4 restores by the
		// fingerprint; a later one by the shape, part by part.
		sum := sha256.Sum256([]byte(strings.Join(p.shape, "\n")))
		p.cfg.Checkpoint.Fingerprint = hex.EncodeToString(sum[:8])
		p.cfg.Checkpoint.Shape = &engine.Shape{Parts: p.parts}
		if err := engine.CheckDropState(p.cfg.Checkpoint.DropState); err != nil {
			return fmt.Errorf("weir: DropState: %w", err)
		}
	}
	e, err := engine.New(p.cfg)
	if err != nil {
		// A refused restore, in the words of the Go API.
		var se *engine.SetupError
		var re *engine.RestoreRefusedError
		var lb *engine.LeftBehindError
		switch {
		case !errors.As(err, &se):
		case errors.As(err, &re):
			se.Msg = "weir: " + se.Field + ": " + re.Say(goDrop)
		case errors.As(err, &lb):
			se.Msg = "weir: " + lb.Say("weir.RestoreFrom")
		}
		return err
	}
	p.followers = nil
	for _, b := range p.builders {
		if err := b(e); err != nil {
			e.Discard()
			return err
		}
	}
	if err := e.RerunRefusal(); err != nil {
		e.Discard()
		return fmt.Errorf("weir: %w; to run it again on purpose, give the option weir.Fresh()", err)
	}
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
