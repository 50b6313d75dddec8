package state

import (
	"encoding/binary"
	"errors"
	"slices"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/heap"
	"github.com/weirstream/weir/mtime"
)

// Dedup remembers event ids for a horizon of event time: an id seen with
// event time t is a duplicate until the watermark reaches t + horizon. The
// memory and Pebble backends behave identically. The memory backend's
// checkpoint holds its ids (AppendState); the Pebble backend's is a Pebble
// checkpoint of them (SnapshotDedup); either restores into either.
//
// A Dedup is not safe for concurrent use: the source loop owns it.
type Dedup interface {
	// Seen reports whether id was seen within the horizon (its expiry is
	// after the watermark w), and remembers it with event time ts if not.
	Seen(id []byte, ts, w mtime.Time) bool
	// Expire forgets the ids whose horizon the watermark w has reached.
	Expire(w mtime.Time)
	// Horizon is how long, in event time, an id is remembered: an event
	// older than the watermark minus Horizon cannot be checked.
	Horizon() mtime.Time
	// Lookup reports whether id is live (its expiry is after the
	// watermark w) and the value it was remembered with (Remember; nil
	// when none), valid until the next call. It remembers nothing.
	Lookup(id []byte, w mtime.Time) (val []byte, live bool)
	// Remember remembers id with a value (what a versioned job keeps of
	// the version it applied: see engine.Versions), expiring at exp, or
	// at the expiry it has if that is later.
	Remember(id []byte, exp mtime.Time, val []byte)
	// Len is the number of ids remembered (expired ones not swept yet
	// included, on disk).
	Len() int
	// AppendState appends every remembered id with its expiry and value,
	// for a checkpoint; RestoreState reads them back, each expiry moved by
	// shift (the new horizon minus the one the checkpoint was taken with:
	// an id expires at its event time plus the horizon of the job that
	// restores it). values says whether the state has values: what an
	// AppendState before them wrote has none (see StateValues).
	AppendState(b []byte) []byte
	RestoreState(d *enc.Decoder, shift mtime.Time, values bool)
	// RestoreSnapshot reads back the ids of a Pebble checkpoint taken by a
	// SnapshotDedup (see ReadSnapshot), each expiry moved by shift.
	RestoreSnapshot(dir string, shift mtime.Time) error
	// Err is the first failure of the storage underneath, if any.
	Err() error
}

// SnapshotDedup is a Dedup whose ids a checkpoint keeps as a Pebble
// checkpoint, without reading them: the Pebble backend's.
type SnapshotDedup interface {
	Dedup
	// Snapshot writes what is pending and takes a Pebble checkpoint of the
	// ids; Dedup.RestoreSnapshot reads it back into either backend.
	Snapshot() (*Snapshot, error)
}

// CountState is the number of ids in what AppendState wrote, read from
// d (which it consumes); values as for RestoreState.
func CountState(d *enc.Decoder, values bool) int64 {
	n := d.Items(1 << 34)
	for range n {
		d.Varint()
		d.Bytes()
		if values {
			d.Bytes()
		}
	}
	return int64(n)
}

// CountSnapshot is the number of ids in a Pebble checkpoint of a Dedup.
func CountSnapshot(dir string) (int64, error) {
	var n int64
	err := readSnapshotIDs(dir, func([]byte, mtime.Time, []byte) { n++ })
	return n, err
}

// readSnapshotIDs calls f for every id of a Pebble checkpoint of a Dedup,
// with its expiry and its value (none in a checkpoint before values).
func readSnapshotIDs(dir string, f func(id []byte, exp mtime.Time, val []byte)) error {
	return ReadSnapshot(dir, []byte{TagDedupExpiry}, []byte{TagDedupExpiry + 1}, func(k, v []byte) error {
		if len(k) < 9 {
			return enc.ErrCorrupt
		}
		f(k[9:], ReadOrderedTime(k[1:9]), v)
		return nil
	})
}

