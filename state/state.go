// Package state is weir's on-disk backend for keyed state, for jobs whose
// windows and de-duplication ids do not fit in memory: a Pebble database
// (CockroachDB's LSM store) sized to a memory budget.
//
// The database is working storage, not the durable copy, and the state
// directory is emptied when a job starts (weir empties only a directory it
// made or marked as its own). A directory weir makes is its owner's alone
// (0700). Hence no write-ahead log: a write costs a
// memtable insert. A checkpoint flushes the memtable and takes a Pebble
// checkpoint of the operator's keys (hard links to the immutable table
// files, see Checkpoint); the checkpoint store copies only the table files
// it does not hold yet, so that a checkpoint's cost follows what changed.
// A restore at the same parallelism writes the checkpoint's keys, in
// order, into one table file that the database takes in whole (Load).
//
// Layout of a state directory:
//
//	DIR/WEIR-STATE     the marker
//	DIR/db/            the Pebble database
//	DIR/snapshots/     Pebble checkpoints on their way to the checkpoint store
//	DIR/ingest/        a table file on its way into the database (Load)
//
// Of a budget B, Pebble's cache takes B/2: its memtables (two of B/16, at
// least 1 MiB each) are reserved in it, and the rest holds blocks, the
// index and filter blocks first (a lookup of a key that is not there reads
// only those). The decoded state the operators keep at hand takes B/8 (see
// CacheBudget); the rest is headroom for the Go heap (of which a job file's
// decoders' key tables take B/8 in all). Blocks are not
// compressed: state is read back at random, one key at a time, and a
// compressed block costs a decompression per key. The Go garbage
// collector is given a soft limit (HeapLimit, which weir run sets) of the
// part of B that is in the Go heap plus 128 MiB: output on its way to a
// checkpoint comes on top of the state.
package state

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	weirvfs "github.com/weirstream/weir/vfs"
)

// DefaultBudget is the memory budget when a job names none: 512 MiB.
const DefaultBudget = 512 << 20

// Budget is the memory budget a job's budget setting gives: DefaultBudget
// for 0 (none named).
func Budget(budget int64) int64 {
	if budget <= 0 {
		return DefaultBudget
	}
	return budget
}

// maxOpenFiles bounds the file descriptors Pebble keeps open (its table
// cache); a table file beyond them is opened when read.
const maxOpenFiles = 500

// DB is an open state database.
type DB struct {
	*pebble.DB
	id      string // random, new at every Open: names this database's table files in checkpoints
	dir     string
	snaps   atomic.Int64
	loads   atomic.Int64
	opts    *pebble.Options
	created bool // the directory was made by Open: Close removes it
	budget  int64
	cache   interface{ Unref() }

	failOnce sync.Once
	failed   chan struct{} // closed at the first background error
	failErr  error
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

// Claim makes dir a weir state directory that holds databases in
// directories of their own (vfs.MkdirScratch's: a job of several
// aggregations, a group's tasks), rather than one database: it is made if
// it does not exist, must be empty or weir's (CheckDir), and gets the
// marker, so that the next run, after a crash that left those directories
// behind, finds it weir's. What is in it is not emptied: MkdirScratch
// sweeps what processes that died left there.
func Claim(dir string) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	marker := filepath.Join(dir, MarkerName)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	return os.WriteFile(marker, []byte("weir state: databases in directories of their own, swept when their process is gone\n"), 0o600)
}

