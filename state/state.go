// Package state is weir's on-disk backend for keyed state, for jobs whose
// windows and de-duplication ids do not fit in memory: a Pebble database
// (CockroachDB's LSM store) sized to a memory budget.
//
// The database is working storage, not the durable copy: checkpoints hold
// the state in weir's own format (so that they restore with any parallelism
// and any backend), and the database directory is emptied when a job starts.
// Hence no write-ahead log: a write costs a memtable insert.
//
// Of a budget B, Pebble's block cache takes B/2 and its memtables at most
// B/8; the decoded state the operators keep at hand takes B/8 (see
// CacheBudget); the rest is headroom for the Go heap. Blocks are not
// compressed: state is read back at random, one key at a time, and a
// compressed block costs a decompression per key. The Go garbage
// collector is given a soft limit of B + 64 MiB.
package state

import (
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// DefaultBudget is the memory budget when a job names none: 512 MiB.
const DefaultBudget = 512 << 20

// DB is an open state database.
type DB struct {
	*pebble.DB
	dir    string
	budget int64
	cache  interface{ Unref() }
}

// Open empties dir and opens a database in it, sized to budget bytes of
// memory (DefaultBudget if 0).
func Open(dir string, budget int64) (*DB, error) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cache := pebble.NewCache(budget / 2)
	opts := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                uint64(max(budget/16, 4<<20)),
		MemTableStopWritesThreshold: 2,
		DisableWAL:                  true,
		Logger:                      quietLogger{},
	}
	// Bloom filters: most lookups (a new key, a new event id) find nothing.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		opts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		cache.Unref()
		return nil, fmt.Errorf("state: opening %s: %w", dir, err)
	}
	return &DB{DB: db, dir: dir, budget: budget, cache: cache}, nil
}

// CacheBudget is the memory that decoded state kept at hand may take, over
// all operator instances.
func (db *DB) CacheBudget() int64 { return db.budget / 8 }

// Budget is the memory budget the database was opened with.
func (db *DB) Budget() int64 { return db.budget }

// Close closes the database and deletes its directory.
func (db *DB) Close() error {
	err := db.DB.Close()
	db.cache.Unref()
	if rmErr := os.RemoveAll(db.dir); err == nil {
		err = rmErr
	}
	return err
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// Key layout of the database: one byte tags, then the tag's own layout
// (instants as OrderedTime, instances and key groups big-endian uint16):
//
//	's' inst group key                            -> a key's windows (window state)
//	't' inst 'e'|'p' time seq kind start end key -> nothing (a timer)
//	'd' id                                        -> expiry (de-duplication)
//	'x' expiry id                                 -> nothing (de-duplication, by expiry)
const (
	TagState       = 's'
	TagTimer       = 't'
	TagDedupID     = 'd'
	TagDedupExpiry = 'x'
)
