package job

import (
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/jobfile"
)

// codecFormat is the format of the window state the codec writes: 2 added
// to every aggregate's slot, and to every value of a kept pane, whether it
// is partial (started after the window, by a restore into a job that added
// it). In 3, a count_distinct's slot may hold no values: they are keys of
// the state database, and the slot's sum or extreme is their set's id, its
// float their number (both were 0 before, the values in the slot's set).
// An earlier weir would read such a slot as a count of 0: it refuses the
// format. Formats 1 and 2 are read as they were written; the values a
// count_distinct holds in them go into the state database as it restores
// them (setAggs.Settle). 4 added to every slot the state of an aggregate
// kept in slot.ext (percentile, median, approx_count_distinct, first,
// last, histogram, top), as bytes of a length (none for the others), and
// to a kept pane's values the kind vJSON, followed by its text.
const codecFormat = 4

// codec encodes a job's window state for checkpoints: keys are their
// canonical JSON text, accumulators the slots of the aggregates. The zero
// codec writes and reads the current format. A codec that reads the state
// of a checkpoint taken by another job (restoreCodec) has the format it was
// written in, and from: for each aggregate of the job, the checkpoint's
// slot it is read from, -1 for one the checkpoint lacks (it starts at its
// zero, partial). list are the job's aggregates, whose accumulators it
// writes, and kinds their kinds.
type codec struct {
	format int
	from   []int
	kinds  []jobfile.AggKind
	list   []jobfile.Aggregate
}

// newCodec is the codec of the job's window state in the current format.
func newCodec(j *jobfile.Job) codec {
	c := codec{kinds: make([]jobfile.AggKind, len(j.Aggregates)), list: j.Aggregates}
	for k, a := range j.Aggregates {
		c.kinds[k] = a.Kind
	}
	return c
}

func (c codec) v() int {
	if c.format == 0 {
		return codecFormat
	}
	return c.format
}

func (codec) AppendKey(b []byte, k string) []byte { return enc.AppendString(b, k) }
func (codec) ReadKey(d *enc.Decoder) string       { return d.String() }

// slots is the number of slots of a: the job's aggregates, or none in the
// zero accumulator of a job of more than accInline, never made by New (a
// sliding window's own, whose slices hold its values).
func (c codec) slots(a acc) int {
	if len(c.kinds) > accInline && a.more == nil {
		return 0
	}
	return len(c.kinds)
}

func (c codec) AppendAcc(b []byte, a acc) []byte {
	n := c.slots(a)
	b = enc.AppendUvarint(b, uint64(n))
	for i, k := range c.kinds[:n] {
		s := a.slot(i)
		// A slot's count and its sum or extreme are written apart, as
		// they were kept (one of them zero).
		cnt, x := int64(0), s.i
		if counted(k) {
			cnt, x = x, 0
		}
		b = enc.AppendVarint(b, cnt)
		b = enc.AppendVarint(b, x)
		b = enc.AppendFloat(b, s.f)
		b = enc.AppendBool(b, s.float)
		b = enc.AppendBool(b, s.has)
		b = append(b, byte(s.scale))
		b = enc.AppendBool(b, s.partial)
		if k != jobfile.AggCountDistinct {
			b = enc.AppendUvarint(b, 0)
			b = appendMore(b, &c.list[i], s)
			continue
		}
		b = enc.AppendUvarint(b, uint64(len(s.set())))
		for v := range s.set() {
			b = enc.AppendString(b, v)
		}
		b = enc.AppendUvarint(b, 0) // no state in ext
	}
	return b
}

