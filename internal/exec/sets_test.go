package exec

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/weirstream/weir/state"
)

// openSets is a set store of instance 0 in a database of its own, at the
// sets of key.
func openSets(t testing.TB, key string) (*pebbleSets, *state.DB) {
	t.Helper()
	db, err := state.Open(t.TempDir(), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	s := newPebbleSets(db.DB, 0)
	t.Cleanup(func() {
		s.commit()
		db.Close()
	})
	s.at(append([]byte{tagState, 0, 0, 0, 7}, evCodec{}.AppendKey(nil, key)...))
	return s, db
}

// values is set id's values, in order.
func (s *pebbleSets) values(id uint64) []string {
	s.commit()
	var out []string
	lo := s.setKey(nil, id)
	for more, after := true, []byte(nil); more; {
		more = s.read(lo, after, unionChunk)
		start := 0
		for _, end := range s.ends {
			out = append(out, string(s.vals[start:end]))
			after, start = append(after[:0], s.vals[start:end]...), end
		}
	}
	return out
}

// A set store finds what it was given, committed or not, keeps sets and
// keys apart, adds one set to another in chunks, and forgets a dropped
// set.
func TestPebbleSets(t *testing.T) {
	s, _ := openSets(t, "a")
	a, b := s.NewSet(), s.NewSet()
	if a == 0 || a == b {
		t.Fatalf("ids %d and %d", a, b)
	}
	// Values of 1 KiB: a set of 600 is more than a chunk of a union.
	val := func(i int) []byte { return fmt.Appendf(bytes.Repeat([]byte{'x'}, 1000), "%06d", i) }
	for i := range 600 {
		if !s.Insert(a, val(i)) {
			t.Fatalf("value %d of a: not new", i)
		}
		if i%2 == 0 && s.Insert(a, val(i)) {
			t.Fatalf("value %d of a twice: new again", i)
		}
	}
	if len(s.pending) == 0 {
		t.Fatalf("every value committed already: the test reads no pending value")
	}
	if s.Insert(a, val(0)) {
		t.Fatalf("a committed value of a: new again")
	}
	for i := 400; i < 700; i++ {
		s.Insert(b, val(i))
	}
	// Another key's set of the same id is another set.
	other := slices.Clone(s.pre)
	s.at(append([]byte{tagState, 0, 0, 0, 9}, evCodec{}.AppendKey(nil, "b")...))
	if !s.Insert(a, val(1)) {
		t.Fatalf("key b's set %d holds key a's values", a)
	}
	s.pre = other
	if !s.Contains(a, val(599)) || !s.Contains(a, val(0)) || s.Contains(b, val(0)) || s.Contains(a, val(600)) {
		t.Fatalf("Contains is wrong")
	}
	if got := s.Count([]uint64{a, b}); got != 700 {
		t.Fatalf("the union of a and b counts %d values, want 700", got)
	}
	if got := s.Count([]uint64{b}); got != 300 {
		t.Fatalf("b counts %d values, want 300", got)
	}
	if got := s.Union(a, b); got != 100 {
		t.Fatalf("union added %d values, want 100", got)
	}
	got := s.values(a)
	if len(got) != 700 || got[0] != string(val(0)) || got[699] != string(val(699)) {
		t.Fatalf("a holds %d values after the union, want 700", len(got))
	}
	if n := len(s.values(b)); n != 300 {
		t.Fatalf("b holds %d values after the union, want its 300", n)
	}
	s.Drop(a)
	if n := len(s.values(a)); n != 0 {
		t.Fatalf("a holds %d values once dropped", n)
	}
	if n := len(s.values(b)); n != 300 {
		t.Fatalf("b holds %d values once a was dropped, want 300", n)
	}
	// A new set after a checkpoint's next id: above every id given.
	s.save()
	meta, closer, err := s.db.Get(s.metaKey())
	if err != nil {
		t.Fatal(err)
	}
	restored := newPebbleSets(s.db, 0)
	err = restored.restoredNext(meta)
	closer.Close()
	if id := restored.NewSet(); err != nil || id != b+1 {
		t.Fatalf("the first id after a restore: %d, %v; want %d", id, err, b+1)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
}

// BenchmarkSetInsert is a count_distinct's cost per new value in the state
// database: a lookup that finds nothing, and a write.
func BenchmarkSetInsert(b *testing.B) {
	s, _ := openSets(b, "a")
	id := s.NewSet()
	var v []byte
	b.ResetTimer()
	for i := range b.N {
		v = fmt.Appendf(v[:0], "%d", uint64(i)*0x9E3779B97F4A7C15)
		if !s.Insert(id, v) {
			b.Fatal("a value not new")
		}
	}
}
