package table

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

type tap struct {
	user    string
	ts, arr mtime.Time
	n       int
}

// taps are events of 20 users, some of them late (within the allowed
// lateness or beyond it), so that windows have several revisions.
func taps(n int) []tap {
	r := rand.New(rand.NewPCG(4, 4))
	var out []tap
	now := mtime.Time(1_780_000_000_000)
	for i := 0; i < n; i++ {
		now += mtime.Time(r.IntN(300))
		t := tap{user: fmt.Sprintf("u%02d", r.IntN(20)), arr: now, ts: now - mtime.Time(r.IntN(2500)), n: 1 + r.IntN(5)}
		if r.IntN(40) == 0 {
			t.ts -= mtime.Time(r.IntN(60_000))
		}
		out = append(out, t)
	}
	return out
}

var tapsSchema = Schema{Table: "taps", Keys: []Column{{"user_id", Text}}, Values: []Column{{"total", Integer}}}

// tapsPipeline sums taps per user and minute into the sink; cancel, when
// set, is called after the element at stopAt has been read.
func tapsPipeline(in []tap, sink *Sink, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
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
	rows := weir.Map(sums, func(pn weir.Pane[string, int]) Row {
		return Row{Key: []any{pn.Key}, WindowStart: pn.Window.Start, WindowEnd: pn.Window.End, Revision: int64(pn.Revision),
			Timing: pn.Timing.String(), Final: pn.Final, Retract: pn.Retract, Values: []any{pn.Value}, EmittedAt: pn.EmittedAt}
	})
	weir.SinkTo(rows, "output", sink)
	return p
}

const tapsQuery = `SELECT user_id, window_start, revision, timing, CASE WHEN final THEN 'true' ELSE 'false' END, status, total FROM taps ORDER BY user_id, window_start`

// A job writing to a table, stopped twice with a savepoint and resumed,
// leaves the table an uninterrupted run leaves.
func TestPipelineStopAndResume(t *testing.T) {
	in := taps(20_000)
	both(t, func(t *testing.T, d *testDB) {
		ref := tapsSchema
		ref.Table = "taps_ref"
		if err := tapsPipeline(in, d.newSink(ref, Options{}), nil, -1, nil).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := d.rows(t, `SELECT user_id, window_start, revision, timing, CASE WHEN final THEN 'true' ELSE 'false' END, status, total FROM taps_ref ORDER BY user_id, window_start`)
		if len(want) < 200 {
			t.Fatalf("the reference has %d rows", len(want))
		}
		if n := d.rows(t, "SELECT count(*) FROM taps_ref WHERE revision > 1"); n[0] == "0" {
			t.Fatal("no window of the reference has a second revision")
		}
		ckpt := weir.Checkpoints(filepath.Join(t.TempDir(), "ckpt"), time.Hour)
		o := Options{Checkpointed: true, SinkName: "taps"}
		for _, stop := range []int{6_000, 13_000} {
			ctx, cancel := context.WithCancel(context.Background())
			err := tapsPipeline(in, d.newSink(tapsSchema, o), []weir.Option{ckpt}, stop, cancel).Run(ctx)
			cancel()
			var stopped *engine.StoppedError
			if !errors.As(err, &stopped) || stopped.Savepoint == "" {
				t.Fatalf("stopped at %d: %v", stop, err)
			}
			if got := d.rows(t, tapsQuery); len(got) == 0 || len(got) >= len(want) {
				t.Fatalf("after the stop at %d the table has %d rows, the reference %d", stop, len(got), len(want))
			}
		}
		if err := tapsPipeline(in, d.newSink(tapsSchema, o), []weir.Option{ckpt}, -1, nil).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		expect(t, "rows", d.rows(t, tapsQuery), want)
		if n := d.rows(t, "SELECT count(*) FROM weir_commits WHERE sink = 'taps'"); n[0] == "0" {
			t.Error("no commit markers")
		}
	})
}
