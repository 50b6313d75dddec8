// Package join is the operator of an event-time interval join (Flink's
// IntervalJoinOperator): for one key, a left record a and a right record b
// join when b's time is in [a's time + lower, a's time + upper]. Both sides
// are buffered per key, in order of (event time, arrival), and a record
// leaves its buffer once the watermark has passed the last time a record of
// the other side that is not late could still join it: a left record at
// a.ts + max(0, upper), a right one at b.ts + max(0, -lower) (plus the
// allowed lateness). A left outer or anti join emits the left records that
// found no partner at that moment.
//
// A temporal join (Config.Temporal; Flink SQL's event-time temporal join,
// FOR SYSTEM_TIME AS OF) reads the right input as a versioned table: each
// right record is the key's version from its own time on, until the next
// one (a version Deletes says is a deletion ends the key's row). A left
// record waits until the watermark has passed its time (plus the allowed
// lateness), so that every version that could still apply has come, then
// joins the key's version valid at its time, the latest at or before it.
// A version leaves the state once a later one has settled (the watermark
// has passed its time): no record still to come could look it up.
//
// A window join (Config.Window; Flink's window join) joins the records of
// one key in one tumbling window: when the watermark (less the allowed
// lateness) passes the window's last instant, every left record of the
// window with every right one; a record of a window that has fired is
// late.
//
// The operator is synchronous and deterministic: the same calls give the
// same outputs, joined pairs in order of the other side's (time, arrival),
// and expiries in order of (expiry time, arrival).
package join

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/window"
)

// Mode is what a join emits.
type Mode uint8

// The modes.
const (
	// Inner emits the joined pairs.
	Inner Mode = iota
	// LeftOuter emits the joined pairs and, once its interval has passed,
	// every left record that joined nothing.
	LeftOuter
	// Anti emits only the left records that joined nothing, once their
	// interval has passed.
	Anti
)

