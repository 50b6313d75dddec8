package kafka

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
)

// A changelog is a compacted topic with a partition per task (per
// partition of the tasks' input). A task's partition holds its latest
// checkpoint, content-addressed, so that a checkpoint writes only the parts
// of its files that changed since the one before:
//
//	"m"          the manifest (JSON): the checkpoint's id, kind, job and
//	             fingerprint; its files, with their sizes and SHA-256
//	             checksums; and the chunks each file is made of, in order
//	"c/SHA256"   a chunk: up to MaxChunk bytes of a file, named by their
//	             SHA-256; a chunk no checkpoint refers to any more gets a
//	             tombstone, and compaction removes it
//
// Files are cut into chunks where their content says (content-defined
// chunking with a gear hash, as backup tools do), so that a change in the
// middle of a file changes the chunks around it only. Every record of a
// checkpoint goes into the transaction that holds the checkpoint's output,
// the manifest last.

// MaxChunk is the most bytes of a file one changelog record holds; chunks
// are 128 KiB on average.
const MaxChunk = 512 << 10

const (
	minChunk  = 32 << 10
	chunkBits = 17 // an average chunk of 2^17 bytes
)

// gear is the gear hash's table: fixed, so that the same bytes are cut the
// same way by every instance and version.
var gear = func() (t [256]uint64) {
	x := uint64(0x5eed_0f_7e1_c4a9)
	for i := range t {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t[i] = z ^ z>>31
	}
	return t
}()

// chunks calls f with the content-defined chunks of data, in order.
func chunks(data []byte, f func([]byte)) {
	start := 0
	var h uint64
	for i, c := range data {
		h = h<<1 + gear[c]
		n := i + 1 - start
		if (n >= minChunk && h>>(64-chunkBits) == 0) || n >= MaxChunk {
			f(data[start : i+1])
			start, h = i+1, 0
		}
	}
	if start < len(data) {
		f(data[start:])
	}
}

// manifest is a checkpoint's manifest with the chunks of its files.
type manifest struct {
	checkpoint.Manifest
	Chunks map[string][]string `json:"chunks"`
}

// Changelog writes the checkpoints of one task to its partition of the
// changelog topic. It remembers the chunks of the checkpoints it wrote, to
// write only new ones.
type Changelog struct {
	Topic     string
	Partition int32

	sets  map[uint64]map[string]bool // the chunks of each checkpoint written
	floor uint64                     // a checkpoint known committed (the restored one)
	// Written counts the bytes of chunks written, and Reused those of
	// chunks a checkpoint referred to that were there already.
	Written, Reused atomic.Int64
}

// Restored tells l the checkpoint read back from the changelog: its chunks
// are there, committed.
func (l *Changelog) Restored(r *Restored) {
	if r == nil {
		return
	}
	l.sets = map[uint64]map[string]bool{r.Manifest.ID: r.chunks}
	l.floor = r.Manifest.ID
}

