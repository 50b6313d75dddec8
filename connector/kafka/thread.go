package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/connector"
)

// Thread is one Kafka client that the tasks of a thread of a consumer
// group's instance share, as Kafka Streams' stream threads share theirs
// since exactly-once v2 (KIP-447): it reads their partitions of the input
// (Source with Txn), their partitions of the changelog when they restore
// (ReadChangelog) and what the instance keeps as a standby (Standby), and
// it is the transactional producer of all of them, so that an instance
// holds as many clients as threads, not a few per task.
//
// A task holds its output in memory until its checkpoint (Txn); the
// checkpoint's output, its changelog records and its input offset then go
// to the thread, which commits what its tasks hand it in one transaction at
// a time (a group commit). The transaction commits the tasks' input offsets
// as the group's (TxnOffsetCommit) with the member's id and generation, so
// that the group's coordinator refuses the commit of an instance that is
// no longer the partitions' owner (a zombie): its transaction is aborted
// and nothing of it becomes visible. The instance that takes a partition
// over reads its changelog only once no transaction is open on it
// (WaitStable), fencing the producer of one left open by a dead owner.
type Thread struct {
	// Config reaches the brokers; its Topic names the thread in log lines
	// (default: its transactional id).
	Config
	// TransactionalID is the thread's transactional id: one of its own,
	// unique in the group.
	TransactionalID string
	// TransactionTimeout is how long the brokers let a transaction stay
	// open: a dead owner's open transaction holds read_committed readers
	// back this long unless the partition's next owner fences it first.
	TransactionTimeout time.Duration
	// Group is the instance's membership: the thread's transactions commit
	// the tasks' input offsets as its group's, with its member id and
	// generation.
	Group *Group
	// Extra, when set, gives records that go into a transaction beside the
	// checkpoints of the tasks of parts (the tasks' watermarks).
	Extra func(parts []int32) []*kgo.Record
	// Manual are the topics whose records name their partition: the
	// changelog's (a task's partition), the watermarks'.
	Manual []string

	// mu guards what follows up to wake, and the readings' fields.
	mu       sync.Mutex
	cl       *kgo.Client // replaced when its producer cannot go on (broken)
	regs     map[topicPart]*reading
	polls    uint64        // polls started on cl
	queue    []*unit       // handed over, not in a transaction yet
	inflight []*unit       // in the transaction under way
	decided  chan struct{} // closed and made again when a transaction is decided
	ids      map[string][16]byte
	closed   bool

	wake chan struct{} // a unit was queued
	stop context.CancelFunc
	wg   sync.WaitGroup

	committed, aborted atomic.Int64
	lastErr            atomic.Pointer[string]
}

// Stats are how many of the thread's transactions committed and aborted,
// and why the last one aborted ("" if none did).
func (t *Thread) Stats() (committed, aborted int64, lastErr string) {
	if e := t.lastErr.Load(); e != nil {
		lastErr = *e
	}
	return t.committed.Load(), t.aborted.Load(), lastErr
}

type topicPart struct {
	topic string
	part  int32
}

// reading is a partition the thread's client reads for one reader.
type reading struct {
	topicPart
	// next is the next offset the reader wants.
	next int64
	// since is the number of polls started when the partition was last
	// positioned: records of a poll started before are not the reader's
	// (they may come from where the client read before), and the
	// partition is positioned again at next.
	since  uint64
	paused bool
	// deliver takes the records of one fetch (in order, from next on),
	// the partition's high watermark, or the fetch's error, and says
	// whether the reader holds enough: the partition is then paused until
	// the reader resumes it (pause). It is called from the thread's poll
	// goroutine with the thread's lock held: it must be quick, and must
	// not call the thread back.
	deliver func(recs []*kgo.Record, hw int64, err error) (full bool)
}

