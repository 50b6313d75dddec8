package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/mtime"
)

// Watermarks is a consumer group's topic of its tasks' watermarks: a
// compacted topic of one partition, with one record per task (keyed by its
// partition's number) for each watermark it publishes, so that it keeps
// each task's last. Every instance of the group publishes the watermarks of
// its tasks and reads all of them, with one client for both, so that a task
// whose partition is idle can follow the others (package group says how).
//
// The records are not transactional: a watermark says how far a task has
// got, not what it wrote; a task that starts again from an older
// checkpoint publishes an older watermark, which a reader's own watermark
// does not follow back.
type Watermarks struct {
	// Config reaches the brokers; its Topic is the watermarks' topic.
	Config

	cl *kgo.Client
}

// PartitionWatermark is one record of a Watermarks topic: the watermark of
// the task of Partition, and whether every partition it reads is idle.
type PartitionWatermark struct {
	Partition int32      `json:"partition"`
	Watermark mtime.Time `json:"watermark_ms"`
	Idle      bool       `json:"idle"`
}

// Open creates the topic (compacted, one partition) unless it exists and
// starts the client, which reads the topic from its start.
func (w *Watermarks) Open(ctx context.Context) error {
	compact := "compact"
	if err := EnsureTopic(ctx, w.Config, w.Topic, 1, map[string]*string{"cleanup.policy": &compact}); err != nil {
		return err
	}
	opts, err := w.opts()
	if err != nil {
		return err
	}
	w.cl, err = kgo.NewClient(append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.Topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.DefaultProduceTopic(w.Topic),
		kgo.ProducerLinger(10*time.Millisecond))...)
	return classify(err)
}

// Publish sends ws to the topic, without waiting: a watermark that cannot
// be sent is superseded by the next.
func (w *Watermarks) Publish(ctx context.Context, ws []PartitionWatermark) {
	for _, pw := range ws {
		v, _ := json.Marshal(pw)
		w.cl.Produce(ctx, &kgo.Record{Key: strconv.AppendInt(nil, int64(pw.Partition), 10), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
				w.logf("watermarks topic %s: %v", w.Topic, err)
			}
		})
	}
}

// Poll waits for the next records of the topic, or for ctx, and calls f for
// each watermark in them; a record that is not one is skipped. It returns
// ctx's error when ctx is done.
func (w *Watermarks) Poll(ctx context.Context, f func(PartitionWatermark)) error {
	fs := w.cl.PollFetches(ctx)
	if fs.IsClientClosed() {
		return kgo.ErrClientClosed
	}
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			w.logf("watermarks topic %s: %v", w.Topic, err)
		}
	})
	fs.EachRecord(func(r *kgo.Record) {
		var pw PartitionWatermark
		if json.Unmarshal(r.Value, &pw) == nil && strconv.Itoa(int(pw.Partition)) == string(r.Key) {
			f(pw)
		}
	})
	return ctx.Err()
}

// Close flushes what is being published, for at most a second, and closes
// the client.
func (w *Watermarks) Close() {
	if w.cl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = w.cl.Flush(ctx)
	w.cl.Close()
}
