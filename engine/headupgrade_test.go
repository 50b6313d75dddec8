package engine

import (
	"testing"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// A head's checkpoint of version 8 (before versioned events) still reads:
// its counts, and its de-duplication ids, which have no versions; a head
// that restores them into a versioned job takes a record with one of them
// for a duplicate, as the job before did. Version 9 keeps the versioned
// counts and the ids' values.
func TestHeadFileUpgrade(t *testing.T) {
	b := []byte{8}
	for _, v := range []int64{10, 2, 1, 0, 0, 0, 1000, 5000, 0, 7000} { // read, duplicates, quarantined, ..., now
		b = enc.AppendVarint(b, v)
	}
	b = enc.AppendUvarint(b, 1)
	b = enc.AppendVarint(enc.AppendString(b, "no_id"), 1)
	b = enc.AppendBool(b, false)                    // announce
	b = enc.AppendVarint(enc.AppendVarint(b, 0), 0) // filtered, heartbeats
	b = enc.AppendBool(b, false)                    // no decoder state
	b = enc.AppendUvarint(b, 1)                     // the ids follow
	b = enc.AppendVarint(b, 3_600_000)              // horizon
	b = enc.AppendVarint(b, int64(mtime.MinTime))   // forgotten
	b = enc.AppendUvarint(b, 1)                     // one id
	b = enc.AppendString(enc.AppendVarint(b, 3_601_000), "o1")
	d := enc.NewDecoder(b)
	f, err := readHead(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.version != 8 || f.c.Read != 10 || f.c.Duplicates != 2 || f.c.QuarantineReasons["no_id"] != 1 || f.ids != 1 || f.horizon != 3_600_000 {
		t.Fatalf("read %+v", f)
	}
	dd := state.NewMemoryDedup(3_600_000)
	dd.RestoreState(d, 0, f.version >= 9)
	if d.Err() != nil || d.Len() != 0 {
		t.Fatalf("the ids: %v, %d bytes left", d.Err(), d.Len())
	}
	if v, live := dd.Lookup([]byte("o1"), 2000); !live || v != nil {
		t.Errorf("o1 restored live %v with value %q", live, v)
	}

	// Version 9, written and read back.
	h := &Head[string, int]{cfg: HeadConfig[string, int]{Dedup: dd}, c: newCounts(), now: 7000, forgotten: mtime.MinTime}
	h.c.Read, h.c.Accepted, h.c.Superseded, h.c.RevisionsTooLate, h.c.Revisions = 9, 5, 2, 1, 3
	dd.Remember([]byte("o2"), 3_602_000, []byte("kept"))
	d = enc.NewDecoder(h.appendState(nil, false))
	f, err = readHead(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.version != headVersion || f.c.Read != 9 || f.c.Superseded != 2 || f.c.RevisionsTooLate != 1 || f.c.Revisions != 3 {
		t.Fatalf("read back %+v", f.c)
	}
	back := state.NewMemoryDedup(3_600_000)
	back.RestoreState(d, 0, f.version >= 9)
	if v, live := back.Lookup([]byte("o2"), 2000); !live || string(v) != "kept" {
		t.Errorf("o2 read back live %v with value %q", live, v)
	}
	if d.Err() != nil || d.Len() != 0 {
		t.Fatalf("the ids: %v, %d bytes left", d.Err(), d.Len())
	}
}
