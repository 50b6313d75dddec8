package exec

import (
	"cmp"
	"slices"

	"github.com/weirstream/weir/internal/heap"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/window"
)

// timerKind says what a timer is for; a fired timer is checked against the
// window's state (timers are never deleted, only found stale).
type timerKind uint8

const (
	tOnTime  timerKind = iota // event time End-1: the on-time firing
	tCleanup                  // event time End-1+lateness: the closing pane
	tEarly                    // processing time: an early firing
	tLate                     // processing time: a held-back late firing
)

// timerRef is a pending timer: 40 bytes, the window's sequence and the
// timer's kind in one word (a tumbling job holds a timer or two a key).
type timerRef[K comparable] struct {
	key K
	win window.Window
	sk  uint64 // seq<<timerKindBits | kind: ordered as (seq, kind)
}

// timerKindBits are the bits of a timerRef's word that hold its kind; a
// window's sequence (its creating step) is below 1<<maxSeqBits.
const (
	timerKindBits = 2
	maxSeqBits    = 64 - timerKindBits
)

func newTimer[K comparable](key K, w window.Window, seq uint64, kind timerKind) timerRef[K] {
	return timerRef[K]{key: key, win: w, sk: seq<<timerKindBits | uint64(kind)}
}

// seq is the sequence of the timer's window.
func (r timerRef[K]) seq() uint64 { return r.sk >> timerKindBits }

// kind is what the timer is for.
func (r timerRef[K]) kind() timerKind { return timerKind(r.sk & (1<<timerKindBits - 1)) }

// timerQueue indexes timers by their instant: one bucket per distinct
// instant, so that the million keys of a tumbling window share one heap entry.
// Within a bucket, timers fire in the order of their windows' creation
// sequence, which makes the order of results independent of how keys are
// spread over parallel instances.
type timerQueue[K comparable] struct {
	buckets map[mtime.Time][]timerRef[K]
	times   heap.Heap[mtime.Time, struct{}] // the instants of the buckets
	free    [][]timerRef[K]
}

func newTimerQueue[K comparable]() *timerQueue[K] {
	return &timerQueue[K]{buckets: map[mtime.Time][]timerRef[K]{}}
}

func (q *timerQueue[K]) add(t mtime.Time, r timerRef[K]) {
	b, ok := q.buckets[t]
	if !ok {
		q.times.Push(t, struct{}{})
		if n := len(q.free); n > 0 {
			b = q.free[n-1]
			q.free = q.free[:n-1]
		}
	}
	q.buckets[t] = append(b, r)
}

// next returns the earliest instant with timers.
func (q *timerQueue[K]) next() (mtime.Time, bool) {
	if len(q.times) == 0 {
		return 0, false
	}
	return q.times[0].Key, true
}

// pop removes and returns the earliest bucket, sorted by window sequence. The
// caller hands it back with recycle when done.
func (q *timerQueue[K]) pop() (mtime.Time, []timerRef[K]) {
	t := q.times.Pop().Key
	b := q.buckets[t]
	delete(q.buckets, t)
	if !slices.IsSortedFunc(b, cmpSeq[K]) {
		slices.SortStableFunc(b, cmpSeq[K])
	}
	return t, b
}

// cmpSeq orders the timers of one instant: by window sequence, then kind and
// window, so that the order is the same in memory and on disk.
func cmpSeq[K comparable](a, b timerRef[K]) int {
	if c := cmp.Compare(a.sk, b.sk); c != 0 {
		return c
	}
	if c := cmp.Compare(a.win.Start, b.win.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.win.End, b.win.End)
}

func (q *timerQueue[K]) recycle(b []timerRef[K]) {
	clear(b)
	q.free = append(q.free, b[:0])
}

// len is the number of pending timers (including stale ones).
func (q *timerQueue[K]) len() int {
	n := 0
	for _, b := range q.buckets {
		n += len(b)
	}
	return n
}

func (q *timerQueue[K]) error() error { return nil }
func (q *timerQueue[K]) close() error { return nil }
