package formats

import (
	"encoding/binary"
	"errors"
	"math"
	"sort"
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
// the parsed message; whatever it does not handle (a group, a
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
	slow bool // the library reads it
	wk   int
	// tsFields: a Timestamp whose fields 1 and 2 are its seconds and
	// nanos, as google/protobuf/timestamp.proto numbers them.
	tsFields bool
	fields   []wireField   // in the .proto's order
	small    []int16       // field index + 1 by number, for small numbers
	byNum    map[int32]int // field index by number, for the others
}

// wireField is a field of a wirePlan.
type wireField struct {
	fd   protoreflect.FieldDescriptor
	name string // fd's
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
	// mapKey and mapValue are a map's entries' fields.
	mapKey, mapValue *wireField
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
		if fd.Kind() == protoreflect.GroupKind || fd.HasDefault() || fd.Kind() == protoreflect.EnumKind && fd.Enum().IsClosed() ||
			fd.IsMap() && (fd.MapValue().Kind() == protoreflect.EnumKind && fd.MapValue().Enum().IsClosed()) {
			p.slow = true
		}
		f := newWireField(fd, plans)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			f.oneof = true
			for j := range o.Fields().Len() {
				if peer := o.Fields().Get(j); peer != fd {
					f.peers = append(f.peers, peer.Index())
				}
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
	if p.wk == wkTimestamp {
		sec, nanos := p.index(1), p.index(2)
		p.tsFields = sec >= 0 && nanos >= 0 && p.fields[sec].name == "seconds" && p.fields[nanos].name == "nanos" &&
			p.fields[sec].kind == protoreflect.Int64Kind && p.fields[nanos].kind == protoreflect.Int32Kind
	}
	return p
}

// newWireField is the field fd of a plan (or a map's key or value).
func newWireField(fd protoreflect.FieldDescriptor, plans map[protoreflect.FullName]*wirePlan) wireField {
	f := wireField{fd: fd, name: string(fd.Name()), num: fd.Number(), kind: fd.Kind(), list: fd.IsList(), presence: fd.HasPresence()}
	f.key = append(text.AppendJSONString(nil, []byte(fd.Name())), ':')
	f.wire = wireType(fd.Kind())
	switch {
	case fd.IsMap():
		k, v := newWireField(fd.MapKey(), plans), newWireField(fd.MapValue(), plans)
		f.mapKey, f.mapValue = &k, &v
	case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
		f.msg = newWirePlan(fd.Message(), plans)
	case !fd.IsList():
		f.zero, _ = appendProtoValue(nil, fd, fd.Default(), 0)
	}
	return f
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
type wireState struct {
	spans   []wireSpan
	entries []wireEntry
	// sec and clock are the second last written by appendRFC3339 and its
	// text: a topic's records are mostly of a few seconds.
	sec   int64
	clock []byte
	// scratch is where a value that is only checked is written.
	scratch []byte
}

// wireEntry is a map's entry: its key and its value on the wire.
type wireEntry struct {
	key, value []byte
	k          protoreflect.Value // a key not a string's
	hasValue   bool
}

var wireStates = sync.Pool{New: func() any { return &wireState{spans: make([]wireSpan, 0, 64)} }}

// appendWire appends the message in src as JSON, or returns errSlow.
func (p *wirePlan) appendWire(b, src []byte, st *wireState, depth int) ([]byte, error) {
	if p.slow || depth > maxDepth || len(src) > math.MaxInt32 {
		return b, errSlow
	}
	if p.wk == wkTimestamp {
		return p.appendTimestamp(b, src, st)
	}
	base := len(st.spans)
	defer func() { st.spans = st.spans[:base] }()
	if err := p.scan(src, st); err != nil {
		return b, err
	}
	switch p.wk {
	case wkWrapper:
		if len(p.fields) != 1 {
			return b, errSlow
		}
		sp := st.spans[base]
		if sp.n == 0 {
			return append(b, p.fields[0].zero...), nil
		}
		return appendWireValue(b, &p.fields[0], src[sp.start:sp.end], sp.wire, st, depth)
	}
	b = append(b, '{')
	first := true
	var err error
	for fi := range p.fields {
		f := &p.fields[fi]
		sp := st.spans[base+fi]
		if skip, slow := p.oneofUnset(st, base, fi); slow {
			return b, errSlow
		} else if skip {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		switch {
		case f.mapKey != nil:
			if b, err = appendWireMap(b, f, src, sp, st, depth); err != nil {
				return b, err
			}
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
			if b, err = appendWireValue(b, f, src[sp.start:sp.end], sp.wire, st, depth); err != nil {
				return b, err
			}
		}
	}
	return append(b, '}'), nil
}

// oneofUnset reports whether the field fi, a member of a oneof, is not
// written, being unset; slow if another member is set too: the last one
// set wins, and it is the library's to say which.
func (p *wirePlan) oneofUnset(st *wireState, base, fi int) (unset, slow bool) {
	f := &p.fields[fi]
	if !f.oneof {
		return false, false
	}
	if st.spans[base+fi].n == 0 {
		return true, false
	}
	for _, peer := range f.peers {
		if st.spans[base+peer].n > 0 {
			return false, true
		}
	}
	return false, false
}

// scan notes where each field of the message in src is (st's spans from
// their length before, one a field), or returns errSlow.
func (p *wirePlan) scan(src []byte, st *wireState) error {
	base := len(st.spans)
	st.spans = append(st.spans, make([]wireSpan, len(p.fields))...)
	for i := 0; i < len(src); {
		num, typ, tl := protowire.ConsumeTag(src[i:])
		if tl < 0 {
			return errSlow
		}
		i += tl
		vl := protowire.ConsumeFieldValue(num, typ, src[i:])
		if vl < 0 {
			return errSlow
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
	return nil
}

// appendList appends a repeated field's values: every occurrence, packed
// or not, in order.
func (p *wirePlan) appendList(b []byte, f *wireField, src []byte, sp wireSpan, st *wireState, depth int) ([]byte, error) {
	b = append(b, '[')
	if sp.n == 0 {
		return append(b, ']'), nil
	}
	first := true
	err := listValues(f, src, func(v []byte, typ protowire.Type) (err error) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b, err = appendWireValue(b, f, v, typ, st, depth)
		return err
	})
	if err != nil {
		return b, err
	}
	return append(b, ']'), nil
}

// listValues calls each with every value of the repeated field f in the
// message in src (its bytes on the wire, a length-delimited one's
// content), packed or not, in order, until each fails.
func listValues(f *wireField, src []byte, each func(v []byte, typ protowire.Type) error) error {
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
					return errSlow
				}
				if k < 0 {
					return errSlow
				}
				if err := each(v[:k], f.wire); err != nil {
					return err
				}
				v = v[k:]
			}
			continue
		}
		if err := each(v, typ); err != nil {
			return err
		}
	}
	return nil
}

