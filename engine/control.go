package engine

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// Control is the handle on a running job: what cmd/weir's signals, weir
// savepoint and the status endpoints use. Its methods are safe to call from
// any goroutine.
type Control struct{ e *Engine }

// Control returns the job's control handle.
func (e *Engine) Control() *Control { return &Control{e} }

type ctlKind uint8

const (
	ctlSavepoint ctlKind = iota
	ctlStatus
	ctlStop
)

type controlReq struct {
	kind        ctlKind
	reply       chan savepointResult
	status      chan Status
	noSavepoint bool
}

// ErrNotRunning is returned by a request to a job that is not running (not
// started yet, or finished).
var ErrNotRunning = errors.New("the job is not running")

func (c *Control) send(ctx context.Context, req controlReq) error {
	if !c.e.running.Load() {
		return ErrNotRunning
	}
	select {
	case c.e.control <- req:
		return nil
	case <-c.e.finished:
		return ErrNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Savepoint takes a savepoint now and returns its directory once it is
// durable (and the output it covers committed).
func (c *Control) Savepoint(ctx context.Context) (string, error) {
	reply := make(chan savepointResult, 1)
	if err := c.send(ctx, controlReq{kind: ctlSavepoint, reply: reply}); err != nil {
		return "", err
	}
	select {
	case r := <-reply:
		return r.path, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Stop stops the job before the end of its input: with a savepoint (unless
// noSavepoint, or the job has no checkpoints), then the stages stop. It
// returns the savepoint's directory ("" without one) once the job has
// stopped. A stop takes effect within the engine's StopGrace whatever the job
// is doing: a job that cannot reach the savepoint by then stops without it.
func (c *Control) Stop(ctx context.Context, noSavepoint bool) (string, error) {
	reply := make(chan savepointResult, 1)
	if err := c.send(ctx, controlReq{kind: ctlStop, reply: reply, noSavepoint: noSavepoint}); err != nil {
		return "", err
	}
	select {
	case r := <-reply:
		return r.path, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Status reports where the job stands. It asks the source loop, which answers
// between two batches; when the loop does not answer within timeout (a job
// blocked on a full sink), the last status is returned with Stale set.
func (c *Control) Status(ctx context.Context, timeout time.Duration) Status {
	e := c.e
	reply := make(chan Status, 1)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.send(ctx, controlReq{kind: ctlStatus, status: reply}); err == nil {
		select {
		case s := <-reply:
			return s
		case <-ctx.Done():
		}
	}
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	s := e.lastStatus
	s.Stale = true
	if !e.running.Load() || isClosed(e.finished) {
		s.State = "stopped"
	}
	return s
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Status is a report of a running job.
type Status struct {
	Job   string `json:"job"`
	State string `json:"state"` // running, stopped
	Live  bool   `json:"live"`
	// Stale is set when the source loop did not answer in time: the report
	// is the last one it gave.
	Stale bool `json:"stale,omitempty"`
	// At is the wall clock of the report; ProcessingTime the job's.
	At             time.Time  `json:"at"`
	ProcessingTime mtime.Time `json:"processing_time"`
	// Watermark is the combined watermark of the first window stage.
	Watermark mtime.Time `json:"watermark"`
	// WatermarkGap is processing time minus the watermark (ms): how far
	// results lag behind the clock; EventTimeSkew the spread of the
	// partitions' watermarks (ms).
	WatermarkGap  int64 `json:"watermark_gap_ms"`
	EventTimeSkew int64 `json:"event_time_skew_ms"`
	// WatermarkDelay is the bounded out-of-orderness of the first window
	// stage's watermark (ms; 0 for the other kinds): alerts compare the gap
	// with it.
	WatermarkDelay int64 `json:"watermark_delay_ms"`
	// Partitions: one per watermark partition.
	Partitions []PartitionStatus `json:"partitions"`
	// HeldBy names the partition that holds the combined watermark back
	// (the slowest of those that are not idle, while others are ahead),
	// and since when (processing time).
	HeldBy      string     `json:"held_back_by,omitempty"`
	HeldBySince mtime.Time `json:"held_back_since,omitempty"`
	// Sources: what each source reports of its partitions.
	Sources []SourceStatus `json:"sources,omitempty"`
	// Counts: the job's accounting so far.
	Counts Counts `json:"counts"`
	// Windows: open windows and keys with state, over every stage.
	OpenWindows int64 `json:"open_windows"`
	Keys        int64 `json:"keys"`
	// PanesByTiming counts the panes fired (retractions included).
	PanesByTiming map[string]int64 `json:"panes_by_timing"`
	// Joins: what each interval join holds and did.
	Joins []JoinStatus `json:"joins,omitempty"`
	// Processes: what each keyed process function holds and did.
	Processes []ProcessStatus `json:"processes,omitempty"`
	// Lookups: what each lookup join did.
	Lookups []LookupStatus `json:"lookups,omitempty"`
	// Aggregations: in a job of several aggregations that read one
	// source, each one's accounting (Counts is the first's), by name.
	Aggregations []AggregationStatus `json:"aggregations,omitempty"`
	// Inputs: in a job that reads several inputs into a join, each one's
	// accounting (Counts is the first's), by name.
	Inputs []InputStatus `json:"inputs,omitempty"`
	// StateBytes estimates the memory and disk the state takes.
	StateBytes int64 `json:"state_bytes"`
	// Backpressure says why reading is paused (a sink that cannot commit),
	// or is empty.
	Backpressure string `json:"backpressure,omitempty"`
	// PaneLatency is how long after its firing a pane reached the sinks in
	// a live job (wall clock), as a histogram.
	PaneLatency Histogram `json:"pane_latency"`
	// BehindWatermark is how far behind the watermark each event that came
	// behind it was (event time to watermark at its arrival), late and too
	// late alike: what an allowed lateness would have to cover. Nil before
	// the first.
	BehindWatermark *Histogram `json:"behind_watermark,omitempty"`
	// Sinks: items written and committed per sink.
	Sinks      []SinkStatus   `json:"sinks,omitempty"`
	Checkpoint CheckpointInfo `json:"checkpoint"`
}

// AggregationStatus is what one aggregation of a job of several has
// counted: its input's accounting (the same as every other's) with what its
// windows took, set aside and fired.
type AggregationStatus struct {
	Name      string     `json:"name"`
	Watermark mtime.Time `json:"watermark"`
	Counts    Counts     `json:"counts"`
}

// InputStatus is the accounting of one input of a job of several
// (HeadConfig.Input).
type InputStatus struct {
	Name   string `json:"name"`
	Counts Counts `json:"counts"`
}

// PartitionStatus is one watermark partition.
type PartitionStatus struct {
	Name         string     `json:"name"`
	Watermark    mtime.Time `json:"watermark"`
	MaxEventTime mtime.Time `json:"max_event_time"`
	// LastEvent is the processing time of the partition's last event.
	LastEvent mtime.Time `json:"last_event"`
	Idle      bool       `json:"idle"`
	// Backlog is what its source says is waiting (-1: unknown); Err the
	// source's last error reaching it.
	Backlog int64  `json:"backlog"`
	Err     string `json:"error,omitempty"`
	// Diagnosis is one of active, inactive (caught up, no recent events),
	// backlogged (records waiting), transport interrupted (the source
	// cannot reach it) and declared idle (the idle rule applies: it does not
	// hold the watermark back).
	Diagnosis string `json:"diagnosis"`
	// HoldsBack is set on the partition that holds the watermark back.
	HoldsBack bool `json:"holds_back,omitempty"`
	// Paused is set while the watermark alignment (max_drift) keeps the
	// partition from being read: it ran too far ahead of the others.
	Paused bool `json:"paused,omitempty"`
	// EventDelay is how long after its event time each event of the
	// partition arrived (its arrival time, or the processing time when it
	// was read, minus its event time): what the watermark's delay has to
	// cover, measured on the running job. Nil before the first event.
	EventDelay *Histogram `json:"event_delay,omitempty"`

	tracked bool // in the watermark's partitions: it can hold it back
}

// The diagnoses of a partition.
const (
	DiagActive      = "active"
	DiagInactive    = "inactive"
	DiagBacklogged  = "backlogged"
	DiagInterrupted = "transport interrupted"
	DiagIdle        = "declared idle"
	// DiagFinished is a partition of an input that has ended: the
	// watermark is at the end of time.
	DiagFinished = "finished"
)

// Histogram counts observations in buckets of upper bounds (ms).
type Histogram struct {
	Bounds []float64 `json:"bounds_ms"`
	Counts []int64   `json:"counts"` // per bucket, the last one above every bound
	Sum    float64   `json:"sum_ms"`
	Count  int64     `json:"count"`
}

// SourceStatus is what a source reports.
type SourceStatus struct {
	Name       string                      `json:"name"`
	Partitions []connector.PartitionReport `json:"partitions"`
}

// SinkStatus is one sink's output so far.
type SinkStatus struct {
	Name      string `json:"name"`
	Written   int64  `json:"written"`
	Committed int64  `json:"committed"`
	Guarantee string `json:"guarantee"`
	// CommitLatency is how long its last commit took (ms).
	CommitLatency float64 `json:"commit_latency_ms"`
	// Refused counts the items it refused for a reason of their own (a
	// value it cannot store): not written there, sent to its dead letter.
	Refused int64 `json:"refused"`
}

// heldBack names the partition that holds the watermark back, the slowest
// of those that are not idle while another is ahead, and the partitions'
// skew: over every input's partitions at once (a join's watermark is its
// inputs' slowest). Since when is the processing time of its last event
// when it became the one.
func (e *Engine) heldBack(s *Status) {
	lo, hi, holder := mtime.MaxTime, mtime.MinTime, -1
	for i, p := range s.Partitions {
		if !p.tracked || p.Idle {
			continue
		}
		if p.Watermark < lo {
			lo, holder = p.Watermark, i
		}
		hi = max(hi, p.Watermark)
	}
	if holder >= 0 && lo < hi {
		p := &s.Partitions[holder]
		if p.Name != e.holder {
			e.holder, e.holderSince = p.Name, p.LastEvent
		}
		p.HoldsBack = true
		s.HeldBy, s.HeldBySince = p.Name, e.holderSince
	} else {
		e.holder = ""
	}
	if lo < hi && lo != mtime.MinTime {
		s.EventTimeSkew = int64(hi - lo)
	}
}

// makeStatus runs in the source loop.
func (e *Engine) makeStatus() Status {
	s := Status{Job: e.cfg.Name, State: "running", Live: e.cfg.Live, At: time.Now(), ProcessingTime: e.now, Watermark: mtime.MinTime}
	for _, f := range e.status {
		f(&s)
	}
	e.heldBack(&s)
	if e.coord != nil {
		s.Checkpoint = e.coord.Last()
		s.Backpressure = cmp.Or(e.coord.Stalled(), e.heldStatus())
	}
	e.statusMu.Lock()
	e.lastStatus = s
	e.statusMu.Unlock()
	return s
}
