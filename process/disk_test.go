package process_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/weirstream/weir/internal/dbstate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/textdiff"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/process"
	"github.com/weirstream/weir/state"
)

// A function whose states and timers are in a state database gives the
// output and the checkpoints of the same function in memory, whatever
// part of its keys the cache holds and however few timers the queue reads
// at once; a checkpoint of either restores into the other.
func TestOnDiskAsInMemory(t *testing.T) {
	want, wantState := runRandom(t, -1, -1)
	if !strings.Contains(want, "fired") || !strings.Contains(want, "side") {
		t.Fatalf("the random function fires no timer or emits no side output:\n%s", want)
	}
	for _, c := range []struct {
		cache   int64
		head    int
		restore int64 // the cache of the operator restored, -1: in memory
	}{{0, 1024, 0}, {1000, 1024, -1}, {1 << 20, 1024, 1000}, {1000, 3, 1000}, {1 << 20, 2, -1}, {-1, 1024, 0}} {
		dbstate.HeadPart = c.head
		got, gotState := runRandom(t, c.cache, c.restore)
		dbstate.HeadPart = 1024
		if got != want {
			t.Errorf("cache %d, restored with cache %d, timers read %d at a time: the output differs from the operator's in memory:\n%s", c.cache, c.restore, c.head, textdiff.FirstLine(want, got))
		}
		if gotState != wantState {
			t.Errorf("cache %d, restored with cache %d, timers read %d at a time: the checkpoints differ from the operator's in memory", c.cache, c.restore, c.head)
		}
	}
}

// runRandom runs a function of every kind of state and timer over a fixed
// pseudo-random input, in memory (cache -1) or on disk, checkpointing it
// and restoring the checkpoint half way into an operator of cache
// restore; it returns the outputs, one a line, and the checkpoints.
func runRandom(t *testing.T, cache, restore int64) (string, string) {
	t.Helper()
	var out strings.Builder
	val := process.NewValue[int]("sum")
	list := process.NewList[string]("seen")
	m := process.NewMap[string, int]("by")
	side := process.NewOutput[string]("side")
	f := process.Func[string, string, string]{
		State: []process.State{val, list, m},
		Sides: []process.Side{side},
		Element: func(c *process.Context[string, string], v string) error {
			n, _ := val.Get(c)
			val.Set(c, n+len(v))
			switch v[0] {
			case 'a':
				list.Add(c, v)
				c.EventTimer(c.Time() + mtime.Time(len(v)%7))
			case 'b':
				x, _ := m.Get(c, v[:2])
				m.Put(c, v[:2], x+1)
				c.ProcessingTimer(c.Now() + 3)
			case 'c':
				c.DeleteEventTimer(c.Time() + 2)
				c.DeleteEventTimer(c.Time() + 3)
				m.Delete(c, "b1")
			case 'd':
				val.Clear(c)
				list.Clear(c)
				m.Clear(c)
				side.Emit(c, fmt.Sprintf("side %s %s", c.Key(), v))
			case 'e':
				if c.Watermark() > 0 {
					c.EventTimer(c.Watermark() - 1) // behind the watermark: at the next one
				}
			}
			c.Emit(fmt.Sprintf("%s %s n=%d list=%d map=%d wm=%d", c.Key(), v, n, list.Len(c), m.Len(c), c.Watermark()))
			return nil
		},
		Timer: func(c *process.Context[string, string], tm process.Timer) error {
			var entries []string
			for k, x := range m.All(c) {
				entries = append(entries, fmt.Sprintf("%s=%d", k, x))
			}
			c.Emit(fmt.Sprintf("fired %s %s %d list=%v map=%v", c.Key(), tm.Domain, tm.Time, list.Get(c), entries))
			if tm.Domain == process.EventTime && list.Len(c) > 3 {
				list.Set(c, list.Get(c)[2:])
				c.EventTimer(tm.Time) // the same instant: fires next
			}
			if tm.Domain == process.ProcessingTime && m.Len(c) > 2 {
				m.Clear(c)
				val.Clear(c)
			}
			return nil
		},
	}
	hash := func(k string) uint64 { return uint64(len(k)) + uint64(k[len(k)-1]) }
	newOp := func(cache int64) *process.Op[string, string, string] {
		op, err := process.New(process.Config[string, string, string]{Func: f,
			Emit:  func(s string) { out.WriteString(s + "\n") },
			Sides: map[string]any{"side": func(s string) { out.WriteString(s + "\n") }}})
		if err != nil {
			t.Fatal(err)
		}
		if cache >= 0 {
			db, err := state.Open(t.TempDir(), 16<<20)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			op.OnDisk(db, "process", process.JSONKeys[string]{}, hash, 16, cache)
		}
		return op
	}
	op := newOp(cache)
	var states strings.Builder
	seed := uint64(11)
	rnd := func(n int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int(seed>>33) % n
	}
	wm, now := mtime.Time(0), mtime.Time(0)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5000 {
		key := fmt.Sprintf("k%d", rnd(60))
		ts := wm + mtime.Time(rnd(20)) - 5
		switch r := rnd(12); {
		case r < 9:
			v := fmt.Sprintf("%c%d%s", "abcde"[rnd(5)], rnd(3), strings.Repeat("x", rnd(4)))
			check(op.Element(key, ts, v))
		case r < 11:
			wm += mtime.Time(rnd(4))
			check(op.AdvanceWatermark(wm))
		default:
			now += mtime.Time(rnd(5))
			check(op.AdvanceProcessingTime(now))
		}
		if i%1000 == 999 {
			// A part appended, a part written: the same bytes.
			b, err := op.AppendKeys(op.AppendHeader(nil), process.JSONKeys[string]{}, hash, 16, func(g int) bool { return g%2 == 0 })
			check(err)
			var odd bytes.Buffer
			check(op.WriteKeys(&odd, process.JSONKeys[string]{}, hash, 16, func(g int) bool { return g%2 == 1 }))
			states.Write(b)
			states.Write(odd.Bytes())
			if i == 2999 {
				// A part read whole, a part a few bytes at a time.
				op = newOp(restore)
				d := enc.NewDecoder(b)
				check(op.RestoreHeader(d))
				check(op.RestoreKeys(d, process.JSONKeys[string]{}))
				check(op.RestoreKeysFrom(iotest.HalfReader(&odd), process.JSONKeys[string]{}))
			}
			ev, pt := op.Timers()
			fmt.Fprintf(&out, "keys %d timers %d %d\n", op.Keys(), ev, pt)
		}
	}
	check(op.AdvanceWatermark(mtime.MaxTime))
	ev, pt := op.Timers()
	fmt.Fprintf(&out, "keys %d timers %d %d stats %+v\n", op.Keys(), ev, pt, op.Stats())
	check(op.Err())
	return out.String(), states.String()
}

