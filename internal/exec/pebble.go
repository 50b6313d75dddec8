package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// Key layout in the state database (one byte tags; instance and key group
// as big-endian uint16; instants big-endian with the sign bit flipped, so
// that bytes sort as times do):
//
//	's' inst group key             -> the key's windows
//	't' inst 'e'|'p' time seq kind start end key -> nothing (a timer)
//	'v' inst group key set value   -> nothing (a value of a set, see pebbleSets)
//	'v' inst 0xffff                -> the instance's next set id
const (
	tagState = 's'
	tagTimer = 't'
	tagSet   = 'v'
)

// Sizer reports the memory an accumulator takes; a Codec may implement it
// so that the Pebble store's cache of decoded state counts accurately.
type Sizer[A any] interface {
	SizeAcc(a A) int
}

// pebbleWriter is one instance's batch of writes, shared by its store and
// its timers. It is an indexed batch: reads go through it, so they see the
// writes not yet committed, and it is committed only when it grows large.
type pebbleWriter struct {
	db    *pebble.DB
	batch *pebble.Batch
}

func (w *pebbleWriter) b() *pebble.Batch {
	if w.batch == nil {
		w.batch = w.db.NewIndexedBatch()
	}
	return w.batch
}

// maybeCommit commits the batch once it holds more than 4 MiB.
func (w *pebbleWriter) maybeCommit() error {
	if w.batch != nil && w.batch.Len() > 4<<20 {
		return w.commit()
	}
	return nil
}

func (w *pebbleWriter) commit() error {
	if w.batch == nil {
		return nil
	}
	err := w.batch.Commit(pebble.NoSync)
	w.batch.Close()
	w.batch = nil
	return err
}

// pebbleStore keeps the keys of one operator instance in a Pebble database,
// with a cache of decoded key states in memory, bounded in bytes and evicted
// least recently used first (written back when changed).
type pebbleStore[K comparable, A, O any] struct {
	w      *pebbleWriter
	inst   uint16
	codec  Codec[K, A, O]
	sizer  Sizer[A]
	hash   func(K) uint64
	cache  map[K]*cached[K, A, O]
	lru    cached[K, A, O] // sentinel: lru.next is the most recent
	bytes  int64
	limit  int64
	n      int
	cur    *cached[K, A, O]
	kbuf   []byte
	vbuf   []byte
	err    error
	loaded int64 // reads from disk, for tests and metrics
	gets   int64 // point reads (Get), for tests
	// adopted: keys a restore took in as the checkpoint had them
	// (adoptPebbleKeys), for tests
	adopted int64
	// sets, when the aggregate keeps sets in the database, is told of
	// the key at hand (setsOf) as the operator comes to it.
	sets   *pebbleSets
	setsOf *cached[K, A, O]
	// absent holds the keys of the batch at hand that prefetchKeys found
	// neither in the cache nor in the database, until they are created:
	// getOrCreate makes them without a read.
	absent    map[K]struct{}
	wants     []wantKey[K]
	wbuf      []byte
	timerKeys []K
}

// wantKey is a key prefetchKeys looks for: its database key is
// wbuf[off:off+n].
type wantKey[K comparable] struct {
	off, n uint32
	key    K
}

type cached[K comparable, A, O any] struct {
	key        K
	ks         keyState[A, O]
	size       int64
	onDisk     bool
	dirty      bool
	prev, next *cached[K, A, O]
}

func newPebbleStore[K comparable, A, O any](w *pebbleWriter, inst int, c Codec[K, A, O], hash func(K) uint64, limit int64) *pebbleStore[K, A, O] {
	s := &pebbleStore[K, A, O]{w: w, inst: uint16(inst), codec: c, hash: hash, cache: map[K]*cached[K, A, O]{}, absent: map[K]struct{}{}, limit: limit}
	s.sizer, _ = c.(Sizer[A])
	s.lru.next, s.lru.prev = &s.lru, &s.lru
	return s
}

func (s *pebbleStore[K, A, O]) prefix(b []byte, group int) []byte {
	b = append(b, tagState)
	b = binary.BigEndian.AppendUint16(b, s.inst)
	return binary.BigEndian.AppendUint16(b, uint16(group))
}

