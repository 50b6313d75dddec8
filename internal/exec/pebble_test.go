package exec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/state"
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
