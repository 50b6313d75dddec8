package exec

import (
	"runtime"
	"sync/atomic"

	"github.com/weirstream/weir/mtime"
)

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

// memStore is the in-memory key store. Key states live in a slab of
// fixed-size chunks, in the order they were created, and a map finds them by
// key: a snapshot reads the slab from start to end, at the speed of memory,
// rather than following the map to key states scattered on the heap. A key
// that goes away leaves its slot on a free list for the next new key.
//
// A snapshot is taken beside the operator (see snapshot.go): the store
// remembers which slots the snapshot has read, and the operator, before it
// changes a slot the snapshot has not read yet, writes that slot's state into
// the snapshot itself. So the operator stops only for the keys it touches
// while the snapshot is under way, never for all the keys it holds.
type memStore[K comparable, A, O any] struct {
	keys   map[K]*memEntry[K, A, O]
	chunks [][]memEntry[K, A, O] // all full but the last (see memChunk)
	free   []*memEntry[K, A, O]
	// gen is the number of the last snapshot started; every slot whose
	// state that snapshot has (or needs not have) is marked with it.
	gen  uint32
	snap *memSnapshot[K, A, O] // the snapshot under way, or nil
}

// memChunk is the number of slots in a chunk of the slab. The first chunk
// has memFirstChunk slots and each next one twice as many, up to memChunk,
// so that an operator with a handful of keys (a test, the console's
// simulator) does not allocate and clear a thousand slots.
const (
	memChunk      = 1024
	memFirstChunk = 8
)

// memEntry is a slot of the slab.
type memEntry[K comparable, A, O any] struct {
	// mark is the last snapshot that has this slot's state (or that was
	// started while the slot was free), with markBusy set while the
	// snapshot or the operator is writing the slot into the snapshot. It
	// comes first, in the cache line of the windows that are read next.
	mark atomic.Uint32
	live bool
	ks   keyState[A, O]
	key  K
}

// markBusy is set in a slot's mark while its state is being written into a
// snapshot.
const markBusy = 1 << 31

func newMemStore[K comparable, A, O any]() *memStore[K, A, O] {
	return &memStore[K, A, O]{keys: map[K]*memEntry[K, A, O]{}}
}

func (m *memStore[K, A, O]) get(k K) *keyState[A, O] {
	e := m.keys[k]
	if e == nil {
		return nil
	}
	if e.mark.Load() != m.gen {
		m.capture(e)
	}
	return &e.ks
}

func (m *memStore[K, A, O]) getOrCreate(k K) *keyState[A, O] {
	e := m.keys[k]
	if e == nil {
		e = m.slot()
		e.key, e.live = k, true
		m.keys[k] = e
	} else if e.mark.Load() != m.gen {
		m.capture(e)
	}
	return &e.ks
}

// slot returns a free slot, marked with the current snapshot.
func (m *memStore[K, A, O]) slot() *memEntry[K, A, O] {
	if n := len(m.free); n > 0 {
		e := m.free[n-1]
		m.free = m.free[:n-1]
		if e.mark.Load() != m.gen {
			m.capture(e) // free: waits for the snapshot reading it, if any
		}
		return e
	}
	last := len(m.chunks) - 1
	if last < 0 || len(m.chunks[last]) == cap(m.chunks[last]) {
		m.chunks = append(m.chunks, make([]memEntry[K, A, O], 0, min(memChunk, memFirstChunk<<min(len(m.chunks), 8))))
		last++
	}
	m.chunks[last] = m.chunks[last][:len(m.chunks[last])+1]
	e := &m.chunks[last][len(m.chunks[last])-1]
	e.ks.wins = e.ks.inline[:0]
	e.mark.Store(m.gen) // a snapshot under way reads no slot made after it started
	return e
}

func (m *memStore[K, A, O]) remove(k K, ks *keyState[A, O]) {
	e := m.keys[k]
	if e.mark.Load() != m.gen {
		m.capture(e)
	}
	delete(m.keys, k)
	clear(ks.wins)
	ks.wins = ks.inline[:0]
	clear(ks.slices)
	ks.slices = ks.slices[:0]
	var zero K
	e.key, e.live = zero, false
	m.free = append(m.free, e)
}

// capture makes sure the snapshot under way has e's state before the
// operator changes it: it writes it itself, unless the snapshot has already
// read it or is reading it now (then it waits).
func (m *memStore[K, A, O]) capture(e *memEntry[K, A, O]) {
	if e.claim(m.gen) {
		if e.live {
			m.snap.add(e)
		}
		e.mark.Store(m.gen)
	}
}

// claim is how the operator and a snapshot agree on who writes e into
// snapshot gen: it returns true, with e marked busy, for the one that is to
// write it (and then marks it gen), and false once e is in the snapshot. If
// the other is writing e, it waits for it.
func (e *memEntry[K, A, O]) claim(gen uint32) bool {
	for {
		v := e.mark.Load()
		switch {
		case v == gen:
			return false
		case v&markBusy != 0:
			runtime.Gosched() // the other is writing this slot: a moment
		case e.mark.CompareAndSwap(v, gen|markBusy):
			return true
		}
	}
}

func (m *memStore[K, A, O]) forEach(f func(K, *keyState[A, O]) error) error {
	for _, ch := range m.chunks {
		for i := range ch {
			e := &ch[i]
			if !e.live {
				continue
			}
			if e.mark.Load() != m.gen {
				m.capture(e)
			}
			if err := f(e.key, &e.ks); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memStore[K, A, O]) len() int     { return len(m.keys) }
func (m *memStore[K, A, O]) error() error { return nil }
func (m *memStore[K, A, O]) close() error { return nil }
