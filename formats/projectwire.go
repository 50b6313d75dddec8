package formats

import (
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/source"
)

// A Protobuf record's fields are read for the rules as an Avro record's
// are (project.go), from its wire plan: the fields the rules name decoded
// (a string as its bytes, a signed integer as its integer, any other value
// from the text appendWireValue writes of it), the others checked as
// appendWire checks them (written into a scratch buffer, so that a record
// is read without its object exactly when its object is built).

var _ linedec.Projector = (*protoDecoder)(nil)

// Project implements linedec.Projector.
func (d *protoDecoder) Project(paths [][]string) linedec.Projection {
	return &wireProjection{d: d, trie: newPathTrie(paths)}
}

type wireProjection struct {
	d     *protoDecoder
	trie  *pathTrie
	plans projPlans[*wirePlan]
}

// Read implements linedec.Projection.
func (wp *wireProjection) Read(value []byte, out []source.Value, slab *[]byte, max int) bool {
	m, payload, err := wp.d.message(value)
	if err != nil {
		return false
	}
	pl := wp.plans.last.Load()
	if pl == nil || pl.key != m.plan {
		pl = wp.plans.plan(m.plan, func() (*pnode, int) {
			perByte := wireTextBound(m.plan)
			if perByte == 0 {
				return nil, 0
			}
			return compileWireProj(m.plan, wp.trie, map[wireProjKey]*pnode{}), perByte
		})
	}
	if pl.root == nil || len(payload)+1 > max/pl.perByte {
		return false
	}
	for i := range out {
		out[i] = source.Value{}
	}
	st := wireStates.Get().(*wireState)
	r := projReader{out: out, slab: *slab}
	ok := r.wire(payload, m.plan, pl.root, st, 0)
	wireStates.Put(st)
	*slab = r.slab
	wp.trie.copyDups(out)
	return ok
}

type wireProjKey struct {
	p    *wirePlan
	trie *pathTrie
}

// compileWireProj is the pnode of the paths of trie read from messages of
// p: fields by p's fields.
func compileWireProj(p *wirePlan, trie *pathTrie, memo map[wireProjKey]*pnode) *pnode {
	k := wireProjKey{p, trie}
	if c, ok := memo[k]; ok {
		return c
	}
	c := &pnode{slot: trie.slot, text: trie.text, deep: len(trie.children) > 0, fields: make([]*pnode, len(p.fields))}
	memo[k] = c
	for i := range p.fields {
		f := &p.fields[i]
		child := trie.children[f.name]
		if child == nil {
			continue
		}
		if f.msg != nil && f.mapKey == nil && !f.list {
			c.fields[i] = compileWireProj(f.msg, child, memo)
		} else {
			c.fields[i] = &pnode{slot: child.slot, text: child.text, deep: len(child.children) > 0}
		}
	}
	return c
}

// wireTextBound bounds the JSON text a payload's byte of p's messages
// makes, as textBound does Avro's: an unset field is written too (its
// zero), once a message, and each message but the record's takes bytes of
// its own.
func wireTextBound(p *wirePlan) int {
	total := 64
	seen := map[*wirePlan]bool{}
	var walk func(p *wirePlan)
	walk = func(p *wirePlan) {
		if seen[p] {
			return
		}
		seen[p] = true
		for i := range p.fields {
			f := &p.fields[i]
			total += len(f.key) + len(f.zero) + 16
			for _, g := range []*wireField{f, f.mapKey, f.mapValue} {
				if g == nil {
					continue
				}
				if g.kind == protoreflect.EnumKind {
					vs := g.fd.Enum().Values()
					for j := range vs.Len() {
						total += len(vs.Get(j).Name()) + 2
					}
				}
				if g.msg != nil {
					walk(g.msg)
				}
			}
		}
	}
	walk(p)
	if total > math.MaxInt32 {
		return 0
	}
	return total
}

