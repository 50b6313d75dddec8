package exec

import "github.com/weirstream/weir/mtime"

// keyStore holds the windows of every key of one operator instance. The
// memory store is a map; the Pebble store keeps a bounded cache of keys in
// memory and the rest on disk.
//
// A *keyState returned by get or getOrCreate stays valid, and its changes are
// kept, until the next call of get or getOrCreate for another key (the
// Pebble store may then write it back and evict it): the operator works on
// one key at a time.
type keyStore[K comparable, A, O any] interface {
	// get returns the state of k, or nil if k has no windows.
	get(k K) *keyState[A, O]
	// getOrCreate returns the state of k, empty if k had none.
	getOrCreate(k K) *keyState[A, O]
	// remove forgets k, whose last window is gone.
	remove(k K, ks *keyState[A, O])
	// forEach calls f for every key with windows, in no particular order.
	forEach(f func(k K, ks *keyState[A, O]) error) error
	// len is the number of keys with windows.
	len() int
	// error is the first failure of the storage underneath, if any.
	error() error
	close() error
}

// timerStore holds timers ordered by instant, then by window sequence.
type timerStore[K comparable] interface {
	add(t mtime.Time, r timerRef[K])
	// next is the earliest instant with timers.
	next() (mtime.Time, bool)
	// pop removes and returns timers of the earliest instant, in order:
	// all of them, or (for a large bucket on disk) the first part, the rest
	// staying for the next pop.
	pop() (mtime.Time, []timerRef[K])
	// recycle takes back a slice returned by pop.
	recycle([]timerRef[K])
	len() int
	error() error
	close() error
}

// memStore is the in-memory key store: a map, and a free list of key states
// so that a key that comes back does not allocate again.
type memStore[K comparable, A, O any] struct {
	keys map[K]*keyState[A, O]
	free []*keyState[A, O]
}

func newMemStore[K comparable, A, O any]() *memStore[K, A, O] {
	return &memStore[K, A, O]{keys: map[K]*keyState[A, O]{}}
}

func (m *memStore[K, A, O]) get(k K) *keyState[A, O] { return m.keys[k] }

func (m *memStore[K, A, O]) getOrCreate(k K) *keyState[A, O] {
	ks := m.keys[k]
	if ks == nil {
		if n := len(m.free); n > 0 {
			ks = m.free[n-1]
			m.free = m.free[:n-1]
		} else {
			ks = &keyState[A, O]{}
			ks.wins = ks.inline[:0]
		}
		m.keys[k] = ks
	}
	return ks
}

func (m *memStore[K, A, O]) remove(k K, ks *keyState[A, O]) {
	delete(m.keys, k)
	clear(ks.wins)
	ks.wins = ks.inline[:0]
	clear(ks.slices)
	ks.slices = ks.slices[:0]
	m.free = append(m.free, ks)
}

func (m *memStore[K, A, O]) forEach(f func(K, *keyState[A, O]) error) error {
	for k, ks := range m.keys {
		if err := f(k, ks); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore[K, A, O]) len() int     { return len(m.keys) }
func (m *memStore[K, A, O]) error() error { return nil }
func (m *memStore[K, A, O]) close() error { return nil }
