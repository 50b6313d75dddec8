package formats

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/twmb/avro"
	"github.com/valyala/fastjson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/internal/jsontree"
	"github.com/weirstream/weir/internal/text"
)

// Avro and Protobuf records build the object the line rules read in a
// jsontree.Tree, straight from their bytes (jsontree.Builder): each value
// is what parsing the text their AppendJSON writes would make of it (a
// scalar's text is written by the same code), and the record's text is
// neither written nor parsed. A map (whose keys may repeat) and an Avro
// array of nulls (which takes no bytes) are written as text by the same
// code and parsed alone. A record that does not decode, or that the
// direct path leaves to the library, is left to AppendJSON.

var (
	_ jsontree.Builder      = (*avroDecoder)(nil)
	_ jsontree.Builder      = (*protoDecoder)(nil)
	_ jsontree.StringFinder = (*avroDecoder)(nil)
	_ jsontree.StringFinder = (*ocfDecoder)(nil)
	_ jsontree.StringFinder = (*protoDecoder)(nil)
)

// Build implements jsontree.Builder.
func (d *avroDecoder) Build(tr *jsontree.Tree, value []byte) *fastjson.Value {
	s := d.fixed
	payload := value
	if d.reg != nil {
		id, p, err := frame(value)
		if err != nil {
			return nil
		}
		payload = p
		if s, err = d.schema(id); err != nil {
			return nil
		}
	}
	if s.direct == nil {
		return nil
	}
	return s.direct.build(tr, payload)
}

// build builds the record in src, which must hold it exactly, or returns
// nil.
func (t *transcoder) build(tr *jsontree.Tree, src []byte) *fastjson.Value {
	if t.noTree {
		return nil
	}
	v, rest, ok := t.tree(tr, src, t.troot, 0)
	if !ok || len(rest) > 0 {
		return nil
	}
	return v
}

// String implements jsontree.StringFinder.
func (d *ocfDecoder) String(value []byte, name string) ([]byte, bool) {
	return d.t.stringField(value, name)
}

// String implements jsontree.StringFinder. A framed record's schema must
// be the one read last: the registry is asked when a record is read, not
// ahead of it.
func (d *avroDecoder) String(value []byte, name string) ([]byte, bool) {
	s, payload := d.fixed, value
	if d.reg != nil {
		id, p, err := frame(value)
		if err != nil {
			return nil, false
		}
		var ok bool
		if s, ok = d.byID.peek(id); !ok {
			return nil, false
		}
		payload = p
	}
	if s == nil || s.direct == nil {
		return nil, false
	}
	return s.direct.stringField(payload, name)
}

// String implements jsontree.StringFinder, as avroDecoder's does: a
// framed record of its schema's first message, the schema read last.
func (d *protoDecoder) String(value []byte, name string) ([]byte, bool) {
	m, payload := d.fixed, value
	if d.reg != nil {
		id, p, err := frame(value)
		if err != nil {
			return nil, false
		}
		idx, p, err := messageIndexes(p)
		if err != nil || idx != nil {
			return nil, false
		}
		s, ok := d.byID.peek(id)
		if !ok || s.first == nil {
			return nil, false
		}
		m, payload = s.first, p
	}
	if m == nil || m.plan.slow {
		return nil, false
	}
	return m.plan.stringField(payload, name)
}

// stringField is the message in src's top-level string field name (its
// last value, as a message read keeps it), reading past the others.
func (p *wirePlan) stringField(src []byte, name string) ([]byte, bool) {
	fi := -1
	for i := range p.fields {
		if f := &p.fields[i]; f.name == name && f.kind == protoreflect.StringKind && !f.list {
			fi = i
		}
	}
	if fi < 0 {
		return nil, false
	}
	var s []byte
	found := false
	for i := 0; i < len(src); {
		num, typ, n := protowire.ConsumeTag(src[i:])
		if n < 0 {
			return nil, false
		}
		i += n
		if num == p.fields[fi].num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(src[i:])
			if m < 0 {
				return nil, false
			}
			s, found = v, true
			i += m
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, src[i:])
		if m < 0 {
			return nil, false
		}
		i += m
	}
	return s, found
}

// stringField is the record in src's top-level field name, if it is a
// string (or a union's string), reading past the fields before it.
func (t *transcoder) stringField(src []byte, name string) ([]byte, bool) {
	root := t.root
	for i := range root.Fields {
		f := &root.Fields[i]
		if f.Name != name {
			var err error
			if src, err = t.skip(src, &f.Type, 1); err != nil {
				return nil, false
			}
			continue
		}
		n := &f.Type
		if n.Type == "union" {
			b, rest, err := varlong(src)
			if err != nil || b < 0 || b >= int64(len(n.Branches)) {
				return nil, false
			}
			n, src = &n.Branches[b], rest
		}
		if n.Type != "string" {
			return nil, false
		}
		s, _, err := lengthPrefixed(src)
		return s, err == nil
	}
	return nil, false
}

