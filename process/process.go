// Package process is weir's keyed process functions: code of one's own
// that sees a keyed stream's elements one at a time, keeps state per key
// and sets timers of its own, for what no window, aggregate or join
// covers (Flink's KeyedProcessFunction, Beam's stateful DoFn, Kafka
// Streams' Processor API).
//
// A Func says what to do with an element (Element) and when a timer fires
// (Timer); it declares the states it keeps (NewValue, NewList, NewMap) and
// the side outputs it may emit to (NewOutput). A pipeline runs one with
// weir.KeyedProcess; weirtest.ProcessHarness runs one in a test, as
// Flink's KeyedOneInputStreamOperatorTestHarness does; Op is what both
// drive.
//
// The rules, as Flink's:
//   - A call sees one key's state: the key of the element, or of the timer.
//   - A timer is a key's and an instant's, in event time (it fires once the
//     watermark reaches it) or in processing time (once processing time
//     does): setting it twice sets it once. Timers fire in the order of
//     their instants, and of one instant in the order they were set.
//   - The watermark a call sees is the one before the element; in a timer's
//     call, the one that fired it. The stage's output watermark follows its
//     input's, after the timers it fires.
//   - Every element is passed on, behind the watermark or not: what is late
//     is the function's to say (Context.Watermark).
//   - At the end of a bounded input every event-time timer fires (the
//     watermark reaches the end of time); processing-time timers do not.
//   - State and timers are kept in memory, or in a state database (OnDisk)
//     with the keys used last at hand; in checkpoints, by key group,
//     restored at any parallelism and on either. A key with no state and
//     no timers is forgotten.
package process

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/RaduBerinde/btreemap"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/heap"
	"github.com/weirstream/weir/mtime"
)

// Func is a keyed process function: K is the key's type, T the elements',
// O the main output's.
type Func[K comparable, T, O any] struct {
	// State lists the states the function keeps per key; their names are
	// unique.
	State []State
	// Sides lists the side outputs it may emit to; their names are
	// unique, and each is taken (weir.SideOutput).
	Sides []Side
	// Element is called for each element, with the element's event time
	// (Context.Time). An error stops the stage: a pipeline's Run returns
	// it.
	Element func(c *Context[K, O], v T) error
	// Timer is called when a timer of the key fires, with its instant
	// (Context.Time); nil when the function sets none.
	Timer func(c *Context[K, O], t Timer) error
}

// Domain is the time a timer is set in.
type Domain uint8

const (
	// EventTime timers fire when the watermark reaches them.
	EventTime Domain = iota
	// ProcessingTime timers fire when processing time reaches them.
	ProcessingTime
)

// String is "event_time" or "processing_time".
func (d Domain) String() string {
	if d == ProcessingTime {
		return "processing_time"
	}
	return "event_time"
}

// Timer is a timer that fired: its instant and its domain.
type Timer struct {
	Time   mtime.Time
	Domain Domain
}

// Scope is where a state is read and written and a side output emitted:
// the key being processed. A *Context is one.
type Scope interface{ scope() *core }

// Context is what a call of the function sees: the key, the time, the
// clocks; it sets timers and emits to the main output. It is valid during
// the call only.
type Context[K comparable, O any] struct {
	c    *core
	key  K
	ts   mtime.Time
	emit func(O)
}

func (c *Context[K, O]) scope() *core { return c.c }

// Key is the key being processed.
func (c *Context[K, O]) Key() K { return c.key }

// Time is the element's event time, or the instant of the timer that
// fired.
func (c *Context[K, O]) Time() mtime.Time { return c.ts }

// Watermark is the stage's watermark: before the element, or the one that
// fired the timer (mtime.MinTime before the first).
func (c *Context[K, O]) Watermark() mtime.Time { return c.c.wm }

// Now is the processing time.
func (c *Context[K, O]) Now() mtime.Time { return c.c.now }

// Emit sends o to the main output.
func (c *Context[K, O]) Emit(o O) { c.emit(o) }

