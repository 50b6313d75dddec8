package job

import (
	"github.com/weirstream/weir/internal/enc"
)

// codecFormat is the format of the window state the codec writes: 2 added
// to every aggregate's slot, and to every value of a kept pane, whether it
// is partial (started after the window, by a restore into a job that added
// it). Format 1 is read as it was written.
const codecFormat = 2

// codec encodes a job's window state for checkpoints: keys are their
// canonical JSON text, accumulators the slots of the aggregates. The zero
// codec writes and reads the current format. A codec that reads the state
// of a checkpoint taken by another job (restoreCodec) has the format it was
// written in, and from: for each aggregate of the job, the checkpoint's
// slot it is read from, -1 for one the checkpoint lacks (it starts at its
// zero, partial).
type codec struct {
	format int
	from   []int
}

func (c codec) v() int {
	if c.format == 0 {
		return codecFormat
	}
	return c.format
}

func (codec) AppendKey(b []byte, k string) []byte { return enc.AppendString(b, k) }
func (codec) ReadKey(d *enc.Decoder) string       { return d.String() }

func (codec) AppendAcc(b []byte, a acc) []byte {
	b = enc.AppendUvarint(b, uint64(a.n))
	for i := range a.n {
		s := a.slot(i)
		b = enc.AppendVarint(b, s.n)
		b = enc.AppendVarint(b, s.i)
		b = enc.AppendFloat(b, s.f)
		b = enc.AppendBool(b, s.float)
		b = enc.AppendBool(b, s.has)
		b = append(b, byte(s.scale))
		b = enc.AppendBool(b, s.partial)
		b = enc.AppendUvarint(b, uint64(len(s.set)))
		for v := range s.set {
			b = enc.AppendString(b, v)
		}
	}
	return b
}

func (c codec) ReadAcc(d *enc.Decoder) acc {
	n := d.Items(1 << 16)
	a := newAcc(n)
	for i := range n {
		s := a.slot(i)
		s.n, s.i, s.f = d.Varint(), d.Varint(), d.Float()
		s.float, s.has = d.Bool(), d.Bool()
		s.scale = int8(d.Count(18))
		if c.v() >= 2 {
			s.partial = d.Bool()
		}
		if m := d.Items(1 << 30); m > 0 {
			s.set = make(map[string]struct{}, m)
			for range m {
				s.set[d.String()] = struct{}{}
			}
		}
	}
	if c.from == nil {
		return a
	}
	out := newAcc(len(c.from))
	for k, i := range c.from {
		switch {
		case i < 0:
			out.slot(k).partial = true
		case i < n:
			*out.slot(k) = *a.slot(i)
		default:
			d.Fail() // the checkpoint's shape names more aggregates than its state has
		}
	}
	return out
}

// newAcc is an accumulator of n zero slots.
func newAcc(n int) acc {
	a := acc{n: n}
	if n > accInline {
		a.more = make([]slot, n-accInline)
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
	}
	return b
}

func (c codec) ReadOut(d *enc.Decoder) []outVal {
	n := d.Items(1 << 16)
	o := make([]outVal, n)
	for i := range o {
		o[i].kind = vkind(d.Count(int(vDec)))
		o[i].scale = int8(d.Count(18))
		o[i].i, o[i].f = d.Varint(), d.Float()
		if c.v() >= 2 {
			o[i].partial = d.Bool()
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
func (codec) SizeAcc(a acc) int {
	n := 24 + 48*a.n
	for i := range a.n {
		for v := range a.slot(i).set {
			n += 48 + len(v)
		}
	}
	return n
}