// fresh reports whether s is a store in a state database that holds no
// keys yet (nil is none).
func (s *pebbleStore[K, A, O]) fresh() bool {
	return s != nil && s.n == 0 && len(s.cache) == 0
}

func (s *pebbleStore[K, A, O]) dbKey(k K) []byte {
	s.kbuf = s.prefix(s.kbuf[:0], int(s.hash(k)%KeyGroups))
	s.kbuf = s.codec.AppendKey(s.kbuf, k)
	return s.kbuf
}

func (s *pebbleStore[K, A, O]) sizeOf(c *cached[K, A, O]) int64 {
	n := int64(96 + 8*len(c.ks.wins))
	for i := range c.ks.wins {
		n += 160
		if s.sizer != nil {
			n += int64(s.sizer.SizeAcc(c.ks.wins[i].acc))
		}
	}
	for i := range c.ks.slices {
		n += 32
		if s.sizer != nil {
			n += int64(s.sizer.SizeAcc(c.ks.slices[i].acc))
		}
	}
	return n
}

func (s *pebbleStore[K, A, O]) unlink(c *cached[K, A, O]) {
	c.prev.next, c.next.prev = c.next, c.prev
}

func (s *pebbleStore[K, A, O]) pushFront(c *cached[K, A, O]) {
	c.next, c.prev = s.lru.next, &s.lru
	s.lru.next.prev = c
	s.lru.next = c
}

// touch makes c the current key: the previous one is measured again (it may
// have grown), and room is made for c.
func (s *pebbleStore[K, A, O]) touch(c *cached[K, A, O]) {
	if p := s.cur; p != nil && p != c && s.cache[p.key] == p {
		sz := s.sizeOf(p)
		s.bytes += sz - p.size
		p.size = sz
	}
	s.cur = c
	if s.sets != nil && s.setsOf != c {
		s.setsOf = c
		s.sets.at(s.dbKey(c.key))
	}
	c.dirty = true
	s.unlink(c)
	s.pushFront(c)
	s.evict()
}

// evict writes back and drops the least recently used keys until the cache
// fits its limit; the current key stays.
func (s *pebbleStore[K, A, O]) evict() {
	for s.bytes > s.limit {
		c := s.lru.prev
		if c == &s.lru || c == s.cur {
			return
		}
		if c.dirty {
			s.vbuf = appendWins(s.vbuf[:0], &c.ks, s.codec)
			if err := s.w.b().Set(s.dbKey(c.key), s.vbuf, nil); err != nil && s.err == nil {
				s.err = err
			}
			c.onDisk = true
		}
		s.unlink(c)
		delete(s.cache, c.key)
		s.bytes -= c.size
	}
	s.fail(s.w.maybeCommit())
}

func (s *pebbleStore[K, A, O]) fail(err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
}

func (s *pebbleStore[K, A, O]) insert(c *cached[K, A, O]) {
	c.size = s.sizeOf(c)
	s.bytes += c.size
	s.cache[c.key] = c
	s.pushFront(c)
	s.touch(c)
}

func (s *pebbleStore[K, A, O]) get(k K) *keyState[A, O] {
	if c := s.cache[k]; c != nil {
		s.touch(c)
		return &c.ks
	}
	if _, ok := s.absent[k]; ok {
		return nil
	}
	s.gets++
	v, closer, err := s.w.b().Get(s.dbKey(k))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		s.fail(err)
		return nil
	}
	c := &cached[K, A, O]{key: k, onDisk: true}
	derr := decodeWins(enc.NewDecoder(v), &c.ks, s.codec)
	closer.Close()
	if derr != nil {
		s.fail(derr)
		return nil
	}
	s.loaded++
	s.insert(c)
	return &c.ks
}

func (s *pebbleStore[K, A, O]) getOrCreate(k K) *keyState[A, O] {
	if ks := s.get(k); ks != nil {
		return ks
	}
	delete(s.absent, k)
	c := &cached[K, A, O]{key: k}
	s.n++
	s.insert(c)
	return &c.ks
}

