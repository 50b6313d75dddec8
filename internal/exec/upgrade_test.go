package exec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// upgradeStep is one input of an upgrade script: an event of key "a" at
// ts (seconds), a watermark (wm, seconds) or processing time (proc, ms).
type upgradeStep struct {
	ts, wm, proc int64
}

func ev1(ts int64) upgradeStep   { return upgradeStep{ts: ts, wm: -1, proc: -1} }
func wm1(wm int64) upgradeStep   { return upgradeStep{ts: -1, wm: wm, proc: -1} }
func proc1(ms int64) upgradeStep { return upgradeStep{ts: -1, wm: -1, proc: ms} }

// runUpgrade runs steps through an inline runner with strategy s, restored
// from snap when it is set, and returns its outputs and, when barrier,
// its snapshot at the end.
func runUpgrade(t *testing.T, s window.Strategy, snap []byte, ro bool, steps []upgradeStep, barrier bool) (string, []byte) {
	t.Helper()
	var b strings.Builder
	var state []byte
	cfg := Config[string, int64, int64, int64]{
		Strategy: s, Agg: aggregate.Count[int64](), Codec: countCodec{}, DropRestored: ro,
		Hash: func(string) uint64 { return 0 },
		Emit: func(outs []Out[string, int64, int64]) error {
			for _, o := range outs {
				switch o.Kind {
				case OutPane:
					fmt.Fprintf(&b, "%s [%d,%d) #%d %s final=%v n=%d\n", o.Pane.Key, o.Pane.Window.Start/1000, o.Pane.Window.End/1000,
						o.Pane.Revision, o.Pane.Timing, o.Pane.Final, o.Pane.Value)
				case OutLate:
					fmt.Fprintf(&b, "too late %d\n", o.Late.Timestamp/1000)
				case OutBarrier:
					o.Barrier.Wait()
					state = o.Barrier.State
				}
			}
			return nil
		},
	}
	if snap != nil {
		cfg.Restore = [][]byte{snap}
	}
	r := NewRunner(cfg)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	now := mtime.Time(0)
	for _, st := range steps {
		switch {
		case st.ts >= 0:
			r.Event("a", mtime.Time(st.ts*1000), now, 1)
		case st.wm >= 0:
			r.Watermark(mtime.Time(st.wm*1000), now)
		default:
			now = mtime.Time(st.proc)
			r.Proc(now)
		}
	}
	if barrier {
		r.Barrier(nil)
	}
	r.Stop()
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	if ro {
		fmt.Fprintf(&b, "dropped %d keys\n", r.DroppedKeys())
	}
	return b.String(), state
}

// A restore into a job whose allowed lateness is shorter closes the windows
// the new lateness has already passed, at once, with their final pane; an
// event for them is too late.
func TestRestoreShorterLatenessClosesWindows(t *testing.T) {
	tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
	before, snap := runUpgrade(t, tumbling.WithLateness(30*time.Second), nil, false, []upgradeStep{ev1(1), ev1(5), wm1(15)}, true)
	if want := "a [0,10) #1 ON_TIME final=false n=2\n"; before != want {
		t.Fatalf("before the savepoint:\n%s\nwant:\n%s", before, want)
	}
	after, _ := runUpgrade(t, tumbling.WithLateness(2*time.Second), snap, false, []upgradeStep{ev1(3), ev1(12), wm1(25)}, false)
	want := "a [0,10) #2 LATE final=true n=2\n" + // closed at the restore
		"too late 3\n" +
		"a [10,20) #1 ON_TIME final=true n=1\n"
	if after != want {
		t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
	}
}

// A restore into a job whose allowed lateness is longer keeps the open
// windows open longer, and opens none of those the old lateness closed.
func TestRestoreLongerLatenessReopensNothing(t *testing.T) {
	tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
	before, snap := runUpgrade(t, tumbling, nil, false, []upgradeStep{ev1(1), wm1(15), ev1(12)}, true)
	if want := "a [0,10) #1 ON_TIME final=true n=1\n"; before != want {
		t.Fatalf("before the savepoint:\n%s\nwant:\n%s", before, want)
	}
	after, _ := runUpgrade(t, tumbling.WithLateness(time.Minute), snap, false, []upgradeStep{ev1(5), wm1(25), ev1(13), wm1(90)}, false)
	want := "too late 5\n" + // its window was closed before the restore
		"a [10,20) #1 ON_TIME final=false n=1\n" + // open longer: not final
		"a [10,20) #2 LATE final=false n=2\n" +
		"a [10,20) #3 LATE final=true n=2\n"
	if after != want {
		t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
	}
}

// A restore into a job whose trigger has no early firings fires none of
// the early timers the checkpoint's windows had set.
func TestRestoreWithoutEarlyFirings(t *testing.T) {
	tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
	early := tumbling.WithTrigger(trigger.AfterWatermark().EarlyEvery(time.Second, false))
	before, snap := runUpgrade(t, early, nil, false, []upgradeStep{proc1(100), ev1(1)}, true)
	if before != "" {
		t.Fatalf("before the savepoint:\n%s", before)
	}
	after, _ := runUpgrade(t, tumbling, snap, false, []upgradeStep{proc1(5000), wm1(15)}, false)
	if want := "a [0,10) #1 ON_TIME final=true n=1\n"; after != want {
		t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
	}
	// The same trigger fires it early: the test can tell.
	same, _ := runUpgrade(t, early, snap, false, []upgradeStep{proc1(5000), wm1(15)}, false)
	if want := "a [0,10) #1 EARLY final=false n=1\na [0,10) #2 ON_TIME final=true n=1\n"; same != want {
		t.Errorf("with the same trigger:\n%s\nwant:\n%s", same, want)
	}
}

// Dropping the restored state leaves the windows behind and keeps the
// watermark: an event before it is too late, a later one starts a window.
func TestRestoreDroppingTheWindows(t *testing.T) {
	tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
	before, snap := runUpgrade(t, tumbling, nil, false, []upgradeStep{ev1(1), ev1(12), wm1(11)}, true)
	if want := "a [0,10) #1 ON_TIME final=true n=1\n"; before != want {
		t.Fatalf("before the savepoint:\n%s\nwant:\n%s", before, want)
	}
	after, _ := runUpgrade(t, tumbling, snap, true, []upgradeStep{ev1(2), ev1(14), wm1(25)}, false)
	want := "too late 2\n" +
		"a [10,20) #1 ON_TIME final=true n=1\n" + // the savepoint's event at 12 is not in it
		"dropped 1 keys\n"
	if after != want {
		t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
	}
}