// Start makes the thread's client, which fences a producer that had its
// transactional id before (aborting what it left open), and starts reading
// and committing.
func (t *Thread) Start(ctx context.Context) error {
	if t.TransactionalID == "" {
		return errors.New("a thread's transactions need a transactional id")
	}
	if t.Group == nil {
		return errors.New("a thread's transactions need the group")
	}
	if t.Topic == "" {
		t.Topic = t.TransactionalID
	}
	cl, err := t.newClient(ctx)
	if err != nil {
		return err
	}
	bctx, stop := context.WithCancel(context.Background())
	t.mu.Lock()
	t.cl, t.stop = cl, stop
	t.regs = map[topicPart]*reading{}
	t.ids = map[string][16]byte{}
	t.decided = make(chan struct{})
	t.wake = make(chan struct{}, 1)
	t.mu.Unlock()
	t.wg.Add(2)
	go func() { defer t.wg.Done(); t.poll(bctx) }()
	go func() { defer t.wg.Done(); t.commits(bctx) }()
	return nil
}

func (t *Thread) newClient(ctx context.Context) (*kgo.Client, error) {
	timeout := t.TransactionTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	opts, err := t.opts()
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.TransactionalID(t.TransactionalID), kgo.TransactionTimeout(timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(manualPartitioner(t.Manual)),
		// It reads with no partition at first (a direct consumer); its
		// readers add theirs.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond),
		// An offset out of range is the reader's to decide on, never a
		// silent jump.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return nil, classify(err)
	}
	return cl, nil
}

// manualPartitioner sends a record of one of the topics manual (the
// changelog, the watermarks) to the partition it names, and any other
// where Kafka's default partitioner would (murmur2 of the key).
type manualPartitioner []string

func (m manualPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if slices.Contains(m, topic) {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return kgo.StickyKeyPartitioner(nil).ForTopic(topic)
}

// client is the thread's client, for requests of its readers.
func (t *Thread) client() *kgo.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cl
}

// Admin is the thread's client for metadata and admin requests.
func (t *Thread) Admin() *kadm.Client { return kadm.NewClient(t.client()) }

// read starts reading partition part of topic from offset from for a
// reader, which deliver takes.
func (t *Thread) read(topic string, part int32, from int64, deliver func([]*kgo.Record, int64, error) bool) *reading {
	r := &reading{topicPart: topicPart{topic, part}, next: from, deliver: deliver}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.regs[r.topicPart]; old != nil {
		// One reader a partition: the one before is done with it.
		t.cl.RemoveConsumePartitions(map[string][]int32{topic: {part}})
	}
	t.regs[r.topicPart] = r
	r.since = t.polls
	t.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(from)}})
	return r
}

// seek positions r at offset off: the records it gets next begin there.
func (t *Thread) seek(r *reading, off int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.next = off
	t.positionLocked(r)
}

func (t *Thread) positionLocked(r *reading) {
	if t.regs[r.topicPart] != r {
		return
	}
	r.since = t.polls
	t.cl.RemoveConsumePartitions(map[string][]int32{r.topic: {r.part}})
	t.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.topic: {r.part: kgo.NewOffset().At(r.next)}})
	if r.paused {
		t.cl.PauseFetchPartitions(map[string][]int32{r.topic: {r.part}})
	}
}

// unread stops reading r's partition.
func (t *Thread) unread(r *reading) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.regs[r.topicPart] != r {
		return
	}
	delete(t.regs, r.topicPart)
	if t.cl != nil {
		t.cl.RemoveConsumePartitions(map[string][]int32{r.topic: {r.part}})
		if r.paused {
			t.cl.ResumeFetchPartitions(map[string][]int32{r.topic: {r.part}})
		}
	}
}

// pause stops fetching r's partition (its reader holds enough), or
// resumes it.
func (t *Thread) pause(r *reading, paused bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.paused == paused || t.regs[r.topicPart] != r {
		return
	}
	r.paused = paused
	tp := map[string][]int32{r.topic: {r.part}}
	if paused {
		t.cl.PauseFetchPartitions(tp)
	} else {
		t.cl.ResumeFetchPartitions(tp)
	}
}

