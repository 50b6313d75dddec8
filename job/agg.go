package job

import (
	"math"
	"unsafe"
)

// vkind is the JSON type of a field value read from an event.
type vkind uint8

const (
	vNull  vkind = iota // missing or null
	vInt                // an integer number
	vFloat              // any other number
	vText               // a string, or true/false (count_distinct only)
	vDec                // a decimal result: i / 10^scale (exact sums)
)

// value is one field of an event, as the aggregates need it. A number
// written as a plain decimal ("23.70", "-5", up to 18 digits) is also kept
// exactly, as dec / 10^scale, so that sums of money come out exact.
type value struct {
	kind  vkind
	i     int64
	f     float64
	dec   int64
	scale int8
	exact bool
	text  []byte // canonical text, for count_distinct
}

// record is what the window operator keeps of an event: its line, the raw
// text (for the side output) and the values its aggregates read. raw and
// vals point into the reader's chunks and a slab: no allocation per event.
type record struct {
	line int64 // line number of a file, offset of a Kafka record
	part int32 // the record's partition (Kafka)
	raw  []byte
	vals []value
}

// slot is the accumulator of one aggregate of one window: 32 bytes, since
// every slot is a part of every key's state (a job of a count and a sum
// keeps two in each window).
type slot struct {
	// i is how many (count, count(f), avg), the exact sum scaled by
	// 10^scale (sum), or the integer extreme (min, max): no aggregate
	// needs two of these.
	i     int64
	f     float64 // inexact part of a sum; float extreme; avg sum
	set   map[string]struct{}
	float bool // sum: an inexact number was added; extreme: the value is a float
	has   bool // extreme: a value was seen
	scale int8 // sum: decimals of i
	// partial: the aggregate was added to the job after the window opened
	// (a restore into a changed job): it holds only what came since.
	partial bool
}

// counted says whether slot.i of an aggregate of kind k is a count (it was
// a field of its own in checkpoints, and still is in their format).
func counted(k AggKind) bool { return k == AggCount || k == AggCountField || k == AggAvg }

// outVal is one result column of a pane.
type outVal struct {
	kind  vkind // vNull, vInt, vFloat or vDec
	i     int64
	f     float64
	scale int8 // vDec
	// partial: the value covers only what came since the aggregate was
	// added to the job (slot.partial).
	partial bool
}

func (o outVal) number() float64 {
	switch o.kind {
	case vInt:
		return float64(o.i)
	case vFloat:
		return o.f
	case vDec:
		return float64(o.i) / pow10[o.scale]
	}
	return math.NaN()
}

