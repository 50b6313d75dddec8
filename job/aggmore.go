package job

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"unsafe"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// The aggregates whose accumulators are not numbers keep their state in
// slot.ext.more, made at the first value they are given: an empty window
// holds none. Merge copies the other slot's state when the slot has none
// (the other one stays in use: a sliding window's slice), Absorb takes it
// over. Each accessor asserts its type: a slot read as another aggregate's
// panics rather than reading memory as what it is not.

// pick is the state of first and last: the event time of the value kept
// and its identity (linedec.AppendIdentity), in a buffer of its own that
// the next value picked is copied into.
type pick struct {
	t mtime.Time
	v []byte
}

// more is the state in ext of the slot, nil if it has none.
func (s *slot) more() any {
	if s.ext == nil {
		return nil
	}
	return s.ext.more
}

// keep makes m the state in ext of the slot.
func (s *slot) keep(m any) { s.ext = &ext{more: m} }

func (s *slot) sketch() *aggregate.Sketch {
	m, _ := s.more().(*aggregate.Sketch)
	return m
}

func (s *slot) estimator() *aggregate.Distinct {
	m, _ := s.more().(*aggregate.Distinct)
	return m
}

func (s *slot) picked() *pick {
	m, _ := s.more().(*pick)
	return m
}

// topCounts is a top's counts by identity. Each count is a variable of
// its own, so that an event of a value seen before finds it without making
// its key a string (a lookup by string(bytes) allocates nothing, an
// assignment does).
type topCounts map[string]*int64

// tops is a top's counts.
func (s *slot) tops() topCounts {
	m, _ := s.more().(topCounts)
	return m
}

// add adds n to the count of the value of identity id.
func (m topCounts) add(id []byte, n int64) {
	if c := m[string(id)]; c != nil {
		*c += n
		return
	}
	m[string(id)] = new(n) // not &n: n would move to the heap at every call
}

// clone is a copy of m that shares no count with it.
func (m topCounts) clone() topCounts {
	c := make(topCounts, len(m))
	for v, n := range m {
		c[v] = new(*n)
	}
	return c
}

// counts is a histogram's counts: one a bound, and the last of those above
// the last bound; nil if it has none.
func (s *slot) counts() []int64 {
	m, _ := s.more().([]int64)
	return m
}

// addMore adds v to the slot of an aggregate of the kinds whose state is
// in ext.
func (a *aggs) addMore(g *jobfile.Aggregate, s *slot, v *value, ts mtime.Time) {
	switch g.Kind {
	case jobfile.AggPercentile, jobfile.AggMedian:
		sk := s.sketch()
		if sk == nil {
			if n := len(a.sketches); n > 0 {
				s.ext, a.sketches = a.sketches[n-1], a.sketches[:n-1]
				sk = s.sketch()
			} else {
				sk = aggregate.NewSketch()
				s.keep(sk)
			}
		}
		sk.Add(v.f)
	case jobfile.AggApproxDistinct:
		d := s.estimator()
		if d == nil {
			d = aggregate.NewDistinct()
			s.keep(d)
		}
		d.Insert(v.text)
	case jobfile.AggFirst, jobfile.AggLast:
		p := s.picked()
		switch {
		case p == nil:
			p = &pick{}
			s.keep(p)
		case g.Kind == jobfile.AggFirst && ts >= p.t, g.Kind == jobfile.AggLast && ts < p.t:
			// Of one time, first keeps the event that came first, last
			// takes the one that came last.
			return
		}
		p.t, p.v = ts, append(p.v[:0], v.text...)
	case jobfile.AggHistogram:
		c := s.counts()
		if c == nil {
			c = make([]int64, len(g.Bounds)+1)
			s.keep(c)
		}
		c[aggregate.Bucket(g.Bounds, v.f)]++
	case jobfile.AggTop:
		m := s.tops()
		if m == nil {
			m = topCounts{}
			s.keep(m)
		}
		m.add(v.text, 1)
	}
}

