package bench

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// TestNexmarkFloors checks that each hand-written floor makes the same
// results as weir's pipeline for the same query over the same events: the
// same windows, keys and figures, not only as many.
func TestNexmarkFloors(t *testing.T) {
	const events = 300_000 // 30 s of event time
	for _, q := range []struct {
		name  string
		weir  func(*weir.Pipeline, weir.Stream[nexEvent], *nexOut)
		floor func(time.Duration, int64, *nexOut) int64
	}{
		{"q3", q3, floorQ3},
		{"q5", q5, floorQ5},
		{"q7", q7, floorQ7},
		{"q8", q8, floorQ8},
		{"q8-cogroup", q8CoGroup, floorQ8},
		{"q11", q11, floorQ11},
	} {
		t.Run(q.name, func(t *testing.T) {
			var got, want []nexResult
			wo := nexOut{keep: func(r nexResult) { want = append(want, r) }}
			n, err := nexmark(time.Hour, events, q.weir, &wo)
			if err != nil {
				t.Fatal(err)
			}
			fo := nexOut{keep: func(r nexResult) { got = append(got, r) }}
			if m := q.floor(time.Hour, events, &fo); m != n || n != events {
				t.Fatalf("weir read %d events, the floor %d, want %d", n, m, events)
			}
			if wo.n != int64(len(want)) || fo.n != int64(len(got)) {
				t.Fatalf("counted %d and %d results, kept %d and %d", wo.n, fo.n, len(want), len(got))
			}
			if len(want) == 0 {
				t.Fatal("weir made no results")
			}
			sortResults(want)
			sortResults(got)
			if len(got) != len(want) {
				t.Errorf("the floor made %d results, weir %d", len(got), len(want))
			}
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("result %d: the floor made %s, weir %s", i, fmtResult(got[i]), fmtResult(want[i]))
				}
			}
			t.Logf("%d events, %d results", n, len(want))
		})
	}
}

func sortResults(rs []nexResult) {
	slices.SortFunc(rs, func(a, b nexResult) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end), cmp.Compare(a.key, b.key),
			cmp.Compare(a.a, b.a), cmp.Compare(a.b, b.b), cmp.Compare(a.c, b.c), cmp.Compare(a.name, b.name))
	})
}

func fmtResult(r nexResult) string {
	return fmt.Sprintf("[%s, %s) key %d (%d, %d, %d) %q", r.start, r.end, r.key, r.a, r.b, r.c, r.name)
}
