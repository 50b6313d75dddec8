package kafka

import (
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Standby keeps tasks' partitions of the changelog read, for the tasks of
// other instances that this one would take over: what Kafka Streams calls
// standby replicas. It holds each partition's latest records in memory
// (ChangelogReader: about the size of the task's last checkpoint), read
// through a thread's client, so that the instance that takes a task over
// reads only what the changelog got since (Thread.ReadChangelog), not every
// checkpoint the compaction has not removed yet.
type Standby struct {
	// Thread reads the partitions kept.
	Thread *Thread
	// Topic is the changelog.
	Topic string

	mu      sync.Mutex
	closed  bool
	readers map[int32]*kept
}

// kept is a partition kept read: its reader is the thread's until Take.
type kept struct {
	r  *ChangelogReader
	rd *reading
}

// Keep makes parts the partitions kept read: new ones are read from their
// start, the others forgotten.
func (s *Standby) Keep(parts []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.readers == nil {
		s.readers = map[int32]*kept{}
	}
	for p, k := range s.readers {
		if !slices.Contains(parts, p) {
			s.Thread.unread(k.rd)
			delete(s.readers, p)
		}
	}
	for _, p := range parts {
		if s.readers[p] != nil {
			continue
		}
		k := &kept{r: NewChangelogReader(p)}
		// The thread's lock is held while it delivers, and while Take
		// stops the reading: the reader is the thread's until then.
		k.rd = s.Thread.read(s.Topic, p, 0, func(recs []*kgo.Record, _ int64, err error) bool {
			if err != nil {
				s.Thread.logf("standby of %s/%d: %v", s.Topic, p, err)
				return false
			}
			for _, rec := range recs {
				k.r.add(rec)
			}
			return false
		})
		s.readers[p] = k
	}
}

// Kept is the partitions kept read, in order.
func (s *Standby) Kept() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.readers))
}

// Take hands the reader of partition p over to the task that starts here
// (Thread.ReadChangelog), and stops reading p; nil when p was not kept.
func (s *Standby) Take(p int32) *ChangelogReader {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.readers[p]
	if !ok {
		return nil
	}
	delete(s.readers, p)
	s.Thread.unread(k.rd)
	return k.r
}

// Close stops reading.
func (s *Standby) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.readers {
		s.Thread.unread(k.rd)
	}
	clear(s.readers)
	s.closed = true
}