var pow10 = func() (p [19]float64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// addDec adds d / 10^sc to the exact part of a sum; on overflow the exact
// part moves to the inexact one.
func addDec(s *slot, d int64, sc int8) {
	for s.scale < sc {
		if s.i > math.MaxInt64/10 || s.i < math.MinInt64/10 {
			spill(s)
			s.f += float64(d) / pow10[sc]
			return
		}
		s.i *= 10
		s.scale++
	}
	for sc < s.scale {
		if d > math.MaxInt64/10 || d < math.MinInt64/10 {
			s.f += float64(d) / pow10[sc]
			s.float = true
			return
		}
		d *= 10
		sc++
	}
	sum := s.i + d
	if (d > 0 && sum < s.i) || (d < 0 && sum > s.i) {
		spill(s)
		s.f += float64(d) / pow10[sc]
		return
	}
	s.i = sum
}

func spill(s *slot) {
	s.f += float64(s.i) / pow10[s.scale]
	s.i, s.scale, s.float = 0, 0, true
}

// accInline is the number of slots an accumulator holds in itself.
const accInline = 2

// acc is the accumulator of a window: a slot per aggregate. The first
// accInline slots are in the value itself, which the window operator keeps
// in its window state, so that adding an event to a window of a job with few
// aggregates reads no memory apart from the state: a slice of slots cost a
// cache miss per event. The number of slots is the job's number of
// aggregates, which aggs and the codec know: the accumulator, in every
// window of every key, does not keep it.
type acc struct {
	inline [accInline]slot
	// more is the first of the slots after the first accInline, which
	// follow it in one array (cut from a slab): nil if there are none.
	more *slot
}

// slot is the accumulator of aggregate k.
func (a *acc) slot(k int) *slot {
	if k < accInline {
		return &a.inline[k]
	}
	return (*slot)(unsafe.Add(unsafe.Pointer(a.more), uintptr(k-accInline)*unsafe.Sizeof(slot{})))
}

// extra is the slots after the first accInline of an accumulator of n.
func (a *acc) extra(n int) []slot {
	if n <= accInline || a.more == nil {
		return nil
	}
	return unsafe.Slice(a.more, n-accInline)
}

// aggs is the aggregate function of a job: all its result columns at once.
// It implements aggregate.Func[record, acc, []outVal].
type aggs struct {
	list  []Aggregate
	field []int    // index into record.vals per aggregate; -1 for count
	free  []*slot  // released accumulators' extra slots (acc.more), cleared
	more  []slot   // slab that the slots beyond the inline ones are cut from
	outs  []outVal // slab that results are cut from
}

// moreSlab is how many accumulators' extra slots one allocation holds: a
// job of more than accInline aggregates whose windows grow in number would
// otherwise allocate once a window.
const moreSlab = 256

// New returns an empty accumulator, reusing the slots of a released one
// beyond the inline ones if it can.
// New, Add, Merge, Release and Result run in one operator instance's
// goroutine; a job with parallelism P has one aggs per instance.
func (a *aggs) New() acc {
	var c acc
	if m := len(a.list) - accInline; m > 0 {
		if n := len(a.free); n > 0 {
			c.more = a.free[n-1]
			a.free = a.free[:n-1]
		} else {
			c.more = &cut(&a.more, m, moreSlab)[0]
		}
	}
	return c
}

// cut returns n zero values cut from *slab, which it refills with room for
// per such cuts when it runs short: one allocation for many small slices.
// Each slice's capacity is its length, so that appending to one never writes
// into the next.
func cut[T any](slab *[]T, n, per int) []T {
	if len(*slab) < n {
		*slab = make([]T, n*per)
	}
	s := (*slab)[:n:n]
	*slab = (*slab)[n:]
	return s
}

// Release takes back an accumulator whose window is gone.
func (a *aggs) Release(c acc) {
	if more := c.extra(len(a.list)); len(more) > 0 && len(a.free) < 1<<16 {
		clear(more)
		a.free = append(a.free, c.more)
	}
}

func (a *aggs) Add(c acc, r record) acc {
	for k := range a.list {
		s := c.slot(k)
		switch a.list[k].Kind {
		case AggCount:
			s.i++
			continue
		}
		v := &r.vals[a.field[k]]
		if v.kind == vNull {
			continue
		}
		switch a.list[k].Kind {
		case AggCountField:
			s.i++
		case AggSum:
			if v.exact {
				addDec(s, v.dec, v.scale)
			} else {
				s.f += v.f
				s.float = true
			}
		case AggMin, AggMax:
			a.extreme(s, a.list[k].Kind == AggMax, v.kind == vFloat, v.i, v.f)
		case AggAvg:
			s.i++
			if v.kind == vInt {
				s.f += float64(v.i)
			} else {
				s.f += v.f
			}
		case AggCountDistinct:
			if s.set == nil {
				s.set = map[string]struct{}{}
			}
			if _, ok := s.set[string(v.text)]; !ok {
				s.set[string(v.text)] = struct{}{}
			}
		}
	}
	return c
}

func (a *aggs) extreme(s *slot, max, isFloat bool, i int64, f float64) {
	x := f
	if !isFloat {
		x = float64(i)
	}
	if s.has {
		cur := s.f
		if !s.float {
			cur = float64(s.i)
		}
		if (max && x <= cur) || (!max && x >= cur) {
			return
		}
	}
	s.has, s.float, s.i, s.f = true, isFloat, i, f
}

func (a *aggs) Merge(c, other acc) acc {
	for k := range a.list {
		s, o := c.slot(k), other.slot(k)
		s.partial = s.partial || o.partial
		switch a.list[k].Kind {
		case AggCount, AggCountField:
			s.i += o.i
		case AggSum:
			addDec(s, o.i, o.scale)
			s.f += o.f
			s.float = s.float || o.float
		case AggMin, AggMax:
			if o.has {
				a.extreme(s, a.list[k].Kind == AggMax, o.float, o.i, o.f)
			}
		case AggAvg:
			s.i += o.i
			s.f += o.f
		case AggCountDistinct:
			if len(o.set) > 0 && s.set == nil {
				s.set = make(map[string]struct{}, len(o.set))
			}
			for v := range o.set {
				s.set[v] = struct{}{}
			}
		}
	}
	return c
}

func (a *aggs) Result(c acc) []outVal {
	// Results come from a slab (one allocation per thousand or so); they
	// are never reused, only collected once no pane holds them.
	n := len(a.list)
	out := cut(&a.outs, n, 1024)
	for k := range a.list {
		s := c.slot(k)
		switch a.list[k].Kind {
		case AggCount, AggCountField:
			out[k] = outVal{kind: vInt, i: s.i}
		case AggSum:
			switch {
			case s.float:
				out[k] = outVal{kind: vFloat, f: float64(s.i)/pow10[s.scale] + s.f}
			case s.scale == 0:
				out[k] = outVal{kind: vInt, i: s.i}
			default:
				out[k] = outVal{kind: vDec, i: s.i, scale: s.scale}
			}
		case AggMin, AggMax:
			switch {
			case !s.has:
			case s.float:
				out[k] = outVal{kind: vFloat, f: s.f}
			default:
				out[k] = outVal{kind: vInt, i: s.i}
			}
		case AggAvg:
			if s.i > 0 {
				out[k] = outVal{kind: vFloat, f: s.f / float64(s.i)}
			}
		case AggCountDistinct:
			out[k] = outVal{kind: vInt, i: int64(len(s.set))}
		}
		out[k].partial = s.partial
	}
	return out
}
