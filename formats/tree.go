package formats

import (
	"math"

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
	v, rest, ok := t.tree(tr, src, t.root, 0)
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

// tree builds the value of n in src, as value writes it: a record's
// fields and an array's items one by one, any other value (a scalar, a
// map, an array of nulls) written as its text by value.
func (t *transcoder) tree(tr *jsontree.Tree, src []byte, n *avro.SchemaNode, depth int) (*fastjson.Value, []byte, bool) {
	if depth > maxDepth {
		return nil, src, false
	}
	switch n.Type {
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
			v, rest, ok := t.tree(tr, src, &f.Type, depth+1)
			if !ok {
				return nil, src, false
			}
			obj.Set(f.Name, v)
			src = rest
		}
		return obj, src, true
	case "array":
		if n.Items == nil || n.Items.Type == "null" {
			break
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
	case "null", "boolean", "int", "long", "float", "double", "string", "bytes", "fixed", "enum", "map":
	default:
		if ref, ok := t.named[n.Type]; ok && ref != n {
			return t.tree(tr, src, ref, depth+1)
		}
	}
	b, rest, err := t.value(tr.Slab(), src, n, depth)
	if err != nil {
		return nil, src, false
	}
	v := tr.Scalar(b)
	return v, rest, v != nil
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

// treeWireValue builds one value of f as appendWireValue writes it: a
// message's fields one by one, any other value written as its text by
// appendWireValue; or returns nil.
func treeWireValue(tr *jsontree.Tree, f *wireField, v []byte, typ protowire.Type, st *wireState, depth int) *fastjson.Value {
	if typ == f.wire && typ == protowire.BytesType && f.kind == protoreflect.MessageKind {
		return f.msg.tree(tr, v, st, depth+1)
	}
	b, err := appendWireValue(tr.Slab(), f, v, typ, st, depth)
	if err != nil {
		return nil
	}
	return tr.Scalar(b)
}
