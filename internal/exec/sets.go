package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/state"
)

// SetStore holds the sets of an aggregate whose accumulators grow with
// their input (count_distinct's values), for an operator instance that
// keeps its state in a state database: a set's values are keys of the
// database, outside the Go heap, and the accumulator holds the set's id and
// its count. A window of a million distinct values then takes the memory
// budget's share, not the million values.
//
// A set belongs to a key: every call is about the sets of the key the
// operator works on, the key of the accumulator the aggregate was handed,
// and an id names a set among that key's sets. Sets go with their key into
// checkpoints and restores, at any parallelism.
type SetStore interface {
	// NewSet returns the id of a new, empty set (never 0).
	NewSet() uint64
	// Insert adds v to set id and reports whether it was not in it.
	Insert(id uint64, v []byte) bool
	// Contains reports whether set id holds v.
	Contains(id uint64, v []byte) bool
	// Union adds the values of set src to set dst and returns how many
	// were not in it.
	Union(dst, src uint64) int64
	// Count is the number of values of the union of the sets ids, which
	// it reads without writing one: a sliding window's count of its
	// slices' sets.
	Count(ids []uint64) int64
	// Drop deletes set id and its values.
	Drop(id uint64)
}

// SetSource reads the sets a Pebble checkpoint holds for the key a restore
// is reading: it calls each with every value of set id, in order. The
// slice is valid only during the call.
type SetSource func(id uint64, each func(v []byte)) error

// SetUser is an optional interface of an aggregate function whose
// accumulators hold sets that grow with their input. An operator instance
// that keeps its state in a state database gives it a SetStore, so that
// its sets live in the database; without one, it keeps them in memory.
// Such an aggregate is one per instance (Config.NewAgg).
type SetUser[A any] interface {
	// UseSets gives the aggregate the instance's store, before any
	// accumulator is made.
	UseSets(s SetStore)
	// Settle returns an accumulator a restore read, with its sets where
	// the aggregate keeps them now: in the store, or in memory without
	// one. A restored accumulator holds its sets in itself (a checkpoint
	// of the memory backend, or of a weir that kept them so) or names
	// sets of the checkpoint's database, which from reads; from is nil
	// when the restore took the checkpoint's sets into the store as they
	// were, under the same ids.
	Settle(a A, from SetSource) (A, error)
}

// Absorber is an optional interface of an aggregate function: Absorb is
// Merge for an accumulator the runtime does not use again (a session
// merged into another), whose memory the result may take over instead of
// copying it: the larger of two sets, with the smaller added to it. The
// runtime does not Release other afterwards. A session that grows by an
// event at a time is merged at every event: Merge would copy its set each
// time.
type Absorber[A any] interface {
	Absorb(acc, other A) A
}

// MergedResulter is an optional interface of an aggregate function:
// MergedResult is the Result of the Merge of parts, in order, into New,
// made without the merge. A sliding window's value is the merge of its
// slices, made again at each firing: an aggregate whose sets are in a
// SetStore counts their union as it reads them instead of copying them
// into a set of their own.
type MergedResulter[A, O any] interface {
	MergedResult(parts []A) O
}

// noSets is the SetSource of a checkpoint that holds no sets (a snapshot
// of the memory backend): an accumulator that names one is corrupt.
func noSets(id uint64, _ func([]byte)) error {
	return fmt.Errorf("an accumulator names set %d, which the checkpoint does not hold: %w", id, enc.ErrCorrupt)
}

// pebbleSets is the SetStore of an operator instance in a state database.
// A set's value is a key without a value: tagSet, the instance, the key
// group and the key, as the key's state has them, the set's id (a
// uvarint) and the value's bytes. The key's bytes are the codec's, which
// must be self-delimiting (no key's bytes are the start of another's), as
// a string's length-prefixed bytes are.
//
// Nearly every value a count_distinct is given is new, and a lookup of a
// new value must find nothing fast: Insert reads through an iterator that
// consults the bloom filters of every level, the last one included (a
// Get does not read the last level's, which holds most of a large set).
// Writes go into a batch of the store's own, small and committed often;
// until it is, Insert finds them in pending, as the iterator, a view of the
// database as of the last commit, does not. A set is read whole (Union,
// Count, Drop) through the batch, which sees the database too.
//
// A set is deleted value by value when it is small, as most are: a range
// deletion makes the next iterator of the database sort all the range
// deletions of its memtable again, and a window that closes at every
// firing would add one each time.
type pebbleSets struct {
	db      *pebble.DB
	inst    uint16
	pre     []byte // tagSet inst group key: the sets of the key at hand (at)
	next    uint64 // the last id given
	batch   *pebble.Batch
	pending map[string]struct{} // the values batch adds
	it      *pebble.Iterator    // the database as of the last commit; nil until a lookup needs it
	kbuf    []byte
	vals    []byte // values of a set read at once (Union, Drop)
	ends    []int  // where each of vals ends
	its     []*pebble.Iterator
	los     [][]byte
	err     error
}

