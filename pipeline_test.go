package weir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
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

type bid struct {
	Auction int
	At      mtime.Time
}

// hotItems is Nexmark q5's shape: bids per auction in sliding windows, then
// the busiest auction of each window: an aggregation of an aggregation's
// panes, which must follow the first one's clocks from its goroutine.
func hotItems(par int, bids []bid) (string, error) {
	p := weir.NewPipeline(weir.Parallelism(par), weir.BatchSize(16))
	src := weir.FromSeq(p, func(yield func(bid, mtime.Time) bool) {
		for _, b := range bids {
			if !yield(b, b.At+50) {
				return
			}
		}
	})
	stamped := weir.WithTimestamps(src, func(b bid) mtime.Time { return b.At }, watermark.BoundedOutOfOrderness(200*time.Millisecond))
	counts, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(b bid) int { return b.Auction }),
		window.NewStrategy(window.SlidingWindows(10*time.Second, 2*time.Second))), aggregate.Count[bid]())
	type hot struct {
		auction int
		n       int64
	}
	byWindow := weir.WithTimestamps(counts, weir.PaneTime[int, int64], watermark.ScriptedWatermark())
	best, _ := weir.Aggregate(weir.Window(weir.KeyBy(byWindow, func(pn weir.Pane[int, int64]) mtime.Time { return pn.Window.Start }),
		window.NewStrategy(window.TumblingWindows(2*time.Second))),
		aggregate.Of(func() hot { return hot{} },
			func(h hot, pn weir.Pane[int, int64]) hot {
				if pn.Value > h.n || pn.Value == h.n && pn.Key < h.auction {
					return hot{pn.Key, pn.Value}
				}
				return h
			},
			func(a, b hot) hot {
				if b.n > a.n || b.n == a.n && b.auction < a.auction {
					return b
				}
				return a
			},
			func(h hot) hot { return h }))
	var out strings.Builder
	weir.Sink(best, func(pn weir.Pane[mtime.Time, hot]) error {
		fmt.Fprintf(&out, "%s %s #%d %s auction %d: %d bids\n", pn.Key, pn.Window, pn.Revision, pn.Timing, pn.Value.auction, pn.Value.n)
		return nil
	})
	err := p.Run(context.Background())
	return out.String(), err
}

func TestChainedAggregations(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var bids []bid
	at := mtime.Time(1_780_000_000_000)
	for range 20_000 {
		at += mtime.Time(r.IntN(10))
		bids = append(bids, bid{Auction: r.IntN(50), At: at - mtime.Time(r.IntN(150))})
	}
	want, err := hotItems(1, bids)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(want, "\n"); n < 45 {
		t.Fatalf("only %d results:\n%s", n, want)
	}
	// The first window of the second stage, computed by hand.
	first := strings.SplitN(want, "\n", 2)[0]
	counts := map[int]int64{}
	start := bids[0].At - bids[0].At%2000 - 8000
	for _, b := range bids {
		if b.At >= start && b.At < start+10_000 {
			counts[b.Auction]++
		}
	}
	bestA, bestN := 0, int64(-1)
	for a, n := range counts {
		if n > bestN || n == bestN && a < bestA {
			bestA, bestN = a, n
		}
	}
	if !strings.Contains(first, fmt.Sprintf("auction %d: %d bids", bestA, bestN)) {
		t.Errorf("first result %q, want auction %d with %d bids", first, bestA, bestN)
	}
	for _, par := range []int{2, 3} {
		got, err := hotItems(par, bids)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("parallelism %d gives other results", par)
		}
	}
}

// ordersPipeline counts taps per user in one-minute windows and writes the
// panes to path exactly once; cancel, when set, is called after the
// element at stopAt has been read.
func ordersPipeline(in []tap, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(append([]weir.Option{weir.Parallelism(2)}, opts...)...)
	src := weir.FromSeq(p, func(yield func(tap, mtime.Time) bool) {
		for i, t := range in {
			if i == stopAt && cancel != nil {
				cancel()
			}
			if !yield(t, t.arr) {
				return
			}
		}
	})
	stamped := weir.WithTimestamps(src, func(t tap) mtime.Time { return t.ts }, watermark.BoundedOutOfOrderness(time.Second))
	win := weir.Window(weir.KeyBy(stamped, func(t tap) string { return t.user }),
		window.NewStrategy(window.TumblingWindows(time.Minute)).WithLateness(30*time.Second))
	sums, _ := weir.Aggregate(win, aggregate.Sum(func(t tap) int { return t.n }))
	weir.SinkTo(sums, "sums", &file.Sink[weir.Pane[string, int]]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, pn weir.Pane[string, int]) []byte {
			return fmt.Appendf(b, "%s %s #%d %s %v %d\n", pn.Key, pn.Window, pn.Revision, pn.Timing, pn.Final, pn.Value)
		}})
	return p
}

