package weir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// namedPipeline sums taps per user in one-minute windows from a source
// named "taps" into the file out; with clicks, a source named "clicks" is
// built ahead of it, whose elements go to the file clicksOut. cancel, when
// set, is called when the tap at stopAt is read. The watermark follows every
// element, so that the output does not depend on processing time, which the
// other source moves too.
func namedPipeline(in []tap, clicks []int, out, clicksOut string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(append([]weir.Option{weir.Parallelism(2)}, opts...)...)
	if clicks != nil {
		c := weir.FromSlice(p, clicks, weir.Named("clicks"))
		weir.SinkTo(c, "clicks", &file.Sink[int]{Path: clicksOut, ExactlyOnce: true,
			Encode: func(b []byte, n int) []byte { return fmt.Appendf(b, "click %d\n", n) }})
	}
	src := weir.FromSeq(p, func(yield func(tap, mtime.Time) bool) {
		for i, t := range in {
			if i == stopAt && cancel != nil {
				cancel()
			}
			if !yield(t, t.arr) {
				return
			}
		}
	}, weir.Named("taps"))
	stamped := weir.WithTimestamps(src, func(t tap) mtime.Time { return t.ts }, watermark.BoundedOutOfOrderness(time.Second).WithInterval(0))
	win := weir.Window(weir.KeyBy(stamped, func(t tap) string { return t.user }),
		window.NewStrategy(window.TumblingWindows(time.Minute)).WithLateness(30*time.Second))
	sums, _ := weir.Aggregate(win, aggregate.Sum(func(t tap) int { return t.n }), weir.Named("sums"))
	weir.SinkTo(sums, "sums", &file.Sink[weir.Pane[string, int]]{Path: out, ExactlyOnce: true,
		Encode: func(b []byte, pn weir.Pane[string, int]) []byte {
			return fmt.Appendf(b, "%s %s #%d %s %v %d\n", pn.Key, pn.Window, pn.Revision, pn.Timing, pn.Final, pn.Value)
		}})
	return p
}

// A named sequence source keeps its position when another source is added
// ahead of it: stopped with a savepoint, the pipeline restored with a new
// source first ends with the output of an uninterrupted run, and the new
// source is read from its beginning.
func TestNamedSourceSurvivesASourceAddedAhead(t *testing.T) {
	in := taps(20_000)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.txt")
	if err := namedPipeline(in, nil, ref, "", nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	if len(want) < 10_000 {
		t.Fatalf("the reference output is too small: %d bytes", len(want))
	}
	out, clicksOut := filepath.Join(dir, "out.txt"), filepath.Join(dir, "clicks.txt")
	ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := namedPipeline(in, nil, out, "", []weir.Option{ckpt}, 9_000, cancel).Run(ctx)
	var stopped *engine.StoppedError
	if !errors.As(err, &stopped) || stopped.Savepoint == "" {
		t.Fatalf("the stopped run: %v", err)
	}
	if got, _ := os.ReadFile(out); !bytes.HasPrefix(want, got) || len(got) == 0 || len(got) == len(want) {
		t.Fatalf("after the stop the output (%d bytes) is not a part of the reference (%d bytes)", len(got), len(want))
	}
	clicks := []int{3, 1, 4, 1, 5, 9, 2, 6}
	var log strings.Builder
	err = namedPipeline(in, clicks, out, clicksOut, []weir.Option{ckpt, weir.RestoreFrom(stopped.Savepoint), weir.Log(&log)}, -1, nil).Run(context.Background())
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Errorf("the restored output differs from an uninterrupted run (%d bytes, want %d)", len(got), len(want))
	}
	if got, _ := os.ReadFile(clicksOut); string(got) != "click 3\nclick 1\nclick 4\nclick 1\nclick 5\nclick 9\nclick 2\nclick 6\n" {
		t.Errorf("the added source wrote %q", got)
	}
	wantLog := "weir: warning: clicks is new since " + stopped.Savepoint + ": it gets the results from there on, not those before\n" +
		"weir: resuming from " + stopped.Savepoint + "\n" +
		"weir: restore: restarts source clicks: new since the checkpoint: starts afresh\n" +
		"weir: restore: restarts sink clicks: new since the checkpoint: starts afresh\n"
	if log.String() != wantLog {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), wantLog)
	}
}

