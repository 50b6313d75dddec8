package heap

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// The layout after pushes is the one a checkpoint writes: exactly that of
// sifting each entry up from the end.
func TestPushLayout(t *testing.T) {
	var h Heap[int, string]
	for _, k := range []int{5, 3, 8, 1, 9, 2, 7} {
		h.Push(k, string(rune('a'+k)))
	}
	want := Heap[int, string]{{Key: 1, Value: "b"}, {Key: 3, Value: "d"}, {Key: 2, Value: "c"}, {Key: 5, Value: "f"}, {Key: 9, Value: "j"}, {Key: 8, Value: "i"}, {Key: 7, Value: "h"}}
	if !slices.Equal(h, want) {
		t.Fatalf("after pushes %v, want %v", h, want)
	}
	// The layout after a pop: the last entry sifted down from the top.
	if e := h.Pop(); e != (Entry[int, string]{Key: 1, Value: "b"}) {
		t.Fatalf("popped %v, want {1 b}", e)
	}
	want = Heap[int, string]{{Key: 2, Value: "c"}, {Key: 3, Value: "d"}, {Key: 7, Value: "h"}, {Key: 5, Value: "f"}, {Key: 9, Value: "j"}, {Key: 8, Value: "i"}}
	if !slices.Equal(h, want) {
		t.Fatalf("after a pop %v, want %v", h, want)
	}
}

// Pops come in key order, for pushes and pops interleaved, duplicates
// included; a slice sorted by key is a heap as it is.
func TestPopOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Heap[int64, int]
	var model []int64
	for i := range 5000 {
		if r.IntN(3) > 0 || len(h) == 0 {
			k := r.Int64N(200)
			h.Push(k, i)
			model = append(model, k)
			continue
		}
		slices.Sort(model)
		if e := h.Pop(); e.Key != model[0] {
			t.Fatalf("pop %d: key %d, want %d", i, e.Key, model[0])
		}
		model = model[1:]
	}
	if len(h) != len(model) {
		t.Fatalf("%d entries left, want %d", len(h), len(model))
	}
	sorted := Heap[int64, int]{{Key: 1, Value: 0}, {Key: 1, Value: 1}, {Key: 4, Value: 2}, {Key: 6, Value: 3}, {Key: 9, Value: 4}}
	var got []int64
	for len(sorted) > 0 {
		got = append(got, sorted.Pop().Key)
	}
	if !slices.Equal(got, []int64{1, 1, 4, 6, 9}) {
		t.Fatalf("a sorted slice pops %v", got)
	}
}

// A pop zeroes the slot it leaves, so the heap keeps no value alive; in
// steady state a push allocates nothing.
func TestPopZeroesAndPushReuses(t *testing.T) {
	var h Heap[int, *int]
	x, y := 1, 2
	h.Push(2, &y)
	h.Push(1, &x)
	if e := h.Pop(); e.Value != &x {
		t.Fatalf("popped %v, want the value pushed with key 1", e)
	}
	if left := h[:2][1]; left != (Entry[int, *int]{}) {
		t.Fatalf("the slot left holds %v", left)
	}
	var g Heap[int, struct{}]
	for i := range 64 {
		g.Push(i, struct{}{})
	}
	allocs := testing.AllocsPerRun(100, func() {
		g.Push(g[0].Key+64, struct{}{})
		g.Pop()
	})
	if allocs != 0 {
		t.Fatalf("a push and a pop allocate %v times", allocs)
	}
}

// A heap of keys alone (an empty value) takes no more room than its keys.
func TestEntryOfKeysAlone(t *testing.T) {
	if n := unsafe.Sizeof(Entry[int64, struct{}]{}); n != 8 {
		t.Fatalf("an entry of an int64 key and no value takes %d bytes, want 8", n)
	}
}

// Push and Pop leave the layout of swapping an entry up from the end and
// down from the top, which checkpoints hold: keys with many ties, against
// the swaps themselves.
func TestLayoutOfTheSwaps(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h, ref Heap[int64, int]
	for i := range 20000 {
		if r.IntN(5) < 3 || len(h) == 0 {
			k := r.Int64N(30)
			h.Push(k, i)
			ref = append(ref, Entry[int64, int]{Value: i, Key: k})
			for j := len(ref) - 1; j > 0; {
				p := (j - 1) / 2
				if ref[p].Key <= ref[j].Key {
					break
				}
				ref[p], ref[j] = ref[j], ref[p]
				j = p
			}
		} else {
			got := h.Pop()
			want := ref[0]
			n := len(ref) - 1
			ref[0] = ref[n]
			ref = ref[:n]
			for j := 0; ; {
				l, rr, m := 2*j+1, 2*j+2, j
				if l < n && ref[l].Key < ref[m].Key {
					m = l
				}
				if rr < n && ref[rr].Key < ref[m].Key {
					m = rr
				}
				if m == j {
					break
				}
				ref[j], ref[m] = ref[m], ref[j]
				j = m
			}
			if got != want {
				t.Fatalf("step %d: popped %v, want %v", i, got, want)
			}
		}
		if !slices.Equal(h, ref) {
			t.Fatalf("step %d: the layouts differ", i)
		}
	}
}

