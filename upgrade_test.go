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
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// change is how a pipeline restored from a savepoint differs from the one
// that took it.
type change struct {
	size, lateness time.Duration
	parallelism    int
	count          bool // count the taps instead of summing them
	mode           window.Mode
	stage          string // the aggregation's name
	opts           []weir.Option
}

var base = change{size: time.Minute, lateness: 30 * time.Second, parallelism: 2, stage: "sums"}

// upgradePipeline sums (or counts) taps per user in tumbling windows, as
// c says, into the file out; cancel, when set, is called when the tap at
// stopAt is read.
func upgradePipeline(in []tap, c change, out string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(append(append([]weir.Option{weir.Parallelism(c.parallelism)}, c.opts...), opts...)...)
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
		window.NewStrategy(window.TumblingWindows(c.size)).WithLateness(c.lateness).WithMode(c.mode))
	var panes weir.Stream[weir.Pane[string, int]]
	if c.count {
		counts, _ := weir.Aggregate(win, aggregate.Count[tap](), weir.Named(c.stage))
		panes = weir.Map(counts, func(pn weir.Pane[string, int64]) weir.Pane[string, int] {
			return weir.Pane[string, int]{Key: pn.Key, Window: pn.Window, Revision: pn.Revision, Timing: pn.Timing, Final: pn.Final, Value: int(pn.Value)}
		})
	} else {
		panes, _ = weir.Aggregate(win, aggregate.Sum(func(t tap) int { return t.n }), weir.Named(c.stage))
	}
	weir.SinkTo(panes, "panes", &file.Sink[weir.Pane[string, int]]{Path: out, ExactlyOnce: true,
		Encode: func(b []byte, pn weir.Pane[string, int]) []byte {
			return fmt.Appendf(b, "%s %s #%d %s %v %d\n", pn.Key, pn.Window, pn.Revision, pn.Timing, pn.Final, pn.Value)
		}})
	return p
}

// A savepoint of a Go pipeline restored after each kind of change: what
// carries over does, with the log saying so; what cannot is refused in one
// line naming the field, and writes nothing, unless DropState starts it
// afresh.
func TestPipelineRestoreAfterAChange(t *testing.T) {
	in := taps(20_000)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.txt")
	if err := upgradePipeline(in, base, ref, nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	for _, c := range []struct {
		name   string
		change func(c *change)
		err    string   // the refusal
		log    []string // the lines after "resuming from"
		same   bool     // the output is the uninterrupted run's
	}{
		{"nothing", func(*change) {}, "", nil, true},
		{"parallelism", func(c *change) { c.parallelism = 3 }, "", []string{"restore: carries over parallelism: 2 -> 3"}, true},
		{"longer lateness", func(c *change) { c.lateness = 2 * time.Minute }, "",
			[]string{"restore: carries over allowed_lateness: 30s -> 2m0s: the open windows stay open longer (those closed already stay closed)"}, false},
		{"shorter lateness", func(c *change) { c.lateness = 5 * time.Second }, "",
			[]string{"restore: carries over allowed_lateness: 30s -> 5s: the open windows it has already passed close at the restore, with their final pane"}, false},
		{"window size", func(c *change) { c.size = 2 * time.Minute },
			`window: tumbling 1m0s in SP, tumbling 2m0s now: restoring would lose the open windows of 20 keys; weir.DropState("windows") starts them afresh, keeping the positions`, nil, false},
		{"window size, windows dropped", func(c *change) { c.size = 2 * time.Minute; c.opts = []weir.Option{weir.DropState(engine.StateWindows)} }, "",
			[]string{`restore: restarts window: tumbling 1m0s -> tumbling 2m0s: its open windows dropped (weir.DropState("windows"))`}, false},
		{"aggregate", func(c *change) { c.count = true },
			`aggregate: aggregate.sum[github.com/weirstream/weir_test.tap,int] in SP, aggregate.count[github.com/weirstream/weir_test.tap] now: restoring would lose the open windows of 20 keys; weir.DropState("windows") starts them afresh, keeping the positions`, nil, false},
		{"mode", func(c *change) { c.mode = window.Discarding },
			`mode: accumulating in SP, discarding now (the open windows of a discarding job hold only what came since their last pane): restoring would lose the open windows of 20 keys; weir.DropState("windows") starts them afresh, keeping the positions`, nil, false},
		{"mode, windows dropped", func(c *change) {
			c.mode = window.Discarding
			c.opts = []weir.Option{weir.DropState(engine.StateWindows)}
		}, "",
			[]string{`restore: restarts mode: accumulating -> discarding: the open windows of a discarding job hold only what came since their last pane; its open windows dropped (weir.DropState("windows"))`}, false},
		{"retracting", func(c *change) { c.mode = window.Retracting }, "",
			[]string{"restore: by rule mode: accumulating -> retracting: an open window's first pane after the restore retracts nothing (the pane before it was not kept); the panes after it retract as usual"}, false},
		{"aggregation renamed", func(c *change) { c.stage = "totals" }, "",
			[]string{"restore: restarts aggregation \"totals\": new since the checkpoint: starts afresh", "restore: removed aggregation \"sums\": no longer in the job; not restored: its open windows"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.txt")
			ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := upgradePipeline(in, base, out, []weir.Option{ckpt}, 9_000, cancel).Run(ctx)
			var stopped *engine.StoppedError
			if !errors.As(err, &stopped) || stopped.Savepoint == "" {
				t.Fatalf("the stopped run: %v", err)
			}
			atSavepoint, _ := os.ReadFile(out)
			if !bytes.HasPrefix(want, atSavepoint) || len(atSavepoint) == 0 {
				t.Fatalf("the output at the savepoint (%d bytes) is not a part of the reference", len(atSavepoint))
			}
			changed := base
			c.change(&changed)
			var log strings.Builder
			err = upgradePipeline(in, changed, out, []weir.Option{ckpt, weir.Log(&log)}, -1, nil).Run(context.Background())
			got, _ := os.ReadFile(out)
			if c.err != "" {
				want := "weir: " + strings.ReplaceAll(c.err, "SP", stopped.Savepoint)
				if err == nil || err.Error() != want {
					t.Fatalf("err = %v\nwant %s", err, want)
				}
				if !bytes.Equal(got, atSavepoint) {
					t.Errorf("a refused restore wrote %d bytes", len(got)-len(atSavepoint))
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			wantLog := "weir: resuming from " + stopped.Savepoint + "\n"
			for _, l := range c.log {
				wantLog += "weir: " + l + "\n"
			}
			if log.String() != wantLog {
				t.Errorf("log:\n%s\nwant:\n%s", log.String(), wantLog)
			}
			switch {
			case c.same && !bytes.Equal(got, want):
				t.Errorf("the output differs from an uninterrupted run (%d bytes, want %d)", len(got), len(want))
			case !bytes.HasPrefix(got, atSavepoint) || len(got) == len(atSavepoint):
				t.Errorf("the restored run did not add to the output at the savepoint (%d bytes, then %d)", len(atSavepoint), len(got))
			}
		})
	}
}

// DropState names only the kinds of state a restore may start afresh.
func TestPipelineDropStateKinds(t *testing.T) {
	p := weir.NewPipeline(weir.Checkpoints(t.TempDir(), time.Hour), weir.DropState("positions"))
	weir.SinkTo(weir.FromSlice(p, []int{1}, weir.Named("in")), "out", &file.Sink[int]{Path: filepath.Join(t.TempDir(), "out")})
	want := `weir: DropState: "positions" is not a kind of state a restore may drop: windows, dedup, join or process`
	if err := p.Run(context.Background()); err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
