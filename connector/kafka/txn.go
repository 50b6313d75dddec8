package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
)

// Txn is the transactions of one task of a consumer-group job: the Kafka
// sinks of the task (its results, its too-late events, its quarantine)
// share its producers, and the task's changelog goes with them, so that one
// checkpoint's output, state and input positions are one Kafka transaction.
//
// The producers' transactional ids name the task (its input partition), not
// the instance: the instance that takes a partition over starts them, which
// fences the one that had it before (its open transaction is aborted, and
// its producer can commit nothing more). Kafka Streams did the same before
// exactly-once v2 (a producer per task).
//
// Like Sink, a few producers take turns: one collects the records of the
// next checkpoint while the one before is committed.
type Txn struct {
	Config
	// TransactionalID is the prefix of the producers' ids: the same for the
	// task from instance to instance.
	TransactionalID string
	// TransactionTimeout is how long the brokers let a transaction stay
	// open: a dead owner's open transaction holds read_committed readers
	// back this long, unless the partition's next owner fences it sooner.
	TransactionTimeout time.Duration
	// Changelog is the topic of the job's state, and Partition the task's
	// partition of it.
	Changelog string
	Partition int32

	mu      sync.Mutex
	cond    *sync.Cond
	slots   []*slot
	members int
	closed  int
	last    uint64 // the last checkpoint committed
	started bool
	failed  atomic.Pointer[error]
	promise func(*kgo.Record, error)
}

// member is one sink of a Txn: the producer it writes to now.
type member struct{ cur int }

func (t *Txn) init() {
	if t.cond != nil {
		return
	}
	t.cond = sync.NewCond(&t.mu)
	t.promise = func(r *kgo.Record, err error) {
		if err != nil {
			t.setFailed(err)
		}
	}
	for i := range Pool {
		t.slots = append(t.slots, &slot{id: fmt.Sprintf("%s-%d", t.TransactionalID, i)})
	}
}

func (t *Txn) join() *member {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	t.members++
	return &member{}
}

// setFailed records the error that ends the task's transactions: once a
// record of a transaction is lost, or its commit failed, the transaction
// cannot be repaired, and the task must start again from its changelog, so
// the error is permanent to whoever retries.
func (t *Txn) setFailed(err error) error {
	err = connector.Permanent(err)
	t.failed.CompareAndSwap(nil, &err)
	t.mu.Lock()
	t.cond.Broadcast()
	t.mu.Unlock()
	return err
}