// NewMemoryDedup returns a Dedup that keeps its ids in a map.
func NewMemoryDedup(horizon mtime.Time) Dedup {
	return &memDedup{horizon: horizon, width: max(horizon/expiryBuckets, 1), ids: map[string]mtime.Time{},
		vals: map[string]string{}, buckets: map[int64]*expiryBucket{}, swept: mtime.MinTime}
}

// expiryBuckets is how many buckets of expiry a horizon is cut into: an id
// stays in memory at most a bucket's width (a 256th of the horizon) after it
// expired.
const expiryBuckets = 256

// memDedup keeps every id with its expiry in a map, and, to forget them,
// the ids by bucket of expiry: the watermark forgets a bucket whole once it
// has passed the bucket's end, at the cost of a map lookup and an append per
// id, where a heap ordered by expiry cost a sift through every level of
// millions of entries. An id whose expiry the watermark has passed but whose
// bucket is still there is forgotten all the same: Seen compares its expiry
// with the watermark of the last Expire.
type memDedup struct {
	horizon mtime.Time
	width   mtime.Time            // of a bucket
	ids     map[string]mtime.Time // id -> expiry
	vals    map[string]string     // id -> value, for the ids that have one (Remember)
	buckets map[int64]*expiryBucket
	order   heap.Heap[int64, struct{}] // the buckets' numbers
	swept   mtime.Time                 // the watermark of the last Expire
	last    *expiryBucket              // the bucket an id was last added to (number lastK), or nil
	lastK   int64
	chunk   []byte // where keep copies the next id
}

// expiryBucket holds the ids whose expiry was in it when they were added
// (an id seen again after it expired is in two).
type expiryBucket struct{ ids []string }

func (d *memDedup) Seen(id []byte, ts, w mtime.Time) bool {
	old, ok := d.ids[string(id)]
	if ok && old > d.swept {
		// Expire runs after every event: an id it has not forgotten is live.
		return true
	}
	if ok && len(d.vals) > 0 {
		delete(d.vals, string(id)) // the value of an expired id goes with it
	}
	d.put(d.keep(id), ts.Add(d.horizon), old, ok)
	return false
}

func (d *memDedup) Lookup(id []byte, w mtime.Time) ([]byte, bool) {
	exp, ok := d.ids[string(id)]
	if !ok || exp <= d.swept || exp <= w {
		return nil, false
	}
	v, ok := d.vals[string(id)]
	if !ok {
		return nil, true
	}
	return unsafe.Slice(unsafe.StringData(v), len(v)), true
}

func (d *memDedup) Remember(id []byte, exp mtime.Time, val []byte) {
	old, ok := d.ids[string(id)]
	if ok && old > d.swept {
		exp = max(exp, old)
	} else if ok {
		delete(d.vals, string(id))
	}
	s := d.keep(id)
	d.put(s, exp, old, ok)
	d.vals[s] = string(val)
}

// idChunk is the size of the chunks ids are copied into.
const idChunk = 16 << 10

// keep returns id as a string in the dedup's chunks of id bytes, so that
// remembering an id is not an allocation of its own. A chunk goes when the
// last id in it is forgotten: ids come roughly in the order of their
// expiry, so a chunk lives about as long as its ids.
func (d *memDedup) keep(id []byte) string {
	if len(id) > idChunk/8 {
		return string(id)
	}
	if len(d.chunk)+len(id) > cap(d.chunk) {
		d.chunk = make([]byte, 0, idChunk)
	}
	at := len(d.chunk)
	d.chunk = append(d.chunk, id...)
	return unsafe.String(unsafe.SliceData(d.chunk[at:]), len(id))
}

// put remembers s with expiry exp; old is the expiry it had, if had. An id
// already in exp's bucket is not listed there twice.
func (d *memDedup) put(s string, exp, old mtime.Time, had bool) {
	d.ids[s] = exp
	if !had || d.bucketOf(old) != d.bucketOf(exp) {
		d.add(s, exp)
	}
}

