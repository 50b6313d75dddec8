package formats

import (
	"encoding/binary"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/twmb/avro"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/source"
)

// An Avro record's fields are read for the rules (linedec.Projector)
// straight from its bytes, guided by its schema: the fields the rules name
// are decoded into their values, the others skipped, and nothing else is
// made. A value is what its record's object holds (tree, value): a record
// or a union's chosen branch is read through, a string is its bytes, an
// int or a long its integer and digits, a double its shortest text, a
// field the record lacks Absent, and any other value (an enum, bytes, a
// logical type written as a string) is written as its text and read from
// it. A record whose value the object would hold differently (a string
// that is not UTF-8) or whose schema needs resolving is left to the
// object.

var (
	_ linedec.Projector = (*avroDecoder)(nil)
	_ linedec.Projector = (*ocfDecoder)(nil)
)

// Project implements linedec.Projector.
func (d *avroDecoder) Project(paths [][]string) linedec.Projection {
	return &avroProjection{trie: newPathTrie(paths), schema: func(value []byte) (*transcoder, []byte) {
		s, payload := d.fixed, value
		if d.reg != nil {
			id, p, err := frame(value)
			if err != nil {
				return nil, nil
			}
			if s, err = d.schema(id); err != nil {
				return nil, nil
			}
			payload = p
		}
		if s == nil || s.direct == nil {
			return nil, nil
		}
		return s.direct, payload
	}}
}

// Project implements linedec.Projector.
func (d *ocfDecoder) Project(paths [][]string) linedec.Projection {
	return &avroProjection{trie: newPathTrie(paths), schema: func(value []byte) (*transcoder, []byte) {
		return d.t, value
	}}
}

// pathTrie is the paths of a projection by their names: a node is a
// path's end when its slot is one.
type pathTrie struct {
	slot     int // -1: no path ends here
	children map[string]*pathTrie
	// text: a path ending here is read as more than an instant (past the
	// time fields, linedec.Projection).
	text bool
	// dups, at the root, are the slots of paths named before: each is
	// given its first slot's value (slot, first).
	dups [][2]int
}

// copyDups gives the slots of paths named twice their first slot's value.
func (t *pathTrie) copyDups(out []source.Value) {
	for _, d := range t.dups {
		out[d[0]] = out[d[1]]
	}
}

func newPathTrie(paths [][]string) *pathTrie {
	root := &pathTrie{slot: -1}
	for i, p := range paths {
		if p == nil {
			continue
		}
		n := root
		for _, name := range p {
			c := n.children[name]
			if c == nil {
				if n.children == nil {
					n.children = map[string]*pathTrie{}
				}
				c = &pathTrie{slot: -1}
				n.children[name] = c
			}
			n = c
		}
		n.text = n.text || i >= linedec.NumFields
		if n.slot >= 0 {
			root.dups = append(root.dups, [2]int{i, n.slot})
			continue
		}
		n.slot = i
	}
	return root
}

// avroProjection is a projection of records of the schemas schema finds
// (the transcoder of a record's schema and its payload; nil: the record
// is read from its object).
type avroProjection struct {
	trie   *pathTrie
	schema func(value []byte) (*transcoder, []byte)
	plans  projPlans[*transcoder]
}

// projPlan is a projection compiled for a schema (key: its compiled
// form).
type projPlan[K comparable] struct {
	key  K
	root *pnode // nil: its records are read from their objects
	// perByte bounds the JSON text a payload's byte makes (textBound).
	perByte int
}

// projPlans are a projection's plans, one a schema, each made once; the
// plan found last is found again without the lock (a topic's records
// mostly share one schema).
type projPlans[K comparable] struct {
	mu   sync.Mutex
	m    map[K]*projPlan[K]
	last atomic.Pointer[projPlan[K]]
}

