package aggregate

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir/mtime"
)

// exactQuantile is the value of rank floor(q·(n-1)) of xs, sorted: what a
// percentile approximates.
func exactQuantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(math.Floor(q*float64(len(s)-1)))]
}

// within says whether got is within PercentileAccuracy of want, relatively.
func within(got, want float64) bool {
	return math.Abs(got-want) <= PercentileAccuracy*math.Abs(want)+1e-12
}

// A sketch's quantiles are within its stated relative accuracy of the
// exact ones, whatever the values' spread and sign, and the merge of
// sketches of parts of the values is the sketch of them all, byte for
// byte, in any order.
func TestSketchQuantilesWithinAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sets := map[string][]float64{}
	for _, n := range []int{1, 2, 7, 100, 10_000} {
		var lat, mixed, ints []float64
		for range n {
			lat = append(lat, math.Exp(r.NormFloat64()*2+3)) // latencies: 0.05 to 8000
			mixed = append(mixed, r.NormFloat64()*100)       // both signs
			ints = append(ints, float64(r.IntN(5)))          // zeros and ties
		}
		sets[fmt.Sprintf("lognormal/%d", n)] = lat
		sets[fmt.Sprintf("normal/%d", n)] = mixed
		sets[fmt.Sprintf("ints/%d", n)] = ints
	}
	for name, xs := range sets {
		whole := NewSketch()
		parts := []*Sketch{NewSketch(), NewSketch(), NewSketch()}
		for i, x := range xs {
			whole.Add(x)
			parts[i%3].Add(x)
		}
		merged := NewSketch()
		for _, i := range []int{2, 0, 1} {
			merged.Merge(parts[i])
		}
		for _, q := range []float64{0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1} {
			want := exactQuantile(xs, q)
			got, ok := whole.Quantile(q)
			if !ok || !within(got, want) {
				t.Errorf("%s: quantile %v is %v, want %v within %v", name, q, got, want, PercentileAccuracy)
			}
			if m, _ := merged.Quantile(q); m != got {
				t.Errorf("%s: the merge's quantile %v is %v, the whole's %v", name, q, m, got)
			}
		}
		a, _ := whole.AppendBinary(nil)
		b, _ := merged.AppendBinary(nil)
		if !bytes.Equal(a, b) || whole.Count() != int64(len(xs)) {
			t.Errorf("%s: the merge encodes as %x, the whole as %x (count %d)", name, b, a, whole.Count())
		}
		back := NewSketch()
		if err := back.UnmarshalBinary(a); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c, _ := back.AppendBinary(nil); !bytes.Equal(a, c) {
			t.Errorf("%s: read back as %x, wrote %x", name, c, a)
		}
		js, _ := whole.MarshalJSON()
		var fromJSON Sketch
		if err := fromJSON.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if q1, _ := fromJSON.Quantile(0.5); q1 != func() float64 { v, _ := whole.Quantile(0.5); return v }() {
			t.Errorf("%s: the median read back from JSON is %v", name, q1)
		}
	}
	if _, ok := NewSketch().Quantile(0.5); ok {
		t.Error("an empty sketch has a quantile")
	}
	for _, bad := range [][]byte{nil, {9}, {1}, {1, 0, 1}, {1, 0, 0, 0, 7}} {
		if err := NewSketch().UnmarshalBinary(bad); err == nil {
			t.Errorf("%x read as a sketch", bad)
		}
	}
}

// Percentile and Median as functions of a Go pipeline.
func TestPercentileFunc(t *testing.T) {
	f := Percentile(func(x int) int { return x }, 0.9)
	acc := f.New()
	for i := 1; i <= 100; i++ {
		acc = f.Add(acc, i)
	}
	if got := f.Result(acc); !within(got, 90) { // rank floor(0.9·99) = 89: the value 90
		t.Errorf("p90 of 1..100 is %v", got)
	}
	m := Median(func(x int) int { return x })
	acc2 := m.Merge(m.Add(m.New(), 3), m.Add(m.Add(m.New(), 1), 2))
	if got := m.Result(acc2); !within(got, 2) {
		t.Errorf("the median of 1, 2, 3 is %v", got)
	}
}

