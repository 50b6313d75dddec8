package aggregate

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/weirstream/weir/mtime"
)

// Pick is the accumulator and result of First and Last: the value of the
// event picked, its event time, and whether any event was seen (a
// discarding pane can be empty).
type Pick[V any] struct {
	Value V
	Time  mtime.Time
	OK    bool
}

// First is f of the event of the earliest event time, ts, in the pane. Of
// events of one time the one added first is kept: in a window, the one
// that arrived first. A merge keeps its first accumulator's on a tie, as
// if the second's events arrived after: the engine merges sessions and a
// sliding window's slices in order of their start, and no two of them hold
// events of one time.
func First[T, V any](ts func(T) mtime.Time, f func(T) V) Func[T, Pick[V], Pick[V]] {
	return pick[T, V]{ts, f, false}
}

// Last is f of the event of the latest event time, ts, in the pane. Of
// events of one time the one added last is kept: in a window, the one that
// arrived last. A merge takes its second accumulator's on a tie.
func Last[T, V any](ts func(T) mtime.Time, f func(T) V) Func[T, Pick[V], Pick[V]] {
	return pick[T, V]{ts, f, true}
}

type pick[T, V any] struct {
	ts   func(T) mtime.Time
	f    func(T) V
	last bool
}

func (pick[T, V]) New() Pick[V] { return Pick[V]{} }
func (p pick[T, V]) Add(acc Pick[V], v T) Pick[V] {
	return p.Merge(acc, Pick[V]{p.f(v), p.ts(v), true})
}
func (p pick[T, V]) Merge(a, b Pick[V]) Pick[V] {
	switch {
	case !b.OK:
		return a
	case !a.OK, p.last && b.Time >= a.Time, !p.last && b.Time < a.Time:
		return b
	}
	return a
}
func (pick[T, V]) Result(acc Pick[V]) Pick[V] { return acc }

// Buckets is the result of Histogram: Counts[i] is the number of values v
// with Le[i-1] < v <= Le[i] (v <= Le[0] for the first), Above the number
// of those above the last bound. The bounds are inclusive above, as
// Prometheus's le, but each count is its bucket's alone, not cumulative.
type Buckets struct {
	Le     []float64
	Counts []int64
	Above  int64
}

// Histogram counts f of the events in the buckets of bounds, which must
// ascend (see Buckets). Its accumulator holds a count a bucket, and one
// for the values above the last bound.
func Histogram[T any, N Number](f func(T) N, bounds ...float64) Func[T, []int64, Buckets] {
	if len(bounds) == 0 {
		panic("aggregate.Histogram: no bounds")
	}
	for i := 1; i < len(bounds); i++ {
		if !(bounds[i] > bounds[i-1]) {
			panic(fmt.Sprintf("aggregate.Histogram: the bounds must ascend, got %v after %v", bounds[i], bounds[i-1]))
		}
	}
	return histogram[T, N]{f, slices.Clone(bounds)}
}

type histogram[T any, N Number] struct {
	f      func(T) N
	bounds []float64
}

// Bucket is the bucket of x among bounds, which ascend: the first bound x
// is at most, len(bounds) if none (NaN included).
func Bucket(bounds []float64, x float64) int {
	return sort.SearchFloat64s(bounds, x)
}

func (h histogram[T, N]) New() []int64 { return make([]int64, len(h.bounds)+1) }
func (h histogram[T, N]) Add(acc []int64, v T) []int64 {
	if acc == nil {
		acc = h.New()
	}
	acc[Bucket(h.bounds, float64(h.f(v)))]++
	return acc
}
func (h histogram[T, N]) Merge(a, b []int64) []int64 {
	if a == nil {
		a = h.New()
	}
	for i, n := range b {
		a[i] += n
	}
	return a
}
func (h histogram[T, N]) Result(acc []int64) Buckets {
	b := Buckets{Le: h.bounds, Counts: make([]int64, len(h.bounds))}
	if len(acc) == len(h.bounds)+1 {
		copy(b.Counts, acc)
		b.Above = acc[len(h.bounds)]
	}
	return b
}

// Counted is a value and how many events had it: an item of Top's result.
type Counted[V any] struct {
	Value V
	Count int64
}

// Top is the n values of f most frequent among the events, with their
// counts, the most frequent first; values of one count in ascending order.
// It counts exactly: its accumulator holds a count for each distinct value
// of the pane (a checkpoint needs V to be a string or an integer, which
// JSON keys a map by).
func Top[T any, V cmp.Ordered](f func(T) V, n int) Func[T, map[V]int64, []Counted[V]] {
	if n < 1 {
		panic(fmt.Sprintf("aggregate.Top: n must be at least 1, got %d", n))
	}
	return top[T, V]{f, n}
}

type top[T any, V cmp.Ordered] struct {
	f func(T) V
	n int
}

func (top[T, V]) New() map[V]int64 { return map[V]int64{} }
func (t top[T, V]) Add(acc map[V]int64, v T) map[V]int64 {
	if acc == nil {
		acc = map[V]int64{}
	}
	acc[t.f(v)]++
	return acc
}
func (top[T, V]) Merge(a, b map[V]int64) map[V]int64 {
	if a == nil {
		a = make(map[V]int64, len(b))
	}
	for v, n := range b {
		a[v] += n
	}
	return a
}
func (t top[T, V]) Result(acc map[V]int64) []Counted[V] {
	all := make([]Counted[V], 0, len(acc))
	for v, n := range acc {
		all = append(all, Counted[V]{v, n})
	}
	slices.SortFunc(all, func(a, b Counted[V]) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Value, b.Value))
	})
	return all[:min(t.n, len(all)):min(t.n, len(all))]
}