// plan is the plan of the schema k, made by compile (its root and
// perByte) the first time it is asked for.
func (ps *projPlans[K]) plan(k K, compile func() (*pnode, int)) *projPlan[K] {
	if pl := ps.last.Load(); pl != nil && pl.key == k {
		return pl
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pl := ps.m[k]
	if pl == nil {
		pl = &projPlan[K]{key: k}
		pl.root, pl.perByte = compile()
		if ps.m == nil {
			ps.m = map[K]*projPlan[K]{}
		}
		ps.m[k] = pl
	}
	ps.last.Store(pl)
	return pl
}

// pnode is what a projection reads of the values of a tnode: the slot its
// value goes to (-1: none), and the nodes of a record's fields (nil: a
// field skipped), a union's branches or a reference's type.
type pnode struct {
	slot   int
	text   bool // an instant's text is read too (pathTrie.text)
	deep   bool // paths go on into its value
	fields []*pnode
	next   []*pnode
}

// Read implements linedec.Projection.
func (p *avroProjection) Read(value []byte, out []source.Value, slab *[]byte, max int) bool {
	t, payload := p.schema(value)
	if t == nil || t.noTree {
		return false // its object from its text: a key twice, the first read
	}
	pl := p.plans.last.Load()
	if pl == nil || pl.key != t {
		pl = p.plans.plan(t, func() (*pnode, int) {
			perByte := textBound(t.root)
			if perByte == 0 {
				return nil, 0
			}
			return compileProj(t.troot, p.trie, map[projKey]*pnode{}), perByte
		})
	}
	if pl.root == nil || (len(payload)+1) > max/pl.perByte {
		return false
	}
	for i := range out {
		out[i] = source.Value{}
	}
	r := projReader{t: t, out: out, slab: *slab}
	rest, ok := r.read(payload, t.troot, pl.root, 0)
	*slab = r.slab
	p.trie.copyDups(out)
	return ok && len(rest) == 0
}

type projKey struct {
	n *tnode
	p *pathTrie
}

// compileProj is the pnode of the paths of trie read from values of n.
func compileProj(n *tnode, trie *pathTrie, memo map[projKey]*pnode) *pnode {
	k := projKey{n, trie}
	if c, ok := memo[k]; ok {
		return c
	}
	c := &pnode{slot: trie.slot, text: trie.text, deep: len(trie.children) > 0}
	memo[k] = c
	switch n.kind {
	case tRecord:
		c.fields = make([]*pnode, len(n.fields))
		for i, f := range n.fields {
			if child := trie.children[f.name]; child != nil {
				c.fields[i] = compileProj(f.t, child, memo)
			}
		}
	case tUnion:
		for _, b := range n.branches {
			c.next = append(c.next, compileProj(b, trie, memo))
		}
	case tRef:
		c.next = []*pnode{compileProj(n.ref, trie, memo)}
	}
	return c
}

// textBound is a bound on the JSON text each byte of a payload of the
// schema n makes (so that a payload of b bytes makes at most (b+1) times
// it), or 0 when the schema has none that weir keeps (an array of nulls,
// which takes no bytes, or a decimal of a large scale).
//
// Each value is made by bytes of its own, but for nulls, empty records and
// the zero-size fixed: a record's text, its keys and nulls, is made once a
// record (the payload's, then one an array's item, a map's entry or a
// union's branch, each of at least a byte), and is at most the sum over
// the schema's nodes; a scalar makes at most 64 bytes of text a byte.
func textBound(root *avro.SchemaNode) int {
	total, ok := 64, true
	var walk func(n *avro.SchemaNode, depth int)
	walk = func(n *avro.SchemaNode, depth int) {
		if n == nil || depth > maxDepth || !ok {
			return
		}
		total += 16
		for _, s := range n.Symbols {
			total += 2 * len(s) // escaped at most to 6 a byte: bound by 2×3
		}
		switch {
		case n.Type == "array" && (n.Items == nil || n.Items.Type == "null"):
			ok = false
		case n.LogicalType == "decimal":
			if n.Scale > 64 {
				ok = false
			}
			total += n.Scale
		}
		for i := range n.Fields {
			total += 6*len(n.Fields[i].Name) + 4
			walk(&n.Fields[i].Type, depth+1)
		}
		for i := range n.Branches {
			walk(&n.Branches[i], depth+1)
		}
		walk(n.Items, depth+1)
		walk(n.Values, depth+1)
	}
	walk(root, 0)
	if !ok || total > math.MaxInt32 {
		return 0
	}
	return total
}

// projReader reads one record's projected fields.
type projReader struct {
	t    *transcoder
	out  []source.Value
	slab []byte
}

// read reads the value of n in src as p says, and returns what follows it.
func (r *projReader) read(src []byte, n *tnode, p *pnode, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return src, false
	}
	switch n.kind {
	case tUnion:
		i, rest, err := varlong(src)
		if err != nil || i < 0 || i >= int64(len(n.branches)) {
			return src, false
		}
		return r.read(rest, n.branches[i], p.next[i], depth+1)
	case tRef:
		return r.read(src, n.ref, p.next[0], depth+1)
	case tRecord:
		if p.slot >= 0 {
			r.out[p.slot] = source.Value{Type: source.Other}
		}
		for i := range n.fields {
			f := &n.fields[i]
			var ok bool
			if fp := p.fields[i]; fp != nil {
				src, ok = r.read(src, f.t, fp, depth+1)
			} else {
				var err error
				src, err = r.t.skip(src, f.t.n, depth+1)
				ok = err == nil
			}
			if !ok {
				return src, false
			}
		}
		return src, true
	}
	if p.deep && (n.kind == tArray || n.n.Type == "map" || n.n.Type == "array") {
		return src, false // a path into a map's keys or an array's items
	}
	if p.slot < 0 {
		// A path goes on into a scalar: none of it is there.
		rest, err := r.t.skip(src, n.n, depth)
		return rest, err == nil
	}
	v := &r.out[p.slot]
	switch n.kind {
	case tNull:
		*v = source.Value{}
		return src, true
	case tBool:
		if len(src) < 1 {
			return src, false
		}
		// As the library and Java's reference read it: only 1 is true.
		*v = source.Value{Type: source.False}
		if src[0] == 1 {
			v.Type = source.True
		}
		return src[1:], true
	case tInt, tLong:
		x, rest, err := varlong(src)
		if err != nil || n.kind == tInt && (x < math.MinInt32 || x > math.MaxInt32) {
			return src, false
		}
		r.setInt(v, x)
		return rest, true
	case tDouble:
		if len(src) < 8 {
			return src, false
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(src))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			*v = source.Value{} // null
			return src[8:], true
		}
		start := len(r.slab)
		r.slab = appendDouble(r.slab, f)
		*v = source.Value{Type: source.Number, Text: r.slab[start:len(r.slab):len(r.slab)]}
		return src[8:], true
	case tString:
		data, rest, err := lengthPrefixed(src)
		if err != nil || !utf8.Valid(data) {
			return src, false // not UTF-8: its object has U+FFFD for its bytes
		}
		*v = source.Value{Type: source.String, Text: data}
		return rest, true
	case tArray:
		rest, err := r.t.skip(src, n.n, depth)
		*v = source.Value{Type: source.Other}
		return rest, err == nil
	}
	if n.n.Type == "map" || n.n.Type == "array" {
		rest, err := r.t.skip(src, n.n, depth)
		*v = source.Value{Type: source.Other}
		return rest, err == nil
	}
	// Any other value, read from the text its object is made of.
	start := len(r.slab)
	b, rest, err := r.t.value(r.slab, src, n.n, depth)
	if err != nil {
		return src, false
	}
	r.slab = b
	return rest, fromText(v, b[start:len(b):len(b)])
}

// fromText sets v to the JSON value text (a format's text of one value)
// holds; not ok for a string with an escape, which is read from its
// object.
func fromText(v *source.Value, text []byte) bool {
	switch text[0] {
	case '"':
		s := text[1 : len(text)-1]
		for _, c := range s {
			if c == '\\' {
				return false
			}
		}
		*v = source.Value{Type: source.String, Text: s}
	case 'n':
		*v = source.Value{}
	case 't':
		*v = source.Value{Type: source.True}
	case 'f':
		*v = source.Value{Type: source.False}
	case '{', '[':
		*v = source.Value{Type: source.Other}
	default:
		*v = source.Value{Type: source.Number, Text: text}
	}
	return true
}

// setInt sets v to the integer x.
func (r *projReader) setInt(v *source.Value, x int64) {
	start := len(r.slab)
	r.slab = strconv.AppendInt(r.slab, x, 10)
	*v = source.Value{Type: source.Number, Text: r.slab[start:len(r.slab):len(r.slab)], IsInt: true, Int: x}
}