// A Go pipeline with checkpoints stops with a savepoint and resumes from
// it: the output is what an uninterrupted run writes.
func TestPipelineCheckpointsAndResume(t *testing.T) {
	in := taps(30_000)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.txt")
	if err := ordersPipeline(in, ref, nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	if len(want) < 10_000 {
		t.Fatalf("the reference output is too small: %d bytes", len(want))
	}
	out := filepath.Join(dir, "out.txt")
	ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour)
	for _, stop := range []int{7_000, 19_000} {
		ctx, cancel := context.WithCancel(context.Background())
		err := ordersPipeline(in, out, []weir.Option{ckpt}, stop, cancel).Run(ctx)
		var stopped *engine.StoppedError
		if !errors.As(err, &stopped) || stopped.Savepoint == "" {
			t.Fatalf("stopped at %d: %v", stop, err)
		}
		got, _ := os.ReadFile(out)
		if !bytes.HasPrefix(want, got) || len(got) == 0 || len(got) == len(want) {
			t.Fatalf("after the stop at %d the output (%d bytes) is not a part of the reference (%d bytes)", stop, len(got), len(want))
		}
	}
	var log strings.Builder
	if err := ordersPipeline(in, out, []weir.Option{ckpt, weir.Log(&log)}, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "weir: resuming from "+filepath.Join(dir, "ckpt", "savepoints", "sp-")) {
		t.Errorf("the last run did not resume from the savepoint: %q", log.String())
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Errorf("the resumed output differs from an uninterrupted run (%d bytes, want %d)", len(got), len(want))
	}
}

// With checkpoints, a function sink, which may see outputs again after a
// restore, is refused unless the pipeline promises only at-least-once.
func TestPipelineRefusesAtLeastOnceSink(t *testing.T) {
	run := func(opts ...weir.Option) error {
		p := weir.NewPipeline(append(opts, weir.Checkpoints(t.TempDir(), time.Hour))...)
		s := weir.FromSlice(p, []int{1, 2})
		weir.Sink(s, func(int) error { return nil })
		return p.Run(context.Background())
	}
	if err := run(); err == nil || !strings.Contains(err.Error(), "sink-1: this sink is at_least_once: after a restart from a checkpoint it may write results again, and the job promises exactly_once") {
		t.Errorf("err = %v", err)
	}
	if err := run(weir.Delivery(connector.AtLeastOnce)); err != nil {
		t.Error(err)
	}
}

// A pipeline whose last run finished is refused when it would run again
// from the beginning into a sink that cannot take back what that run wrote
// (a function), before it calls it once; weir.Fresh runs it again on
// purpose, and the function sees every element again.
func TestPipelineRerunOfFinishedRun(t *testing.T) {
	dir := t.TempDir()
	var seen []int
	run := func(opts ...weir.Option) error {
		p := weir.NewPipeline(append(opts, weir.Checkpoints(dir, time.Hour), weir.Delivery(connector.AtLeastOnce))...)
		s := weir.FromSlice(p, []int{1, 2, 3})
		weir.Sink(s, func(v int) error { seen = append(seen, v); return nil }, weir.Named("counted"))
		return p.Run(context.Background())
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	err := run()
	var re *engine.RerunError
	if !errors.As(err, &re) || !slices.Equal(re.Sinks, []string{"counted"}) || !strings.Contains(err.Error(), "give the option weir.Fresh()") {
		t.Fatalf("the second run: %v, want it refused, naming the sink and weir.Fresh", err)
	}
	if !slices.Equal(seen, []int{1, 2, 3}) {
		t.Fatalf("the refused run called the sink: %v", seen)
	}
	if err := run(weir.Fresh()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{1, 2, 3, 1, 2, 3}) {
		t.Fatalf("after weir.Fresh the sink saw %v", seen)
	}
}

// Several sources in one pipeline: their elements meet in one aggregation.
func TestPipelineUnion(t *testing.T) {
	p := weir.NewPipeline()
	a := weir.FromSlice(p, []int{1, 2, 3})
	b := weir.FromSlice(p, []int{10, 20})
	all := weir.Union(a, weir.Map(b, func(x int) int { return x * 10 }))
	stamped := weir.WithTimestamps(all, func(int) mtime.Time { return 1_780_000_000_000 }, watermark.BoundedOutOfOrderness(0))
	sums, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(int) string { return "all" }),
		window.NewStrategy(window.TumblingWindows(time.Minute))), aggregate.Sum(func(x int) int { return x }))
	var got []string
	weir.Sink(sums, func(pn weir.Pane[string, int]) error {
		got = append(got, fmt.Sprintf("%d %v", pn.Value, pn.Final))
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "306 true" {
		t.Errorf("got %v", got)
	}
	p = weir.NewPipeline()
	x := weir.FromSlice(p, []int{1})
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(weir.WithTimestamps(x, func(int) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0)),
		func(int) int { return 0 }), window.NewStrategy(window.TumblingWindows(time.Second))), aggregate.Count[int]())
	weir.Union(weir.Map(panes, func(weir.Pane[int, int64]) int { return 0 }), x)
	weir.Sink(x, func(int) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "only streams read from sources can be merged") {
		t.Errorf("union of an aggregation's output: %v", err)
	}
}
