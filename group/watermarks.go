package group

import (
	"context"
	"sync"
	"time"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/mtime"
)

// WatermarksTopic is the topic where the tasks of a group with
// ShareWatermarks publish their watermarks: GROUP-watermarks.
func WatermarksTopic(group string) string { return group + "-watermarks" }

// publishEvery is how often an instance publishes the watermarks of its
// tasks that changed: as often as a live job's source reports.
const publishEvery = 200 * time.Millisecond

// shared is the group's watermark as this instance knows it: the last
// watermark each task published to the watermarks topic, and the latest of
// this instance's own tasks, which are fresher.
//
// The group's watermark is the minimum over the tasks whose partitions are
// not idle, as a job's is the minimum over its partitions that are not
// idle: a task whose partitions are all idle follows it (engine's
// HeadConfig.GroupWatermark), so that its windows close as those of a
// quiet partition of one job do. A task that has published nothing yet
// (not started anywhere) does not hold it back, as a partition that has
// had no event does not; one whose instance died holds it back at its last
// watermark until another instance runs it. With no task active there is
// no group watermark: an idle task keeps its own.
type shared struct {
	mu     sync.Mutex
	nparts int32
	read   map[int32]kafka.PartitionWatermark // from the topic
	local  map[int32]kafka.PartitionWatermark // this instance's tasks
	sent   map[int32]kafka.PartitionWatermark // local, as last published
}

func newShared(nparts int32) *shared {
	return &shared{nparts: nparts, read: map[int32]kafka.PartitionWatermark{},
		local: map[int32]kafka.PartitionWatermark{}, sent: map[int32]kafka.PartitionWatermark{}}
}

// report records the watermark of the task of partition p and returns the
// group's (mtime.MinTime: none).
func (s *shared) report(p int32, own mtime.Time, idle bool) mtime.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.local[p] = kafka.PartitionWatermark{Partition: p, Watermark: own, Idle: idle}
	return s.floor()
}

func (s *shared) floor() mtime.Time {
	w, active := mtime.MaxTime, false
	for p := range s.nparts {
		pw, ok := s.local[p]
		if !ok {
			pw, ok = s.read[p]
		}
		if ok && !pw.Idle {
			w, active = min(w, pw.Watermark), true
		}
	}
	if !active {
		return mtime.MinTime
	}
	return w
}

// group is the group's watermark (mtime.MinTime: none).
func (s *shared) group() mtime.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.floor()
}

// heard records a watermark read from the topic.
func (s *shared) heard(pw kafka.PartitionWatermark) {
	s.mu.Lock()
	s.read[pw.Partition] = pw
	s.mu.Unlock()
}

// drop forgets the task of partition p, which stopped here: what the topic
// says of it counts again.
func (s *shared) drop(p int32) {
	s.mu.Lock()
	delete(s.local, p)
	delete(s.sent, p)
	s.mu.Unlock()
}

// changed returns this instance's tasks' watermarks that were not published
// as they are now, and takes them as published.
func (s *shared) changed() []kafka.PartitionWatermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []kafka.PartitionWatermark
	for p, pw := range s.local {
		if last, ok := s.sent[p]; !ok || last != pw {
			s.sent[p] = pw
			ws = append(ws, pw)
		}
	}
	return ws
}

// exchange publishes this instance's tasks' watermarks and reads everyone's
// until ctx is done.
func (s *shared) exchange(ctx context.Context, w *kafka.Watermarks) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := w.Poll(ctx, s.heard); err != nil && ctx.Err() == nil {
				return // the client is closed
			}
		}
	}()
	t := time.NewTicker(publishEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			if ws := s.changed(); len(ws) > 0 {
				w.Publish(ctx, ws)
			}
		}
	}
}