func (c codec) ReadAcc(d *enc.Decoder) acc {
	n := d.Items(1 << 16)
	if n == 0 {
		return acc{} // the zero accumulator (see slots)
	}
	if c.from == nil {
		if n != len(c.kinds) {
			// An accumulator has as many slots as the job has
			// aggregates: aggs reads them without a length.
			d.Fail()
			return newAcc(len(c.kinds))
		}
		a := newAcc(n)
		for i := range n {
			c.readSlot(d, a.slot(i), i)
		}
		return a
	}
	// The checkpoint's aggregate a slot goes to is of the kind of the
	// checkpoint's (the same text, Aggregate.String): read, the slots
	// wait for it.
	to := make([]int, n)
	for i := range to {
		to[i] = -1
	}
	for k, i := range c.from {
		if i >= n {
			d.Fail() // the checkpoint's shape names more aggregates than its state has
			return newAcc(len(c.from))
		}
		if i >= 0 {
			to[i] = k
		}
	}
	out := newAcc(len(c.from))
	var dropped slot
	for i := range n {
		if k := to[i]; k >= 0 {
			c.readSlot(d, out.slot(k), k)
		} else {
			c.readSlot(d, &dropped, -1)
		}
	}
	for k, i := range c.from {
		if i < 0 {
			out.slot(k).partial = true
		}
	}
	return out
}

// readSlot reads a slot into s, of the job's aggregate k (-1: of none, an
// aggregate the job dropped).
func (c codec) readSlot(d *enc.Decoder, s *slot, k int) {
	kind := jobfile.AggCount
	if k >= 0 {
		kind = c.kinds[k]
	}
	// A checkpoint has a count and a sum or extreme, one of them zero.
	cnt, x := d.Varint(), d.Varint()
	if cnt != 0 {
		x = cnt
	}
	s.i, s.f = x, d.Float()
	s.float, s.has = d.Bool(), d.Bool()
	s.scale = int8(d.Count(18))
	if c.v() >= 2 {
		s.partial = d.Bool()
	}
	if m := d.Items(1 << 30); m > 0 {
		set := make(map[string]struct{}, m)
		for range m {
			set[d.String()] = struct{}{}
		}
		switch {
		case kind == jobfile.AggCountDistinct:
			s.setTo(set)
		case k >= 0:
			d.Fail() // values of a set in a slot of an aggregate without
		}
	}
	if c.v() >= 4 {
		if more := d.Bytes(); len(more) > 0 && k >= 0 && !readMore(more, &c.list[k], s) {
			d.Fail()
		}
	}
	if k < 0 {
		*s = slot{}
	}
}

// newAcc is an accumulator of n zero slots.
func newAcc(n int) acc {
	var a acc
	if n > accInline {
		a.more = &make([]slot, n-accInline)[0]
	}
	return a
}

func (codec) AppendOut(b []byte, o []outVal) []byte {
	b = enc.AppendUvarint(b, uint64(len(o)))
	for _, v := range o {
		b = append(b, byte(v.kind), byte(v.scale))
		b = enc.AppendVarint(b, v.i)
		b = enc.AppendFloat(b, v.f)
		b = enc.AppendBool(b, v.partial)
		if v.kind == vJSON {
			b = enc.AppendString(b, v.js)
		}
	}
	return b
}

func (c codec) ReadOut(d *enc.Decoder) []outVal {
	n := d.Items(1 << 16)
	o := make([]outVal, n)
	kinds := vDec
	if c.v() >= 4 {
		kinds = vJSON
	}
	for i := range o {
		o[i].kind = vkind(d.Count(int(kinds)))
		o[i].scale = int8(d.Count(18))
		o[i].i, o[i].f = d.Varint(), d.Float()
		if c.v() >= 2 {
			o[i].partial = d.Bool()
		}
		if o[i].kind == vJSON {
			if o[i].js = d.String(); o[i].js == "" {
				d.Fail()
			}
		}
	}
	if c.from == nil {
		return o
	}
	// A kept pane (to retract) has no value for an aggregate added since:
	// null, and partial.
	out := make([]outVal, len(c.from))
	for k, i := range c.from {
		switch {
		case i < 0:
			out[k] = outVal{partial: true}
		case i < n:
			out[k] = o[i]
		default:
			d.Fail()
		}
	}
	return out
}

// SizeAcc estimates the memory of an accumulator, for the Pebble store's
// cache of decoded state.
func (c codec) SizeAcc(a acc) int {
	n := 8 + 32*len(c.kinds)
	for i := range c.slots(a) {
		if c.kinds[i] != jobfile.AggCountDistinct {
			n += moreBytes(&c.list[i], a.slot(i))
			continue
		}
		for v := range a.slot(i).set() {
			n += 48 + len(v)
		}
	}
	return n
}