// bucketOf is the number of the bucket of expiry exp.
func (d *memDedup) bucketOf(exp mtime.Time) int64 {
	k := int64(exp / d.width)
	if exp%d.width < 0 {
		k--
	}
	return k
}

func (d *memDedup) add(s string, exp mtime.Time) {
	k := d.bucketOf(exp)
	if d.last == nil || k != d.lastK {
		b, ok := d.buckets[k]
		if !ok {
			b = &expiryBucket{}
			d.buckets[k] = b
			d.order.Push(k, struct{}{})
		}
		d.lastK, d.last = k, b
	}
	d.last.ids = append(d.last.ids, s)
}

func (d *memDedup) Expire(w mtime.Time) {
	if w <= d.swept {
		return
	}
	d.swept = w
	for len(d.order) > 0 {
		k := d.order[0].Key
		// The bucket ends at start + width - 1: gone once w is there.
		if start := mtime.Time(k) * d.width; w < start || w-start < d.width-1 {
			break
		}
		d.order.Pop()
		for _, s := range d.buckets[k].ids {
			if exp, ok := d.ids[s]; ok && exp <= w {
				delete(d.ids, s)
				if len(d.vals) > 0 {
					delete(d.vals, s)
				}
			}
		}
		delete(d.buckets, k)
		if k == d.lastK {
			d.last = nil
		}
	}
}

func (d *memDedup) Len() int            { return len(d.ids) }
func (d *memDedup) Horizon() mtime.Time { return d.horizon }
func (d *memDedup) Err() error          { return nil }

// AppendState writes the live ids (those whose expiry is after the last
// Expire's watermark) by bucket of expiry, each bucket in the order its ids
// came: the same ids in the same order from run to run.
func (d *memDedup) AppendState(b []byte) []byte {
	ks := make([]int64, 0, len(d.order))
	for _, e := range d.order {
		ks = append(ks, e.Key)
	}
	slices.Sort(ks)
	var ents []byte
	n := 0
	for _, k := range ks {
		for _, s := range d.buckets[k].ids {
			// An id seen again after it expired is in two buckets: it is
			// written with the bucket of its expiry now.
			if exp, ok := d.ids[s]; ok && exp > d.swept && d.bucketOf(exp) == k {
				ents = enc.AppendVarint(ents, int64(exp))
				ents = enc.AppendString(ents, s)
				ents = enc.AppendString(ents, d.vals[s])
				n++
			}
		}
	}
	b = enc.AppendUvarint(b, uint64(n))
	return append(b, ents...)
}

func (d *memDedup) RestoreState(dec *enc.Decoder, shift mtime.Time, values bool) {
	n := dec.Items(1 << 34)
	for range n {
		at := mtime.Time(dec.Varint())
		s := dec.String()
		var v string
		if values {
			v = dec.String()
		}
		d.restore(s, at.Add(shift), v)
	}
}

// restore adds an id of a checkpoint with its expiry and value.
func (d *memDedup) restore(s string, exp mtime.Time, v string) {
	old, ok := d.ids[s]
	if !ok || old < exp {
		d.put(s, exp, old, ok)
		if v != "" {
			d.vals[s] = v
		} else {
			delete(d.vals, s)
		}
	}
}

// RestoreSnapshot implements Dedup.
func (d *memDedup) RestoreSnapshot(dir string, shift mtime.Time) error {
	return readSnapshotIDs(dir, func(id []byte, exp mtime.Time, v []byte) {
		d.restore(string(id), exp.Add(shift), string(v))
	})
}

// Dedup returns a Dedup that keeps its ids in the database, under the tags
// of KeyLayout: 'd' id -> expiry, and an index 'x' expiry id -> value (the
// id's Remember value, empty when none) for expiring them in order. Writes go through an indexed batch, so reads see them before
// it is committed.
func (db *DB) Dedup(horizon mtime.Time) Dedup {
	return &diskDedup{db: db.DB, owner: db, horizon: horizon, minExp: mtime.MaxTime, floor: mtime.MinTime, swept: mtime.MinTime}
}

