package aggregate

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

// PercentileAccuracy is the relative accuracy of Percentile and Median: the
// value they give for quantile q is within 1% of the value of rank
// floor(q·(n-1)) among the n values, sorted (of its absolute value, on the
// same side of zero), as long as the values of a window span a ratio of at
// most about 10^17 on each side of zero (PercentileMaxBins).
const PercentileAccuracy = 0.01

// PercentileMaxBins is the most bins a Sketch keeps on each side of zero:
// at PercentileAccuracy a bin spans a factor of about 1.02, so 2048 of them
// span a ratio of 10^17. Past that the lowest bins of each side (the
// positive values nearest zero, and the negative ones) are merged into
// one, where the accuracy is lost. A sketch's memory is 8 bytes a bin, up
// to 32 KiB, and grows with the span of its values, not their number: one
// of values from 1 ms to 10 s holds some 470 bins.
const PercentileMaxBins = 2048

// sketchMapping is the index mapping of every sketch: its bins are the
// same, so that any two merge. The cubically interpolated mapping keeps
// the logarithmic one's guarantee without computing a logarithm, for about
// 1% more bins.
var sketchMapping = func() mapping.IndexMapping {
	m, err := mapping.NewCubicallyInterpolatedMapping(PercentileAccuracy)
	if err != nil {
		panic(err)
	}
	return m
}()

// sketchLimit is the largest magnitude a sketch tells apart: a value
// beyond it counts as it.
var sketchLimit = sketchMapping.MaxIndexableValue()

// Sketch is the accumulator of Percentile and Median: a DDSketch (Masson,
// Rim and Lee, VLDB 2019) of relative accuracy PercentileAccuracy over at
// most PercentileMaxBins bins a side. Sketches merge exactly: the merge of
// two is the sketch of all their values, whatever their order, so that
// sessions and sliding windows give the values a single window would.
// Adding a value allocates only when the span of the values grows.
// A Sketch is encoded for checkpoints by its bins (AppendBinary, and JSON).
type Sketch struct {
	s *ddsketch.DDSketch
}

// NewSketch returns an empty sketch.
func NewSketch() *Sketch {
	return &Sketch{ddsketch.NewDDSketch(sketchMapping,
		store.NewCollapsingLowestDenseStore(PercentileMaxBins), store.NewCollapsingLowestDenseStore(PercentileMaxBins))}
}

// Add adds x. A magnitude beyond about 1.2e308 counts as that; NaN is not
// added.
func (s *Sketch) Add(x float64) {
	switch {
	case x > sketchLimit:
		x = sketchLimit
	case x < -sketchLimit:
		x = -sketchLimit
	case x != x:
		return
	}
	s.s.Add(x) // no error: x is a number the mapping indexes
}

// Merge adds the values of o to s; o is unchanged.
func (s *Sketch) Merge(o *Sketch) {
	if o == nil {
		return
	}
	s.s.MergeWith(o.s) // no error: one mapping
}

// Clear empties s, keeping its memory for the values it is given next.
func (s *Sketch) Clear() { s.s.Clear() }

// Copy returns a sketch of the same values that shares nothing with s.
func (s *Sketch) Copy() *Sketch { return &Sketch{s.s.Copy()} }

// Count is the number of values added.
func (s *Sketch) Count() int64 { return int64(s.s.GetCount()) }

// Quantile is the value at quantile q (in [0, 1]) of the values added:
// within PercentileAccuracy of the value of rank floor(q·(n-1)) among the
// n values, sorted; ok is false when there are none. (The rank is found
// here rather than by the DDSketch, which takes the rank above it among
// negative values.)
func (s *Sketch) Quantile(q float64) (v float64, ok bool) {
	if s == nil || s.s.IsEmpty() || !(q >= 0 && q <= 1) {
		return math.NaN(), false
	}
	n := s.s.GetCount()
	rank := math.Floor(float64(q * (n - 1))) // no fused multiply-add: the same rank on every machine
	neg := s.s.GetNegativeValueStore()
	negCount := neg.TotalCount()
	switch {
	case rank < negCount:
		// The negative values are kept by magnitude: the rank-th lowest is
		// the (negCount-1-rank)-th smallest in magnitude.
		return -s.s.Value(neg.KeyAtRank(negCount - 1 - rank)), true
	case rank < negCount+s.s.GetZeroCount():
		return 0, true
	}
	return s.s.Value(s.s.GetPositiveValueStore().KeyAtRank(rank - negCount - s.s.GetZeroCount())), true
}

