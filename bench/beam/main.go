// Command beam is the Apache Beam (Go SDK) peer of weir's benchmark (1): a
// keyed tumbling count over in-memory events.
//
//	go run . -events N -keys K [-runner prism|direct]
//
// Event i has key i%K and event time base + i/10 ms (10 000 events per
// second of event time, in order). Events are put in fixed 1-minute windows
// by event time and counted per key and window; the results are counted and
// discarded. The program prints one JSON line on stdout and exits non-zero if
// the number of (key, window) results, or the sum of the counts, is not the
// expected one.
//
// It lives in its own module so that weir's main module never depends on
// Beam.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners" // the -runner flag
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	// Reflection-free call wrappers for common signatures.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec/optimized"
	// Runner registration.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
)

var (
	events  = flag.Int64("events", 1_000_000, "number of events N")
	keys    = flag.Int64("keys", 10_000, "number of keys K (event i has key i%K)")
	base    = flag.Int64("base", 1_780_000_000_000, "event time of event 0, in ms since the epoch (weir's benchmark uses 1780000000000)")
	cpuProf = flag.String("cpuprofile", "", "write a CPU profile of the pipeline run to this file")
	verbose = flag.Bool("v", false, "keep Beam's and Prism's INFO logs (on stderr)")
	shards  = flag.Int("shards", 1, "number of generator shards (1 = one in-order source, as in weir's benchmark)")
)

// Counters shared with the DoFns. The runners used here (prism in loopback
// mode, direct) run the SDK worker in this process, so atomics suffice; the
// Beam metrics are kept as well for the record.
var (
	firstEvent atomic.Int64 // unix nanos of the first generator call
	windowsOut atomic.Int64 // (key, window) results seen by the sink
	countSum   atomic.Int64 // sum of the counts seen by the sink
)

func init() {
	register.DoFn2x0[int64, func(beam.EventTime, int64, int64)](&genFn{})
	register.Emitter3[beam.EventTime, int64, int64]()
	register.DoFn2x0[[]byte, func(int64)](&splitFn{})
	register.Emitter1[int64]()
	register.DoFn3x0[context.Context, int64, int64](&sinkFn{})
}

// splitFn turns the impulse into shard indices 0..Shards-1.
type splitFn struct {
	Shards int64
}

func (f *splitFn) ProcessElement(_ []byte, emit func(int64)) {
	for s := int64(0); s < f.Shards; s++ {
		emit(s)
	}
}

// genFn generates the events of one shard: i in [shard*N/S, (shard+1)*N/S),
// emitting (i%K, 1) at event time base + i/10 ms.
type genFn struct {
	N, K, Base, Shards int64
}

func (f *genFn) ProcessElement(shard int64, emit func(beam.EventTime, int64, int64)) {
	firstEvent.CompareAndSwap(0, time.Now().UnixNano())
	lo, hi := shard*f.N/f.Shards, (shard+1)*f.N/f.Shards
	for i := lo; i < hi; i++ {
		emit(beam.EventTime(f.Base+i/10), i%f.K, 1)
	}
}

// sinkFn counts the (key, window) results and discards them.
type sinkFn struct{}

var (
	mWindows = beam.NewCounter("bench", "windows_out")
)

func (f *sinkFn) ProcessElement(ctx context.Context, _ int64, n int64) {
	mWindows.Inc(ctx, 1)
	windowsOut.Add(1)
	countSum.Add(n)
}

// expectedWindows is the number of (key, window) pairs: a window of one
// minute holds a contiguous range of L event indices, which covers min(L, K)
// distinct keys.
func expectedWindows(n, k, base int64) int64 {
	if n == 0 {
		return 0
	}
	const w = 60_000 // ms
	ts := func(i int64) int64 { return base + i/10 }
	floorDiv := func(a, b int64) int64 {
		q := a / b
		if a%b != 0 && (a < 0) != (b < 0) {
			q--
		}
		return q
	}
	var total int64
	for win := floorDiv(ts(0), w); win <= floorDiv(ts(n-1), w); win++ {
		// events with ts in [win*w, (win+1)*w): i/10 >= win*w-base and i/10 < (win+1)*w-base.
		lo := max(10*(win*w-base), 0)
		hi := min(10*((win+1)*w-base), n)
		if hi > lo {
			total += min(hi-lo, k)
		}
	}
	return total
}

