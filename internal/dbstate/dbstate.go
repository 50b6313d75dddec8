// Package dbstate is what an operator that keeps its keys in a state
// database (package state) does apart from the types of its keys and
// values: its writes, in a batch its reads see; its timers, as keys of the
// database in the order they fire (Queue); and its checkpoints, written
// from the database a key at a time (WriteGroups). A join's buffers and a
// keyed process function's states are kept with it.
//
// The database is working storage (see package state): a batch is
// committed without a log, when it holds 4 MiB and before a checkpoint is
// read.
package dbstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// Store is an operator's keys in a state database: a batch of writes
// that reads see, and the first error the database gave (the operator
// stops its job with it).
type Store struct {
	db     *pebble.DB
	batch  *pebble.Batch // indexed: reads see the writes not yet committed
	failed error
}

// New returns a store over db.
func New(db *pebble.DB) *Store { return &Store{db: db} }

// Fail keeps err as the store's error if it is the first.
func (s *Store) Fail(err error) {
	if err != nil && s.failed == nil {
		s.failed = err
	}
}

// Err is the first error the store met.
func (s *Store) Err() error { return s.failed }

func (s *Store) b() *pebble.Batch {
	if s.batch == nil {
		s.batch = s.db.NewIndexedBatch()
	}
	return s.batch
}

// Commit commits the writes so far to the database (which keeps no log:
// it is working storage).
func (s *Store) Commit() {
	if s.batch == nil {
		return
	}
	s.Fail(s.batch.Commit(pebble.NoSync))
	s.batch.Close()
	s.batch = nil
}

// maybeCommit commits the batch once it holds more than 4 MiB.
func (s *Store) maybeCommit() {
	if s.batch != nil && s.batch.Len() > 4<<20 {
		s.Commit()
	}
}

// Get is the value of k, if it has one; closer releases it.
func (s *Store) Get(k []byte) ([]byte, io.Closer, bool) {
	v, closer, err := s.b().Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, false
	}
	if err != nil {
		s.Fail(err)
		return nil, nil, false
	}
	return v, closer, true
}

// Set sets the value of k.
func (s *Store) Set(k, v []byte) {
	s.Fail(s.b().Set(k, v, nil))
	s.maybeCommit()
}

// Delete deletes k.
func (s *Store) Delete(k []byte) {
	s.Fail(s.b().Delete(k, nil))
	s.maybeCommit()
}

// WriteGroups writes the values of the keys prefix, key group (big-endian
// uint16), encoded key, for the groups keep holds for: their number, then
// each one's encoded key and value, in the database's order, which is a
// checkpoint's (by group, then by encoded key). It reads the keys in two
// passes, so that none is held in memory. An error of the database's is
// the store's too; w's is returned.
func (s *Store) WriteGroups(w io.Writer, prefix []byte, groups int, keep func(group int) bool) error {
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
	s.Commit()
	opts := &pebble.IterOptions{
		LowerBound: binary.BigEndian.AppendUint16(slices.Clone(prefix), uint16(lo)),
		UpperBound: state.PrefixEnd(binary.BigEndian.AppendUint16(slices.Clone(prefix), uint16(hi))),
	}
	each := func(f func(k []byte, it *pebble.Iterator) error) error {
		it, err := s.db.NewIter(opts)
		if err != nil {
			s.Fail(err)
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			if !keep(int(binary.BigEndian.Uint16(k[len(prefix):]))) {
				continue
			}
			if err := f(k[len(prefix)+2:], it); err != nil {
				it.Close()
				return err
			}
		}
		err = it.Close()
		s.Fail(err)
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
			s.Fail(err)
			return err
		}
		if _, err := w.Write(k); err != nil {
			return err
		}
		_, err = w.Write(v)
		return err
	})
}

// GroupKey appends to b the key of a value kept by key group: prefix, the
// group (big-endian uint16), then what the caller appends (the encoded
// key), as WriteGroups reads them.
func GroupKey(b, prefix []byte, group int) []byte {
	return binary.BigEndian.AppendUint16(append(b, prefix...), uint16(group))
}

