package kafka

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Standby keeps tasks' partitions of the changelog read, for the tasks of
// other instances that this one would take over: what Kafka Streams calls
// standby replicas. It holds each partition's latest records in memory
// (ChangelogReader: about the size of the task's last checkpoint), read
// with one client for all of them, so that the instance that takes a task
// over reads only what the changelog got since (ReadChangelogFrom), not
// every checkpoint the compaction has not removed yet.
//
// The client is made again whenever the partitions kept change, each read
// on from where its reader got: a fetch of a client replaced is not used,
// so that no record comes to a reader but in order.
type Standby struct {
	// Config reaches the brokers; its Topic is the changelog.
	Config

	mu      sync.Mutex
	cl      *kgo.Client // nil while nothing is kept
	closed  bool
	readers map[int32]*ChangelogReader
}

// Keep makes parts the partitions kept read: new ones are read from their
// start, the others forgotten.
func (s *Standby) Keep(parts []int32) error {
	parts = slices.Sorted(slices.Values(parts))
	s.mu.Lock()
	if s.closed || slices.Equal(parts, s.kept()) {
		s.mu.Unlock()
		return nil
	}
	old := s.readers
	s.readers = map[int32]*ChangelogReader{}
	offsets := map[int32]kgo.Offset{}
	for _, p := range parts {
		r := old[p]
		if r == nil {
			r = NewChangelogReader(p)
		}
		s.readers[p] = r
		offsets[p] = kgo.NewOffset().At(r.next)
	}
	prev := s.cl
	s.cl = nil
	var err error
	if len(parts) > 0 {
		if s.cl, err = s.committedReader(s.Topic, offsets, 500*time.Millisecond); err != nil {
			clear(s.readers)
		}
	}
	s.mu.Unlock()
	if prev != nil {
		prev.Close()
	}
	return classify(err)
}

// kept is the partitions kept, in order; s.mu is held.
func (s *Standby) kept() []int32 { return slices.Sorted(maps.Keys(s.readers)) }

// Kept is the partitions kept read, in order.
func (s *Standby) Kept() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kept()
}

// Take hands the reader of partition p over to the task that starts here
// (ReadChangelogFrom), and stops reading p; nil when p was not kept.
func (s *Standby) Take(p int32) *ChangelogReader {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.readers[p]
	if !ok {
		return nil
	}
	delete(s.readers, p)
	if s.cl != nil {
		s.cl.RemoveConsumePartitions(map[string][]int32{s.Topic: {p}})
	}
	return r
}

// Poll reads what comes to the partitions kept until ctx is done or the
// standby is closed.
func (s *Standby) Poll(ctx context.Context) error {
	for {
		s.mu.Lock()
		cl, closed := s.cl, s.closed
		s.mu.Unlock()
		if closed {
			return kgo.ErrClientClosed
		}
		if cl == nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		if cl == s.cl && !fs.IsClientClosed() {
			fs.EachError(func(_ string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					s.logf("standby of %s/%d: %v", s.Topic, p, err)
				}
			})
			fs.EachRecord(func(rec *kgo.Record) {
				// A record of a partition just taken is not kept.
				if r := s.readers[rec.Partition]; r != nil && rec.Offset >= r.next {
					r.add(rec)
				}
			})
		}
		s.mu.Unlock()
	}
}

// Close stops reading and closes the client.
func (s *Standby) Close() {
	s.mu.Lock()
	cl := s.cl
	s.cl, s.closed = nil, true
	clear(s.readers)
	s.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}