// pollBatch is the most records one poll takes.
const pollBatch = 4 * MaxBatch

// poll reads for the readers until ctx is done.
func (t *Thread) poll(ctx context.Context) {
	for ctx.Err() == nil {
		t.mu.Lock()
		t.polls++
		n, cl := t.polls, t.cl
		t.mu.Unlock()
		fs := cl.PollRecords(ctx, pollBatch)
		if ctx.Err() != nil {
			return
		}
		t.mu.Lock()
		if cl != t.cl {
			// The client was replaced (reset): what it fetched is not
			// the readers'.
			t.mu.Unlock()
			continue
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			r := t.regs[topicPart{fp.Topic, fp.Partition}]
			if r == nil {
				return
			}
			if n <= r.since {
				// From before the partition was positioned: position it
				// again, so that nothing fetched since is missed. A fetch
				// of nothing still says how far the partition goes (a
				// client returns it once, for a partition read at its
				// end).
				if len(fp.Records) > 0 || fp.Err != nil {
					t.positionLocked(r)
				} else {
					r.deliver(nil, fp.HighWatermark, nil)
				}
				return
			}
			if fp.Err != nil {
				if !errors.Is(fp.Err, context.Canceled) {
					r.deliver(nil, -1, fp.Err)
				}
				return
			}
			recs := fp.Records
			for len(recs) > 0 && recs[0].Offset < r.next {
				recs = recs[1:]
			}
			if len(recs) > 0 {
				r.next = recs[len(recs)-1].Offset + 1
			}
			if r.deliver(recs, fp.HighWatermark, nil) && !r.paused {
				r.paused = true
				t.cl.PauseFetchPartitions(map[string][]int32{r.topic: {r.part}})
			}
		})
		t.mu.Unlock()
		if fs.IsClientClosed() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// unit is one checkpoint of a task for the thread to commit: its output,
// its changelog records, and its input offset.
type unit struct {
	txn        *Txn
	checkpoint uint64
	records    []*kgo.Record
	offset     int64 // the next offset of the task's input; -1: none
	published  bool
	submitted  bool
	done       chan struct{}
	err        error
}

// submit queues u for the next transaction.
func (t *Thread) submit(u *unit) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("the thread has stopped")
	}
	u.submitted = true
	t.queue = append(t.queue, u)
	select {
	case t.wake <- struct{}{}:
	default:
	}
	return nil
}

// withdraw takes txn's units out of the queue, failing them: a unit that a
// transaction under way holds is decided with it (Settle waits for that).
func (t *Thread) withdraw(txn *Txn) {
	t.mu.Lock()
	var gone []*unit
	t.queue = slices.DeleteFunc(t.queue, func(u *unit) bool {
		if u.txn == txn {
			gone = append(gone, u)
			return true
		}
		return false
	})
	t.mu.Unlock()
	for _, u := range gone {
		u.err = errors.New("the task stopped before its checkpoint was committed")
		close(u.done)
	}
}

