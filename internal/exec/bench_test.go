package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// BenchmarkWindowOpTumblingCount is the operator alone: a keyed tumbling
// count, 10 000 keys, events in time order, a watermark every 1024 events.
// Steady state allocates nothing per event.
func BenchmarkWindowOpTumblingCount(b *testing.B) {
	const keys = 10_000
	op := NewWindowOp[uint64](window.NewStrategy(window.TumblingWindows(time.Minute)), aggregate.Count[struct{}]())
	b.ReportAllocs()
	var step uint64
	ts := mtime.Time(1_700_000_000_000)
	for i := 0; b.Loop(); i++ {
		step++
		op.Event(step, uint64(i%keys), ts, 0, struct{}{})
		if i&1023 == 1023 {
			step++
			op.AdvanceWatermark(step, ts-1000, 0)
			op.Take()
		}
		ts += 1 // 1000 events per second of event time
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkWindowOpTumblingComposite is BenchmarkWindowOpTumblingCount
// with a composite trigger, Repeatedly(AfterFirst(AfterCount(100),
// AfterProcessingTime(1 min))): its state is allocated per window, not
// per event.
func BenchmarkWindowOpTumblingComposite(b *testing.B) {
	const keys = 10_000
	tr := trigger.Of(trigger.Repeatedly(trigger.AfterFirst(trigger.AfterCount(100), trigger.AfterProcessingTime(time.Minute))))
	op := NewWindowOp[uint64](window.NewStrategy(window.TumblingWindows(time.Minute)).WithTrigger(tr), aggregate.Count[struct{}]())
	b.ReportAllocs()
	var step uint64
	ts := mtime.Time(1_700_000_000_000)
	for i := 0; b.Loop(); i++ {
		step++
		op.Event(step, uint64(i%keys), ts, ts, struct{}{})
		if i&1023 == 1023 {
			step++
			op.AdvanceProc(step, ts)
			step++
			op.AdvanceWatermark(step, ts-1000, ts)
			op.Take()
		}
		ts += 1 // 1000 events per second of event time
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRunnerTumblingCount is the source stage, the driver's watermark
// and one operator instance in its own goroutine, with batches between them.
func BenchmarkRunnerTumblingCount(b *testing.B) {
	for _, p := range []int{0, 1, 2} {
		b.Run(map[int]string{0: "inline", 1: "p1", 2: "p2"}[p], func(b *testing.B) {
			const keys = 10_000
			r := NewRunner(Config[uint64, struct{}, int64, int64]{
				Strategy:    window.NewStrategy(window.TumblingWindows(time.Minute)),
				Agg:         aggregate.Count[struct{}](),
				Parallelism: p,
				Hash:        func(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 },
				Emit:        func([]Out[uint64, struct{}, int64]) error { return nil },
			})
			d := NewDriver[uint64, struct{}](r, watermark.BoundedOutOfOrderness(time.Second), false)
			b.ReportAllocs()
			ts := mtime.Time(1_700_000_000_000)
			now := ts
			for i := 0; b.Loop(); i++ {
				if i&1023 == 0 {
					now += 50
					d.Advance(now)
				}
				d.Event(0, uint64(i%keys), ts, struct{}{})
				ts++
			}
			d.End()
			if err := r.Wait(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkWindowOpStringKeys is the operator alone with the keys of
// weir run's JSON-lines benchmark: 100 000 string keys (one string each, as
// a decoder interns them) in random order, about 6 events per key and
// one-minute window, a watermark every 1024 events.
func BenchmarkWindowOpStringKeys(b *testing.B) {
	const keys = 100_000
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf(`"c%d"`, i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	order := make([]int32, 1<<20)
	for i := range order {
		order[i] = int32(r.IntN(keys))
	}
	op := NewWindowOp[string](window.NewStrategy(window.TumblingWindows(time.Minute)), aggregate.Count[struct{}]())
	b.ReportAllocs()
	var step uint64
	ts := mtime.Time(1_700_000_000_000)
	for i := 0; b.Loop(); i++ {
		step++
		op.Event(step, names[order[i&(1<<20-1)]], ts/10, 0, struct{}{})
		if i&1023 == 1023 {
			step++
			op.AdvanceWatermark(step, ts/10-2000, 0)
			op.Take()
		}
		ts++ // 10 000 events per second of event time
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRunnerKeys is one operator instance in its own goroutine (p1)
// with keys spread at random over many more than the caches hold: 100 000
// string keys (weir run's JSON-lines benchmark) and 1 000 000 integer keys,
// about 6 events per key and one-minute window. The operator's work is
// mostly waiting for each key's state to come from memory.
func BenchmarkRunnerKeys(b *testing.B) {
	b.Run("strings-100k", func(b *testing.B) {
		names := make([]string, 100_000)
		for i := range names {
			names[i] = fmt.Sprintf(`"c%d"`, i)
		}
		benchRunnerKeys(b, func(i int) string { return names[i%len(names)] }, len(names))
	})
	b.Run("ints-1m", func(b *testing.B) {
		benchRunnerKeys(b, func(i int) uint64 { return uint64(i) }, 1_000_000)
	})
}

func benchRunnerKeys[K comparable](b *testing.B, key func(int) K, keys int) {
	r := NewRunner(Config[K, struct{}, int64, int64]{
		Strategy:    window.NewStrategy(window.TumblingWindows(time.Minute)),
		Agg:         aggregate.Count[struct{}](),
		Parallelism: 1,
		Hash:        seededHash[K](),
		Emit:        func([]Out[K, struct{}, int64]) error { return nil },
	})
	d := NewDriver[K, struct{}](r, watermark.BoundedOutOfOrderness(time.Second), false)
	rnd := rand.New(rand.NewPCG(1, 2))
	order := make([]int32, 1<<20)
	for i := range order {
		order[i] = int32(rnd.IntN(keys))
	}
	rate := mtime.Time(keys * 6 / 60_000) // events per ms of event time
	b.ReportAllocs()
	ts := mtime.Time(1_700_000_000_000)
	now := ts
	for i := 0; b.Loop(); i++ {
		if i&1023 == 0 {
			now += 50
			d.Advance(now)
		}
		d.Event(0, key(int(order[i&(1<<20-1)])), ts+mtime.Time(i)/rate, struct{}{})
	}
	d.End()
	if err := r.Wait(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
