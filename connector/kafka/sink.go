package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
)

// Encoder makes a record's key and value of an item.
type Encoder[T any] func(v T) (key, value []byte)

// Sink writes items to a topic, one record each.
//
// Exactly once (Delivery connector.ExactlyOnce): the records of one
// checkpoint go into one Kafka transaction. At the checkpoint barrier the
// transaction is flushed and its producer id and epoch are handed to the
// checkpoint (pre-commit); when the checkpoint is durable, the transaction is
// committed. After a crash, the transaction the restored checkpoint recorded
// is committed from that record (an EndTxn with its producer id and epoch,
// which succeeds again if it had already been committed), and every other
// transaction a previous run left open is aborted when the producers start
// (their epoch is bumped: a zombie's writes never become visible).
//
// A few producers take turns (TransactionalID-0, -1, -2): one collects the
// records of the next checkpoint while the one before waits for its commit.
// A producer is used again only once a later checkpoint has committed, so
// that a restore from any complete checkpoint finds its transaction intact.
//
// At least once (connector.AtLeastOnce): records are produced as they come,
// idempotently, and flushed at every checkpoint and flush; after a restore,
// those since the checkpoint are written again.
type Sink[T any] struct {
	Config
	Delivery connector.Guarantee
	// TransactionalID is the prefix of the producers' transactional ids: it
	// must be the same from run to run of the job, and differ between jobs
	// and sinks (weir uses the job's name and the sink's field).
	TransactionalID string
	// TransactionTimeout is how long a transaction may stay open before the
	// brokers abort it: longer than the checkpoint interval plus the time a
	// restart may take, or a transaction can expire before its checkpoint
	// commits it and its output is lost.
	TransactionTimeout time.Duration
	Encode             Encoder[T]
	// Txn, when set, is the task's transactions this sink shares with the
	// task's other sinks and its changelog (a consumer-group job): Delivery
	// and TransactionalID are then the Txn's.
	Txn *Txn

	mem     *member
	admin   *kgo.Client // EndTxn after a restore
	once    *kgo.Client // at least once
	slots   []*slot
	mu      sync.Mutex
	cond    *sync.Cond
	cur     int
	last    uint64 // the last checkpoint committed
	failed  atomic.Pointer[error]
	promise func(*kgo.Record, error)
}

// Pool is how many producers take turns in exactly-once mode.
const Pool = 3

type slot struct {
	id      string
	cl      *kgo.Client
	inTxn   bool
	pending uint64 // checkpoint whose pre-commit holds the open transaction
	done    uint64 // checkpoint whose transaction it committed last
	// published: the checkpoint whose changelog the open transaction
	// holds (a Txn's)
	published uint64
}

// Guarantee implements connector.Sink.
func (s *Sink[T]) Guarantee() connector.Guarantee {
	if s.Txn != nil {
		return connector.ExactlyOnce
	}
	return s.Delivery
}

// Open implements connector.Sink.
func (s *Sink[T]) Open(ctx context.Context, restored []byte) error {
	opts, err := s.opts()
	if err != nil {
		return err
	}
	s.cond = sync.NewCond(&s.mu)
	s.promise = func(r *kgo.Record, err error) {
		if err != nil {
			err = classify(err)
			s.failed.CompareAndSwap(nil, &err)
		}
	}
	if s.admin, err = kgo.NewClient(opts...); err != nil {
		return err
	}
	if err := s.checkTopic(ctx); err != nil {
		return err
	}
	if s.Txn != nil {
		s.mem = s.Txn.join()
		return nil
	}
	if s.Delivery != connector.ExactlyOnce {
		s.once, err = kgo.NewClient(append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))...)
		return err
	}
	if s.TransactionalID == "" {
		return errors.New("exactly-once delivery needs a transactional id")
	}
	for i := range Pool {
		s.slots = append(s.slots, &slot{id: fmt.Sprintf("%s-%d", s.TransactionalID, i)})
	}
	// The producers start (and fence what a previous run left open) in
	// Start, once the restored checkpoint's transaction is committed.
	return nil
}

