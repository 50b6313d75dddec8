package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/weirstream/weir/connector"
)

// SinkNode is a Consumer that writes a stream to a connector.Sink, in
// batches, and takes part in checkpoints: at a barrier it pre-commits the
// sink, and the coordinator commits it once the checkpoint is durable.
type SinkNode[T any] struct {
	e      *Engine
	name   string
	s      connector.Sink[T]
	p      *Participant
	buf    []T
	ckpt   bool
	batch  int
	since  int64 // items written since the last pre-commit or flush
	failed bool
	// holder says how much of its output the sink holds in memory until
	// its next pre-commit; held is that, for the source loop (nil without
	// checkpoints, or for a sink that holds nothing).
	holder connector.Holder
	held   *heldOutput

	flushed atomic.Int64 // without checkpoints: items written and flushed
	pushed  atomic.Int64

	// Items the sink refused (connector.RefusedError): counted, and handed
	// to the dead-letter stream in the order of the stream.
	refused atomic.Int64
	dead    Stream[Refused[T]]
}

// Refused is an item a sink refused for a reason of its own, as its
// dead-letter output gets it.
type Refused[T any] struct {
	// Sink names the sink that refused it (its job-file field).
	Sink string
	// Reason is the sink's error for this item.
	Reason string
	Item   T
}

// sinkBatch is how many items a SinkNode gathers before it writes them.
const sinkBatch = 512

// SinkOption configures one sink.
type SinkOption func(*sinkOptions)

type sinkOptions struct {
	accept    connector.Guarantee
	acceptSet bool
	record    string
	former    []string
}

// RecordName names the sink's commit record in checkpoints: key instead of
// the sink's name, so that the record follows the sink itself when the job
// changes around it (a job file's outputs reordered, or one output made a
// list). A checkpoint that knows the record under one of the former names
// (written before) restores it too.
func RecordName(key string, former ...string) SinkOption {
	return func(o *sinkOptions) { o.record, o.former = key, former }
}

// Accept says the job accepts g from this sink, whatever its delivery
// promise for the others (a Kafka sink the job file configures with
// delivery: at_least_once).
func Accept(g connector.Guarantee) SinkOption {
	return func(o *sinkOptions) { o.accept, o.acceptSet = g, true }
}

