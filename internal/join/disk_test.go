package join

import (
	"bytes"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/weirstream/weir/internal/dbstate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/textdiff"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// diskCache, set by TestOnDisk's runs of the package's tests, keeps the
// harnesses' operators in a state database with a cache of that many
// bytes; -1 keeps them in memory.
var diskCache = func() int64 {
	n, err := strconv.ParseInt(os.Getenv("WEIR_JOIN_ON_DISK"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}()

// useDisk keeps op's state in a state database of its own, when the tests
// run on disk (diskCache).
func useDisk[L, R any](t *testing.T, op *Op[string, L, R], c Codec[string, L, R]) {
	t.Helper()
	if diskCache < 0 {
		return
	}
	db, err := state.Open(t.TempDir(), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := op.Err(); err != nil {
			t.Errorf("the state database failed: %v", err)
		}
		db.Close()
	})
	op.OnDisk(db, "join", c, func(k string) uint64 { return uint64(len(k)) }, 4, diskCache)
}

// Every test of the package passes with the operator's state in a state
// database: with no cache (every key's buffers written and read back at
// every change) and with a cache of a few keys' buffers, so that the
// rules of the joins hold on both backends.
func TestOnDisk(t *testing.T) {
	if diskCache >= 0 {
		return // this is a run on disk already
	}
	for _, cache := range []string{"0", "2000"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^Test", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "WEIR_JOIN_ON_DISK="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the tests with the state in a state database, a cache of %s bytes: %v\n%s", cache, err, out)
		}
		if n := strings.Count(string(out), "--- PASS: Test"); n < 20 {
			t.Fatalf("the tests with the state in a state database, a cache of %s bytes: %d passed:\n%s", cache, n, out)
		}
	}
}

// An operator on disk emits what one in memory does, record for record,
// and its checkpoints are the same bytes, whatever its cache holds: for
// every kind of join, over many keys, with records late on both sides.
func TestOnDiskAsInMemory(t *testing.T) {
	for _, cfg := range []Config{
		{Lower: -3, Upper: 5, Mode: Inner},
		{Lower: 0, Upper: 10, Mode: LeftOuter, Lateness: 2},
		{Lower: -4, Upper: 0, UpperExclusive: true, Mode: Anti},
		{Temporal: true, Mode: LeftOuter},
		{Temporal: true, Mode: Inner, Lateness: 3},
		{Window: 10, Mode: LeftOuter},
		{Window: 7, Mode: Anti, Lateness: 4},
	} {
		want, wantState := runRandom(t, cfg, -1)
		for _, c := range []struct {
			cache int64
			head  int
		}{{0, 1024}, {1000, 1024}, {1 << 20, 1024}, {1000, 3}, {1 << 20, 2}} {
			dbstate.HeadPart = c.head
			got, gotState := runRandom(t, cfg, c.cache)
			dbstate.HeadPart = 1024
			if got != want {
				t.Errorf("%+v, cache %d, expiries read %d at a time: the output differs from the operator's in memory:\n%s", cfg, c.cache, c.head, textdiff.FirstLine(want, got))
			}
			if gotState != wantState {
				t.Errorf("%+v, cache %d, expiries read %d at a time: the checkpoints differ from the operator's in memory", cfg, c.cache, c.head)
			}
		}
	}
}

