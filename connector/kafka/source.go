package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
// isolation. Its position, the next offset of every partition and the
// topic's id, travels in checkpoints; after a restore it reads every
// partition from exactly there. Kafka's own committed offsets are not used:
// positions come only from weir's checkpoints, as in Flink.
//
// Gaps are never skipped silently (auto.offset.reset=none, as Kafka calls
// it): a restored offset that retention has deleted past, an offset beyond
// a partition's end, or a topic deleted and created again since the
// checkpoint (another topic id) stop the job with an error that says so;
// so does retention overtaking the reader while it runs. With SkipGaps the
// source goes on from the first record there is, says so, and counts what
// it skipped (connector.Batch.Lost).
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
	// SkipGaps goes on past records deleted before they were read, and a
	// topic created again, counting what was skipped, instead of stopping
	// (on_gap: skip).
	SkipGaps bool
	// Commit, when set, is given the offsets of each checkpoint once it
	// is committed (connector.Committer): the next offset to read, per
	// partition. A task of a consumer group commits them as the group's
	// offsets (Group.CommitOffsets), so that Kafka's tools show the
	// group's lag as they do any consumer's; weir itself resumes from its
	// checkpoints, never from these.
	Commit func(ctx context.Context, offsets map[int32]int64) error
	commit offsetCommits

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
	id     [16]byte
	gaps   int64 // records skipped, not yet reported in a batch
}

// GapError is a gap in a partition: records the source was to read next are
// not there (deleted by retention, or the topic created again).
type GapError struct {
	Partition string
	What      string
}