// Bins is the number of bins s holds in memory, of 8 bytes each.
func (s *Sketch) Bins() int {
	n := 0
	for _, st := range []store.Store{s.s.GetPositiveValueStore(), s.s.GetNegativeValueStore()} {
		lo, err1 := st.MinIndex()
		hi, err2 := st.MaxIndex()
		if err1 == nil && err2 == nil {
			n += hi - lo + 1
		}
	}
	return n
}

// sketchFormat is the first byte of a sketch's binary encoding.
const sketchFormat = 1

// AppendBinary appends the encoding of s: a format byte, the count of
// zeros, then for the positive and then the negative side the number of
// bins that hold values and, for each in order, its index (the first as it
// is, the others as the step from the one before) and its count.
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, sketchFormat)
	b = binary.AppendUvarint(b, uint64(s.s.GetZeroCount()))
	for _, st := range []store.Store{s.s.GetPositiveValueStore(), s.s.GetNegativeValueStore()} {
		n := 0
		st.ForEach(func(int, float64) bool { n++; return false })
		b = binary.AppendUvarint(b, uint64(n))
		prev := 0
		st.ForEach(func(index int, count float64) bool {
			b = binary.AppendVarint(b, int64(index-prev))
			b = binary.AppendUvarint(b, uint64(count))
			prev = index
			return false
		})
	}
	return b, nil
}

var errSketch = errors.New("aggregate: not the encoding of a sketch")

// UnmarshalBinary sets s to the sketch AppendBinary encoded in b.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != sketchFormat {
		return errSketch
	}
	b = b[1:]
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	fresh := NewSketch()
	zeros := uv()
	if zeros > 0 {
		fresh.s.AddWithCount(0, float64(zeros))
	}
	for _, st := range []store.Store{fresh.s.GetPositiveValueStore(), fresh.s.GetNegativeValueStore()} {
		n := uv()
		if b == nil || n > PercentileMaxBins*4 {
			return errSketch
		}
		index := int64(0)
		for range n {
			d, m := binary.Varint(b)
			if m <= 0 {
				return errSketch
			}
			b = b[m:]
			index += d
			c := uv()
			if b == nil || c == 0 || index < math.MinInt32 || index > math.MaxInt32 {
				return errSketch
			}
			st.AddWithCount(int(index), float64(c))
		}
	}
	if len(b) != 0 {
		return errSketch
	}
	s.s = fresh.s
	return nil
}

// MarshalJSON encodes s as the base64 of AppendBinary: a checkpoint of a
// pipeline keeps its accumulators as JSON.
func (s *Sketch) MarshalJSON() ([]byte, error) {
	b, _ := s.AppendBinary(nil)
	return json.Marshal(b)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *Sketch) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("aggregate: a sketch: %w", err)
	}
	return s.UnmarshalBinary(b)
}

// Percentile is the value at quantile q of f of the events, from a Sketch:
// within PercentileAccuracy of the value of rank floor(q·(n-1)) among the
// pane's n values, sorted. q must be in (0, 1]; NaN for an empty pane.
func Percentile[T any, N Number](f func(T) N, q float64) Func[T, *Sketch, float64] {
	if !(q > 0 && q <= 1) {
		panic(fmt.Sprintf("aggregate.Percentile: q must be in (0, 1], got %v", q))
	}
	return percentile[T, N]{f, q}
}

// Median is Percentile at 0.5.
func Median[T any, N Number](f func(T) N) Func[T, *Sketch, float64] { return Percentile(f, 0.5) }

type percentile[T any, N Number] struct {
	f func(T) N
	q float64
}

func (percentile[T, N]) New() *Sketch { return NewSketch() }
func (p percentile[T, N]) Add(acc *Sketch, v T) *Sketch {
	acc.Add(float64(p.f(v)))
	return acc
}
func (percentile[T, N]) Merge(a, b *Sketch) *Sketch {
	a.Merge(b)
	return a
}
func (p percentile[T, N]) Result(acc *Sketch) float64 {
	v, _ := acc.Quantile(p.q)
	return v
}
