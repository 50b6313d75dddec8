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