// EventTimer sets a timer of the key at t in event time: it fires once
// the watermark reaches t (at the next watermark, when it has already).
func (c *Context[K, O]) EventTimer(t mtime.Time) { c.c.set(EventTime, t) }

// ProcessingTimer sets a timer of the key at t in processing time.
func (c *Context[K, O]) ProcessingTimer(t mtime.Time) { c.c.set(ProcessingTime, t) }

// DeleteEventTimer deletes the key's event-time timer at t, if it has
// one.
func (c *Context[K, O]) DeleteEventTimer(t mtime.Time) { c.c.del(EventTime, t) }

// DeleteProcessingTimer deletes the key's processing-time timer at t, if
// it has one.
func (c *Context[K, O]) DeleteProcessingTimer(t mtime.Time) { c.c.del(ProcessingTime, t) }

// slotTimer is a timer of a key: its domain, its instant and the
// sequence number it was set with.
type slotTimer struct {
	d   Domain
	t   mtime.Time
	seq uint64
}

// timerKey is a timer of a key at hand: its slot, domain and instant, in
// that order.
type timerKey struct {
	slot int32
	d    Domain
	t    mtime.Time
}

func compareTimers(a, b timerKey) int {
	if a.slot != b.slot {
		return cmp.Compare(a.slot, b.slot)
	}
	if a.d != b.d {
		return cmp.Compare(a.d, b.d)
	}
	return cmp.Compare(a.t, b.t)
}

// timerRef is a timer in its domain's heap: its slot and the sequence
// number it was set with (an entry whose timer was deleted, or set again,
// is stale).
type timerRef struct {
	seq  uint64
	slot int32
}

// queue is where the timers are found by instant: the heaps of memory, or
// the state database's keys (OnDisk).
type queue interface {
	// add adds the timer of slot.
	add(slot int32, t slotTimer)
	// remove removes it, deleted before it fired.
	remove(slot int32, t slotTimer)
}

// core is a running function's state apart from its types: the key being
// processed, the clocks, the timers, the stores.
type core struct {
	slot   int32
	active bool
	wm     mtime.Time
	now    mtime.Time

	states []State
	stores []store
	sides  []Side
	pushes []any

	// tims are the timers of the keys at hand, in order of slot, domain
	// and instant, with their sequence numbers: a B-tree, so that a key
	// of many timers costs what many keys of one do. count is the number
	// of each slot's; timers counts every timer (those on disk too), by
	// domain.
	tims   *btreemap.BTreeMap[timerKey, uint64]
	count  []int32
	timers [2]int
	queue  queue
	queues [2]heap.Heap[mtime.Time, timerRef]
	seq    uint64
}

func (c *core) set(d Domain, t mtime.Time) {
	if !c.active {
		panic("process: a timer set outside a call of the function")
	}
	c.add(c.slot, slotTimer{d: d, t: t}, true)
}

// add sets slot's timer st, with a new sequence number if fresh, unless
// the slot has the timer already.
func (c *core) add(slot int32, st slotTimer, fresh bool) {
	if c.tims.Has(timerKey{slot, st.d, st.t}) {
		return
	}
	if fresh {
		c.seq++
		st.seq = c.seq
	}
	c.hold(slot, st)
	c.timers[st.d]++
	c.queue.add(slot, st)
}

// hold keeps slot's timer st at hand, which it does not have.
func (c *core) hold(slot int32, st slotTimer) {
	c.tims.ReplaceOrInsert(timerKey{slot, st.d, st.t}, st.seq)
	c.count[slot]++
}

func (c *core) del(d Domain, t mtime.Time) {
	if !c.active {
		panic("process: a timer deleted outside a call of the function")
	}
	if _, seq, ok := c.tims.Delete(timerKey{c.slot, d, t}); ok {
		c.count[c.slot]--
		c.timers[d]--
		c.queue.remove(c.slot, slotTimer{d, t, seq})
	}
}