// setsMeta is the key group of the instance's own key in the set range:
// the next id, kept for a checkpoint (no key group is this high).
const setsMeta = 0xffff

// setsBatch is how many bytes of writes the store holds before it commits
// them: a batch larger than half a memtable would go into the database as
// a memtable of its own, and pending holds a key for each value in it.
const setsBatch = 256 << 10

// unionChunk is how many bytes of a set's values Union reads before it
// adds them to the other set: the batch is not committed under an
// iterator.
const unionChunk = 256 << 10

// dropPoints is the most values Drop deletes one by one; a larger set goes
// with one range deletion.
const dropPoints = 64

func newPebbleSets(db *pebble.DB, inst int) *pebbleSets {
	return &pebbleSets{db: db, inst: uint16(inst), pending: map[string]struct{}{}}
}

// at makes the sets of the key whose state is at stateKey the ones the
// calls are about.
func (s *pebbleSets) at(stateKey []byte) {
	s.pre = append(s.pre[:0], stateKey...)
	s.pre[0] = tagSet
}

// setKey is the prefix of set id's values.
func (s *pebbleSets) setKey(b []byte, id uint64) []byte {
	return appendSetID(append(b, s.pre...), id)
}

// appendSetID appends a set's id to the prefix of its key's sets: a
// uvarint, self-delimiting as the key before it, and short, since every
// value of the set repeats it.
func appendSetID(b []byte, id uint64) []byte { return binary.AppendUvarint(b, id) }

// metaKey is the key of the instance's next id.
func (s *pebbleSets) metaKey() []byte {
	b := binary.BigEndian.AppendUint16([]byte{tagSet}, s.inst)
	return binary.BigEndian.AppendUint16(b, setsMeta)
}

// span is every key of the instance's sets.
func (s *pebbleSets) span() (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint16([]byte{tagSet}, s.inst)
	return lo, state.PrefixEnd(lo)
}

func (s *pebbleSets) NewSet() uint64 {
	s.next++
	return s.next
}

func (s *pebbleSets) Insert(id uint64, v []byte) bool {
	if s.Contains(id, v) {
		return false
	}
	s.fail(s.write().Set(s.kbuf, nil, nil))
	s.pending[string(s.kbuf)] = struct{}{}
	s.maybeCommit()
	return true
}

func (s *pebbleSets) Contains(id uint64, v []byte) bool {
	s.kbuf = append(s.setKey(s.kbuf[:0], id), v...)
	_, ok := s.pending[string(s.kbuf)]
	return ok || s.has(s.kbuf)
}

// has reports whether the database held k at the last commit.
func (s *pebbleSets) has(k []byte) bool {
	if s.it == nil {
		it, err := s.db.NewIter(&pebble.IterOptions{UseL6Filters: true})
		if err != nil {
			s.fail(err)
			return false
		}
		s.it = it
	}
	if s.it.SeekPrefixGE(k) {
		return true // the prefix is the whole key
	}
	s.fail(s.it.Error())
	return false
}

// write is the batch, which reads see with the database.
func (s *pebbleSets) write() *pebble.Batch {
	if s.batch == nil {
		s.batch = s.db.NewIndexedBatch()
	}
	return s.batch
}

func (s *pebbleSets) maybeCommit() {
	if s.batch != nil && s.batch.Len() > setsBatch {
		s.commit()
	}
}

// commit writes the batch into the database, and lets go of the view of
// it that lookups read (the next one takes a new view).
func (s *pebbleSets) commit() {
	if s.batch != nil {
		s.fail(s.batch.Commit(pebble.NoSync))
		s.fail(s.batch.Close())
		s.batch = nil
		clear(s.pending)
	}
	s.idle()
}

