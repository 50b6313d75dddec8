// Package aggregate holds weir's incremental aggregate functions: what a
// window computes from its events.
//
// An aggregate is an accumulator A that events of type T are added to one by
// one, that can be merged with another accumulator (session windows merge;
// sliding windows share work between overlapping windows), and that yields a
// result O at each firing. This is Flink's AggregateFunction and Beam's
// CombineFn. The built-ins (Count, Sum, Min, Max, Avg, CountDistinct) keep
// their accumulators in plain values and do not allocate per event.
//
// Contract for implementations: New returns an empty accumulator; Add and
// Merge may modify and return their first argument; Result must not retain or
// modify acc, and must return a value that stays valid after acc changes (a
// fresh slice or map, never acc itself), because a retraction re-emits an
// earlier result.
package aggregate

import (
	"math"
)

// Func is an incremental aggregate function from events T, through an
// accumulator A, to a result O.
type Func[T, A, O any] interface {
	New() A
	Add(acc A, v T) A
	Merge(acc, other A) A
	Result(acc A) O
}

// Releaser is an optional method of a Func: the runtime calls Release with
// an accumulator it will not use again (its window closed, or a session
// merged it into another), so that the Func can reuse its memory.
type Releaser[A any] interface {
	Release(acc A)
}

// Retracter is an optional method of a Func whose accumulator can take an
// event back out: Retract(Add(acc, v), v) holds what acc held. A window
// stage withdraws with it the earlier version of a revised event (a job's
// version_field, Timestamped.Versioned). Count, Sum and Avg have it; Min and
// Max cannot (the extreme withdrawn leaves no trace of the one before it),
// nor CountDistinct (its set does not count how many events gave a value).
type Retracter[T, A any] interface {
	Retract(acc A, v T) A
}

// CanRetract reports whether f can take events back out of its
// accumulators.
func CanRetract[T, A, O any](f Func[T, A, O]) bool {
	_, ok := f.(Retracter[T, A])
	return ok
}

// Of builds a Func from four functions.
func Of[T, A, O any](newAcc func() A, add func(A, T) A, merge func(A, A) A, result func(A) O) Func[T, A, O] {
	return funcs[T, A, O]{newAcc, add, merge, result}
}

type funcs[T, A, O any] struct {
	n func() A
	a func(A, T) A
	m func(A, A) A
	r func(A) O
}

func (f funcs[T, A, O]) New() A           { return f.n() }
func (f funcs[T, A, O]) Add(acc A, v T) A { return f.a(acc, v) }
func (f funcs[T, A, O]) Merge(a, b A) A   { return f.m(a, b) }
func (f funcs[T, A, O]) Result(acc A) O   { return f.r(acc) }

// Number is the constraint of Sum, Min, Max and Avg.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Count counts events.
func Count[T any]() Func[T, int64, int64] { return count[T]{} }

type count[T any] struct{}

func (count[T]) New() int64               { return 0 }
func (count[T]) Add(acc int64, _ T) int64 { return acc + 1 }
func (count[T]) Merge(a, b int64) int64   { return a + b }
func (count[T]) Result(acc int64) int64   { return acc }

// Retract implements Retracter.
func (count[T]) Retract(acc int64, _ T) int64 { return acc - 1 }

// Sum adds up f of each event.
func Sum[T any, N Number](f func(T) N) Func[T, N, N] { return sum[T, N]{f} }

type sum[T any, N Number] struct{ f func(T) N }

func (sum[T, N]) New() N             { return 0 }
func (s sum[T, N]) Add(acc N, v T) N { return acc + s.f(v) }
func (sum[T, N]) Merge(a, b N) N     { return a + b }
func (sum[T, N]) Result(acc N) N     { return acc }

// Retract implements Retracter.
func (s sum[T, N]) Retract(acc N, v T) N { return acc - s.f(v) }

// Extreme is the accumulator of Min and Max: the value, and whether any event
// was seen (a discarding pane can be empty).
type Extreme[N Number] struct {
	Value N
	OK    bool
}

// Min keeps the smallest f of the events. An empty pane has OK false.
func Min[T any, N Number](f func(T) N) Func[T, Extreme[N], Extreme[N]] {
	return extreme[T, N]{f, false}
}