// live says slot's timer (d, t) is set, with seq (not deleted, fired, or
// set again since).
func (c *core) live(slot int32, d Domain, t mtime.Time, seq uint64) bool {
	_, s, ok := c.tims.Get(timerKey{slot, d, t})
	return ok && s == seq
}

// drop removes slot's timer (d, t), which fired.
func (c *core) drop(slot int32, d Domain, t mtime.Time) {
	c.tims.Delete(timerKey{slot, d, t})
	c.count[slot]--
	c.timers[d]--
}

// timersOf appends slot's timers to buf, in order of domain and instant.
func (c *core) timersOf(slot int32, buf []slotTimer) []slotTimer {
	from, to := timerKey{slot: slot, t: mtime.MinTime}, timerKey{slot: slot + 1, t: mtime.MinTime}
	for k, seq := range c.tims.Ascend(btreemap.GE(from), btreemap.LT(to)) {
		buf = append(buf, slotTimer{k.d, k.t, seq})
	}
	return buf
}

// memQueue keeps the timers in the heaps of core, a heap a domain: a
// deleted timer's entry stays, stale, until it comes up or the heap is
// compacted.
type memQueue struct{ c *core }

func (q memQueue) add(slot int32, st slotTimer) {
	q.c.queues[st.d].Push(st.t, timerRef{seq: st.seq, slot: slot})
	q.c.compact(st.d)
}

func (memQueue) remove(int32, slotTimer) {}

// compact drops the stale entries of a domain's heap once they are more
// than the live ones (and a few): deleted timers take no room for long.
func (c *core) compact(d Domain) {
	q := &c.queues[d]
	if len(*q) < 2*c.timers[d]+1024 {
		return
	}
	kept := (*q)[:0]
	for _, e := range *q {
		if c.live(e.Value.slot, d, e.Key, e.Value.seq) {
			kept = append(kept, e)
		}
	}
	clear((*q)[len(kept):])
	slices.SortFunc(kept, func(a, b heap.Entry[mtime.Time, timerRef]) int { return cmp.Compare(a.Key, b.Key) })
	*q = kept // sorted by key: a heap as it is
}

// Config configures an Op.
type Config[K comparable, T, O any] struct {
	Func Func[K, T, O]
	// Emit takes the main output.
	Emit func(O)
	// Sides are the side outputs' consumers, by name: a func(V) for each
	// *Output[V] of Func.Sides.
	Sides map[string]any
}

// Op runs a keyed process function synchronously: a runner (a pipeline's
// stage, weirtest's harness) sends it the elements, the watermark and
// processing time, one at a time, and keeps its state in checkpoints. Its
// keys' states and timers are in memory, or in a state database (OnDisk).
type Op[K comparable, T, O any] struct {
	f   Func[K, T, O]
	c   core
	ctx Context[K, O]

	// slots are the keys at hand (in memory: every key), by slot.
	slots  map[K]int32
	keys   []K
	free   []int32
	n      int // keys with state or timers
	batch  []heap.Entry[mtime.Time, timerRef]
	byName map[string]int
	disk   *diskStore[K] // nil: in memory

	// What a restore or a load from the database reads of a key.
	raw   []rawState
	rtims []slotTimer
	// Scratch of appendSlot and forget.
	sorted, evicted []slotTimer
	jbuf            []byte

	stats Stats
}

// Stats is what an Op did.
type Stats struct {
	Elements int64 `json:"elements"`
	// Fired counts the timers that fired, by domain.
	Fired [2]int64 `json:"fired"`
}

