package job

import (
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// vkind is the JSON type of a field value read from an event.
type vkind uint8

const (
	vNull  vkind = iota // missing or null
	vInt                // an integer number
	vFloat              // any other number
	vText               // a string, or true/false (count_distinct only)
	vDec                // a decimal result: i / 10^scale (exact sums)
	vJSON               // a result that is JSON text (outVal.js)
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
	text  []byte // identity (linedec.AppendIdentity), for count_distinct, first, last, top
}

// record is what the window operator keeps of an event: its line, the raw
// text (for the side output) and the values its aggregates read. raw and
// vals point into the reader's chunks and a slab: no allocation per event.
type record struct {
	line int64      // line number of a file, offset of a Kafka record
	ts   mtime.Time // event time (first, last)
	part int32      // the record's partition (Kafka)
	// encoded: raw is the record in its source's format, not its JSON
	// text (format.json writes it).
	encoded bool
	// deleted: a deletion of its key's row, in a temporal join's table
	// (join.with.deletion holds).
	deleted bool
	raw     []byte
	vals    []value
}

// slot is the accumulator of one aggregate of one window: 32 bytes, since
// every slot is a part of every key's state (a job of a count and a sum
// keeps two in each window).
type slot struct {
	// i is how many (count, count(f), avg), the exact sum scaled by
	// 10^scale (sum), the integer extreme (min, max), or the id of the
	// set of a count_distinct in the state database (0: none): no
	// aggregate needs two of these.
	i int64
	// f is the inexact part of a sum, the float extreme, the sum of avg,
	// or the number of values of a count_distinct's set in the state
	// database (exact: a float64 holds integers up to 2^53).
	f float64
	// ext is the state of an aggregate that is not numbers, or nil while
	// it has none (see ext). One pointer keeps a slot at 32 bytes.
	ext   *ext
	float bool // sum: an inexact number was added; extreme: the value is a float
	has   bool // extreme: a value was seen
	scale int8 // sum: decimals of i
	// partial: the aggregate was added to the job after the window opened
	// (a restore into a changed job): it holds only what came since.
	partial bool
}

// ext is the state of a slot whose aggregate keeps more than numbers.
// Which of its fields is in use follows from the aggregate's kind, which the
// slot does not keep: set is count_distinct's values in memory (the memory
// backend's, and on the Pebble backend up to spillAt of them: past that they
// are keys of the state database, see setAggs, and the slot holds their
// set's id and their number); more is the state of the others (see
// aggmore.go): a percentile's or median's *aggregate.Sketch, an
// approx_count_distinct's *aggregate.Distinct, first's and last's *pick, a
// histogram's []int64, a top's topCounts. A window holds one when
// its aggregate is given a value: an allocation a window, never an event.
type ext struct {
	set  map[string]struct{}
	more any
}

// set is the values of a count_distinct the slot holds itself.
func (s *slot) set() map[string]struct{} {
	if s.ext == nil {
		return nil
	}
	return s.ext.set
}

// setTo makes m the values of a count_distinct the slot holds itself.
func (s *slot) setTo(m map[string]struct{}) {
	if m == nil {
		s.ext = nil
		return
	}
	s.ext = &ext{set: m}
}

// distinct is the number of values of a count_distinct.
func (s *slot) distinct() int64 { return int64(s.f) + int64(len(s.set())) }

// setID is the id of a count_distinct's set in the state database, 0
// while its values are in set.
func (s *slot) setID() uint64 { return uint64(s.i) }

// spillAt is the most values a count_distinct keeps in its accumulator on
// the Pebble backend: a window's accumulator is part of its key's state,
// which the backend's cache holds, decodes and writes back whole, so a
// small set costs a map's insert and a large one a lookup in the database
// (a few microseconds) for each value.
const spillAt = 64

// counted says whether slot.i of an aggregate of kind k is a count (it was
// a field of its own in checkpoints, and still is in their format).
func counted(k jobfile.AggKind) bool {
	return k == jobfile.AggCount || k == jobfile.AggCountField || k == jobfile.AggAvg
}

// outVal is one result column of a pane.
type outVal struct {
	kind  vkind // vNull, vInt, vFloat, vDec or vJSON
	i     int64
	f     float64
	js    string // vJSON: first's and last's value, a histogram's object, a top's array
	scale int8   // vDec
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
	case vJSON:
		// first or last of a number; NaN for a string, true or false, or
		// the object or array of a histogram or a top.
		if c := o.js[0]; c == '-' || c >= '0' && c <= '9' {
			if f, err := strconv.ParseFloat(o.js, 64); err == nil {
				return f
			}
		}
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
// It implements aggregate.Func[record, acc, []outVal]; a job with
// count_distinct has it as setAggs, which keeps the sets in the state
// database when there is one.
type aggs struct {
	list  []jobfile.Aggregate
	field []int    // index into record.vals per aggregate; -1 for count
	free  []*slot  // released accumulators' extra slots (acc.more), cleared
	more  []slot   // slab that the slots beyond the inline ones are cut from
	outs  []outVal // slab that results are cut from
	// sets holds count_distinct's values when the operator instance keeps
	// its state in a state database (setAggs.UseSets); nil in memory.
	sets engine.SetStore
	ids  []uint64  // sets of a sliding window's slices (MergedResult)
	tops []topItem // a top's values, sorted for its result
	// sketches are released windows' percentile sketches, emptied, each
	// in its ext, for the next window's first value: a window's sketch
	// is some seven allocations and 2 KiB.
	sketches []*ext
}

// newAggs is the aggregate function of a job whose aggregates are list,
// reading the fields field: setAggs if one of them is count_distinct,
// moreAggs if one keeps its state in slot.ext.
func newAggs(list []jobfile.Aggregate, field []int) aggregate.Func[record, acc, []outVal] {
	a := &aggs{list: list, field: field}
	for _, g := range list {
		if g.Kind == jobfile.AggCountDistinct {
			return setAggs{a}
		}
	}
	for _, g := range list {
		if hasMore(g.Kind) {
			return moreAggs{a}
		}
	}
	return a
}

// moreAggs is aggs of a job with an aggregate whose state is in slot.ext
// (a percentile's sketch, a top's counts...), without count_distinct: a
// session merged into another gives it its state rather than a copy
// (engine.Absorber). A session that grows by an event at a time is merged
// at every event.
type moreAggs struct{ *aggs }

var _ engine.Absorber[acc] = moreAggs{}

// Absorb is Merge of an accumulator that goes away.
func (a moreAggs) Absorb(c, other acc) acc {
	c = a.merge(c, other, true, true)
	a.recycle(other)
	return c
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

// Release takes back an accumulator whose window is gone, and deletes its
// sets from the state database.
func (a *aggs) Release(c acc) {
	for k := range a.slots(c) {
		s := c.slot(k)
		if sk := s.sketch(); sk != nil && len(a.sketches) < maxFreeSketches {
			sk.Clear()
			a.sketches = append(a.sketches, s.ext)
			s.ext = nil
		}
	}
	if a.sets != nil {
		for k := range a.slots(c) {
			if s := c.slot(k); a.list[k].Kind == jobfile.AggCountDistinct && s.i != 0 {
				a.sets.Drop(s.setID())
			}
		}
	}
	a.recycle(c)
}

// maxFreeSketches is how many emptied sketches an operator instance keeps
// for new windows: 4,096 of 2 KiB or more each.
const maxFreeSketches = 4096

// recycle keeps the extra slots of an accumulator whose window is gone for
// the next New.
func (a *aggs) recycle(c acc) {
	if more := c.extra(len(a.list)); len(more) > 0 && len(a.free) < 1<<16 {
		clear(more)
		a.free = append(a.free, c.more)
	}
}

// slots is the number of slots of c: the job's aggregates, or none in the
// zero accumulator of a job of more than accInline (a sliding window's
// own, whose slices hold its values).
func (a *aggs) slots(c acc) int {
	if len(a.list) > accInline && c.more == nil {
		return 0
	}
	return len(a.list)
}

func (a *aggs) Add(c acc, r record) acc {
	for k := range a.list {
		s := c.slot(k)
		switch a.list[k].Kind {
		case jobfile.AggCount:
			s.i++
			continue
		}
		v := &r.vals[a.field[k]]
		if v.kind == vNull {
			continue
		}
		switch a.list[k].Kind {
		case jobfile.AggCountField:
			s.i++
		case jobfile.AggSum:
			if v.exact {
				addDec(s, v.dec, v.scale)
			} else {
				s.f += v.f
				s.float = true
			}
		case jobfile.AggMin, jobfile.AggMax:
			a.extreme(s, a.list[k].Kind == jobfile.AggMax, v.kind == vFloat, v.i, v.f)
		case jobfile.AggAvg:
			s.i++
			if v.kind == vInt {
				s.f += float64(v.i)
			} else {
				s.f += v.f
			}
		case jobfile.AggCountDistinct:
			if s.i != 0 {
				a.insert(s, v.text)
				continue
			}
			if s.ext == nil {
				s.setTo(map[string]struct{}{})
			}
			if _, ok := s.set()[string(v.text)]; !ok {
				s.set()[string(v.text)] = struct{}{}
				if len(s.set()) > spillAt && a.sets != nil {
					a.spill(s)
				}
			}
		case jobfile.AggPercentile, jobfile.AggMedian, jobfile.AggApproxDistinct, jobfile.AggFirst, jobfile.AggLast, jobfile.AggHistogram, jobfile.AggTop:
			a.addMore(&a.list[k], s, v, r.ts)
		}
	}
	return c
}

// insert adds v to the set of a count_distinct in the state database: a
// lookup, and a write if it is new.
func (a *aggs) insert(s *slot, v []byte) {
	if a.sets.Insert(s.setID(), v) {
		s.f++
	}
}

// spill moves the values of a count_distinct's set from its accumulator
// into a set of the state database.
func (a *aggs) spill(s *slot) {
	s.i = int64(a.sets.NewSet())
	for v := range s.set() {
		a.insert(s, unsafe.Slice(unsafe.StringData(v), len(v)))
	}
	s.setTo(nil)
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

func (a *aggs) Merge(c, other acc) acc { return a.merge(c, other, true, false) }

// merge is Merge, of count_distinct's sets too if sets; with take, other
// goes away, and c may take over the state of its aggregates kept in
// slot.ext.
func (a *aggs) merge(c, other acc, sets, take bool) acc {
	for k := range a.list {
		s, o := c.slot(k), other.slot(k)
		s.partial = s.partial || o.partial
		switch a.list[k].Kind {
		case jobfile.AggCount, jobfile.AggCountField:
			s.i += o.i
		case jobfile.AggSum:
			addDec(s, o.i, o.scale)
			s.f += o.f
			s.float = s.float || o.float
		case jobfile.AggMin, jobfile.AggMax:
			if o.has {
				a.extreme(s, a.list[k].Kind == jobfile.AggMax, o.float, o.i, o.f)
			}
		case jobfile.AggAvg:
			s.i += o.i
			s.f += o.f
		case jobfile.AggCountDistinct:
			if sets {
				a.mergeDistinct(s, o)
			}
		case jobfile.AggPercentile, jobfile.AggMedian, jobfile.AggApproxDistinct, jobfile.AggFirst, jobfile.AggLast, jobfile.AggHistogram, jobfile.AggTop:
			mergeMore(&a.list[k], s, o, take)
		}
	}
	return c
}

// mergeDistinct adds the values of o's set to s's.
func (a *aggs) mergeDistinct(s, o *slot) {
	if o.i != 0 && s.i == 0 {
		a.spill(s) // o's set is in the database: s's goes there too
	}
	if s.i != 0 {
		if o.i != 0 {
			s.f += float64(a.sets.Union(s.setID(), o.setID()))
		}
		for v := range o.set() {
			a.insert(s, unsafe.Slice(unsafe.StringData(v), len(v)))
		}
		return
	}
	if len(o.set()) > 0 && s.ext == nil {
		s.setTo(make(map[string]struct{}, len(o.set())))
	}
	for v := range o.set() {
		s.set()[v] = struct{}{}
	}
	if len(s.set()) > spillAt && a.sets != nil {
		a.spill(s)
	}
}

func (a *aggs) Result(c acc) []outVal {
	// Results come from a slab (one allocation per thousand or so); they
	// are never reused, only collected once no pane holds them.
	n := len(a.list)
	out := cut(&a.outs, n, 1024)
	for k := range a.list {
		s := c.slot(k)
		switch a.list[k].Kind {
		case jobfile.AggCount, jobfile.AggCountField:
			out[k] = outVal{kind: vInt, i: s.i}
		case jobfile.AggSum:
			switch {
			case s.float:
				out[k] = outVal{kind: vFloat, f: float64(s.i)/pow10[s.scale] + s.f}
			case s.scale == 0:
				out[k] = outVal{kind: vInt, i: s.i}
			default:
				out[k] = outVal{kind: vDec, i: s.i, scale: s.scale}
			}
		case jobfile.AggMin, jobfile.AggMax:
			switch {
			case !s.has:
			case s.float:
				out[k] = outVal{kind: vFloat, f: s.f}
			default:
				out[k] = outVal{kind: vInt, i: s.i}
			}
		case jobfile.AggAvg:
			if s.i > 0 {
				out[k] = outVal{kind: vFloat, f: s.f / float64(s.i)}
			}
		case jobfile.AggCountDistinct:
			out[k] = outVal{kind: vInt, i: s.distinct()}
		case jobfile.AggPercentile, jobfile.AggMedian, jobfile.AggApproxDistinct, jobfile.AggFirst, jobfile.AggLast, jobfile.AggHistogram, jobfile.AggTop:
			out[k] = a.resultMore(k, s)
		}
		out[k].partial = s.partial
	}
	return out
}

// setAggs is aggs of a job with count_distinct, whose sets grow with the
// input: it asks an operator instance with a state database for a store to
// keep them in (engine.SetUser), a session merged into another gives it
// its set rather than a copy (engine.Absorber), and a sliding window's
// count of its slices' sets is read, not copied (engine.MergedResulter).
// A job without count_distinct pays for none of it.
type setAggs struct{ *aggs }

var (
	_ engine.SetUser[acc]                  = setAggs{}
	_ engine.Absorber[acc]                 = setAggs{}
	_ engine.MergedResulter[acc, []outVal] = setAggs{}
)

// UseSets keeps the sets in s from now on.
func (a setAggs) UseSets(s engine.SetStore) { a.sets = s }

// Absorb is Merge of an accumulator that goes away: of each pair of sets
// the larger stays, the smaller is added to it and deleted.
func (a setAggs) Absorb(c, other acc) acc {
	for k := range a.list {
		if a.list[k].Kind != jobfile.AggCountDistinct {
			continue
		}
		s, o := c.slot(k), other.slot(k)
		if o.distinct() > s.distinct() {
			s.ext, o.ext = o.ext, s.ext
			s.i, o.i = o.i, s.i
			s.f, o.f = o.f, s.f
		}
		a.mergeDistinct(s, o)
		if o.i != 0 {
			a.sets.Drop(o.setID())
		}
		o.ext, o.i, o.f = nil, 0, 0
	}
	c = a.merge(c, other, true, true) // the other aggregates; the sets are merged
	a.recycle(other)
	return c
}

// MergedResult is the result of a sliding window made of its slices,
// parts, the other aggregates merged as Merge does. The count of the
// slices' sets in the database is read as the store reads them, not
// copied into a set of their own; the values they hold in themselves
// are counted once and when no set of the database has them.
func (a setAggs) MergedResult(parts []acc) []outVal {
	c := a.New()
	for _, p := range parts {
		c = a.merge(c, p, false, false)
	}
	for k := range a.list {
		if a.list[k].Kind != jobfile.AggCountDistinct {
			continue
		}
		a.ids = a.ids[:0]
		var n int64
		for _, p := range parts {
			if s := p.slot(k); s.i != 0 {
				a.ids, n = append(a.ids, s.setID()), s.distinct()
			}
		}
		if len(a.ids) > 1 {
			n = a.sets.Count(a.ids)
		}
		s := c.slot(k)
		for _, p := range parts {
			for v := range p.slot(k).set() {
				if _, ok := s.set()[v]; ok || a.stored(v) {
					continue
				}
				if s.ext == nil {
					s.setTo(map[string]struct{}{})
				}
				s.set()[v] = struct{}{}
			}
		}
		s.f = float64(n) // a count, of no set of its own
	}
	out := a.Result(c)
	a.Release(c)
	return out
}

// stored reports whether one of the sets a.ids has v.
func (a setAggs) stored(v string) bool {
	for _, id := range a.ids {
		if a.sets.Contains(id, unsafe.Slice(unsafe.StringData(v), len(v))) {
			return true
		}
	}
	return false
}

// Settle puts the sets of a restored accumulator where the aggregate keeps
// them: a set the accumulator held in itself (a checkpoint of the memory
// backend, or of a weir that kept sets so) or that from reads (a
// checkpoint of the state database, at another parallelism) goes into the
// store, under an id of this instance; with no store, into memory.
func (a setAggs) Settle(c acc, from engine.SetSource) (acc, error) {
	for k := range a.slots(c) {
		if a.list[k].Kind == jobfile.AggCountDistinct {
			if err := a.settle(c.slot(k), from); err != nil {
				return c, fmt.Errorf("aggregate %s: %w", a.list[k].Name, err)
			}
		}
	}
	return c, nil
}

func (a setAggs) settle(s *slot, from engine.SetSource) error {
	if a.sets != nil {
		if s.i != 0 && from != nil {
			id, n := a.sets.NewSet(), 0.0
			err := from(s.setID(), func(v []byte) {
				if a.sets.Insert(id, v) {
					n++
				}
			})
			if err != nil {
				return err
			}
			if n != s.f {
				return fmt.Errorf("a set of %v values holds %v: %w", s.f, n, enc.ErrCorrupt)
			}
			s.i = int64(id)
		}
		switch {
		case s.i == 0 && len(s.set()) > spillAt:
			a.spill(s)
		case s.i != 0:
			for v := range s.set() { // a set of both (none is)
				a.insert(s, unsafe.Slice(unsafe.StringData(v), len(v)))
			}
			s.setTo(nil)
		}
		return nil
	}
	if s.i != 0 {
		if from == nil {
			return fmt.Errorf("set %d is in no checkpoint: %w", s.i, enc.ErrCorrupt)
		}
		if s.ext == nil {
			s.setTo(make(map[string]struct{}, int(s.f)))
		}
		if err := from(s.setID(), func(v []byte) { s.set()[string(v)] = struct{}{} }); err != nil {
			return err
		}
		if float64(len(s.set())) != s.f {
			return fmt.Errorf("a set of %v values holds %d: %w", s.f, len(s.set()), enc.ErrCorrupt)
		}
		s.i, s.f = 0, 0
	}
	return nil
}
