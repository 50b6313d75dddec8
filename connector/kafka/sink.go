package kafka

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
	// Identify, when set, gives each item an identity that does not depend
	// on when it was computed: a pane's key, window and revision. Exactly
	// once, each record carries it (a header named weir), and a job restored
	// from an older checkpoint or savepoint does not write again a record
	// that a later checkpoint had committed. Without it, such a restore
	// writes those records twice.
	Identify func(v T) uint64
	// Revisions says the sink writes a window's panes again as it revises
	// them, each record keyed by its key and window: a reader must keep
	// the last of each key (a table), which is what a compacted topic
	// keeps. Open warns (Log) when the topic is not compacted.
	Revisions bool
	// Create, when the topic does not exist, creates it (with the
	// brokers' default partitions and replication; compacted when
	// Revisions) instead of refusing to start.
	Create bool
	// Txn, when set, is the task's transactions this sink shares with the
	// task's other sinks and its changelog (a consumer-group job): the sink
	// holds what it writes until the task's checkpoint, which hands it to
	// the thread's transaction (Thread); Delivery and TransactionalID are
	// then the Txn's.
	Txn *Txn
	// Prepare, when set, runs at the start of each Open, before the sink
	// touches the brokers: what Encode needs first, such as registering
	// the records' schemas in a schema registry (formats.AvroPanes). Its
	// error is Open's, retried as Open's are when it is retryable.
	Prepare func(ctx context.Context) error

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
	tag     [4]byte // this sink's records, in their headers
	// skip holds the identities of records committed by checkpoints after
	// the restored one: they are not written again (Write side).
	skip    map[uint64]struct{}
	skipped int64
	// committedTo is, per partition, the offset after the records of the
	// last committed transaction (commit side): the sink's mark.
	committedTo map[int32]int64
	// maxRecord is the largest record the topic takes (max.message.bytes,
	// and the client's own limit): a larger one is refused, never produced,
	// since one record the broker refuses would lose its whole transaction.
	maxRecord int
	// compacted: the topic is compacted, and refuses a record without a
	// key (INVALID_RECORD), which would lose its transaction as well.
	compacted bool
}

// recordOverhead is what a record takes besides its key, value and
// headers, in a batch of its own (at most).
const recordOverhead = 128

// header is the name of the header that identifies a record of a weir sink.
const header = "weir"

// Pool is how many producers take turns in exactly-once mode.
const Pool = 3

type slot struct {
	id      string
	cl      *kgo.Client
	inTxn   bool
	pending uint64 // checkpoint whose pre-commit holds the open transaction
	done    uint64 // checkpoint whose transaction it committed last
	// unsure: its producer's commit failed, and the producer cannot tell
	// whether it took effect: the transaction is committed from its record
	// instead, and the producer replaced.
	unsure bool
	// promise is the promise of the slot's records: it notes where they
	// went, or fails the sink.
	promise func(*kgo.Record, error)
	// spans are where the records of the open transaction went, per
	// partition (promises add to it; pre-commit takes it).
	spanMu sync.Mutex
	spans  map[int32]offsets
}

// offsets is the first and last offset of a transaction's records in a
// partition.
type offsets struct{ first, last int64 }

func (sl *slot) promised(r *kgo.Record) {
	sl.spanMu.Lock()
	defer sl.spanMu.Unlock()
	if sl.spans == nil {
		sl.spans = map[int32]offsets{}
	}
	o, ok := sl.spans[r.Partition]
	if !ok {
		o = offsets{r.Offset, r.Offset}
	}
	o.first, o.last = min(o.first, r.Offset), max(o.last, r.Offset)
	sl.spans[r.Partition] = o
}

func (sl *slot) takeSpans() []partSpan {
	sl.spanMu.Lock()
	defer sl.spanMu.Unlock()
	out := make([]partSpan, 0, len(sl.spans))
	for p, o := range sl.spans {
		out = append(out, partSpan{p, o})
	}
	sl.spans = nil
	sort.Slice(out, func(i, j int) bool { return out[i].part < out[j].part })
	return out
}

type partSpan struct {
	part int32
	offsets
}

// Guarantee implements connector.Sink.
func (s *Sink[T]) Guarantee() connector.Guarantee {
	if s.Txn != nil {
		return connector.ExactlyOnce
	}
	return s.Delivery
}