// New returns an Op running cfg.Func.
func New[K comparable, T, O any](cfg Config[K, T, O]) (*Op[K, T, O], error) {
	f := cfg.Func
	if f.Element == nil {
		return nil, fmt.Errorf("the function has no Element")
	}
	o := &Op[K, T, O]{f: f, slots: map[K]int32{}, byName: map[string]int{}}
	o.c.wm, o.c.now = mtime.MinTime, mtime.MinTime
	o.c.queue = memQueue{&o.c}
	o.c.tims = btreemap.New[timerKey, uint64](16, compareTimers)
	for i, s := range f.State {
		if s == nil {
			return nil, fmt.Errorf("state %d is nil", i)
		}
		if _, dup := o.byName[s.Name()]; dup || s.Name() == "" {
			return nil, fmt.Errorf("state %q: a state needs a name of its own", s.Name())
		}
		o.byName[s.Name()] = i
		o.c.states = append(o.c.states, s)
		o.c.stores = append(o.c.stores, s.newStore())
	}
	seen := map[string]bool{}
	for i, s := range f.Sides {
		if s == nil {
			return nil, fmt.Errorf("side output %d is nil", i)
		}
		if seen[s.Name()] || s.Name() == "" {
			return nil, fmt.Errorf("side output %q: a side output needs a name of its own", s.Name())
		}
		seen[s.Name()] = true
		push, ok := cfg.Sides[s.Name()]
		if !ok {
			return nil, fmt.Errorf("side output %q goes nowhere", s.Name())
		}
		if !s.accepts(push) {
			return nil, fmt.Errorf("side output %q takes a func(%s), not a %T", s.Name(), s.Type(), push)
		}
		o.c.sides, o.c.pushes = append(o.c.sides, s), append(o.c.pushes, push)
	}
	for name := range cfg.Sides {
		if !seen[name] {
			return nil, fmt.Errorf("side output %q is not one of the function's (Func.Sides)", name)
		}
	}
	o.ctx = Context[K, O]{c: &o.c, emit: cfg.Emit}
	return o, nil
}

// slot is the key's slot, which it gets if it has none: with what the
// state database keeps of it (OnDisk), or empty.
func (o *Op[K, T, O]) slot(k K) int32 {
	if s, ok := o.slots[k]; ok {
		if o.disk != nil {
			o.disk.touch(s)
		}
		return s
	}
	var s int32
	if n := len(o.free); n > 0 {
		s, o.free = o.free[n-1], o.free[:n-1]
		o.keys[s] = k
	} else {
		s = int32(len(o.keys))
		o.keys = append(o.keys, k)
		o.c.count = append(o.c.count, 0)
		for _, st := range o.c.stores {
			st.grow(len(o.keys))
		}
	}
	o.slots[k] = s
	if o.disk == nil || !o.load(k, s) {
		o.n++
	}
	return s
}

// release forgets the key of slot s when it has no state and no timers;
// else, on disk, the key's state changed (see changed).
func (o *Op[K, T, O]) release(s int32) {
	kept := o.c.count[s] > 0
	for _, st := range o.c.stores {
		kept = kept || st.has(s)
	}
	switch {
	case kept && o.disk != nil:
		o.changed(s)
	case kept:
	default:
		if o.disk != nil {
			o.gone(s)
		}
		o.n--
		o.forget(s)
	}
}

// forget lets slot s go, for a key to come.
func (o *Op[K, T, O]) forget(s int32) {
	for _, st := range o.c.stores {
		st.reset(s) // an emptied list's or map's room
	}
	if o.c.count[s] > 0 {
		// Its timers, which are on disk (evict).
		o.evicted = o.c.timersOf(s, o.evicted[:0])
		for _, t := range o.evicted {
			o.c.tims.Delete(timerKey{s, t.d, t.t})
		}
		o.c.count[s] = 0
	}
	delete(o.slots, o.keys[s])
	var zero K
	o.keys[s] = zero
	o.free = append(o.free, s)
}

// enter makes the key of slot s the one being processed, at time ts.
func (o *Op[K, T, O]) enter(s int32, ts mtime.Time) {
	o.c.slot, o.c.active = s, true
	o.ctx.key, o.ctx.ts = o.keys[s], ts
}

func (o *Op[K, T, O]) leave(s int32) {
	o.c.active = false
	o.release(s)
}

