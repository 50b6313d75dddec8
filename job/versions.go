package job

import (
	"fmt"
	"math"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/jobfile"
)

// Retract implements aggregate.Retracter for the aggregates a job with
// version_field may have (jobfile refuses the others): count, count(f),
// sum and avg take the event's values back out, so that a revision
// withdraws its earlier version from its windows.
func (a *aggs) Retract(c acc, r record) acc {
	for k := range a.list {
		s := c.slot(k)
		if a.list[k].Kind == jobfile.AggCount {
			s.i--
			continue
		}
		v := &r.vals[a.field[k]]
		if v.kind == vNull {
			continue
		}
		switch a.list[k].Kind {
		case jobfile.AggCountField:
			s.i--
		case jobfile.AggSum:
			if v.exact {
				addDec(s, -v.dec, v.scale)
			} else {
				s.f -= v.f
				s.float = true
			}
		case jobfile.AggAvg:
			s.i--
			if v.kind == vInt {
				s.f -= float64(v.i)
			} else {
				s.f -= v.f
			}
		}
	}
	return c
}

// versions is what the head of a job with version_field keeps of the
// version it applied, to withdraw it when a revision comes: the key and
// the values the aggregates read, each with its field's name, so that a
// restore into a job whose aggregates read other fields finds them (a
// field it no longer has is left out; one it did not have reads as null).
func (lp *lineParser) versions() *engine.Versions[string, record] {
	names := make([]string, len(lp.fields))
	index := map[string]int{}
	for i, f := range lp.fields {
		names[i] = f.String()
		index[names[i]] = i
	}
	return &engine.Versions[string, record]{
		Keep: func(b []byte, key string, r record) []byte {
			b = enc.AppendString(b, key)
			b = enc.AppendUvarint(b, uint64(len(r.vals)))
			for i := range r.vals {
				b = enc.AppendString(b, names[i])
				b = appendValue(b, &r.vals[i])
			}
			return b
		},
		Back: func(b []byte) (string, record, error) {
			d := enc.NewDecoder(b)
			key := d.String()
			r := record{vals: make([]value, len(names))}
			for range d.Items(1 << 16) {
				name := d.String()
				var v value
				readValue(d, &v)
				if i, ok := index[name]; ok {
					r.vals[i] = v
				}
			}
			if d.Err() == nil && d.Len() != 0 {
				return "", r, fmt.Errorf("%d bytes after the values", d.Len())
			}
			return key, r, d.Err()
		},
	}
}

// appendValue writes what withdrawing v from count, sum and avg needs:
// whether it is null, and its number (exact as a decimal when it was).
func appendValue(b []byte, v *value) []byte {
	b = append(b, byte(v.kind))
	switch v.kind {
	case vInt:
		b = enc.AppendVarint(b, v.i)
	case vFloat:
		b = enc.AppendUvarint(b, math.Float64bits(v.f))
		b = enc.AppendBool(b, v.exact)
		if v.exact {
			b = enc.AppendVarint(b, v.dec)
			b = append(b, byte(v.scale))
		}
	}
	return b
}

func readValue(d *enc.Decoder, v *value) {
	v.kind = vkind(d.Count(255))
	switch v.kind {
	case vInt:
		v.i = d.Varint()
		v.f, v.dec, v.exact = float64(v.i), v.i, true
	case vFloat:
		v.f = math.Float64frombits(d.Uvarint())
		if v.exact = d.Bool(); v.exact {
			v.dec, v.scale = d.Varint(), int8(d.Count(255))
		}
	}
}
