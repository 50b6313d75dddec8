package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
)

// Txn is one task's part of its thread's transactions (a task of a
// consumer-group job, Thread): the Kafka sinks of the task (its results,
// its too-late events, its quarantine) hold what they write until the
// task's checkpoint, and the checkpoint's output, its changelog records
// and its input offset then go into one transaction of the thread, so that
// a checkpoint's output, state and input position are committed together,
// or not at all.
//
// The task's source (Source with Txn) reads its partition through the
// thread's client too.
type Txn struct {
	thread *Thread
	// Topic is what the task reads, and Partition its partition of it
	// (and of the changelog).
	Topic     string
	Partition int32

	mu      sync.Mutex
	members int
	units   map[uint64]*unit // pre-committed, not committed yet
	last    uint64           // the last checkpoint committed
	closed  bool
	failed  atomic.Pointer[error]
}

// member is one sink of a Txn: what it wrote since its last pre-commit.
type member struct {
	held  []*kgo.Record
	bytes atomic.Int64
}

// Txn returns the transactions of the task of partition part of topic.
func (t *Thread) Txn(topic string, part int32) *Txn {
	return &Txn{thread: t, Topic: topic, Partition: part, units: map[uint64]*unit{}}
}

func (t *Txn) join() *member {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.members++
	return &member{}
}

// setFailed records the error that ends the task's transactions: once a
// checkpoint's transaction failed, the task must start again from its
// changelog, so the error is permanent to whoever retries.
func (t *Txn) setFailed(err error) error {
	err = connector.Permanent(err)
	t.failed.CompareAndSwap(nil, &err)
	return *t.failed.Load()
}

func (t *Txn) err() error {
	if e := t.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// produce holds recs, m's, for its next pre-commit.
func (t *Txn) produce(m *member, recs []*kgo.Record) error {
	if err := t.err(); err != nil {
		return err
	}
	var n int64
	for _, r := range recs {
		n += int64(size(r.Key, r.Value, nil))
	}
	m.held = append(m.held, recs...)
	m.bytes.Add(n)
	return nil
}

// unit is the unit of checkpoint; t.mu is held.
func (t *Txn) unit(checkpoint uint64) *unit {
	u := t.units[checkpoint]
	if u == nil {
		u = &unit{txn: t, checkpoint: checkpoint, offset: -1, done: make(chan struct{})}
		t.units[checkpoint] = u
	}
	return u
}

// preCommit hands what m holds to checkpoint's transaction.
func (t *Txn) preCommit(m *member, checkpoint uint64) ([]byte, error) {
	if err := t.err(); err != nil {
		return nil, err
	}
	if checkpoint == 0 {
		return nil, errors.New("a task's transactions need checkpoints")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.unit(checkpoint)
	if u.submitted {
		return nil, t.setFailed(fmt.Errorf("the transaction of checkpoint %d was committed before every output of the task joined it", checkpoint))
	}
	u.records = append(u.records, m.held...)
	m.held = nil
	m.bytes.Store(0)
	return pre{}.encode(), nil
}

// Committed is the last checkpoint whose transaction committed.
func (t *Txn) Committed() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// Publish adds records (the task's changelog for checkpoint) to the
// transaction that holds the checkpoint, with the task's input offset
// there (the next to read; -1 for none), once every sink has pre-committed
// it and before it is committed. A task without sinks commits it here.
func (t *Txn) Publish(ctx context.Context, checkpoint uint64, recs []*kgo.Record, offset int64) error {
	if err := t.err(); err != nil {
		return err
	}
	t.mu.Lock()
	u := t.unit(checkpoint)
	u.records = append(u.records, recs...)
	u.offset, u.published = offset, true
	alone := t.members == 0
	t.mu.Unlock()
	if alone {
		return t.commit(ctx, checkpoint)
	}
	return nil
}

// commit commits the transaction of checkpoint, once (the first of the
// task's sinks to ask does it): its unit goes to the thread, and the
// call waits until the thread's transaction that holds it is decided.
func (t *Txn) commit(ctx context.Context, checkpoint uint64) error {
	if err := t.err(); err != nil {
		return err
	}
	t.mu.Lock()
	if checkpoint <= t.last {
		t.mu.Unlock()
		return nil
	}
	u := t.units[checkpoint]
	switch {
	case u == nil:
		t.mu.Unlock()
		return t.setFailed(fmt.Errorf("no transaction of the task holds checkpoint %d", checkpoint))
	case !u.published:
		// Output without its changelog must not become visible: the
		// checkpoint failed before it was published.
		t.mu.Unlock()
		return t.setFailed(fmt.Errorf("the transaction of checkpoint %d holds no changelog", checkpoint))
	case t.closed:
		t.mu.Unlock()
		return t.setFailed(errors.New("the task's transactions are closed"))
	}
	submit := !u.submitted
	t.mu.Unlock()
	if submit {
		if err := t.thread.submit(u); err != nil {
			return t.setFailed(err)
		}
	}
	select {
	case <-u.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if u.err != nil {
		return t.setFailed(fmt.Errorf("the transaction of checkpoint %d: %w", checkpoint, u.err))
	}
	t.mu.Lock()
	t.last = max(t.last, checkpoint)
	for id := range t.units {
		if id <= checkpoint {
			delete(t.units, id)
		}
	}
	t.mu.Unlock()
	return nil
}

// leave is a sink's Close.
func (t *Txn) leave(m *member) {
	m.held = nil
	m.bytes.Store(0)
}

// Close ends the task's transactions: a checkpoint not in a transaction yet
// never will be; one that a transaction of the thread under way holds is
// decided with it (Thread.Settle).
func (t *Txn) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.thread.withdraw(t)
}