func (s *Sink[T]) checkTopic(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(s.Topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, s.admin)
	if err != nil {
		return classify(err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return connector.Permanent(fmt.Errorf("topic %s does not exist", s.Topic))
			}
			return classify(err)
		}
	}
	return nil
}

// Start is called once the restored checkpoint's transactions are
// committed: every producer starts, which aborts a transaction it left open
// in an earlier run.
func (s *Sink[T]) Start(ctx context.Context) error {
	if s.Txn != nil {
		return s.Txn.Start(ctx)
	}
	for _, sl := range s.slots {
		if err := s.startSlot(ctx, sl); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sink[T]) startSlot(ctx context.Context, sl *slot) error {
	if sl.cl != nil {
		return nil
	}
	timeout := s.TransactionTimeout
	if timeout <= 0 {
		timeout = 15 * time.Minute
	}
	cl, err := s.startProducer(ctx, sl.id, timeout)
	if err != nil {
		return err
	}
	sl.cl = cl
	return nil
}

// startProducer starts a transactional producer of c with the id: it
// aborts what a previous producer with the id left open, and fences that
// producer.
func (c *Config) startProducer(ctx context.Context, id string, timeout time.Duration, extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := c.opts()
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.TransactionalID(id), kgo.TransactionTimeout(timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, err
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return nil, classify(err)
	}
	return cl, nil
}

func (s *Sink[T]) err() error {
	if e := s.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// Write implements connector.Sink.
func (s *Sink[T]) Write(ctx context.Context, items []T) error {
	if err := s.err(); err != nil {
		return err
	}
	if s.Txn != nil {
		recs := make([]*kgo.Record, len(items))
		for i := range items {
			k, v := s.Encode(items[i])
			recs[i] = &kgo.Record{Topic: s.Topic, Key: k, Value: v}
		}
		return s.Txn.produce(ctx, s.mem, recs)
	}
	cl := s.once
	if cl == nil {
		s.mu.Lock()
		sl := s.slots[s.cur]
		s.mu.Unlock()
		if err := s.startSlot(ctx, sl); err != nil {
			return err
		}
		if !sl.inTxn {
			if err := sl.cl.BeginTransaction(); err != nil {
				return classify(err)
			}
			sl.inTxn = true
		}
		cl = sl.cl
	}
	for i := range items {
		k, v := s.Encode(items[i])
		cl.Produce(ctx, &kgo.Record{Topic: s.Topic, Key: k, Value: v}, s.promise)
	}
	return nil
}

// Flush implements connector.Sink: at least once, the records go out.
func (s *Sink[T]) Flush(ctx context.Context) error {
	if s.once == nil {
		return nil
	}
	if err := s.once.Flush(ctx); err != nil {
		return classify(err)
	}
	return s.err()
}

// pre is what a checkpoint keeps of a transaction.
type pre struct {
	slot    int
	txnID   string
	pid     int64
	epoch   int16
	records bool
}

const preVersion = 1

func (p pre) encode() []byte {
	b := []byte{preVersion}
	b = enc.AppendBool(b, p.records)
	if !p.records {
		return b
	}
	b = enc.AppendUvarint(b, uint64(p.slot))
	b = enc.AppendString(b, p.txnID)
	b = enc.AppendVarint(b, p.pid)
	return enc.AppendVarint(b, int64(p.epoch))
}

func decodePre(b []byte) (pre, error) {
	d := enc.NewDecoder(b)
	if v := d.Count(255); v != preVersion {
		return pre{}, fmt.Errorf("unknown version %d", v)
	}
	p := pre{records: d.Bool()}
	if p.records {
		p.slot = d.Count(Pool - 1)
		p.txnID = d.String()
		p.pid = d.Varint()
		p.epoch = int16(d.Varint())
	}
	return p, d.Err()
}

// PreCommit implements connector.Sink: the transaction is flushed and its
// producer's id and epoch go into the checkpoint; the next records go into
// the next producer's transaction.
func (s *Sink[T]) PreCommit(ctx context.Context, checkpoint uint64) ([]byte, error) {
	if s.Txn != nil {
		return s.Txn.preCommit(ctx, s.mem, checkpoint)
	}
	if s.once != nil {
		return nil, s.Flush(ctx)
	}
	s.mu.Lock()
	sl := s.slots[s.cur]
	s.mu.Unlock()
	if !sl.inTxn {
		return pre{}.encode(), nil
	}
	if err := sl.cl.Flush(ctx); err != nil {
		return nil, classify(err)
	}
	if err := s.err(); err != nil {
		return nil, err
	}
	pid, epoch, err := sl.cl.ProducerID(ctx)
	if err != nil {
		return nil, classify(err)
	}
	p := pre{slot: s.cur, txnID: sl.id, pid: pid, epoch: epoch, records: true}
	if checkpoint == 0 {
		// No checkpoints: the engine commits at once, on this producer.
		return p.encode(), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl.pending = checkpoint
	next := (s.cur + 1) % len(s.slots)
	// Wait for the next producer: its transaction committed, and a later
	// checkpoint committed after it, so that no complete checkpoint still
	// holds its transaction.
	for {
		n := s.slots[next]
		if n.pending == 0 && (n.done == 0 || s.last > n.done) {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		waitCond(ctx, s.cond)
	}
	s.cur = next
	return p.encode(), nil
}

// waitCond waits on c (its lock held) until it is signalled or ctx is done.
func waitCond(ctx context.Context, c *sync.Cond) {
	stop := context.AfterFunc(ctx, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
	c.Wait()
	stop()
}

// Commit implements connector.Sink: the transaction of the checkpoint is
// committed, by its producer or, after a restore, from its record.
func (s *Sink[T]) Commit(ctx context.Context, checkpoint uint64, data []byte) error {
	if s.Txn != nil {
		return s.Txn.commit(ctx, checkpoint, data)
	}
	if s.once != nil {
		return nil
	}
	p, err := decodePre(data)
	if err != nil {
		return fmt.Errorf("the checkpoint's record of a transaction is corrupt: %w", err)
	}
	defer func() {
		s.mu.Lock()
		s.last = max(s.last, checkpoint)
		s.cond.Broadcast()
		s.mu.Unlock()
	}()
	if !p.records {
		return nil
	}
	s.mu.Lock()
	sl := s.slots[p.slot]
	live := sl.cl != nil && sl.inTxn && (sl.pending == checkpoint || checkpoint == 0)
	s.mu.Unlock()
	if live {
		if err := sl.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return classify(err)
		}
		s.mu.Lock()
		sl.inTxn, sl.pending, sl.done = false, 0, checkpoint
		s.mu.Unlock()
		return nil
	}
	return s.commitRecorded(ctx, checkpoint, p)
}

// commitRecorded commits a transaction of an earlier run from what its
// checkpoint recorded.
func (s *Sink[T]) commitRecorded(ctx context.Context, checkpoint uint64, p pre) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.txnID, p.pid, p.epoch, true
	resp, err := req.RequestWith(ctx, s.admin)
	if err != nil {
		return classify(err)
	}
	err = kerr.ErrorForCode(resp.ErrorCode)
	switch {
	case err == nil:
		s.logf("kafka %s: committed the transaction of checkpoint %d (%s) after the restart", s.Topic, checkpoint, p.txnID)
		return nil
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.InvalidProducerIDMapping):
		return connector.Permanent(fmt.Errorf("the transaction of checkpoint %d (%s, producer %d epoch %d) can no longer be committed (%v): it was aborted, most likely because it stayed open longer than transaction_timeout while the job was down; its output is lost, and rerunning from an earlier savepoint recomputes it", checkpoint, p.txnID, p.pid, p.epoch, err))
	}
	return classify(err)
}

// Close implements connector.Sink: a transaction not pre-committed is
// aborted.
func (s *Sink[T]) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.once != nil {
		s.once.Flush(ctx)
		s.once.Close()
	}
	if s.mem != nil {
		s.Txn.leave()
	}
	for _, sl := range s.slots {
		if sl.cl == nil {
			continue
		}
		if sl.inTxn && sl.pending == 0 {
			sl.cl.AbortBufferedRecords(ctx)
			sl.cl.EndTransaction(ctx, kgo.TryAbort)
		}
		sl.cl.Close()
	}
	if s.admin != nil {
		s.admin.Close()
	}
	return nil
}