// Open implements connector.Sink. Exactly once, resuming, it reads what
// the topic holds after the restored checkpoint's mark: records of this
// sink that later checkpoints committed (a restore from an older
// checkpoint or savepoint, or after falling back from a corrupt newest
// one) are recognised by their identity and not written again.
func (s *Sink[T]) Open(ctx context.Context, r connector.Resume) error {
	if s.Prepare != nil {
		if err := s.Prepare(ctx); err != nil {
			return err
		}
	}
	opts, err := s.opts()
	if err != nil {
		return err
	}
	s.cond = sync.NewCond(&s.mu)
	s.promise = func(r *kgo.Record, err error) {
		if err != nil {
			s.fail(err)
		}
	}
	if s.admin != nil && s.Txn == nil {
		s.admin.Close() // an Open tried again
	}
	if s.Txn != nil {
		// A task's sink asks through its thread's client.
		s.admin = s.Txn.thread.client()
	} else if s.admin, err = kgo.NewClient(opts...); err != nil {
		return err
	}
	if err := s.checkTopic(ctx); err != nil {
		return err
	}
	s.maxRecord, s.compacted = s.topicLimits(ctx)
	if s.Revisions && !s.compacted {
		s.logf("kafka %s: warning: %s", s.Topic, NotCompacted)
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
	tag := sha256.Sum256([]byte(s.TransactionalID))
	copy(s.tag[:], tag[:])
	s.slots = s.slots[:0]
	for i := range Pool {
		sl := &slot{id: fmt.Sprintf("%s-%d", s.TransactionalID, i)}
		sl.promise = func(r *kgo.Record, err error) {
			if err != nil {
				s.fail(err)
				return
			}
			sl.promised(r)
		}
		s.slots = append(s.slots, sl)
	}
	if err := s.resume(ctx, r); err != nil {
		return err
	}
	// The producers start (and fence what a previous run left open) in
	// Start, once the restored checkpoint's transaction is committed.
	return nil
}

// topicLimits is what the topic takes: its largest record (its
// max.message.bytes, and no more than the client sends in one batch), and
// whether it is compacted (then every record needs a key).
func (s *Sink[T]) topicLimits(ctx context.Context) (maxRecord int, compacted bool) {
	maxRecord, compacted, _ = describeTopic(ctx, kadm.NewClient(s.admin), s.Topic)
	return maxRecord, compacted
}

// NotCompacted is the warning about a topic that gets a job's revised
// panes and is not compacted: the anti-pattern of revisions read as new
// events.
const NotCompacted = "the topic gets a window's panes again as they are revised (keyed by key and window), and it is not compacted: a consumer that reads it as a stream of events counts a window more than once, and the topic keeps every revision; make it compacted (cleanup.policy=compact) and read it as a table, or write one pane per window (trigger: {final_only: true})"

// TopicState is what the brokers say of a topic, for the checks made
// before a job runs (weir lint).
type TopicState struct {
	// Exists says the topic exists; Compacted that its cleanup.policy
	// compacts it.
	Exists, Compacted bool
}

// DescribeTopic asks c's brokers about topic, within ctx.
func (c *Config) DescribeTopic(ctx context.Context, topic string) (TopicState, error) {
	cl, err := c.client()
	if err != nil {
		return TopicState{}, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return TopicState{}, err
	}
	if td, ok := tds[topic]; !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return TopicState{}, nil
	} else if td.Err != nil {
		return TopicState{}, td.Err
	}
	_, compacted, err := describeTopic(ctx, adm, topic)
	return TopicState{Exists: true, Compacted: compacted}, err
}

// describeTopic is what topic takes: its largest record (its
// max.message.bytes, or the default), and whether it is compacted.
func describeTopic(ctx context.Context, adm *kadm.Client, topic string) (maxRecord int, compacted bool, err error) {
	maxRecord = 1_000_012 // the client's default max record batch bytes, and Kafka's max.message.bytes
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return maxRecord, false, err
	}
	if rc, err := rcs.On(topic, nil); err == nil {
		for _, c := range rc.Configs {
			switch {
			case c.Value == nil:
			case c.Key == "max.message.bytes":
				var v int
				if _, err := fmt.Sscan(*c.Value, &v); err == nil && v > 0 && v < maxRecord {
					maxRecord = v
				}
			case c.Key == "cleanup.policy":
				compacted = strings.Contains(*c.Value, "compact")
			}
		}
	}
	return maxRecord, compacted, nil
}

