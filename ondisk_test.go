package weir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// onDiskBudget is small, so that the state goes through the databases'
// files rather than staying in their memtables and caches.
const onDiskBudget = 4 << 20

// joinThenCount runs a left outer join of evs, and counts the pairs of
// each order per minute of their time, from orders and payments that are
// Deduplicated (each event is read twice): a join's state and an
// aggregation's windows and ids. seen, when set, is called with each pane
// as it comes.
func joinThenCount(evs []shop, opts []weir.Option, seen func()) ([]string, error) {
	p := weir.NewPipeline(opts...)
	twice := weir.FromSeq(p, func(yield func(shop, mtime.Time) bool) {
		for _, e := range evs {
			if !yield(e, e.Arrival) || !yield(e, e.Arrival) {
				return
			}
		}
	}, weir.Named("shop"))
	wm := watermark.BoundedOutOfOrderness(5 * time.Second)
	out, late := weir.IntervalJoin(shopSide(twice, "order", wm), shopSide(twice, "payment", wm), -5*time.Second, 20*time.Second,
		weir.LeftOuter(), weir.Named("payments"))
	stamped := weir.WithTimestamps(twice, func(e shop) mtime.Time { return e.At }, wm).
		Deduplicated(time.Hour, func(e shop) string { return e.Kind + e.Order + fmt.Sprint(e.At) })
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(e shop) string { return e.Kind }),
		window.NewStrategy(window.TumblingWindows(time.Minute))), aggregate.Count[shop](), weir.Named("per-minute"))
	// Each sink in its goroutine, to lines of its own.
	var joined, counts []string
	weir.Sink(weir.Union(weir.Map(out, joinedLine), weir.Map(late, lateLine)), func(s string) error { joined = append(joined, s); return nil })
	weir.Sink(panes, func(pn weir.Pane[string, int64]) error {
		if seen != nil {
			seen()
		}
		counts = append(counts, fmt.Sprintf("%s %s %d", pn.Key, pn.Window, pn.Value))
		return nil
	})
	err := p.Run(context.Background())
	return append(joined, counts...), err
}

