package exec

import (
	"hash/maphash"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/weirstream/weir/internal/prefetch"
	"github.com/weirstream/weir/mtime"
)

// keyStore holds the windows of every key of one operator instance. The
// memory store is a hash table; the Pebble store keeps a bounded cache of
// keys in memory and the rest on disk.
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
// fixed-size chunks, in the order they were created, and a hash table
// (keyIndex) finds them by key: a snapshot reads the slab from start to
// end, at the speed of memory, rather than following the table to key
// states scattered on the heap. A key
// that goes away leaves its slot on a free list for the next new key.
//
// A snapshot is taken beside the operator (see snapshot.go): the store
// remembers which slots the snapshot has read, and the operator, before it
// changes a slot the snapshot has not read yet, writes that slot's state into
// the snapshot itself. So the operator stops only for the keys it touches
// while the snapshot is under way, never for all the keys it holds.
type memStore[K comparable, A, O any] struct {
	keys   keyIndex[K, A, O]
	chunks [][]memEntry[K, A, O] // all full but the last (see memChunk)
	free   []uint32              // ids of free slots (see indexSlot)
	// gen is the number of the last snapshot started; every slot whose
	// state that snapshot has (or needs not have) is marked with it.
	gen  uint32
	snap *memSnapshot[K, A, O] // the snapshot under way, or nil
	// keyBytes is where a key's bytes are, when K is a string (nil
	// otherwise): what stageKey asks for.
	keyBytes func(K) unsafe.Pointer
}

// memChunk is the number of slots in a chunk of the slab. The first chunk
// has memFirstChunk slots and each next one twice as many, up to memChunk,
// so that an operator with a handful of keys (a test, the console's
// simulator) does not allocate and clear a thousand slots.
const (
	memChunkBits  = 10
	memChunk      = 1 << memChunkBits
	memFirstChunk = 8
)

// memEntry is a slot of the slab.
type memEntry[K comparable, A, O any] struct {
	// mark is the last snapshot that has this slot's state (or that was
	// started while the slot was free), with markBusy set while the
	// snapshot or the operator is writing the slot into the snapshot. It
	// and the key, which finding the slot compares, come first, in the
	// cache line of the windows that are read next.
	mark atomic.Uint32
	live bool
	key  K
	ks   keyState[A, O]
}

// markBusy is set in a slot's mark while its state is being written into a
// snapshot.
const markBusy = 1 << 31

func newMemStore[K comparable, A, O any]() *memStore[K, A, O] {
	m := &memStore[K, A, O]{keys: newKeyIndex[K, A, O]()}
	m.keys.entries = &m.chunks
	if _, ok := any(*new(K)).(string); ok {
		m.keyBytes = any(func(k string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(k)) }).(func(K) unsafe.Pointer)
	}
	return m
}

// The operator looks its keys up in a pipeline: a few lookups ahead of the
// one it works on (an event of a batch, a timer of those due), it asks for
// the memory each lookup will read, one step of the lookup's chain of reads
// at a time, so that the misses of different keys overlap, and when the
// operator comes to a key its state is in the cache. Each step is a hint
// (a prefetch): it changes nothing, and a key whose slot or entry moved in
// between is simply read from memory.
const (
	aheadKey   = 12 // the key's bytes (a string's), which hashing reads
	aheadSlot  = 8  // the key's slot in the index
	aheadEntry = 4  // the entry the slot points to: the key and its windows
	aheadRing  = 16 // hashes kept from the slot's step for the entry's
)

// lookahead is the pipeline over one run of lookups in a memory store. The
// operator keeps two, one for the events of a batch and one for the timers
// due, which it works through in the middle of a batch.
type lookahead[K comparable, A, O any] struct {
	m    *memStore[K, A, O]
	keys []K               // the run's keys, in the order they are looked up
	hash [aheadRing]uint64 // hash[i%aheadRing] is keys[i]'s, from its slot's step
}

// run returns a buffer for the keys of a run of n lookups in m, for the
// caller to fill before it calls plan.
func (l *lookahead[K, A, O]) run(m *memStore[K, A, O], n int) []K {
	l.m = m
	if cap(l.keys) < n {
		l.keys = make([]K, n)
	}
	l.keys = l.keys[:n]
	return l.keys
}

