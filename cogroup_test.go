package weir_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// tuple is Flink's Tuple2 and Tuple3 of CoGroupJoinITCase: a key, a name
// and a time.
type tuple struct {
	Key, Name string
	TS        int64
}

func (t tuple) String() string {
	if t.Name == "" {
		return fmt.Sprintf("(%s,%d)", t.Key, t.TS)
	}
	return fmt.Sprintf("(%s,%s,%d)", t.Key, t.Name, t.TS)
}

// tuples is a source of ts, keyed by Key, its watermark one behind the
// latest time (Flink's punctuated ts - 1).
func tuples(p *weir.Pipeline, ts []tuple, name string) weir.Keyed[string, tuple] {
	s := weir.FromSlice(p, ts, weir.Named(name))
	stamped := weir.WithTimestamps(s, func(t tuple) mtime.Time { return mtime.Time(t.TS) }, watermark.BoundedOutOfOrderness(0).WithInterval(0))
	return weir.KeyBy(stamped, func(t tuple) string { return t.Key })
}

var tumbling3ms = window.NewStrategy(window.TumblingWindows(3 * time.Millisecond))

// collect runs p and returns the strings s holds, sorted, as Flink's
// tests sort them.
func collect(t *testing.T, p *weir.Pipeline, s weir.Stream[string]) []string {
	t.Helper()
	var got []string
	weir.Sink(s, func(v string) error { got = append(got, v); return nil })
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

func sorted(v ...string) []string { slices.Sort(v); return v }

// coGroupedString is a co-group's pane as CoGroupJoinITCase writes it:
// F: the first input's elements, S: the second's.
func coGroupedString(pn weir.Pane[string, weir.CoGrouped[[]tuple, []tuple]]) string {
	var b strings.Builder
	b.WriteString("F:")
	for _, x := range pn.Value.Left {
		b.WriteString(x.String())
	}
	b.WriteString(" S:")
	for _, x := range pn.Value.Right {
		b.WriteString(x.String())
	}
	return b.String()
}

// Flink CoGroupJoinITCase.testCoGroup: per key and tumbling window of
// 3 ms, both inputs' elements.
func TestFlinkCoGroup(t *testing.T) {
	p := weir.NewPipeline()
	first := tuples(p, []tuple{{"a", "", 0}, {"a", "", 1}, {"a", "", 2}, {"b", "", 3}, {"b", "", 4}, {"b", "", 5}, {"a", "", 6}, {"a", "", 7}, {"a", "", 8}}, "first")
	second := tuples(p, []tuple{{"a", "", 0}, {"a", "", 1}, {"b", "", 3}, {"c", "", 6}, {"c", "", 7}, {"c", "", 8}}, "second")
	panes, _ := weir.CoGroup(first, second, tumbling3ms, aggregate.Collect[tuple](), aggregate.Collect[tuple]())
	got := collect(t, p, weir.Map(panes, coGroupedString))
	want := sorted("F:(a,0)(a,1)(a,2) S:(a,0)(a,1)", "F:(b,3)(b,4)(b,5) S:(b,3)", "F:(a,6)(a,7)(a,8) S:", "F: S:(c,6)(c,7)(c,8)")
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var joinFirst = []tuple{{"a", "x", 0}, {"a", "y", 1}, {"a", "z", 2}, {"b", "u", 3}, {"b", "w", 5}, {"a", "i", 6}, {"a", "j", 7}, {"a", "k", 8}}

func joinedString(j weir.WindowJoined[string, tuple, tuple]) string {
	return j.Left.String() + ":" + j.Right.String()
}

// Flink CoGroupJoinITCase.testJoin: every pair of one key in one window.
func TestFlinkWindowJoin(t *testing.T) {
	p := weir.NewPipeline()
	first := tuples(p, joinFirst, "first")
	second := tuples(p, []tuple{{"a", "u", 0}, {"a", "w", 1}, {"b", "i", 3}, {"b", "k", 5}, {"a", "x", 6}, {"a", "z", 8}}, "second")
	joined, _ := weir.WindowJoin(first, second, tumbling3ms)
	got := collect(t, p, weir.Map(joined, joinedString))
	want := sorted("(a,x,0):(a,u,0)", "(a,x,0):(a,w,1)", "(a,y,1):(a,u,0)", "(a,y,1):(a,w,1)", "(a,z,2):(a,u,0)", "(a,z,2):(a,w,1)",
		"(b,u,3):(b,i,3)", "(b,u,3):(b,k,5)", "(b,w,5):(b,i,3)", "(b,w,5):(b,k,5)",
		"(a,i,6):(a,x,6)", "(a,i,6):(a,z,8)", "(a,j,7):(a,x,6)", "(a,j,7):(a,z,8)", "(a,k,8):(a,x,6)", "(a,k,8):(a,z,8)")
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Flink CoGroupJoinITCase.testSelfJoin: a stream joined with itself.
func TestFlinkWindowSelfJoin(t *testing.T) {
	p := weir.NewPipeline()
	first := tuples(p, joinFirst, "first")
	joined, _ := weir.WindowJoin(first, first, tumbling3ms)
	got := collect(t, p, weir.Map(joined, joinedString))
	var want []string
	for _, group := range [][]string{{"(a,x,0)", "(a,y,1)", "(a,z,2)"}, {"(b,u,3)", "(b,w,5)"}, {"(a,i,6)", "(a,j,7)", "(a,k,8)"}} {
		for _, l := range group {
			for _, r := range group {
				want = append(want, l+":"+r)
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The watermark of a co-group is the least of its inputs': read from one
// source, every left element first, the right ones (as old as the left
// ones) are not late, since the right input holds the watermark back
// before its first element; an element behind both inputs' watermarks is
// too late, with its side.
func TestCoGroupWatermarkIsBothInputs(t *testing.T) {
	type ev struct {
		Side string
		tuple
	}
	var evs []ev
	for i := range 9 {
		evs = append(evs, ev{"L", tuple{"a", "", int64(i)}})
	}
	for i := range 9 {
		evs = append(evs, ev{"R", tuple{"a", "", int64(i)}})
	}
	evs = append(evs, ev{"L", tuple{"a", "", 20}}, ev{"R", tuple{"a", "", 21}}, ev{"L", tuple{"a", "", 1}}, ev{"R", tuple{"a", "", 2}})
	p := weir.NewPipeline()
	all := weir.FromSlice(p, evs)
	side := func(s string) weir.Keyed[string, tuple] {
		m := weir.Map(weir.Filter(all, func(e ev) bool { return e.Side == s }), func(e ev) tuple { return e.tuple })
		return weir.KeyBy(weir.WithTimestamps(m, func(t tuple) mtime.Time { return mtime.Time(t.TS) }, watermark.BoundedOutOfOrderness(0).WithInterval(0)),
			func(t tuple) string { return t.Key })
	}
	panes, late := weir.CoGroup(side("L"), side("R"), tumbling3ms, aggregate.Count[tuple](), aggregate.Count[tuple]())
	// Both streams come from the aggregation's goroutine, in its order.
	var got []string
	weir.Sink(panes, func(pn weir.Pane[string, weir.CoGrouped[int64, int64]]) error {
		got = append(got, fmt.Sprintf("[%d,%d) %d left, %d right", pn.Window.Start, pn.Window.End, pn.Value.Left, pn.Value.Right))
		return nil
	})
	weir.Sink(late, func(l weir.Late[string, weir.Sided[tuple, tuple]]) error {
		got = append(got, fmt.Sprintf("late right=%v %d %q", l.Value.IsRight, l.Timestamp, l.Reason))
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"[0,3) 3 left, 3 right", "[3,6) 3 left, 3 right", "[6,9) 3 left, 3 right",
		`late right=false 1 ""`, `late right=true 2 ""`, "[18,21) 1 left, 0 right", "[21,24) 0 left, 1 right"}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A co-group stops with a savepoint and resumes from it, at the same and
// at another parallelism: the output is what an uninterrupted run writes,
// byte for byte.
func TestCoGroupCheckpointsAndResume(t *testing.T) {
	resumesAsUninterrupted(t, shopEvents(6000), 3000, func(out []byte) bool {
		return bytes.Count(out, []byte(" 0 payments")) >= 100 && bytes.Count(out, []byte(" 0 orders")) >= 100 && bytes.Count(out, []byte("\n")) >= 3000
	}, func(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
		p := weir.NewPipeline(opts...)
		src := shopSource(p, evs, stopAt, cancel)
		wm := watermark.BoundedOutOfOrderness(5 * time.Second)
		panes, _ := weir.CoGroup(shopSide(src, "order", wm), shopSide(src, "payment", wm),
			window.NewStrategy(window.TumblingWindows(10*time.Second)), aggregate.Count[shop](), aggregate.Count[shop](), weir.Named("paid"))
		weir.SinkTo(weir.Map(panes, func(pn weir.Pane[string, weir.CoGrouped[int64, int64]]) string {
			return fmt.Sprintf("%s %d: %d orders, %d payments", pn.Key, pn.Window.Start, pn.Value.Left, pn.Value.Right)
		}), "co", &file.Sink[string]{Path: path, ExactlyOnce: true,
			Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
		return p
	})
}

// The errors of a co-group and a window join.
func TestCoGroupErrors(t *testing.T) {
	p := weir.NewPipeline()
	s := weir.FromSlice(p, []tuple{{"a", "", 1}})
	k := func(wm watermark.Strategy) weir.Keyed[string, tuple] {
		return weir.KeyBy(weir.WithTimestamps(s, func(tuple) mtime.Time { return 0 }, wm), func(t tuple) string { return t.Key })
	}
	panes, _ := weir.CoGroup(k(watermark.BoundedOutOfOrderness(0)), k(watermark.BoundedOutOfOrderness(time.Second)), tumbling3ms, aggregate.Count[tuple](), aggregate.Count[tuple]())
	weir.Sink(panes, func(weir.Pane[string, weir.CoGrouped[int64, int64]]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "different watermark strategies") {
		t.Errorf("different strategies: %v", err)
	}
	p = weir.NewPipeline()
	s = weir.FromSlice(p, []tuple{{"a", "", 1}})
	counts, _ := weir.Aggregate(weir.Window(k(watermark.BoundedOutOfOrderness(0)), tumbling3ms), aggregate.Count[tuple]())
	fromPanes := weir.KeyBy(weir.WithTimestamps(weir.Map(counts, func(pn weir.Pane[string, int64]) tuple { return tuple{Key: pn.Key} }),
		func(tuple) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0)), func(t tuple) string { return t.Key })
	panes, _ = weir.CoGroup(k(watermark.BoundedOutOfOrderness(0)), fromPanes, tumbling3ms, aggregate.Count[tuple](), aggregate.Count[tuple]())
	weir.Sink(panes, func(weir.Pane[string, weir.CoGrouped[int64, int64]]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "CoGroup: an input is the output of an aggregation") {
		t.Errorf("an aggregation's panes: %v", err)
	}
	p = weir.NewPipeline()
	s = weir.FromSlice(p, []tuple{{"a", "", 1}})
	joined, _ := weir.WindowJoin(k(watermark.BoundedOutOfOrderness(0)), k(watermark.BoundedOutOfOrderness(0)), tumbling3ms.WithMode(window.Discarding))
	weir.Sink(joined, func(weir.WindowJoined[string, tuple, tuple]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "a window join is accumulating") {
		t.Errorf("discarding: %v", err)
	}
}

// windowJoinFile runs a window join of evs's orders and payments, per
// order and tumbling window of 10 s, into path, exactly once; cancel,
// when set, is called after the element at stopAt was read.
func windowJoinFile(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	src := shopSource(p, evs, stopAt, cancel)
	wm := watermark.BoundedOutOfOrderness(5 * time.Second)
	joined, _ := weir.WindowJoin(shopSide(src, "order", wm), shopSide(src, "payment", wm),
		window.NewStrategy(window.TumblingWindows(10*time.Second)), weir.Named("paid"))
	weir.SinkTo(weir.Map(joined, func(j weir.WindowJoined[string, shop, shop]) string {
		return fmt.Sprintf("%s %d: (%d,%d) at %d", j.Key, j.Window.Start, j.Left.At, j.Right.At, j.Window.End)
	}), "joined", &file.Sink[string]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
	return p
}

// A window join stops with a savepoint and resumes from it, at the same
// and at another parallelism: the output is what an uninterrupted run
// writes, byte for byte.
func TestWindowJoinCheckpointsAndResume(t *testing.T) {
	resumesAsUninterrupted(t, shopEvents(6000), 3000, func(out []byte) bool {
		return bytes.Count(out, []byte(") at ")) >= 500
	}, windowJoinFile)
}

// A co-group's Deduplicated inputs are each de-duplicated by their own
// ids: an element delivered twice is aggregated once; the other input's
// element with an equal id is not its duplicate; an input that is not
// Deduplicated keeps every element. Two inputs within different horizons
// are refused.
func TestCoGroupDeduplicated(t *testing.T) {
	dedup := func(p *weir.Pipeline, ts []tuple, name string, horizon time.Duration) weir.Keyed[string, tuple] {
		s := weir.FromSlice(p, ts, weir.Named(name))
		stamped := weir.WithTimestamps(s, func(t tuple) mtime.Time { return mtime.Time(t.TS) }, watermark.BoundedOutOfOrderness(0).WithInterval(0))
		if horizon > 0 {
			stamped = stamped.Deduplicated(horizon, func(t tuple) string { return t.Name })
		}
		return weir.KeyBy(stamped, func(t tuple) string { return t.Key })
	}
	first := []tuple{{"a", "x", 0}, {"a", "x", 0}, {"a", "y", 1}, {"a", "y", 1}, {"b", "u", 3}, {"b", "w", 5}}
	second := []tuple{{"a", "x", 0}, {"a", "v", 1}, {"a", "v", 1}, {"b", "u", 4}}
	for _, c := range []struct {
		name        string
		left, right time.Duration
		want        []string
	}{
		{"both", time.Hour, time.Hour, sorted("F:(a,x,0)(a,y,1) S:(a,x,0)(a,v,1)", "F:(b,u,3)(b,w,5) S:(b,u,4)")},
		{"left only", time.Hour, 0, sorted("F:(a,x,0)(a,y,1) S:(a,x,0)(a,v,1)(a,v,1)", "F:(b,u,3)(b,w,5) S:(b,u,4)")},
		{"right only", 0, time.Hour, sorted("F:(a,x,0)(a,x,0)(a,y,1)(a,y,1) S:(a,x,0)(a,v,1)", "F:(b,u,3)(b,w,5) S:(b,u,4)")},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := weir.NewPipeline()
			panes, _ := weir.CoGroup(dedup(p, first, "first", c.left), dedup(p, second, "second", c.right), tumbling3ms,
				aggregate.Collect[tuple](), aggregate.Collect[tuple](), weir.Named("cogroup"))
			got := collect(t, p, weir.Map(panes, coGroupedString))
			if !slices.Equal(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
	p := weir.NewPipeline()
	weir.CoGroup(dedup(p, first, "first", time.Hour), dedup(p, second, "second", time.Minute), tumbling3ms, aggregate.Count[tuple](), aggregate.Count[tuple]())
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "CoGroup: its inputs are Deduplicated within different horizons (1h0m0s and 1m0s)") {
		t.Errorf("different horizons: %v", err)
	}
}
