package engine

import (
	"fmt"
	"io"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/process"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
)

// ProcessConfig configures a keyed process stage.
type ProcessConfig[K comparable, T, O any] struct {
	// Name identifies the stage in checkpoints.
	Name string
	Func process.Func[K, T, O]
	// Watermark is the strategy of the input's watermark, over its
	// partitions.
	Watermark watermark.Strategy
	// Parallelism is the number of parts the state is kept in, by key
	// group, as a join's: a checkpoint restores at any parallelism.
	Parallelism int
	// Hash puts keys in key groups; it must be stable from run to run.
	Hash func(K) uint64
	// Key encodes keys; required with checkpoints and a state database.
	Key process.KeyCodec[K]
	// State keeps the states and timers in this database instead of in
	// memory, with the keys used last at hand up to its share of the
	// cache (state.DB.CacheBudget); it needs Key and Hash. Checkpoints
	// are written from it a key at a time.
	State *state.DB
	// Out is the main output; Sides the side outputs' consumers by name
	// (a func(V) for each *process.Output[V] of Func.Sides), and
	// SideSignals their streams' signals.
	Out         *Stream[O]
	Sides       map[string]any
	SideSignals []func(Signal)
}

// ProcessStatus is what a keyed process stage holds and did, in a status
// report.
type ProcessStatus struct {
	Name string `json:"name"`
	// Keys with state or timers; timers set, by domain.
	Keys             int64 `json:"keys"`
	EventTimers      int64 `json:"event_timers"`
	ProcessingTimers int64 `json:"processing_timers"`
	// Elements processed; timers fired, by domain.
	Elements              int64 `json:"elements"`
	FiredEventTimers      int64 `json:"fired_event_timers"`
	FiredProcessingTimers int64 `json:"fired_processing_timers"`
}

// Process is a keyed process function's stage (package process) on a
// keyed input of the source loop. It runs in the goroutine that feeds it,
// as a join does: its elements and signals come in one order, so that the
// same input in the same order gives the same output, and a checkpoint
// barrier takes its state as it comes.
type Process[K comparable, T, O any] struct {
	e        *Engine
	cfg      ProcessConfig[K, T, O]
	p        *Participant
	op       *process.Op[K, T, O]
	d        *exec.Driver[K, T]
	ended    bool
	failed   bool
	restored int

	// Out receives the main output.
	Out *Stream[O]
}

// NewProcess builds a keyed process stage, restoring its state if the job
// resumes.
func NewProcess[K comparable, T, O any](e *Engine, cfg ProcessConfig[K, T, O]) (*Process[K, T, O], error) {
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 1
	}
	if err := cfg.Watermark.Validate(); err != nil {
		return nil, err
	}
	if e.Checkpointed() && (cfg.Key == nil || cfg.Hash == nil) {
		return nil, fmt.Errorf("engine: process %s: checkpoints need a codec and a stable hash of the keys", cfg.Name)
	}
	if cfg.State != nil && (cfg.Key == nil || cfg.Hash == nil) {
		return nil, fmt.Errorf("engine: process %s: a state database needs a codec and a stable hash of the keys", cfg.Name)
	}
	p, err := e.participant(cfg.Name, partProcess)
	if err != nil {
		return nil, err
	}
	s := &Process[K, T, O]{e: e, cfg: cfg, p: p, Out: cfg.Out}
	if s.Out == nil {
		s.Out = &Stream[O]{}
	}
	if s.op, err = process.New(process.Config[K, T, O]{Func: cfg.Func, Emit: s.Out.Push, Sides: cfg.Sides}); err != nil {
		return nil, fmt.Errorf("engine: process %s: %w", cfg.Name, err)
	}
	if cfg.State != nil {
		s.op.OnDisk(cfg.State, cfg.Name, cfg.Key, cfg.Hash, exec.KeyGroups, cfg.State.CacheBudget())
	}
	s.d = exec.NewDriver[K, T]((*processTarget[K, T, O])(s), cfg.Watermark, true)
	if clock := p.File("clock"); clock != nil {
		if err := s.restore(clock); err != nil {
			return nil, fmt.Errorf("cannot restore %s: %s: %w", e.resumed.Path, p.FileName("clock"), err)
		}
	}
	e.OnStatus(s.status)
	return s, nil
}

func (s *Process[K, T, O]) restore(clock []byte) error {
	n, err := restoreParted(s.e, s.p, clock, func(d *enc.Decoder) error {
		if err := s.d.RestoreState(d); err != nil {
			return err
		}
		return s.op.RestoreHeader(d)
	}, func(r io.Reader) error { return s.op.RestoreKeysFrom(r, s.cfg.Key) })
	s.restored = n
	return err
}

// RestoredInstances is the parallelism of the checkpoint the stage was
// restored from, 0 when it started afresh.
func (s *Process[K, T, O]) RestoredInstances() int { return s.restored }

