package heap

import "cmp"

// Queue is a min-queue of entries by key for keys pushed nearly in order:
// the expiries of records buffered for a constant time after their event
// time, which arrive a little out of order. An entry whose key belongs
// among the last few of a sorted run goes into the run, which pops from
// its front in O(1); any other goes to a Heap beside it. Pop takes the
// lesser of the two fronts. The zero value is an empty queue. Entries of
// equal keys come out in no particular order, as from a Heap.
//
// A queue's layout is not meant for a checkpoint: its users write their
// entries in an order of their own, and push them anew on a restore.
type Queue[K cmp.Ordered, V any] struct {
	// run holds entries sorted by key from head on; those before head
	// have been popped and zeroed.
	run  []Entry[K, V]
	head int
	rest Heap[K, V]
}

// runReach is how far from the end of the run a push looks for its place:
// an entry that belongs further back goes to the heap. Moving up to this
// many entries costs less than a heap's push and pop.
const runReach = 16

// Len is the number of entries.
func (q *Queue[K, V]) Len() int { return len(q.run) - q.head + len(q.rest) }

// Push adds an entry.
func (q *Queue[K, V]) Push(k K, v V) {
	n := len(q.run)
	i := n
	for i > q.head && q.run[i-1].Key > k {
		if n-i == runReach {
			q.rest.Push(k, v)
			return
		}
		i--
	}
	if i == n {
		q.run = append(q.run, Entry[K, V]{Value: v, Key: k})
		return
	}
	q.run = append(q.run, Entry[K, V]{})
	copy(q.run[i+1:], q.run[i:n])
	q.run[i] = Entry[K, V]{Value: v, Key: k}
}

// Min is the least key; the queue must not be empty.
func (q *Queue[K, V]) Min() K {
	if q.fromRun() {
		return q.run[q.head].Key
	}
	return q.rest[0].Key
}

// fromRun says the least entry is the run's first.
func (q *Queue[K, V]) fromRun() bool {
	return q.head < len(q.run) && (len(q.rest) == 0 || q.run[q.head].Key <= q.rest[0].Key)
}

// Pop removes and returns an entry of the least key; the queue must not
// be empty. As Heap's, it zeroes the slot it leaves.
func (q *Queue[K, V]) Pop() Entry[K, V] {
	if !q.fromRun() {
		return q.rest.Pop()
	}
	e := q.run[q.head]
	q.run[q.head] = Entry[K, V]{}
	q.head++
	switch live := len(q.run) - q.head; {
	case live == 0:
		q.run, q.head = q.run[:0], 0
	case q.head >= 1024 && q.head >= live:
		// The popped front is at least as long as what is left: moving
		// what is left down costs at most a copy of each entry once.
		copy(q.run, q.run[q.head:])
		clear(q.run[live:])
		q.run, q.head = q.run[:live], 0
	}
	return e
}
