package exec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// upgradeStep is one input of an upgrade script: an event of key "a" at
// ts (seconds), a watermark (wm, seconds) or processing time (proc, ms).
type upgradeStep struct {
	ts, wm, proc int64
	withdraw     bool // the event at ts is withdrawn
}

func ev1(ts int64) upgradeStep   { return upgradeStep{ts: ts, wm: -1, proc: -1} }
func wm1(wm int64) upgradeStep   { return upgradeStep{ts: -1, wm: wm, proc: -1} }
func proc1(ms int64) upgradeStep { return upgradeStep{ts: -1, wm: -1, proc: ms} }

// upgradeSnap is a snapshot runUpgrade took: the operator's, and with a
// state database the directory of its Pebble checkpoint.
type upgradeSnap struct {
	state []byte
	dir   string
}

// bothBackends runs f with the operator's state in memory, then in a state
// database.
func bothBackends(t *testing.T, f func(t *testing.T, pebble bool)) {
	t.Run("memory", func(t *testing.T) { f(t, false) })
	t.Run("pebble", func(t *testing.T) { f(t, true) })
}

// runUpgrade runs steps through an inline runner with strategy s, restored
// from snap when it is set, and returns its outputs and, when barrier,
// its snapshot at the end.
func runUpgrade(t *testing.T, pebble bool, s window.Strategy, snap *upgradeSnap, ro bool, steps []upgradeStep, barrier bool) (string, *upgradeSnap) {
	t.Helper()
	var b strings.Builder
	var taken *upgradeSnap
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
					taken = &upgradeSnap{state: o.Barrier.State}
					if o.Barrier.Snapshot != nil {
						taken.dir = o.Barrier.Snapshot.Dir
					}
				}
			}
			return nil
		},
	}
	if pebble {
		// A database of its own for each run, as a job started again
		// has: the one before stays open, holding its checkpoint.
		db, err := state.Open(t.TempDir(), 8<<10)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		cfg.State = db
	}
	if snap != nil {
		cfg.Restore = [][]byte{snap.state}
		if snap.dir != "" {
			cfg.RestoreDirs = []string{snap.dir}
		}
	}
	r := NewRunner(cfg)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	now := mtime.Time(0)
	for _, st := range steps {
		switch {
		case st.ts >= 0 && st.withdraw:
			r.Withdraw("a", mtime.Time(st.ts*1000), now, 1, true)
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
	return b.String(), taken
}

// A restore into a job whose allowed lateness is shorter closes the windows
// the new lateness has already passed, at once, with their final pane; an
// event for them is too late.
func TestRestoreShorterLatenessClosesWindows(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
		before, snap := runUpgrade(t, pebble, tumbling.WithLateness(30*time.Second), nil, false, []upgradeStep{ev1(1), ev1(5), wm1(15)}, true)
		if want := "a [0,10) #1 ON_TIME final=false n=2\n"; before != want {
			t.Fatalf("before the savepoint:\n%s\nwant:\n%s", before, want)
		}
		after, _ := runUpgrade(t, pebble, tumbling.WithLateness(2*time.Second), snap, false, []upgradeStep{ev1(3), ev1(12), wm1(25)}, false)
		want := "a [0,10) #2 LATE final=true n=2\n" + // closed at the restore
			"too late 3\n" +
			"a [10,20) #1 ON_TIME final=true n=1\n"
		if after != want {
			t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
		}
	})
}

// A restore into a job whose allowed lateness is longer keeps the open
// windows open longer, and opens none of those the old lateness closed.
func TestRestoreLongerLatenessReopensNothing(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
		before, snap := runUpgrade(t, pebble, tumbling, nil, false, []upgradeStep{ev1(1), wm1(15), ev1(12)}, true)
		if want := "a [0,10) #1 ON_TIME final=true n=1\n"; before != want {
			t.Fatalf("before the savepoint:\n%s\nwant:\n%s", before, want)
		}
		after, _ := runUpgrade(t, pebble, tumbling.WithLateness(time.Minute), snap, false, []upgradeStep{ev1(5), wm1(25), ev1(13), wm1(90)}, false)
		want := "too late 5\n" + // its window was closed before the restore
			"a [10,20) #1 ON_TIME final=false n=1\n" + // open longer: not final
			"a [10,20) #2 LATE final=false n=2\n" +
			"a [10,20) #3 LATE final=true n=2\n"
		if after != want {
			t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
		}
	})
}

// A restore into a job whose trigger has no early firings fires none of
// the early timers the checkpoint's windows had set.
func TestRestoreWithoutEarlyFirings(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
		early := tumbling.WithTrigger(trigger.AfterWatermark().EarlyEvery(time.Second, false))
		before, snap := runUpgrade(t, pebble, early, nil, false, []upgradeStep{proc1(100), ev1(1)}, true)
		if before != "" {
			t.Fatalf("before the savepoint:\n%s", before)
		}
		after, _ := runUpgrade(t, pebble, tumbling, snap, false, []upgradeStep{proc1(5000), wm1(15)}, false)
		if want := "a [0,10) #1 ON_TIME final=true n=1\n"; after != want {
			t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
		}
		// The same trigger fires it early: the test can tell.
		same, _ := runUpgrade(t, pebble, early, snap, false, []upgradeStep{proc1(5000), wm1(15)}, false)
		if want := "a [0,10) #1 EARLY final=false n=1\na [0,10) #2 ON_TIME final=true n=1\n"; same != want {
			t.Errorf("with the same trigger:\n%s\nwant:\n%s", same, want)
		}
	})
}