// NewSink adds a sink to the job under name (a job-file field, such as
// "output" or "late_output", so that errors name it). With checkpoints, a
// sink whose guarantee does not keep the job's delivery promise is refused
// with a *SetupError.
func NewSink[T any](e *Engine, name string, s connector.Sink[T], opts ...SinkOption) (*SinkNode[T], error) {
	var so sinkOptions
	for _, o := range opts {
		o(&so)
	}
	n := &SinkNode[T]{e: e, name: name, s: s, ckpt: e.Checkpointed(), batch: sinkBatch}
	if n.ckpt {
		want := connector.ExactlyOnce
		if e.cfg.Checkpoint.DeliverySet {
			want = e.cfg.Checkpoint.Delivery
		}
		if so.acceptSet {
			want = so.accept
		}
		if g := s.Guarantee(); !g.Satisfies(want) {
			return nil, &SetupError{Field: name, Msg: fmt.Sprintf("%s: this sink is %s: after a restart from a checkpoint it may write results again, and the job promises %s", name, g, want)}
		}
	}
	if e.rerun != "" {
		if rw, ok := s.(connector.Rewriter); !ok || !rw.Rewrites() {
			e.unsafe = append(e.unsafe, name)
		}
	}
	record := name
	if so.record != "" {
		record = so.record
	}
	p, err := e.participant(SinkPart(record), partSink)
	if err != nil {
		return nil, err
	}
	p.label = record
	n.p = p
	p.marker, _ = s.(connector.Marker)
	if h, ok := s.(connector.Holder); ok && n.ckpt {
		n.holder, n.held = h, &heldOutput{name: name}
		e.held = append(e.held, n.held)
	}
	var resume connector.Resume
	var committed int64
	var restored []preCommit
	if c := e.resumed; c != nil {
		data := p.File("")
		for _, f := range so.former {
			if data == nil {
				data = c.Files[SinkPart(f)]
			}
		}
		if data == nil {
			// The checkpoint was taken before this sink was part of the
			// job: it starts afresh, with the results from the restore
			// point on.
			e.added = append(e.added, name)
			e.log(fmt.Sprintf("warning: %s is new since %s: it gets the results from there on, not those before", name, c.Path))
		} else {
			var mark []byte
			if restored, committed, mark, err = decodeRecord(data, e.resumedLayout); err != nil {
				return nil, fmt.Errorf("cannot restore %s: %s is corrupt", c.Path, p.name)
			}
			resume = connector.Resume{From: c.Manifest.ID, Mark: mark}
			for _, pc := range restored {
				resume.Pending = append(resume.Pending, connector.PreCommit{Checkpoint: pc.id, Data: pc.data})
			}
			p.mark = mark
		}
	}
	p.commit = func(ctx context.Context, id uint64, pre []byte) error { return s.Commit(ctx, id, pre) }
	p.final = func(ctx context.Context, id uint64) ([]byte, int64, error) {
		n.write()
		pre, err := n.preCommit(id)
		items := n.since
		n.since = 0
		return pre, items, err
	}
	e.OnStart(func(ctx context.Context) error {
		// A database or broker that is not up yet is waited for, as a
		// write waits for it.
		if err := e.Retry(name+" open", func() error { return s.Open(ctx, resume) }); err != nil {
			return n.wrap("open", err)
		}
		p.committed.Store(committed)
		p.remark()
		published := e.cfg.Checkpoint.Publish != nil
		for _, pc := range restored {
			if published {
				// A published checkpoint was committed with its output,
				// in one transaction: nothing of it is pending.
				p.committed.Add(pc.items)
				continue
			}
			if err := e.Retry(name+" commit", func() error { return s.Commit(ctx, pc.id, pc.data) }); err != nil {
				return n.wrap(fmt.Sprintf("commit (checkpoint %d, again after the restart)", pc.id), err)
			}
			p.committed.Add(pc.items)
			p.remark()
		}
		return nil
	})
	if st, ok := s.(connector.Starter); ok {
		if len(restored) > 0 && e.cfg.Checkpoint.Publish == nil {
			// Starting may fence the producers whose transactions were
			// just committed again: a checkpoint that no longer holds them
			// must be durable first (see Engine.recordRecommitted).
			e.recommitted = true
		}
		e.onStarted = append(e.onStarted, func(ctx context.Context) error {
			if err := e.Retry(name+" start", func() error { return st.Start(ctx) }); err != nil {
				return n.wrap("start", err)
			}
			return nil
		})
	}
	e.OnStatus(func(st *Status) {
		st.Sinks = append(st.Sinks, SinkStatus{Name: name, Written: n.pushed.Load(), Committed: n.Written(), Guarantee: s.Guarantee().String(),
			CommitLatency: float64(p.commitNs.Load()) / 1e6, Refused: n.refused.Load()})
	})
	e.closers = append(e.closers, func() error { return s.Close() })
	return n, nil
}

func (n *SinkNode[T]) wrap(op string, err error) error {
	var ce *connector.Error
	if errors.As(err, &ce) {
		return err
	}
	return &connector.Error{Connector: n.name, Op: op, Err: err}
}

// Refusals is the stream of the items the sink refuses, with why, in the
// order of its own stream: subscribe a dead-letter sink to it (before the
// job runs). Every signal the sink gets goes on to it, after the sink has
// handled it, so that a refusal belongs to the same checkpoint as the
// items around it.
func (n *SinkNode[T]) Refusals() *Stream[Refused[T]] { return &n.dead }

// RefusedCount is how many items the sink has refused.
func (n *SinkNode[T]) RefusedCount() int64 { return n.refused.Load() }

// refuse accounts for the items a Write refused and passes them on.
func (n *SinkNode[T]) refuse(items []T, re *connector.RefusedError) {
	for _, it := range re.Items {
		if it.Index < 0 || it.Index >= len(items) {
			continue
		}
		total := n.refused.Add(1)
		if n.dead.Consumers() > 0 {
			n.dead.Push(Refused[T]{Sink: n.name, Reason: it.Reason, Item: items[it.Index]})
		} else if total <= 10 || total%1000 == 0 {
			n.e.log(fmt.Sprintf("warning: %s refused an item (%d so far): %s; it is not written there (a dead_letter on the output keeps what it refuses)", n.name, total, it.Reason))
		}
	}
}

// SetBatch sets how many items the node gathers before it writes them
// (default 512; 1 writes each item as it comes).
func (n *SinkNode[T]) SetBatch(items int) { n.batch = max(items, 1) }

