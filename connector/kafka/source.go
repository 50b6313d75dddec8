package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// Start says where a source with no checkpoint starts reading.
type Start struct {
	// Latest starts at the end of every partition (only what comes from
	// now on); the zero Start is the earliest record.
	Latest bool
	// At, when set, starts at the first record with a timestamp at or
	// after it.
	At mtime.Time
}

// MaxBatch is the most records one Read returns.
const MaxBatch = 1024

// Source reads every partition of a topic, each a partition of the stream
// (and so, by default, a watermark of its own), with read_committed
// isolation. Its position, the next offset of every partition, travels in
// checkpoints; after a restore it reads every partition from exactly there.
// Kafka's own committed offsets are not used: positions come only from
// weir's checkpoints, as in Flink.
//
// A record's Arrival is its timestamp when the topic stamps records as they
// arrive (LogAppendTime), and the time weir reads it otherwise; its
// Timestamp is the record's timestamp either way.
type Source struct {
	Config
	Start Start
	// Partitions, when set, are the only partitions read (a task of a
	// consumer group reads the one it owns); nil reads them all.
	Partitions []int32

	cl     *kgo.Client
	parts  []int32       // the topic's partitions, in order: Record.Partition indexes it
	index  map[int32]int // partition -> index
	next   []int64       // next offset to read, per index
	sent   bool
	report sync.Mutex
	hw     []int64 // high watermark per index, as of the last fetch
	seen   []int64 // next offsets as of the last batch, for Report
	errs   []string
	lost   bool // the last poll failed to reach a broker
}

// Open implements connector.Source: it finds the topic's partitions and
// where to read each from.
func (s *Source) Open(ctx context.Context, position []byte) error {
	opts, err := s.opts()
	if err != nil {
		return err
	}
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	all, err := topicPartitions(ctx, adm, s.Topic)
	if err != nil {
		return err
	}
	for _, p := range all {
		if s.Partitions == nil || slices.Contains(s.Partitions, p) {
			s.parts = append(s.parts, p)
		}
	}
	if len(s.parts) == 0 {
		return connector.Permanent(fmt.Errorf("topic %s has none of the partitions %v", s.Topic, s.Partitions))
	}
	s.index = map[int32]int{}
	for i, p := range s.parts {
		s.index[p] = i
	}
	s.next = make([]int64, len(s.parts))
	s.hw = make([]int64, len(s.parts))
	s.errs = make([]string, len(s.parts))
	s.seen = make([]int64, len(s.parts))
	for i := range s.hw {
		s.hw[i] = -1
	}
	restored := map[int32]int64{}
	if position != nil {
		if restored, err = decodePosition(position); err != nil {
			return fmt.Errorf("the checkpointed position in %s is corrupt: %w", s.Topic, err)
		}
	}
	// Partitions the checkpoint does not know (added since) start at
	// their first record.
	var start kadm.ListedOffsets
	missing := false
	for _, p := range s.parts {
		if _, ok := restored[p]; !ok {
			missing = true
		}
	}
	if missing {
		switch {
		case position != nil:
			start, err = adm.ListStartOffsets(ctx, s.Topic)
		case s.Start.At != 0:
			start, err = adm.ListOffsetsAfterMilli(ctx, int64(s.Start.At), s.Topic)
		case s.Start.Latest:
			start, err = adm.ListEndOffsets(ctx, s.Topic)
		default:
			start, err = adm.ListStartOffsets(ctx, s.Topic)
		}
		if err == nil {
			err = start.Error()
		}
		if err != nil {
			return classify(err)
		}
	}
	consume := map[int32]kgo.Offset{}
	for i, p := range s.parts {
		off, ok := restored[p]
		if !ok {
			lo, _ := start.Lookup(s.Topic, p)
			off = lo.Offset
			if off < 0 { // no record at or after the start time: the end
				end, err := adm.ListEndOffsets(ctx, s.Topic)
				if err != nil {
					return classify(err)
				}
				eo, _ := end.Lookup(s.Topic, p)
				off = eo.Offset
			}
		}
		s.next[i] = off
		s.seen[i] = off
		consume[p] = kgo.NewOffset().At(off)
	}
	opts = append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.Topic: consume}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return err
	}
	return nil
}