// String is the mode as a restore reports it.
func (m Mode) String() string {
	switch m {
	case Inner:
		return "inner"
	case LeftOuter:
		return "left_outer"
	case Anti:
		return "anti"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Side is the input a record came on.
type Side uint8

// The sides.
const (
	Left Side = iota
	Right
)

// String is "left" or "right".
func (s Side) String() string {
	if s == Left {
		return "left"
	}
	return "right"
}

// Config is a join's interval, mode and allowed lateness, in milliseconds.
type Config struct {
	Lower, Upper                   mtime.Time
	LowerExclusive, UpperExclusive bool
	Mode                           Mode
	// Lateness is how far behind the watermark a record may still come:
	// the buffers keep records that much longer.
	Lateness mtime.Time
	// Temporal makes the join a temporal one: a left record joins the
	// right input's version valid at its time. It has no interval: Lower
	// and Upper are zero, neither exclusive.
	Temporal bool
	// Window, when above 0, makes the join a window join (Flink's): the
	// records of one key in one tumbling window of this size (from the
	// epoch) join, when the watermark passes the window's end. It has no
	// interval either.
	Window mtime.Time
}

// WindowOf is the start of the tumbling window of the join's size that
// holds ts.
func (c Config) WindowOf(ts mtime.Time) mtime.Time {
	return window.Tumbling{Size: c.Window}.Start(ts)
}

// Validate refuses an interval whose lower bound is above its upper bound
// (as Flink does) and a negative lateness.
func (c Config) Validate() error {
	if c.Lower > c.Upper {
		return fmt.Errorf("join: the lower bound %s is above the upper bound %s", mtime.FormatDuration(c.Lower), mtime.FormatDuration(c.Upper))
	}
	if c.Lateness < 0 {
		return errors.New("join: the allowed lateness is negative")
	}
	interval := c.Lower != 0 || c.Upper != 0 || c.LowerExclusive || c.UpperExclusive
	switch {
	case c.Temporal && interval:
		return errors.New("join: a temporal join joins the version valid at a record's time: it has no interval")
	case c.Window < 0, c.Window > 0 && (interval || c.Temporal):
		return errors.New("join: a window join joins the records of one window: it has no interval, and is not temporal")
	}
	return nil
}

// Interval is the inclusive interval [lo, hi] of the bounds (an exclusive
// bound moved in by a millisecond, as Flink does).
func (c Config) Interval() (lo, hi mtime.Time) {
	lo, hi = c.Lower, c.Upper
	if c.LowerExclusive {
		lo++
	}
	if c.UpperExclusive {
		hi--
	}
	return lo, hi
}

// Entry is a buffered record.
type Entry[T any] struct {
	TS  mtime.Time
	Seq uint64 // arrival order, over both sides
	V   T
	// Joined says a left record has joined at least once.
	Joined bool
}

// OutKind says what an Out is.
type OutKind uint8

// The kinds of outputs.
const (
	// OutPair is a joined pair.
	OutPair OutKind = iota
	// OutUnmatched is a left record that joined nothing in its interval
	// (in a temporal join: found no version valid at its time).
	OutUnmatched
	// OutLate is a record that came after its buffer would have let it go.
	OutLate
)

// Out is one output of the operator: valid only during the call.
type Out[K comparable, L, R any] struct {
	Kind OutKind
	Key  K
	// Side is the side of a late record.
	Side                Side
	Left                L
	Right               R
	LeftTime, RightTime mtime.Time
	// Watermark is the combined watermark when it was emitted.
	Watermark mtime.Time
}

type keyState[L, R any] struct {
	left  []Entry[L]
	right []Entry[R]
}

// timer is the expiry of a buffered record (its instant is its key in
// the heap of timers).
type timer[K comparable] struct {
	seq  uint64
	side Side
	key  K
}

// Stats counts what the operator did.
type Stats struct {
	Left, Right int64 // records buffered
	Pairs       int64
	Unmatched   int64
	// Late counts the records too late for the join, by side.
	Late [2]int64
}

// Op is an interval join's operator.
type Op[K comparable, L, R any] struct {
	cfg    Config
	lo, hi mtime.Time
	wm     mtime.Time
	seq    uint64
	st     store[K, L, R]
	due    []timer[K]
	size   [2]int64
	stats  Stats
	emit   func(*Out[K, L, R])
	out    Out[K, L, R]
	// deleted says a right record of a temporal join is a deletion.
	deleted func(R) bool
}

// New returns an operator that hands its outputs to emit.
func New[K comparable, L, R any](cfg Config, emit func(*Out[K, L, R])) (*Op[K, L, R], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lo, hi := cfg.Interval()
	return &Op[K, L, R]{cfg: cfg, lo: lo, hi: hi, wm: mtime.MinTime, st: newMemStore[K, L, R](), emit: emit}, nil
}

// pairsAsTheyCome says a record joins the other side's as it comes: in an
// interval join, not in a temporal or a window join, which join when a
// record expires.
func (o *Op[K, L, R]) pairsAsTheyCome() bool { return !o.cfg.Temporal && o.cfg.Window == 0 }

// Deletes tells a temporal join which right records are deletions: from
// its time on, the key has no row (Flink's delete in a changelog), until a
// later version. Without it no record is.
func (o *Op[K, L, R]) Deletes(deleted func(R) bool) { o.deleted = deleted }

// Watermark is the combined watermark the operator has seen.
func (o *Op[K, L, R]) Watermark() mtime.Time { return o.wm }

// Stats is what the operator did so far.
func (o *Op[K, L, R]) Stats() Stats { return o.stats }

// Buffered is the number of records buffered on each side.
func (o *Op[K, L, R]) Buffered() (left, right int64) { return o.size[Left], o.size[Right] }

// Keys is the number of keys with buffered records.
func (o *Op[K, L, R]) Keys() int { return o.st.len() }

// Err is the first error of the operator's state database (OnDisk), nil
// with its state in memory.
func (o *Op[K, L, R]) Err() error { return o.st.err() }

// Times are the distinct event times buffered on a side for key, in order
// (what Flink's tests assert of its buffers).
func (o *Op[K, L, R]) Times(side Side, key K) []mtime.Time {
	ks := o.st.get(key)
	if ks == nil {
		return nil
	}
	defer o.st.put(key, ks)
	var out []mtime.Time
	add := func(ts mtime.Time) {
		if len(out) == 0 || out[len(out)-1] != ts {
			out = append(out, ts)
		}
	}
	if side == Left {
		for _, e := range ks.left {
			add(e.TS)
		}
	} else {
		for _, e := range ks.right {
			add(e.TS)
		}
	}
	return out
}

// late says a record at ts comes after its buffer would have let it go: at
// or behind the watermark (minus the lateness). A record at the watermark
// is late, unlike in Flink (which drops only those before it): a buffer
// lets a record go when the watermark reaches its expiry, so a record of
// the other side at exactly the watermark could miss a partner it should
// have joined, and an anti join would have emitted that partner as
// unmatched already.
func (o *Op[K, L, R]) late(ts mtime.Time) bool {
	if o.cfg.Window > 0 {
		// A window join's record is late once its window has fired, as
		// a window's in Flink: the watermark has passed its last instant
		// (plus the lateness).
		ts = o.cfg.WindowOf(ts) + o.cfg.Window - 1
	}
	return o.wm != mtime.MinTime && ts <= o.wm-o.cfg.Lateness
}

// expiry is when a record of side at ts leaves its buffer.
func (o *Op[K, L, R]) expiry(side Side, ts mtime.Time) mtime.Time {
	if o.cfg.Window > 0 {
		return o.cfg.WindowOf(ts) + o.cfg.Window - 1 + o.cfg.Lateness
	}
	if side == Left {
		return ts + max(0, o.hi) + o.cfg.Lateness
	}
	return ts + max(0, -o.lo) + o.cfg.Lateness
}

// insert puts e in order of (time, arrival) and returns where.
func insert[T any](list []Entry[T], e Entry[T]) []Entry[T] {
	i := len(list)
	for i > 0 && list[i-1].TS > e.TS {
		i--
	}
	return slices.Insert(list, i, e)
}

// first is the index of the first entry at or after ts.
func first[T any](list []Entry[T], ts mtime.Time) int {
	i, _ := slices.BinarySearchFunc(list, ts, func(e Entry[T], t mtime.Time) int {
		if e.TS < t {
			return -1
		}
		return 1
	})
	return i
}

// AddLeft adds a left record.
func (o *Op[K, L, R]) AddLeft(key K, ts mtime.Time, v L) {
	if o.late(ts) {
		o.stats.Late[Left]++
		o.out = Out[K, L, R]{Kind: OutLate, Key: key, Side: Left, Left: v, LeftTime: ts, Watermark: o.wm}
		o.emit(&o.out)
		return
	}
	ks := o.st.getOrCreate(key)
	o.seq++
	e := Entry[L]{TS: ts, Seq: o.seq, V: v}
	// A temporal join's record joins when it expires, not as it comes.
	for i := first(ks.right, ts+o.lo); o.pairsAsTheyCome() && i < len(ks.right) && ks.right[i].TS <= ts+o.hi; i++ {
		e.Joined = true
		if o.cfg.Mode == Anti {
			break
		}
		r := &ks.right[i]
		o.pair(key, v, ts, r.V, r.TS)
	}
	ks.left = insert(ks.left, e)
	o.st.put(key, ks)
	o.size[Left]++
	o.stats.Left++
	o.st.push(o.expiry(Left, ts), timer[K]{seq: e.Seq, side: Left, key: key})
}

// AddRight adds a right record.
func (o *Op[K, L, R]) AddRight(key K, ts mtime.Time, v R) {
	if o.late(ts) {
		o.stats.Late[Right]++
		o.out = Out[K, L, R]{Kind: OutLate, Key: key, Side: Right, Right: v, RightTime: ts, Watermark: o.wm}
		o.emit(&o.out)
		return
	}
	ks := o.st.getOrCreate(key)
	o.seq++
	e := Entry[R]{TS: ts, Seq: o.seq, V: v}
	for i := first(ks.left, ts-o.hi); o.pairsAsTheyCome() && i < len(ks.left) && ks.left[i].TS <= ts-o.lo; i++ {
		l := &ks.left[i]
		l.Joined = true
		if o.cfg.Mode != Anti {
			o.pair(key, l.V, l.TS, v, ts)
		}
	}
	ks.right = insert(ks.right, e)
	o.st.put(key, ks)
	o.size[Right]++
	o.stats.Right++
	o.st.push(o.expiry(Right, ts), timer[K]{seq: e.Seq, side: Right, key: key})
}

func (o *Op[K, L, R]) pair(key K, l L, lts mtime.Time, r R, rts mtime.Time) {
	o.stats.Pairs++
	o.out = Out[K, L, R]{Kind: OutPair, Key: key, Left: l, Right: r, LeftTime: lts, RightTime: rts, Watermark: o.wm}
	o.emit(&o.out)
}

// Advance moves the combined watermark to wm (never back): the records
// whose expiry it reaches leave their buffers, in order of (expiry,
// arrival), and a left outer or anti join emits those of the left that
// joined nothing.
func (o *Op[K, L, R]) Advance(wm mtime.Time) {
	if wm <= o.wm {
		return
	}
	o.wm = wm
	for {
		var at mtime.Time
		at, o.due = o.st.due(wm, o.due[:0])
		if len(o.due) == 0 {
			return
		}
		for _, t := range o.due {
			o.expire(at, t, wm)
		}
		clear(o.due)
	}
}

// expire is the expiry at instant at of t's record, the watermark at wm.
func (o *Op[K, L, R]) expire(at mtime.Time, t timer[K], wm mtime.Time) {
	ks := o.st.get(t.key)
	switch {
	case o.cfg.Window > 0:
		if ks == nil {
			return // the window fired at an earlier record's timer
		}
		o.fire(t.key, ks, at-o.cfg.Lateness+1-o.cfg.Window, wm)
	case t.side == Left:
		i := slices.IndexFunc(ks.left, func(e Entry[L]) bool { return e.Seq == t.seq })
		e := ks.left[i]
		ks.left = slices.Delete(ks.left, i, i+1)
		o.size[Left]--
		if o.cfg.Temporal {
			e.Joined = o.lookup(t.key, ks, &e, wm)
		}
		if !e.Joined {
			// Counted in every mode, so that an inner join's records
			// that joined nothing are accounted for too.
			o.stats.Unmatched++
			if o.cfg.Mode != Inner {
				o.out = Out[K, L, R]{Kind: OutUnmatched, Key: t.key, Left: e.V, LeftTime: e.TS, Watermark: wm}
				o.emit(&o.out)
			}
		}
	case o.cfg.Temporal:
		if ks == nil {
			return // a deletion settled has taken the key's last version
		}
		o.settle(ks, at-o.cfg.Lateness)
	default:
		i := slices.IndexFunc(ks.right, func(e Entry[R]) bool { return e.Seq == t.seq })
		ks.right = slices.Delete(ks.right, i, i+1)
		o.size[Right]--
	}
	o.st.put(t.key, ks)
}

// Codec encodes keys, left records and right records for checkpoints: the
// window stage's codec, whose accumulators are the left records and whose
// results are the right ones.
type Codec[K comparable, L, R any] = exec.Codec[K, L, R]

// stateVersion is the version of the encoding of a join's state.
const stateVersion = 1

// AppendHeader appends what the operator keeps besides its buffers: the
// watermark, the arrival counter and the statistics.
func (o *Op[K, L, R]) AppendHeader(b []byte) []byte {
	b = enc.AppendUvarint(b, stateVersion)
	b = enc.AppendVarint(b, int64(o.wm))
	b = enc.AppendUvarint(b, o.seq)
	for _, n := range []int64{o.stats.Left, o.stats.Right, o.stats.Pairs, o.stats.Unmatched, o.stats.Late[0], o.stats.Late[1]} {
		b = enc.AppendVarint(b, n)
	}
	return b
}

// RestoreHeader reads what AppendHeader wrote.
func (o *Op[K, L, R]) RestoreHeader(d *enc.Decoder) error {
	return readHeader(d, &o.wm, &o.seq, &o.stats)
}

// ReadWatermark reads the watermark of what AppendHeader wrote (for a
// checkpoint's inspection, whatever the operator's types).
func ReadWatermark(d *enc.Decoder) (mtime.Time, error) {
	var wm mtime.Time
	var seq uint64
	var st Stats
	err := readHeader(d, &wm, &seq, &st)
	return wm, err
}

func readHeader(d *enc.Decoder, wm *mtime.Time, seq *uint64, st *Stats) error {
	if v := d.Uvarint(); d.Err() == nil && v != stateVersion {
		return fmt.Errorf("join: state of version %d, this weir reads %d", v, stateVersion)
	}
	*wm = mtime.Time(d.Varint())
	*seq = d.Uvarint()
	for _, p := range []*int64{&st.Left, &st.Right, &st.Pairs, &st.Unmatched, &st.Late[0], &st.Late[1]} {
		*p = d.Varint()
	}
	return d.Err()
}

// AppendKeys appends the buffers of the keys for which keep(group) holds,
// where group is a key's key group (hash(key) % groups), in order of key
// group and then of encoded key: the same state gives the same bytes.
func (o *Op[K, L, R]) AppendKeys(b []byte, c Codec[K, L, R], hash func(K) uint64, groups int, keep func(group int) bool) []byte {
	return o.st.appendKeys(b, c, hash, groups, keep)
}

// WriteKeys writes what AppendKeys appends to w: from a state database
// (OnDisk) a key at a time, as the database holds them, so that a
// checkpoint of state larger than memory never holds it whole; from
// memory at once.
func (o *Op[K, L, R]) WriteKeys(w io.Writer, c Codec[K, L, R], hash func(K) uint64, groups int, keep func(group int) bool) error {
	if s, ok := o.st.(*dbStore[K, L, R]); ok {
		return s.writeKeys(w, groups, keep)
	}
	_, err := w.Write(o.AppendKeys(nil, c, hash, groups, keep))
	return err
}

// RestoreKeysFrom reads from r the buffers AppendKeys (or WriteKeys) wrote
// (of any set of key groups: a restore at another parallelism reads every
// instance's) and sets their expiries again. It reads a key at a time
// (enc.ReadItems): a checkpoint's part larger than memory restores into a
// state database (OnDisk) without being held whole.
func (o *Op[K, L, R]) RestoreKeysFrom(r io.Reader, c Codec[K, L, R]) error {
	return enc.ReadItems(r, func(d *enc.Decoder) { o.restoreKey(d, c) })
}

// restoreKey reads one key's buffers and adds them, with their expiries,
// once the whole of them is read without an error.
func (o *Op[K, L, R]) restoreKey(d *enc.Decoder, c Codec[K, L, R]) {
	k := c.ReadKey(d)
	var read keyState[L, R]
	readKeyState(d, &read, c)
	if d.Err() != nil {
		return
	}
	ks := o.st.getOrCreate(k)
	if len(ks.left)+len(ks.right) == 0 {
		// The usual case: the key's first buffers.
		ks.left, ks.right = read.left, read.right
	} else {
		ks.left = append(ks.left, read.left...)
		ks.right = append(ks.right, read.right...)
	}
	for _, e := range read.left {
		o.st.push(o.expiry(Left, e.TS), timer[K]{seq: e.Seq, side: Left, key: k})
	}
	for _, e := range read.right {
		o.st.push(o.expiry(Right, e.TS), timer[K]{seq: e.Seq, side: Right, key: k})
	}
	o.size[Left] += int64(len(read.left))
	o.size[Right] += int64(len(read.right))
	o.st.put(k, ks)
}
