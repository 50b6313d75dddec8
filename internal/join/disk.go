package join

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/weirstream/weir/internal/dbstate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// OnDisk keeps the operator's buffers and expiries in the state database
// db, under name (the operator's alone in the database), with at most
// about cache bytes of buffers decoded in memory: those of the keys used
// last. A key's buffers are one value of the database, as checkpoints
// write them (AppendKeys), under its key group and encoded key; an expiry
// is a key of its own, in order of (instant, arrival). It must be called
// before the first record and before a restore.
func (o *Op[K, L, R]) OnDisk(db *state.DB, name string, c Codec[K, L, R], hash func(K) uint64, groups int, cache int64) {
	s := &dbStore[K, L, R]{c: c, hash: hash, groups: groups, limit: cache, perEntry: 128,
		cache: map[K]*cachedKey[K, L, R]{},
		Store: dbstate.New(db.DB),
		bufs:  enc.AppendBytes([]byte{state.TagJoin}, []byte(name))}
	s.q = s.Queue(enc.AppendBytes([]byte{state.TagJoinTimer}, []byte(name)))
	s.lru.prev, s.lru.next = &s.lru, &s.lru
	o.st = s
}

// dbStore keeps a join's buffers and expiries in a state database, with a
// cache of decoded buffers, bounded in bytes: a key's buffers are written
// back when the cache lets them go, and before a checkpoint. What does not
// depend on the types is dbstate's.
type dbStore[K comparable, L, R any] struct {
	*dbstate.Store
	q          *dbstate.Queue
	bufs       []byte // the prefix of the buffers: TagJoin, name
	kbuf, vbuf []byte
	c          Codec[K, L, R]
	hash       func(K) uint64
	groups     int
	n          int // keys with buffered records
	// stored is how many keys' buffers are in the database: with none, a
	// key not in the cache has none, and is not looked up.
	stored int

	cache       map[K]*cachedKey[K, L, R]
	lru         cachedKey[K, L, R] // sentinel: next is the one used last
	used, limit int64
	// perEntry is what a buffered record is taken to cost in memory,
	// learnt from the sizes of the buffers written back.
	perEntry int64
}

// cachedKey is a key's buffers, decoded.
type cachedKey[K comparable, L, R any] struct {
	k          K
	ks         keyState[L, R]
	dirty      bool // changed since read or written back
	stored     bool // the database may hold the key's buffers
	size       int64
	prev, next *cachedKey[K, L, R]
}

// dbKey is the database key of k's buffers: the prefix, the key group
// (big-endian uint16) and the encoded key, so that they sort as
// checkpoints write them.
func (s *dbStore[K, L, R]) dbKey(k K) []byte {
	b := dbstate.GroupKey(s.kbuf[:0], s.bufs, int(s.hash(k)%uint64(s.groups)))
	s.kbuf = s.c.AppendKey(b, k)
	return s.kbuf
}

func (s *dbStore[K, L, R]) unlink(c *cachedKey[K, L, R]) {
	c.prev.next, c.next.prev = c.next, c.prev
}

func (s *dbStore[K, L, R]) toFront(c *cachedKey[K, L, R]) {
	c.prev, c.next = &s.lru, s.lru.next
	c.prev.next, c.next.prev = c, c
}

func (s *dbStore[K, L, R]) get(k K) *keyState[L, R] {
	if c := s.cache[k]; c != nil {
		s.unlink(c)
		s.toFront(c)
		return &c.ks
	}
	if s.stored == 0 {
		return nil
	}
	v, closer, ok := s.Get(s.dbKey(k))
	if !ok {
		return nil
	}
	c := &cachedKey[K, L, R]{k: k, stored: true}
	d := enc.NewDecoder(v)
	readKeyState(d, &c.ks, s.c)
	if d.Err() == nil && d.Len() != 0 {
		s.Fail(errCorrupt)
	}
	s.Fail(d.Err())
	s.Fail(closer.Close())
	c.size = s.sizeOf(&c.ks)
	s.used += c.size
	s.cache[k] = c
	s.toFront(c)
	return &c.ks
}

