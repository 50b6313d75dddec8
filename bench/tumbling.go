package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// The events of benchmark (1): event i has key i % keys and event time
// base + i/10 ms (10,000 events per second of event time, in order); a
// tumbling window of one minute counts them per key.
const tumblingBase = mtime.Time(1_780_000_000_000)

func init() {
	for _, keys := range []int{10_000, 1_000_000} {
		register(Bench{
			Name: fmt.Sprintf("tumbling-%s-chained", short(keys)), Group: "tumbling-" + short(keys),
			About: fmt.Sprintf("keyed tumbling count, %d keys, one instance chained to the source (one goroutine, no batches)", keys),
			Run:   func(d time.Duration) (int64, map[string]float64, string, error) { return tumbling(d, keys, 0, 0) },
		})
		for _, p := range []int{1, 2} {
			register(Bench{
				Name: fmt.Sprintf("tumbling-%s-p%d", short(keys), p), Group: "tumbling-" + short(keys),
				About: fmt.Sprintf("keyed tumbling count, %d keys, parallelism %d (instances in goroutines of their own, batches between them)", keys, p),
				Run: func(d time.Duration) (int64, map[string]float64, string, error) {
					if p == 1 {
						d = max(d, 25*time.Second) // as long as the run with checkpoints it is compared with
					}
					return tumbling(d, keys, p, 0)
				},
			})
		}
		for _, every := range []time.Duration{10 * time.Second, time.Second} {
			register(Bench{
				Name: fmt.Sprintf("tumbling-%s-p1-ckpt%s", short(keys), every), Group: "tumbling-" + short(keys),
				About: fmt.Sprintf("as tumbling-%s-p1, with a checkpoint every %s (written and synced)", short(keys), every),
				Run: func(d time.Duration) (int64, map[string]float64, string, error) {
					return tumbling(max(d, 25*time.Second), keys, 1, every)
				},
			})
		}
		register(Bench{
			Name: fmt.Sprintf("tumbling-%s-api", short(keys)), Group: "tumbling-" + short(keys),
			About: "the same through the typed Go API (weir.Pipeline)",
			Run:   func(d time.Duration) (int64, map[string]float64, string, error) { return tumblingAPI(d, keys) },
		})
		register(Bench{
			Name: fmt.Sprintf("floor-%s", short(keys)), Group: "tumbling-" + short(keys),
			About: "the limit: a hand-written loop with a plain map, no engine",
			Run:   func(d time.Duration) (int64, map[string]float64, string, error) { return floor(d, keys) },
		})
	}
}

