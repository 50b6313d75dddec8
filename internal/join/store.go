package join

import (
	"bytes"
	"cmp"
	"slices"
	"sort"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/heap"
	"github.com/weirstream/weir/mtime"
)

// store keeps an operator's buffers, by key, and their expiries: in
// memory (memStore) or in a state database (dbStore). The operator's
// rules are the same on both: it takes a key's buffers (get,
// getOrCreate), changes them, and gives them back (put) before it takes
// another key's.
type store[K comparable, L, R any] interface {
	// get is the key's buffers, nil when it has none.
	get(k K) *keyState[L, R]
	// getOrCreate is the key's buffers, empty ones when it has none.
	getOrCreate(k K) *keyState[L, R]
	// put gives back the buffers of k, changed: empty ones let the key
	// go.
	put(k K, ks *keyState[L, R])
	// len is the number of keys with buffered records.
	len() int
	// push adds an expiry at instant at.
	push(at mtime.Time, t timer[K])
	// due takes the expiries of the least instant with any, when it is
	// at or before wm: appended to buf, in order of arrival (the
	// database's at most dbstate.MaxDue at a time, the rest at the next call).
	due(wm mtime.Time, buf []timer[K]) (mtime.Time, []timer[K])
	// appendKeys appends the buffers of the keys of the key groups keep
	// holds for (see Op.AppendKeys).
	appendKeys(b []byte, c Codec[K, L, R], hash func(K) uint64, groups int, keep func(group int) bool) []byte
	// err is the first error the store met (a state database's).
	err() error
}

// appendKeyState appends a key's buffers as checkpoints keep them.
func appendKeyState[K comparable, L, R any](b []byte, ks *keyState[L, R], c Codec[K, L, R]) []byte {
	b = enc.AppendUvarint(b, uint64(len(ks.left)))
	for _, l := range ks.left {
		b = enc.AppendVarint(b, int64(l.TS))
		b = enc.AppendUvarint(b, l.Seq)
		b = enc.AppendBool(b, l.Joined)
		b = c.AppendAcc(b, l.V)
	}
	b = enc.AppendUvarint(b, uint64(len(ks.right)))
	for _, r := range ks.right {
		b = enc.AppendVarint(b, int64(r.TS))
		b = enc.AppendUvarint(b, r.Seq)
		b = c.AppendOut(b, r.V)
	}
	return b
}

// readKeyState reads what appendKeyState wrote into ks (whose buffers are
// empty).
func readKeyState[K comparable, L, R any](d *enc.Decoder, ks *keyState[L, R], c Codec[K, L, R]) {
	for range d.Items(1 << 40) {
		e := Entry[L]{TS: mtime.Time(d.Varint()), Seq: d.Uvarint(), Joined: d.Bool()}
		e.V = c.ReadAcc(d)
		ks.left = append(ks.left, e)
	}
	for range d.Items(1 << 40) {
		e := Entry[R]{TS: mtime.Time(d.Varint()), Seq: d.Uvarint()}
		e.V = c.ReadOut(d)
		ks.right = append(ks.right, e)
	}
}

// memStore keeps the buffers in a map, the expiries in a heap.Queue.
type memStore[K comparable, L, R any] struct {
	keys map[K]*keyState[L, R]
	// free are the states of keys that left, for keys to come.
	free []*keyState[L, R]
	// timers are the expiries, by instant: a heap.Queue, as a record's
	// expiry is its time plus a constant and records come nearly in
	// order of time. It gives those of one instant in no particular
	// order, so due takes them all and sorts them by arrival, the same
	// order whatever order they were pushed in (a restore pushes them
	// anew).
	timers heap.Queue[mtime.Time, timer[K]]
}

// maxFree bounds the states of keys kept for reuse.
const maxFree = 4096

func newMemStore[K comparable, L, R any]() *memStore[K, L, R] {
	return &memStore[K, L, R]{keys: map[K]*keyState[L, R]{}}
}

func (m *memStore[K, L, R]) get(k K) *keyState[L, R] { return m.keys[k] }

func (m *memStore[K, L, R]) getOrCreate(k K) *keyState[L, R] {
	ks := m.keys[k]
	if ks == nil {
		if n := len(m.free); n > 0 {
			ks, m.free = m.free[n-1], m.free[:n-1]
		} else {
			ks = &keyState[L, R]{}
		}
		m.keys[k] = ks
	}
	return ks
}

func (m *memStore[K, L, R]) put(k K, ks *keyState[L, R]) {
	if len(ks.left) > 0 || len(ks.right) > 0 {
		return
	}
	delete(m.keys, k)
	if len(m.free) < maxFree {
		// Kept for a key to come, with the room its buffers had: most
		// keys of a join are each record's own.
		ks.left, ks.right = ks.left[:0], ks.right[:0]
		m.free = append(m.free, ks)
	}
}

func (m *memStore[K, L, R]) len() int { return len(m.keys) }

func (m *memStore[K, L, R]) push(at mtime.Time, t timer[K]) { m.timers.Push(at, t) }

func (m *memStore[K, L, R]) due(wm mtime.Time, buf []timer[K]) (mtime.Time, []timer[K]) {
	if m.timers.Len() == 0 || m.timers.Min() > wm {
		return 0, buf
	}
	at := m.timers.Min()
	for m.timers.Len() > 0 && m.timers.Min() == at {
		buf = append(buf, m.timers.Pop().Value)
	}
	slices.SortFunc(buf, func(a, b timer[K]) int { return cmp.Compare(a.seq, b.seq) })
	return at, buf
}

func (m *memStore[K, L, R]) appendKeys(b []byte, c Codec[K, L, R], hash func(K) uint64, groups int, keep func(group int) bool) []byte {
	type ent struct {
		group int
		enc   []byte
		ks    *keyState[L, R]
	}
	var list []ent
	for k, ks := range m.keys {
		g := int(hash(k) % uint64(groups))
		if keep(g) {
			list = append(list, ent{g, c.AppendKey(nil, k), ks})
		}
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.group != b.group {
			return a.group < b.group
		}
		return bytes.Compare(a.enc, b.enc) < 0
	})
	b = enc.AppendUvarint(b, uint64(len(list)))
	for _, e := range list {
		b = append(b, e.enc...)
		b = appendKeyState(b, e.ks, c)
	}
	return b
}

func (m *memStore[K, L, R]) err() error { return nil }
