package process_test

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/process"
)

func newOp[T, O any](t testing.TB, f process.Func[int, T, O], emit func(O)) *process.Op[int, T, O] {
	t.Helper()
	op, err := process.New(process.Config[int, T, O]{Func: f, Emit: emit})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A map's entries keep the order they were put in, a deleted one's place
// taken by the last, and that order survives a snapshot.
func TestMapOrder(t *testing.T) {
	m := process.NewMap[string, int]("m")
	var got []string
	f := process.Func[int, string, string]{State: []process.State{m}, Element: func(c *process.Context[int, string], v string) error {
		switch {
		case strings.HasPrefix(v, "-"):
			m.Delete(c, v[1:])
		case v == "?":
			var s []string
			for k, x := range m.All(c) {
				s = append(s, fmt.Sprintf("%s=%d", k, x))
			}
			got = append(got, strings.Join(s, " "))
		default:
			n, _ := m.Get(c, v)
			m.Put(c, v, n+1)
		}
		return nil
	}}
	op := newOp(t, f, func(string) {})
	for _, v := range []string{"a", "b", "c", "a", "d", "-b", "?", "-zz", "e", "?"} {
		if err := op.Element(1, 0, v); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := op.AppendKeys(nil, process.JSONKeys[int]{}, func(int) uint64 { return 0 }, 1, func(int) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	op = newOp(t, f, func(string) {})
	if err := op.RestoreKeys(enc.NewDecoder(snap), process.JSONKeys[int]{}); err != nil {
		t.Fatal(err)
	}
	if err := op.Element(1, 0, "?"); err != nil {
		t.Fatal(err)
	}
	want := []string{"a=2 d=1 c=1", "a=2 d=1 c=1 e=1", "a=2 d=1 c=1 e=1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A snapshot in parts by key group restores whole in one Op, and the
// other way round: the keys, their state and their timers are the same.
func TestRestoreAtAnotherParallelism(t *testing.T) {
	sum := process.NewValue[int]("sum")
	f := process.Func[int, int, string]{State: []process.State{sum},
		Element: func(c *process.Context[int, string], v int) error {
			n, _ := sum.Get(c)
			sum.Set(c, n+v)
			c.EventTimer(c.Time() + 10)
			return nil
		},
		Timer: func(c *process.Context[int, string], tm process.Timer) error {
			n, _ := sum.Get(c)
			c.Emit(fmt.Sprintf("%d:%d@%d", c.Key(), n, tm.Time))
			sum.Clear(c)
			return nil
		}}
	run := func(op *process.Op[int, int, string], from, to int) {
		for i := from; i < to; i++ {
			if err := op.Element(i%7, mtime.Time(i), i); err != nil {
				t.Fatal(err)
			}
			if i%5 == 4 {
				if err := op.AdvanceWatermark(mtime.Time(i - 8)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := op.AdvanceWatermark(mtime.MaxTime); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	run(newOp(t, f, func(s string) { want = append(want, s) }), 0, 100)

	hash := func(k int) uint64 { return uint64(k) * 0x9E3779B97F4A7C15 }
	var got []string
	op := newOp(t, f, func(s string) { got = append(got, s) })
	for i := range 50 {
		if err := op.Element(i%7, mtime.Time(i), i); err != nil {
			t.Fatal(err)
		}
		if i%5 == 4 {
			op.AdvanceWatermark(mtime.Time(i - 8))
		}
	}
	header := op.AppendHeader(nil)
	var parts [][]byte
	for p := range 3 {
		b, err := op.AppendKeys(nil, process.JSONKeys[int]{}, hash, 128, func(g int) bool { return g*3/128 == p })
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, b)
	}
	op = newOp(t, f, func(s string) { got = append(got, s) })
	if err := op.RestoreHeader(enc.NewDecoder(header)); err != nil {
		t.Fatal(err)
	}
	for _, b := range parts {
		if err := op.RestoreKeys(enc.NewDecoder(b), process.JSONKeys[int]{}); err != nil {
			t.Fatal(err)
		}
	}
	if op.Keys() != 7 {
		t.Errorf("restored %d keys, want 7", op.Keys())
	}
	run(op, 50, 100)
	if !slices.Equal(got, want) {
		t.Errorf("restored from three parts:\n%q\nwant\n%q", got, want)
	}
}

// A state the function no longer has is dropped on restore; one it did
// not have starts empty.
func TestRestoreAChangedFunction(t *testing.T) {
	a, b := process.NewValue[int]("a"), process.NewValue[string]("b")
	set := func(c *process.Context[int, string], v int) error { a.Set(c, v); return nil }
	op := newOp(t, process.Func[int, int, string]{State: []process.State{a}, Element: set}, nil)
	op.Element(1, 0, 5)
	snap, _ := op.AppendKeys(nil, process.JSONKeys[int]{}, func(int) uint64 { return 0 }, 1, func(int) bool { return true })
	var got []string
	op = newOp(t, process.Func[int, int, string]{State: []process.State{b}, Element: func(c *process.Context[int, string], v int) error {
		x, ok := b.Get(c)
		got = append(got, fmt.Sprintf("%q %v", x, ok))
		return nil
	}}, nil)
	if err := op.RestoreKeys(enc.NewDecoder(snap), process.JSONKeys[int]{}); err != nil {
		t.Fatal(err)
	}
	if op.Keys() != 0 {
		t.Errorf("%d keys held: the key had only a dropped state", op.Keys())
	}
	op.Element(1, 0, 0)
	if !slices.Equal(got, []string{`"" false`}) {
		t.Errorf("got %q", got)
	}
}

// Timers set and deleted over and over take no room for long: the heap
// of a domain is compacted, and the timers kept, at the ends of time too,
// still fire in order.
func TestDeletedTimersAreCompacted(t *testing.T) {
	var fired []string
	f := process.Func[int, int, string]{Element: func(c *process.Context[int, string], v int) error {
		if v < 0 {
			c.EventTimer(mtime.MaxTime - 1)
			c.EventTimer(mtime.MinTime + 1)
			return nil
		}
		c.EventTimer(mtime.Time(v))
		c.DeleteEventTimer(mtime.Time(v))
		c.ProcessingTimer(mtime.Time(v))
		c.DeleteProcessingTimer(mtime.Time(v))
		return nil
	}, Timer: func(c *process.Context[int, string], tm process.Timer) error {
		fired = append(fired, fmt.Sprintf("%d@%d", c.Key(), tm.Time))
		return nil
	}}
	op := newOp(t, f, nil)
	op.Element(-1, 0, -1)
	for i := range 100_000 {
		op.Element(i%10, 0, i)
	}
	if ev, pt := op.Timers(); ev != 2 || pt != 0 || op.Keys() != 1 {
		t.Errorf("%d and %d timers of %d keys left", ev, pt, op.Keys())
	}
	op.AdvanceWatermark(mtime.MaxTime)
	if want := []string{fmt.Sprintf("-1@%d", mtime.MinTime+1), fmt.Sprintf("-1@%d", mtime.MaxTime-1)}; !slices.Equal(fired, want) {
		t.Errorf("fired %q, want %q", fired, want)
	}
	snap := op.AppendHeader(nil)
	if len(snap) > 32 {
		t.Errorf("header of %d bytes", len(snap))
	}
}

// The function's mistakes are said, not done: a state or a side output
// it does not list, or used outside a call; two of one name; a side
// output with no consumer, or one of another type.
func TestMisuse(t *testing.T) {
	mine, other := process.NewValue[int]("mine"), process.NewValue[int]("other")
	tag := process.NewOutput[string]("tag")
	var kept *process.Context[int, string]
	panics := func(what string, want string, f func(c *process.Context[int, string])) {
		t.Helper()
		op := newOp(t, process.Func[int, int, string]{State: []process.State{mine}, Element: func(c *process.Context[int, string], v int) error {
			kept = c
			f(c)
			return nil
		}}, nil)
		defer func() {
			t.Helper()
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), want) {
				t.Errorf("%s: got %v, want %q", what, r, want)
			}
		}()
		op.Element(1, 0, 1)
	}
	panics("a state not listed", `state "other" is not one of this function's states`, func(c *process.Context[int, string]) { other.Set(c, 1) })
	panics("a side output not listed", `side output "tag" is not one of this function's`, func(c *process.Context[int, string]) { tag.Emit(c, "x") })
	// A call returned: its context is stale.
	op := newOp(t, process.Func[int, int, string]{State: []process.State{mine}, Element: func(c *process.Context[int, string], v int) error {
		kept = c
		return nil
	}}, nil)
	op.Element(1, 0, 1)
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "outside a call") {
				t.Errorf("a kept context: %v", r)
			}
		}()
		mine.Set(kept, 1)
	}()

	for _, tc := range []struct {
		cfg  process.Config[int, int, string]
		want string
	}{
		{process.Config[int, int, string]{}, "the function has no Element"},
		{process.Config[int, int, string]{Func: process.Func[int, int, string]{Element: func(*process.Context[int, string], int) error { return nil },
			State: []process.State{mine, process.NewList[int]("mine")}}}, `state "mine": a state needs a name of its own`},
		{process.Config[int, int, string]{Func: process.Func[int, int, string]{Element: func(*process.Context[int, string], int) error { return nil },
			Sides: []process.Side{tag}}}, `side output "tag" goes nowhere`},
		{process.Config[int, int, string]{Func: process.Func[int, int, string]{Element: func(*process.Context[int, string], int) error { return nil },
			Sides: []process.Side{tag}}, Sides: map[string]any{"tag": func(int) {}}}, `side output "tag" takes a func(string), not a func(int)`},
		{process.Config[int, int, string]{Func: process.Func[int, int, string]{Element: func(*process.Context[int, string], int) error { return nil }},
			Sides: map[string]any{"tag": func(string) {}}}, `side output "tag" is not one of the function's`},
	} {
		if _, err := process.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

// An element whose key has its state already, read and written, with a
// timer set again, allocates nothing.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	n := process.NewValue[int64]("n")
	f := process.Func[int, int, int64]{State: []process.State{n}, Element: func(c *process.Context[int, int64], v int) error {
		x, _ := n.Get(c)
		n.Set(c, x+1)
		c.EventTimer(1 << 40)
		c.Emit(x)
		return nil
	}}
	op := newOp(t, f, func(int64) {})
	for i := range 1000 {
		op.Element(i%100, 0, i)
	}
	i := 0
	if a := testing.AllocsPerRun(1000, func() { op.Element(i%100, 0, i); i++ }); a != 0 {
		t.Errorf("%.1f allocations per element", a)
	}
}

// BenchmarkElement is a function counting per key in a value state: 10 000
// keys.
func BenchmarkElement(b *testing.B) {
	n := process.NewValue[int64]("n")
	f := process.Func[int, int, int64]{State: []process.State{n}, Element: func(c *process.Context[int, int64], v int) error {
		x, _ := n.Get(c)
		n.Set(c, x+1)
		return nil
	}}
	op, _ := process.New(process.Config[int, int, int64]{Func: f, Emit: func(int64) {}})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		op.Element(i%10_000, 0, i)
	}
}

// BenchmarkKeys reports the live heap a key takes, over a million string
// keys with one int64 value state, without and with an event-time timer
// each (the keys' own bytes not counted): what docs/operations.md states.
func BenchmarkKeys(b *testing.B) {
	keys := make([]string, 1_000_000)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	for _, timer := range []bool{false, true} {
		b.Run(fmt.Sprintf("timer=%v", timer), func(b *testing.B) {
			n := process.NewValue[int64]("n")
			f := process.Func[string, int, int64]{State: []process.State{n}, Element: func(c *process.Context[string, int64], v int) error {
				x, _ := n.Get(c)
				n.Set(c, x+1)
				if timer {
					c.EventTimer(1 << 40)
				}
				return nil
			}}
			var perKey float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				op, _ := process.New(process.Config[string, int, int64]{Func: f, Emit: func(int64) {}})
				for i, k := range keys {
					op.Element(k, 0, i)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perKey = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(len(keys))
				runtime.KeepAlive(op)
			}
			b.ReportMetric(perKey, "bytes/key")
		})
	}
}

// BenchmarkTimersOfOneKey is one key's 100,000 event-time timers, set in
// order of their instants or in the reverse order, then fired: a key's
// many timers cost what many keys' few do.
func BenchmarkTimersOfOneKey(b *testing.B) {
	f := process.Func[int, int, int64]{Element: func(c *process.Context[int, int64], v int) error {
		c.EventTimer(mtime.Time(v))
		return nil
	}, Timer: func(*process.Context[int, int64], process.Timer) error { return nil }}
	for _, reverse := range []bool{false, true} {
		b.Run(fmt.Sprintf("reverse=%v", reverse), func(b *testing.B) {
			for b.Loop() {
				op, _ := process.New(process.Config[int, int, int64]{Func: f, Emit: func(int64) {}})
				for i := range 100_000 {
					if reverse {
						i = 100_000 - i
					}
					op.Element(1, 0, i)
				}
				op.AdvanceWatermark(mtime.MaxTime)
				if st := op.Stats(); st.Fired[process.EventTime] != 100_000 {
					b.Fatalf("%d fired", st.Fired[process.EventTime])
				}
			}
		})
	}
}
