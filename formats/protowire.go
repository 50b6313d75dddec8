package formats

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/internal/text"
)

// A Protobuf record is written as JSON straight from its wire bytes,
// guided by its message's descriptor, when it can be: parsing it into a
// dynamic message first costs ten times what the rest of reading a record
// does. The direct path writes exactly what appendProtoMessage writes of
// the parsed message; whatever it does not handle (a map field, a group, a
// proto2 default or closed enum, a singular message sent in parts to be
// merged, two members of a oneof, a wire type other than the field's, a
// payload that does not parse) it leaves to the library, which then reads
// the record or refuses it.

// errSlow: the direct path leaves the record to the library.
var errSlow = errors.New("read through the library")

// The well-known types the direct path writes as appendWellKnown does.
const (
	wkNone = iota
	wkTimestamp
	wkWrapper
)

// wirePlan is how one message type's records are written.
type wirePlan struct {
	slow   bool // the library reads it
	wk     int
	fields []wireField   // in the .proto's order
	small  []int16       // field index + 1 by number, for small numbers
	byNum  map[int32]int // field index by number, for the others
}

// wireField is a field of a wirePlan.
type wireField struct {
	fd   protoreflect.FieldDescriptor
	num  protowire.Number
	key  []byte // "name":
	kind protoreflect.Kind
	wire protowire.Type // its wire type (unpacked)
	list bool
	// presence: unset, it is null; else zero, its value unset.
	presence bool
	zero     []byte
	// peers are the indexes of the other fields of its oneof, if any.
	peers []int
	oneof bool
	msg   *wirePlan
}

// newWirePlan is the plan of md and of the messages it holds.
func newWirePlan(md protoreflect.MessageDescriptor, plans map[protoreflect.FullName]*wirePlan) *wirePlan {
	if p, ok := plans[md.FullName()]; ok {
		return p
	}
	p := &wirePlan{byNum: map[int32]int{}}
	plans[md.FullName()] = p
	if md.FullName().Parent() == "google.protobuf" {
		switch md.Name() {
		case "Timestamp":
			p.wk = wkTimestamp
		case "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value", "BoolValue", "StringValue", "BytesValue":
			p.wk = wkWrapper
		case "Duration", "Struct", "Value", "ListValue", "FieldMask", "Empty":
			p.slow = true
		}
	}
	if md.RequiredNumbers().Len() > 0 {
		p.slow = true
	}
	fs := md.Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		if fd.IsMap() || fd.Kind() == protoreflect.GroupKind || fd.HasDefault() ||
			fd.Kind() == protoreflect.EnumKind && fd.Enum().IsClosed() {
			p.slow = true
		}
		f := wireField{fd: fd, num: fd.Number(), kind: fd.Kind(), list: fd.IsList(), presence: fd.HasPresence()}
		f.key = append(text.AppendJSONString(nil, []byte(fd.Name())), ':')
		f.wire = wireType(fd.Kind())
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			f.oneof = true
			for j := range o.Fields().Len() {
				if peer := o.Fields().Get(j); peer != fd {
					f.peers = append(f.peers, peer.Index())
				}
			}
		}
		switch fd.Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			f.msg = newWirePlan(fd.Message(), plans)
		default:
			if !fd.IsList() && !fd.IsMap() {
				f.zero, _ = appendProtoValue(nil, fd, fd.Default(), 0)
			}
		}
		if n := int(fd.Number()); n < 256 {
			for len(p.small) <= n {
				p.small = append(p.small, 0)
			}
			p.small[n] = int16(i + 1)
		} else {
			p.byNum[int32(n)] = i
		}
		p.fields = append(p.fields, f)
	}
	return p
}

func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.VarintType
}

// index is the index of the field numbered num, or -1.
func (p *wirePlan) index(num protowire.Number) int {
	if int(num) < len(p.small) {
		return int(p.small[num]) - 1
	}
	if i, ok := p.byNum[int32(num)]; ok {
		return i
	}
	return -1
}

// wireSpan is where a field's last value is in a message's bytes, and how
// many times it came.
type wireSpan struct {
	start, end int32
	n          int32
	wire       protowire.Type
}

// wireState is the spans of the messages being written, one window of
// spans a level.
type wireState struct{ spans []wireSpan }

var wireStates = sync.Pool{New: func() any { return &wireState{spans: make([]wireSpan, 0, 64)} }}

