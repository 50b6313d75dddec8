package engine

import (
	"bytes"
	"testing"
)

// A commit record is written in parts that hold the pending pre-commits
// themselves, not a copy (they can be most of a job's memory while a sink
// is down), and its joined bytes decode to what was encoded, in every
// layout that has a mark.
func TestRecordPartsShareThePendingOutput(t *testing.T) {
	list := []preCommit{
		{id: 3, items: 2, data: bytes.Repeat([]byte("a"), 300)},
		{id: 4, items: 0, data: nil},
		{id: 7, items: 5, data: []byte("rows of checkpoint 7")},
	}
	for _, mark := range [][]byte{nil, {}, []byte("mark")} {
		parts := recordParts(list, 41, mark)
		shared := 0
		for _, part := range parts {
			for _, pc := range list {
				if len(part) > 0 && len(pc.data) > 0 && &part[0] == &pc.data[0] {
					shared++
				}
			}
		}
		if shared != 2 {
			t.Errorf("mark %q: %d of the 2 pre-commits with data are parts of the record as they are", mark, shared)
		}
		got, committed, m, err := decodeRecord(bytes.Join(parts, nil), layoutVersion)
		if err != nil {
			t.Fatal(err)
		}
		want := []preCommit{list[0], {id: 4, items: 0, data: nil}, list[2]}
		if len(got) != len(want) || committed != 41 || (mark == nil) != (m == nil) || !bytes.Equal(m, mark) {
			t.Fatalf("mark %q: decoded %d pre-commits, committed %d, mark %q", mark, len(got), committed, m)
		}
		for i := range want {
			if got[i].id != want[i].id || got[i].items != want[i].items || !bytes.Equal(got[i].data, want[i].data) {
				t.Errorf("mark %q: pre-commit %d decoded as %+v", mark, i, got[i])
			}
		}
	}
}