// With its state on disk, an operator keeps at hand the keys its cache
// holds, not every key: 20,000 keys of a value each, in a cache of 64 KiB.
func TestOnDiskIsBounded(t *testing.T) {
	val := process.NewValue[string]("v")
	fired := 0
	f := process.Func[int, string, string]{State: []process.State{val}, Element: func(c *process.Context[int, string], v string) error {
		val.Set(c, v)
		c.EventTimer(c.Time() + 1000)
		return nil
	}, Timer: func(c *process.Context[int, string], tm process.Timer) error {
		if v, _ := val.Get(c); v == strings.Repeat("v", 40) && tm.Time == mtime.Time(c.Key())+1000 {
			fired++
		}
		return nil
	}}
	op, err := process.New(process.Config[int, string, string]{Func: f, Emit: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(t.TempDir(), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	op.OnDisk(db, "p", process.JSONKeys[int]{}, func(k int) uint64 { return uint64(k) }, 16, 64<<10)
	most := 0
	for k := range 20000 {
		if err := op.Element(k, mtime.Time(k), strings.Repeat("v", 40)); err != nil {
			t.Fatal(err)
		}
		most = max(most, process.AtHand(op))
	}
	ev, _ := op.Timers()
	if op.Keys() != 20000 || ev != 20000 {
		t.Fatalf("%d keys and %d timers, want 20000 of each", op.Keys(), ev)
	}
	t.Logf("at most %d keys at hand", most)
	// A key at hand is reckoned at 160 bytes and at least 48 a value.
	if most > 64<<10/160+1 {
		t.Errorf("%d keys at hand at most, want no more than the cache holds (%d)", most, 64<<10/160+1)
	}
	if err := op.AdvanceWatermark(mtime.MaxTime); err != nil {
		t.Fatal(err)
	}
	if op.Keys() != 20000 || fired != 20000 {
		t.Fatalf("%d keys and %d timers fired with their key's value, want 20000 of each", op.Keys(), fired)
	}
}
