// Package heap is weir's one binary min-heap: entries ordered by a key (an
// instant, in weir's uses), kept in a plain slice so that it can be written
// to a checkpoint and read back as it is, and generic in its key and value
// so that a comparison is the key type's own "<" (no interface, no function
// value, nothing boxed) and a push allocates only when the slice grows.
//
// It holds the heap alone: what the entries mean, and any index beside
// them (the timer buckets of package exec, the ids of a de-duplication),
// belongs to its users. Beside it, Queue is a min-queue for keys pushed
// nearly in order (a join's expiries): a sorted run, and the heap for the
// entries that do not fit the run.
package heap

import "cmp"

// Entry is an element of a Heap: the key it is ordered by, and its value.
// The value comes first so that an empty one (struct{}, a heap of keys
// alone) takes no room: a zero-size last field would be padded.
type Entry[K cmp.Ordered, V any] struct {
	Value V
	Key   K
}

// Heap is a binary min-heap of entries by key: the entry with the smallest
// key is at index 0, and each entry's key is at most those of its children
// at 2i+1 and 2i+2. The zero value is an empty heap. A slice in heap order
// (one read back from a checkpoint, or any slice sorted by key) is a Heap
// as it is. Keys must not be NaN. Entries of equal keys come out in no
// particular order.
type Heap[K cmp.Ordered, V any] []Entry[K, V]

// Push adds an entry. It moves the entries above it down a level each, and
// writes it once, where it belongs: the layout of swapping it up from the
// end, without the swaps.
func (h *Heap[K, V]) Push(k K, v V) {
	*h = append(*h, Entry[K, V]{})
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].Key <= k {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = Entry[K, V]{Value: v, Key: k}
}

// Pop removes and returns the entry with the smallest key; the heap must
// not be empty. The slot it leaves is zeroed, so that the heap keeps no
// reference to a value it no longer holds. The last entry goes down from
// the top, the lesser child moving up a level each time: the layout of
// swapping it down, without the swaps.
func (h *Heap[K, V]) Pop() Entry[K, V] {
	a := *h
	top := a[0]
	n := len(a) - 1
	last := a[n]
	a[n] = Entry[K, V]{}
	a = a[:n]
	if n > 0 {
		i := 0
		for {
			m := 2*i + 1
			if m >= n {
				break
			}
			if r := m + 1; r < n && a[r].Key < a[m].Key {
				m = r
			}
			if !(a[m].Key < last.Key) {
				break
			}
			a[i] = a[m]
			i = m
		}
		a[i] = last
	}
	*h = a
	return top
}
