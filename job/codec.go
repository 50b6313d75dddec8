package job

import (
	"github.com/weirstream/weir/internal/enc"
)

// codec encodes a job's window state for checkpoints: keys are their
// canonical JSON text, accumulators the slots of the aggregates.
type codec struct{}

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
		b = enc.AppendUvarint(b, uint64(len(s.set)))
		for v := range s.set {
			b = enc.AppendString(b, v)
		}
	}
	return b
}

func (codec) ReadAcc(d *enc.Decoder) acc {
	n := d.Items(1 << 16)
	a := acc{n: n}
	if n > accInline {
		a.more = make([]slot, n-accInline)
	}
	for i := range n {
		s := a.slot(i)
		s.n, s.i, s.f = d.Varint(), d.Varint(), d.Float()
		s.float, s.has = d.Bool(), d.Bool()
		s.scale = int8(d.Count(18))
		if m := d.Items(1 << 30); m > 0 {
			s.set = make(map[string]struct{}, m)
			for range m {
				s.set[d.String()] = struct{}{}
			}
		}
	}
	return a
}

func (codec) AppendOut(b []byte, o []outVal) []byte {
	b = enc.AppendUvarint(b, uint64(len(o)))
	for _, v := range o {
		b = append(b, byte(v.kind), byte(v.scale))
		b = enc.AppendVarint(b, v.i)
		b = enc.AppendFloat(b, v.f)
	}
	return b
}

func (codec) ReadOut(d *enc.Decoder) []outVal {
	n := d.Items(1 << 16)
	o := make([]outVal, n)
	for i := range o {
		o[i].kind = vkind(d.Count(int(vDec)))
		o[i].scale = int8(d.Count(18))
		o[i].i, o[i].f = d.Varint(), d.Float()
	}
	return o
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