// Settle waits until no transaction of the thread under way holds a
// checkpoint of the task of partition part of topic (a run of it that
// ended): then the changelog holds all it will of that run. Call it before
// the task runs here again.
func (t *Thread) Settle(ctx context.Context, topic string, part int32) error {
	for {
		t.mu.Lock()
		held := slices.ContainsFunc(t.inflight, func(u *unit) bool { return u.txn.Topic == topic && u.txn.Partition == part })
		decided := t.decided
		t.mu.Unlock()
		if !held {
			return nil
		}
		select {
		case <-decided:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// commits commits the queued units, a transaction at a time, until ctx is
// done.
func (t *Thread) commits(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			t.mu.Lock()
			gone := t.queue
			t.queue = nil
			t.mu.Unlock()
			for _, u := range gone {
				u.err = errors.New("the thread stopped")
				close(u.done)
			}
			return
		case <-t.wake:
		}
		t.mu.Lock()
		batch := t.queue
		t.queue, t.inflight = nil, batch
		t.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		err := t.commitBatch(ctx, batch)
		if err == nil {
			t.committed.Add(1)
		} else {
			t.aborted.Add(1)
			msg := err.Error()
			t.lastErr.Store(&msg)
		}
		t.mu.Lock()
		t.inflight = nil
		close(t.decided)
		t.decided = make(chan struct{})
		t.mu.Unlock()
		for _, u := range batch {
			u.err = err
			close(u.done)
		}
	}
}

// commitBatch commits the units in one transaction.
func (t *Thread) commitBatch(ctx context.Context, batch []*unit) error {
	t.mu.Lock()
	cl := t.cl
	t.mu.Unlock()
	lost := t.Group.lostCount()
	if err := cl.BeginTransaction(); err != nil {
		return t.broken(ctx, fmt.Errorf("beginning a transaction: %w", err))
	}
	if err := t.fill(ctx, cl, batch, lost); err != nil {
		wait := 10 * time.Second
		if ctx.Err() != nil { // the thread stops
			wait = time.Second
		}
		actx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		aerr := cl.AbortBufferedRecords(actx)
		if aerr == nil {
			aerr = cl.EndTransaction(actx, kgo.TryAbort)
		}
		if aerr != nil && t.client() == cl {
			// Whether it aborted is not known: a new producer with the
			// thread's id aborts it for sure.
			t.broken(ctx, aerr)
		}
		return err
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		// Committed or not, the producer is replaced (unless Abort did
		// already); the tasks start again from their changelog, which
		// tells.
		err = fmt.Errorf("committing the transaction: %w", err)
		if t.client() == cl {
			t.broken(ctx, err)
		}
		return err
	}
	return nil
}

// fill produces the units' records into the open transaction and adds
// their input offsets to it.
func (t *Thread) fill(ctx context.Context, cl *kgo.Client, batch []*unit, lost uint64) error {
	var mu sync.Mutex
	var perr error
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if perr == nil {
				perr = err
			}
			mu.Unlock()
		}
	}
	var parts []int32
	for _, u := range batch {
		for _, r := range u.records {
			cl.Produce(ctx, r, promise)
		}
		parts = append(parts, u.txn.Partition)
	}
	if t.Extra != nil {
		for _, r := range t.Extra(parts) {
			cl.Produce(ctx, r, promise)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	err := perr
	mu.Unlock()
	if err != nil {
		return classify(err)
	}
	return t.commitOffsets(ctx, cl, batch, lost)
}

// Abort aborts the transaction under way, if one is: the thread's producer
// is made again under its transactional id, which aborts it for sure (the
// brokers answering), and the readers read on with the new client.
func (t *Thread) Abort(ctx context.Context) error {
	t.mu.Lock()
	busy := len(t.inflight) > 0
	t.mu.Unlock()
	if !busy {
		return nil
	}
	cl, err := t.newClient(ctx)
	if err != nil {
		return err
	}
	t.replace(cl)
	return nil
}

// broken replaces the thread's client after an error its producer may not
// recover from (fenced, a commit whose outcome is unknown): the new one's
// producer aborts what the old one left open. The readers read on where
// they got.
func (t *Thread) broken(ctx context.Context, cause error) error {
	if ctx.Err() != nil {
		return cause // the thread stops: Close closes the client
	}
	cl, err := t.newClient(ctx)
	if err != nil {
		t.logf("kafka: thread %s: %v; its client could not be made again: %v", t.TransactionalID, cause, err)
		return cause
	}
	t.replace(cl)
	return cause
}

// replace makes cl the thread's client: the readers read on with it from
// where they got, and the old one is closed (what it was doing fails).
func (t *Thread) replace(cl *kgo.Client) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		cl.Close()
		return
	}
	old := t.cl
	t.cl = cl
	for _, r := range t.regs {
		r.since = t.polls
		cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.topic: {r.part: kgo.NewOffset().At(r.next)}})
		if r.paused {
			cl.PauseFetchPartitions(map[string][]int32{r.topic: {r.part}})
		}
	}
	t.mu.Unlock()
	old.Close()
}

