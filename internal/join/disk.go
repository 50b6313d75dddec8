package join

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2"

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
		disk: disk{db: db.DB,
			bufs: enc.AppendBytes([]byte{state.TagJoin}, []byte(name)),
			tims: enc.AppendBytes([]byte{state.TagJoinTimer}, []byte(name))}}
	s.lru.prev, s.lru.next = &s.lru, &s.lru
	o.st = s
}

// dbStore keeps a join's buffers and expiries in a state database, with a
// cache of decoded buffers, bounded in bytes: a key's buffers are written
// back when the cache lets them go, and before a checkpoint. What does not
// depend on the types is disk's.
type dbStore[K comparable, L, R any] struct {
	disk
	c      Codec[K, L, R]
	hash   func(K) uint64
	groups int
	n      int // keys with buffered records
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
	b := append(s.kbuf[:0], s.bufs...)
	b = binary.BigEndian.AppendUint16(b, uint16(s.hash(k)%uint64(s.groups)))
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
	v, closer, ok := s.read(s.dbKey(k))
	if !ok {
		return nil
	}
	c := &cachedKey[K, L, R]{k: k, stored: true}
	d := enc.NewDecoder(v)
	readKeyState(d, &c.ks, s.c)
	if d.Err() == nil && d.Len() != 0 {
		s.fail(errCorrupt)
	}
	s.fail(d.Err())
	s.fail(closer.Close())
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
			s.delete(s.dbKey(k))
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
	s.set(s.dbKey(c.k), s.vbuf)
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
	b := state.OrderedTime(append(s.kbuf[:0], s.tims...), at)
	b = binary.BigEndian.AppendUint64(b, t.seq)
	b = append(b, byte(t.side))
	s.kbuf = s.c.AppendKey(b, t.key)
	s.addTimer(s.kbuf)
}

func (s *dbStore[K, L, R]) due(wm mtime.Time, buf []timer[K]) (mtime.Time, []timer[K]) {
	at, keys := s.takeDue(wm)
	p := len(s.tims)
	for _, k := range keys {
		d := enc.NewDecoder(k[p+17:])
		buf = append(buf, timer[K]{seq: binary.BigEndian.Uint64(k[p+8:]), side: Side(k[p+16]), key: s.c.ReadKey(d)})
		s.fail(d.Err())
	}
	s.dropDue(len(keys))
	return at, buf
}

func (s *dbStore[K, L, R]) appendKeys(b []byte, _ Codec[K, L, R], _ func(K) uint64, groups int, keep func(group int) bool) []byte {
	w := bytes.NewBuffer(b)
	if err := s.writeKeys(w, groups, keep); err != nil {
		s.fail(err)
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
	return s.writeBuffers(w, groups, keep)
}

var errCorrupt = errors.New("join: the buffers of a key in the state database are corrupt")

// disk is what a join's store in a state database does that does not
// depend on the types of its keys and records: the batch of writes, the
// expiries' keys and the checkpoints' reading.
type disk struct {
	db    *pebble.DB
	batch *pebble.Batch // indexed: reads see the writes not yet committed
	bufs  []byte        // the prefix of the buffers: TagJoin, name
	tims  []byte        // the prefix of the expiries: TagJoinTimer, name
	// from is a lower bound of the expiries' keys (nil: their prefix):
	// after those taken, unless one was added below.
	from []byte
	// head are the first expiries' keys, in order, read from the
	// database a part at a time (headPart) and kept in order as
	// expiries come: every expiry below headEnd is in it (headEnd nil:
	// every expiry), so that most watermarks read nothing; headOK says
	// it was read since the last change below from. It holds at most
	// 2 × headPart keys.
	head    [][]byte
	headEnd []byte
	headOK  bool

	kbuf, vbuf []byte
	failed     error
}

func (s *disk) fail(err error) {
	if err != nil && s.failed == nil {
		s.failed = err
	}
}

func (s *disk) err() error { return s.failed }

func (s *disk) b() *pebble.Batch {
	if s.batch == nil {
		s.batch = s.db.NewIndexedBatch()
	}
	return s.batch
}

// commit commits the writes so far to the database (which keeps no log:
// it is working storage, see package state).
func (s *disk) commit() {
	if s.batch == nil {
		return
	}
	s.fail(s.batch.Commit(pebble.NoSync))
	s.batch.Close()
	s.batch = nil
}

// maybeCommit commits the batch once it holds more than 4 MiB.
func (s *disk) maybeCommit() {
	if s.batch != nil && s.batch.Len() > 4<<20 {
		s.commit()
	}
}

// read is the value of k, if it has one (closer releases it).
func (s *disk) read(k []byte) ([]byte, interface{ Close() error }, bool) {
	v, closer, err := s.b().Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, false
	}
	if err != nil {
		s.fail(err)
		return nil, nil, false
	}
	return v, closer, true
}

func (s *disk) set(k, v []byte) {
	s.fail(s.b().Set(k, v, nil))
	s.maybeCommit()
}

