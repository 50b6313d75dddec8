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
	if s.direct == nil || s.direct.noTree {
		return nil
	}
	v, rest, ok := s.direct.tree(tr, payload, s.direct.root, 0)
	if !ok || len(rest) > 0 {
		return nil
	}
	return v
}

// String implements jsontree.StringFinder.
func (d *ocfDecoder) String(value []byte, name string) ([]byte, bool) {
	return d.t.stringField(value, name)
}

// String implements jsontree.StringFinder.
func (d *avroDecoder) String(value []byte, name string) ([]byte, bool) {
	if d.reg != nil || d.fixed == nil || d.fixed.direct == nil {
		return nil, false // framed: the record's schema is looked up when it is read
	}
	return d.fixed.direct.stringField(value, name)
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

// text is the value of n in src, written by value and parsed alone.
func (t *transcoder) text(tr *jsontree.Tree, src []byte, n *avro.SchemaNode, depth int) (*fastjson.Value, []byte, bool) {
	b, rest, err := t.value(tr.Slab(), src, n, depth)
	if err != nil {
		return nil, src, false
	}
	v := tr.Scalar(b)
	return v, rest, v != nil
}

// tree builds the value of n in src, as value writes it.
func (t *transcoder) tree(tr *jsontree.Tree, src []byte, n *avro.SchemaNode, depth int) (*fastjson.Value, []byte, bool) {
	if depth > maxDepth {
		return nil, src, false
	}
	var v *fastjson.Value
	switch n.Type {
	case "null":
		return tr.Null(), src, true
	case "boolean":
		if len(src) < 1 {
			return nil, src, false
		}
		v, src = tr.Scalar(strconv.AppendBool(tr.Slab(), src[0] == 1)), src[1:]
	case "int", "long":
		x, rest, err := varlong(src)
		if err != nil || n.Type == "int" && (x < math.MinInt32 || x > math.MaxInt32) {
			return nil, src, false
		}
		v, src = tr.Scalar(appendLong(tr.Slab(), x, n.LogicalType)), rest
	case "float":
		if len(src) < 4 {
			return nil, src, false
		}
		f := float64(math.Float32frombits(binary.LittleEndian.Uint32(src)))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			v = tr.Null()
		} else {
			v = tr.Scalar(strconv.AppendFloat(tr.Slab(), f, 'g', -1, 32))
		}
		src = src[4:]
	case "double":
		if len(src) < 8 {
			return nil, src, false
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(src))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			v = tr.Null()
		} else {
			v = tr.Scalar(appendDouble(tr.Slab(), f))
		}
		src = src[8:]
	case "string", "bytes":
		data, rest, err := lengthPrefixed(src)
		if err != nil {
			return nil, src, false
		}
		if n.Type == "string" {
			v = tr.String(data)
		} else {
			v = tr.Scalar(appendBytes(tr.Slab(), data, n))
		}
		src = rest
	case "fixed":
		if n.Size < 0 || len(src) < n.Size {
			return nil, src, false
		}
		v, src = tr.Scalar(appendBytes(tr.Slab(), src[:n.Size], n)), src[n.Size:]
	case "enum":
		i, rest, err := varlong(src)
		if err != nil || i < 0 || i >= int64(len(n.Symbols)) {
			return nil, src, false
		}
		v, src = tr.String([]byte(n.Symbols[i])), rest
	case "union":
		i, rest, err := varlong(src)
		if err != nil || i < 0 || i >= int64(len(n.Branches)) {
			return nil, src, false
		}
		return t.tree(tr, rest, &n.Branches[i], depth+1)
	case "record", "error":
		obj := tr.Object()
		keys := t.keys[n]
		for i := range n.Fields {
			f := &n.Fields[i]
			if i > 0 {
				tr.Add(1)
			}
			tr.Add(len(keys[i]))
			var ok bool
			if v, src, ok = t.tree(tr, src, &f.Type, depth+1); !ok {
				return nil, src, false
			}
			obj.Set(f.Name, v)
		}
		return obj, src, true
	case "array":
		if n.Items == nil || n.Items.Type == "null" {
			return t.text(tr, src, n, depth)
		}
		arr := tr.Array()
		k := 0
		rest, err := t.items(src, n, func(_, src []byte, item *avro.SchemaNode) ([]byte, error) {
			if k > 0 {
				tr.Add(1)
			}
			v, rest, ok := t.tree(tr, src, item, depth+1)
			if !ok {
				return rest, errAvro
			}
			arr.SetArrayItem(k, v)
			k++
			return rest, nil
		})
		return arr, rest, err == nil
	case "map":
		return t.text(tr, src, n, depth)
	default:
		if ref, ok := t.named[n.Type]; ok && ref != n {
			return t.tree(tr, src, ref, depth+1)
		}
		return nil, src, false
	}
	return v, src, v != nil
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
	base, n := len(st.spans), len(p.fields)
	defer func() { st.spans = st.spans[:base] }()
	if p.scan(src, st) != nil {
		return nil
	}
	switch p.wk {
	case wkTimestamp:
		b, err := p.appendTimestamp(tr.Slab(), src, st.spans[base:base+n])
		if err != nil {
			return nil
		}
		return tr.Scalar(b)
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
		obj.Set(string(f.fd.Name()), v)
	}
	return obj
}

// treeWireValue builds one value of f as appendWireValue writes it, or
// returns nil.
func treeWireValue(tr *jsontree.Tree, f *wireField, v []byte, typ protowire.Type, st *wireState, depth int) *fastjson.Value {
	if typ != f.wire {
		return nil
	}
	if typ == protowire.BytesType {
		switch f.kind {
		case protoreflect.StringKind:
			if !utf8.Valid(v) {
				return nil
			}
			return tr.String(v)
		case protoreflect.BytesKind:
			return tr.Scalar(appendBase64(tr.Slab(), v))
		case protoreflect.MessageKind:
			return f.msg.tree(tr, v, st, depth+1)
		}
		return nil
	}
	x, err := scalarValue(f, v, typ)
	if err != nil {
		return nil
	}
	b, err := appendProtoValue(tr.Slab(), f.fd, x, depth)
	if err != nil {
		return nil
	}
	return tr.Scalar(b)
}