// OpenScratch opens a database in a directory of its own, made inside
// parent (the system's temporary directory when "", else claimed: see
// Claim) and marked as this process's (vfs.MkdirScratch): for a database
// among others (a job's aggregations and joins, a group's tasks), or one
// with no directory named. It returns the directory, which the caller
// removes with vfs.RemoveScratch once the database is closed.
func OpenScratch(parent string, budget int64) (*DB, string, error) {
	if parent != "" {
		if err := Claim(parent); err != nil {
			return nil, "", fmt.Errorf("cannot use the state directory: %w", err)
		}
	}
	dir, err := weirvfs.MkdirScratch(parent, "weir-state-")
	if err != nil {
		return nil, "", fmt.Errorf("cannot create a state directory: %w", err)
	}
	db, err := Open(dir, budget)
	if err != nil {
		weirvfs.RemoveScratch(dir)
		return nil, "", fmt.Errorf("cannot open the state database in %s: %w", dir, err)
	}
	return db, dir, nil
}

// Open opens a database in dir, sized to budget bytes of memory
// (DefaultBudget if 0). dir is made if it does not exist; an existing one
// must be empty or weir's (CheckDir), and is emptied.
func Open(dir string, budget int64) (*DB, error) {
	return open(dir, budget, vfs.Default)
}

