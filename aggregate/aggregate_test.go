package aggregate

import (
	"math"
	"testing"
)

// run adds vs to a fresh accumulator, split in two halves merged at the end
// (as sessions and slices merge), and returns the result.
func run[T, A, O any](f Func[T, A, O], vs ...T) O {
	a, b := f.New(), f.New()
	for i, v := range vs {
		if i < len(vs)/2 {
			a = f.Add(a, v)
		} else {
			b = f.Add(b, v)
		}
	}
	return f.Result(f.Merge(a, b))
}

func id(v int) int { return v }

func TestBuiltins(t *testing.T) {
	vs := []int{4, -2, 9, 4, 7}
	if got := run(Count[int](), vs...); got != 5 {
		t.Errorf("count = %d", got)
	}
	if got := run(Sum(id), vs...); got != 22 {
		t.Errorf("sum = %d", got)
	}
	if got := run(Min(id), vs...); got != (Extreme[int]{-2, true}) {
		t.Errorf("min = %v", got)
	}
	if got := run(Max(id), vs...); got != (Extreme[int]{9, true}) {
		t.Errorf("max = %v", got)
	}
	if got := run(Avg(id), vs...); got != 4.4 {
		t.Errorf("avg = %v", got)
	}
	if got := run(CountDistinct(id), vs...); got != 4 {
		t.Errorf("count distinct = %d", got)
	}
	if got := run(Collect[int](), vs...); len(got) != 5 || got[0] != 4 || got[4] != 7 {
		t.Errorf("collect = %v", got)
	}
}

func TestEmptyPanes(t *testing.T) {
	if got := run(Max(id)); got.OK {
		t.Errorf("max of nothing = %v", got)
	}
	if got := run(Avg(id)); !math.IsNaN(got) {
		t.Errorf("avg of nothing = %v", got)
	}
	if got := run(Sum(id)); got != 0 {
		t.Errorf("sum of nothing = %v", got)
	}
}

func TestResultDoesNotAliasTheAccumulator(t *testing.T) {
	f := Collect[int]()
	acc := f.Add(f.New(), 1)
	res := f.Result(acc)
	acc = f.Add(acc, 2)
	acc[0] = 99
	if len(res) != 1 || res[0] != 1 {
		t.Errorf("result changed with the accumulator: %v", res)
	}
}

func TestOf(t *testing.T) {
	// A user-defined aggregate: the range (max - min) of the values.
	type mm struct{ lo, hi int }
	f := Of(func() mm { return mm{math.MaxInt, math.MinInt} },
		func(a mm, v int) mm { return mm{min(a.lo, v), max(a.hi, v)} },
		func(a, b mm) mm { return mm{min(a.lo, b.lo), max(a.hi, b.hi)} },
		func(a mm) int { return a.hi - a.lo })
	if got := run(f, 3, 10, -1, 4); got != 11 {
		t.Errorf("range = %d", got)
	}
}

func TestProcess(t *testing.T) {
	f := Process(func(vs []int) string { return string(rune('a' + len(vs))) })
	if got := run(f, 1, 2, 3); got != "d" {
		t.Errorf("process = %q", got)
	}
}

func BenchmarkCountAdd(b *testing.B) {
	f := Count[int]()
	acc := f.New()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		acc = f.Add(acc, i)
	}
}

func TestRetract(t *testing.T) {
	vs := []int{4, -2, 9, 4, 7}
	// Adding every value, then taking 9 and -2 back, is adding the rest.
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s: retracted %v, want %v", name, got, want)
		}
	}
	cnt := Count[int]()
	c := cnt.New()
	for _, v := range vs {
		c = cnt.Add(c, v)
	}
	r := cnt.(Retracter[int, int64])
	check("count", cnt.Result(r.Retract(r.Retract(c, 9), -2)), run(cnt, 4, 4, 7))
	sm := Sum(id)
	s := sm.New()
	for _, v := range vs {
		s = sm.Add(s, v)
	}
	rs := sm.(Retracter[int, int])
	check("sum", sm.Result(rs.Retract(rs.Retract(s, 9), -2)), run(sm, 4, 4, 7))
	av := Avg(id)
	a := av.New()
	for _, v := range vs {
		a = av.Add(a, v)
	}
	ra := av.(Retracter[int, Mean])
	check("avg", av.Result(ra.Retract(ra.Retract(a, 9), -2)), run(av, 4, 4, 7))
	for name, ok := range map[string]bool{
		"min": CanRetract(Min(id)), "max": CanRetract(Max(id)), "count_distinct": CanRetract(CountDistinct(id)),
	} {
		if ok {
			t.Errorf("%s claims it can retract", name)
		}
	}
	if !CanRetract(Count[int]()) || !CanRetract(Sum(id)) || !CanRetract(Avg(id)) {
		t.Error("count, sum and avg cannot retract")
	}
}
