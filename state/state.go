// Package state is weir's on-disk backend for keyed state, for jobs whose
// windows and de-duplication ids do not fit in memory: a Pebble database
// (CockroachDB's LSM store) sized to a memory budget.
//
// The database is working storage, not the durable copy: checkpoints hold
// the state in weir's own format (so that they restore with any parallelism
// and any backend), and the database directory is emptied when a job starts.
// weir empties only a directory it made or marked as its own.
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
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// DefaultBudget is the memory budget when a job names none: 512 MiB.
const DefaultBudget = 512 << 20

// DB is an open state database.
type DB struct {
	*pebble.DB
	dir     string
	created bool // the directory was made by Open: Close removes it
	budget  int64
	cache   interface{ Unref() }
}

// MarkerName is the file that marks a directory as a weir state directory:
// weir empties such a directory at start and at close, and no other.
const MarkerName = "WEIR-STATE"

// CheckDir reports an error if dir cannot be a state directory: it exists
// and is not a directory, or it holds files and is not weir's (it has no
// marker). weir never empties a directory it did not make.
func CheckDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, MarkerName)); err != nil {
		return fmt.Errorf("%s is not empty and is not a weir state directory (it has no %s): weir empties its state directory, and will not empty this one; choose an empty or new directory", dir, MarkerName)
	}
	return nil
}

// Open opens a database in dir, sized to budget bytes of memory
// (DefaultBudget if 0). dir is made if it does not exist; an existing one
// must be empty or weir's (CheckDir), and is emptied.
func Open(dir string, budget int64) (*DB, error) {
	if budget <= 0 {
		budget = DefaultBudget
	}
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	created := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		created = true
	} else if err := emptyDir(dir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerName), []byte("weir state: emptied at every start\n"), 0o644); err != nil {
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
	return &DB{DB: db, dir: dir, created: created, budget: budget, cache: cache}, nil
}

// emptyDir removes what is in a directory weir's marker says is weir's.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// CacheBudget is the memory that decoded state kept at hand may take, over
// all operator instances.
func (db *DB) CacheBudget() int64 { return db.budget / 8 }

// Budget is the memory budget the database was opened with.
func (db *DB) Budget() int64 { return db.budget }

// Close closes the database and deletes what it wrote: the directory
// itself if Open made it, else its contents.
func (db *DB) Close() error {
	err := db.DB.Close()
	db.cache.Unref()
	var rmErr error
	if db.created {
		rmErr = os.RemoveAll(db.dir)
	} else {
		rmErr = emptyDir(db.dir)
	}
	if err == nil {
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
