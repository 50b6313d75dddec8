package exec

import (
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/window"
)

// BenchmarkRestorePebble1M restores the Pebble checkpoint of an instance
// holding one window for each of a million keys into a new state database,
// at the same parallelism: what a job on the Pebble backend waits for when
// it starts from a checkpoint.
func BenchmarkRestorePebble1M(b *testing.B) {
	const keys = 1_000_000
	hash := func(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 }
	strat := window.NewStrategy(window.TumblingWindows(time.Minute))
	db, err := state.Open(b.TempDir(), 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	op := NewWindowOp[uint64](strat, aggregate.Count[struct{}]())
	op.usePebble(db, 0, cc{}, hash, db.CacheBudget())
	for i := range keys {
		op.Event(uint64(i), uint64(i), mtime.Time(1_780_000_000_000), 0, struct{}{})
	}
	part, snap, err := op.snapshotPebble(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		db2, err := state.Open(b.TempDir(), 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		op2 := NewWindowOp[uint64](strat, aggregate.Count[struct{}]())
		op2.usePebble(db2, 0, cc{}, hash, db2.CacheBudget())
		b.StartTimer()
		if _, err := Restore([]*WindowOp[uint64, struct{}, int64, int64]{op2}, [][]byte{part}, []string{snap.Dir}, cc{}, RestoreOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := op2.pebble.flush(); err != nil {
			b.Fatal(err)
		}
		if err := op2.et.error(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if op2.state.len() != keys {
			b.Fatalf("restored %d keys, want %d", op2.state.len(), keys)
		}
		db2.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(keys), "keys")
}