func (s *disk) delete(k []byte) {
	s.fail(s.b().Delete(k, nil))
	s.maybeCommit()
}

// addTimer writes an expiry's key, and puts it in the head when it comes
// before the head's end.
func (s *disk) addTimer(k []byte) {
	s.fail(s.b().Set(k, nil, nil))
	if s.from != nil && bytes.Compare(k, s.from) < 0 {
		s.from = append(s.from[:0], k...)
		s.headOK = false
	}
	if s.headOK && (s.headEnd == nil || bytes.Compare(k, s.headEnd) < 0) {
		i, _ := slices.BinarySearchFunc(s.head, k, bytes.Compare)
		s.head = slices.Insert(s.head, i, bytes.Clone(k))
		if len(s.head) > 2*headPart {
			// Bounded: the later half is read again when its turn comes.
			s.headEnd = s.head[headPart]
			clear(s.head[headPart+1:])
			s.head = s.head[:headPart]
		}
	}
	s.maybeCommit()
}

// maxDue bounds the expiries of one instant the database's store hands
// over at once.
const maxDue = 4096

// headPart is how many expiries the head reads at once (a variable for
// the tests).
var headPart = 1024

// readHead reads the next expiries into the head, from from on.
func (s *disk) readHead() {
	lower := s.from
	if lower == nil {
		lower = s.tims
	}
	it, err := s.b().NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: state.PrefixEnd(s.tims)})
	if err != nil {
		s.fail(err)
		return
	}
	clear(s.head)
	s.head, s.headEnd, s.headOK = s.head[:0], nil, true
	for ok := it.First(); ok; ok = it.Next() {
		if len(s.head) == headPart {
			s.headEnd = bytes.Clone(it.Key())
			break
		}
		s.head = append(s.head, bytes.Clone(it.Key()))
	}
	s.fail(it.Close())
}

// takeDue is the keys of the expiries of the least instant with any, when
// it is at or before wm, in order (at most maxDue of them): the head's
// first ones, until dropDue.
func (s *disk) takeDue(wm mtime.Time) (mtime.Time, [][]byte) {
	if !s.headOK || len(s.head) == 0 && s.headEnd != nil {
		s.readHead()
	}
	p := len(s.tims)
	n := 0
	var at mtime.Time
	for ; n < len(s.head) && n < maxDue; n++ {
		t := state.ReadOrderedTime(s.head[n][p:])
		if n == 0 {
			if t > wm {
				break
			}
			at = t
		} else if t != at {
			break
		}
	}
	return at, s.head[:n]
}

// dropDue deletes the first n expiries of the head, which takeDue gave.
func (s *disk) dropDue(n int) {
	if n == 0 {
		return
	}
	for _, k := range s.head[:n] {
		s.fail(s.b().Delete(k, nil))
	}
	// The next expiry is after the last one taken.
	s.from = append(append(s.from[:0], s.head[n-1]...), 0)
	clear(s.head[:n])
	s.head = s.head[n:]
	s.maybeCommit()
}

// writeBuffers writes the buffers of the key groups keep holds for, as
// Op.AppendKeys appends them (they are in the database in that order):
// their number, then each, read in two passes so that none is held in
// memory. An error of the database's is the store's (it stops the job);
// w's is returned.
func (s *disk) writeBuffers(w io.Writer, groups int, keep func(group int) bool) error {
	lo, hi := -1, -1
	for g := range groups {
		if keep(g) {
			if lo < 0 {
				lo = g
			}
			hi = g
		}
	}
	var kbuf [binary.MaxVarintLen64]byte
	if lo < 0 {
		_, err := w.Write(enc.AppendUvarint(kbuf[:0], 0))
		return err
	}
	// Read the database itself, not through a large uncommitted batch;
	// nothing writes the operator's keys while it is read.
	s.commit()
	opts := &pebble.IterOptions{
		LowerBound: binary.BigEndian.AppendUint16(append([]byte(nil), s.bufs...), uint16(lo)),
		UpperBound: state.PrefixEnd(binary.BigEndian.AppendUint16(append([]byte(nil), s.bufs...), uint16(hi))),
	}
	each := func(f func(k []byte, it *pebble.Iterator) error) error {
		it, err := s.db.NewIter(opts)
		if err != nil {
			s.fail(err)
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			if !keep(int(binary.BigEndian.Uint16(k[len(s.bufs):]))) {
				continue
			}
			if err := f(k[len(s.bufs)+2:], it); err != nil {
				it.Close()
				return err
			}
		}
		err = it.Close()
		s.fail(err)
		return err
	}
	n := uint64(0)
	if err := each(func([]byte, *pebble.Iterator) error { n++; return nil }); err != nil {
		return err
	}
	if _, err := w.Write(enc.AppendUvarint(kbuf[:0], n)); err != nil {
		return err
	}
	return each(func(k []byte, it *pebble.Iterator) error {
		v, err := it.ValueAndErr()
		if err != nil {
			s.fail(err)
			return err
		}
		if _, err := w.Write(k); err != nil {
			return err
		}
		_, err = w.Write(v)
		return err
	})
}