// plan starts the pipeline over the run, asking for its first lookups'
// memory.
func (l *lookahead[K, A, O]) plan() {
	for i := range min(aheadKey, len(l.keys)) {
		l.stageKey(i)
	}
	for i := range min(aheadSlot, len(l.keys)) {
		l.stageSlot(i)
	}
	for i := range min(aheadEntry, len(l.keys)) {
		l.stageEntry(i)
	}
}

// step is the pipeline's step when the operator comes to the run's j-th
// lookup: it asks for the memory of those later.
func (l *lookahead[K, A, O]) step(j int) {
	l.stageKey(j + aheadKey)
	l.stageSlot(j + aheadSlot)
	l.stageEntry(j + aheadEntry)
}

// stageKey asks for the i-th key's bytes, when K is a string.
func (l *lookahead[K, A, O]) stageKey(i int) {
	if l.m.keyBytes != nil && i < len(l.keys) {
		prefetch.Line(l.m.keyBytes(l.keys[i]))
	}
}

// stageSlot hashes the i-th key and asks for the index slot where finding
// it starts.
func (l *lookahead[K, A, O]) stageSlot(i int) {
	if i < len(l.keys) {
		x := &l.m.keys
		h := x.hash(l.keys[i])
		l.hash[i%aheadRing] = h
		prefetch.Line(unsafe.Pointer(&x.slots[x.home(h)]))
	}
}

// stageEntry asks for the entry the i-th key's slot points to (its key's,
// unless another key took the slot first): its key and its windows. The
// index may have grown since the slot's step: then it asks for another
// slot's entry, which is harmless.
func (l *lookahead[K, A, O]) stageEntry(i int) {
	if i < len(l.keys) {
		x := &l.m.keys
		if id := x.slots[x.home(l.hash[i%aheadRing])].id; id != 0 {
			e := x.entry(id)
			prefetch.Line(unsafe.Pointer(e))
			prefetch.Line(unsafe.Add(unsafe.Pointer(e), unsafe.Sizeof(*e)-1))
		}
	}
}

func (m *memStore[K, A, O]) get(k K) *keyState[A, O] {
	e, _, _ := m.keys.find(k)
	if e == nil {
		return nil
	}
	if e.mark.Load() != m.gen {
		m.capture(e)
	}
	return &e.ks
}

func (m *memStore[K, A, O]) getOrCreate(k K) *keyState[A, O] {
	e, h, i := m.keys.find(k)
	if e == nil {
		var id uint32
		e, id = m.slot()
		e.key, e.live = k, true
		m.keys.insert(i, h, id)
	} else if e.mark.Load() != m.gen {
		m.capture(e)
	}
	return &e.ks
}

// slot returns a free slot, marked with the current snapshot, and its id.
func (m *memStore[K, A, O]) slot() (*memEntry[K, A, O], uint32) {
	if n := len(m.free); n > 0 {
		id := m.free[n-1]
		m.free = m.free[:n-1]
		e := m.keys.entry(id)
		if e.mark.Load() != m.gen {
			m.capture(e) // free: waits for the snapshot reading it, if any
		}
		return e, id
	}
	last := len(m.chunks) - 1
	if last < 0 || len(m.chunks[last]) == cap(m.chunks[last]) {
		m.chunks = append(m.chunks, make([]memEntry[K, A, O], 0, min(memChunk, memFirstChunk<<min(len(m.chunks), 8))))
		last++
	}
	if last >= 1<<(32-memChunkBits) {
		// 4G keys, at some 200 bytes each, are beyond any memory.
		panic("exec: more keys than a memory store's ids can name")
	}
	off := len(m.chunks[last])
	m.chunks[last] = m.chunks[last][:off+1]
	e := &m.chunks[last][off]
	e.ks.wins = e.ks.inline[:0]
	e.mark.Store(m.gen) // a snapshot under way reads no slot made after it started
	return e, 1 + uint32(last)<<memChunkBits + uint32(off)
}