type result struct {
	Runner              string  `json:"runner"`
	Beam                string  `json:"beam"`
	Events              int64   `json:"events"`
	Keys                int64   `json:"keys"`
	Seconds             float64 `json:"seconds"`
	SetupSeconds        float64 `json:"setup_seconds"`
	EventsPerSec        float64 `json:"events_per_sec"`
	EventsPerSecPerCore float64 `json:"events_per_sec_per_core"`
	Cores               int     `json:"cores"`
	MaxRSSBytes         int64   `json:"max_rss_bytes"`
	WindowsOut          int64   `json:"windows_out"`
}

// beamVersion is the SDK version this module requires (see go.mod).
const beamVersion = "v2.77.0"

func main() {
	flag.Parse()
	if !*verbose {
		// Beam and Prism log through slog on stderr; beam.Init sets the
		// default logger up at this level.
		beamlog.LogLevel = "warn"
	}
	if *runners.Runner == "" {
		*runners.Runner = "prism" // the Go SDK's default and recommended local runner
	}
	beam.Init()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "beam bench:", err)
		os.Exit(1)
	}
}

func run() error {
	n, k := *events, *keys
	if n < 0 || k <= 0 || *shards <= 0 {
		return fmt.Errorf("need -events >= 0, -keys > 0, -shards > 0")
	}
	want := expectedWindows(n, k, *base)

	p, s := beam.NewPipelineWithRoot()
	imp := beam.Impulse(s)
	var src beam.PCollection
	if *shards == 1 {
		src = beam.ParDo(s, &genFn{N: n, K: k, Base: *base, Shards: 1}, beam.ParDo(s, &splitFn{Shards: 1}, imp))
	} else {
		// Shard indices go through a Reshuffle so the runner may process the
		// shards in separate bundles.
		idx := beam.Reshuffle(s, beam.ParDo(s, &splitFn{Shards: int64(*shards)}, imp))
		src = beam.ParDo(s, &genFn{N: n, K: k, Base: *base, Shards: int64(*shards)}, idx)
	}
	windowed := beam.WindowInto(s, window.NewFixedWindows(time.Minute), src)
	counts := stats.SumPerKey(s, windowed)
	beam.ParDo0(s, &sinkFn{}, counts)

	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	start := time.Now()
	pr, err := beam.Run(ctx, *runners.Runner, p)
	elapsed := time.Since(start)
	if err != nil {
		return fmt.Errorf("pipeline failed: %w", err)
	}
	_ = pr

	var setup float64
	if fe := firstEvent.Load(); fe != 0 {
		setup = time.Unix(0, fe).Sub(start).Seconds()
	}
	cores := runtime.GOMAXPROCS(0)
	if nc := runtime.NumCPU(); nc < cores {
		cores = nc
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	secs := elapsed.Seconds()
	r := result{
		Runner:              *runners.Runner,
		Beam:                beamVersion,
		Events:              n,
		Keys:                k,
		Seconds:             secs,
		SetupSeconds:        setup,
		EventsPerSec:        float64(n) / secs,
		EventsPerSecPerCore: float64(n) / secs / float64(cores),
		Cores:               cores,
		MaxRSSBytes:         ru.Maxrss * 1024, // Linux reports KiB
		WindowsOut:          windowsOut.Load(),
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))

	if got := windowsOut.Load(); got != want {
		return fmt.Errorf("windows_out = %d, want %d", got, want)
	}
	if got := countSum.Load(); got != n {
		return fmt.Errorf("sum of counts = %d, want %d", got, n)
	}
	return nil
}