// commitOffsets commits the units' input offsets as the group's, in the
// transaction: the group's coordinator refuses them from a member that is
// not (or no longer) one of the group's in its current generation, and
// the transaction is then aborted. A generation that moved on while this
// member kept its place (a rebalance elsewhere in the group) is retried
// with the new one.
func (t *Thread) commitOffsets(ctx context.Context, cl *kgo.Client, batch []*unit, lost uint64) error {
	offsets := map[string]map[int32]int64{}
	for _, u := range batch {
		if u.offset < 0 {
			continue
		}
		if offsets[u.txn.Topic] == nil {
			offsets[u.txn.Topic] = map[int32]int64{}
		}
		offsets[u.txn.Topic][u.txn.Partition] = max(offsets[u.txn.Topic][u.txn.Partition], u.offset)
	}
	if len(offsets) == 0 {
		return nil
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return classify(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = t.TransactionalID, pid, epoch, t.Group.Group
	resp, err := add.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("adding the group's offsets to the transaction: %w", classify(err))
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = t.TransactionalID, t.Group.Group, pid, epoch
	for topic, ps := range offsets {
		id, err := t.topicID(ctx, cl, topic)
		if err != nil {
			return err
		}
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for _, p := range slices.Sorted(maps.Keys(ps)) {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, ps[p], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	member, gen := t.Group.Member()
	for attempt := 0; ; attempt++ {
		req.MemberID, req.Generation = member, gen
		err := txnOffsetCommit(ctx, cl, req)
		if err == nil || !rebalancing(err) || attempt >= 20 {
			if err != nil {
				return fmt.Errorf("committing the group's offsets in the transaction (member %s, generation %d): %w", member, gen, err)
			}
			return nil
		}
		// The generation moved on: once this member has the new one, and
		// lost nothing meanwhile, it still owns what it commits.
		deadline := time.Now().Add(t.Group.session())
		for {
			m, g := t.Group.Member()
			if m != member || t.Group.lostCount() != lost {
				return fmt.Errorf("committing the group's offsets in the transaction: this member left the group meanwhile: %w", err)
			}
			if g != gen {
				gen = g
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("committing the group's offsets in the transaction (member %s, generation %d): %w", member, gen, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

func txnOffsetCommit(ctx context.Context, cl *kgo.Client, req *kmsg.TxnOffsetCommitRequest) error {
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return classify(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// rebalancing reports whether a refused offset commit says only that the
// group's generation moved on.
func rebalancing(err error) bool {
	return errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.StaleMemberEpoch)
}

// topicID is a topic's id, as the offset commit names it.
func (t *Thread) topicID(ctx context.Context, cl *kgo.Client, topic string) ([16]byte, error) {
	t.mu.Lock()
	id, ok := t.ids[topic]
	t.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := topicID(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		return id, err
	}
	t.mu.Lock()
	t.ids[topic] = id
	t.mu.Unlock()
	return id, nil
}

// WaitStable waits until no transaction is open on partition part of topic
// (a task's partition of the changelog), so that what a read_committed
// read finds there is all there will be: a transaction of the partition's
// previous owner that is still open is decided first. One whose producer
// is not this instance's (own says which are) is fenced: its producer
// is started again under its transactional id, which aborts it, as the
// next owner of a task did under exactly-once v1; otherwise the wait
// would last until the brokers time it out. Its producer, a zombie, can
// commit nothing more.
func (t *Thread) WaitStable(ctx context.Context, topic string, part int32, own func(txnID string) bool) error {
	adm := t.Admin()
	fenced := map[string]bool{}
	cannot := false
	for attempt := 0; ; attempt++ {
		stable, end, err := stableEnd(ctx, adm, topic, part)
		if err != nil {
			return err
		}
		if stable == end {
			return nil
		}
		if attempt > 0 && !cannot {
			// The first look may catch a transaction about to end.
			err := t.fenceOpen(ctx, adm, topic, part, own, fenced)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				// Brokers without DescribeProducers (before Kafka 3.0),
				// or a principal without the rights: the transaction is
				// waited for, until it ends or the brokers time it out.
				cannot = true
				t.logf("kafka %s/%d: a transaction of the partition's previous owner is open, and cannot be fenced (%v): waiting until it ends, at most its transaction timeout", topic, part, err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(50*time.Millisecond<<min(attempt, 4), time.Second)):
		}
	}
}

// fenceOpen fences the producers, not own, of the transactions open on a
// partition, once each.
func (t *Thread) fenceOpen(ctx context.Context, adm *kadm.Client, topic string, part int32, own func(string) bool, fenced map[string]bool) error {
	ids, err := openTransactions(ctx, adm, topic, part)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if own(id) || fenced[id] {
			continue
		}
		if err := fence(ctx, t.client(), id, t.TransactionTimeout); err != nil {
			return err
		}
		fenced[id] = true
		t.logf("kafka %s/%d: fenced %s, which left a transaction open there (a previous owner of the partition): it is aborted", topic, part, id)
	}
	return nil
}

// stableEnd is a partition's last stable offset and its end.
func stableEnd(ctx context.Context, adm *kadm.Client, topic string, part int32) (stable, end int64, err error) {
	lookup := func(l kadm.ListedOffsets, err error) (int64, error) {
		// Only this partition counts: another's leader may be away.
		o, ok := l.Lookup(topic, part)
		switch {
		case ok && o.Err != nil:
			return 0, classify(o.Err)
		case ok:
			return o.Offset, nil
		case err != nil:
			return 0, classify(err)
		}
		return 0, connector.Permanent(fmt.Errorf("topic %s has no partition %d", topic, part))
	}
	if stable, err = lookup(adm.ListCommittedOffsets(ctx, topic)); err != nil {
		return
	}
	end, err = lookup(adm.ListEndOffsets(ctx, topic))
	return
}

// openTransactions is the transactional ids of the producers with a
// transaction open on the partition.
func openTransactions(ctx context.Context, adm *kadm.Client, topic string, part int32) ([]string, error) {
	ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {part: {}}})
	if err != nil {
		return nil, classify(err)
	}
	var pids []int64
	ps.EachProducer(func(p kadm.DescribedProducer) {
		if p.CurrentTxnStartOffset >= 0 {
			pids = append(pids, p.ProducerID)
		}
	})
	if len(pids) == 0 {
		return nil, nil
	}
	txns, err := adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, classify(err)
	}
	var ids []string
	txns.Each(func(l kadm.ListedTransaction) {
		if slices.Contains(pids, l.ProducerID) {
			ids = append(ids, l.TxnID)
		}
	})
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// fence starts a producer under the transactional id id once (its epoch
// goes up), which aborts the transaction it has open and fences the
// producer that had it.
func fence(ctx context.Context, cl *kgo.Client, id string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Minute
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
	req.ProducerID, req.ProducerEpoch = -1, -1
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, kerr.ConcurrentTransactions) {
			return fmt.Errorf("fencing %s: %w", id, classify(err))
		}
		// The coordinator is aborting it: ask again.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the thread: what is queued fails, and its client is closed,
// aborting a transaction under way.
func (t *Thread) Close() {
	t.mu.Lock()
	if t.closed || t.cl == nil {
		t.closed = true
		t.mu.Unlock()
		return
	}
	t.closed = true
	stop := t.stop
	t.mu.Unlock()
	stop()
	t.wg.Wait()
	t.mu.Lock()
	cl := t.cl
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cl.AbortBufferedRecords(ctx)
	cl.EndTransaction(ctx, kgo.TryAbort)
	cl.Close()
}