// mergeMore merges o into s, of an aggregate whose state is in ext; with
// take, o goes away and s may take its state over.
func mergeMore(g *jobfile.Aggregate, s, o *slot, take bool) {
	if o.ext == nil {
		return
	}
	if s.ext == nil && take {
		s.ext, o.ext = o.ext, nil
		return
	}
	switch g.Kind {
	case jobfile.AggPercentile, jobfile.AggMedian:
		if s.ext == nil {
			s.keep(o.sketch().Copy())
			return
		}
		s.sketch().Merge(o.sketch())
	case jobfile.AggApproxDistinct:
		if s.ext == nil {
			s.keep(o.estimator().Copy())
			return
		}
		s.estimator().Merge(o.estimator())
	case jobfile.AggFirst, jobfile.AggLast:
		// A merge's parts hold no events of one time (sessions that do not
		// overlap, slices): on a tie, o is taken as the later one.
		op, sp := o.picked(), s.picked()
		if sp == nil {
			sp = &pick{}
			s.keep(sp)
		} else if g.Kind == jobfile.AggFirst && op.t >= sp.t || g.Kind == jobfile.AggLast && op.t < sp.t {
			return
		}
		sp.t, sp.v = op.t, append(sp.v[:0], op.v...)
	case jobfile.AggHistogram:
		oc, sc := o.counts(), s.counts()
		if sc == nil {
			s.keep(slices.Clone(oc))
			return
		}
		for i, n := range oc {
			sc[i] += n
		}
	case jobfile.AggTop:
		om, sm := o.tops(), s.tops()
		if sm == nil {
			s.keep(om.clone())
			return
		}
		for v, n := range om {
			sm.add(unsafe.Slice(unsafe.StringData(v), len(v)), *n)
		}
	}
}

// resultMore is the value of an aggregate whose state is in ext.
func (a *aggs) resultMore(k int, s *slot) outVal {
	g := &a.list[k]
	if s.ext == nil {
		if g.Kind == jobfile.AggApproxDistinct {
			return outVal{kind: vInt}
		}
		return outVal{}
	}
	switch g.Kind {
	case jobfile.AggPercentile, jobfile.AggMedian:
		if v, ok := s.sketch().Quantile(g.Q); ok {
			return outVal{kind: vFloat, f: v}
		}
	case jobfile.AggApproxDistinct:
		return outVal{kind: vInt, i: s.estimator().Estimate()}
	case jobfile.AggFirst, jobfile.AggLast:
		return outVal{kind: vJSON, js: string(appendIdentityJSON(nil, s.picked().v))}
	case jobfile.AggHistogram:
		return outVal{kind: vJSON, js: string(appendHistogram(nil, g.Bounds, s.counts()))}
	case jobfile.AggTop:
		return outVal{kind: vJSON, js: string(a.appendTop(nil, g.N, s.tops()))}
	}
	return outVal{}
}

// appendIdentityJSON appends the JSON text of a value given by its identity
// (linedec.AppendIdentity): a string, a number in its canonical text, true
// or false.
func appendIdentityJSON(b, id []byte) []byte {
	if len(id) == 0 {
		return append(b, "null"...)
	}
	switch id[0] {
	case 's':
		return text.AppendJSONString(b, id[1:])
	case 'n':
		return append(b, id[1:]...)
	case 't':
		return append(b, "true"...)
	case 'f':
		return append(b, "false"...)
	}
	return append(b, "null"...)
}

// appendHistogram appends a histogram's value:
// {"le":[10,50,100],"counts":[3,5,1],"above":0}: counts[i] is the number of
// values at most le[i] and above le[i-1], above those above the last bound.
func appendHistogram(b []byte, bounds []float64, counts []int64) []byte {
	b = append(b, `{"le":[`...)
	for i, x := range bounds {
		if i > 0 {
			b = append(b, ',')
		}
		b = text.AppendJSONFloat(b, x)
	}
	b = append(b, `],"counts":[`...)
	for i := range bounds {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, counts[i], 10)
	}
	b = append(b, `],"above":`...)
	b = strconv.AppendInt(b, counts[len(bounds)], 10)
	return append(b, '}')
}

// topItem is a value of a top and its count.
type topItem struct {
	id    string // identity
	json  []byte // JSON text, for the order of ties
	count int64
}