// Read implements connector.Source. It blocks until records come; a broker
// that cannot be reached is retried (the client backs off), logged once when
// it goes and once when it comes back, and reported per partition.
func (s *Source) Read(ctx context.Context, b *connector.Batch) error {
	if !s.sent {
		s.sent = true
		for _, p := range s.parts {
			b.Partitions = append(b.Partitions, connector.Partition{Name: fmt.Sprintf("%s/%d", s.Topic, p)})
		}
		b.Position = encodePosition(s.parts, s.next)
		return nil
	}
	for {
		fs := s.cl.PollRecords(ctx, MaxBatch)
		if err := ctx.Err(); err != nil {
			return err
		}
		if fs.IsClientClosed() {
			return errors.New("the Kafka client was closed")
		}
		failed := false
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			failed = true
			s.report.Lock()
			if i, ok := s.index[p]; ok {
				s.errs[i] = err.Error()
			}
			lost := s.lost
			s.lost = true
			s.report.Unlock()
			if !lost {
				s.logf("kafka %s: cannot fetch partition %d: %v; retrying", s.Topic, p, err)
			}
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			i, ok := s.index[fp.Partition]
			if !ok || fp.Err != nil {
				return
			}
			s.report.Lock()
			s.hw[i] = fp.HighWatermark
			s.errs[i] = ""
			s.report.Unlock()
			for _, r := range fp.Records {
				rec := connector.Record{
					Value: r.Value, Key: r.Key, Timestamp: mtime.FromTime(r.Timestamp),
					Arrival: mtime.MinTime, Partition: i, Offset: r.Offset,
				}
				if r.Attrs.TimestampType() == 1 { // LogAppendTime: the broker's clock
					rec.Arrival = rec.Timestamp
				}
				b.Records = append(b.Records, rec)
				s.next[i] = r.Offset + 1
			}
		})
		if !failed {
			s.report.Lock()
			lost := s.lost
			s.lost = false
			s.report.Unlock()
			if lost {
				s.logf("kafka %s: fetching again", s.Topic)
			}
		}
		if len(b.Records) > 0 {
			b.Position = encodePosition(s.parts, s.next)
			s.report.Lock()
			copy(s.seen, s.next)
			s.report.Unlock()
			return nil
		}
		if failed {
			// The client backs off by itself; do not spin on errors.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// Report implements connector.Reporter: the backlog of every partition
// (its high watermark at the last fetch minus the next offset to read).
func (s *Source) Report() []connector.PartitionReport {
	s.report.Lock()
	defer s.report.Unlock()
	out := make([]connector.PartitionReport, len(s.parts))
	for i, p := range s.parts {
		r := connector.PartitionReport{Partition: i, Name: fmt.Sprintf("%s/%d", s.Topic, p), Backlog: -1, Err: s.errs[i]}
		if r.Err == "" && s.Down() {
			r.Err = "cannot reach the brokers"
		}
		if s.hw[i] >= 0 {
			r.Backlog = max(0, s.hw[i]-s.seen[i])
			r.CaughtUp = r.Backlog == 0
		}
		out[i] = r
	}
	return out
}

// Pause implements connector.Pauser: the partitions (indexes of
// Batch.Partitions) are not fetched until Resume.
func (s *Source) Pause(parts []int) {
	if s.cl != nil && len(parts) > 0 {
		s.cl.PauseFetchPartitions(map[string][]int32{s.Topic: s.topicParts(parts)})
	}
}

// Resume implements connector.Pauser.
func (s *Source) Resume(parts []int) {
	if s.cl != nil && len(parts) > 0 {
		s.cl.ResumeFetchPartitions(map[string][]int32{s.Topic: s.topicParts(parts)})
	}
}

func (s *Source) topicParts(idx []int) []int32 {
	out := make([]int32, 0, len(idx))
	for _, i := range idx {
		if i >= 0 && i < len(s.parts) {
			out = append(out, s.parts[i])
		}
	}
	return out
}

// Close implements connector.Source.
func (s *Source) Close() error {
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}

const positionVersion = 1

func encodePosition(parts []int32, next []int64) []byte {
	b := []byte{positionVersion}
	b = enc.AppendUvarint(b, uint64(len(parts)))
	for i, p := range parts {
		b = enc.AppendVarint(b, int64(p))
		b = enc.AppendVarint(b, next[i])
	}
	return b
}

func decodePosition(b []byte) (map[int32]int64, error) {
	d := enc.NewDecoder(b)
	if v := d.Count(255); v != positionVersion {
		return nil, fmt.Errorf("unknown version %d", v)
	}
	n := d.Items(1 << 20)
	m := make(map[int32]int64, n)
	for range n {
		p, off := d.Varint(), d.Varint()
		m[int32(p)] = off
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	return m, nil
}