// Two parts of one kind with one name are refused when the pipeline is
// built, before anything runs; a source and a sink may share a name.
func TestPipelineRefusesANameTwice(t *testing.T) {
	sum := aggregate.Sum(func(x int) int { return x })
	stage := func(s weir.Stream[int]) weir.Windowed[int, int] {
		stamped := weir.WithTimestamps(s, func(int) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0))
		return weir.Window(weir.KeyBy(stamped, func(int) int { return 0 }), window.NewStrategy(window.TumblingWindows(time.Second)))
	}
	for _, c := range []struct {
		name  string
		build func(p *weir.Pipeline)
		want  string
	}{
		{"sources", func(p *weir.Pipeline) {
			a := weir.FromSlice(p, []int{1}, weir.Named("orders"))
			b := weir.FromSeq(p, func(func(int, mtime.Time) bool) {}, weir.Named("orders"))
			weir.Sink(weir.Union(a, b), func(int) error { return nil }, weir.Named("out"))
		}, `weir: two sources are named "orders": a restore finds each one's state by its name`},
		{"a source read and a sequence", func(p *weir.Pipeline) {
			weir.FromSlice(p, []int{1}, weir.Named("orders"))
			s, _ := weir.Read(p, "orders", nil, func(connector.Record) (int, error) { return 0, nil })
			weir.Sink(s, func(int) error { return nil }, weir.Named("out"))
		}, `weir: two sources are named "orders": a restore finds each one's state by its name`},
		{"a name and a position", func(p *weir.Pipeline) {
			weir.FromSlice(p, []int{1}, weir.Named("source-1"))
			s := weir.FromSlice(p, []int{1})
			weir.Sink(s, func(int) error { return nil }, weir.Named("out"))
		}, `weir: two sources are named "source-1": a restore finds each one's state by its name`},
		{"aggregations", func(p *weir.Pipeline) {
			s := weir.FromSlice(p, []int{1}, weir.Named("in"))
			a, _ := weir.Aggregate(stage(s), sum, weir.Named("sums"))
			b, _ := weir.Aggregate(stage(s), sum, weir.Named("sums"))
			weir.Sink(a, func(weir.Pane[int, int]) error { return nil }, weir.Named("a"))
			weir.Sink(b, func(weir.Pane[int, int]) error { return nil }, weir.Named("b"))
		}, `weir: two aggregations are named "sums": a restore finds each one's state by its name`},
		{"sinks", func(p *weir.Pipeline) {
			s := weir.FromSlice(p, []int{1}, weir.Named("in"))
			weir.Sink(s, func(int) error { return nil }, weir.Named("out"))
			weir.SinkTo(s, "out", &file.Sink[int]{Path: filepath.Join(t.TempDir(), "out")})
		}, `weir: two sinks are named "out": a restore finds each one's state by its name`},
		{"an empty name", func(p *weir.Pipeline) {
			s := weir.FromSlice(p, []int{1}, weir.Named(""))
			weir.Sink(s, func(int) error { return nil })
		}, `weir: source source-0: Named needs a name that is not empty`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := weir.NewPipeline()
			c.build(p)
			if err := p.Run(context.Background()); err == nil || err.Error() != c.want {
				t.Errorf("err = %v\nwant %s", err, c.want)
			}
		})
	}
	// One name for a source, an aggregation and a sink.
	p := weir.NewPipeline()
	s := weir.FromSlice(p, []int{1, 2}, weir.Named("n"))
	sums, _ := weir.Aggregate(stage(s), sum, weir.Named("n"))
	var got []int
	weir.Sink(sums, func(pn weir.Pane[int, int]) error { got = append(got, pn.Value); return nil }, weir.Named("n"))
	if err := p.Run(context.Background()); err != nil || fmt.Sprint(got) != "[3]" {
		t.Errorf("got %v, %v", got, err)
	}
}

// A checkpointed pipeline with parts that have no name says so when it
// starts, naming their positional names; one without checkpoints does not.
func TestPipelineWarnsOfUnnamedParts(t *testing.T) {
	run := func(opts ...weir.Option) string {
		var log strings.Builder
		p := weir.NewPipeline(append(opts, weir.Log(&log), weir.Delivery(connector.AtLeastOnce))...)
		a := weir.FromSlice(p, []int{1, 2}, weir.Named("a"))
		b := weir.FromSlice(p, []int{3})
		stamped := weir.WithTimestamps(weir.Union(a, b), func(int) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0))
		sums, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(int) int { return 0 }),
			window.NewStrategy(window.TumblingWindows(time.Second))), aggregate.Sum(func(x int) int { return x }))
		var got []int
		weir.Sink(sums, func(pn weir.Pane[int, int]) error { got = append(got, pn.Value); return nil })
		if err := p.Run(context.Background()); err != nil || fmt.Sprint(got) != "[6]" {
			t.Fatalf("got %v, %v", got, err)
		}
		return log.String()
	}
	want := "weir: warning: source-1, stage-1, sink-1 have no name and are checkpointed by position: a source, an aggregation or a sink added ahead of one would restore another's state into it; name each with weir.Named\n"
	if got := run(weir.Checkpoints(t.TempDir(), time.Hour)); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
	if got := run(); got != "" {
		t.Errorf("without checkpoints the log is:\n%s", got)
	}
}
