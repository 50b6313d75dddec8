package weir_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/golden"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Golden checkpoints of a Go pipeline: savepoints written by an earlier
// weir, in testdata/golden/layoutN-NAME (savepoint.tar.gz, the output as
// it was when the savepoint was taken in at-savepoint.txt, and the output of
// an uninterrupted run in want.txt). Every later weir must restore them and
// end with exactly that output.
var writeGolden = flag.Bool("golden", false, "write a golden checkpoint of this weir's format into testdata/golden (existing ones are kept)")

// goldenStats is the accumulator of the golden pipeline: a struct, as
// users' accumulators are.
type goldenStats struct {
	Taps  int
	Total int
	Max   int
}

// goldenPipeline counts and sums taps per user in tumbling windows of 10 s
// with 5 s of allowed lateness, and writes the panes to out exactly once;
// cancel, when set, is called when the element at stopAt is read.
func goldenPipeline(in []tap, ckpt, out string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(append([]weir.Option{weir.Parallelism(2), weir.Checkpoints(ckpt, time.Hour)}, opts...)...)
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
		window.NewStrategy(window.TumblingWindows(10*time.Second)).WithLateness(5*time.Second))
	stats := aggregate.Of(func() goldenStats { return goldenStats{} },
		func(a goldenStats, t tap) goldenStats {
			a.Taps++
			a.Total += t.n
			a.Max = max(a.Max, t.n)
			return a
		},
		func(a, b goldenStats) goldenStats {
			return goldenStats{Taps: a.Taps + b.Taps, Total: a.Total + b.Total, Max: max(a.Max, b.Max)}
		},
		func(a goldenStats) goldenStats { return a })
	panes, _ := weir.Aggregate(win, stats)
	weir.SinkTo(panes, "stats", &file.Sink[weir.Pane[string, goldenStats]]{Path: out, ExactlyOnce: true,
		Encode: func(b []byte, pn weir.Pane[string, goldenStats]) []byte {
			return fmt.Appendf(b, "%s %s #%d %s %v %+v\n", pn.Key, pn.Window, pn.Revision, pn.Timing, pn.Final, pn.Value)
		}})
	return p
}

// Every golden checkpoint of a pipeline restores, and the pipeline ends
// with the output of an uninterrupted run, byte for byte.
func TestGoldenPipelineCheckpointsRestore(t *testing.T) {
	in := taps(6000)
	if *writeGolden {
		writeGoldenPipeline(t, in)
	}
	dirs, _ := filepath.Glob(filepath.Join("testdata", "golden", "layout*"))
	if len(dirs) == 0 {
		t.Fatal("no golden checkpoints in testdata/golden")
	}
	for _, g := range dirs {
		t.Run(filepath.Base(g), func(t *testing.T) {
			dir := t.TempDir()
			sp, out := filepath.Join(dir, "savepoint"), filepath.Join(dir, "out.txt")
			if err := golden.ExtractArchive(filepath.Join(g, "savepoint.tar.gz"), sp); err != nil {
				t.Fatal(err)
			}
			if err := golden.Copy(filepath.Join(g, "at-savepoint.txt"), out); err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			p := goldenPipeline(in, filepath.Join(dir, "ckpt"), out, []weir.Option{weir.RestoreFrom(sp), weir.Log(&log)}, -1, nil)
			if err := p.Run(context.Background()); err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if !strings.Contains(log.String(), "resuming from "+sp) {
				t.Errorf("the run did not resume from the savepoint:\n%s", log.String())
			}
			got, _ := os.ReadFile(out)
			want, _ := os.ReadFile(filepath.Join(g, "want.txt"))
			if string(got) != string(want) || len(want) == 0 {
				t.Errorf("the output differs from the golden run's (%d bytes, want %d)", len(got), len(want))
			}
		})
	}
}

// writeGoldenPipeline writes a golden checkpoint of the golden pipeline:
// stopped at a third of its input (it takes a savepoint), then run again
// without interruption for the output it must end with.
func writeGoldenPipeline(t *testing.T, in []tap) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := goldenPipeline(in, filepath.Join(dir, "ckpt"), out, nil, len(in)/3, cancel).Run(ctx)
	var stopped *engine.StoppedError
	if !errors.As(err, &stopped) || stopped.Savepoint == "" {
		t.Fatalf("the stopped run: %v", err)
	}
	sp, err := checkpoint.Load(checkpoint.OSFS, stopped.Savepoint)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Layout int }
	json.Unmarshal(sp.Manifest.Meta, &meta)
	g := filepath.Join("testdata", "golden", fmt.Sprintf("layout%d-pipeline", meta.Layout))
	if _, err := os.Stat(g); err == nil {
		t.Logf("%s exists: kept", g)
		return
	}
	os.MkdirAll(g, 0o755)
	if err := golden.WriteArchive(stopped.Savepoint, filepath.Join(g, "savepoint.tar.gz")); err != nil {
		t.Fatal(err)
	}
	if err := golden.Copy(out, filepath.Join(g, "at-savepoint.txt")); err != nil {
		t.Fatal(err)
	}
	ref := t.TempDir()
	refOut := filepath.Join(ref, "out.txt")
	if err := goldenPipeline(in, filepath.Join(ref, "ckpt"), refOut, nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := golden.Copy(refOut, filepath.Join(g, "want.txt")); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", g)
}