func short(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dm", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// countCodec encodes the state of a count per uint64 key.
type countCodec struct{}

func (countCodec) AppendKey(b []byte, k uint64) []byte { return enc.AppendUvarint(b, k) }
func (countCodec) ReadKey(d *enc.Decoder) uint64       { return d.Uvarint() }
func (countCodec) AppendAcc(b []byte, a int64) []byte  { return enc.AppendVarint(b, a) }
func (countCodec) ReadAcc(d *enc.Decoder) int64        { return d.Varint() }
func (countCodec) AppendOut(b []byte, o int64) []byte  { return enc.AppendVarint(b, o) }
func (countCodec) ReadOut(d *enc.Decoder) int64        { return d.Varint() }
func mix(k uint64) uint64                              { return k * 0x9E3779B97F4A7C15 }

// runFor says whether a loop at iteration i goes on: until d has passed,
// looking at the clock every 65536 iterations.
func runFor(start time.Time, d time.Duration, i int) bool {
	return i&0xffff != 0 || time.Since(start) < d
}

// tumbling runs benchmark (1) on the engine: the source loop feeds a driver
// (watermark: 1 s of bounded out-of-orderness, every 200 ms of wall time),
// batches go to p operator instances. With ckpt > 0 a barrier goes every
// ckpt and the instances' snapshots are written to a checkpoint store.
func tumbling(d time.Duration, keys, p int, ckpt time.Duration) (int64, map[string]float64, string, error) {
	return tumblingOn(d, keys, p, ckpt, time.Minute, nil)
}

// tumblingOn is tumbling with windows of size and the operators' state in
// db (memory if nil).
func tumblingOn(d time.Duration, keys, p int, ckpt, size time.Duration, db *state.DB) (int64, map[string]float64, string, error) {
	var panes int64
	var store *checkpoint.Store
	var saved, savedBytes int64
	var saveTime, snapTime time.Duration
	type req struct{ bars []*exec.Barrier }
	reqs := make(chan req, 1)
	done := make(chan error, 1)
	if ckpt > 0 {
		dir, err := os.MkdirTemp("", "weir-bench-ckpt-")
		if err != nil {
			return 0, nil, "", err
		}
		defer os.RemoveAll(dir)
		if store, err = checkpoint.Open(checkpoint.OSFS, dir, 2); err != nil {
			return 0, nil, "", err
		}
		go func() {
			var err error
			id := uint64(1)
			for r := range reqs {
				var in []checkpoint.Input
				for i, b := range r.bars {
					b.Wait() // the snapshot is written beside the operator
					in = append(in, checkpoint.Input{Name: fmt.Sprintf("op-%d", i), Data: b.State})
					savedBytes += int64(len(b.State))
					snapTime += b.Took
					if b.Err != nil && err == nil {
						err = b.Err
					}
					if snap := b.Snapshot; snap != nil {
						for _, f := range snap.Files {
							in = append(in, checkpoint.Input{Name: fmt.Sprintf("op-%d.db.%s", i, f.Name), Path: filepath.Join(snap.Dir, f.Name), Object: f.Object})
							if f.Object == "" {
								in[len(in)-1].Data, _ = os.ReadFile(filepath.Join(snap.Dir, f.Name))
								in[len(in)-1].Path, in[len(in)-1].Object = "", ""
							}
						}
					}
				}
				t0 := time.Now()
				copied := store.Copied
				if _, e := store.SaveFiles(checkpoint.Manifest{ID: id, Kind: checkpoint.Periodic}, in); e != nil && err == nil {
					err = e
				}
				savedBytes += store.Copied - copied
				store.Prune()
				for _, b := range r.bars {
					if b.Snapshot != nil {
						b.Snapshot.Release()
					}
				}
				saveTime += time.Since(t0)
				id++
				saved++
			}
			done <- err
		}()
	}
	var bars []*exec.Barrier
	r := exec.NewRunner(exec.Config[uint64, struct{}, int64, int64]{
		Strategy:    window.NewStrategy(window.TumblingWindows(size)),
		Agg:         aggregate.Count[struct{}](),
		Parallelism: p,
		Hash:        mix,
		Codec:       countCodec{},
		State:       db,
		Emit: func(outs []exec.Out[uint64, struct{}, int64]) error {
			for i := range outs {
				switch outs[i].Kind {
				case exec.OutPane:
					panes++
				case exec.OutBarrier:
					bars = append(bars, outs[i].Barrier)
					if len(bars) == outs[i].Barrier.Of {
						reqs <- req{bars}
						bars = nil
					}
				}
			}
			return nil
		},
	})
	drv := exec.NewDriver[uint64, struct{}](r, watermark.BoundedOutOfOrderness(time.Second), false)
	start := time.Now()
	nextCkpt := start.Add(ckpt)
	i := 0
	for ; runFor(start, d, i); i++ {
		if i&1023 == 0 {
			drv.Advance(mtime.Now())
			if ckpt > 0 && time.Now().After(nextCkpt) {
				r.Barrier(nil)
				nextCkpt = nextCkpt.Add(ckpt)
			}
		}
		drv.Event(0, uint64(i%keys), tumblingBase+mtime.Time(i/10), struct{}{})
	}
	var stateBytes uint64
	if db != nil {
		stateBytes = db.Metrics().DiskSpaceUsage() // the state at its largest, before the end fires it
	}
	drv.End()
	if err := r.Wait(); err != nil {
		return int64(i), nil, "", err
	}
	extra := map[string]float64{"panes": float64(panes)}
	if db != nil {
		extra["state_mib"] = float64(stateBytes) / (1 << 20)
	}
	note := ""
	if ckpt > 0 {
		close(reqs)
		if err := <-done; err != nil {
			return int64(i), extra, "", err
		}
		extra["checkpoints"] = float64(saved)
		if saved > 0 {
			extra["ckpt_mib"] = float64(savedBytes) / float64(saved) / (1 << 20)
			extra["ckpt_write_s"] = saveTime.Seconds() / float64(saved)
			extra["ckpt_snapshot_s"] = snapTime.Seconds() / float64(saved)
			// The operator stops for the part of the snapshot it writes
			// itself; the rest is written beside it, as is the file.
			extra["ckpt_stall_pct"] = 100 * snapTime.Seconds() / time.Since(start).Seconds()
		}
	}
	return int64(i), extra, note, nil
}

// tumblingAPI is benchmark (1) through the Go API.
func tumblingAPI(d time.Duration, keys int) (int64, map[string]float64, string, error) {
	p := weir.NewPipeline()
	var n int64
	src := weir.FromSeq(p, func(yield func(int, mtime.Time) bool) {
		start := time.Now()
		for i := 0; runFor(start, d, i); i++ {
			if !yield(i, mtime.MinTime) {
				return
			}
			n++
		}
	})
	stamped := weir.WithTimestamps(src, func(i int) mtime.Time { return tumblingBase + mtime.Time(i/10) },
		watermark.BoundedOutOfOrderness(time.Second))
	counts, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(i int) int { return i % keys }),
		window.NewStrategy(window.TumblingWindows(time.Minute))), aggregate.Count[int]())
	var panes int64
	weir.Sink(counts, func(weir.Pane[int, int64]) error { panes++; return nil })
	err := p.Run(context.Background())
	return n, map[string]float64{"panes": float64(panes)}, "", err
}

// floor is the limit for benchmark (1): the same events, windows and
// results, with a map per window and nothing else: no watermark machinery,
// no batches, no goroutines. A window's counts are emitted when the first
// event of the next window comes (the events are in order).
func floor(d time.Duration, keys int) (int64, map[string]float64, string, error) {
	const size = 60_000
	counts := map[uint64]int64{}
	cur := mtime.Time(-1)
	var panes, sum int64
	start := time.Now()
	i := 0
	for ; runFor(start, d, i); i++ {
		ts := tumblingBase + mtime.Time(i/10)
		w := ts - ts%size
		if w != cur {
			if cur >= 0 {
				for _, c := range counts {
					sum += c
					panes++
				}
				clear(counts)
			}
			cur = w
		}
		counts[uint64(i%keys)]++
	}
	for _, c := range counts {
		sum += c
		panes++
	}
	return int64(i), map[string]float64{"panes": float64(panes), "counted": float64(sum)}, "", nil
}