// wire reads the message in src, of plan p, as pn says (its own slot
// included); not ok where appendWire fails.
func (r *projReader) wire(src []byte, p *wirePlan, pn *pnode, st *wireState, depth int) bool {
	if p.slow || depth > maxDepth || len(src) > math.MaxInt32 {
		return false
	}
	if p.wk == wkTimestamp && pn.slot >= 0 {
		// Its RFC 3339 string, and the instant it is.
		sec, nanos, err := p.timestamp(src, st)
		if err != nil {
			return false
		}
		v := &r.out[pn.slot]
		*v = source.Value{Type: source.String, IsTime: true, Int: sec*1000 + nanos/1e6}
		if pn.text {
			start := len(r.slab)
			r.slab = st.appendRFC3339(r.slab, sec, nanos)
			v.Text = r.slab[start+1 : len(r.slab)-1 : len(r.slab)-1]
		}
		return true
	}
	if p.wk != 0 {
		// A well-known type, written as a value (a wrapper's scalar).
		start := len(r.slab)
		b, err := p.appendWire(r.slab, src, st, depth)
		if err != nil {
			return false
		}
		r.slab = b
		if pn.slot < 0 {
			return true
		}
		return fromText(&r.out[pn.slot], b[start:len(b):len(b)])
	}
	if pn.slot >= 0 {
		r.out[pn.slot] = source.Value{Type: source.Other}
	}
	base := len(st.spans)
	ok := p.scan(src, st) == nil && r.fields(src, p, pn, st, base, depth)
	st.spans = st.spans[:base]
	return ok
}

// fields reads the fields of the message in src, scanned into st's spans
// from base.
func (r *projReader) fields(src []byte, p *wirePlan, pn *pnode, st *wireState, base, depth int) bool {
	for fi := range p.fields {
		f := &p.fields[fi]
		sp := st.spans[base+fi]
		if skip, slow := p.oneofUnset(st, base, fi); slow {
			return false
		} else if skip {
			continue
		}
		fp := pn.fields[fi]
		switch {
		case f.mapKey != nil || f.list:
			if fp != nil && fp.deep {
				return false // a path into a map's keys or a list's items
			}
			var err error
			if f.mapKey != nil {
				st.scratch, err = appendWireMap(st.scratch[:0], f, src, sp, st, depth)
			} else {
				st.scratch, err = p.appendList(st.scratch[:0], f, src, sp, st, depth)
			}
			if err != nil {
				return false
			}
			if fp != nil && fp.slot >= 0 {
				r.out[fp.slot] = source.Value{Type: source.Other}
			}
		case sp.n == 0:
			if fp != nil && fp.slot >= 0 && !f.presence {
				if !fromText(&r.out[fp.slot], f.zero) {
					return false
				}
			} // else: null, Absent
		case f.msg != nil && sp.n > 1:
			return false // parts to merge
		default:
			v := src[sp.start:sp.end]
			switch {
			case fp != nil && sp.wire == f.wire && f.kind == protoreflect.MessageKind:
				if !r.wire(v, f.msg, fp, st, depth+1) {
					return false
				}
			case fp == nil || fp.slot < 0:
				// Not read (or a path into a scalar): checked as written.
				var err error
				if st.scratch, err = appendWireValue(st.scratch[:0], f, v, sp.wire, st, depth); err != nil {
					return false
				}
			default:
				if !r.wireValue(&r.out[fp.slot], f, v, sp.wire, st, depth) {
					return false
				}
			}
		}
	}
	return true
}

// wireValue sets x to the value of f in v (wire type typ), as
// appendWireValue writes it; not ok where it fails.
func (r *projReader) wireValue(x *source.Value, f *wireField, v []byte, typ protowire.Type, st *wireState, depth int) bool {
	if typ == f.wire {
		switch f.kind {
		case protoreflect.StringKind:
			if !utf8.Valid(v) {
				return false
			}
			*x = source.Value{Type: source.String, Text: v}
			return true
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
			protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			n, err := scalarValue(f, v, typ)
			if err != nil {
				return false
			}
			r.setInt(x, n.Int())
			return true
		}
	}
	start := len(r.slab)
	b, err := appendWireValue(r.slab, f, v, typ, st, depth)
	if err != nil {
		return false
	}
	r.slab = b
	return fromText(x, b[start:len(b):len(b)])
}