// prefetchKeys reads, before a batch of events, the states of its keys
// that are not in the cache, in key order with one iterator: reads that
// move forward through the tables rather than jump (a batch comes in
// arrival order, which is random in key order), and that consult the bloom
// filters of every level, where a Get skips the last level's (Pebble's
// default: there most keys are found), so that a key seen for the first
// time costs no read of a data block. The keys found go into the cache;
// the others are absent until the next batch or their creation, and
// getOrCreate creates them without a read.
//
// It reads no more keys than half the cache holds, so that the first are
// not evicted before their turn, and returns how many of keys it covered:
// all of them, or the first n. It reads none if fewer than least are to be
// read.
func (s *pebbleStore[K, A, O]) prefetchKeys(keys []K, least int) (n int) {
	clear(s.absent)
	per := int64(256)
	if len(s.cache) > 0 {
		per = max(per, s.bytes/int64(len(s.cache)))
	}
	room := max(int(s.limit/2/per), 1)
	s.wants, s.wbuf = s.wants[:0], s.wbuf[:0]
	n = len(keys)
	for i, k := range keys {
		if len(s.wants) >= room {
			n = i
			break
		}
		if s.cache[k] != nil {
			continue
		}
		if _, ok := s.absent[k]; ok {
			continue
		}
		s.absent[k] = struct{}{} // as seen; kept only if not found
		off := len(s.wbuf)
		s.wbuf = append(s.wbuf, s.dbKey(k)...)
		s.wants = append(s.wants, wantKey[K]{uint32(off), uint32(len(s.wbuf) - off), k})
	}
	if len(s.wants) < max(least, 1) {
		clear(s.absent)
		return n
	}
	key := func(w wantKey[K]) []byte { return s.wbuf[w.off : w.off+w.n] }
	sort.Slice(s.wants, func(i, j int) bool { return bytes.Compare(key(s.wants[i]), key(s.wants[j])) < 0 })
	it, err := s.w.b().NewIter(&pebble.IterOptions{
		LowerBound:   key(s.wants[0]),
		UpperBound:   state.PrefixEnd(key(s.wants[len(s.wants)-1])),
		UseL6Filters: true,
	})
	if err != nil {
		clear(s.absent)
		s.fail(err)
		return n
	}
	for _, w := range s.wants {
		dbk := key(w)
		if !it.SeekPrefixGE(dbk) || !bytes.Equal(it.Key(), dbk) {
			continue
		}
		v, err := it.ValueAndErr()
		c := &cached[K, A, O]{key: w.key, onDisk: true}
		if err == nil {
			err = decodeWins(enc.NewDecoder(v), &c.ks, s.codec)
		}
		if err != nil {
			clear(s.absent) // read key by key, as without the prefetch
			s.fail(err)
			break
		}
		delete(s.absent, w.key)
		s.loaded++
		c.size = s.sizeOf(c)
		s.bytes += c.size
		s.cache[c.key] = c
		s.pushFront(c)
	}
	if err := it.Close(); err != nil {
		clear(s.absent)
		s.fail(err)
	}
	s.evict()
	return n
}

// restored is getOrCreate for a key a restore reads: no disk read for it.
// Every key of a checkpoint is in it once, and a restore that reads keys
// one by one into a store adopted none (adoptPebbleKeys), so a key not in
// the cache is in the database only if the restore wrote it there, which
// it did once.
func (s *pebbleStore[K, A, O]) restored(k K) *keyState[A, O] {
	if c := s.cache[k]; c != nil || s.adopted > 0 {
		return s.getOrCreate(k)
	}
	c := &cached[K, A, O]{key: k}
	s.n++
	s.insert(c)
	return &c.ks
}

func (s *pebbleStore[K, A, O]) remove(k K, _ *keyState[A, O]) {
	c := s.cache[k]
	if c == nil {
		return
	}
	if c.onDisk {
		s.fail(s.w.b().Delete(s.dbKey(k), nil))
	}
	s.unlink(c)
	delete(s.cache, k)
	s.bytes -= c.size
	if s.cur == c {
		s.cur = nil
	}
	s.n--
}

// prefetch reads the keys of timers due, before they fire one by one, as
// prefetchKeys reads a batch's. It reads at most what half the cache holds
// and returns how many of refs it read for: the caller asks again when it
// comes to the next one.
func (s *pebbleStore[K, A, O]) prefetch(refs []timerRef[K]) int {
	keys := s.timerKeys[:0]
	for _, r := range refs {
		keys = append(keys, r.key)
	}
	n := s.prefetchKeys(keys, 16) // fewer: point reads cost less than an iterator
	clear(keys)
	s.timerKeys = keys[:0]
	return n
}

