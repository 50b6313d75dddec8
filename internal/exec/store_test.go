package exec

import (
	"cmp"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/window"
)

// The key index finds what a Go map finds, through random inserts and
// deletes, with a hash that puts keys in long runs (so that deletion moves
// slots back across the table's end) as well as with its own.
func TestKeyIndexMatchesAMap(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for _, clustered := range []bool{true, false} {
		m := newMemStore[uint64, int64, int64]()
		x := &m.keys
		if clustered {
			x.hash = func(k uint64) uint64 { return k%5 + 1<<32 - 3 } // five homes, near the end
		}
		want := map[uint64]*memEntry[uint64, int64, int64]{}
		for op := range 20_000 {
			k := uint64(r.IntN(300))
			e, h, i := x.find(k)
			if e != want[k] {
				t.Fatalf("op %d: find(%d) = %v, want %v", op, k, e, want[k])
			}
			switch {
			case e == nil:
				e, id := m.slot()
				e.key, e.live = k, true
				x.insert(i, h, id)
				want[k] = e
			case r.IntN(2) == 0:
				m.remove(k, &e.ks)
				delete(want, k)
			}
			if x.n != len(want) {
				t.Fatalf("op %d: %d keys, want %d", op, x.n, len(want))
			}
		}
		for k, e := range want {
			if got, _, _ := x.find(k); got != e {
				t.Fatalf("find(%d) = %v at the end", k, got)
			}
		}
	}
}

// A key whose windows outgrow the one it holds inline moves them to an
// array of the operator's, and back when one is left; the array serves the
// next key, so that keys passing through two windows allocate nothing.
func TestWindowsGoBackInline(t *testing.T) {
	op := NewWindowOp[string](window.NewStrategy(window.TumblingWindows(time.Second)), aggregate.Count[struct{}]())
	var step uint64
	inline := func(k string) bool {
		ks := op.mem.get(k)
		return ks != nil && len(ks.wins) == 1 && &ks.wins[0] == &ks.inline[0]
	}
	cycle := func(base mtime.Time, keys ...string) {
		for _, k := range keys {
			step++
			op.Event(step, k, base+500, 0, struct{}{}) // window [base, base+1s)
			step++
			op.Event(step, k, base+1500, 0, struct{}{}) // the next one, the first still open
		}
		step++
		op.AdvanceWatermark(step, base+999, 0) // the first fires and goes
		op.Take()
	}
	cycle(0, "a")
	if !inline("a") || len(op.freeWins) != 1 {
		t.Fatalf("a: inline %v, %d spare arrays", inline("a"), len(op.freeWins))
	}
	base := mtime.Time(1000)
	allocs := testing.AllocsPerRun(100, func() {
		cycle(base, "a", "b")
		base += 1000
	})
	if !inline("a") || !inline("b") || len(op.freeWins) != 2 {
		t.Fatalf("inline a %v b %v, %d spare arrays", inline("a"), inline("b"), len(op.freeWins))
	}
	if allocs != 0 {
		t.Errorf("%.1f allocations a cycle", allocs)
	}
}

// However many keys hold two windows at once, the arrays they gave back
// serve them the next time: the spares are bounded by the most arrays used
// at once, not by a count that a million keys would outgrow.
func TestSpareArraysCoverThePeak(t *testing.T) {
	op := NewWindowOp[uint64](window.NewStrategy(window.TumblingWindows(time.Second)), aggregate.Count[struct{}]())
	const keys = 200_000 // 200,000 arrays of two windows: more than 8 MiB
	var step uint64
	cycle := func(base mtime.Time) {
		for k := range uint64(keys) {
			step++
			op.Event(step, k, base+500, 0, struct{}{})
			step++
			op.Event(step, k, base+1500, 0, struct{}{})
		}
		step++
		op.AdvanceWatermark(step, base+999, 0)
		op.Take()
	}
	cycle(0)
	if len(op.freeWins) != keys {
		t.Fatalf("%d spare arrays after %d keys went back inline, want %d", len(op.freeWins), keys, keys)
	}
	allocs := testing.AllocsPerRun(1, func() { cycle(1000) })
	if allocs > 10 {
		t.Errorf("%.0f allocations for %d keys passing through two windows again", allocs, keys)
	}
}