// appendTop appends a top's value: [{"value":"a","count":3},...], the n
// most frequent values, the most frequent first, values of one count in
// the order of their JSON text, byte by byte.
func (a *aggs) appendTop(b []byte, n int, m topCounts) []byte {
	all := a.tops[:0]
	var texts []byte
	for id, c := range m {
		start := len(texts)
		texts = appendIdentityJSON(texts, unsafe.Slice(unsafe.StringData(id), len(id)))
		all = append(all, topItem{id: id, json: texts[start:len(texts):len(texts)], count: *c})
	}
	sort.Slice(all, func(i, j int) bool {
		return cmp.Or(cmp.Compare(all[j].count, all[i].count), slices.Compare(all[i].json, all[j].json)) < 0
	})
	b = append(b, '[')
	for i, c := range all[:min(n, len(all))] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"value":`...)
		b = append(b, c.json...)
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, c.count, 10)
		b = append(b, '}')
	}
	clear(all)
	a.tops = all[:0]
	return append(b, ']')
}

// moreBytes is the memory of the state in ext of a slot, roughly, for the
// Pebble store's cache.
func moreBytes(g *jobfile.Aggregate, s *slot) int {
	if s.ext == nil {
		return 0
	}
	switch g.Kind {
	case jobfile.AggPercentile, jobfile.AggMedian:
		return 160 + 8*s.sketch().Bins()
	case jobfile.AggApproxDistinct:
		return 48 + s.estimator().Bytes()
	case jobfile.AggFirst, jobfile.AggLast:
		return 48 + cap(s.picked().v)
	case jobfile.AggHistogram:
		return 8 * (len(g.Bounds) + 1)
	case jobfile.AggTop:
		n := 48
		for v := range s.tops() {
			n += 64 + len(v)
		}
		return n
	}
	return 0
}

// hasMore reports whether an aggregate of kind k keeps its state in ext
// (count_distinct aside, whose sets setAggs keeps).
func hasMore(k jobfile.AggKind) bool {
	switch k {
	case jobfile.AggPercentile, jobfile.AggMedian, jobfile.AggApproxDistinct, jobfile.AggFirst, jobfile.AggLast, jobfile.AggHistogram, jobfile.AggTop:
		return true
	}
	return false
}

// appendMore appends the state in ext of a slot of aggregate g, as bytes of
// a length: none when it has none, or keeps none there.
func appendMore(b []byte, g *jobfile.Aggregate, s *slot) []byte {
	if s.ext == nil || !hasMore(g.Kind) {
		return enc.AppendUvarint(b, 0)
	}
	var more []byte
	switch g.Kind {
	case jobfile.AggPercentile, jobfile.AggMedian:
		more, _ = s.sketch().AppendBinary(nil)
	case jobfile.AggApproxDistinct:
		more, _ = s.estimator().AppendBinary(nil)
	case jobfile.AggFirst, jobfile.AggLast:
		p := s.picked()
		more = enc.AppendVarint(nil, int64(p.t))
		more = append(more, p.v...)
	case jobfile.AggHistogram:
		for _, n := range s.counts() {
			more = enc.AppendUvarint(more, uint64(n))
		}
	case jobfile.AggTop:
		m := s.tops()
		more = enc.AppendUvarint(nil, uint64(len(m)))
		for v, n := range m {
			more = enc.AppendString(more, v)
			more = enc.AppendUvarint(more, uint64(*n))
		}
	}
	return enc.AppendBytes(b, more)
}

// readMore reads what appendMore wrote of a slot of aggregate g into its
// ext, and reports whether it was well formed.
func readMore(b []byte, g *jobfile.Aggregate, s *slot) bool {
	var d enc.Decoder
	d.Reset(b)
	switch g.Kind {
	case jobfile.AggPercentile, jobfile.AggMedian:
		sk := aggregate.NewSketch()
		if sk.UnmarshalBinary(b) != nil {
			return false
		}
		s.keep(sk)
		return true
	case jobfile.AggApproxDistinct:
		e := aggregate.NewDistinct()
		if e.UnmarshalBinary(b) != nil {
			return false
		}
		s.keep(e)
		return true
	case jobfile.AggFirst, jobfile.AggLast:
		t := d.Varint()
		v := b[len(b)-d.Len():]
		if d.Err() != nil || len(v) == 0 {
			return false
		}
		s.keep(&pick{t: mtime.Time(t), v: slices.Clone(v)})
		return true
	case jobfile.AggHistogram:
		c := make([]int64, len(g.Bounds)+1)
		for i := range c {
			c[i] = int64(d.Uvarint())
		}
		if d.Err() != nil || d.Len() != 0 {
			return false
		}
		s.keep(c)
		return true
	case jobfile.AggTop:
		n := d.Items(1 << 30)
		m := make(topCounts, n)
		for range n {
			v := d.String()
			m[v] = new(int64(d.Uvarint()))
		}
		if d.Err() != nil || d.Len() != 0 || len(m) != n {
			return false
		}
		s.keep(m)
		return true
	}
	return false
}
