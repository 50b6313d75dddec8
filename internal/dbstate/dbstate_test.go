package dbstate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// A queue gives its timers in the order of their keys, an instant at a
// time, as a sorted set of them would: timers added behind those taken,
// deleted while in the head or beyond it, and heads of every size.
func TestQueueAsASortedSet(t *testing.T) {
	for _, part := range []int{1, 2, 3, 1024} {
		HeadPart = part
		db, err := state.Open(t.TempDir(), 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		s := New(db.DB)
		q := s.Queue([]byte("q"))
		var model [][]byte
		seed := uint64(part)
		rnd := func(n int) int {
			seed = seed*6364136223846793005 + 1442695040888963407
			return int(seed>>33) % n
		}
		key := func(at mtime.Time, seq uint64) []byte {
			return binary.BigEndian.AppendUint64(q.Key(nil, at), seq)
		}
		var got, want []string
		wm := mtime.Time(0)
		for i := range 3000 {
			switch r := rnd(10); {
			case r < 5:
				k := key(wm+mtime.Time(rnd(40))-3, uint64(i))
				q.Add(k)
				j, _ := slices.BinarySearchFunc(model, k, bytes.Compare)
				model = slices.Insert(model, j, k)
			case r < 7 && len(model) > 0:
				j := rnd(len(model))
				q.Delete(model[j])
				model = slices.Delete(model, j, j+1)
			default:
				wm += mtime.Time(rnd(5))
				for {
					at, keys := q.Due(wm)
					if len(keys) == 0 {
						break
					}
					for _, k := range keys {
						got = append(got, fmt.Sprintf("%d %x", at, k))
					}
					q.Drop(len(keys))
				}
				for len(model) > 0 && state.ReadOrderedTime(model[0][1:]) <= wm {
					want = append(want, fmt.Sprintf("%d %x", state.ReadOrderedTime(model[0][1:]), model[0]))
					model = model[1:]
				}
			}
			if i%500 == 0 {
				s.Commit()
			}
		}
		HeadPart = 1024
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || len(want) < 500 {
			t.Errorf("head of %d: %d timers given, want %d", part, len(got), len(want))
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Errorf("the %dth: %s, want %s", i, got[i], want[i])
					break
				}
			}
		}
		db.Close()
	}
}

// WriteGroups writes the values of the groups asked for, in the order of
// their groups and keys, after their number.
func TestWriteGroups(t *testing.T) {
	db, err := state.Open(t.TempDir(), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := New(db.DB)
	for _, g := range []int{3, 1, 2, 1} {
		for _, k := range []string{"b", "a"} {
			s.Set(append(GroupKey(nil, []byte("p"), g), k...), []byte(fmt.Sprintf("=%d%s;", g, k)))
		}
	}
	s.Set([]byte("q-other"), []byte("x"))
	var w bytes.Buffer
	if err := s.WriteGroups(&w, []byte("p"), 4, func(g int) bool { return g != 2 }); err != nil {
		t.Fatal(err)
	}
	want := append(enc.AppendUvarint(nil, 4), "a=1a;b=1b;a=3a;b=3b;"...)
	if !bytes.Equal(w.Bytes(), want) {
		t.Errorf("got %q, want %q", w.Bytes(), want)
	}
}