// The lookahead asks for memory only: a run of lookups whose keys come and
// go (the index growing and shrinking, slots moving back) between its
// steps leaves the store as a run without it would, for string keys (whose
// bytes it asks for) and integer keys.
func TestLookaheadChangesNothing(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	with, without := newMemStore[string, int64, int64](), newMemStore[string, int64, int64]()
	var l lookahead[string, int64, int64]
	for range 50 {
		run := l.run(with, 1+r.IntN(300))
		for i := range run {
			run[i] = keys[r.IntN(len(keys))]
		}
		l.plan()
		for j, k := range run {
			l.step(j)
			for _, m := range []*memStore[string, int64, int64]{with, without} {
				if ks := m.get(k); ks != nil && j%3 == 0 {
					m.remove(k, ks)
				} else {
					m.getOrCreate(k).inline[0].acc++
				}
			}
		}
	}
	if with.len() != without.len() {
		t.Fatalf("%d keys with the lookahead, %d without", with.len(), without.len())
	}
	without.forEach(func(k string, ks *keyState[int64, int64]) error {
		if got := with.get(k); got == nil || got.inline[0].acc != ks.inline[0].acc {
			t.Fatalf("key %q: %v with the lookahead, %d without", k, got, ks.inline[0].acc)
		}
		return nil
	})
	ints := newMemStore[uint64, int64, int64]()
	var li lookahead[uint64, int64, int64]
	run := li.run(ints, 1000)
	for i := range run {
		run[i] = uint64(i)
	}
	li.plan()
	for j, k := range run {
		li.step(j)
		ints.getOrCreate(k)
	}
	if ints.len() != 1000 {
		t.Fatalf("%d integer keys, want 1000", ints.len())
	}
}

// The timers' lookahead holds a bounded run of keys, however many windows
// end at once: 5000 keys' windows fired by one watermark leave it at most
// timerRun+aheadKey keys, and every pane is written.
func TestTimerLookaheadIsBounded(t *testing.T) {
	op := NewWindowOp[uint64](window.NewStrategy(window.TumblingWindows(time.Minute)), aggregate.Count[struct{}]())
	var step uint64
	for k := range uint64(5000) {
		step++
		op.Event(step, k, 1000, 0, struct{}{})
	}
	step++
	op.AdvanceWatermark(step, mtime.Time(2*time.Minute/time.Millisecond), 0)
	if got := len(op.Take()); got != 5000 {
		t.Fatalf("%d panes, want 5000", got)
	}
	if c := cap(op.timers.keys); c > timerRun+aheadKey {
		t.Fatalf("the timers' lookahead holds %d keys, want at most %d", c, timerRun+aheadKey)
	}
}

// Every byte of a key's entry, of its index slot and of its timers is a
// byte of every live key: with the accumulator of a job file's count and
// sum (72 bytes, job.acc) and string keys, an entry takes 184 bytes (232
// before what only early and throttled late firings and retractions use
// went out of line, 280 before the window's revision joined its flags'
// word), an index slot 8
// (16 before slots named entries by a 32-bit id and kept half the hash),
// a timer 40 (48 before its kind joined its window's sequence).
func TestStateSizes(t *testing.T) {
	type acc72 struct{ _ [9]int64 }
	type out []int64
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"a key's entry", unsafe.Sizeof(memEntry[string, acc72, out]{}), 184},
		{"an index slot", unsafe.Sizeof(indexSlot{}), 8},
		{"a timer", unsafe.Sizeof(timerRef[string]{}), 40},
	} {
		if c.got > c.want {
			t.Errorf("%s takes %d bytes, more than %d", c.what, c.got, c.want)
		}
	}
}

// A timer's window sequence and kind share a word, ordered as the pair.
func TestTimerWordKeepsSeqAndKind(t *testing.T) {
	seqs := []uint64{0, 1, 2, 1<<maxSeqBits - 1}
	kinds := []timerKind{tOnTime, tCleanup, tEarly, tLate}
	for _, s := range seqs {
		for _, k := range kinds {
			r := newTimer("k", window.Window{}, s, k)
			if r.seq() != s || r.kind() != k {
				t.Fatalf("newTimer(seq %d, kind %d) reads seq %d, kind %d", s, k, r.seq(), r.kind())
			}
			for _, s2 := range seqs {
				for _, k2 := range kinds {
					o := newTimer("k", window.Window{}, s2, k2)
					want := cmp.Or(cmp.Compare(s, s2), cmp.Compare(k, k2))
					if got := cmpSeq(r, o); got != want {
						t.Fatalf("cmpSeq((%d, %d), (%d, %d)) = %d, want %d", s, k, s2, k2, got, want)
					}
				}
			}
		}
	}
}