func (t *Txn) err() error {
	if e := t.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// Start starts every producer of the task, which fences the producers of
// its previous owner: what they left open is aborted, and they can commit
// nothing more. Call it before reading the task's changelog, so that what
// is read is all there will be.
func (t *Txn) Start(ctx context.Context) error {
	t.mu.Lock()
	t.init()
	started := t.started
	t.mu.Unlock()
	if started {
		return nil
	}
	if t.TransactionalID == "" {
		return errors.New("a task's transactions need a transactional id")
	}
	timeout := t.TransactionTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	for _, sl := range t.slots {
		if sl.cl != nil {
			continue
		}
		cl, err := t.startProducer(ctx, sl.id, timeout, kgo.RecordPartitioner(changelogPartitioner{t.Changelog}))
		if err != nil {
			return err
		}
		sl.cl = cl
	}
	t.mu.Lock()
	t.started = true
	t.mu.Unlock()
	return nil
}

// changelogPartitioner sends a changelog record to the partition it names
// and every other record where Kafka's default partitioner would (murmur2
// of the key).
type changelogPartitioner struct{ changelog string }

func (p changelogPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if topic == p.changelog {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return kgo.StickyKeyPartitioner(nil).ForTopic(topic)
}

// begin returns the producer m writes to, in a transaction.
func (t *Txn) begin(m *member) (*slot, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started {
		return nil, errors.New("the task's producers have not started")
	}
	sl := t.slots[m.cur]
	if !sl.inTxn {
		if err := sl.cl.BeginTransaction(); err != nil {
			return nil, classify(err)
		}
		sl.inTxn = true
	}
	return sl, nil
}

func (t *Txn) produce(ctx context.Context, m *member, recs []*kgo.Record) error {
	if err := t.err(); err != nil {
		return err
	}
	sl, err := t.begin(m)
	if err != nil {
		return err
	}
	for _, r := range recs {
		sl.cl.Produce(ctx, r, t.promise)
	}
	return nil
}

// preCommit ends m's writes to the transaction of checkpoint; m goes on with
// the next producer once that one's transaction is committed.
func (t *Txn) preCommit(ctx context.Context, m *member, checkpoint uint64) ([]byte, error) {
	if err := t.err(); err != nil {
		return nil, err
	}
	if checkpoint == 0 {
		return nil, errors.New("a task's transactions need checkpoints")
	}
	sl, err := t.begin(m) // a checkpoint without output still carries the changelog
	if err != nil {
		return nil, err
	}
	pid, epoch, err := sl.cl.ProducerID(ctx)
	if err != nil {
		return nil, classify(err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sl.pending != 0 && sl.pending != checkpoint {
		return nil, fmt.Errorf("the task's transaction %s holds checkpoint %d, not %d", sl.id, sl.pending, checkpoint)
	}
	sl.pending = checkpoint
	p := pre{slot: m.cur, txnID: sl.id, pid: pid, epoch: epoch, records: true}
	next := (m.cur + 1) % len(t.slots)
	for t.slots[next].pending != 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := t.err(); err != nil {
			return nil, err
		}
		waitCond(ctx, t.cond)
	}
	m.cur = next
	return p.encode(), nil
}

// Committed is the last checkpoint whose transaction this Txn committed.
func (t *Txn) Committed() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// Publish adds records (the task's changelog for checkpoint) to the
// transaction that holds the checkpoint, once every sink has pre-committed
// it and before it is committed.
func (t *Txn) Publish(ctx context.Context, checkpoint uint64, recs []*kgo.Record) error {
	if err := t.err(); err != nil {
		return err
	}
	t.mu.Lock()
	var sl *slot
	for _, s := range t.slots {
		if s.pending == checkpoint && s.inTxn {
			sl = s
		}
	}
	if sl != nil {
		sl.published = checkpoint
	}
	t.mu.Unlock()
	if sl == nil {
		return t.setFailed(fmt.Errorf("no transaction of the task holds checkpoint %d", checkpoint))
	}
	for _, r := range recs {
		sl.cl.Produce(ctx, r, t.promise)
	}
	return nil
}

// commit commits the transaction of checkpoint, once (the first of the
// task's sinks to ask does it).
func (t *Txn) commit(ctx context.Context, checkpoint uint64, data []byte) error {
	p, err := decodePre(data)
	if err != nil {
		return fmt.Errorf("the checkpoint's record of a transaction is corrupt: %w", err)
	}
	t.mu.Lock()
	if checkpoint <= t.last {
		t.mu.Unlock()
		return nil
	}
	sl := t.slots[p.slot]
	live := sl.cl != nil && sl.inTxn && sl.pending == checkpoint
	published := sl.published == checkpoint
	t.mu.Unlock()
	if !live {
		return t.setFailed(fmt.Errorf("the transaction of checkpoint %d (%s) is no longer open", checkpoint, p.txnID))
	}
	if !published {
		// Output without its changelog must not become visible: the
		// checkpoint failed before it was published.
		return t.setFailed(fmt.Errorf("the transaction of checkpoint %d (%s) holds no changelog", checkpoint, sl.id))
	}
	if err := sl.cl.Flush(ctx); err != nil {
		return t.setFailed(err)
	}
	if err := t.err(); err != nil {
		return err
	}
	if err := sl.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		// Fenced (another instance owns the partition now) or expired:
		// the task must start again from its changelog.
		return t.setFailed(fmt.Errorf("committing the transaction of checkpoint %d (%s): %w", checkpoint, sl.id, err))
	}
	t.mu.Lock()
	sl.inTxn, sl.pending, sl.done = false, 0, checkpoint
	t.last = max(t.last, checkpoint)
	t.cond.Broadcast()
	t.mu.Unlock()
	return nil
}

// leave is a sink's Close: the last one aborts what is still open (nothing
// of it is in a committed changelog) and stops the producers.
func (t *Txn) leave() {
	t.mu.Lock()
	t.closed++
	last := t.closed >= t.members
	t.mu.Unlock()
	if last {
		t.Close()
	}
}

// Close aborts the task's open transactions and stops its producers.
func (t *Txn) Close() {
	// The producers are stopped without the lock: aborting fails the
	// records still buffered, and their promises take it.
	type open struct {
		cl    *kgo.Client
		inTxn bool
	}
	var list []open
	t.mu.Lock()
	for _, sl := range t.slots {
		if sl.cl != nil {
			list = append(list, open{sl.cl, sl.inTxn})
		}
		sl.cl, sl.inTxn, sl.pending, sl.published = nil, false, 0, 0
	}
	t.started = false
	t.mu.Unlock()
	// Brief: the brokers answer an abort at once, or are away, and then
	// the partition's next owner aborts it when it fences these producers.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, o := range list {
		if o.inTxn {
			o.cl.AbortBufferedRecords(ctx)
			o.cl.EndTransaction(ctx, kgo.TryAbort)
		}
		o.cl.Close()
	}
}
