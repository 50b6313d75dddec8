package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	// Txn, when set, is the transactions of a task of a consumer group
	// (Thread): the source reads the task's partition (Txn.Partition of
	// Txn.Topic, whatever Topic and Partitions say) through the thread's
	// client, and each checkpoint's offset goes into the transaction that
	// commits the checkpoint, as the group's committed offset, so that
	// Kafka's tools show the group's lag as they do any consumer's; weir
	// itself resumes from its checkpoints, never from these.
	Txn *Txn

	cl     *kgo.Client // without Txn
	rd     *reading    // with Txn
	buf    fetchBuffer
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
	if s.Txn != nil {
		s.Topic, s.Partitions = s.Txn.Topic, []int32{s.Txn.Partition}
	}
	opts, err := s.opts()
	if err != nil {
		return err
	}
	var adm *kadm.Client
	if s.Txn != nil {
		adm = s.Txn.thread.Admin()
	} else {
		admin, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer admin.Close()
		adm = kadm.NewClient(admin)
	}
	s.parts = s.parts[:0]
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
	if s.Txn != nil {
		s.buf.init()
		s.rd = s.Txn.thread.read(s.Topic, s.parts[0], s.next[0], s.buf.deliver)
		return nil
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
	starts, err := s.admin().ListStartOffsets(ctx, s.Topic)
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
	if s.rd != nil {
		s.Txn.thread.seek(s.rd, lo.Offset)
		return nil
	}
	s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{s.Topic: {p: {Epoch: -1, Offset: lo.Offset}}})
	return nil
}

// admin is a client for the source's admin requests.
func (s *Source) admin() *kadm.Client {
	if s.rd != nil {
		return s.Txn.thread.Admin()
	}
	return kadm.NewClient(s.cl)
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
		fetched, err := s.fetch(ctx)
		if err != nil {
			return err
		}
		failed := false
		var gapErr error
		for _, f := range fetched {
			if f.err != nil {
				if errors.Is(f.err, context.Canceled) {
					continue
				}
				if errors.Is(f.err, kerr.OffsetOutOfRange) {
					if gerr := s.gap(ctx, f.part); gerr != nil && gapErr == nil {
						gapErr = gerr
					}
					continue
				}
				failed = true
				s.report.Lock()
				if i, ok := s.index[f.part]; ok {
					s.errs[i] = f.err.Error()
				}
				lost := s.lost
				s.lost = true
				s.report.Unlock()
				if !lost {
					s.logf("kafka %s: cannot fetch partition %d: %v; retrying", s.Topic, f.part, f.err)
				}
				continue
			}
			i, ok := s.index[f.part]
			if !ok {
				continue
			}
			s.report.Lock()
			if f.hw >= 0 {
				s.hw[i] = f.hw
			}
			s.errs[i] = ""
			s.report.Unlock()
			for _, r := range f.recs {
				s.next[i] = r.Offset + 1
				if r.Attrs.IsControl() { // a transaction's marker (a thread's client keeps them)
					continue
				}
				rec := connector.Record{
					Value: r.Value, Key: r.Key, Timestamp: mtime.FromTime(r.Timestamp),
					Arrival: mtime.MinTime, Partition: i, Offset: r.Offset,
				}
				if r.Attrs.TimestampType() == 1 { // LogAppendTime: the broker's clock
					rec.Arrival = rec.Timestamp
				}
				b.Records = append(b.Records, rec)
			}
		}
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
		if len(b.Records) > 0 || s.gaps > 0 || s.moved() {
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

// partFetch is what one fetch brought of a partition: records in order and
// its high watermark (-1: not known), or an error.
type partFetch struct {
	part int32
	recs []*kgo.Record
	hw   int64
	err  error
}

// fetch waits for the next records, from the source's own client or, with
// Txn, from what the thread's client delivered for it.
func (s *Source) fetch(ctx context.Context) ([]partFetch, error) {
	if s.rd != nil {
		return s.buf.take(ctx, s)
	}
	fs := s.cl.PollRecords(ctx, MaxBatch)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fs.IsClientClosed() {
		return nil, errors.New("the Kafka client was closed")
	}
	var out []partFetch
	fs.EachError(func(_ string, p int32, err error) { out = append(out, partFetch{part: p, err: err}) })
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if fp.Err == nil {
			out = append(out, partFetch{part: fp.Partition, recs: fp.Records, hw: fp.HighWatermark})
		}
	})
	return out, nil
}