// tkind is how tree builds a value of a schema node.
type tkind uint8

const (
	// tText: written as its text by value, and that text parsed alone
	// (enums, floats, bytes, fixed, maps, arrays of nulls, and the longs
	// whose logical types value writes as something else than their
	// digits).
	tText tkind = iota
	tNull
	tBool
	tInt  // an int: its digits, within the range of an int
	tLong // a long (milliseconds, or no logical type): its digits
	tDouble
	tString
	tRecord
	tUnion
	tArray
	tRef // a reference to a named type, one level deeper as value counts it
)

// tnode is a schema node compiled for tree: what to do with its values
// decided once, not at every value.
type tnode struct {
	kind     tkind
	n        *avro.SchemaNode
	fields   []tfield
	branches []*tnode
	items    *tnode // an array's
	ref      *tnode // a reference's type
}

type tfield struct {
	name string
	key  int // the length of its JSON key ("name":)
	t    *tnode
}

// compile is n compiled for tree; memo holds the nodes compiled so far,
// so that a recursive type is compiled once and refers to itself.
func (t *transcoder) compile(n *avro.SchemaNode, memo map[*avro.SchemaNode]*tnode) *tnode {
	if c, ok := memo[n]; ok {
		return c
	}
	c := &tnode{n: n}
	memo[n] = c
	switch n.Type {
	case "null":
		c.kind = tNull
	case "boolean":
		c.kind = tBool
	case "int", "long":
		switch n.LogicalType {
		case "timestamp-micros", "local-timestamp-micros", "timestamp-nanos", "local-timestamp-nanos", "date", "time-micros":
		default:
			c.kind = tLong
			if n.Type == "int" {
				c.kind = tInt
			}
		}
	case "double":
		c.kind = tDouble
	case "string":
		c.kind = tString
	case "union":
		c.kind = tUnion
		for i := range n.Branches {
			c.branches = append(c.branches, t.compile(&n.Branches[i], memo))
		}
	case "record", "error":
		c.kind = tRecord
		keys := t.keys[n]
		for i := range n.Fields {
			c.fields = append(c.fields, tfield{name: n.Fields[i].Name, key: len(keys[i]), t: t.compile(&n.Fields[i].Type, memo)})
		}
	case "array":
		if n.Items != nil && n.Items.Type != "null" {
			c.kind, c.items = tArray, t.compile(n.Items, memo)
		}
	case "float", "bytes", "fixed", "enum", "map":
	default:
		if ref, ok := t.named[n.Type]; ok && ref != n {
			c.kind, c.ref = tRef, t.compile(ref, memo)
		}
	}
	return c
}

// tree builds the value of n in src, as value writes it: a record's
// fields and an array's items one by one, strings, numbers, booleans and
// nulls made from their bytes, any other value written as its text by
// value and parsed.
func (t *transcoder) tree(tr *jsontree.Tree, src []byte, n *tnode, depth int) (*fastjson.Value, []byte, bool) {
	if depth > maxDepth {
		return nil, src, false
	}
	switch n.kind {
	case tString:
		data, rest, err := lengthPrefixed(src)
		if err != nil {
			return nil, src, false
		}
		if plainText(data) {
			return tr.String(data), rest, true
		}
		v := tr.Scalar(text.AppendJSONString(tr.Slab(), data))
		return v, rest, v != nil
	case tInt, tLong:
		x, rest, err := varlong(src)
		if err != nil || n.kind == tInt && (x < math.MinInt32 || x > math.MaxInt32) {
			return nil, src, false
		}
		return tr.Number(strconv.AppendInt(tr.Slab(), x, 10)), rest, true
	case tDouble:
		if len(src) < 8 {
			return nil, src, false
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(src))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return tr.Null(), src[8:], true
		}
		return tr.Number(appendDouble(tr.Slab(), f)), src[8:], true
	case tBool:
		if len(src) < 1 {
			return nil, src, false
		}
		// As the library and Java's reference read it: only 1 is true.
		return tr.Bool(src[0] == 1), src[1:], true
	case tNull:
		return tr.Null(), src, true
	case tUnion:
		i, rest, err := varlong(src)
		if err != nil || i < 0 || i >= int64(len(n.branches)) {
			return nil, src, false
		}
		return t.tree(tr, rest, n.branches[i], depth+1)
	case tRef:
		return t.tree(tr, src, n.ref, depth+1)
	case tRecord:
		obj := tr.Object()
		tr.Add(max(len(n.fields)-1, 0)) // the commas
		for i := range n.fields {
			f := &n.fields[i]
			tr.Add(f.key)
			v, rest, ok := t.tree(tr, src, f.t, depth+1)
			if !ok {
				return nil, src, false
			}
			obj.Set(f.name, v)
			src = rest
		}
		return obj, src, true
	case tArray:
		arr := tr.Array()
		k := 0
		rest, err := t.items(src, n.n, func(_, src []byte, _ *avro.SchemaNode) ([]byte, error) {
			if k > 0 {
				tr.Add(1)
			}
			v, rest, ok := t.tree(tr, src, n.items, depth+1)
			if !ok {
				return rest, errAvro
			}
			arr.SetArrayItem(k, v)
			k++
			return rest, nil
		})
		return arr, rest, err == nil
	}
	b, rest, err := t.value(tr.Slab(), src, n.n, depth)
	if err != nil {
		return nil, src, false
	}
	v := tr.Scalar(b)
	return v, rest, v != nil
}