// flush writes every changed key in the cache to the database.
func (s *pebbleStore[K, A, O]) flush() error {
	clear(s.absent)
	for c := s.lru.next; c != &s.lru; c = c.next {
		if c.dirty {
			s.vbuf = appendWins(s.vbuf[:0], &c.ks, s.codec)
			s.fail(s.w.b().Set(s.dbKey(c.key), s.vbuf, nil))
			c.dirty, c.onDisk = false, true
		}
	}
	s.fail(s.w.commit())
	return s.err
}

func (s *pebbleStore[K, A, O]) forEach(f func(K, *keyState[A, O]) error) error {
	if err := s.flush(); err != nil {
		return err
	}
	lo := s.prefix(nil, 0)
	hi := s.prefix(nil, KeyGroups)
	it, err := s.w.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	var ks keyState[A, O]
	for it.First(); it.Valid(); it.Next() {
		d := enc.NewDecoder(it.Key()[len(lo):])
		k := s.codec.ReadKey(d)
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		ks.wins = ks.wins[:0]
		if err := decodeWins(enc.NewDecoder(v), &ks, s.codec); err != nil {
			return err
		}
		if d.Err() != nil {
			return d.Err()
		}
		if err := f(k, &ks); err != nil {
			return err
		}
	}
	return it.Error()
}

func (s *pebbleStore[K, A, O]) len() int     { return s.n }
func (s *pebbleStore[K, A, O]) error() error { return s.err }

func (s *pebbleStore[K, A, O]) close() error {
	err := s.w.commit()
	if err == nil {
		err = s.err
	}
	return err
}

// pebbleTimers keeps one instance's timers of one domain (event or
// processing time) in the database, ordered by instant, then window
// sequence, kind and window, as the memory queue orders them. The earliest
// instant is kept at hand.
type pebbleTimers[K comparable, A, O any] struct {
	w     *pebbleWriter
	pre   []byte
	codec Codec[K, A, O]
	n     int
	min   mtime.Time
	known bool // min is the earliest instant
	// from is at or below the key of every timer: searches start here,
	// above the timers popped, whose deletions an iterator would have to
	// step over one by one (a bucket of a million timers is popped 4096 at
	// a time: from the bucket's start, each pop would step over all the
	// earlier ones).
	from   []byte
	kbuf   []byte
	err    error
	bucket []timerRef[K]
	// load, while a restore takes keys in whole (adoptPebbleKeys), takes
	// the timers instead of the write batch.
	load *keyLoad
}

// keyLoad gathers keys without values for state.DB.Load: up to limit
// bytes of them, then sorted and taken in as one table file. A restore's
// timers go so, instead of one by one into the memtable, sorted there,
// flushed and compacted.
type keyLoad struct {
	db    *state.DB
	limit int
	buf   []byte
	keys  []loadKey
	err   error
}

type loadKey struct{ off, n uint32 }

func (l *keyLoad) add(k []byte) {
	if len(l.buf)+len(k) > l.limit {
		l.flush()
	}
	l.keys = append(l.keys, loadKey{uint32(len(l.buf)), uint32(len(k))})
	l.buf = append(l.buf, k...)
}

func (l *keyLoad) key(k loadKey) []byte { return l.buf[k.off : k.off+k.n] }

// flush takes the keys gathered in, and reports the first failure.
func (l *keyLoad) flush() error {
	if len(l.keys) > 0 && l.err == nil {
		slices.SortFunc(l.keys, func(a, b loadKey) int { return bytes.Compare(l.key(a), l.key(b)) })
		_, l.err = l.db.Load(func(add func(k, v []byte) error) error {
			var last []byte
			for _, k := range l.keys {
				b := l.key(k)
				if last != nil && bytes.Equal(b, last) {
					continue // the same timer twice is one
				}
				if err := add(b, nil); err != nil {
					return err
				}
				last = b
			}
			return nil
		})
	}
	l.buf, l.keys = l.buf[:0], l.keys[:0]
	return l.err
}

