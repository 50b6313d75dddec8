package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
)

// Rekey copies a topic into a repartition topic keyed by the job's key, as
// Kafka Streams does before a stateful step when its input is keyed by
// something else: each record goes, whole and with its timestamp, to the
// partition Kafka's default partitioner gives its key (murmur2), so that the
// tasks that read the repartition topic each have all the records of their
// keys.
//
// The instances share the source topic's partitions in a consumer group of
// their own, and copy exactly once: the records of a poll and the group's
// offsets after them are one transaction (franz-go's GroupTransactSession,
// Kafka's KIP-447: a member that lost its partitions in a rebalance cannot
// commit).
type Rekey struct {
	Config
	// Group is the consumer group of the copying.
	Group string
	// To is the repartition topic.
	To string
	// Start says where the group starts reading when it has no offsets.
	Start Start
	// Key is the record's new key: nil when the value has none (it is then
	// keyed by its value, so that where it goes does not depend on the
	// instance).
	Key func(value []byte) []byte
	// SessionTimeout is the group's session timeout (default 10 s).
	SessionTimeout time.Duration
	// TransactionTimeout bounds a transaction (default 1 min).
	TransactionTimeout time.Duration

	mu     sync.Mutex
	id     string // the transactional id
	own    []int32
	copied int64
}

// MetadataRefresh is how often the copying of a repartitioning group looks
// for partitions added to its input.
const MetadataRefresh = 10 * time.Second

// Run copies until ctx is done.
func (r *Rekey) Run(ctx context.Context) error {
	opts, err := r.opts()
	if err != nil {
		return err
	}
	session := r.SessionTimeout
	if session <= 0 {
		session = 10 * time.Second
	}
	timeout := r.TransactionTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	reset := kgo.NewOffset().AtStart()
	switch {
	case r.Start.At != 0:
		reset = kgo.NewOffset().AfterMilli(int64(r.Start.At))
	case r.Start.Latest:
		reset = kgo.NewOffset().AtEnd()
	}
	r.mu.Lock()
	if r.id == "" {
		// One id for the instance's life: a Run after a failure starts
		// the producer again under it, which aborts what the failed one
		// left open (read_committed readers of the copy wait for no
		// timeout).
		b := make([]byte, 8)
		rand.Read(b)
		r.id = fmt.Sprintf("weir-rekey-%s-%s", r.Group, hex.EncodeToString(b))
	}
	id := r.id
	r.mu.Unlock()
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, p := range m[r.Topic] {
				if add {
					r.own = append(r.own, p)
				} else {
					r.own = slices.DeleteFunc(r.own, func(q int32) bool { return q == p })
				}
			}
			slices.Sort(r.own)
			r.own = slices.Compact(r.own)
		}
	}
	sess, err := kgo.NewGroupTransactSession(append(opts,
		// The session's id is the instance's: KIP-447 fences by the
		// group's generation, not by the id.
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(timeout), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumerGroup(r.Group), kgo.ConsumeTopics(r.Topic), kgo.ConsumeResetOffset(reset),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.SessionTimeout(session), kgo.HeartbeatInterval(max(session/10, 100*time.Millisecond)),
		kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)), kgo.OnPartitionsLost(track(false)),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.ProducerLinger(5*time.Millisecond),
		// Partitions added to the input are seen within MetadataRefresh
		// (Kafka's clients look every 5 minutes), and the group shares
		// them out: the copy keys them like the others.
		kgo.MetadataMaxAge(MetadataRefresh),
	)...)
	if err != nil {
		return err
	}
	defer sess.Close()
	last := ""
	for {
		fs := sess.PollRecords(ctx, 8*MaxBatch)
		if ctx.Err() != nil {
			return nil
		}
		if fs.IsClientClosed() {
			return errors.New("the Kafka client was closed")
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if msg := err.Error(); msg != last {
				last = msg
				r.logf("repartition %s: %v; retrying", r.Group, err)
			}
		})
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return classify(err)
		}
		var perr error
		var pmu sync.Mutex
		n := int64(0)
		fs.EachRecord(func(rec *kgo.Record) {
			key := r.Key(rec.Value)
			if key == nil {
				key = rec.Value
			}
			out := &kgo.Record{Topic: r.To, Key: key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: rec.Headers}
			sess.Produce(ctx, out, func(_ *kgo.Record, err error) {
				if err != nil {
					pmu.Lock()
					perr = errors.Join(perr, err)
					pmu.Unlock()
				}
			})
			n++
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return classify(fmt.Errorf("repartition %s: ending a transaction: %w", r.Group, err))
		}
		if perr != nil {
			r.logf("repartition %s: a record could not be written (%v); the transaction was aborted and is copied again", r.Group, perr)
			continue
		}
		if committed {
			r.mu.Lock()
			r.copied += n
			r.mu.Unlock()
		}
	}
}

// Owned is the source partitions this instance copies now, and how many
// records it has copied.
func (r *Rekey) Owned() ([]int32, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.own), r.copied
}

// EnsureTopic creates a topic with partitions partitions unless it exists;
// if it exists with another number of partitions, the job cannot use it.
func EnsureTopic(ctx context.Context, c Config, topic string, partitions int32, configs map[string]*string) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	n, err := CreateTopicWith(ctx, kadm.NewClient(cl), topic, partitions, configs)
	if err != nil {
		return err
	}
	if n != partitions {
		return connector.Permanent(fmt.Errorf("the topic %s has %d partitions; the job needs %d (delete it, or name another)", topic, n, partitions))
	}
	return nil
}

// CreateTopicWith creates a topic with partitions partitions unless it
// exists, through a client the caller has, and returns how many
// partitions it has.
func CreateTopicWith(ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) (int32, error) {
	_, err := adm.CreateTopic(ctx, partitions, -1, configs, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, classify(err)
	}
	parts, err := topicPartitions(ctx, adm, topic)
	if err != nil {
		return 0, err
	}
	return int32(len(parts)), nil
}
