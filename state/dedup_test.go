package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// A Pebble checkpoint of the de-duplication ids restores into either
// backend, which then holds the same ids as the one it was taken from.
func TestDedupSnapshotRestoresIntoEitherBackend(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(filepath.Join(dir, "a"), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := db.Dedup(1000)
	for i := range 50_000 {
		d.Seen(fmt.Appendf(nil, "id-%d", i%40_000), mtime.Time(i), mtime.Time(i-2000))
	}
	d.Expire(30_000)
	want := d.AppendState(nil)
	snap, err := d.(SnapshotDedup).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	// Ids added after the checkpoint are not in it.
	d.Seen([]byte("later"), 60_000, 30_000)

	mem := NewMemoryDedup(1000)
	if err := mem.RestoreSnapshot(snap.Dir, 0); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(filepath.Join(dir, "b"), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	disk := db2.Dedup(1000)
	if err := disk.RestoreSnapshot(snap.Dir, 0); err != nil {
		t.Fatal(err)
	}
	if got := disk.AppendState(nil); !bytes.Equal(got, want) {
		t.Errorf("Pebble restored %d bytes of ids, want %d", len(got), len(want))
	}
	// The memory backend writes its ids in heap order: compare what they
	// answer instead.
	if mem.Len() != disk.Len() || mem.Len() < 10_000 {
		t.Fatalf("%d ids in memory, %d on Pebble", mem.Len(), disk.Len())
	}
	for i := range 40_000 {
		id := fmt.Appendf(nil, "id-%d", i)
		if a, b := mem.Seen(id, 40_000, 30_000), disk.Seen(id, 40_000, 30_000); a != b {
			t.Fatalf("%s: seen %v in memory, %v on Pebble", id, a, b)
		}
	}
	if mem.Seen([]byte("later"), 60_000, 30_000) {
		t.Error("an id added after the checkpoint is in it")
	}
}

// Restored ids expire at their event time plus the horizon of the job that
// restores them: a shift moves every expiry, on either backend, from either
// kind of checkpoint.
func TestDedupRestoreShiftsExpiries(t *testing.T) {
	db, err := Open(t.TempDir(), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src := NewMemoryDedup(1000)
	for i := range 10 {
		src.Seen(fmt.Appendf(nil, "id-%d", i), mtime.Time(i*100), 0) // expires at i*100 + 1000
	}
	state := src.AppendState(nil)
	for _, c := range []struct {
		name  string
		d     Dedup
		shift mtime.Time
		want  string
	}{
		{"memory, the same", NewMemoryDedup(1000), 0, "[5 6 7 8 9]"},
		{"memory, longer", NewMemoryDedup(3000), 2000, "[0 1 2 3 4 5 6 7 8 9]"},
		{"memory, shorter", NewMemoryDedup(500), -500, "[]"},
		{"pebble, longer", db.Dedup(3000), 2000, "[0 1 2 3 4 5 6 7 8 9]"},
	} {
		c.d.RestoreState(enc.NewDecoder(state), c.shift, true)
		// At watermark 1450 the ids with expiry i*100+1000+shift <= 1450
		// are forgotten.
		c.d.Expire(1450)
		var seen []int
		for i := range 10 {
			if c.d.Seen(fmt.Appendf(nil, "id-%d", i), mtime.Time(i*100), 1450) {
				seen = append(seen, i)
			}
		}
		if got := fmt.Sprint(seen); got != c.want {
			t.Errorf("%s: seen %s, want %s", c.name, got, c.want)
		}
	}
}

// The memory backend answers every Seen as the definition does (an id is a
// duplicate while the watermark of the last Expire is before its event time
// plus the horizon), for random streams with late events, ids seen again
// after they expired, and checkpoints restored midway.
func TestMemoryDedupMatchesItsDefinition(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	for round := range 60 {
		horizon := mtime.Time(1 + r.IntN(50_000))
		d := NewMemoryDedup(horizon)
		model := map[string]mtime.Time{} // id -> expiry
		swept := mtime.MinTime
		w := mtime.Time(0)
		for i := range 3000 {
			switch op := r.IntN(20); {
			case op == 0:
				// Mostly small steps, so that ids expire within a bucket
				// of expiry that is not gone yet, and are seen again there.
				w += mtime.Time(r.IntN(int(pick(r, horizon, horizon/100+2))))
				d.Expire(w)
				swept = max(swept, w)
			case op == 1:
				// A checkpoint restored into a fresh one.
				e := NewMemoryDedup(horizon)
				e.RestoreState(enc.NewDecoder(d.AppendState(nil)), 0, true)
				d = e
			default:
				// As the head calls it: never for an event whose own
				// expiry the watermark has passed (beyond the horizon).
				id := fmt.Sprintf("id-%d", r.IntN(300))
				ts := w - horizon + 1 + mtime.Time(r.IntN(int(horizon)+1000))
				exp, ok := model[id]
				want := ok && exp > swept
				if !want {
					model[id] = ts.Add(horizon)
				}
				if got := d.Seen([]byte(id), ts, w); got != want {
					t.Fatalf("seed %d, round %d, step %d: Seen(%s, %d) with the last Expire at %d = %v, want %v", seed, round, i, id, ts, swept, got, want)
				}
			}
		}
	}
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// Remembering an id copies it into a chunk of the dedup's, not into an
// allocation of its own.
func TestMemoryDedupIDsShareChunks(t *testing.T) {
	d := NewMemoryDedup(mtime.Time(time.Hour.Milliseconds()))
	id := make([]byte, 0, 32)
	i := 0
	allocs := testing.AllocsPerRun(100_000, func() {
		i++
		id = strconv.AppendInt(append(id[:0], "order-"...), int64(i), 10)
		d.Seen(id, mtime.Time(1_000_000+i), 0)
	})
	// The map's and the buckets' growth, now and then.
	if allocs > 0.2 {
		t.Errorf("%.2f allocations an id", allocs)
	}
	if d.Len() != 100_001 {
		t.Errorf("%d ids", d.Len())
	}
}

// An id remembered with a value answers it while it is live, on either
// backend, through either kind of checkpoint; an id seen again after it
// expired has none; a checkpoint from before values restores its ids
// without any.
func TestDedupValues(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(filepath.Join(dir, "a"), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lookups := func(d Dedup, w mtime.Time) string {
		var b strings.Builder
		for _, id := range []string{"a", "b", "c", "d"} {
			v, live := d.Lookup([]byte(id), w)
			fmt.Fprintf(&b, "%s:%v:%q ", id, live, v)
		}
		return b.String()
	}
	for name, d := range map[string]Dedup{"memory": NewMemoryDedup(1000), "pebble": db.Dedup(1000)} {
		d.Seen([]byte("a"), 100, 0)                 // no value, expires at 1100
		d.Remember([]byte("b"), 1200, []byte("v1")) // expires at 1200
		d.Remember([]byte("b"), 1150, []byte("v2")) // a new value, the later expiry kept
		d.Remember([]byte("c"), 500, []byte("gone"))
		d.Expire(600) // c expires
		want := `a:true:"" b:true:"v2" c:false:"" d:false:"" `
		if got := lookups(d, 600); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
		if d.Seen([]byte("c"), 650, 600) {
			t.Errorf("%s: an expired id is seen", name)
		}
		want = `a:true:"" b:true:"v2" c:true:"" d:false:"" `
		if got := lookups(d, 600); got != want {
			t.Errorf("%s: after c came again: %s, want %s", name, got, want)
		}
		// Through a checkpoint into either backend.
		st := d.AppendState(nil)
		db2, err := Open(filepath.Join(dir, name), 8<<20)
		if err != nil {
			t.Fatal(err)
		}
		for to, e := range map[string]Dedup{"memory": NewMemoryDedup(1000), "pebble": db2.Dedup(1000)} {
			e.RestoreState(enc.NewDecoder(st), 0, true)
			if got := lookups(e, 600); got != want {
				t.Errorf("%s restored into %s: %s, want %s", name, to, got, want)
			}
		}
		db2.Close()
		if sd, ok := d.(SnapshotDedup); ok {
			snap, err := sd.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			e := NewMemoryDedup(1000)
			if err := e.RestoreSnapshot(snap.Dir, 0); err != nil {
				t.Fatal(err)
			}
			if got := lookups(e, 600); got != want {
				t.Errorf("%s snapshot restored into memory: %s, want %s", name, got, want)
			}
		}
		// Past b's expiry it is gone.
		d.Expire(1200)
		if got := lookups(d, 1200); strings.Contains(got, "b:true") {
			t.Errorf("%s: b is live at its expiry: %s", name, got)
		}
	}
	// What an AppendState before values wrote: the count, then expiry and
	// id of each.
	old := enc.AppendUvarint(nil, 2)
	old = enc.AppendString(enc.AppendVarint(old, 1100), "a")
	old = enc.AppendString(enc.AppendVarint(old, 1200), "b")
	if n := CountState(enc.NewDecoder(old), false); n != 2 {
		t.Errorf("counted %d ids in an old checkpoint", n)
	}
	db3, err := Open(filepath.Join(dir, "old"), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db3.Close()
	for name, e := range map[string]Dedup{"memory": NewMemoryDedup(1000), "pebble": db3.Dedup(1000)} {
		d := enc.NewDecoder(old)
		e.RestoreState(d, 0, false)
		if d.Err() != nil || d.Len() != 0 {
			t.Fatalf("%s: %v, %d bytes left", name, d.Err(), d.Len())
		}
		if got, want := lookups(e, 600), `a:true:"" b:true:"" c:false:"" d:false:"" `; got != want {
			t.Errorf("%s from an old checkpoint: %s, want %s", name, got, want)
		}
	}
}