// Error names the partition, the gap, and the ways on.
func (e *GapError) Error() string {
	return fmt.Sprintf("kafka %s: %s; weir does not skip records silently: set source.kafka.on_gap: skip to go on from the first record there is, counting the rest as lost, or start afresh", e.Partition, e.What)
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
	var restoredID [16]byte
	if position != nil {
		if restored, restoredID, err = decodePosition(position); err != nil {
			return fmt.Errorf("the checkpointed position in %s is corrupt: %w", s.Topic, err)
		}
	}
	if s.id, err = topicID(ctx, adm, s.Topic); err != nil {
		return err
	}
	if restoredID != ([16]byte{}) && s.id != ([16]byte{}) && restoredID != s.id {
		what := fmt.Sprintf("the topic was deleted and created again since the checkpoint (its id was %x, it is %x now): the offsets the checkpoint holds are another topic's", restoredID, s.id)
		if !s.SkipGaps {
			return connector.Permanent(&GapError{Partition: s.Topic, What: what})
		}
		s.logf("kafka %s: %s; reading the new topic from its start (on_gap: skip)", s.Topic, what)
		restored = map[int32]int64{}
		position = []byte{} // a restore: what is new starts at the first record
	}
	if err := s.checkGaps(ctx, adm, restored); err != nil {
		return err
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
		// An offset out of range is an error weir decides on, never a
		// silent jump.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	)
	if s.cl, err = kgo.NewClient(opts...); err != nil {
		return err
	}
	return nil
}

// checkGaps compares the restored offsets with what the partitions hold
// now: an offset below the first record (retention deleted what was not
// read yet) or beyond the end (the partition lost records) is a gap.
func (s *Source) checkGaps(ctx context.Context, adm *kadm.Client, restored map[int32]int64) error {
	if len(restored) == 0 {
		return nil
	}
	starts, err := adm.ListStartOffsets(ctx, s.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return classify(err)
	}
	ends, err := adm.ListEndOffsets(ctx, s.Topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return classify(err)
	}
	for _, p := range s.parts {
		off, ok := restored[p]
		if !ok {
			continue
		}
		lo, _ := starts.Lookup(s.Topic, p)
		hi, _ := ends.Lookup(s.Topic, p)
		name := fmt.Sprintf("%s/%d", s.Topic, p)
		switch {
		case off < lo.Offset:
			what := fmt.Sprintf("records %d to %d were deleted (retention) before weir read them", off, lo.Offset-1)
			if !s.SkipGaps {
				return connector.Permanent(&GapError{Partition: name, What: what})
			}
			s.logf("kafka %s: %s: skipped, counted as lost (on_gap: skip)", name, what)
			s.gaps += lo.Offset - off
			restored[p] = lo.Offset
		case off > hi.Offset:
			what := fmt.Sprintf("the checkpoint read up to offset %d, but the partition ends at %d (it lost records, or the topic was created again)", off, hi.Offset)
			if !s.SkipGaps {
				return connector.Permanent(&GapError{Partition: name, What: what})
			}
			s.logf("kafka %s: %s: reading it from its first record (on_gap: skip)", name, what)
			restored[p] = lo.Offset
		}
	}
	return nil
}

// topicID is the topic's id (zero when the brokers do not say).
func topicID(ctx context.Context, adm *kadm.Client, topic string) ([16]byte, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return [16]byte{}, classify(err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return [16]byte{}, nil // the partitions' lookup says what is wrong
	}
	return d.ID, nil
}

// gap handles an offset out of range while reading: records retention
// deleted before they were read.
func (s *Source) gap(ctx context.Context, p int32) error {
	i := s.index[p]
	name := fmt.Sprintf("%s/%d", s.Topic, p)
	starts, err := kadm.NewClient(s.cl).ListStartOffsets(ctx, s.Topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return classify(err)
	}
	lo, _ := starts.Lookup(s.Topic, p)
	if lo.Offset <= s.next[i] {
		// Not a deletion past the reader: the partition was cut short.
		what := fmt.Sprintf("offset %d is out of range (the partition starts at %d)", s.next[i], lo.Offset)
		if !s.SkipGaps {
			return connector.Permanent(&GapError{Partition: name, What: what})
		}
		s.logf("kafka %s: %s: reading it from its first record (on_gap: skip)", name, what)
	} else {
		what := fmt.Sprintf("records %d to %d were deleted (retention) before weir read them", s.next[i], lo.Offset-1)
		if !s.SkipGaps {
			return connector.Permanent(&GapError{Partition: name, What: what})
		}
		s.logf("kafka %s: %s: skipped, counted as lost (on_gap: skip)", name, what)
		s.gaps += lo.Offset - s.next[i]
	}
	s.next[i] = lo.Offset
	s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{s.Topic: {p: {Epoch: -1, Offset: lo.Offset}}})
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
		b.Position = encodePosition(s.parts, s.next, s.id)
		b.Lost, s.gaps = s.gaps, 0
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
		var gapErr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			if errors.Is(err, kerr.OffsetOutOfRange) {
				if gerr := s.gap(ctx, p); gerr != nil && gapErr == nil {
					gapErr = gerr
				}
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
		if gapErr != nil {
			return gapErr
		}
		if !failed {
			s.report.Lock()
			lost := s.lost
			s.lost = false
			s.report.Unlock()
			if lost {
				s.logf("kafka %s: fetching again", s.Topic)
			}
		}
		if len(b.Records) > 0 || s.gaps > 0 {
			b.Position = encodePosition(s.parts, s.next, s.id)
			b.Lost, s.gaps = s.gaps, 0
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
// Committed implements connector.Committer: the offsets of a committed
// checkpoint go to Commit, if set, from a goroutine of the source's own, the
// newest replacing any not yet sent, so that the commit of a checkpoint never
// waits for the group (its coordinator busy with a rebalance). A failure is
// logged once until the commits go through again: the next checkpoint's
// makes up for it.
func (s *Source) Committed(ctx context.Context, position []byte) {
	if s.Commit == nil {
		return
	}
	offsets, _, err := decodePosition(position)
	if err != nil {
		return // a position weir wrote itself, read back by Open
	}
	s.commit.mu.Lock()
	defer s.commit.mu.Unlock()
	if s.commit.closed {
		return
	}
	if s.commit.wake == nil {
		c := &s.commit
		c.wake, c.stop, c.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go s.commitOffsets()
	}
	s.commit.next = offsets
	select {
	case s.commit.wake <- struct{}{}:
	default:
	}
}

// offsetCommits is the goroutine that commits a Source's offsets.
type offsetCommits struct {
	mu               sync.Mutex
	next             map[int32]int64
	wake, stop, done chan struct{}
	failed           string // the last failure logged
	closing          bool   // Close waits for this commit, the last
	closed           bool   // by Close: nothing more is committed
	sent             map[int32]int64
}

func (s *Source) commitOffsets() {
	c := &s.commit
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		c.mu.Lock()
		offsets, closing := c.next, c.closing
		c.mu.Unlock()
		if maps.Equal(offsets, c.sent) {
			if closing {
				return
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		go func() {
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := s.Commit(ctx, offsets)
		cancel()
		if err == nil {
			c.sent = offsets
		}
		switch {
		case err != nil && err.Error() != c.failed:
			c.failed = err.Error()
			s.logf("kafka %s: cannot commit the group's offsets (%v): Kafka's tools show its lag as of the last commit; the next checkpoint tries again", s.Topic, err)
		case err == nil && c.failed != "":
			c.failed = ""
			s.logf("kafka %s: the group's offsets are committed again", s.Topic)
		}
		if closing {
			return
		}
	}
}

func (s *Source) Close() error {
	c := &s.commit
	c.mu.Lock()
	started := c.wake != nil && !c.closed
	c.closed = true
	c.mu.Unlock()
	if started {
		// The last checkpoint's offsets (a stop's savepoint) get a moment
		// to be committed; then the goroutine is stopped.
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		select {
		case c.wake <- struct{}{}:
		default:
		}
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
		}
		close(c.stop)
		<-c.done
	}
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}

// positionVersion 2 added the topic's id.
const positionVersion = 2

func encodePosition(parts []int32, next []int64, id [16]byte) []byte {
	b := []byte{positionVersion}
	b = enc.AppendUvarint(b, uint64(len(parts)))
	for i, p := range parts {
		b = enc.AppendVarint(b, int64(p))
		b = enc.AppendVarint(b, next[i])
	}
	return append(b, id[:]...)
}

func decodePosition(b []byte) (map[int32]int64, [16]byte, error) {
	var id [16]byte
	d := enc.NewDecoder(b)
	v := d.Count(255)
	if v != 1 && v != positionVersion {
		return nil, id, fmt.Errorf("unknown version %d", v)
	}
	n := d.Items(1 << 20)
	m := make(map[int32]int64, n)
	for range n {
		p, off := d.Varint(), d.Varint()
		m[int32(p)] = off
	}
	if d.Err() != nil {
		return nil, id, d.Err()
	}
	if v >= 2 {
		rest := b[len(b)-d.Len():]
		if len(rest) != 16 {
			return nil, id, enc.ErrCorrupt
		}
		copy(id[:], rest)
	}
	return m, id, nil
}

// DescribePosition describes a position Source returned, for a person
// (weir savepoint inspect): the next offset of every partition. ok is false
// for bytes that are not such a position.
func DescribePosition(position []byte) (s string, ok bool) {
	m, _, err := decodePosition(position)
	if err != nil {
		return "", false
	}
	parts := slices.Sorted(maps.Keys(m))
	list := make([]string, len(parts))
	for i, p := range parts {
		list[i] = fmt.Sprintf("partition %d at offset %d", p, m[p])
	}
	if len(list) == 0 {
		return "no partition read yet", true
	}
	return strings.Join(list, ", "), true
}