// moved reports whether the source read on since the last batch without a
// record to give (transactions' markers): the position moves on with an
// empty batch.
func (s *Source) moved() bool {
	for i := range s.next {
		if s.next[i] != s.seen[i] {
			return true
		}
	}
	return false
}

// fetchBuffer is what a thread's client delivered for a task's source
// (Txn) and the source has not read yet. When it holds maxBuffered records
// or more, the partition is not fetched until the source has read them.
type fetchBuffer struct {
	mu      sync.Mutex
	fetched []partFetch
	records int
	ready   chan struct{}
	aligned atomic.Bool // paused by watermark alignment (Pause)
}

// maxBuffered is how many records a task's source holds before its
// partition's fetching pauses.
const maxBuffered = 4 * MaxBatch

func (fb *fetchBuffer) init() { fb.ready = make(chan struct{}, 1) }

// deliver is the reading's deliver, in the thread's poll goroutine: it
// says when the source holds enough.
func (fb *fetchBuffer) deliver(recs []*kgo.Record, hw int64, err error) (full bool) {
	fb.mu.Lock()
	fb.fetched = append(fb.fetched, partFetch{recs: recs, hw: hw, err: err})
	fb.records += len(recs)
	full = fb.records >= maxBuffered
	fb.mu.Unlock()
	select {
	case fb.ready <- struct{}{}:
	default:
	}
	return full
}

// take waits for what was delivered; the partition's fetching resumes
// once it is taken, unless watermark alignment paused it.
func (fb *fetchBuffer) take(ctx context.Context, s *Source) ([]partFetch, error) {
	for {
		fb.mu.Lock()
		out := fb.fetched
		fb.fetched, fb.records = nil, 0
		fb.mu.Unlock()
		if len(out) > 0 {
			for i := range out {
				out[i].part = s.parts[0]
			}
			s.Txn.thread.pause(s.rd, fb.aligned.Load())
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-fb.ready:
		}
	}
}

// down reports whether the source's client last failed to reach a broker
// (with Txn, its thread's client).
func (s *Source) down() bool {
	if s.Txn != nil {
		return s.Txn.thread.Down()
	}
	return s.Down()
}

// Report implements connector.Reporter: the backlog of every partition
// (its high watermark at the last fetch minus the next offset to read).
func (s *Source) Report() []connector.PartitionReport {
	s.report.Lock()
	defer s.report.Unlock()
	out := make([]connector.PartitionReport, len(s.parts))
	for i, p := range s.parts {
		r := connector.PartitionReport{Partition: i, Name: fmt.Sprintf("%s/%d", s.Topic, p), Backlog: -1, Err: s.errs[i]}
		if r.Err == "" && s.down() {
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
	if s.rd != nil && len(parts) > 0 {
		s.align(true)
		return
	}
	if s.cl != nil && len(parts) > 0 {
		s.cl.PauseFetchPartitions(map[string][]int32{s.Topic: s.topicParts(parts)})
	}
}

// Resume implements connector.Pauser.
func (s *Source) Resume(parts []int) {
	if s.rd != nil && len(parts) > 0 {
		s.align(false)
		return
	}
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

// align pauses or resumes a task's partition for watermark alignment.
func (s *Source) align(paused bool) {
	s.buf.aligned.Store(paused)
	s.Txn.thread.pause(s.rd, paused)
}

// Close implements connector.Source.
func (s *Source) Close() error {
	if s.rd != nil {
		s.Txn.thread.unread(s.rd)
		s.rd = nil
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

// PositionOffset is the next offset of partition part in a position Source
// returned; ok is false for bytes that are not such a position, or one
// without part.
func PositionOffset(position []byte, part int32) (off int64, ok bool) {
	m, _, err := decodePosition(position)
	if err != nil {
		return 0, false
	}
	off, ok = m[part]
	return off, ok
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