func BenchmarkPushPop(b *testing.B) {
	type val struct {
		seq  uint64
		side uint8
		key  string
	}
	var h Heap[int64, val]
	for i := range 6000 {
		h.Push(int64(i), val{seq: uint64(i), key: "o"})
	}
	i := int64(6000)
	for b.Loop() {
		h.Push(i+int64(i%7), val{seq: uint64(i), key: "o"})
		h.Pop()
		i++
	}
}

// A queue pops in key order whatever the order of its pushes: nearly in
// order (most into its run), at random (most into its heap), and mixed,
// with pops interleaved and duplicates, entry for entry the multiset a
// model holds; it zeroes what it pops and keeps no more than it holds.
func TestQueueOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		key  func(r *rand.Rand, i int) int64
	}{
		{"nearly in order", func(r *rand.Rand, i int) int64 { return int64(i) + r.Int64N(40) }},
		{"at random", func(r *rand.Rand, i int) int64 { return r.Int64N(300) }},
		{"two streams", func(r *rand.Rand, i int) int64 {
			if i%3 == 0 {
				return int64(i) - 500 + r.Int64N(5)
			}
			return int64(i) + r.Int64N(20)
		}},
		{"descending", func(r *rand.Rand, i int) int64 { return int64(-i) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			var q Queue[int64, int]
			type kv struct {
				k int64
				v int
			}
			var model []kv
			pops := 0
			for i := range 20000 {
				if r.IntN(5) > 1 || q.Len() == 0 {
					k := c.key(r, i)
					q.Push(k, i)
					model = append(model, kv{k, i})
				} else {
					slices.SortFunc(model, func(a, b kv) int { return int(a.k - b.k) })
					if m := q.Min(); m != model[0].k {
						t.Fatalf("step %d: min %d, want %d", i, m, model[0].k)
					}
					e := q.Pop()
					j := slices.IndexFunc(model, func(x kv) bool { return x.k == e.Key && x.v == e.Value })
					if e.Key != model[0].k || j < 0 {
						t.Fatalf("step %d: popped %v, want key %d", i, e, model[0].k)
					}
					model = slices.Delete(model, j, j+1)
					pops++
				}
				if q.Len() != len(model) {
					t.Fatalf("step %d: length %d, want %d", i, q.Len(), len(model))
				}
				for _, e := range q.run[:q.head] {
					if e != (Entry[int64, int]{}) {
						t.Fatalf("step %d: a popped slot holds %v", i, e)
					}
				}
			}
			for q.Len() > 0 {
				slices.SortFunc(model, func(a, b kv) int { return int(a.k - b.k) })
				if e := q.Pop(); e.Key != model[0].k {
					t.Fatalf("draining: popped %v, want key %d", e, model[0].k)
				}
				model = model[1:]
			}
			if q.head != 0 || len(q.run) != 0 {
				t.Fatalf("empty, the run keeps head %d and %d entries", q.head, len(q.run))
			}
		})
	}
}

// Where a push goes: at the end of the run, among its last runReach
// entries, or into the heap when further back.
func TestQueuePlaces(t *testing.T) {
	var q Queue[int, int]
	for k := 0; k < 40; k += 2 {
		q.Push(k, k)
	}
	q.Push(41, 0)                // the end
	q.Push(39-2*(runReach-2), 0) // among the last runReach
	q.Push(39-2*(runReach+2), 0) // further back
	if len(q.run) != 22 || len(q.rest) != 1 || q.rest[0].Key != 39-2*(runReach+2) {
		t.Fatalf("run of %d, heap %v", len(q.run), q.rest)
	}
	if !slices.IsSortedFunc(q.run, func(a, b Entry[int, int]) int { return a.Key - b.Key }) {
		t.Fatalf("run out of order: %v", q.run)
	}
}

// The join's expiries: an order's 10 minutes after its time, one every
// 100 ms with up to 2 s of disorder (6,000 buffered), and a payment's at
// its time, in order but 10 minutes behind the orders'.
func BenchmarkQueueExpiries(b *testing.B) {
	type val struct {
		seq  uint64
		side uint8
		key  string
	}
	seed := uint64(11)
	next := func(m int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % m
	}
	at := func(i int64) int64 {
		if i%5 == 4 {
			return i*100 - 500 // a payment
		}
		return i*100 - next(2000) + 600_000
	}
	b.Run("heap", func(b *testing.B) {
		var h Heap[int64, val]
		for i := range int64(7500) {
			h.Push(at(i), val{seq: uint64(i), key: "o"})
		}
		i := int64(7500)
		for b.Loop() {
			h.Push(at(i), val{seq: uint64(i), key: "o"})
			h.Pop()
			i++
		}
	})
	b.Run("queue", func(b *testing.B) {
		var q Queue[int64, val]
		for i := range int64(7500) {
			q.Push(at(i), val{seq: uint64(i), key: "o"})
		}
		i := int64(7500)
		for b.Loop() {
			q.Push(at(i), val{seq: uint64(i), key: "o"})
			q.Pop()
			i++
		}
	})
}