// A pipeline's join and aggregation keep their state on disk, each in a
// database of its own under the directory StateOnDisk names, and give what
// they give in memory; the databases are gone when Run returns.
func TestStateOnDiskAsInMemory(t *testing.T) {
	evs := shopEvents(6000)
	want, err := joinThenCount(evs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 4000 {
		t.Fatalf("the reference output is too small: %d lines", len(want))
	}
	dir := filepath.Join(t.TempDir(), "state")
	var dbs []string
	got, err := joinThenCount(evs, []weir.Option{weir.StateOnDisk(dir, onDiskBudget), weir.Parallelism(3)}, func() {
		if dbs == nil {
			dbs = databases(t, dir)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("on disk, %d lines differ from the %d in memory", len(got), len(want))
	}
	if len(dbs) != 2 {
		t.Errorf("while it ran, %s held the databases %q, want two (the join's, the aggregation's)", dir, dbs)
	}
	if left := databases(t, dir); len(left) != 0 {
		t.Errorf("after the run, %s still holds %q", dir, left)
	}
}

// databases are the state databases under dir: the directories that hold
// a Pebble database beside a weir state marker.
func databases(t *testing.T, dir string) []string {
	t.Helper()
	var dbs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "db" {
			return err
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), state.MarkerName)); err == nil {
			dbs = append(dbs, filepath.Dir(path))
		}
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	return dbs
}

// With its state on disk, a join stops with a savepoint and resumes at
// another parallelism, on disk or in memory: the output is what an
// uninterrupted run writes, byte for byte. So do an aggregation of
// Deduplicated events, a join of Deduplicated inputs (their ids on disk
// too) and a keyed process function; and a savepoint taken in memory
// resumes on disk.
func TestStateOnDiskCheckpointsAndResume(t *testing.T) {
	onDisk := func(stopped, resumed bool, build func(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline) func(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
		return func(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
			if stopAt >= 0 && stopped || stopAt < 0 && opts != nil && resumed {
				opts = append(opts, weir.StateOnDisk("", onDiskBudget))
			}
			return build(evs, path, opts, stopAt, cancel)
		}
	}
	enoughPanes := func(out []byte) bool { return bytes.Count(out, []byte("\n")) >= 200 }
	for _, c := range []struct {
		name             string
		stopped, resumed bool
	}{{"on disk", true, true}, {"on disk then in memory", true, false}, {"in memory then on disk", false, true}} {
		t.Run("join "+c.name, func(t *testing.T) {
			resumesAsUninterrupted(t, shopEvents(6000), 3000, enoughJoined, onDisk(c.stopped, c.resumed, joinFile))
		})
		t.Run("temporal join "+c.name, func(t *testing.T) {
			resumesAsUninterrupted(t, shopEvents(6000), 3000, enoughJoined, onDisk(c.stopped, c.resumed, temporalFile))
		})
		t.Run("aggregation "+c.name, func(t *testing.T) {
			resumesAsUninterrupted(t, shopEvents(6000), 3000, enoughPanes, onDisk(c.stopped, c.resumed, countFile))
		})
		t.Run("keyed process "+c.name, func(t *testing.T) {
			resumesAsUninterrupted(t, shopEvents(6000), 3000, enoughWatched, onDisk(c.stopped, c.resumed, processFile))
		})
		t.Run("join of Deduplicated inputs "+c.name, func(t *testing.T) {
			resumesAsUninterrupted(t, withDuplicates(shopEvents(6000)), 3000, enoughJoined, onDisk(c.stopped, c.resumed, dedupJoinFile))
		})
	}
}

// A join's buffers and a keyed process function's states and timers on
// disk go into their checkpoints from the database, a file a part, never
// whole in memory: a periodic checkpoint shares them as objects of the
// store, a savepoint keeps its own copies; both are files the checkpoint
// reads from disk.
func TestStateOnDiskCheckpointFiles(t *testing.T) {
	evs := shopEvents(6000)
	for _, c := range []struct {
		part  string
		build func(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline
	}{{"join:payments", joinFile}, {"process:payments", processFile}} {
		var keys []int64
		for _, disk := range []bool{false, true} {
			dir := t.TempDir()
			opts := []weir.Option{weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour), weir.Parallelism(2)}
			if disk {
				opts = append(opts, weir.StateOnDisk("", onDiskBudget))
			}
			ctx, cancel := context.WithCancel(context.Background())
			err := c.build(evs, filepath.Join(dir, "out.txt"), opts, 3000, cancel).Run(ctx)
			cancel()
			var stopped *engine.StoppedError
			if !errors.As(err, &stopped) {
				t.Fatalf("%s: stopped: %v", c.part, err)
			}
			ck, err := checkpoint.Load(checkpoint.OSFS, stopped.Savepoint)
			if err != nil {
				t.Fatal(err)
			}
			parts := 0
			for _, f := range ck.Manifest.Files {
				if !strings.HasPrefix(f.Name, c.part+".op-") {
					continue
				}
				parts++
				_, inMemory := ck.Files[f.Name]
				if inMemory == disk || f.Lazy != disk || f.Size < 100 {
					t.Errorf("%s on disk %v: the savepoint's %s: read in %v, %+v", c.part, disk, f.Name, inMemory, f)
				}
			}
			in, err := engine.Inspect(ck, nil)
			if err != nil || len(in.Joins)+len(in.Processes) != 1 || parts != 2 {
				t.Fatalf("%s on disk %v: inspect: %v, %+v, %d parts", c.part, disk, err, in, parts)
			}
			if len(in.Joins) == 1 {
				if in.Joins[0].Instances != 2 {
					t.Errorf("%s on disk %v: %+v", c.part, disk, in.Joins[0])
				}
				keys = append(keys, in.Joins[0].Keys)
			} else {
				if in.Processes[0].Instances != 2 {
					t.Errorf("%s on disk %v: %+v", c.part, disk, in.Processes[0])
				}
				keys = append(keys, in.Processes[0].Keys)
			}
		}
		if keys[0] < 10 || keys[1] < 10 {
			t.Errorf("%s: the savepoints hold %d keys in memory and %d on disk", c.part, keys[0], keys[1])
		}
	}
}

// countFile counts evs (each read twice, and Deduplicated) by kind and
// order's first characters in sliding windows, into path, exactly once;
// cancel, when set, is called after the element at stopAt was read.
func countFile(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	src := shopSource(p, evs, stopAt, cancel)
	stamped := weir.WithTimestamps(src, func(e shop) mtime.Time { return e.At }, watermark.BoundedOutOfOrderness(5*time.Second)).
		Deduplicated(time.Hour, func(e shop) string { return e.Kind + e.Order })
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(e shop) string { return e.Kind + e.Order[:2] }),
		window.NewStrategy(window.SlidingWindows(2*time.Minute, time.Minute))), aggregate.Count[shop](), weir.Named("counts"))
	weir.SinkTo(panes, "counts", &file.Sink[weir.Pane[string, int64]]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, pn weir.Pane[string, int64]) []byte {
			return fmt.Appendf(b, "%s %s %d %s\n", pn.Key, pn.Window, pn.Value, pn.Timing)
		}})
	return p
}