// Dropping the restored state leaves the windows behind and keeps the
// watermark: an event before it is too late, a later one starts a window.
func TestRestoreDroppingTheWindows(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second))
		before, snap := runUpgrade(t, pebble, tumbling, nil, false, []upgradeStep{ev1(1), ev1(12), wm1(11)}, true)
		if want := "a [0,10) #1 ON_TIME final=true n=1\n"; before != want {
			t.Fatalf("before the savepoint:\n%s\nwant:\n%s", before, want)
		}
		after, _ := runUpgrade(t, pebble, tumbling, snap, true, []upgradeStep{ev1(2), ev1(14), wm1(25)}, false)
		want := "too late 2\n" +
			"a [10,20) #1 ON_TIME final=true n=1\n" + // the savepoint's event at 12 is not in it
			"dropped 1 keys\n"
		if after != want {
			t.Errorf("after the restore:\n%s\nwant:\n%s", after, want)
		}
	})
}

// A composite trigger's state per window (counts, a processing-time
// deadline, finished bits) is in the checkpoint: a run stopped mid-window
// and restored writes what a run without a stop writes, byte for byte, the
// processing-time firing set before the stop included.
func TestRestoreCompositeTriggerMidWindow(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		tr := trigger.Of(trigger.AfterEach(
			trigger.OrFinally(trigger.AfterCount(2), trigger.AfterProcessingTime(time.Hour)),
			trigger.Repeatedly(trigger.AfterFirst(trigger.AfterCount(3), trigger.AfterProcessingTime(2*time.Second))),
		))
		for _, s := range []window.Strategy{
			window.NewStrategy(window.TumblingWindows(10 * time.Second)).WithLateness(time.Minute).WithTrigger(tr),
			window.NewStrategy(window.SessionWindows(5 * time.Second)).WithLateness(time.Minute).WithTrigger(tr),
		} {
			// Stopped with two events counted and a firing due at 2.1 s
			// of processing time, which fires after the restore.
			first := []upgradeStep{proc1(100), ev1(1), ev1(2), ev1(3), ev1(4), proc1(1000)}
			second := []upgradeStep{proc1(2500), ev1(5), proc1(3000), ev1(6), ev1(7), ev1(8), wm1(30), ev1(9), wm1(200)}
			whole, _ := runUpgrade(t, pebble, s, nil, false, append(append([]upgradeStep(nil), first...), second...), false)
			before, snap := runUpgrade(t, pebble, s, nil, false, first, true)
			after, _ := runUpgrade(t, pebble, s, snap, false, second, false)
			if before+after != whole {
				t.Errorf("%s: stopped and restored:\n%s--\n%s\nwithout a stop:\n%s", s.Assigner, before, after, whole)
			}
			if !strings.Contains(after, "EARLY final=false n=4") || strings.Count(whole, "\n") < 4 {
				t.Errorf("%s: the script fires too little to tell:\n%s", s.Assigner, whole)
			}
		}
	})
}

// A job without a composite trigger writes its checkpoints as before them
// (version 6, or 7 with a state database), which a job with one restores,
// each window's trigger starting afresh; a job with one writes version 8
// (or 9), which a weir of before refuses instead of misreading it.
func TestRestoreSnapshotVersionBeforeCompositeTriggers(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second)).WithLateness(30 * time.Second)
		_, snap := runUpgrade(t, pebble, tumbling, nil, false, []upgradeStep{ev1(1), ev1(5), wm1(5)}, true)
		if want := map[bool]byte{false: 6, true: 7}[pebble]; snap.state[0] != want {
			t.Errorf("a job without a composite trigger writes version %d, want %d", snap.state[0], want)
		}
		composite := tumbling.WithTrigger(trigger.Of(trigger.Repeatedly(trigger.AfterCount(2))))
		got, snap2 := runUpgrade(t, pebble, composite, snap, false, []upgradeStep{ev1(3), ev1(4)}, true)
		if want := "a [0,10) #1 EARLY final=false n=4\n"; got != want {
			t.Errorf("restored into a composite trigger:\n%s\nwant:\n%s", got, want)
		}
		if want := map[bool]byte{false: snapshotVersion, true: snapshotPebbleVersion}[pebble]; snap2.state[0] != want {
			t.Errorf("a job with a composite trigger writes version %d, want %d", snap2.state[0], want)
		}
	})
}

// A restore into a job whose composite trigger has the same shape keeps
// what each window's trigger counted (the counts now compared with the new
// parameters); into one of another shape, each window's trigger starts
// afresh.
func TestRestoreChangedCompositeTrigger(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		tumbling := window.NewStrategy(window.TumblingWindows(10 * time.Second)).WithLateness(time.Minute)
		three := tumbling.WithTrigger(trigger.Of(trigger.Repeatedly(trigger.AfterCount(3))))
		before, snap := runUpgrade(t, pebble, three, nil, false, []upgradeStep{ev1(1), ev1(2)}, true)
		if before != "" {
			t.Fatalf("before the savepoint:\n%s", before)
		}
		four := tumbling.WithTrigger(trigger.Of(trigger.Repeatedly(trigger.AfterCount(4))))
		same, _ := runUpgrade(t, pebble, four, snap, false, []upgradeStep{ev1(5), ev1(6)}, false)
		if want := "a [0,10) #1 EARLY final=false n=4\n"; same != want {
			t.Errorf("the same shape:\n%s\nwant:\n%s", same, want)
		}
		other := tumbling.WithTrigger(trigger.Of(trigger.Repeatedly(trigger.AfterFirst(trigger.AfterCount(3), trigger.Never()))))
		afresh, _ := runUpgrade(t, pebble, other, snap, false, []upgradeStep{ev1(5), ev1(6), ev1(7)}, false)
		if want := "a [0,10) #1 EARLY final=false n=5\n"; afresh != want {
			t.Errorf("another shape:\n%s\nwant:\n%s", afresh, want)
		}
	})
}