// size is what a record takes in a batch of its own, at most.
func size(key, value []byte, hdr []kgo.RecordHeader) int {
	n := len(key) + len(value) + recordOverhead
	for _, h := range hdr {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// fail records the error that ends the sink's transactions: a record of a
// transaction was lost, so the transaction cannot be committed whole, and
// the job must start again from its last checkpoint. Retrying cannot mend
// it, so the error is permanent to whoever retries.
func (s *Sink[T]) fail(err error) {
	err = connector.Permanent(classify(err))
	s.failed.CompareAndSwap(nil, &err)
}

// resume sets the sink's mark from the restored one (or, afresh, from the
// topic's end), and reads the records later checkpoints committed.
func (s *Sink[T]) resume(ctx context.Context, r connector.Resume) error {
	adm := kadm.NewClient(s.admin)
	if !r.Resumed() || r.Mark == nil {
		ends, err := adm.ListEndOffsets(ctx, s.Topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return classify(err)
		}
		s.committedTo = map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { s.committedTo[o.Partition] = o.Offset })
		return nil
	}
	mark, err := decodeMark(r.Mark)
	if err != nil {
		return fmt.Errorf("the checkpoint's record of topic %s is corrupt: %w", s.Topic, err)
	}
	s.committedTo = mark
	// The restored checkpoint's own pending transactions are committed
	// after Open: their records are not later ones.
	var own []partSpan
	for _, pc := range r.Pending {
		p, err := decodePre(pc.Data)
		if err != nil {
			return fmt.Errorf("the checkpoint's record of a transaction is corrupt: %w", err)
		}
		own = append(own, p.spans...)
	}
	if s.Identify == nil {
		return nil
	}
	// Partitions added to the topic since the mark: from their start.
	from := maps.Clone(mark)
	parts, err := topicPartitions(ctx, adm, s.Topic)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, ok := from[p]; !ok {
			from[p] = 0
		}
	}
	skip := map[uint64]struct{}{}
	err = readCommittedFrom(ctx, s.Config, s.Topic, from, func(rec *kgo.Record) bool {
		for _, o := range own {
			if o.part == rec.Partition && rec.Offset >= o.first && rec.Offset <= o.last {
				return true
			}
		}
		if id, ok := s.identity(rec); ok {
			skip[id] = struct{}{}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("reading what topic %s holds after checkpoint %d: %w", s.Topic, r.From, err)
	}
	if len(skip) > 0 {
		s.skip = skip
		s.logf("kafka %s: %d records that checkpoints after %d committed are in the topic already: they are not written again", s.Topic, len(skip), r.From)
	}
	return nil
}

// identity is the identity a record of this sink carries in its header.
func (s *Sink[T]) identity(rec *kgo.Record) (uint64, bool) {
	for _, h := range rec.Headers {
		if h.Key == header && len(h.Value) == 12 && [4]byte(h.Value[:4]) == s.tag {
			return binary.BigEndian.Uint64(h.Value[4:]), true
		}
	}
	return 0, false
}

// Skipped is how many items the sink did not write because a later
// checkpoint of an earlier run had committed them already.
func (s *Sink[T]) Skipped() int64 { return s.skipped }

// readCommittedFrom reads the committed records of the partitions of a
// topic, from the offsets given per partition to the last stable offset at
// the time of the call, or until f returns false.
func readCommittedFrom(ctx context.Context, c Config, topic string, from map[int32]int64, f func(*kgo.Record) bool) error {
	admin, err := c.client()
	if err != nil {
		return err
	}
	defer admin.Close()
	ends, err := kadm.NewClient(admin).ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return classify(err)
	}
	consume := map[int32]kgo.Offset{}
	target := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		start, ok := from[o.Partition]
		if ok && start < o.Offset {
			consume[o.Partition] = kgo.NewOffset().At(start)
			target[o.Partition] = o.Offset
		}
	})
	if len(consume) == 0 {
		return nil
	}
	cl, err := c.committedReader(topic, consume, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer cl.Close()
	// Control records (the transactions' markers) come too, so that the
	// read knows when it has reached the end.
	for stop := false; len(target) > 0 && !stop; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return classify(ferr)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			end, ok := target[rec.Partition]
			if stop || !ok || rec.Offset >= end {
				return
			}
			if rec.Offset+1 >= end {
				delete(target, rec.Partition)
			}
			if !rec.Attrs.IsControl() && !f(rec) {
				stop = true
			}
		})
	}
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
				if s.Create {
					return s.create(ctx)
				}
				return connector.Permanent(fmt.Errorf("topic %s does not exist (create: true creates it)", s.Topic))
			}
			return classify(err)
		}
	}
	return nil
}