func (m *memStore[K, A, O]) remove(k K, ks *keyState[A, O]) {
	e, _, i := m.keys.find(k)
	if e.mark.Load() != m.gen {
		m.capture(e)
	}
	id := m.keys.slots[i].id
	m.keys.delete(i)
	clear(ks.wins)
	ks.wins = ks.inline[:0]
	clear(ks.slices)
	ks.slices = ks.slices[:0]
	var zero K
	e.key, e.live = zero, false
	m.free = append(m.free, id)
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

func (m *memStore[K, A, O]) len() int     { return m.keys.n }
func (m *memStore[K, A, O]) error() error { return nil }
func (m *memStore[K, A, O]) close() error { return nil }

// keyIndex finds the slot of the slab that holds a key: an open-addressing
// table (linear probing, at most half full, deletion by shifting back the
// slots after, so there are no tombstones) of 8-byte slots, each half a
// key's hash and its entry's id in the slab. Finding a key reads one slot,
// then the entry, whose key is compared only when the slot's hash
// matches: a Go map read a
// control word, a slot and the key's bytes (three cache misses with many
// keys) before the entry, for every event.
type keyIndex[K comparable, A, O any] struct {
	hash  func(K) uint64 // seeded per index
	slots []indexSlot    // a power of two
	n     int            // keys held
	// entries are the store's chunks, where an id is.
	entries *[][]memEntry[K, A, O]
}

// indexSlot is a slot of a keyIndex: 8 bytes, a pointer's size, since the
// index has two or more slots a key.
type indexSlot struct {
	h uint32 // the key's hash, its low half: where it is found, and compared before the key
	// id is the entry's chunk and place in the chunk: 1 + chunk<<10 +
	// place; 0 in an empty slot.
	id uint32
}

func newKeyIndex[K comparable, A, O any]() keyIndex[K, A, O] {
	return keyIndex[K, A, O]{hash: seededHash[K](), slots: make([]indexSlot, 16)}
}

// home is the slot where finding a key of hash h starts.
func (x *keyIndex[K, A, O]) home(h uint64) int { return int(h) & (len(x.slots) - 1) }

// entry is the entry of id.
func (x *keyIndex[K, A, O]) entry(id uint32) *memEntry[K, A, O] {
	id--
	return &(*x.entries)[id>>memChunkBits][id&(memChunk-1)]
}

// seededHash is a hash of Ks with a random seed: maphash's, but for the
// integer keys of the Go API a multiply and a shift, which is what a Go map
// does for them too.
func seededHash[K comparable]() func(K) uint64 {
	seed := maphash.MakeSeed()
	mix := maphash.Comparable(seed, uint64(1)) | 1
	var h any
	switch any(*new(K)).(type) {
	case uint64:
		h = func(k uint64) uint64 { return mixInt(k, mix) }
	case int64:
		h = func(k int64) uint64 { return mixInt(uint64(k), mix) }
	case int:
		h = func(k int) uint64 { return mixInt(uint64(k), mix) }
	case string:
		h = func(k string) uint64 { return maphash.String(seed, k) }
	default:
		return func(k K) uint64 { return maphash.Comparable(seed, k) }
	}
	return h.(func(K) uint64)
}

func mixInt(k, seed uint64) uint64 {
	h := (k ^ seed) * 0x9E3779B97F4A7C15
	return h ^ h>>29
}

// find returns k's entry, its hash and its slot; or nil and the empty slot
// where k goes.
func (x *keyIndex[K, A, O]) find(k K) (*memEntry[K, A, O], uint64, int) {
	h := x.hash(k)
	mask := len(x.slots) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.id == 0 {
			return nil, h, i
		}
		if s.h == uint32(h) {
			if e := x.entry(s.id); e.key == k {
				return e, h, i
			}
		}
	}
}

// insert puts the entry id, of hash h, in the empty slot i that find
// returned.
func (x *keyIndex[K, A, O]) insert(i int, h uint64, id uint32) {
	x.slots[i] = indexSlot{h: uint32(h), id: id}
	x.n++
	if 2*x.n <= len(x.slots) {
		return
	}
	old := x.slots
	x.slots = make([]indexSlot, 2*len(old))
	mask := len(x.slots) - 1
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		j := int(s.h) & mask
		for x.slots[j].id != 0 {
			j = (j + 1) & mask
		}
		x.slots[j] = s
	}
}

// delete empties slot i, moving back the slots of its run that would no
// longer be found past the hole.
func (x *keyIndex[K, A, O]) delete(i int) {
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j].id != 0; j = (j + 1) & mask {
		// The slot at j may fill the hole at i when its home is not in
		// the cyclic range (i, j].
		home := int(x.slots[j].h) & mask
		if (j-home)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = indexSlot{}
	x.n--
}
