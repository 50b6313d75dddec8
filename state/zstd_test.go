package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble's zstd blocks, written and read through the module that stands in
// for the C library in weir's builds (internal/zstd): weir's stores write
// none, but a store that did would read back what it wrote. Compressible
// and random values, a flush and a compaction, every value read back.
func TestPebbleZstdBlocks(t *testing.T) {
	opts := &pebble.Options{FS: vfs.NewMem(), Logger: quietLogger{}}
	for i := range opts.Levels {
		opts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.ZstdCompression }
	}
	db, err := pebble.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	value := func(i int) []byte {
		if i%2 == 0 {
			return bytes.Repeat([]byte(fmt.Sprintf("window %d ", i%10)), 20)
		}
		return fmt.Appendf(nil, "%d-%x", i, rand.New(rand.NewPCG(uint64(i), 0)).Uint64())
	}
	const n = 20000
	for _, i := range rng.Perm(n) {
		if err := db.Set(fmt.Appendf(nil, "k%06d", i), value(i), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(t.Context(), []byte("k"), []byte("l"), true); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if m.Table.CompressedCountZstd == 0 {
		t.Fatalf("no table compressed with zstd: %s", m)
	}
	for i := range n {
		v, closer, err := db.Get(fmt.Appendf(nil, "k%06d", i))
		if err != nil {
			t.Fatalf("k%06d: %v", i, err)
		}
		if !bytes.Equal(v, value(i)) {
			t.Fatalf("k%06d: %q, want %q", i, v, value(i))
		}
		closer.Close()
	}
}