// idle lets go of the view of the database the lookups read: an open
// iterator holds on to memtables and table files the database has done
// with. The operator calls it between its batches.
func (s *pebbleSets) idle() {
	if s.it != nil {
		s.fail(s.it.Close())
		s.it = nil
	}
}

// iter is an iterator over the values of the set whose keys start with lo,
// from the key from, through the batch.
func (s *pebbleSets) iter(lo, from []byte) *pebble.Iterator {
	it, err := s.write().NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: state.PrefixEnd(lo)})
	s.fail(err)
	return it
}

// read puts up to unionChunk bytes, and up to most, of the values of the
// set whose keys start with lo into vals, from the value after (after nil:
// from the first), and reports whether more follow.
func (s *pebbleSets) read(lo, after []byte, most int) bool {
	from := lo
	if after != nil {
		from = append(append(append([]byte(nil), lo...), after...), 0)
	}
	s.vals, s.ends = s.vals[:0], s.ends[:0]
	it := s.iter(lo, from)
	if it == nil {
		return false
	}
	for it.First(); it.Valid() && len(s.vals) < unionChunk && len(s.ends) < most; it.Next() {
		s.vals = append(s.vals, it.Key()[len(lo):]...)
		s.ends = append(s.ends, len(s.vals))
	}
	more := it.Valid()
	s.fail(it.Close())
	return more && s.err == nil
}

func (s *pebbleSets) Union(dst, src uint64) int64 {
	lo := s.setKey(nil, src)
	var added int64
	var after []byte
	for {
		more := s.read(lo, after, unionChunk)
		start := 0
		for _, end := range s.ends {
			v := s.vals[start:end]
			if s.Insert(dst, v) {
				added++
			}
			after, start = append(after[:0], v...), end
		}
		if !more {
			return added
		}
	}
}

func (s *pebbleSets) Count(ids []uint64) int64 {
	s.its, s.los = s.its[:0], s.los[:0]
	for _, id := range ids {
		lo := s.setKey(nil, id)
		if it := s.iter(lo, lo); it != nil {
			it.First()
			s.its, s.los = append(s.its, it), append(s.los, lo)
		}
	}
	// The sets' values in order, each counted once: a merge of the
	// iterators, each at its next value.
	var n int64
	var last []byte
	for first := true; ; first = false {
		min := -1
		for i, it := range s.its {
			if it.Valid() && (min < 0 || bytes.Compare(it.Key()[len(s.los[i]):], s.its[min].Key()[len(s.los[min]):]) < 0) {
				min = i
			}
		}
		if min < 0 {
			break
		}
		v := s.its[min].Key()[len(s.los[min]):]
		if first || !bytes.Equal(v, last) {
			n++
			last = append(last[:0], v...)
		}
		s.its[min].Next()
	}
	for i, it := range s.its {
		s.fail(it.Close())
		s.its[i] = nil
	}
	return n
}

func (s *pebbleSets) Drop(id uint64) {
	lo := s.setKey(nil, id)
	if s.read(lo, nil, dropPoints+1) || len(s.ends) > dropPoints {
		s.fail(s.write().DeleteRange(lo, state.PrefixEnd(lo), nil))
	} else {
		start := 0
		for _, end := range s.ends {
			s.kbuf = append(append(s.kbuf[:0], lo...), s.vals[start:end]...)
			s.fail(s.write().Delete(s.kbuf, nil))
			start = end
		}
	}
	s.maybeCommit()
}

// save writes the next id where a checkpoint keeps it, and commits what
// the store wrote.
func (s *pebbleSets) save() {
	s.fail(s.write().Set(s.metaKey(), enc.AppendUvarint(nil, s.next), nil))
	s.commit()
}

// restoredNext takes the next id of a checkpoint's instance (its meta
// key's value): ids given from now on are above those of its sets.
func (s *pebbleSets) restoredNext(v []byte) error {
	d := enc.NewDecoder(v)
	n := d.Uvarint()
	if d.Err() != nil || d.Len() != 0 {
		return enc.ErrCorrupt
	}
	s.next = max(s.next, n)
	return nil
}

func (s *pebbleSets) fail(err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
}
