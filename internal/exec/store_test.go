package exec

import (
	"math/rand/v2"
	"testing"
)

// The key index finds what a Go map finds, through random inserts and
// deletes, with a hash that puts keys in long runs (so that deletion moves
// slots back across the table's end) as well as with its own.
func TestKeyIndexMatchesAMap(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for _, clustered := range []bool{true, false} {
		x := newKeyIndex[uint64, int64, int64]()
		if clustered {
			x.hash = func(k uint64) uint64 { return k%5 + 1<<40 - 3 } // five homes, near the end
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
				e = &memEntry[uint64, int64, int64]{key: k}
				x.insert(i, h, e)
				want[k] = e
			case r.IntN(2) == 0:
				x.delete(i)
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
