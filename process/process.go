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
//   - State and timers are kept in checkpoints, by key group, and restored
//     at any parallelism. A key with no state and no timers is forgotten.
package process

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

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

// timerID is a timer: a key's (by slot), in a domain, at an instant.
type timerID struct {
	slot int32
	d    Domain
	t    mtime.Time
}

// timerRef is a timer in its domain's heap: its slot and the sequence
// number it was set with (an entry whose timer was deleted, or set again,
// is stale).
type timerRef struct {
	seq  uint64
	slot int32
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

	timers map[timerID]uint64
	queues [2]heap.Heap[mtime.Time, timerRef]
	// count is the number of timers of each slot.
	count []int32
	seq   uint64
}

func (c *core) set(d Domain, t mtime.Time) {
	if !c.active {
		panic("process: a timer set outside a call of the function")
	}
	id := timerID{c.slot, d, t}
	if _, ok := c.timers[id]; ok {
		return
	}
	c.seq++
	c.timers[id] = c.seq
	c.count[c.slot]++
	c.queues[d].Push(t, timerRef{seq: c.seq, slot: c.slot})
	c.compact(d)
}

func (c *core) del(d Domain, t mtime.Time) {
	if !c.active {
		panic("process: a timer deleted outside a call of the function")
	}
	id := timerID{c.slot, d, t}
	if _, ok := c.timers[id]; ok {
		delete(c.timers, id)
		c.count[c.slot]--
	}
}

// live says the heap entry of instant t is a timer still set.
func (c *core) live(d Domain, t mtime.Time, r timerRef) bool {
	return c.timers[timerID{r.slot, d, t}] == r.seq
}

// compact drops the stale entries of a domain's heap once they are more
// than the live ones (and a few): deleted timers take no room for long.
func (c *core) compact(d Domain) {
	q := &c.queues[d]
	if len(*q) < 2*len(c.timers)+1024 {
		return
	}
	kept := (*q)[:0]
	for _, e := range *q {
		if c.live(d, e.Key, e.Value) {
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
// processing time, one at a time, and keeps its state in checkpoints.
type Op[K comparable, T, O any] struct {
	f   Func[K, T, O]
	c   core
	ctx Context[K, O]

	slots  map[K]int32
	keys   []K
	free   []int32
	batch  []heap.Entry[mtime.Time, timerRef]
	byName map[string]int

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
	o.c.timers = map[timerID]uint64{}
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

// slot is the key's slot, which it gets if it has none.
func (o *Op[K, T, O]) slot(k K) int32 {
	if s, ok := o.slots[k]; ok {
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
	return s
}

// release forgets the key of slot s when it has no state and no timers.
func (o *Op[K, T, O]) release(s int32) {
	if o.c.count[s] > 0 {
		return
	}
	for _, st := range o.c.stores {
		if st.has(s) {
			return
		}
	}
	for _, st := range o.c.stores {
		st.reset(s) // an emptied list's or map's room
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
	q := &o.c.queues[d]
	for len(*q) > 0 && (*q)[0].Key <= until {
		t := (*q)[0].Key
		o.batch = o.batch[:0]
		for len(*q) > 0 && (*q)[0].Key == t {
			if e := q.Pop(); o.c.live(d, e.Key, e.Value) {
				o.batch = append(o.batch, e)
			}
		}
		slices.SortFunc(o.batch, func(a, b heap.Entry[mtime.Time, timerRef]) int {
			return cmp.Compare(a.Value.seq, b.Value.seq)
		})
		for _, e := range o.batch {
			s := e.Value.slot
			delete(o.c.timers, timerID{s, d, t})
			o.c.count[s]--
			o.stats.Fired[d]++
			if o.f.Timer == nil {
				o.release(s)
				continue
			}
			o.enter(s, t)
			err := o.f.Timer(&o.ctx, Timer{Time: t, Domain: d})
			o.leave(s)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Watermark is the watermark the Op has reached.
func (o *Op[K, T, O]) Watermark() mtime.Time { return o.c.wm }

// Now is the processing time the Op has reached.
func (o *Op[K, T, O]) Now() mtime.Time { return o.c.now }

// Keys is the number of keys with state or timers.
func (o *Op[K, T, O]) Keys() int { return len(o.slots) }

// Timers is the number of timers set, by domain.
func (o *Op[K, T, O]) Timers() (event, processing int) {
	for id := range o.c.timers {
		if id.d == EventTime {
			event++
		} else {
			processing++
		}
	}
	return event, processing
}

// Stats is what the Op did so far.
func (o *Op[K, T, O]) Stats() Stats { return o.stats }

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
	timers := map[int32][]timerID{}
	if len(list) > 0 {
		for id := range o.c.timers {
			timers[id.slot] = append(timers[id.slot], id)
		}
	}
	b = enc.AppendUvarint(b, uint64(len(list)))
	var data []byte
	for _, e := range list {
		b = append(b, e.enc...)
		n := 0
		for _, st := range o.c.stores {
			if st.has(e.slot) {
				n++
			}
		}
		b = enc.AppendUvarint(b, uint64(n))
		for i, st := range o.c.stores {
			if !st.has(e.slot) {
				continue
			}
			var err error
			if data, err = st.appendSlot(data[:0], e.slot); err != nil {
				return nil, fmt.Errorf("state %q of key %s: %w", o.c.states[i].Name(), e.enc, err)
			}
			b = enc.AppendString(b, o.c.states[i].Name())
			b = enc.AppendBytes(b, data)
		}
		ts := timers[e.slot]
		slices.SortFunc(ts, func(a, b timerID) int { return cmp.Compare(o.c.timers[a], o.c.timers[b]) })
		b = enc.AppendUvarint(b, uint64(len(ts)))
		for _, id := range ts {
			b = enc.AppendUvarint(b, uint64(id.d))
			b = enc.AppendVarint(b, int64(id.t))
			b = enc.AppendUvarint(b, o.c.timers[id])
		}
	}
	return b, nil
}

// RestoreKeys reads the keys AppendKeys wrote (of any set of key groups: a
// restore at another parallelism reads every part's). A state the
// function no longer has is dropped.
func (o *Op[K, T, O]) RestoreKeys(d *enc.Decoder, kc KeyCodec[K]) error {
	n := d.Items(1 << 40)
	for range n {
		k := kc.ReadKey(d)
		if d.Err() != nil {
			break
		}
		s := o.slot(k)
		states := d.Items(len(o.c.stores) + 1<<10)
		for range states {
			name, data := d.String(), d.Bytes()
			if d.Err() != nil {
				break
			}
			if i, ok := o.byName[name]; ok {
				if err := o.c.stores[i].readSlot(data, s); err != nil {
					return fmt.Errorf("state %q: %w", name, err)
				}
			}
		}
		timers := d.Items(1 << 40)
		for range timers {
			dm := Domain(d.Uvarint())
			t, seq := mtime.Time(d.Varint()), d.Uvarint()
			if d.Err() != nil || dm > ProcessingTime {
				d.Fail()
				break
			}
			id := timerID{s, dm, t}
			if _, dup := o.c.timers[id]; !dup {
				o.c.timers[id] = seq
				o.c.count[s]++
				o.c.queues[dm].Push(t, timerRef{seq: seq, slot: s})
			}
		}
		if d.Err() != nil {
			break
		}
		o.release(s)
	}
	return d.Err()
}