// appendValue appends one value of f, v its bytes on the wire (a
// length-delimited one's content).
func appendWireValue(b []byte, f *wireField, v []byte, typ protowire.Type, st *wireState, depth int) ([]byte, error) {
	if typ != f.wire {
		return b, errSlow
	}
	if typ == protowire.BytesType {
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
	}
	x, err := scalarValue(f, v, typ)
	if err != nil {
		return b, err
	}
	return appendProtoValue(b, f.fd, x, depth)
}

// scalarValue is a scalar's value from its bytes on the wire (not a
// string's, bytes' or message's), as the library reads it.
func scalarValue(f *wireField, v []byte, typ protowire.Type) (protoreflect.Value, error) {
	var x protoreflect.Value
	b := x // what is returned with errSlow
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
	default:
		return b, errSlow
	}
	return x, nil
}

// appendWireMap appends a map field as an object, its keys sorted, the
// last entry of a key kept, as appendProtoMap writes the library's map.
func appendWireMap(b []byte, f *wireField, src []byte, sp wireSpan, st *wireState, depth int) ([]byte, error) {
	b = append(b, '{')
	if sp.n == 0 {
		return append(b, '}'), nil
	}
	base := len(st.entries)
	defer func() { st.entries = st.entries[:base] }()
	kf, vf := f.mapKey, f.mapValue
	for i := 0; i < len(src); {
		num, typ, tl := protowire.ConsumeTag(src[i:])
		i += tl
		vl := protowire.ConsumeFieldValue(num, typ, src[i:])
		entry := src[i : i+vl]
		i += vl
		if num != f.num {
			continue
		}
		if typ != protowire.BytesType {
			return b, errSlow
		}
		entry, _ = protowire.ConsumeBytes(entry)
		var e wireEntry
		for j := 0; j < len(entry); {
			num, typ, tl := protowire.ConsumeTag(entry[j:])
			if tl < 0 {
				return b, errSlow
			}
			j += tl
			vl := protowire.ConsumeFieldValue(num, typ, entry[j:])
			if vl < 0 {
				return b, errSlow
			}
			v := entry[j : j+vl]
			j += vl
			if typ == protowire.BytesType {
				v, _ = protowire.ConsumeBytes(v)
			}
			switch num {
			case 1:
				if typ != kf.wire {
					return b, errSlow
				}
				e.key = v
			case 2:
				if typ != vf.wire {
					return b, errSlow
				}
				e.value, e.hasValue = v, true
			}
		}
		if kf.kind == protoreflect.StringKind {
			if !utf8.Valid(e.key) {
				return b, errSlow
			}
		} else if e.key == nil {
			e.k = kf.fd.Default()
		} else {
			k, err := scalarValue(kf, e.key, kf.wire)
			if err != nil {
				return b, err
			}
			e.k = k
		}
		st.entries = append(st.entries, e)
	}
	entries := st.entries[base:]
	less := func(x, y *wireEntry) bool {
		switch kf.kind {
		case protoreflect.StringKind:
			return string(x.key) < string(y.key)
		case protoreflect.BoolKind:
			return !x.k.Bool() && y.k.Bool()
		case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
			return x.k.Uint() < y.k.Uint()
		}
		return x.k.Int() < y.k.Int()
	}
	sort.SliceStable(entries, func(i, j int) bool { return less(&entries[i], &entries[j]) })
	n := len(entries)
	first := true
	var err error
	for i := 0; i < n; i++ {
		e := st.entries[base+i]
		if i+1 < n && !less(&e, &st.entries[base+i+1]) {
			continue // a later entry of the same key wins
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		if kf.kind == protoreflect.StringKind {
			b = text.AppendJSONString(b, e.key)
		} else {
			b = text.AppendJSONString(b, []byte(e.k.String()))
		}
		b = append(b, ':')
		switch {
		case e.hasValue:
			b, err = appendWireValue(b, vf, e.value, vf.wire, st, depth)
		case vf.msg != nil:
			b, err = vf.msg.appendWire(b, nil, st, depth+1)
		default:
			b = append(b, vf.zero...)
		}
		if err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendTimestamp appends the google.protobuf.Timestamp in src as
// appendWellKnown does, or returns errSlow. A message of its two fields
// alone, each a varint (what every writer writes), is read without a
// scan.
func (p *wirePlan) appendTimestamp(b, src []byte, st *wireState) ([]byte, error) {
	sec, nanos, err := p.timestamp(src, st)
	if err != nil {
		return b, err
	}
	return st.appendRFC3339(b, sec, nanos), nil
}

// timestamp is the google.protobuf.Timestamp in src, or errSlow.
func (p *wirePlan) timestamp(src []byte, st *wireState) (sec, nanos int64, err error) {
	sec, nanos, ok := timestampFields(src)
	if !ok || !p.tsFields {
		base := len(st.spans)
		defer func() { st.spans = st.spans[:base] }()
		if err := p.scan(src, st); err != nil {
			return 0, 0, err
		}
		sec, nanos = 0, 0
		for fi := range p.fields {
			f, sp := &p.fields[fi], st.spans[base+fi]
			if sp.n == 0 {
				continue
			}
			if sp.wire != protowire.VarintType || f.wire != protowire.VarintType {
				return 0, 0, errSlow
			}
			u, k := protowire.ConsumeVarint(src[sp.start:sp.end])
			if k < 0 {
				return 0, 0, errSlow
			}
			switch f.name {
			case "seconds":
				sec = int64(u)
			case "nanos":
				nanos = int64(int32(u))
			}
		}
	}
	if nanos < 0 || nanos >= 1e9 || sec < -62135596800 || sec > 253402300799 {
		return 0, 0, errSlow
	}
	return sec, nanos, nil
}

// timestampFields reads a Timestamp's seconds (field 1) and nanos (field
// 2) when src holds nothing but them, each a varint, the last of each
// kept as a scan keeps it; not ok for anything else.
func timestampFields(src []byte) (sec, nanos int64, ok bool) {
	for i := 0; i < len(src); {
		tag := src[i]
		if tag != 1<<3|byte(protowire.VarintType) && tag != 2<<3|byte(protowire.VarintType) {
			return 0, 0, false
		}
		u, k := protowire.ConsumeVarint(src[i+1:])
		if k < 0 {
			return 0, 0, false
		}
		if tag>>3 == 1 {
			sec = int64(u)
		} else {
			nanos = int64(int32(u))
		}
		i += 1 + k
	}
	return sec, nanos, true
}

// appendRFC3339 appends a Timestamp's time (seconds within years 1 to
// 9999, nanos within a second) as appendTime does, in RFC 3339 with all its
// digits, without time's layouts (a fifth of a record's cost).
func appendRFC3339(b []byte, sec, nanos int64) []byte {
	return appendFraction(appendSecond(append(b, '"'), sec), nanos)
}

// appendRFC3339 is appendRFC3339 with the text of st's last second kept.
func (st *wireState) appendRFC3339(b []byte, sec, nanos int64) []byte {
	if st.clock == nil || st.sec != sec {
		st.clock, st.sec = appendSecond(st.clock[:0], sec), sec
	}
	return appendFraction(append(append(b, '"'), st.clock...), nanos)
}

// appendFraction appends a Timestamp's nanos as the fraction of its
// second (none when zero, its trailing zeros dropped), its zone and the
// closing quote.
func appendFraction(b []byte, nanos int64) []byte {
	if ms := nanos / 1e6; nanos%1e6 == 0 && ms%10 != 0 {
		// Milliseconds, the last digit not zero: what most are.
		return append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
	}
	if nanos > 0 {
		digits := 9
		for nanos%10 == 0 {
			nanos /= 10
			digits--
		}
		b = append(b, '.')
		b = text.AppendPadded(b, nanos, digits)
	}
	return append(b, 'Z', '"')
}

// appendSecond appends the second sec as RFC 3339 without its fraction
// and zone: 2006-01-02T15:04:05.
func appendSecond(b []byte, sec int64) []byte {
	t := time.Unix(sec, 0).UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b = text.AppendPadded(b, int64(y), 4)
	b = append(b, '-')
	b = text.AppendPadded(b, int64(mo), 2)
	b = append(b, '-')
	b = text.AppendPadded(b, int64(d), 2)
	b = append(b, 'T')
	b = text.AppendPadded(b, int64(h), 2)
	b = append(b, ':')
	b = text.AppendPadded(b, int64(mi), 2)
	b = append(b, ':')
	return text.AppendPadded(b, int64(s), 2)
}