// Element processes an element of key k at event time ts.
func (o *Op[K, T, O]) Element(k K, ts mtime.Time, v T) error {
	s := o.slot(k)
	o.enter(s, ts)
	o.stats.Elements++
	err := o.f.Element(&o.ctx, v)
	o.leave(s)
	if err == nil {
		err = o.Err()
	}
	return err
}

// AdvanceWatermark moves the watermark to w (never back) and fires the
// event-time timers it reaches.
func (o *Op[K, T, O]) AdvanceWatermark(w mtime.Time) error {
	if w <= o.c.wm {
		return nil
	}
	o.c.wm = w
	return o.fire(EventTime, w)
}

// AdvanceProcessingTime moves processing time to now (never back) and
// fires the processing-time timers it reaches.
func (o *Op[K, T, O]) AdvanceProcessingTime(now mtime.Time) error {
	if now <= o.c.now {
		return nil
	}
	o.c.now = now
	return o.fire(ProcessingTime, now)
}

// fire fires the timers of domain d at or before until: the earliest
// instant's first, those of one instant in the order they were set, those
// the calls set at or before until too.
func (o *Op[K, T, O]) fire(d Domain, until mtime.Time) error {
	if o.disk != nil {
		return o.fireOnDisk(d, until)
	}
	q := &o.c.queues[d]
	for len(*q) > 0 && (*q)[0].Key <= until {
		t := (*q)[0].Key
		o.batch = o.batch[:0]
		for len(*q) > 0 && (*q)[0].Key == t {
			if e := q.Pop(); o.c.live(e.Value.slot, d, t, e.Value.seq) {
				o.batch = append(o.batch, e)
			}
		}
		slices.SortFunc(o.batch, func(a, b heap.Entry[mtime.Time, timerRef]) int {
			return cmp.Compare(a.Value.seq, b.Value.seq)
		})
		// Each still set when it fires: a call changes its own key's
		// timers only, and a key has one timer of an instant.
		for _, e := range o.batch {
			if err := o.fireOne(e.Value.slot, d, t); err != nil {
				return err
			}
		}
	}
	return o.Err()
}

// fireOne fires slot's timer (d, t), which is set.
func (o *Op[K, T, O]) fireOne(s int32, d Domain, t mtime.Time) error {
	o.c.drop(s, d, t)
	o.stats.Fired[d]++
	if o.f.Timer == nil {
		o.release(s)
		return nil
	}
	o.enter(s, t)
	err := o.f.Timer(&o.ctx, Timer{Time: t, Domain: d})
	o.leave(s)
	return err
}

// Watermark is the watermark the Op has reached.
func (o *Op[K, T, O]) Watermark() mtime.Time { return o.c.wm }

// Now is the processing time the Op has reached.
func (o *Op[K, T, O]) Now() mtime.Time { return o.c.now }

// Keys is the number of keys with state or timers.
func (o *Op[K, T, O]) Keys() int { return o.n }

// Timers is the number of timers set, by domain.
func (o *Op[K, T, O]) Timers() (event, processing int) {
	return o.c.timers[EventTime], o.c.timers[ProcessingTime]
}

// Stats is what the Op did so far.
func (o *Op[K, T, O]) Stats() Stats { return o.stats }

// Err is the first error of the state database (OnDisk): the Op's
// calls return it too.
func (o *Op[K, T, O]) Err() error {
	if o.disk == nil {
		return nil
	}
	return o.disk.Err()
}

// KeyCodec encodes keys in checkpoints.
type KeyCodec[K comparable] interface {
	AppendKey(b []byte, k K) []byte
	ReadKey(d *enc.Decoder) K
}

// JSONKeys encodes keys as JSON, each with its length: as weir keeps an
// aggregation's keys in checkpoints, so that a key type JSON round-trips
// (weir checks it when the pipeline is built) restores as it was.
type JSONKeys[K comparable] struct{}

