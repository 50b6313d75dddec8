package process

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/dbstate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// OnDisk keeps the Op's states and timers in the state database db, under
// name (the Op's alone in the database), with the keys used last at hand
// in memory, decoded, up to about cache bytes. A key's states and timers
// are one value of the database, as checkpoints write them after the key
// (AppendKeys), under its key group (hash(k) mod groups) and encoded key;
// a timer is also a key of its own, in the order timers fire (domain,
// instant, sequence). A key at hand is written back when it goes from
// memory and before a checkpoint. It must be called before the first
// element and before a restore.
//
// Results and checkpoints are the same as in memory: states are kept as
// JSON, so their types must round-trip through encoding/json, as
// checkpoints need. A key a call saw is written back whole when it goes,
// so that a value changed in place (through what Get returned) is kept as
// in memory.
func (o *Op[K, T, O]) OnDisk(db *state.DB, name string, kc KeyCodec[K], hash func(K) uint64, groups int, cache int64) {
	d := &diskStore[K]{Store: dbstate.New(db.DB), kc: kc, hash: hash, groups: groups, limit: cache, perItem: 128,
		prefix: enc.AppendBytes([]byte{state.TagProcess}, []byte(name)), lru: []link{{}}}
	timers := enc.AppendBytes([]byte{state.TagProcessTimer}, []byte(name))
	d.q[EventTime] = d.Queue(append(slices.Clone(timers), 'e'))
	d.q[ProcessingTime] = d.Queue(append(timers, 'p'))
	o.disk = d
	o.c.queue = d
}

var errCorrupt = errors.New("the states of a key in the state database are corrupt")

// diskStore is an Op's keys in a state database: what it keeps of each
// slot, the least recently used order of the slots, the timers' queues.
type diskStore[K comparable] struct {
	*dbstate.Store
	q      [2]*dbstate.Queue
	kc     KeyCodec[K]
	hash   func(K) uint64
	groups int
	prefix []byte // of the keys' values: TagProcess, name

	// Of each slot: its key, encoded; whether it may have changed since
	// it was read or written back; whether the database may hold it; the
	// memory it is reckoned to take.
	encs   [][]byte
	dirty  []bool
	stored []bool
	sizes  []int64
	// lru links the slots at hand, the one used last first: lru[0] is
	// the sentinel, lru[s+1] slot s's links.
	lru []link
	// nstored is how many keys the database holds: with none, a key not
	// at hand has nothing there, and is not looked up.
	nstored int

	used, limit int64
	// perItem is what a value (of a value, a list or a map, or a timer)
	// is reckoned to take in memory, learnt from the sizes of the keys
	// written back.
	perItem int64

	kbuf, tbuf, vbuf []byte
	raw              []rawState
	tims             []slotTimer
}

type link struct{ prev, next int32 }

// grow makes room for one more slot.
func (d *diskStore[K]) grow() {
	d.encs = append(d.encs, nil)
	d.dirty, d.stored, d.sizes = append(d.dirty, false), append(d.stored, false), append(d.sizes, 0)
	d.lru = append(d.lru, link{})
}

// take makes slot s key k's, used last, with nothing read yet.
func (d *diskStore[K]) take(s int32, k K) {
	for int(s) >= len(d.encs) {
		d.grow()
	}
	d.encs[s] = d.kc.AppendKey(d.encs[s][:0], k)
	d.dirty[s], d.stored[s], d.sizes[s] = false, false, 0
	d.toFront(s + 1)
}

func (d *diskStore[K]) unlink(i int32) {
	l := d.lru[i]
	d.lru[l.prev].next, d.lru[l.next].prev = l.next, l.prev
}

func (d *diskStore[K]) toFront(i int32) {
	first := d.lru[0].next
	d.lru[i] = link{prev: 0, next: first}
	d.lru[first].prev, d.lru[0].next = i, i
}

// touch makes slot s the one used last.
func (d *diskStore[K]) touch(s int32) {
	d.unlink(s + 1)
	d.toFront(s + 1)
}

// dbKey is the database key of slot s's key k.
func (d *diskStore[K]) dbKey(s int32, k K) []byte {
	d.kbuf = append(dbstate.GroupKey(d.kbuf[:0], d.prefix, int(d.hash(k)%uint64(d.groups))), d.encs[s]...)
	return d.kbuf
}

// timerKey is the database key of slot s's timer t.
func (d *diskStore[K]) timerKey(s int32, t slotTimer) []byte {
	b := binary.BigEndian.AppendUint64(d.q[t.d].Key(d.tbuf[:0], t.t), t.seq)
	d.tbuf = append(b, d.encs[s]...)
	return d.tbuf
}

func (d *diskStore[K]) add(s int32, t slotTimer)    { d.q[t.d].Add(d.timerKey(s, t)) }
func (d *diskStore[K]) remove(s int32, t slotTimer) { d.q[t.d].Delete(d.timerKey(s, t)) }