func open(dir string, budget int64, fs vfs.FS) (*DB, error) {
	budget = Budget(budget)
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	created := false
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		created = true
	} else if err := emptyDir(dir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerName), []byte("weir state: emptied at every start\n"), 0o600); err != nil {
		return nil, err
	}
	d := &DB{dir: dir, created: created, budget: budget, failed: make(chan struct{})}
	// Pebble reserves its memtables in its cache: memtables of 4 MiB,
	// as they were at least, left a budget of 16 MiB no block in it.
	memtable := max(budget/16, 1<<20)
	cache := pebble.NewCache(budget / 2)
	opts := &pebble.Options{
		FS:                          fs,
		EventListener:               &pebble.EventListener{BackgroundError: d.fail},
		Cache:                       cache,
		MemTableSize:                uint64(memtable),
		MemTableStopWritesThreshold: 2,
		MaxOpenFiles:                maxOpenFiles,
		DisableWAL:                  true,
		Logger:                      quietLogger{},
	}
	// Bloom filters: most lookups (a new key, a new event id) find nothing.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		opts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	db, err := pebble.Open(filepath.Join(dir, "db"), opts)
	if err != nil {
		cache.Unref()
		return nil, fmt.Errorf("state: opening %s: %w", dir, err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	d.DB, d.id, d.cache, d.opts = db, hex.EncodeToString(id[:]), cache, opts
	return d, nil
}

// fail records a background error: a flush or a compaction that could not
// write (a full disk). Pebble retries such work for ever and holds writes
// back once its memtables are full, so the database is of no more use to
// the job: Failed tells it to stop.
func (db *DB) fail(err error) {
	db.failOnce.Do(func() {
		db.failErr = fmt.Errorf("the state database in %s cannot write: %w", db.dir, err)
		close(db.failed)
	})
}

// Failed is closed when the database could not write in the background (a
// flush or a compaction failed: a full disk); Err then says why. A job must
// stop: writes wait for room that does not come.
func (db *DB) Failed() <-chan struct{} { return db.failed }

// Err is the background error that closed Failed, or nil.
func (db *DB) Err() error {
	select {
	case <-db.failed:
		return db.failErr
	default:
		return nil
	}
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

// Snapshot is a Pebble checkpoint of part of the database: a directory of
// hard links to immutable table files, and a manifest of its own.
type Snapshot struct {
	Dir   string
	Files []SnapshotFile
}

// SnapshotFile is one file of a Snapshot.
type SnapshotFile struct {
	Name string // in Dir
	// Object names a table file uniquely, over databases and runs: the
	// same table file in two snapshots has the same Object, and a
	// checkpoint store keeps it once. Empty for the files that change
	// from snapshot to snapshot (the manifest and markers).
	Object string
}

// Release deletes the snapshot's directory (the table files stay in the
// database as long as it uses them).
func (s *Snapshot) Release() error { return os.RemoveAll(s.Dir) }

// Span is the keys in [Lo, Hi).
type Span struct{ Lo, Hi []byte }

// Checkpoint flushes the memtable and takes a Pebble checkpoint of the keys
// in the spans, which must all have been committed. It costs a flush and a
// hard link per table file, whatever the size of the state. Safe for
// concurrent use.
func (db *DB) Checkpoint(spans ...Span) (*Snapshot, error) {
	cs := make([]pebble.CheckpointSpan, len(spans))
	for i, s := range spans {
		cs[i] = pebble.CheckpointSpan{Start: s.Lo, End: s.Hi}
	}
	return db.checkpoint(cs)
}

func (db *DB) checkpoint(spans []pebble.CheckpointSpan) (*Snapshot, error) {
	if err := db.Flush(); err != nil {
		return nil, fmt.Errorf("state: flush for a checkpoint: %w", err)
	}
	dir, err := db.snapshotDir("snap")
	if err != nil {
		return nil, err
	}
	if err := db.DB.Checkpoint(dir, pebble.WithRestrictToSpans(spans)); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("state: checkpoint: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Snapshot{Dir: dir}
	for _, e := range entries {
		f := SnapshotFile{Name: e.Name()}
		if strings.HasSuffix(f.Name, ".sst") || strings.HasSuffix(f.Name, ".blob") {
			f.Object = db.id + "-" + f.Name
		}
		s.Files = append(s.Files, f)
	}
	return s, nil
}

// snapshotDir is the path of the next snapshot's directory, named kind
// and a number no other snapshot of the database has, in DIR/snapshots.
func (db *DB) snapshotDir(kind string) (string, error) {
	base := filepath.Join(db.dir, "snapshots")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(base, fmt.Sprintf("%s-%08d", kind, db.snaps.Add(1))), nil
}

// WriteSnapshot writes a file of a checkpoint with write, a buffer at a
// time, into a snapshot of its own: for state a checkpoint encodes rather
// than links (a join's buffers, read from the database in order), so that
// it goes to the checkpoint store from disk, never whole in memory. Its
// Object names it uniquely, over databases and runs; Release deletes it.
func (db *DB) WriteSnapshot(name string, write func(w io.Writer) error) (*Snapshot, error) {
	dir, err := db.snapshotDir("file")
	if err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Snapshot{Dir: dir, Files: []SnapshotFile{{Name: name, Object: db.id + "-" + filepath.Base(dir) + "-" + name}}}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		w := bufio.NewWriterSize(f, 256<<10)
		err = write(w)
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		_ = s.Release()
		return nil, fmt.Errorf("state: writing %s for a checkpoint: %w", name, err)
	}
	return s, nil
}

// Load adds keys to the database at once, as one table file that the
// database takes in (Pebble's ingestion) instead of writing them one by
// one: no memtable, no flush, and no compaction for keys that overlap no
// others (a restore into an empty database, where the file goes straight
// to the bottom level). fill is given add, which takes the keys in
// strictly increasing order; the slices may be reused once add returns.
// It returns the number of keys added.
func (db *DB) Load(fill func(add func(k, v []byte) error) error) (int64, error) {
	fs := db.opts.FS
	dir := filepath.Join(db.dir, "ingest")
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	path := filepath.Join(dir, fmt.Sprintf("load-%08d.sst", db.loads.Add(1)))
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), db.opts.MakeWriterOptions(len(db.opts.Levels)-1, db.TableFormat()))
	var n int64
	err = fill(func(k, v []byte) error {
		n++
		return w.Set(k, v)
	})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > 0 {
		if err = db.Ingest(context.Background(), []string{path}); err == nil {
			return n, nil // the database holds the file now
		}
		err = fmt.Errorf("state: taking in %d keys: %w", n, err)
	}
	_ = fs.Remove(path)
	return 0, err
}

// ReadSnapshot opens the Pebble checkpoint in dir, read only, and calls f
// for every key in [lo, hi) with its value, in key order. The slices are
// valid only during the call.
func ReadSnapshot(dir string, lo, hi []byte, f func(k, v []byte) error) error {
	r, err := OpenSnapshot(dir)
	if err != nil {
		return err
	}
	err = r.Scan(lo, hi, f)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}

