package weir_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/weirtest"
	"github.com/weirstream/weir/window"
)

type tap struct {
	user string
	ts   mtime.Time
	arr  mtime.Time
	n    int
}

func taps(n int) []tap {
	r := rand.New(rand.NewPCG(9, 9))
	var out []tap
	now := mtime.Time(1_780_000_000_000)
	for i := 0; i < n; i++ {
		now += mtime.Time(r.IntN(300))
		t := tap{user: fmt.Sprintf("u%d", r.IntN(20)), arr: now, ts: now - mtime.Time(r.IntN(2500)), n: r.IntN(5)}
		if r.IntN(40) == 0 { // a phone in a tunnel
			t.ts -= mtime.Time(r.IntN(60_000))
		}
		out = append(out, t)
	}
	return out
}

func runTaps(par int, in []tap) (string, error) {
	p := weir.NewPipeline(weir.Parallelism(par), weir.BatchSize(64))
	src := weir.FromSeq(p, func(yield func(tap, mtime.Time) bool) {
		for _, t := range in {
			if !yield(t, t.arr) {
				return
			}
		}
	})
	src = weir.Filter(src, func(t tap) bool { return t.n > 0 })
	stamped := weir.WithTimestamps(src, func(t tap) mtime.Time { return t.ts }, watermark.BoundedOutOfOrderness(time.Second))
	win := weir.Window(weir.KeyBy(stamped, func(t tap) string { return t.user }),
		window.NewStrategy(window.SessionWindows(3*time.Second)).WithLateness(20*time.Second).
			WithMode(window.Retracting).WithTrigger(trigger.AfterWatermark().EarlyEvery(time.Second, true)))
	sums, late := weir.Aggregate(win, aggregate.Sum(func(t tap) int { return t.n }))
	var b strings.Builder
	weir.Sink(weir.Map(sums, func(pn weir.Pane[string, int]) string {
		return fmt.Sprintf("%s %v #%d %s %v %v %d", pn.Key, pn.Window, pn.Revision, pn.Timing, pn.Final, pn.Retract, pn.Value)
	}), func(s string) error { b.WriteString(s + "\n"); return nil })
	weir.Sink(late, func(l weir.Late[string, tap]) error { fmt.Fprintf(&b, "late %s %d\n", l.Key, l.Timestamp); return nil })
	err := p.Run(context.Background())
	return b.String(), err
}

func TestPipelineSameOutputForEveryParallelism(t *testing.T) {
	in := taps(4000)
	want, err := runTaps(1, in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want, "late ") || !strings.Contains(want, "true 0") && !strings.Contains(want, " true ") {
		t.Fatalf("the stream should produce late events and retractions:\n%.2000s", want)
	}
	for _, par := range []int{2, 4} {
		got, err := runTaps(par, in)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("parallelism %d gives different output", par)
		}
	}
}

func TestPipelineErrors(t *testing.T) {
	p := weir.NewPipeline()
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no source") {
		t.Errorf("no source: %v", err)
	}
	p = weir.NewPipeline()
	weir.FromSlice(p, []int{1})
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no sink") {
		t.Errorf("no sink: %v", err)
	}
	p = weir.NewPipeline()
	s := weir.FromSlice(p, []int{1})
	stamped := weir.WithTimestamps(s, func(int) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0))
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(int) int { return 0 }),
		window.NewStrategy(window.SlidingWindows(time.Second, time.Minute))), aggregate.Count[int]())
	weir.Sink(panes, func(weir.Pane[int, int64]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "slide 1m0s is larger than the size 1s") {
		t.Errorf("bad window: %v", err)
	}
}

func TestPipelineSinkErrorStops(t *testing.T) {
	boom := errors.New("boom")
	p := weir.NewPipeline()
	xs := make([]int, 100_000)
	for i := range xs {
		xs[i] = i
	}
	s := weir.FromSlice(p, xs)
	stamped := weir.WithTimestamps(s, func(i int) mtime.Time { return mtime.Time(i) * 1000 }, watermark.BoundedOutOfOrderness(0).WithInterval(0))
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(int) int { return 0 }),
		window.NewStrategy(window.TumblingWindows(time.Second))), aggregate.Count[int]())
	n := 0
	weir.Sink(panes, func(weir.Pane[int, int64]) error {
		if n++; n == 10 {
			return boom
		}
		return nil
	})
	if err := p.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if n != 10 {
		t.Fatalf("sink called %d times after failing", n)
	}
	if err := p.Run(context.Background()); err == nil {
		t.Fatal("a second Run was accepted")
	}
}

// The Streaming Systems UserScores example through a whole pipeline, with a
// scripted watermark from a TestStream.
func TestTestStreamUserScores(t *testing.T) {
	type score struct {
		name  string
		score int
		ts    mtime.Time
	}
	at := weirtest.At
	ts := weirtest.NewTestStream[score]().
		AdvanceProcessingTime(at("2026-01-05T12:05:19Z")).AddElements(score{"Julie", 5, at("2026-01-05T12:00:26Z")}).
		AdvanceProcessingTime(at("2026-01-05T12:05:39Z")).AddElements(score{"Ed", 7, at("2026-01-05T12:02:26Z")}).
		AdvanceProcessingTime(at("2026-01-05T12:06:00Z")).AdvanceWatermarkTo(at("2026-01-05T12:02:00Z")).
		AdvanceProcessingTime(at("2026-01-05T12:08:19Z")).AddElements(score{"Frank", 9, at("2026-01-05T12:01:26Z")})
	p := weir.NewPipeline()
	stamped := weir.WithTimestamps(weir.From(p, ts), func(s score) mtime.Time { return s.ts }, watermark.ScriptedWatermark())
	sums, late := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(score) string { return "TeamX" }),
		window.NewStrategy(window.TumblingWindows(2*time.Minute))), aggregate.Sum(func(s score) int { return s.score }))
	var got []string
	weir.Sink(sums, func(pn weir.Pane[string, int]) error {
		got = append(got, fmt.Sprintf("%s %s %d at %s", pn.Window.Start.Time().Format("15:04"), pn.Timing, pn.Value, pn.EmittedAt.Time().Format("15:04:05")))
		return nil
	})
	weir.Sink(late, func(l weir.Late[string, score]) error { got = append(got, "late "+l.Value.name); return nil })
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "12:00 ON_TIME 5 at 12:06:00|late Frank|12:02 ON_TIME 7 at 12:08:19"
	if strings.Join(got, "|") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

func BenchmarkPipelineTumblingCount(b *testing.B) {
	for _, keys := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			p := weir.NewPipeline()
			n := b.N
			src := weir.FromSeq(p, func(yield func(int, mtime.Time) bool) {
				for i := 0; i < n; i++ {
					if !yield(i, mtime.MinTime) {
						return
					}
				}
			})
			stamped := weir.WithTimestamps(src, func(i int) mtime.Time { return 1_780_000_000_000 + mtime.Time(i/10) },
				watermark.BoundedOutOfOrderness(time.Second))
			counts, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(i int) int { return i % keys }),
				window.NewStrategy(window.TumblingWindows(time.Minute))), aggregate.Count[int]())
			weir.Sink(counts, func(weir.Pane[int, int64]) error { return nil })
			b.ReportAllocs()
			b.ResetTimer()
			if err := p.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