// create creates the sink's topic, compacted when it gets revisions.
func (s *Sink[T]) create(ctx context.Context) error {
	var configs map[string]*string
	what := ""
	if s.Revisions {
		configs, what = compacted(), ", compacted: the last revision of each key and window is kept"
	}
	if _, err := kadm.NewClient(s.admin).CreateTopic(ctx, -1, -1, configs, s.Topic); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return classify(err)
	}
	// The client's metadata said the topic is missing, and keeps saying so
	// for a while unless told to forget it.
	s.admin.PurgeTopicsFromClient(s.Topic)
	s.logf("kafka %s: created the topic%s", s.Topic, what)
	return nil
}

// Start is called once the restored checkpoint's transactions are
// committed: every producer starts, which aborts a transaction it left open
// in an earlier run.
func (s *Sink[T]) Start(ctx context.Context) error {
	if s.Txn != nil {
		return nil // the thread's producer is started
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
	var refused []connector.RefusedItem
	refuse := func(i int, key []byte, n int) bool {
		switch {
		case n > s.maxRecord:
			refused = append(refused, connector.RefusedItem{Index: i, Reason: fmt.Sprintf("kafka %s: a record of %d bytes, larger than the topic takes (%d)", s.Topic, n, s.maxRecord)})
		case s.compacted && len(key) == 0:
			refused = append(refused, connector.RefusedItem{Index: i, Reason: fmt.Sprintf("kafka %s: a record without a key, which a compacted topic does not take", s.Topic)})
		default:
			return false
		}
		return true
	}
	refusal := func() error {
		if refused == nil {
			return nil
		}
		return &connector.RefusedError{Items: refused}
	}
	if s.Txn != nil {
		recs := make([]*kgo.Record, 0, len(items))
		for i := range items {
			k, v := s.Encode(items[i])
			if !refuse(i, k, size(k, v, nil)) {
				recs = append(recs, &kgo.Record{Topic: s.Topic, Key: k, Value: v})
			}
		}
		if err := s.Txn.produce(s.mem, recs); err != nil {
			return err
		}
		return refusal()
	}
	if s.once != nil {
		for i := range items {
			k, v := s.Encode(items[i])
			if !refuse(i, k, size(k, v, nil)) {
				s.once.Produce(ctx, &kgo.Record{Topic: s.Topic, Key: k, Value: v}, s.promise)
			}
		}
		return refusal()
	}
	s.mu.Lock()
	sl := s.slots[s.cur]
	s.mu.Unlock()
	for i := range items {
		var hdr []kgo.RecordHeader
		if s.Identify != nil {
			id := s.Identify(items[i])
			if _, ok := s.skip[id]; ok {
				// A later checkpoint of an earlier run committed it.
				delete(s.skip, id)
				s.skipped++
				if len(s.skip) == 0 {
					s.skip = nil
				}
				continue
			}
			v := make([]byte, 12)
			copy(v, s.tag[:])
			binary.BigEndian.PutUint64(v[4:], id)
			hdr = []kgo.RecordHeader{{Key: header, Value: v}}
		}
		k, v := s.Encode(items[i])
		if refuse(i, k, size(k, v, hdr)) {
			continue
		}
		if !sl.inTxn {
			// The transaction begins with its first record: one that
			// would hold none is never begun.
			if err := s.startSlot(ctx, sl); err != nil {
				return err
			}
			if err := sl.cl.BeginTransaction(); err != nil {
				return classify(err)
			}
			sl.inTxn = true
		}
		sl.cl.Produce(ctx, &kgo.Record{Topic: s.Topic, Key: k, Value: v, Headers: hdr}, sl.promise)
	}
	return refusal()
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

// pre is what a checkpoint keeps of a transaction: its producer, and where
// its records went (version 2).
type pre struct {
	slot    int
	txnID   string
	pid     int64
	epoch   int16
	records bool
	spans   []partSpan
}

const preVersion = 2

func (p pre) encode() []byte {
	b := []byte{preVersion}
	b = enc.AppendBool(b, p.records)
	if !p.records {
		return b
	}
	b = enc.AppendUvarint(b, uint64(p.slot))
	b = enc.AppendString(b, p.txnID)
	b = enc.AppendVarint(b, p.pid)
	b = enc.AppendVarint(b, int64(p.epoch))
	b = enc.AppendUvarint(b, uint64(len(p.spans)))
	for _, sp := range p.spans {
		b = enc.AppendVarint(b, int64(sp.part))
		b = enc.AppendVarint(b, sp.first)
		b = enc.AppendVarint(b, sp.last)
	}
	return b
}

func decodePre(b []byte) (pre, error) {
	d := enc.NewDecoder(b)
	v := d.Count(255)
	if v != 1 && v != preVersion {
		return pre{}, fmt.Errorf("unknown version %d", v)
	}
	p := pre{records: d.Bool()}
	if p.records {
		p.slot = d.Count(Pool - 1)
		p.txnID = d.String()
		p.pid = d.Varint()
		p.epoch = int16(d.Varint())
		if v >= 2 {
			n := d.Items(1 << 20)
			for range n {
				p.spans = append(p.spans, partSpan{int32(d.Varint()), offsets{d.Varint(), d.Varint()}})
			}
		}
	}
	return p, d.Err()
}

const markVersion = 1

// encodeMark encodes the sink's mark: per partition, the offset after the
// records of the last committed transaction.
func encodeMark(m map[int32]int64) []byte {
	parts := make([]int32, 0, len(m))
	for p := range m {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	b := []byte{markVersion}
	b = enc.AppendUvarint(b, uint64(len(parts)))
	for _, p := range parts {
		b = enc.AppendVarint(b, int64(p))
		b = enc.AppendVarint(b, m[p])
	}
	return b
}

func decodeMark(b []byte) (map[int32]int64, error) {
	d := enc.NewDecoder(b)
	if v := d.Count(255); v != markVersion {
		return nil, fmt.Errorf("unknown version %d", v)
	}
	n := d.Items(1 << 20)
	m := make(map[int32]int64, n)
	for range n {
		p := int32(d.Varint())
		m[p] = d.Varint()
	}
	return m, d.Err()
}

// Mark implements connector.Marker: per partition, where the output of the
// last committed checkpoint ends.
func (s *Sink[T]) Mark() []byte {
	if s.Txn != nil || s.once != nil {
		return nil
	}
	return encodeMark(s.committedTo)
}

// committed moves the mark past a committed transaction's records.
func (s *Sink[T]) committed(p pre) {
	for _, sp := range p.spans {
		s.committedTo[sp.part] = max(s.committedTo[sp.part], sp.last+1)
	}
}

// PreCommit implements connector.Sink: the transaction is flushed and its
// producer's id and epoch go into the checkpoint; the next records go into
// the next producer's transaction.
func (s *Sink[T]) PreCommit(ctx context.Context, checkpoint uint64) ([]byte, error) {
	if s.Txn != nil {
		return s.Txn.preCommit(s.mem, checkpoint)
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
	p := pre{slot: s.cur, txnID: sl.id, pid: pid, epoch: epoch, records: true, spans: sl.takeSpans()}
	if len(p.spans) == 0 {
		// Nothing of the transaction reached the topic: it ends here, and
		// the checkpoint has nothing to commit.
		if err := sl.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
			return nil, classify(err)
		}
		sl.inTxn = false
		return pre{}.encode(), nil
	}
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
		return s.Txn.commit(ctx, checkpoint)
	}
	if s.once != nil {
		return nil
	}
	p, err := decodePre(data)
	if err != nil {
		return fmt.Errorf("the checkpoint's record of a transaction is corrupt: %w", err)
	}
	if !p.records {
		s.done(checkpoint)
		return nil
	}
	s.mu.Lock()
	sl := s.slots[p.slot]
	live := sl.cl != nil && sl.inTxn && (sl.pending == checkpoint || checkpoint == 0)
	unsure := live && sl.unsure
	s.mu.Unlock()
	if live && !unsure {
		if err := sl.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			// The transaction's fate is unknown (a commit that timed
			// out may have happened): it stays pending, and the next
			// attempt (or a restart) commits it from its record.
			s.mu.Lock()
			sl.unsure = true
			s.mu.Unlock()
			return classify(err)
		}
		s.mu.Lock()
		sl.inTxn, sl.pending, sl.done = false, 0, checkpoint
		s.mu.Unlock()
		s.committed(p)
		s.done(checkpoint)
		return nil
	}
	if err := s.commitRecorded(ctx, checkpoint, p); err != nil {
		return err
	}
	if unsure {
		// Committed from its record: the producer, whose state is
		// unknown, is replaced when it is next used.
		s.mu.Lock()
		cl := sl.cl
		sl.cl, sl.inTxn, sl.pending, sl.done, sl.unsure = nil, false, 0, checkpoint, false
		s.mu.Unlock()
		cl.Close()
	}
	s.committed(p)
	s.done(checkpoint)
	return nil
}

// done records that checkpoint's transaction is committed: a producer
// waiting for a later checkpoint to commit may be used again.
func (s *Sink[T]) done(checkpoint uint64) {
	s.mu.Lock()
	s.last = max(s.last, checkpoint)
	s.cond.Broadcast()
	s.mu.Unlock()
}

// commitRecorded commits a transaction of an earlier run from what its
// checkpoint recorded.
//
// Its records are looked for first: a transaction they show committed (an
// older checkpoint or savepoint restored) is not ended again, since an
// EndTxn with the recorded producer and epoch ends whatever transaction that
// producer has open now, which may be a later one. A transaction whose
// records are not visible is still open (its producer's only one: a
// producer is used again only after its transaction committed) or was
// aborted, and the EndTxn tells which.
func (s *Sink[T]) commitRecorded(ctx context.Context, checkpoint uint64, p pre) error {
	if committed, err := s.visible(ctx, p); err != nil {
		return err
	} else if committed {
		s.logf("kafka %s: the transaction of checkpoint %d (%s) was committed already", s.Topic, checkpoint, p.txnID)
		return nil
	}
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
		return connector.Permanent(fmt.Errorf("the transaction of checkpoint %d (%s, producer %d epoch %d) can no longer be committed (%v), and its records are not in the topic: it was aborted, most likely because it stayed open longer than transaction_timeout while the job was down; its output is lost, and rerunning from an earlier savepoint recomputes it", checkpoint, p.txnID, p.pid, p.epoch, err))
	}
	return classify(err)
}

// visible reports whether the records of a transaction are in the topic
// for read_committed readers: its first record, read at its offset.
func (s *Sink[T]) visible(ctx context.Context, p pre) (bool, error) {
	if len(p.spans) == 0 {
		// An older weir's record, without offsets: nothing tells.
		return false, nil
	}
	sp := p.spans[0]
	found := false
	err := readCommittedFrom(ctx, s.Config, s.Topic, map[int32]int64{sp.part: sp.first}, func(rec *kgo.Record) bool {
		if rec.Partition != sp.part {
			return true
		}
		if rec.Offset > sp.last {
			return false
		}
		found = rec.ProducerID == p.pid && rec.ProducerEpoch == p.epoch
		return !found
	})
	if err != nil {
		return false, fmt.Errorf("reading the records of the transaction of %s: %w", p.txnID, err)
	}
	return found, nil
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
		s.Txn.leave(s.mem)
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
	if s.admin != nil && s.Txn == nil {
		s.admin.Close()
	}
	return nil
}

// HeldBytes implements connector.Holder: a task's sink (Txn) holds what it
// writes until its next pre-commit.
func (s *Sink[T]) HeldBytes() int64 {
	if s.mem == nil {
		return 0
	}
	return s.mem.bytes.Load()
}