// Stats is what the stage holds and did so far.
func (s *Process[K, T, O]) Stats() ProcessStatus {
	st := s.op.Stats()
	ev, pt := s.op.Timers()
	return ProcessStatus{Name: s.cfg.Name, Keys: int64(s.op.Keys()), EventTimers: int64(ev), ProcessingTimers: int64(pt),
		Elements: st.Elements, FiredEventTimers: st.Fired[process.EventTime], FiredProcessingTimers: st.Fired[process.ProcessingTime]}
}

func (s *Process[K, T, O]) status(st *Status) {
	ps := s.Stats()
	st.Keys += ps.Keys
	st.Processes = append(st.Processes, ps)
}

// fail stops the job with the function's error; the stage does nothing
// more.
func (s *Process[K, T, O]) fail(err error) {
	if err != nil && !s.failed {
		s.failed = true
		s.e.Fail(fmt.Errorf("%s: %w", s.cfg.Name, err))
	}
}

// Element sends an element of the input's watermark partition part.
func (s *Process[K, T, O]) Element(part int, key K, ts mtime.Time, v T) {
	if !s.failed {
		s.d.Event(part, key, ts, v)
	}
}

// Signal takes the source loop's signals.
func (s *Process[K, T, O]) Signal(sg Signal) {
	switch sg.Kind {
	case Proc:
		s.d.Advance(sg.Now)
	case Watermark:
		s.d.Advance(sg.Now)
		if s.cfg.Watermark.Kind == watermark.Scripted {
			s.d.SetWatermark(sg.Watermark)
		}
		return // the stage's own watermark goes on instead
	case Barrier:
		s.barrier(sg.Barrier)
	case End:
		if s.ended {
			return
		}
		s.ended = true
		s.d.End()
	case Stop:
		if s.ended {
			return
		}
		s.ended = true
	}
	s.signal(sg)
}

func (s *Process[K, T, O]) signal(sg Signal) {
	s.Out.Signal(sg)
	for _, f := range s.cfg.SideSignals {
		f(sg)
	}
}

// barrier acknowledges a checkpoint with the stage's state: its clocks,
// and its keys' state and timers by key group, in as many parts as its
// parallelism. States and timers in a state database are written from it
// into a file a part, read a key at a time (the same bytes), never whole
// in memory.
func (s *Process[K, T, O]) barrier(b *CheckpointBarrier) {
	head := func(clock []byte) []byte {
		return s.op.AppendHeader(s.d.AppendState(clock))
	}
	if db := s.cfg.State; db != nil {
		ackPartedDB(b, s.p, s.cfg.Parallelism, head, db, "process "+s.cfg.Name, func(w io.Writer, keep func(int) bool) error {
			return s.op.WriteKeys(w, s.cfg.Key, s.cfg.Hash, exec.KeyGroups, keep)
		}, s.op.Err)
		return
	}
	ackParted(b, s.p, s.cfg.Parallelism, head, func(keep func(int) bool) ([]byte, error) {
		return s.op.AppendKeys(nil, s.cfg.Key, s.cfg.Hash, exec.KeyGroups, keep)
	})
}

// processTarget is the stage as the target of its watermark's driver.
type processTarget[K comparable, T, O any] Process[K, T, O]

func (t *processTarget[K, T, O]) Event(key K, ts, _ mtime.Time, v T) {
	if !t.failed {
		(*Process[K, T, O])(t).fail(t.op.Element(key, ts, v))
	}
}

// Aside implements exec.Target: nothing is set aside before the function.
func (t *processTarget[K, T, O]) Aside(key K, ts, now mtime.Time, v T, _ string) {
	t.Event(key, ts, now, v)
}

// Proc implements exec.Target: processing time moved.
func (t *processTarget[K, T, O]) Proc(now mtime.Time) {
	if !t.failed {
		(*Process[K, T, O])(t).fail(t.op.AdvanceProcessingTime(now))
	}
}

// Watermark implements exec.Target: the watermark moved; the timers it
// reaches fire before it goes on.
func (t *processTarget[K, T, O]) Watermark(w, now mtime.Time) {
	s := (*Process[K, T, O])(t)
	if !t.failed {
		s.fail(t.op.AdvanceWatermark(w))
	}
	s.signal(Signal{Kind: Watermark, Watermark: w, Now: now})
}

// End implements exec.Target: the input ended; every event-time timer
// fires.
func (t *processTarget[K, T, O]) End(mtime.Time) {
	if !t.failed {
		(*Process[K, T, O])(t).fail(t.op.AdvanceWatermark(mtime.MaxTime))
	}
}

// ProcessState is a keyed process stage's state in a checkpoint.
type ProcessState struct {
	Name string
	// Instances is the number of parts its state is kept in.
	Instances int
	Watermark mtime.Time
	// Keys with state or timers; Bytes the size of the stage's files.
	Keys, Bytes int64
}

// inspectProcess reads what a checkpoint holds of the process stage name.
func inspectProcess(c *checkpoint.Checkpoint, name string) (ProcessState, error) {
	ps, err := inspectParted(c, name, nil)
	return ProcessState{Name: name, Instances: ps.instances, Watermark: ps.watermark, Keys: ps.keys, Bytes: ps.bytes}, err
}