// StateOnDisk refuses a budget below 0, and a directory that holds files
// and is not weir's (weir empties the state directory); it asks the types
// it keeps to round-trip through JSON, as Checkpoints does.
func TestStateOnDiskErrors(t *testing.T) {
	run := func(opts ...weir.Option) error {
		p := weir.NewPipeline(opts...)
		s := weir.WithTimestamps(weir.FromSlice(p, []int{1, 2}), func(int) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0))
		panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(s, func(int) int { return 0 }),
			window.NewStrategy(window.TumblingWindows(time.Second))), aggregate.Count[int]())
		weir.Sink(panes, func(weir.Pane[int, int64]) error { return nil })
		return p.Run(context.Background())
	}
	if err := run(weir.StateOnDisk("", -1)); err == nil || !strings.Contains(err.Error(), "weir: StateOnDisk: expected a memory budget of 0 (the default, 512 MiB) or more bytes, got -1") {
		t.Errorf("a budget below 0: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(weir.StateOnDisk(dir, 0)); err == nil || !strings.Contains(err.Error(), "weir: StateOnDisk: "+dir+" is not empty and is not a weir state directory") {
		t.Errorf("a directory of someone else's: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the directory's file: %q, %v", b, err)
	}
	if err := run(weir.StateOnDisk(filepath.Join(dir, "state"), 0)); err != nil {
		t.Errorf("a new directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", state.MarkerName)); err != nil {
		t.Errorf("the state directory is not marked weir's: %v", err)
	}

	p := weir.NewPipeline(weir.StateOnDisk("", 0))
	type fn struct{ F func() }
	s := weir.WithTimestamps(weir.Map(weir.FromSlice(p, []int{1}), func(int) fn { return fn{} }), func(fn) mtime.Time { return 0 }, watermark.BoundedOutOfOrderness(0))
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(s, func(fn) int { return 0 }),
		window.NewStrategy(window.TumblingWindows(time.Second))), aggregate.Collect[fn]())
	weir.Sink(panes, func(weir.Pane[int, []fn]) error { return nil })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot be kept on disk (StateOnDisk)") {
		t.Errorf("a type without a codec: %v", err)
	}
}

