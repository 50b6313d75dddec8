package job

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// dedupStore remembers event ids for the de-duplication horizon.
type dedupStore interface {
	// seen reports whether id was seen within the horizon (its expiry is
	// after the watermark w), and remembers it if not.
	seen(id []byte, ts, w mtime.Time) bool
	// expire forgets the ids whose horizon the watermark w has reached.
	expire(w mtime.Time)
	appendState(b []byte) []byte
	restoreState(d *enc.Decoder)
	err() error
}

func (d *dedup) err() error { return nil }

// diskDedup keeps the ids in the state database: 'd' id -> expiry, and an
// index 'x' expiry id for expiring them in order. Writes go through an
// indexed batch, so reads see them before it is committed.
type diskDedup struct {
	db      *pebble.DB
	batch   *pebble.Batch
	horizon mtime.Time
	minExp  mtime.Time // no id expires before this
	floor   mtime.Time // every expiry below this is deleted
	swept   mtime.Time // the watermark of the last sweep
	n       int
	kbuf    []byte
	xbuf    []byte
	failed  error
}

func newDiskDedup(db *pebble.DB, horizon mtime.Time) *diskDedup {
	return &diskDedup{db: db, horizon: horizon, minExp: mtime.MaxTime, floor: mtime.MinTime, swept: mtime.MinTime}
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

func orderedTime(b []byte, t mtime.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

func (d *diskDedup) add(id []byte, exp mtime.Time) {
	d.kbuf = append(append(d.kbuf[:0], 'd'), id...)
	d.fail(d.b().Set(d.kbuf, orderedTime(nil, exp), nil))
	d.xbuf = append(orderedTime(append(d.xbuf[:0], 'x'), exp), id...)
	d.fail(d.b().Set(d.xbuf, nil, nil))
	d.minExp = min(d.minExp, exp)
	d.n++
	if d.batch.Len() > 4<<20 {
		d.commit()
	}
}

func (d *diskDedup) seen(id []byte, ts, w mtime.Time) bool {
	d.kbuf = append(append(d.kbuf[:0], 'd'), id...)
	v, closer, err := d.b().Get(d.kbuf)
	if err == nil {
		exp := mtime.Time(binary.BigEndian.Uint64(v) ^ (1 << 63))
		closer.Close()
		if exp > w {
			return true
		}
		// Expired but not swept yet: forget the old entry.
		d.xbuf = append(orderedTime(append(d.xbuf[:0], 'x'), exp), id...)
		d.fail(d.b().Delete(d.xbuf, nil))
		d.n--
	} else if !errors.Is(err, pebble.ErrNotFound) {
		d.fail(err)
	}
	d.add(id, ts.Add(d.horizon))
	return false
}

// expire deletes expired ids, in sweeps: an expired id still on disk is
// never taken for a duplicate (seen checks its expiry), so the sweep only
// reclaims space and runs when the watermark has moved a tenth of the
// horizon since the last one.
func (d *diskDedup) expire(w mtime.Time) {
	if w < d.minExp || d.n == 0 || (w < d.swept.Add(d.horizon/10) && w != mtime.MaxTime) {
		return
	}
	d.swept = w
	lo := orderedTime([]byte{'x'}, d.floor)
	it, err := d.b().NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: []byte{'y'}})
	if err != nil {
		d.fail(err)
		return
	}
	d.minExp = mtime.MaxTime
	batch := d.b()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		exp := mtime.Time(binary.BigEndian.Uint64(k[1:9]) ^ (1 << 63))
		if exp > w {
			d.minExp = exp
			break
		}
		d.fail(batch.Delete(k, nil))
		d.kbuf = append(append(d.kbuf[:0], 'd'), k[9:]...)
		d.fail(batch.Delete(d.kbuf, nil))
		d.n--
	}
	d.fail(it.Close())
	d.floor = w
	if d.batch.Len() > 4<<20 {
		d.commit()
	}
}

func (d *diskDedup) appendState(b []byte) []byte {
	// Iterate the database itself, not through a large uncommitted batch.
	d.commit()
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: []byte{'x'}, UpperBound: []byte{'y'}})
	if err != nil {
		d.fail(err)
		return enc.AppendUvarint(b, 0)
	}
	var ents []byte
	n := 0
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		ents = enc.AppendVarint(ents, int64(binary.BigEndian.Uint64(k[1:9])^(1<<63)))
		ents = enc.AppendBytes(ents, k[9:])
		n++
	}
	d.fail(it.Close())
	b = enc.AppendUvarint(b, uint64(n))
	return append(b, ents...)
}

func (d *diskDedup) restoreState(dec *enc.Decoder) {
	n := dec.Count(1 << 34)
	for range n {
		at := mtime.Time(dec.Varint())
		id := dec.Bytes()
		if dec.Err() != nil {
			return
		}
		d.add(id, at)
	}
	d.commit()
}

func (d *diskDedup) err() error { return d.failed }