// Records are the records of a checkpoint (its manifest and its files, the
// bytes of each, or for a shared object the file that holds them): the chunks that are not there
// yet, tombstones for those of the last committed checkpoint (committed is
// its id, as the task's transactions know it) that it no longer refers to,
// and the manifest.
func (l *Changelog) Records(cm checkpoint.Manifest, files []checkpoint.Input, committed uint64) ([]*kgo.Record, error) {
	if l.sets == nil {
		l.sets = map[uint64]map[string]bool{}
	}
	// The chunks known to be in the changelog: those of the newest
	// checkpoint known committed.
	committed = max(committed, l.floor)
	var base map[string]bool
	baseID := uint64(0)
	for id, set := range l.sets {
		if id <= committed && id >= baseID {
			base, baseID = set, id
		}
	}
	for id := range l.sets {
		if id < baseID {
			delete(l.sets, id)
		}
	}
	m := manifest{Manifest: cm, Chunks: map[string][]string{}}
	m.Files = nil
	set := map[string]bool{}
	var recs []*kgo.Record
	for _, f := range files {
		data := f.Bytes()
		if f.Object != "" { // as the store keeps it: the file at Path
			b, err := os.ReadFile(f.Path)
			if err != nil {
				return nil, fmt.Errorf("reading %s of checkpoint %d: %w", f.Name, cm.ID, err)
			}
			data = b
		}
		sum := sha256.Sum256(data)
		m.Files = append(m.Files, checkpoint.File{Name: f.Name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
		list := []string{}
		chunks(data, func(b []byte) {
			h := sha256.Sum256(b)
			name := hex.EncodeToString(h[:])
			list = append(list, name)
			if set[name] {
				return
			}
			set[name] = true
			if base[name] {
				l.Reused.Add(int64(len(b)))
				return
			}
			l.Written.Add(int64(len(b)))
			recs = append(recs, &kgo.Record{Topic: l.Topic, Partition: l.Partition, Key: []byte("c/" + name), Value: b})
		})
		m.Chunks[f.Name] = list
	}
	for name := range base {
		if !set[name] {
			// A tombstone: compaction removes the chunk.
			recs = append(recs, &kgo.Record{Topic: l.Topic, Partition: l.Partition, Key: []byte("c/" + name)})
		}
	}
	mj, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	l.sets[cm.ID] = set
	return append(recs, &kgo.Record{Topic: l.Topic, Partition: l.Partition, Key: []byte("m"), Value: mj}), nil
}

// Restored is a checkpoint read back from a changelog.
type Restored struct {
	Manifest checkpoint.Manifest
	Files    []checkpoint.Input
	// Records and Bytes are what the read read, older checkpoints'
	// records included; Warm the records a standby had read before it
	// (ChangelogReader).
	Records, Bytes, Warm int64

	chunks map[string]bool
}

// ChangelogReader is what has been read of a task's partition of the
// changelog: the latest record of each key up to an offset. Reading on from
// there gives what reading from the start would: a read_committed read
// stops at the last stable offset, below which every transaction is
// decided, so nothing it read changes. A standby keeps one warm for the
// task of another instance (Standby), so that the instance that takes the
// task over reads only what came since.
type ChangelogReader struct {
	Partition int32

	latest         map[string][]byte
	next           int64 // the next offset to read
	records, bytes int64
}

// NewChangelogReader returns a reader of partition part from its start.
func NewChangelogReader(part int32) *ChangelogReader {
	return &ChangelogReader{Partition: part, latest: map[string][]byte{}}
}

// Next is the offset the reader reads on from.
func (r *ChangelogReader) Next() int64 { return r.next }

// Records is how many records the reader has read (tombstones included,
// the transactions' markers not).
func (r *ChangelogReader) Records() int64 { return r.records }

// add reads one record: the latest of its key, or its key deleted for a
// tombstone.
func (r *ChangelogReader) add(rec *kgo.Record) {
	r.next = max(r.next, rec.Offset+1)
	if rec.Attrs.IsControl() {
		return
	}
	r.records++
	r.bytes += int64(len(rec.Value))
	if rec.Value == nil {
		delete(r.latest, string(rec.Key))
		return
	}
	r.latest[string(rec.Key)] = rec.Value
}

// ReadChangelog reads a task's partition of the changelog (r.Partition of
// topic) on from where r got (a standby's reader, or a new one), up to its
// last stable offset, and returns the latest checkpoint in it (nil if
// none); r is used up. Call it once no transaction of an earlier owner is
// open there (WaitStable): then the last stable offset is the end.
func (t *Thread) ReadChangelog(ctx context.Context, topic string, r *ChangelogReader) (*Restored, error) {
	part := r.Partition
	adm := t.Admin()
	stable, _, err := stableEnd(ctx, adm, topic, part)
	if err != nil {
		return nil, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, classify(err)
	}
	start := int64(0)
	if o, ok := starts.Lookup(topic, part); ok && o.Err == nil {
		start = o.Offset
	}
	if r.next > stable || r.next < start {
		// Not what the partition holds now (the topic was made again, or
		// records were deleted that the reader did not read): read it
		// from its start.
		r = NewChangelogReader(part)
		r.next = start
	}
	warm, warmBytes := r.records, r.bytes
	if r.next < stable {
		done := make(chan error, 1)
		end := func(err error) {
			select {
			case done <- err:
			default:
			}
		}
		// Control records (the transactions' markers) come too, so that
		// the read knows when it has reached the end.
		rd := t.read(topic, part, r.next, func(recs []*kgo.Record, _ int64, err error) bool {
			if err != nil {
				end(err)
				return false
			}
			for _, rec := range recs {
				if rec.Offset < stable {
					r.add(rec)
				}
			}
			if r.next >= stable {
				end(nil)
			}
			return false
		})
		select {
		case err = <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		t.unread(rd)
		if err != nil {
			return nil, classify(err)
		}
	}
	res, err := r.restored(topic)
	if res != nil {
		res.Records, res.Bytes, res.Warm = r.records-warm, r.bytes-warmBytes, warm
	}
	return res, err
}

// restored is the latest checkpoint r has read (nil if none).
func (r *ChangelogReader) restored(topic string) (*Restored, error) {
	part := r.Partition
	mj, ok := r.latest["m"]
	if !ok {
		return nil, nil
	}
	var m manifest
	if err := json.Unmarshal(mj, &m); err != nil {
		return nil, fmt.Errorf("the changelog %s/%d holds a corrupt manifest: %w", topic, part, err)
	}
	res := &Restored{Manifest: m.Manifest, chunks: map[string]bool{}}
	for _, f := range m.Files {
		data := make([]byte, 0, f.Size)
		for _, name := range m.Chunks[f.Name] {
			v, ok := r.latest["c/"+name]
			if !ok {
				return nil, fmt.Errorf("the changelog %s/%d lacks chunk %s of %s of checkpoint %d", topic, part, name, f.Name, m.ID)
			}
			data = append(data, v...)
			res.chunks[name] = true
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			return nil, fmt.Errorf("the changelog %s/%d: %s of checkpoint %d does not match its checksum", topic, part, f.Name, m.ID)
		}
		res.Files = append(res.Files, checkpoint.Input{Name: f.Name, Data: data})
	}
	return res, nil
}

// EnsureChangelog creates the changelog topic, compacted, with partitions
// partitions, unless it exists; if it exists with another number of
// partitions the job cannot use it.
func EnsureChangelog(ctx context.Context, c Config, topic string, partitions int32) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	return EnsureTopic(ctx, c, topic, partitions, compacted())
}

// compacted is the configuration of a compacted topic.
func compacted() map[string]*string {
	policy := "compact"
	return map[string]*string{"cleanup.policy": &policy}
}

// CreateChangelogWith creates the changelog topic, compacted, with
// partitions partitions unless it exists, through a client the caller has,
// and returns how many partitions it has.
func CreateChangelogWith(ctx context.Context, adm *kadm.Client, topic string, partitions int32) (int32, error) {
	return CreateTopicWith(ctx, adm, topic, partitions, compacted())
}

// Partitions lists the partitions of a topic, in order.
func Partitions(ctx context.Context, c Config, topic string) ([]int32, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return PartitionsWith(ctx, kadm.NewClient(cl), topic)
}

// PartitionsWith is Partitions through a client the caller has.
func PartitionsWith(ctx context.Context, adm *kadm.Client, topic string) ([]int32, error) {
	return topicPartitions(ctx, adm, topic)
}

// topicPartitions lists the partitions of a topic that exists, in order.
func topicPartitions(ctx context.Context, adm *kadm.Client, topic string) ([]int32, error) {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, classify(err)
	}
	td, ok := details[topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) || (td.Err == nil && len(td.Partitions) == 0):
		return nil, connector.Permanent(fmt.Errorf("topic %s does not exist", topic))
	case td.Err != nil:
		return nil, classify(td.Err)
	}
	return td.Partitions.Numbers(), nil
}
