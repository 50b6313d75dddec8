package bench

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

func init() {
	register(Bench{
		Name: "latency-100k", Group: "latency",
		About: "a live stream at 100,000 events/s (1,000 keys, 1 s tumbling windows, watermark every 200 ms): " +
			"how long after the watermark passes a window's end its on-time pane reaches the sink",
		Run: latency,
	})
}

// stampedTarget notes the wall time at which each watermark enters the
// runner.
type stampedTarget struct {
	*exec.Runner[int, struct{}, int64, int64]
	mu   sync.Mutex
	when map[mtime.Time]time.Time
}

func (s *stampedTarget) Watermark(w, now mtime.Time) {
	s.mu.Lock()
	s.when[w] = time.Now()
	s.mu.Unlock()
	s.Runner.Watermark(w, now)
}

func latency(d time.Duration) (int64, map[string]float64, string, error) {
	const rate = 100_000
	var lat []time.Duration
	t := &stampedTarget{when: map[mtime.Time]time.Time{}}
	t.Runner = exec.NewRunner(exec.Config[int, struct{}, int64, int64]{
		Strategy:    window.NewStrategy(window.TumblingWindows(time.Second)),
		Agg:         aggregate.Count[struct{}](),
		Parallelism: 1,
		Live:        true,
		Emit: func(outs []exec.Out[int, struct{}, int64]) error {
			now := time.Now()
			for i := range outs {
				p := &outs[i].Pane
				if outs[i].Kind != exec.OutPane || p.Timing != window.OnTime || p.Watermark == mtime.MaxTime {
					continue
				}
				t.mu.Lock()
				at, ok := t.when[p.Watermark]
				t.mu.Unlock()
				if ok {
					lat = append(lat, now.Sub(at))
				}
			}
			return nil
		},
	})
	drv := exec.NewDriver[int, struct{}](t, watermark.BoundedOutOfOrderness(0), false)
	r := rand.New(rand.NewPCG(3, 3))
	start := time.Now()
	var n int64
	for time.Since(start) < d {
		due := int64(time.Since(start).Seconds() * rate)
		if n >= due {
			time.Sleep(200 * time.Microsecond)
			drv.Advance(mtime.Now())
			continue
		}
		now := mtime.Now()
		drv.Advance(now)
		for ; n < due; n++ {
			drv.Event(0, int(n%1000), now-mtime.Time(r.IntN(50)), struct{}{})
		}
		t.Flush()
	}
	drv.End()
	if err := t.Wait(); err != nil {
		return n, nil, "", err
	}
	slices.Sort(lat)
	extra := map[string]float64{"panes": float64(len(lat))}
	if len(lat) > 0 {
		q := func(p float64) float64 { return lat[int(p*float64(len(lat)-1))].Seconds() * 1000 }
		extra["p50_ms"], extra["p99_ms"], extra["max_ms"] = q(0.5), q(0.99), q(1)
	}
	return n, extra, "", nil
}