// Max keeps the largest f of the events. An empty pane has OK false.
func Max[T any, N Number](f func(T) N) Func[T, Extreme[N], Extreme[N]] {
	return extreme[T, N]{f, true}
}

type extreme[T any, N Number] struct {
	f   func(T) N
	max bool
}

func (extreme[T, N]) New() Extreme[N] { return Extreme[N]{} }
func (e extreme[T, N]) Add(acc Extreme[N], v T) Extreme[N] {
	return e.Merge(acc, Extreme[N]{e.f(v), true})
}
func (e extreme[T, N]) Merge(a, b Extreme[N]) Extreme[N] {
	if !b.OK {
		return a
	}
	if !a.OK || (e.max && b.Value > a.Value) || (!e.max && b.Value < a.Value) {
		return b
	}
	return a
}
func (extreme[T, N]) Result(acc Extreme[N]) Extreme[N] { return acc }

// Mean is the accumulator of Avg.
type Mean struct {
	Sum   float64
	Count int64
}

// Avg is the arithmetic mean of f of the events; NaN for an empty pane.
func Avg[T any, N Number](f func(T) N) Func[T, Mean, float64] { return avg[T, N]{f} }

type avg[T any, N Number] struct{ f func(T) N }

func (avg[T, N]) New() Mean { return Mean{} }
func (a avg[T, N]) Add(acc Mean, v T) Mean {
	acc.Sum += float64(a.f(v))
	acc.Count++
	return acc
}

// Retract implements Retracter.
func (a avg[T, N]) Retract(acc Mean, v T) Mean {
	acc.Sum -= float64(a.f(v))
	acc.Count--
	return acc
}

func (avg[T, N]) Merge(a, b Mean) Mean { return Mean{a.Sum + b.Sum, a.Count + b.Count} }
func (avg[T, N]) Result(acc Mean) float64 {
	if acc.Count == 0 {
		return math.NaN()
	}
	return acc.Sum / float64(acc.Count)
}

// CountDistinct counts the distinct values of f among the events. Its
// accumulator is a set, so it allocates as new values arrive.
func CountDistinct[T any, V comparable](f func(T) V) Func[T, map[V]struct{}, int64] {
	return distinct[T, V]{f}
}

type distinct[T any, V comparable] struct{ f func(T) V }

func (distinct[T, V]) New() map[V]struct{} { return map[V]struct{}{} }
func (d distinct[T, V]) Add(acc map[V]struct{}, v T) map[V]struct{} {
	if acc == nil {
		acc = map[V]struct{}{}
	}
	acc[d.f(v)] = struct{}{}
	return acc
}
func (distinct[T, V]) Merge(a, b map[V]struct{}) map[V]struct{} {
	if a == nil {
		a = make(map[V]struct{}, len(b))
	}
	for k := range b {
		a[k] = struct{}{}
	}
	return a
}
func (distinct[T, V]) Result(acc map[V]struct{}) int64 { return int64(len(acc)) }

// Collect keeps every event of the pane, in arrival order: the accumulator of
// a process-window function, which sees all of a window's elements.
func Collect[T any]() Func[T, []T, []T] { return collect[T]{} }

type collect[T any] struct{}

func (collect[T]) New() []T             { return nil }
func (collect[T]) Add(acc []T, v T) []T { return append(acc, v) }
func (collect[T]) Merge(a, b []T) []T   { return append(a, b...) }
func (collect[T]) Result(acc []T) []T   { return append([]T(nil), acc...) }

// Process is a process-window function: f sees all of a pane's elements (in
// arrival order; for merged sessions, the parts in order of start) and returns
// the result.
func Process[T, O any](f func(elems []T) O) Func[T, []T, O] { return process[T, O]{f} }

type process[T, O any] struct{ f func([]T) O }

func (process[T, O]) New() []T             { return nil }
func (process[T, O]) Add(acc []T, v T) []T { return append(acc, v) }
func (process[T, O]) Merge(a, b []T) []T   { return append(a, b...) }
func (p process[T, O]) Result(acc []T) O   { return p.f(acc) }