// Orders per card per minute, de-duplicated by order id over an hour, with
// the windows, their timers and the ids in a Pebble database on disk
// within 64 MiB of memory (a job file's state: {backend: pebble}): for
// more cards, or a longer horizon, than memory holds.
func ExampleStateOnDisk() {
	type order struct {
		ID, Card string
		At       mtime.Time
	}
	orders := []order{
		{"o-1", "card-1", at("2026-09-07T12:00:01Z")},
		{"o-2", "card-1", at("2026-09-07T12:00:20Z")},
		{"o-1", "card-1", at("2026-09-07T12:00:01Z")}, // delivered again
		{"o-3", "card-2", at("2026-09-07T12:00:30Z")},
		{"o-4", "card-2", at("2026-09-07T12:01:05Z")},
	}
	p := weir.NewPipeline(weir.StateOnDisk("", 64<<20))
	src := weir.FromSlice(p, orders, weir.Named("orders"))
	stamped := weir.WithTimestamps(src, func(o order) mtime.Time { return o.At }, watermark.BoundedOutOfOrderness(2*time.Second)).
		Deduplicated(time.Hour, func(o order) string { return o.ID })
	counts, _ := weir.Aggregate(
		weir.Window(weir.KeyBy(stamped, func(o order) string { return o.Card }), window.NewStrategy(window.TumblingWindows(time.Minute))),
		aggregate.Count[order](), weir.Named("orders-per-card"))
	weir.Sink(counts, func(pn weir.Pane[string, int64]) error {
		fmt.Printf("%s: %d orders in the minute from %s\n", pn.Key, pn.Value, pn.Window.Start.Time().Format("15:04"))
		return nil
	})
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// card-1: 2 orders in the minute from 12:00
	// card-2: 1 orders in the minute from 12:00
	// card-2: 1 orders in the minute from 12:01
}

// A keyed process function keeps its states and timers on disk with
// StateOnDisk, in a database of its own under the directory it names, and
// gives what it gives in memory, with nothing to warn of.
func TestStateOnDiskKeyedProcess(t *testing.T) {
	evs := shopEvents(2000)
	dir := t.TempDir()
	if err := processFile(evs, filepath.Join(dir, "ref.txt"), nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	stateDir := filepath.Join(dir, "state")
	var dbs []string
	cancel := func() { dbs = databases(t, stateDir) }
	// At the 1000th event, cancel only looks at the directory.
	if err := processFile(evs, filepath.Join(dir, "out.txt"), []weir.Option{weir.StateOnDisk(stateDir, onDiskBudget), weir.Log(&log)}, 1000, cancel).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if log.String() != "" {
		t.Errorf("the log: %q, want nothing", log.String())
	}
	if len(dbs) != 1 {
		t.Errorf("while it ran, %s held the databases %q, want one", stateDir, dbs)
	}
	ref, _ := os.ReadFile(filepath.Join(dir, "ref.txt"))
	if got, _ := os.ReadFile(filepath.Join(dir, "out.txt")); !bytes.Equal(got, ref) || len(ref) == 0 {
		t.Errorf("with StateOnDisk, the output differs (%d bytes, want %d)", len(got), len(ref))
	}
}

// A join's Deduplicated inputs keep their ids on disk with StateOnDisk:
// the left input's in the join's database, the right one's in a database
// of their own; the output is the one in memory.
func TestStateOnDiskJoinIDs(t *testing.T) {
	evs := withDuplicates(shopEvents(3000))
	dir := t.TempDir()
	if err := dedupJoinFile(evs, filepath.Join(dir, "ref.txt"), nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, "state")
	var dbs []string
	// At the 1000th event, cancel only looks at the directory.
	look := func() { dbs = databases(t, stateDir) }
	if err := dedupJoinFile(evs, filepath.Join(dir, "out.txt"), []weir.Option{weir.StateOnDisk(stateDir, onDiskBudget)}, 1000, look).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(dbs) != 2 {
		t.Errorf("while it ran, %s held the databases %q, want two (the join's, the right input's ids)", stateDir, dbs)
	}
	ref, _ := os.ReadFile(filepath.Join(dir, "ref.txt"))
	if got, _ := os.ReadFile(filepath.Join(dir, "out.txt")); !bytes.Equal(got, ref) || !enoughJoined(ref) {
		t.Errorf("with StateOnDisk, the output differs (%d bytes, want %d)", len(got), len(ref))
	}
}