// Queue is an operator's timers in its store: keys of their own, with
// no values, that start with a prefix and an instant (state.OrderedTime)
// and go on as the operator says, in the order they are to fire. It
// keeps the first ones in memory, so that most watermarks read nothing.
type Queue struct {
	s      *Store
	prefix []byte
	// from is a lower bound of the timers' keys (nil: their prefix):
	// after those taken, unless one was added below.
	from []byte
	// head are the first timers' keys, in order, read from the database
	// a part at a time (HeadPart) and kept in order as timers come:
	// every timer below headEnd is in it (headEnd nil: every timer), so
	// that most watermarks read nothing; headOK says it was read since
	// the last change below from. It holds at most 2 × HeadPart keys.
	head    [][]byte
	headEnd []byte
	headOK  bool
}

// Queue returns the queue of the timers whose keys start with prefix.
func (s *Store) Queue(prefix []byte) *Queue {
	return &Queue{s: s, prefix: slices.Clone(prefix)}
}

// Prefix is the length of the queue's prefix: a timer's instant starts
// there.
func (q *Queue) Prefix() int { return len(q.prefix) }

// Key appends to b the start of a timer's key: the prefix and the instant.
func (q *Queue) Key(b []byte, at mtime.Time) []byte {
	return state.OrderedTime(append(b, q.prefix...), at)
}

// MaxDue bounds the timers of one instant Due hands over at once.
const MaxDue = 4096

// HeadPart is how many timers a queue reads at once (a variable for the
// tests).
var HeadPart = 1024

// Add adds the timer of key k, which starts with Key's.
func (q *Queue) Add(k []byte) {
	q.s.Fail(q.s.b().Set(k, nil, nil))
	if q.from != nil && bytes.Compare(k, q.from) < 0 {
		q.from = append(q.from[:0], k...)
		q.headOK = false
	}
	if q.headOK && (q.headEnd == nil || bytes.Compare(k, q.headEnd) < 0) {
		i, _ := slices.BinarySearchFunc(q.head, k, bytes.Compare)
		q.head = slices.Insert(q.head, i, bytes.Clone(k))
		if len(q.head) > 2*HeadPart {
			// Bounded: the later half is read again when its turn comes.
			q.headEnd = q.head[HeadPart]
			clear(q.head[HeadPart+1:])
			q.head = q.head[:HeadPart]
		}
	}
	q.s.maybeCommit()
}

// Delete deletes the timer of key k, which Add added and Due has not
// given.
func (q *Queue) Delete(k []byte) {
	q.s.Fail(q.s.b().Delete(k, nil))
	if q.headOK && (q.headEnd == nil || bytes.Compare(k, q.headEnd) < 0) {
		if i, ok := slices.BinarySearchFunc(q.head, k, bytes.Compare); ok {
			q.head = slices.Delete(q.head, i, i+1)
		}
	}
	q.s.maybeCommit()
}

// readHead reads the next timers into the head, from from on.
func (q *Queue) readHead() {
	lower := q.from
	if lower == nil {
		lower = q.prefix
	}
	it, err := q.s.b().NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: state.PrefixEnd(q.prefix)})
	if err != nil {
		q.s.Fail(err)
		return
	}
	clear(q.head)
	q.head, q.headEnd, q.headOK = q.head[:0], nil, true
	for ok := it.First(); ok; ok = it.Next() {
		if len(q.head) == HeadPart {
			q.headEnd = bytes.Clone(it.Key())
			break
		}
		q.head = append(q.head, bytes.Clone(it.Key()))
	}
	q.s.Fail(it.Close())
}

// Due is the keys of the timers of the least instant with any, when it is
// at or before wm, in order (at most MaxDue of them), until Drop: the
// caller reads them before it adds or deletes a timer.
func (q *Queue) Due(wm mtime.Time) (mtime.Time, [][]byte) {
	if !q.headOK || len(q.head) == 0 && q.headEnd != nil {
		q.readHead()
	}
	p := len(q.prefix)
	n := 0
	var at mtime.Time
	for ; n < len(q.head) && n < MaxDue; n++ {
		t := state.ReadOrderedTime(q.head[n][p:])
		if n == 0 {
			if t > wm {
				break
			}
			at = t
		} else if t != at {
			break
		}
	}
	return at, q.head[:n]
}

// Drop deletes the first n timers Due gave.
func (q *Queue) Drop(n int) {
	if n == 0 {
		return
	}
	for _, k := range q.head[:n] {
		q.s.Fail(q.s.b().Delete(k, nil))
	}
	// The next timer is after the last one taken.
	q.from = append(append(q.from[:0], q.head[n-1]...), 0)
	clear(q.head[:n])
	q.head = q.head[n:]
	q.s.maybeCommit()
}
