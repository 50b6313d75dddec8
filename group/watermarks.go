package group

import (
	"sync"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/mtime"
)

// WatermarksTopic is the topic where the tasks of a group with
// ShareWatermarks publish their watermarks: GROUP-watermarks.
func WatermarksTopic(group string) string { return group + "-watermarks" }

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
// watermark until another instance runs it. With every task idle, it is
// the highest of theirs, as a job's is the highest of its partitions' when
// every one is idle: a quiet partition's windows close with a busy one's
// watermark even when the busy one turned idle before the quiet one did.
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
	w, active, highest := mtime.MaxTime, false, mtime.MinTime
	for p := range s.nparts {
		pw, ok := s.local[p]
		if !ok {
			pw, ok = s.read[p]
		}
		if !ok {
			continue
		}
		highest = max(highest, pw.Watermark)
		if !pw.Idle {
			w, active = min(w, pw.Watermark), true
		}
	}
	if !active {
		return highest
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

// of returns the watermarks of this instance's tasks of parts that were
// not published as they are now, and takes them as published: a thread's
// transaction that commits those tasks' checkpoints publishes them.
func (s *shared) of(parts []int32) []kafka.PartitionWatermark {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ws []kafka.PartitionWatermark
	for _, p := range parts {
		pw, ok := s.local[p]
		if last, sent := s.sent[p]; ok && (!sent || last != pw) {
			s.sent[p] = pw
			ws = append(ws, pw)
		}
	}
	return ws
}