func newPebbleTimers[K comparable, A, O any](w *pebbleWriter, inst int, domain byte, c Codec[K, A, O]) *pebbleTimers[K, A, O] {
	pre := []byte{tagTimer}
	pre = binary.BigEndian.AppendUint16(pre, uint16(inst))
	return &pebbleTimers[K, A, O]{w: w, pre: append(pre, domain), codec: c, known: true, from: slices.Clone(pre)}
}

func (q *pebbleTimers[K, A, O]) add(t mtime.Time, r timerRef[K]) {
	b := append(q.kbuf[:0], q.pre...)
	b = state.OrderedTime(b, t)
	b = binary.BigEndian.AppendUint64(b, r.seq())
	b = append(b, byte(r.kind()))
	b = state.OrderedTime(b, r.win.Start)
	b = state.OrderedTime(b, r.win.End)
	b = q.codec.AppendKey(b, r.key)
	q.kbuf = b
	if q.load != nil {
		q.load.add(b)
	} else if err := q.w.b().Set(b, nil, nil); err != nil && q.err == nil {
		q.err = err
	}
	if q.n == 0 || (q.known && t < q.min) {
		q.min, q.known = t, true
	}
	if bytes.Compare(b, q.from) < 0 {
		q.from = append(q.from[:0], b...)
	}
	q.n++
	if q.load == nil {
		q.fail(q.w.maybeCommit())
	}
}

func (q *pebbleTimers[K, A, O]) next() (mtime.Time, bool) {
	if q.n == 0 {
		return 0, false
	}
	if !q.known {
		it, err := q.w.b().NewIter(&pebble.IterOptions{LowerBound: q.from, UpperBound: state.PrefixEnd(q.pre)})
		if err != nil {
			q.fail(err)
			return 0, false
		}
		if it.First() {
			q.min, q.known = state.ReadOrderedTime(it.Key()[len(q.pre):]), true
		}
		q.fail(it.Close())
		if !q.known {
			q.n = 0
			return 0, false
		}
	}
	return q.min, true
}

// pop returns up to 4096 timers of the earliest instant, deleting them.
func (q *pebbleTimers[K, A, O]) pop() (mtime.Time, []timerRef[K]) {
	t, ok := q.next()
	if !ok {
		return 0, nil
	}
	lo := state.OrderedTime(append([]byte(nil), q.pre...), t)
	start := lo
	if bytes.Compare(q.from, lo) > 0 {
		// The bucket's first timers are popped already. A copy: q.from
		// is set below while the iterator, bounded by it, is open.
		start = append([]byte(nil), q.from...)
	}
	it, err := q.w.b().NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: state.PrefixEnd(lo)})
	if err != nil {
		q.fail(err)
		return t, nil
	}
	out := q.bucket[:0]
	batch := q.w.b()
	for it.First(); it.Valid() && len(out) < 4096; it.Next() {
		key := it.Key()
		rest := key[len(lo):]
		if len(rest) < 25 {
			q.fail(enc.ErrCorrupt)
			break
		}
		seq, kind := binary.BigEndian.Uint64(rest), timerKind(rest[8])
		if seq >= 1<<maxSeqBits || kind > tLate {
			q.fail(enc.ErrCorrupt)
			break
		}
		r := newTimer(*new(K), window.Window{Start: state.ReadOrderedTime(rest[9:]), End: state.ReadOrderedTime(rest[17:])}, seq, kind)
		d := enc.NewDecoder(rest[25:])
		r.key = q.codec.ReadKey(d)
		q.fail(d.Err())
		out = append(out, r)
		q.fail(batch.Delete(key, nil))
	}
	more := it.Valid()
	if more {
		q.from = append(q.from[:0], it.Key()...)
	} else {
		q.from = append(q.from[:0], state.PrefixEnd(lo)...)
		q.known = false
	}
	q.fail(it.Close())
	q.n -= len(out)
	return t, out
}

func (q *pebbleTimers[K, A, O]) fail(err error) {
	if err != nil && q.err == nil {
		q.err = err
	}
}

func (q *pebbleTimers[K, A, O]) recycle(b []timerRef[K]) {
	clear(b)
	q.bucket = b[:0]
}

func (q *pebbleTimers[K, A, O]) len() int     { return q.n }
func (q *pebbleTimers[K, A, O]) error() error { return q.err }

func (q *pebbleTimers[K, A, O]) close() error {
	err := q.w.commit()
	if err == nil {
		err = q.err
	}
	return err
}
