package exec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/textdiff"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// A keyLoad takes in every key it was given, once, in however many table
// files its limit cuts them into, in whatever order they came.
func TestKeyLoadTakesEveryKeyOnce(t *testing.T) {
	db, err := state.Open(t.TempDir(), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	var want []string
	for i := range 500 {
		want = append(want, fmt.Sprintf("t%06d", i))
	}
	in := slices.Clone(want)
	in = append(in, want[7], want[300]) // the same timer twice
	rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	l := &keyLoad{db: db, limit: 256} // 36 keys a file
	for _, k := range in {
		l.add([]byte(k))
	}
	if err := l.flush(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	it, err := db.NewIter(&pebble.IterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.First(); it.Valid(); it.Next() {
		got = append(got, string(it.Key()))
	}
	it.Close()
	if !slices.Equal(got, want) {
		t.Fatalf("seed %d: the database holds %d keys, want %d: %v", seed, len(got), len(want), got)
	}
	if files := db.Metrics().Total().TablesCount; files < 2 {
		t.Fatalf("seed %d: %d table files: the limit cut nothing", seed, files)
	}
}

// The Pebble store reads a batch's keys before its events, in key order:
// a key it finds goes into the cache, a key it does not is created without
// a read. The operator's output is the memory store's, byte for byte, with
// keys evicted and read back all the time, and the events make no point
// read of their own.
func TestPebblePrefetchesABatchsKeys(t *testing.T) {
	type kv struct {
		key string
		ts  mtime.Time
	}
	var evs []kv
	base := mtime.Time(1_700_000_000_000)
	for round := range 6 {
		for k := range 500 {
			// Three rounds in a window, then three in the next; a key in
			// two of every 3 rounds, so that a batch has found keys and
			// new ones.
			if (k+round)%3 != 0 {
				evs = append(evs, kv{fmt.Sprintf("k%03d", (k*7919)%500), base + mtime.Time(round/3*60_000+k)})
			}
		}
	}
	run := func(db *state.DB) (string, *Runner[string, ev, []ev, string]) {
		var b strings.Builder
		r := NewRunner(Config[string, ev, []ev, string]{
			State: db, Codec: evCodec{},
			Strategy:    window.NewStrategy(window.TumblingWindows(time.Minute)),
			Agg:         aggregate.Process(func(es []ev) string { return fmt.Sprint(len(es)) }),
			Parallelism: 1, BatchSize: 64,
			Hash: func(k string) uint64 { return uint64(k[len(k)-1]) },
			Emit: func(outs []Out[string, ev, string]) error {
				for _, o := range outs {
					fmt.Fprintf(&b, "%s %v %s\n", o.Pane.Key, o.Pane.Window, o.Pane.Value)
				}
				return nil
			},
		})
		d := NewDriver[string, ev](r, watermark.BoundedOutOfOrderness(time.Second), false)
		for _, e := range evs {
			d.Event(0, e.key, e.ts, ev{key: e.key, ts: e.ts})
		}
		d.End()
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		return b.String(), r
	}
	want, _ := run(nil)
	if n := strings.Count(want, "\n"); n != 1000 {
		t.Fatalf("%d panes from memory, want 1000 (500 keys, two windows)", n)
	}
	db, err := state.Open(t.TempDir(), 512<<10) // a cache of about 240 keys
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, r := run(db)
	if got != want {
		t.Fatalf("the Pebble store differs from memory:\n%s", textdiff.FirstLine(want, got))
	}
	s := r.ops[0].pebble
	// Reads by the prefetch: the second and third rounds of each window
	// find their keys on disk, but for those still in the cache.
	if s.loaded < 500 {
		t.Fatalf("%d keys read back, want at least 500: the cache did not overflow", s.loaded)
	}
	// Point reads: only the timers' keys that their own prefetch (of 16
	// keys or more a bucket) did not read.
	if s.gets > 100 {
		t.Fatalf("%d point reads for %d events: the events read their keys one by one", s.gets, len(evs))
	}
	t.Logf("loaded %d, point reads %d", s.loaded, s.gets)
}

// Timers popped from the database a part at a time come out in the memory
// queue's order, each once, also when a timer at the same instant but of an
// earlier window is added between two parts (the next part starts where
// the last ended, above the deleted timers, unless an added timer is below
// it).
func TestPebbleTimersPopInPartsInOrder(t *testing.T) {
	db, err := state.Open(t.TempDir(), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := newPebbleTimers[string](&pebbleWriter{db: db.DB}, 0, 'e', evCodec{})
	const at = mtime.Time(1_700_000_000_000)
	w := window.Window{Start: at - 60_000, End: at + 1}
	for i := range 10_000 {
		q.add(at, newTimer(fmt.Sprintf("k%05d", i), w, uint64(10+i), tOnTime))
	}
	q.add(at+5, newTimer("later", w, 3, tOnTime))
	var got []string
	for q.len() > 0 {
		tm, b := q.pop()
		for _, r := range b {
			got = append(got, fmt.Sprintf("%d/%d/%s", tm-at, r.seq(), r.key))
		}
		if len(got) == 4096 {
			// Added between the parts: at the same instant, seq 5 (before
			// every other), and one after the last.
			q.add(at, newTimer("early", w, 5, tCleanup))
			q.add(at, newTimer("last", w, 99_999, tOnTime))
		}
		q.recycle(b)
	}
	if err := q.error(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 4096 {
		want = append(want, fmt.Sprintf("0/%d/k%05d", 10+i, i))
	}
	want = append(want, "0/5/early")
	for i := 4096; i < 10_000; i++ {
		want = append(want, fmt.Sprintf("0/%d/k%05d", 10+i, i))
	}
	want = append(want, "0/99999/last", "5/3/later")
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("timer %d: got %s, want %s (%d timers, want %d)", i, got[i], want[i], len(got), len(want))
			}
		}
		t.Fatalf("%d timers, want %d", len(got), len(want))
	}
}