// Horizon implements Dedup.
func (d *diskDedup) Horizon() mtime.Time { return d.horizon }

type diskDedup struct {
	db      *pebble.DB
	owner   *DB
	batch   *pebble.Batch
	horizon mtime.Time
	minExp  mtime.Time // no id expires before this
	floor   mtime.Time // every expiry below this is deleted
	swept   mtime.Time // the watermark of the last sweep
	n       int
	kbuf    []byte
	xbuf    []byte
	vbuf    []byte // Lookup's value
	failed  error
}

func (d *diskDedup) fail(err error) {
	if err != nil && d.failed == nil {
		d.failed = err
	}
}

func (d *diskDedup) b() *pebble.Batch {
	if d.batch == nil {
		d.batch = d.db.NewIndexedBatch()
	}
	return d.batch
}

func (d *diskDedup) commit() {
	if d.batch != nil {
		d.fail(d.batch.Commit(pebble.NoSync))
		d.batch.Close()
		d.batch = nil
	}
}

// OrderedTime appends t as 8 big-endian bytes with the sign bit flipped, so
// that bytes sort as times do.
func OrderedTime(b []byte, t mtime.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

// ReadOrderedTime reads what OrderedTime appended.
func ReadOrderedTime(b []byte) mtime.Time {
	return mtime.Time(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

func (d *diskDedup) add(id []byte, exp mtime.Time, val []byte) {
	d.kbuf = append(append(d.kbuf[:0], TagDedupID), id...)
	d.fail(d.b().Set(d.kbuf, OrderedTime(nil, exp), nil))
	d.xbuf = append(OrderedTime(append(d.xbuf[:0], TagDedupExpiry), exp), id...)
	d.fail(d.b().Set(d.xbuf, val, nil))
	d.minExp = min(d.minExp, exp)
	d.n++
	if d.batch.Len() > 4<<20 {
		d.commit()
	}
}

func (d *diskDedup) Seen(id []byte, ts, w mtime.Time) bool {
	d.kbuf = append(append(d.kbuf[:0], TagDedupID), id...)
	v, closer, err := d.b().Get(d.kbuf)
	if err == nil {
		exp := ReadOrderedTime(v)
		closer.Close()
		if exp > w {
			return true
		}
		// Expired but not swept yet: forget the old entry.
		d.xbuf = append(OrderedTime(append(d.xbuf[:0], TagDedupExpiry), exp), id...)
		d.fail(d.b().Delete(d.xbuf, nil))
		d.n--
	} else if !errors.Is(err, pebble.ErrNotFound) {
		d.fail(err)
	}
	d.add(id, ts.Add(d.horizon), nil)
	return false
}

// expiry is the expiry of id on disk, if it is there.
func (d *diskDedup) expiry(id []byte) (mtime.Time, bool) {
	d.kbuf = append(append(d.kbuf[:0], TagDedupID), id...)
	v, closer, err := d.b().Get(d.kbuf)
	if err != nil {
		if !errors.Is(err, pebble.ErrNotFound) {
			d.fail(err)
		}
		return 0, false
	}
	exp := ReadOrderedTime(v)
	closer.Close()
	return exp, true
}

func (d *diskDedup) Lookup(id []byte, w mtime.Time) ([]byte, bool) {
	exp, ok := d.expiry(id)
	if !ok || exp <= w {
		return nil, false
	}
	d.xbuf = append(OrderedTime(append(d.xbuf[:0], TagDedupExpiry), exp), id...)
	v, closer, err := d.b().Get(d.xbuf)
	if err != nil {
		d.fail(err)
		return nil, true
	}
	d.vbuf = append(d.vbuf[:0], v...)
	closer.Close()
	if len(d.vbuf) == 0 {
		return nil, true
	}
	return d.vbuf, true
}

func (d *diskDedup) Remember(id []byte, exp mtime.Time, val []byte) {
	if old, ok := d.expiry(id); ok {
		if old > d.swept {
			exp = max(exp, old)
		}
		d.xbuf = append(OrderedTime(append(d.xbuf[:0], TagDedupExpiry), old), id...)
		d.fail(d.b().Delete(d.xbuf, nil))
		d.n--
	}
	d.add(id, exp, val)
}

// Expire deletes expired ids, in sweeps: an expired id still on disk is
// never taken for a duplicate (Seen checks its expiry), so the sweep only
// reclaims space and runs when the watermark has moved a tenth of the
// horizon since the last one.
func (d *diskDedup) Expire(w mtime.Time) {
	if w < d.minExp || d.n == 0 || (w < d.swept.Add(d.horizon/10) && w != mtime.MaxTime) {
		return
	}
	d.swept = w
	lo := OrderedTime([]byte{TagDedupExpiry}, d.floor)
	it, err := d.b().NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: []byte{TagDedupExpiry + 1}})
	if err != nil {
		d.fail(err)
		return
	}
	d.minExp = mtime.MaxTime
	batch := d.b()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		exp := ReadOrderedTime(k[1:9])
		if exp > w {
			d.minExp = exp
			break
		}
		d.fail(batch.Delete(k, nil))
		d.kbuf = append(append(d.kbuf[:0], TagDedupID), k[9:]...)
		d.fail(batch.Delete(d.kbuf, nil))
		d.n--
	}
	d.fail(it.Close())
	d.floor = w
	if d.batch.Len() > 4<<20 {
		d.commit()
	}
}