// Written is how many items have reached readers: committed at a checkpoint,
// or, without checkpoints, written and flushed.
func (n *SinkNode[T]) Written() int64 {
	if n.ckpt {
		return n.p.committed.Load()
	}
	return n.flushed.Load()
}

// Push implements Consumer.
func (n *SinkNode[T]) Push(v T) {
	n.buf = append(n.buf, v)
	if len(n.buf) >= n.batch {
		n.write()
	}
}

func (n *SinkNode[T]) write() {
	if len(n.buf) == 0 {
		return
	}
	if !n.failed {
		err := n.s.Write(n.e.sinkCtx, n.buf)
		refused := refusedBy(err)
		if err != nil && refused == nil {
			err = retryAfter(n.e, n.name+" write", err, func() error { return n.s.Write(n.e.sinkCtx, n.buf) })
			refused = refusedBy(err)
		}
		switch {
		case refused != nil:
			n.refuse(n.buf, refused)
			written := int64(len(n.buf) - len(refused.Items))
			n.since += written
			n.pushed.Add(written)
		case err != nil:
			n.fail("write", err)
		default:
			n.since += int64(len(n.buf))
			n.pushed.Add(int64(len(n.buf)))
		}
		n.noteHeld()
	}
	clear(n.buf)
	n.buf = n.buf[:0]
}

// refusedBy is err's RefusedError, or nil. It is a function of its own so
// that a write that succeeds does not allocate the variable errors.As
// writes into (it escapes): that was an allocation per pane.
func refusedBy(err error) *connector.RefusedError {
	if err == nil {
		return nil
	}
	var r *connector.RefusedError
	if errors.As(err, &r) {
		return r
	}
	return nil
}

// noteHeld tells the source loop how much the sink holds now.
func (n *SinkNode[T]) noteHeld() {
	if n.held != nil {
		n.e.setHeld(n.held, n.holder.HeldBytes())
	}
}

func (n *SinkNode[T]) fail(op string, err error) {
	n.failed = true
	if n.e.sinkCtx.Err() != nil && (n.e.Err() != nil || n.e.stopAsked.Load()) {
		return // the job is aborting: the cause is reported already, or it is a stop
	}
	n.e.Fail(n.wrap(op, err))
}

func (n *SinkNode[T]) flush() {
	n.write()
	if n.failed || n.ckpt {
		return
	}
	flush := func() error { return n.s.Flush(n.e.sinkCtx) }
	if n.s.Guarantee() == connector.ExactlyOnce {
		// Without checkpoints a transactional sink commits at every flush.
		flush = func() error {
			pre, err := n.s.PreCommit(n.e.sinkCtx, 0)
			if err != nil {
				return err
			}
			return n.s.Commit(n.e.sinkCtx, 0, pre)
		}
	}
	if err := n.e.Retry(n.name+" flush", flush); err != nil {
		n.fail("flush", err)
		return
	}
	n.flushed.Add(n.since)
	n.since = 0
}

func (n *SinkNode[T]) preCommit(id uint64) ([]byte, error) {
	if n.failed {
		return nil, errors.New("the sink failed")
	}
	var pre []byte
	err := n.e.Retry(n.name+" pre-commit", func() error {
		var err error
		pre, err = n.s.PreCommit(n.e.sinkCtx, id)
		return err
	})
	return pre, err
}

// Signal implements Consumer: the sink handles s, then its dead-letter
// stream gets it.
func (n *SinkNode[T]) Signal(s Signal) {
	n.signal(s)
	n.dead.Signal(s)
}

func (n *SinkNode[T]) signal(s Signal) {
	switch s.Kind {
	case Flush:
		n.flush()
	case Barrier:
		n.write()
		pre, err := n.preCommit(s.Barrier.ID)
		if err != nil {
			s.Barrier.Fail(n.p, n.wrap("pre-commit", err))
			return
		}
		s.Barrier.PreCommitted(n.p, pre, n.since)
		n.since = 0
		n.noteHeld()
	case End:
		if n.ckpt {
			n.write() // pre-committed by the final checkpoint
		} else {
			n.flush()
		}
	case Stop:
		if n.ckpt {
			// What came after the last barrier is not part of any
			// checkpoint: a restart computes it again.
			clear(n.buf)
			n.buf = n.buf[:0]
		} else {
			n.flush()
		}
	}
}