// items is how many values slot s holds, timers included.
func (o *Op[K, T, O]) items(s int32) int64 {
	n := int(o.c.count[s])
	for _, st := range o.c.stores {
		n += st.items(s)
	}
	return int64(n)
}

// reckon sets the memory slot s is reckoned to take.
func (o *Op[K, T, O]) reckon(s int32) {
	d := o.disk
	size := 160 + o.items(s)*d.perItem
	d.used += size - d.sizes[s]
	d.sizes[s] = size
}

// load reads key k's states and timers into slot s (new, and k's) from
// the database, and says whether it held them.
func (o *Op[K, T, O]) load(k K, s int32) bool {
	d := o.disk
	d.take(s, k)
	if d.nstored == 0 {
		return false
	}
	v, closer, ok := d.Get(d.dbKey(s, k))
	if !ok {
		return false
	}
	dec := enc.NewDecoder(v)
	o.readSlot(dec, &d.raw, &d.tims)
	if dec.Err() != nil || dec.Len() != 0 {
		d.Fail(errCorrupt)
	} else {
		d.Fail(o.setStates(s, d.raw))
		for _, t := range d.tims {
			if !o.c.tims.Has(timerKey{s, t.d, t.t}) {
				o.c.hold(s, t) // counted, and in the queue, already
			}
		}
	}
	d.Fail(closer.Close())
	d.stored[s] = true
	o.reckon(s)
	return true
}

// changed takes slot s as changed by a call, and lets the keys used least
// go from memory until the rest fit.
func (o *Op[K, T, O]) changed(s int32) {
	d := o.disk
	d.dirty[s] = true
	o.reckon(s)
	for d.used > d.limit {
		last := d.lru[0].prev
		if last == 0 {
			break
		}
		o.evict(last - 1)
	}
}

// gone deletes what the database holds of slot s's key, which has no
// state and no timers left.
func (o *Op[K, T, O]) gone(s int32) {
	d := o.disk
	if d.stored[s] {
		d.Delete(d.dbKey(s, o.keys[s]))
		d.nstored--
	}
	d.letGo(s)
}

// evict lets slot s go from memory, written back if it changed.
func (o *Op[K, T, O]) evict(s int32) {
	d := o.disk
	o.writeBack(s)
	d.letGo(s)
	o.forget(s)
}

// letGo takes slot s from the slots at hand and from the memory reckoned.
func (d *diskStore[K]) letGo(s int32) {
	d.unlink(s + 1)
	d.used -= d.sizes[s]
	d.sizes[s], d.dirty[s], d.stored[s] = 0, false, false
}

// writeBack writes slot s's states and timers to the database if they
// may have changed, and learns what a value takes from their size.
func (o *Op[K, T, O]) writeBack(s int32) {
	d := o.disk
	if !d.dirty[s] {
		return
	}
	var err error
	if d.vbuf, err = o.appendSlot(d.vbuf[:0], s); err != nil {
		d.Fail(fmt.Errorf("key %s: %w", d.encs[s], err))
		return
	}
	d.Set(d.dbKey(s, o.keys[s]), d.vbuf)
	if !d.stored[s] {
		d.stored[s] = true
		d.nstored++
	}
	d.dirty[s] = false
	// A decoded value takes about twice its encoding, plus its entry.
	est := 48 + 2*int64(len(d.vbuf))/max(o.items(s), 1)
	d.perItem += (est - d.perItem) / 8
}

// dueTimer is a timer the database's queue gave: its key and sequence
// number.
type dueTimer[K comparable] struct {
	key K
	seq uint64
}

// fireOnDisk is fire for timers in the database: a part of an instant's
// at a time, read and taken from the queue before the first fires.
func (o *Op[K, T, O]) fireOnDisk(dm Domain, until mtime.Time) error {
	d := o.disk
	q := d.q[dm]
	var due []dueTimer[K]
	for d.Err() == nil {
		at, keys := q.Due(until)
		if len(keys) == 0 {
			break
		}
		p := q.Prefix()
		due = due[:0]
		for _, k := range keys {
			dec := enc.NewDecoder(k[p+16:])
			key := d.kc.ReadKey(dec)
			if dec.Err() != nil || dec.Len() != 0 {
				d.Fail(errCorrupt)
			}
			due = append(due, dueTimer[K]{key: key, seq: binary.BigEndian.Uint64(k[p+8:])})
		}
		q.Drop(len(keys))
		for _, t := range due {
			if d.Err() != nil {
				break
			}
			s := o.slot(t.key)
			if !o.c.live(s, dm, at, t.seq) {
				o.release(s) // not set: a queue that kept a timer it should not have
				continue
			}
			if err := o.fireOne(s, dm, at); err != nil {
				return err
			}
		}
	}
	return d.Err()
}