func (d *diskDedup) Len() int { return d.n }

func (d *diskDedup) AppendState(b []byte) []byte {
	// Iterate the database itself, not through a large uncommitted batch.
	d.commit()
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: []byte{TagDedupExpiry}, UpperBound: []byte{TagDedupExpiry + 1}})
	if err != nil {
		d.fail(err)
		return enc.AppendUvarint(b, 0)
	}
	var ents []byte
	n := 0
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		ents = enc.AppendVarint(ents, int64(ReadOrderedTime(k[1:9])))
		ents = enc.AppendBytes(ents, k[9:])
		v, err := it.ValueAndErr()
		d.fail(err)
		ents = enc.AppendBytes(ents, v)
		n++
	}
	d.fail(it.Close())
	b = enc.AppendUvarint(b, uint64(n))
	return append(b, ents...)
}

func (d *diskDedup) RestoreState(dec *enc.Decoder, shift mtime.Time, values bool) {
	n := dec.Items(1 << 34)
	for range n {
		at := mtime.Time(dec.Varint())
		id := dec.Bytes()
		var v []byte
		if values {
			v = dec.Bytes()
		}
		if dec.Err() != nil {
			return
		}
		d.add(id, at.Add(shift), v)
	}
	d.commit()
}

// RestoreSnapshot implements Dedup.
func (d *diskDedup) RestoreSnapshot(dir string, shift mtime.Time) error {
	err := readSnapshotIDs(dir, func(id []byte, exp mtime.Time, v []byte) { d.add(id, exp.Add(shift), v) })
	d.commit()
	if err == nil {
		err = d.failed
	}
	return err
}

// Snapshot implements SnapshotDedup.
func (d *diskDedup) Snapshot() (*Snapshot, error) {
	d.commit()
	if d.failed != nil {
		return nil, d.failed
	}
	return d.owner.checkpoint([]pebble.CheckpointSpan{
		{Start: []byte{TagDedupID}, End: []byte{TagDedupID + 1}},
		{Start: []byte{TagDedupExpiry}, End: []byte{TagDedupExpiry + 1}},
	})
}

func (d *diskDedup) Err() error { return d.failed }