// plainText says whether s is its own JSON text between quotes: printable
// ASCII without a quote or a backslash.
func plainText(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Build implements jsontree.Builder.
func (d *protoDecoder) Build(tr *jsontree.Tree, value []byte) *fastjson.Value {
	m, payload, err := d.message(value)
	if err != nil {
		return nil
	}
	st := wireStates.Get().(*wireState)
	v := m.plan.tree(tr, payload, st, 0)
	wireStates.Put(st)
	return v
}

// tree builds the message in src as appendWire writes it, or returns nil.
func (p *wirePlan) tree(tr *jsontree.Tree, src []byte, st *wireState, depth int) *fastjson.Value {
	if p.slow || depth > maxDepth || len(src) > math.MaxInt32 {
		return nil
	}
	if p.wk == wkTimestamp {
		b, err := p.appendTimestamp(tr.Slab(), src, st)
		if err != nil {
			return nil
		}
		// Digits and punctuation between quotes: a string without escapes.
		return tr.Quoted(b)
	}
	base := len(st.spans)
	defer func() { st.spans = st.spans[:base] }()
	if p.scan(src, st) != nil {
		return nil
	}
	switch p.wk {
	case wkWrapper:
		if len(p.fields) != 1 {
			return nil
		}
		sp := st.spans[base]
		if sp.n == 0 {
			return tr.Scalar(append(tr.Slab(), p.fields[0].zero...))
		}
		return treeWireValue(tr, &p.fields[0], src[sp.start:sp.end], sp.wire, st, depth)
	}
	obj := tr.Object()
	first := true
	for fi := range p.fields {
		f := &p.fields[fi]
		sp := st.spans[base+fi]
		if skip, slow := p.oneofUnset(st, base, fi); slow {
			return nil
		} else if skip {
			continue
		}
		if !first {
			tr.Add(1)
		}
		first = false
		tr.Add(len(f.key))
		var v *fastjson.Value
		switch {
		case f.mapKey != nil:
			b, err := appendWireMap(tr.Slab(), f, src, sp, st, depth)
			if err != nil {
				return nil
			}
			v = tr.Scalar(b)
		case f.list:
			arr, k := tr.Array(), 0
			if sp.n > 0 && listValues(f, src, func(b []byte, typ protowire.Type) error {
				x := treeWireValue(tr, f, b, typ, st, depth)
				if x == nil {
					return errSlow
				}
				if k > 0 {
					tr.Add(1)
				}
				arr.SetArrayItem(k, x)
				k++
				return nil
			}) != nil {
				return nil
			}
			v = arr
		case sp.n == 0:
			if f.presence {
				v = tr.Null()
			} else {
				v = tr.Scalar(append(tr.Slab(), f.zero...))
			}
		case f.msg != nil && sp.n > 1:
			return nil
		default:
			v = treeWireValue(tr, f, src[sp.start:sp.end], sp.wire, st, depth)
		}
		if v == nil {
			return nil
		}
		obj.Set(f.name, v)
	}
	return obj
}

// treeWireValue builds one value of f as appendWireValue writes it: a
// message's fields one by one, any other value written as its text by
// appendWireValue; or returns nil.
func treeWireValue(tr *jsontree.Tree, f *wireField, v []byte, typ protowire.Type, st *wireState, depth int) *fastjson.Value {
	if typ == f.wire {
		switch f.kind {
		case protoreflect.MessageKind:
			return f.msg.tree(tr, v, st, depth+1)
		case protoreflect.StringKind:
			if plainText(v) {
				return tr.String(v)
			}
		case protoreflect.DoubleKind:
			if len(v) != 8 {
				return nil
			}
			x := math.Float64frombits(binary.LittleEndian.Uint64(v))
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return tr.Null()
			}
			return tr.Number(appendDouble(tr.Slab(), x))
		}
	}
	b, err := appendWireValue(tr.Slab(), f, v, typ, st, depth)
	if err != nil {
		return nil
	}
	return tr.Scalar(b)
}
