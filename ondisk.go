package weir

import (
	"errors"
	"fmt"
	"sync"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/vfs"
)

// StateOnDisk keeps the pipeline's keyed state in Pebble databases on disk
// instead of in memory, for state larger than memory, as a job file's
// state: {backend: pebble} does: the windows of every aggregation with
// their timers and de-duplication ids, the buffers and expiries of every
// join with the ids of its Deduplicated sides, and the states and timers
// of every keyed process function.
//
// Each aggregation, join and keyed process function has a database of its
// own (and the ids of a join's right side another), in a directory of
// its own under dir (the system's temporary directory when dir is ""),
// removed when Run returns; dir is made if it does not exist, and must be
// empty or weir's (a state directory weir marked). memoryBudget bytes
// (state.DefaultBudget when 0) are shared among the databases: Pebble's
// block cache and memtables take half of each one's share, the decoded
// state kept at hand an eighth. The Go heap's soft limit is the program's
// to set (runtime/debug.SetMemoryLimit): weir run sets it to about the
// budget plus 128 MiB (state.DB.HeapLimit).
//
// Results are the same as in memory, and a checkpoint taken with the state
// on disk restores with it in memory, and the other way round. State on
// disk is encoded as checkpoints encode it (as JSON), so its keys,
// accumulators, joined types and states must round-trip through
// encoding/json (see Checkpoints).
func StateOnDisk(dir string, memoryBudget int64) Option {
	return func(o *options) {
		if memoryBudget < 0 {
			o.fail("StateOnDisk", "expected a memory budget of 0 (the default, %d MiB) or more bytes, got %d", state.DefaultBudget>>20, memoryBudget)
			return
		}
		if err := state.CheckDir(dir); dir != "" && err != nil {
			o.fail("StateOnDisk", "%v", err)
			return
		}
		o.disk = &onDisk{dir: dir, budget: state.Budget(memoryBudget)}
	}
}

// onDisk opens and closes a pipeline's state databases (StateOnDisk).
type onDisk struct {
	dir    string
	budget int64
	// share is each database's part of the budget, set when the
	// pipeline runs.
	share int64

	mu  sync.Mutex
	dbs []*diskDB
}

// diskDB is one open database, the directory it is in, and how to stop
// watching it (Engine.WatchState).
type diskDB struct {
	db    *state.DB
	dir   string
	watch func()
}

// open opens a database of its own for one aggregation, join or keyed
// process function (or a join's right input's ids), and has the engine
// stop the job if it cannot write (a full disk): Pebble would hold the
// job's writes back for ever.
func (d *onDisk) open(e *engine.Engine, what string) (*state.DB, error) {
	db, dir, err := state.OpenScratch(d.dir, d.share)
	if err != nil {
		return nil, fmt.Errorf("weir: %s: %w", what, err)
	}
	watch := e.WatchState(db, func(err error) error {
		return fmt.Errorf("weir: %s: %w%s", what, err, engine.StateHint(err, "StateOnDisk's directory"))
	})
	d.mu.Lock()
	d.dbs = append(d.dbs, &diskDB{db: db, dir: dir, watch: watch})
	d.mu.Unlock()
	return db, nil
}

// close closes every database the pipeline opened and removes its
// directory.
func (d *onDisk) close() error {
	d.mu.Lock()
	dbs := d.dbs
	d.dbs = nil
	d.mu.Unlock()
	var errs []error
	for _, x := range dbs {
		x.watch()
		if err := x.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("weir: closing the state database in %s: %w", x.dir, err))
		}
		vfs.RemoveScratch(x.dir)
	}
	return errors.Join(errs...)
}