// appendWire appends the message in src as JSON, or returns errSlow.
func (p *wirePlan) appendWire(b, src []byte, st *wireState, depth int) ([]byte, error) {
	if p.slow || depth > maxDepth || len(src) > math.MaxInt32 {
		return b, errSlow
	}
	base, n := len(st.spans), len(p.fields)
	st.spans = append(st.spans, make([]wireSpan, n)...)
	defer func() { st.spans = st.spans[:base] }()
	for i := 0; i < len(src); {
		num, typ, tl := protowire.ConsumeTag(src[i:])
		if tl < 0 {
			return b, errSlow
		}
		i += tl
		vl := protowire.ConsumeFieldValue(num, typ, src[i:])
		if vl < 0 {
			return b, errSlow
		}
		if fi := p.index(num); fi >= 0 {
			start := i
			if typ == protowire.BytesType {
				v, m := protowire.ConsumeBytes(src[i:])
				start = i + m - len(v)
			}
			sp := &st.spans[base+fi]
			sp.start, sp.end, sp.wire = int32(start), int32(i+vl), typ
			sp.n++
		}
		i += vl
	}
	switch p.wk {
	case wkTimestamp:
		return p.appendTimestamp(b, src, st.spans[base:base+n])
	case wkWrapper:
		if len(p.fields) != 1 {
			return b, errSlow
		}
		sp := st.spans[base]
		if sp.n == 0 {
			return append(b, p.fields[0].zero...), nil
		}
		return p.appendValue(b, &p.fields[0], src[sp.start:sp.end], sp.wire, st, depth)
	}
	b = append(b, '{')
	first := true
	var err error
	for fi := range p.fields {
		f := &p.fields[fi]
		sp := st.spans[base+fi]
		if f.oneof {
			if sp.n == 0 {
				continue
			}
			for _, peer := range f.peers {
				if st.spans[base+peer].n > 0 {
					return b, errSlow // the last one set wins: the library's to say
				}
			}
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		switch {
		case f.list:
			if b, err = p.appendList(b, f, src, sp, st, depth); err != nil {
				return b, err
			}
		case sp.n == 0:
			if f.presence {
				b = append(b, "null"...)
			} else {
				b = append(b, f.zero...)
			}
		case f.msg != nil && sp.n > 1:
			return b, errSlow // parts to merge
		default:
			if b, err = p.appendValue(b, f, src[sp.start:sp.end], sp.wire, st, depth); err != nil {
				return b, err
			}
		}
	}
	return append(b, '}'), nil
}

// appendList appends a repeated field's values: every occurrence, packed
// or not, in order.
func (p *wirePlan) appendList(b []byte, f *wireField, src []byte, sp wireSpan, st *wireState, depth int) ([]byte, error) {
	b = append(b, '[')
	if sp.n == 0 {
		return append(b, ']'), nil
	}
	first := true
	var err error
	for i := 0; i < len(src); {
		num, typ, tl := protowire.ConsumeTag(src[i:])
		i += tl
		vl := protowire.ConsumeFieldValue(num, typ, src[i:])
		if num != f.num {
			i += vl
			continue
		}
		v := src[i : i+vl]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		i += vl
		if typ == protowire.BytesType && f.wire != protowire.BytesType {
			// Packed.
			for len(v) > 0 {
				var k int
				switch f.wire {
				case protowire.VarintType:
					_, k = protowire.ConsumeVarint(v)
				case protowire.Fixed32Type:
					_, k = protowire.ConsumeFixed32(v)
				case protowire.Fixed64Type:
					_, k = protowire.ConsumeFixed64(v)
				default:
					return b, errSlow
				}
				if k < 0 {
					return b, errSlow
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				if b, err = p.appendValue(b, f, v[:k], f.wire, st, depth); err != nil {
					return b, err
				}
				v = v[k:]
			}
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		if b, err = p.appendValue(b, f, v, typ, st, depth); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendValue appends one value of f, v its bytes on the wire (a
// length-delimited one's content).
func (p *wirePlan) appendValue(b []byte, f *wireField, v []byte, typ protowire.Type, st *wireState, depth int) ([]byte, error) {
	if typ != f.wire {
		return b, errSlow
	}
	var x protoreflect.Value
	switch typ {
	case protowire.VarintType:
		u, k := protowire.ConsumeVarint(v)
		if k != len(v) {
			return b, errSlow
		}
		switch f.kind {
		case protoreflect.BoolKind:
			x = protoreflect.ValueOfBool(u != 0)
		case protoreflect.Int32Kind:
			x = protoreflect.ValueOfInt32(int32(u))
		case protoreflect.Sint32Kind:
			x = protoreflect.ValueOfInt32(int32(protowire.DecodeZigZag(u & math.MaxUint32)))
		case protoreflect.Uint32Kind:
			x = protoreflect.ValueOfUint32(uint32(u))
		case protoreflect.Int64Kind:
			x = protoreflect.ValueOfInt64(int64(u))
		case protoreflect.Sint64Kind:
			x = protoreflect.ValueOfInt64(protowire.DecodeZigZag(u))
		case protoreflect.Uint64Kind:
			x = protoreflect.ValueOfUint64(u)
		case protoreflect.EnumKind:
			x = protoreflect.ValueOfEnum(protoreflect.EnumNumber(int32(u)))
		default:
			return b, errSlow
		}
	case protowire.Fixed32Type:
		if len(v) != 4 {
			return b, errSlow
		}
		u := binary.LittleEndian.Uint32(v)
		switch f.kind {
		case protoreflect.Fixed32Kind:
			x = protoreflect.ValueOfUint32(u)
		case protoreflect.Sfixed32Kind:
			x = protoreflect.ValueOfInt32(int32(u))
		default:
			x = protoreflect.ValueOfFloat32(math.Float32frombits(u))
		}
	case protowire.Fixed64Type:
		if len(v) != 8 {
			return b, errSlow
		}
		u := binary.LittleEndian.Uint64(v)
		switch f.kind {
		case protoreflect.Fixed64Kind:
			x = protoreflect.ValueOfUint64(u)
		case protoreflect.Sfixed64Kind:
			x = protoreflect.ValueOfInt64(int64(u))
		default:
			x = protoreflect.ValueOfFloat64(math.Float64frombits(u))
		}
	case protowire.BytesType:
		switch f.kind {
		case protoreflect.StringKind:
			if !utf8.Valid(v) {
				return b, errSlow
			}
			return text.AppendJSONString(b, v), nil
		case protoreflect.BytesKind:
			return appendBase64(b, v), nil
		case protoreflect.MessageKind:
			return f.msg.appendWire(b, v, st, depth+1)
		}
		return b, errSlow
	default:
		return b, errSlow
	}
	return appendProtoValue(b, f.fd, x, depth)
}

// appendTimestamp appends a google.protobuf.Timestamp from its fields'
// spans, as appendWellKnown does.
func (p *wirePlan) appendTimestamp(b, src []byte, spans []wireSpan) ([]byte, error) {
	var sec, nanos int64
	for fi := range p.fields {
		f, sp := &p.fields[fi], spans[fi]
		if sp.n == 0 {
			continue
		}
		if sp.wire != protowire.VarintType || f.wire != protowire.VarintType {
			return b, errSlow
		}
		u, k := protowire.ConsumeVarint(src[sp.start:sp.end])
		if k < 0 {
			return b, errSlow
		}
		switch f.fd.Name() {
		case "seconds":
			sec = int64(u)
		case "nanos":
			nanos = int64(int32(u))
		}
	}
	if nanos < 0 || nanos >= 1e9 || sec < -62135596800 || sec > 253402300799 {
		return b, errSlow
	}
	return appendRFC3339(b, sec, nanos), nil
}

// appendRFC3339 appends a Timestamp's time (seconds within years 1 to
// 9999, nanos within a second) as appendTime does, in RFC 3339 with all its
// digits, without time's layouts (a fifth of a record's cost).
func appendRFC3339(b []byte, sec, nanos int64) []byte {
	t := time.Unix(sec, 0).UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b = append(b, '"')
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	b = appendDigits(b, s, 2)
	if nanos > 0 {
		digits := 9
		for nanos%10 == 0 {
			nanos /= 10
			digits--
		}
		b = append(b, '.')
		b = appendDigits(b, int(nanos), digits)
	}
	return append(b, 'Z', '"')
}

// appendDigits appends v, at least width digits, zeros before.
func appendDigits(b []byte, v, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v >= 10 || width > 1 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		width--
	}
	i--
	buf[i] = byte('0' + v)
	return append(b, buf[i:]...)
}