// runRandom runs an operator of cfg over a fixed pseudo-random input, in
// memory (cache -1) or on disk, checkpointing it and restoring the
// checkpoint into a new operator half way; it returns the outputs, one a
// line, and the checkpoints.
func runRandom(t *testing.T, cfg Config, cache int64) (string, string) {
	t.Helper()
	var out strings.Builder
	emit := func(o *Out[string, string, string]) {
		fmt.Fprintf(&out, "%d %s %s %d %s %d wm %d\n", o.Kind, o.Key, o.Left, o.LeftTime, o.Right, o.RightTime, o.Watermark)
	}
	hash := func(k string) uint64 { return uint64(len(k)) + uint64(k[len(k)-1]) }
	newOp := func() *Op[string, string, string] {
		op, err := New(cfg, emit)
		if err != nil {
			t.Fatal(err)
		}
		op.Deletes(func(r string) bool { return strings.HasPrefix(r, "del") })
		if cache >= 0 {
			db, err := state.Open(t.TempDir(), 16<<20)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			op.OnDisk(db, "join", strCodec{}, hash, 16, cache)
		}
		return op
	}
	op := newOp()
	var states strings.Builder
	seed := uint64(7)
	rnd := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int(seed>>33) % n
	}
	wm := mtime.Time(0)
	for i := range 4000 {
		key := fmt.Sprintf("k%d", rnd(40))
		ts := wm + mtime.Time(rnd(30)) - 8
		switch rnd(5) {
		case 0, 1:
			op.AddLeft(key, ts, fmt.Sprintf("l%d", i))
		case 2, 3:
			v := fmt.Sprintf("r%d", i)
			if rnd(10) == 0 {
				v = "del" + v
			}
			op.AddRight(key, ts, v)
		case 4:
			wm += mtime.Time(rnd(4))
			op.Advance(wm)
		}
		if i%1000 == 999 {
			// A part appended, a part written: the same bytes.
			b := op.AppendKeys(op.AppendHeader(nil), strCodec{}, hash, 16, func(g int) bool { return g%2 == 0 })
			var odd bytes.Buffer
			if err := op.WriteKeys(&odd, strCodec{}, hash, 16, func(g int) bool { return g%2 == 1 }); err != nil {
				t.Fatal(err)
			}
			states.Write(b)
			states.Write(odd.Bytes())
			if i == 1999 {
				// A part read whole, a part a few bytes at a time.
				op = newOp()
				d := enc.NewDecoder(b)
				if err := op.RestoreHeader(d); err != nil {
					t.Fatal(err)
				}
				if err := op.RestoreKeysFrom(bytes.NewReader(b[len(b)-d.Len():]), strCodec{}); err != nil {
					t.Fatal(err)
				}
				if err := op.RestoreKeysFrom(iotest.HalfReader(&odd), strCodec{}); err != nil {
					t.Fatal(err)
				}
			}
			fmt.Fprintf(&out, "keys %d\n", op.Keys())
		}
	}
	op.Advance(mtime.MaxTime)
	fmt.Fprintf(&out, "keys %d stats %+v\n", op.Keys(), op.Stats())
	if err := op.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String(), states.String()
}

// A checkpoint of an operator on disk is written from the database a key
// at a time: writing 40,000 keys' buffers (several MiB) allocates a small
// part of their size, where appending them allocates all of it.
func TestWriteKeysFromDisk(t *testing.T) {
	op, err := New(Config{Lower: 0, Upper: 1 << 40, Mode: LeftOuter}, func(*Out[string, string, string]) {})
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(t.TempDir(), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hash := func(k string) uint64 { return uint64(len(k)) + uint64(k[len(k)-1]) }
	op.OnDisk(db, "join", strCodec{}, hash, 16, 1<<20)
	for i := range 40_000 {
		op.AddLeft(fmt.Sprintf("key-%08d", i), mtime.Time(i), strings.Repeat("x", 100))
	}
	all := func(int) bool { return true }
	want := op.AppendKeys(nil, strCodec{}, hash, 16, all)
	var ms runtime.MemStats
	allocated := func(f func()) uint64 {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		f()
		runtime.ReadMemStats(&ms)
		return ms.TotalAlloc - before
	}
	// The first writing commits the records to the database, which
	// flushes them: the database's own work, in goroutines of its own,
	// done before the writing measured.
	if err := op.WriteKeys(io.Discard, strCodec{}, hash, 16, all); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	var w countingWriter
	wrote := allocated(func() {
		if err := op.WriteKeys(&w, strCodec{}, hash, 16, all); err != nil {
			t.Fatal(err)
		}
	})
	appended := allocated(func() { op.AppendKeys(nil, strCodec{}, hash, 16, all) })
	if w.n != len(want) || w.h.Sum64() != hashOf(want) {
		t.Fatalf("wrote %d bytes, want the %d AppendKeys appends", w.n, len(want))
	}
	t.Logf("%d bytes of buffers: writing allocated %d bytes, appending %d", len(want), wrote, appended)
	if raceEnabled {
		return
	}
	if len(want) < 4<<20 || wrote > uint64(len(want))/8 || appended < uint64(len(want)) {
		t.Errorf("%d bytes of buffers: writing them allocated %d bytes, appending them %d", len(want), wrote, appended)
	}
	if err := op.Err(); err != nil {
		t.Fatal(err)
	}
}

// countingWriter counts and hashes what is written to it, keeping none.
type countingWriter struct {
	n int
	h hash.Hash64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.h == nil {
		w.h = fnv.New64a()
	}
	w.n += len(p)
	return w.h.Write(p)
}

// hashOf is b's hash as a countingWriter's.
func hashOf(b []byte) uint64 {
	var w countingWriter
	w.Write(b)
	return w.h.Sum64()
}