func (s *dbStore[K, L, R]) getOrCreate(k K) *keyState[L, R] {
	if ks := s.get(k); ks != nil {
		return ks
	}
	c := &cachedKey[K, L, R]{k: k, dirty: true}
	s.cache[k] = c
	s.toFront(c)
	s.n++
	return &c.ks
}

func (s *dbStore[K, L, R]) put(k K, ks *keyState[L, R]) {
	c := s.cache[k]
	if len(ks.left) == 0 && len(ks.right) == 0 {
		s.unlink(c)
		delete(s.cache, k)
		s.used -= c.size
		s.n--
		if c.stored {
			s.Delete(s.dbKey(k))
			s.stored--
		}
		return
	}
	c.dirty = true
	size := s.sizeOf(ks)
	s.used += size - c.size
	c.size = size
	for s.used > s.limit && s.lru.prev != &s.lru {
		s.evict(s.lru.prev)
	}
}

// sizeOf is what a key's buffers are taken to cost in memory.
func (s *dbStore[K, L, R]) sizeOf(ks *keyState[L, R]) int64 {
	return 160 + int64(len(ks.left)+len(ks.right))*s.perEntry
}

// evict lets c go from the cache, written back if it changed.
func (s *dbStore[K, L, R]) evict(c *cachedKey[K, L, R]) {
	s.writeBack(c)
	s.unlink(c)
	delete(s.cache, c.k)
	s.used -= c.size
}

// writeBack writes c's buffers to the database if they changed, and
// learns what a record costs from their size.
func (s *dbStore[K, L, R]) writeBack(c *cachedKey[K, L, R]) {
	if !c.dirty {
		return
	}
	s.vbuf = appendKeyState(s.vbuf[:0], &c.ks, s.c)
	s.Set(s.dbKey(c.k), s.vbuf)
	if !c.stored {
		s.stored++
	}
	c.dirty, c.stored = false, true
	// A decoded record takes about twice its encoding, plus its entry.
	n := int64(len(c.ks.left) + len(c.ks.right))
	est := 48 + 2*int64(len(s.vbuf))/n
	s.perEntry += (est - s.perEntry) / 8
}

func (s *dbStore[K, L, R]) len() int { return s.n }

// push adds an expiry: its key is the prefix, the instant, the arrival,
// the side and the encoded key.
func (s *dbStore[K, L, R]) push(at mtime.Time, t timer[K]) {
	b := binary.BigEndian.AppendUint64(s.q.Key(s.kbuf[:0], at), t.seq)
	b = append(b, byte(t.side))
	s.kbuf = s.c.AppendKey(b, t.key)
	s.q.Add(s.kbuf)
}

func (s *dbStore[K, L, R]) due(wm mtime.Time, buf []timer[K]) (mtime.Time, []timer[K]) {
	at, keys := s.q.Due(wm)
	p := s.q.Prefix()
	for _, k := range keys {
		d := enc.NewDecoder(k[p+17:])
		buf = append(buf, timer[K]{seq: binary.BigEndian.Uint64(k[p+8:]), side: Side(k[p+16]), key: s.c.ReadKey(d)})
		s.Fail(d.Err())
	}
	s.q.Drop(len(keys))
	return at, buf
}

func (s *dbStore[K, L, R]) appendKeys(b []byte, _ Codec[K, L, R], _ func(K) uint64, groups int, keep func(group int) bool) []byte {
	w := bytes.NewBuffer(b)
	if err := s.writeKeys(w, groups, keep); err != nil {
		s.Fail(err)
		return enc.AppendUvarint(b, 0)
	}
	return w.Bytes()
}

// writeKeys writes the buffers of the key groups keep holds for, as
// Op.AppendKeys appends them, from the database, once the cache's changes
// are written back.
func (s *dbStore[K, L, R]) writeKeys(w io.Writer, groups int, keep func(group int) bool) error {
	if groups != s.groups {
		return fmt.Errorf("join: the state database keeps %d key groups, not %d", s.groups, groups)
	}
	for c := s.lru.next; c != &s.lru; c = c.next {
		s.writeBack(c)
	}
	return s.WriteGroups(w, s.bufs, groups, keep)
}

var errCorrupt = errors.New("join: the buffers of a key in the state database are corrupt")

func (s *dbStore[K, L, R]) err() error { return s.Err() }
