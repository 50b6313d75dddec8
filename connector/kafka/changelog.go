package kafka

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
)

// A changelog is a compacted topic with a partition per input partition
// (per task). A task's partition holds its latest checkpoint as records
// whose keys stay the same from checkpoint to checkpoint, so that
// compaction keeps only the latest of each:
//
//	"m"               the manifest (JSON): the checkpoint's id, kind, job,
//	                  fingerprint, and its files with their sizes and
//	                  SHA-256 checksums
//	"f/NAME/I"        the I-th chunk of the file NAME: the checkpoint's id
//	                  (8 bytes, big-endian), then up to ChunkSize bytes
//
// Every record of a checkpoint goes into the transaction that holds the
// checkpoint's output, the manifest last. A chunk of an older checkpoint
// that compaction has kept (the file had more chunks then) is told apart by
// its id.

// ChunkSize is the most bytes of a file one changelog record holds.
const ChunkSize = 256 << 10

// ChangelogRecords are the records of a checkpoint in a task's partition of
// the changelog topic.
func ChangelogRecords(topic string, part int32, c *checkpoint.Checkpoint) ([]*kgo.Record, error) {
	m := c.Manifest
	m.Files = nil
	var recs []*kgo.Record
	for _, f := range c.Manifest.Files {
		data, ok := c.Files[f.Name]
		if !ok {
			b, err := os.ReadFile(c.Paths[f.Name])
			if err != nil {
				return nil, fmt.Errorf("reading %s of checkpoint %d: %w", f.Name, m.ID, err)
			}
			data = b
		}
		sum := sha256.Sum256(data)
		m.Files = append(m.Files, checkpoint.File{Name: f.Name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
		for i := 0; i*ChunkSize < len(data); i++ {
			chunk := data[i*ChunkSize : min(len(data), (i+1)*ChunkSize)]
			v := make([]byte, 8, 8+len(chunk))
			binary.BigEndian.PutUint64(v, m.ID)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Key: chunkKey(f.Name, i), Value: append(v, chunk...)})
		}
	}
	mj, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(recs, &kgo.Record{Topic: topic, Partition: part, Key: []byte("m"), Value: mj}), nil
}

func chunkKey(name string, i int) []byte {
	return []byte("f/" + name + "/" + strconv.Itoa(i))
}

// Restored is a checkpoint read back from a changelog.
type Restored struct {
	Manifest checkpoint.Manifest
	Files    []checkpoint.Input
	Records  int64 // the records read, older ones included
	Bytes    int64
}

// ReadChangelog reads a task's partition of the changelog up to its last
// stable offset and returns the latest checkpoint in it (nil if none). Call
// it once the task's producers have started (Txn.Start): no transaction of
// an earlier owner is open then, and the last stable offset is the end.
func ReadChangelog(ctx context.Context, c Config, topic string, part int32) (*Restored, error) {
	opts, err := c.opts()
	if err != nil {
		return nil, err
	}
	admin, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	ends, err := kadm.NewClient(admin).ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, classify(err)
	}
	end, ok := ends.Lookup(topic, part)
	if !ok {
		return nil, connector.Permanent(fmt.Errorf("the changelog %s has no partition %d", topic, part))
	}
	if end.Offset <= 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	latest := map[string][]byte{}
	r := &Restored{}
	// Control records (the transactions' markers) come too, so that the
	// read knows when it has reached the end.
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, classify(ferr)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			next = max(next, rec.Offset+1)
			if rec.Attrs.IsControl() {
				return
			}
			r.Records++
			r.Bytes += int64(len(rec.Value))
			latest[string(rec.Key)] = rec.Value
		})
	}
	mj, ok := latest["m"]
	if !ok {
		return nil, nil
	}
	if err := json.Unmarshal(mj, &r.Manifest); err != nil {
		return nil, fmt.Errorf("the changelog %s/%d holds a corrupt manifest: %w", topic, part, err)
	}
	for _, f := range r.Manifest.Files {
		data := make([]byte, 0, f.Size)
		for i := 0; int64(len(data)) < f.Size; i++ {
			v, ok := latest[string(chunkKey(f.Name, i))]
			if !ok || len(v) < 8 || binary.BigEndian.Uint64(v) != r.Manifest.ID {
				return nil, fmt.Errorf("the changelog %s/%d lacks chunk %d of %s of checkpoint %d", topic, part, i, f.Name, r.Manifest.ID)
			}
			data = append(data, v[8:]...)
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			return nil, fmt.Errorf("the changelog %s/%d: %s of checkpoint %d does not match its checksum", topic, part, f.Name, r.Manifest.ID)
		}
		r.Files = append(r.Files, checkpoint.Input{Name: f.Name, Data: data})
	}
	return r, nil
}

// EnsureChangelog creates the changelog topic, compacted, with partitions
// partitions, unless it exists; if it exists with another number of
// partitions the job cannot use it.
func EnsureChangelog(ctx context.Context, c Config, topic string, partitions int32) error {
	compact := "compact"
	return EnsureTopic(ctx, c, topic, partitions, map[string]*string{"cleanup.policy": &compact})
}

// Partitions lists the partitions of a topic, in order.
func Partitions(ctx context.Context, c Config, topic string) ([]int32, error) {
	opts, err := c.opts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return nil, classify(err)
	}
	td, ok := details[topic]
	if !ok || len(td.Partitions) == 0 || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, connector.Permanent(fmt.Errorf("topic %s does not exist", topic))
	}
	if td.Err != nil {
		return nil, classify(td.Err)
	}
	return td.Partitions.Numbers(), nil
}