// An approximate distinct count is exact up to DistinctExact values and
// within 2.5% (three times its standard error) for 100,000; its state is
// that of the set of values, whatever their order, repeats and merges.
func TestApproxCountDistinct(t *testing.T) {
	for _, n := range []int{0, 1, 1000, DistinctExact, DistinctExact + 1, 100_000} {
		d := NewDistinct()
		parts := []*Distinct{NewDistinct(), NewDistinct()}
		for i := range n {
			v := []byte(fmt.Sprintf("user-%d", i*7919%max(n, 1)))
			d.Insert(v)
			d.Insert(v) // a repeat counts once
			parts[i%2].Insert(v)
		}
		got := d.Estimate()
		if n <= DistinctExact && got != int64(n) {
			t.Errorf("%d values counted %d: exact up to %d", n, got, DistinctExact)
		}
		if rel := math.Abs(float64(got)-float64(n)) / max(float64(n), 1); rel > 0.025 {
			t.Errorf("%d values estimated %d: %.2f%% off", n, got, 100*rel)
		}
		merged := NewDistinct()
		merged.Merge(parts[1])
		merged.Merge(parts[0])
		a, _ := d.AppendBinary(nil)
		b, _ := merged.AppendBinary(nil)
		if !bytes.Equal(a, b) {
			t.Errorf("%d values: the merge's state differs from the whole's", n)
		}
		back := NewDistinct()
		if err := back.UnmarshalBinary(a); err != nil || back.Estimate() != got {
			t.Errorf("%d values read back: %v, %d", n, err, back.Estimate())
		}
		if c := back.Copy(); c.Estimate() != got {
			t.Errorf("%d values: a copy estimates %d", n, c.Estimate())
		}
	}
	if err := NewDistinct().UnmarshalBinary([]byte{0, 2, 1}); err == nil {
		t.Error("a short encoding was read")
	}
}

// First and Last pick by event time; of one time, First keeps the one
// added first and Last the one added last. Histogram counts each value in
// the first bucket whose bound it is at most; Top orders by count, then
// value.
func TestPickHistogramTop(t *testing.T) {
	type ev struct {
		t mtime.Time
		v string
	}
	evs := []ev{{5, "a"}, {3, "b"}, {3, "c"}, {9, "d"}, {9, "e"}, {4, "f"}}
	ts := func(e ev) mtime.Time { return e.t }
	val := func(e ev) string { return e.v }
	first, last := First(ts, val), Last(ts, val)
	fa, la := first.New(), last.New()
	for _, e := range evs {
		fa, la = first.Add(fa, e), last.Add(la, e)
	}
	if r := first.Result(fa); r.Value != "b" || r.Time != 3 {
		t.Errorf("first: %+v", r)
	}
	if r := last.Result(la); r.Value != "e" || r.Time != 9 {
		t.Errorf("last: %+v", r)
	}
	if r := first.Result(first.New()); r.OK {
		t.Errorf("first of nothing: %+v", r)
	}

	h := Histogram(func(x float64) float64 { return x }, 10, 50, 100)
	hacc := h.New()
	for _, x := range []float64{-1, 10, 10.5, 50, 99, 100, 100.01, 1e9} {
		hacc = h.Add(hacc, x)
	}
	if r := h.Result(hacc); !slices.Equal(r.Counts, []int64{2, 2, 2}) || r.Above != 2 {
		t.Errorf("histogram: %+v", r)
	}

	top := Top(func(s string) string { return s }, 3)
	tacc := top.New()
	for _, s := range []string{"z", "y", "x", "y", "z", "w", "v"} {
		tacc = top.Add(tacc, s)
	}
	if r := top.Result(tacc); fmt.Sprint(r) != "[{y 2} {z 2} {v 1}]" {
		t.Errorf("top: %v", r)
	}
}