// AppendKey implements KeyCodec. A key JSON cannot encode is appended
// empty, and fails ReadKey.
func (JSONKeys[K]) AppendKey(b []byte, k K) []byte {
	data, _ := json.Marshal(k)
	return enc.AppendBytes(b, data)
}

// ReadKey implements KeyCodec.
func (JSONKeys[K]) ReadKey(d *enc.Decoder) K {
	var k K
	if data := d.Bytes(); d.Err() == nil && json.Unmarshal(data, &k) != nil {
		d.Fail()
	}
	return k
}

// AppendHeader appends what the Op keeps apart from its keys: its clocks
// and its timers' sequence.
func (o *Op[K, T, O]) AppendHeader(b []byte) []byte {
	b = enc.AppendVarint(b, int64(o.c.wm))
	b = enc.AppendVarint(b, int64(o.c.now))
	return enc.AppendUvarint(b, o.c.seq)
}

// RestoreHeader reads what AppendHeader wrote.
func (o *Op[K, T, O]) RestoreHeader(d *enc.Decoder) error {
	o.c.wm = mtime.Time(d.Varint())
	o.c.now = mtime.Time(d.Varint())
	o.c.seq = d.Uvarint()
	return d.Err()
}

// AppendKeys appends the state and timers of the keys whose key group
// (hash(k) mod groups) keep says, in the order of their groups and their
// encodings: each state by name, as JSON, and each timer with its
// sequence number.
func (o *Op[K, T, O]) AppendKeys(b []byte, kc KeyCodec[K], hash func(K) uint64, groups int, keep func(group int) bool) ([]byte, error) {
	if o.disk != nil {
		w := bytes.NewBuffer(b)
		err := o.WriteKeys(w, kc, hash, groups, keep)
		return w.Bytes(), err
	}
	type ent struct {
		group int
		enc   []byte
		slot  int32
	}
	var list []ent
	for k, s := range o.slots {
		if g := int(hash(k) % uint64(groups)); keep(g) {
			list = append(list, ent{g, kc.AppendKey(nil, k), s})
		}
	}
	slices.SortFunc(list, func(a, b ent) int {
		if a.group != b.group {
			return a.group - b.group
		}
		return bytes.Compare(a.enc, b.enc)
	})
	b = enc.AppendUvarint(b, uint64(len(list)))
	for _, e := range list {
		b = append(b, e.enc...)
		var err error
		if b, err = o.appendSlot(b, e.slot); err != nil {
			return nil, fmt.Errorf("key %s: %w", e.enc, err)
		}
	}
	return b, nil
}

// WriteKeys writes what AppendKeys appends to w: from the state database
// (OnDisk) a key at a time, once the keys at hand are written back, so
// that a checkpoint of state larger than memory never holds it whole;
// from memory at once.
func (o *Op[K, T, O]) WriteKeys(w io.Writer, kc KeyCodec[K], hash func(K) uint64, groups int, keep func(group int) bool) error {
	if o.disk == nil {
		b, err := o.AppendKeys(nil, kc, hash, groups, keep)
		if err == nil {
			_, err = w.Write(b)
		}
		return err
	}
	if groups != o.disk.groups {
		return fmt.Errorf("the state database keeps %d key groups, not %d", o.disk.groups, groups)
	}
	for s := o.disk.lru[0].next; s != 0; s = o.disk.lru[s].next {
		o.writeBack(s - 1)
	}
	if err := o.Err(); err != nil {
		return err
	}
	return o.disk.WriteGroups(w, o.disk.prefix, groups, keep)
}

