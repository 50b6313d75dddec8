package kafka

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/mtime"
)

// Watermarks is a consumer group's topic of its tasks' watermarks: a
// compacted topic of one partition, with one record per task (keyed by its
// partition's number) for each watermark it publishes, so that it keeps
// each task's last. Every instance of the group reads all of them through
// a thread's client, and its threads publish those of their tasks in the
// transactions that commit the tasks' checkpoints (Records, as the
// thread's Extra), so that a task whose partition is idle can follow the
// others (package group says how).
//
// A task that starts again from an older checkpoint publishes an older
// watermark, which a reader's own watermark does not follow back.
type Watermarks struct {
	// Config reaches the brokers; its Topic is the watermarks' topic.
	Config
	// Thread reads the topic.
	Thread *Thread

	rd *reading
}

// PartitionWatermark is one record of a Watermarks topic: the watermark of
// the task of Partition, and whether every partition it reads is idle.
type PartitionWatermark struct {
	Partition int32      `json:"partition"`
	Watermark mtime.Time `json:"watermark_ms"`
	Idle      bool       `json:"idle"`
}

// Open creates the topic (compacted, one partition) unless it exists and
// reads it from its start, calling f with each watermark (from the
// thread's poll goroutine: f must be quick); a record that is not one is
// skipped.
func (w *Watermarks) Open(ctx context.Context, f func(PartitionWatermark)) error {
	adm := w.Thread.Admin()
	if _, err := CreateChangelogWith(ctx, adm, w.Topic, 1); err != nil {
		return err
	}
	starts, err := adm.ListStartOffsets(ctx, w.Topic)
	if err != nil {
		return classify(err)
	}
	start := int64(0)
	if o, ok := starts.Lookup(w.Topic, 0); ok && o.Err == nil {
		start = o.Offset
	}
	w.rd = w.Thread.read(w.Topic, 0, start, func(recs []*kgo.Record, _ int64, err error) bool {
		if err != nil {
			w.logf("watermarks topic %s: %v", w.Topic, err)
		}
		for _, r := range recs {
			var pw PartitionWatermark
			if !r.Attrs.IsControl() && json.Unmarshal(r.Value, &pw) == nil && strconv.Itoa(int(pw.Partition)) == string(r.Key) {
				f(pw)
			}
		}
		return false
	})
	return nil
}

// Records are the records that publish ws.
func (w *Watermarks) Records(ws []PartitionWatermark) []*kgo.Record {
	out := make([]*kgo.Record, 0, len(ws))
	for _, pw := range ws {
		v, _ := json.Marshal(pw)
		out = append(out, &kgo.Record{Topic: w.Topic, Partition: 0, Key: strconv.AppendInt(nil, int64(pw.Partition), 10), Value: v})
	}
	return out
}

// Close stops reading.
func (w *Watermarks) Close() {
	if w.rd != nil {
		w.Thread.unread(w.rd)
	}
}
