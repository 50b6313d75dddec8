package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// The restore of a Pebble checkpoint: what a job on the Pebble backend
// waits for when it starts again.

// restoreKeys is the number of keys of pebble-restore-1m's checkpoint.
const restoreKeys = 1_000_000

func init() {
	register(Bench{
		Name: "pebble-restore-1m", Group: "state",
		About: "the restore of a checkpoint of 1M keys (an hour window each) into a new Pebble state database (16 MiB budget), at the parallelism it was taken with (its keys taken in as one table file); the extra figures are the same checkpoint restored key by key at parallelism 2",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			cp, err := pebbleCheckpoint()
			if err != nil {
				return nil, nil, err
			}
			return func(time.Duration) (int64, map[string]float64, string, error) { return cp.restoreBoth() }, cp.close, nil
		},
	})
}

// restoreSource is a Pebble checkpoint of one instance, and the database
// that holds it.
type restoreSource struct {
	dir   string
	db    *state.DB
	parts [][]byte
	dirs  []string
}

func (s *restoreSource) close() {
	s.db.Close()
	os.RemoveAll(s.dir)
}

func restoreConfig(p int, db *state.DB) exec.Config[uint64, struct{}, int64, int64] {
	return exec.Config[uint64, struct{}, int64, int64]{
		Strategy:    window.NewStrategy(window.TumblingWindows(time.Hour)),
		Agg:         aggregate.Count[struct{}](),
		Parallelism: p,
		Hash:        mix,
		Codec:       countCodec{},
		State:       db,
		Emit:        func([]exec.Out[uint64, struct{}, int64]) error { return nil },
	}
}

// pebbleCheckpoint fills an instance with restoreKeys keys and takes its
// checkpoint.
func pebbleCheckpoint() (*restoreSource, error) {
	dir, err := os.MkdirTemp("", "weir-bench-restore-")
	if err != nil {
		return nil, err
	}
	s := &restoreSource{dir: dir}
	if s.db, err = state.Open(filepath.Join(dir, "from"), pebbleBudget); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cfg := restoreConfig(1, s.db)
	var bar *exec.Barrier
	cfg.Emit = func(outs []exec.Out[uint64, struct{}, int64]) error {
		for _, o := range outs {
			if o.Kind == exec.OutBarrier {
				bar = o.Barrier
			}
		}
		return nil
	}
	r := exec.NewRunner(cfg)
	for i := range restoreKeys {
		r.Event(uint64(i), tumblingBase, tumblingBase, struct{}{})
	}
	r.Barrier(nil)
	r.Stop()
	if err := r.Wait(); err != nil {
		s.close()
		return nil, err
	}
	if bar == nil {
		s.close()
		return nil, fmt.Errorf("no checkpoint was taken")
	}
	bar.Wait()
	if bar.Err != nil || bar.Snapshot == nil {
		s.close()
		return nil, fmt.Errorf("the checkpoint failed: %v", bar.Err)
	}
	s.parts, s.dirs = [][]byte{bar.State}, []string{bar.Snapshot.Dir}
	return s, nil
}

// restore restores the checkpoint into a new database at parallelism p,
// and returns how long that took and how many keys it holds.
func (s *restoreSource) restore(p int) (time.Duration, int64, error) {
	dir, err := os.MkdirTemp(s.dir, "to-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	db, err := state.Open(filepath.Join(dir, "state"), pebbleBudget)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	cfg := restoreConfig(p, db)
	cfg.Restore, cfg.RestoreDirs = s.parts, s.dirs
	t0 := time.Now()
	r := exec.NewRunner(cfg)
	took := time.Since(t0)
	r.Stop()
	if err := r.Wait(); err != nil {
		return 0, 0, err
	}
	var open int64
	for _, op := range r.Ops() {
		open += op.Open
	}
	return took, open, nil
}

// restoreBoth restores the checkpoint at its parallelism, then key by key
// at parallelism 2.
func (s *restoreSource) restoreBoth() (int64, map[string]float64, string, error) {
	same, n, err := s.restore(1)
	if err != nil {
		return 0, nil, "", err
	}
	other, m, err := s.restore(2)
	if err != nil {
		return 0, nil, "", err
	}
	if n != restoreKeys || m != restoreKeys {
		return 0, nil, "", fmt.Errorf("restored %d and %d windows of %d", n, m, restoreKeys)
	}
	extra := map[string]float64{
		"restore_ms":            float64(same.Microseconds()) / 1000,
		"key_by_key_ms":         float64(other.Microseconds()) / 1000,
		"restore_vs_key_by_key": same.Seconds() / other.Seconds(),
	}
	return restoreKeys, extra, "", nil
}
