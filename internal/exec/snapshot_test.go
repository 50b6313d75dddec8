package exec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

type evCodec struct{}

func (evCodec) AppendKey(b []byte, k string) []byte { return enc.AppendString(b, k) }
func (evCodec) ReadKey(d *enc.Decoder) string       { return d.String() }
func (evCodec) AppendAcc(b []byte, a []ev) []byte {
	b = enc.AppendUvarint(b, uint64(len(a)))
	for _, e := range a {
		b = enc.AppendString(b, e.key)
		b = enc.AppendVarint(b, int64(e.ts))
		b = enc.AppendVarint(b, int64(e.arr))
		b = enc.AppendVarint(b, int64(e.v))
	}
	return b
}
func (evCodec) ReadAcc(d *enc.Decoder) []ev {
	n := d.Count(1 << 20)
	var a []ev
	for range n {
		a = append(a, ev{key: d.String(), ts: mtime.Time(d.Varint()), arr: mtime.Time(d.Varint()), v: int(d.Varint())})
	}
	return a
}
func (evCodec) AppendOut(b []byte, o string) []byte { return enc.AppendString(b, o) }
func (evCodec) ReadOut(d *enc.Decoder) string       { return d.String() }

// A run stopped at a barrier and restored from its snapshots (with another
// parallelism) continues exactly as the uninterrupted run.
func TestSnapshotRestoreContinuesExactly(t *testing.T) {
	evs := stream(3, 4000)
	s := window.NewStrategy(window.SessionWindows(2 * time.Second)).WithLateness(30 * time.Second).
		WithMode(window.Retracting).
		WithTrigger(trigger.AfterWatermark().EarlyEvery(700*time.Millisecond, false).LateThrottled(time.Second))
	wm := watermark.BoundedOutOfOrderness(time.Second).WithIdleness(5 * time.Second)
	process := aggregate.Process(func(es []ev) string {
		sum := 0
		for _, e := range es {
			sum += e.v
		}
		return fmt.Sprintf("n=%d sum=%d", len(es), sum)
	})
	hash := func(k string) uint64 { return uint64(k[len(k)-1]) * 31 }
	format := func(b *strings.Builder, outs []Out[string, ev, string]) {
		for _, o := range outs {
			switch o.Kind {
			case OutPane:
				fmt.Fprintf(b, "%s %v #%d %s %v %v %d %d %s\n", o.Pane.Key, o.Pane.Window, o.Pane.Revision, o.Pane.Timing,
					o.Pane.Final, o.Pane.Retract, o.Pane.Watermark, o.Pane.EmittedAt, o.Pane.Value)
			case OutLate:
				fmt.Fprintf(b, "late %d\n", o.Late.Timestamp)
			}
		}
	}
	run := func(p int, restore [][]byte, driverState []byte, step uint64, from, to int, barrierAt int) (out string, parts [][]byte, dstate []byte, endStep uint64) {
		var b strings.Builder
		var r *Runner[string, ev, []ev, string]
		r = NewRunner(Config[string, ev, []ev, string]{
			Strategy: s, Agg: process, Parallelism: p, Hash: hash, Codec: evCodec{}, Restore: restore, Step: step,
			Emit: func(outs []Out[string, ev, string]) error {
				format(&b, outs)
				for _, o := range outs {
					if o.Kind == OutBarrier {
						parts = append(parts, o.Barrier.State)
					}
				}
				return nil
			},
		})
		d := NewDriver[string, ev](r, wm, true)
		if driverState != nil {
			if err := d.RestoreState(enc.NewDecoder(driverState)); err != nil {
				t.Fatal(err)
			}
		}
		for i := from; i < to; i++ {
			e := evs[i]
			d.Advance(e.arr)
			d.Event(i%3, e.key, e.ts, e)
			if i == barrierAt {
				dstate = d.AppendState(nil)
				endStep = r.Step()
				r.Barrier(i)
			}
		}
		if to == len(evs) {
			d.End()
		} else {
			r.Stop()
		}
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		return b.String(), parts, dstate, endStep
	}
	cut := 2100
	whole, _, _, _ := run(1, nil, nil, 0, 0, len(evs), -1)
	for _, p := range [][2]int{{1, 1}, {2, 3}, {4, 1}, {0, 2}} {
		first, parts, dstate, step := run(p[0], nil, nil, 0, 0, cut+1, cut)
		if len(parts) != max(p[0], 1) {
			t.Fatalf("%d snapshots for parallelism %d", len(parts), p[0])
		}
		second, _, _, _ := run(p[1], parts, dstate, step, cut+1, len(evs), -1)
		if first+second != whole {
			t.Fatalf("parallelism %d then %d: restored run differs:\n%s", p[0], p[1], firstDiff(whole, first+second))
		}
	}
}