// appendSlot appends the states and timers of slot s, as a checkpoint
// keeps them after the key: the states it has, by name, as JSON, and its
// timers in the order they were set.
func (o *Op[K, T, O]) appendSlot(b []byte, s int32) ([]byte, error) {
	n := 0
	for _, st := range o.c.stores {
		if st.has(s) {
			n++
		}
	}
	b = enc.AppendUvarint(b, uint64(n))
	for i, st := range o.c.stores {
		if !st.has(s) {
			continue
		}
		var err error
		if o.jbuf, err = st.appendSlot(o.jbuf[:0], s); err != nil {
			return nil, fmt.Errorf("state %q: %w", o.c.states[i].Name(), err)
		}
		b = enc.AppendString(b, o.c.states[i].Name())
		b = enc.AppendBytes(b, o.jbuf)
	}
	ts := o.c.timersOf(s, o.sorted[:0])
	slices.SortFunc(ts, func(a, b slotTimer) int { return cmp.Compare(a.seq, b.seq) })
	b = enc.AppendUvarint(b, uint64(len(ts)))
	for _, t := range ts {
		b = enc.AppendUvarint(b, uint64(t.d))
		b = enc.AppendVarint(b, int64(t.t))
		b = enc.AppendUvarint(b, t.seq)
	}
	o.sorted = ts[:0]
	return b, nil
}

// rawState is a state of a key as a checkpoint keeps it: its name and its
// JSON.
type rawState struct {
	name string
	data []byte
}

// readSlot reads what appendSlot wrote into raw and tims (in the order
// they were set), changing nothing else.
func (o *Op[K, T, O]) readSlot(d *enc.Decoder, raw *[]rawState, tims *[]slotTimer) {
	*raw, *tims = (*raw)[:0], (*tims)[:0]
	for range d.Items(len(o.c.stores) + 1<<10) {
		name, data := d.String(), d.Bytes()
		if d.Err() != nil {
			return
		}
		*raw = append(*raw, rawState{name, data})
	}
	for range d.Items(1 << 40) {
		t := slotTimer{d: Domain(d.Uvarint()), t: mtime.Time(d.Varint()), seq: d.Uvarint()}
		if d.Err() != nil || t.d > ProcessingTime {
			d.Fail()
			return
		}
		*tims = append(*tims, t)
	}
}

// setStates sets the states of slot s that raw has. A state the function
// no longer has is dropped.
func (o *Op[K, T, O]) setStates(s int32, raw []rawState) error {
	for _, r := range raw {
		if i, ok := o.byName[r.name]; ok {
			if err := o.c.stores[i].readSlot(r.data, s); err != nil {
				return fmt.Errorf("state %q: %w", r.name, err)
			}
		}
	}
	return nil
}

// RestoreKeys reads the keys AppendKeys wrote (of any set of key groups: a
// restore at another parallelism reads every part's). A state the
// function no longer has is dropped.
func (o *Op[K, T, O]) RestoreKeys(d *enc.Decoder, kc KeyCodec[K]) error {
	var err error
	for range d.Items(1 << 40) {
		if err = o.restoreKey(d, kc); err != nil || d.Err() != nil {
			break
		}
	}
	if err != nil {
		return err
	}
	return d.Err()
}

// RestoreKeysFrom is RestoreKeys reading from r a key at a time
// (enc.ReadItems), so that a checkpoint's part larger than memory
// restores into a state database (OnDisk) without being held whole.
func (o *Op[K, T, O]) RestoreKeysFrom(r io.Reader, kc KeyCodec[K]) error {
	var failed error
	err := enc.ReadItems(r, func(d *enc.Decoder) {
		if err := o.restoreKey(d, kc); err != nil && failed == nil {
			failed = err
		}
	})
	if failed != nil {
		return failed
	}
	if err != nil {
		return err
	}
	return o.Err()
}

// restoreKey reads a key's states and timers and sets them, once the
// whole of them is read without an error; its timers already set are
// kept.
func (o *Op[K, T, O]) restoreKey(d *enc.Decoder, kc KeyCodec[K]) error {
	k := kc.ReadKey(d)
	if d.Err() != nil {
		return nil
	}
	o.readSlot(d, &o.raw, &o.rtims)
	if d.Err() != nil {
		return nil
	}
	s := o.slot(k)
	err := o.setStates(s, o.raw)
	for _, t := range o.rtims {
		o.c.add(s, t, false)
	}
	o.release(s)
	return err
}