// SnapshotReader is a Pebble checkpoint opened read only: for a restore
// that reads its keys in order and, beside them, other keys they name.
type SnapshotReader struct{ db *pebble.DB }

// OpenSnapshot opens the Pebble checkpoint in dir, read only.
func OpenSnapshot(dir string) (*SnapshotReader, error) {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("state: opening the checkpoint in %s: %w", dir, err)
	}
	return &SnapshotReader{db}, nil
}

// Scan calls f for every key in [lo, hi) with its value, in key order. The
// slices are valid only during the call; f may scan again.
func (r *SnapshotReader) Scan(lo, hi []byte, f func(k, v []byte) error) error {
	it, err := r.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid() && err == nil; it.Next() {
		var v []byte
		if v, err = it.ValueAndErr(); err == nil {
			err = f(it.Key(), v)
		}
	}
	if ierr := it.Close(); err == nil {
		err = ierr
	}
	return err
}

// Close closes the checkpoint.
func (r *SnapshotReader) Close() error { return r.db.Close() }

// CacheBudget is the memory that decoded state kept at hand may take, over
// all operator instances.
func (db *DB) CacheBudget() int64 { return db.budget / 8 }

// Budget is the memory budget the database was opened with.
func (db *DB) Budget() int64 { return db.budget }

// HeapHeadroom is what the Go heap may take beyond its share of the budget
// before the collector works hard to keep it there: output on its way to a
// checkpoint (an exactly-once file's pending lines, a table's rows) comes on
// top of the state.
const HeapHeadroom = 128 << 20

// HeapLimit is the soft limit for the Go heap that holds the process to the
// budget (runtime/debug.SetMemoryLimit): the budget less what Pebble keeps
// outside the Go heap (its block cache and memtables, when built with cgo),
// plus HeapHeadroom.
func (db *DB) HeapLimit() int64 {
	if offHeap {
		return db.budget - db.budget/2 - db.budget/8 + HeapHeadroom
	}
	return db.budget + HeapHeadroom
}

// Close closes the database and deletes what it wrote: the directory
// itself if Open made it, else its contents.
//
// A database that failed (Failed) is not closed: Pebble would wait for a
// flush that cannot finish. Its files are deleted all the same, which gives
// the disk its room back, and Close returns the background error.
func (db *DB) Close() error {
	var err error
	if db.Err() == nil {
		err = db.DB.Close()
		db.cache.Unref()
	} else {
		err = db.failErr
	}
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
//	'v' inst group key set value                  -> nothing (a value of a key's set)
//	'v' inst 0xffff                               -> the instance's next set
//	'd' id                                        -> expiry (de-duplication)
//	'x' expiry id                                 -> nothing (de-duplication, by expiry)
//	'j' name group key                            -> a key's buffers (a join's)
//	'k' name time seq side key                    -> nothing (an expiry of a join's record)
//	'f' name group key                            -> a key's states and timers (a keyed process function's)
//	'g' name 'e'|'p' time seq key                 -> nothing (a timer of a keyed process function)
const (
	TagState        = 's'
	TagTimer        = 't'
	TagSet          = 'v'
	TagDedupID      = 'd'
	TagDedupExpiry  = 'x'
	TagJoin         = 'j'
	TagJoinTimer    = 'k'
	TagProcess      = 'f'
	TagProcessTimer = 'g'
)

// PrefixEnd is the least key above every key that starts with p (nil when
// there is none: p is all 0xff), an iterator's upper bound for the keys of
// a prefix.
func PrefixEnd(p []byte) []byte {
	u := append([]byte(nil), p...)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] < 0xff {
			u[i]++
			return u[:i+1]
		}
	}
	return nil
}
