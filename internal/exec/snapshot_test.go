package exec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/textdiff"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
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
	// With a state database (db), the snapshots' Pebble checkpoints are
	// dirs; adopted counts the keys the restore took in as they were.
	var db *state.DB
	var dirs []string
	var adopted int64
	run := func(p int, restore [][]byte, driverState []byte, step uint64, from, to int, barrierAt int) (out string, parts [][]byte, dstate []byte, endStep uint64) {
		var b strings.Builder
		var r *Runner[string, ev, []ev, string]
		restoreDirs := dirs
		dirs = nil
		r = NewRunner(Config[string, ev, []ev, string]{
			Strategy: s, Agg: process, Parallelism: p, Hash: hash, Codec: evCodec{}, Restore: restore, Step: step,
			State: db, RestoreDirs: restoreDirs,
			Emit: func(outs []Out[string, ev, string]) error {
				format(&b, outs)
				for _, o := range outs {
					if o.Kind == OutBarrier {
						o.Barrier.Wait()
						parts = append(parts, o.Barrier.State)
						if o.Barrier.Snapshot != nil {
							dirs = append(dirs, o.Barrier.Snapshot.Dir)
						}
					}
				}
				return nil
			},
		})
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		adopted = 0
		for _, op := range r.ops {
			if op.pebble != nil {
				adopted += op.pebble.adopted
			}
		}
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
	for _, backend := range []string{"memory", "pebble"} {
		for _, p := range [][2]int{{1, 1}, {2, 3}, {4, 1}, {0, 2}, {3, 3}} {
			if backend == "pebble" {
				var err error
				if db, err = state.Open(t.TempDir(), 8<<10); err != nil {
					t.Fatal(err)
				}
			}
			first, parts, dstate, step := run(p[0], nil, nil, 0, 0, cut+1, cut)
			if len(parts) != max(p[0], 1) {
				t.Fatalf("%d snapshots for parallelism %d", len(parts), p[0])
			}
			if db != nil {
				// The restore reads the checkpoints into a database of
				// its own, as a job started again does.
				old := db
				defer old.Close()
				var err error
				if db, err = state.Open(t.TempDir(), 8<<10); err != nil {
					t.Fatal(err)
				}
			}
			second, _, _, _ := run(p[1], parts, dstate, step, cut+1, len(evs), -1)
			if first+second != whole {
				t.Fatalf("%s, parallelism %d then %d: restored run differs:\n%s", backend, p[0], p[1], textdiff.FirstLine(whole, first+second))
			}
			// At the same parallelism a Pebble checkpoint's keys are
			// taken in as they are; at another, key by key.
			if same := max(p[0], 1) == max(p[1], 1); (adopted > 0) != (backend == "pebble" && same) {
				t.Fatalf("%s, parallelism %d then %d: %d keys adopted", backend, p[0], p[1], adopted)
			}
			if db != nil {
				db.Close()
				db = nil
			}
		}
	}
}

// snapshotEntries decodes a snapshot into its header and its entries,
// sorted (a snapshot's entries come in any order).
func snapshotEntries(t *testing.T, b []byte) (header string, entries []string) {
	t.Helper()
	d := enc.NewDecoder(b)
	d.Count(255)
	var h strings.Builder
	for range 10 { // watermark, processing time, late limit, 7 statistics
		fmt.Fprintf(&h, "%d ", d.Varint())
	}
	for range d.Items(1 << 40) {
		fmt.Fprintf(&h, "[%d %d %d] ", d.Varint(), d.Varint(), d.Varint())
	}
	for {
		g := d.Count(KeyGroups)
		if g == KeyGroups || d.Err() != nil {
			break
		}
		entries = append(entries, fmt.Sprintf("%d %x", g, d.Fixed32Bytes()))
	}
	if d.Err() != nil || d.Len() != 0 {
		t.Fatalf("snapshot does not decode: %v, %d bytes left", d.Err(), d.Len())
	}
	slices.Sort(entries)
	return h.String(), entries
}

// A snapshot written beside the operator has every key as it was at the
// barrier, although the operator goes on at once: changing, removing and
// adding keys while the snapshot reads them.
func TestSnapshotBesideIsTheStateAtTheBarrier(t *testing.T) {
	s := window.NewStrategy(window.TumblingWindows(time.Second)).WithLateness(time.Second)
	hash := func(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 }
	feed := func(op *WindowOp[uint64, struct{}, int64, int64], from, to int) {
		for i := from; i < to; i++ {
			k := uint64(i % 20_000)
			op.Event(uint64(i), k, mtime.Time(i/10), 0, struct{}{})
			if i%5000 == 0 {
				op.AdvanceWatermark(uint64(i), mtime.Time(i/10-1500), 0)
			}
		}
	}
	for round := range 8 {
		op := NewWindowOp[uint64](s, aggregate.Count[struct{}]())
		twin := NewWindowOp[uint64](s, aggregate.Count[struct{}]())
		cut := 30_000 + round*7919
		feed(op, 0, cut)
		feed(twin, 0, cut)
		// Two snapshots, the second started before the first may be done
		// (the operator then waits for the first).
		var bars []*Barrier
		var wants [][]byte
		for range 2 {
			want, err := twin.Snapshot(nil, cc{}, hash)
			if err != nil {
				t.Fatal(err)
			}
			wants = append(wants, want)
			bar := &Barrier{}
			op.snapshotBeside(bar, cc{}, hash, time.Now())
			bars = append(bars, bar)
			feed(op, cut, cut+20_000) // touches every key, fires and removes windows
			feed(twin, cut, cut+20_000)
			cut += 20_000
		}
		for i, bar := range bars {
			bar.Wait()
			wh, we := snapshotEntries(t, wants[i])
			gh, ge := snapshotEntries(t, bar.State)
			if wh != gh {
				t.Fatalf("round %d, snapshot %d: header %q, want %q", round, i, gh, wh)
			}
			if !slices.Equal(we, ge) {
				t.Fatalf("round %d, snapshot %d: %d entries, want %d; first difference at %d", round, i, len(ge), len(we), firstDifference(we, ge))
			}
		}
		if op.state.len() != twin.state.len() {
			t.Fatalf("round %d: %d keys after the snapshots, want %d", round, op.state.len(), twin.state.len())
		}
	}
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
