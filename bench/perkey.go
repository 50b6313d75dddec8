package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// PerKeyLines is the number of lines, each of a key of its own, of the
// state-per-key benchmark.
var PerKeyLines = 2_000_000

func init() {
	register(Bench{
		Name: "state-per-key", Group: "state",
		About: fmt.Sprintf("the memory a live key costs weir run (count and sum, memory backend): %d lines, each a new key, in one hour window, the live heap after a GC every 100 ms against the lines read (its slope)", PerKeyLines),
		Setup: onFile(func() (string, error) { return perKeyFile(PerKeyLines) }, statePerKey),
	})
	for _, backend := range []string{"memory", "pebble"} {
		register(Bench{
			Name: "job-1m-" + backend, Group: "state",
			About: fmt.Sprintf("weir run of a whole job file on the %s backend%s: %d JSON lines, each a key of its own, in one hour window, count and sum", backend, map[string]string{"pebble": " (16 MiB budget)"}[backend], JobKeys),
			Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
				in, err := perKeyFile(JobKeys) // written before the clock starts
				run := func(time.Duration) (int64, map[string]float64, string, error) { return jobKeys(in, backend) }
				return run, func() {}, err
			},
		})
	}
	register(Bench{
		Name: "tumbling-1m-p1-hour", Group: "state",
		About: "as pebble-1m-p1 on the memory backend: the throughput Pebble is compared with",
		Run: func(d time.Duration) (int64, map[string]float64, string, error) {
			return tumblingOn(max(d, 25*time.Second), 1_000_000, 1, 0, time.Hour, nil)
		},
	})
}

// JobKeys is the number of lines, each of a key of its own, of the
// job-1m benchmarks.
const JobKeys = 1_000_000

// perKeyFile is the input of state-per-key and the job-1m benchmarks: n
// lines, line i with key "k<i>", event time and arrival 1 ms apart, all in
// the hour that starts at tumblingBase.
func perKeyFile(n int) (string, error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("weir-bench-perkey-%d.jsonl", n))
	if st, err := os.Stat(path); err == nil && st.Size() > int64(n)*40 {
		return path, nil
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	base := mtime.Time(tumblingBase) - mtime.Time(tumblingBase)%3_600_000
	for i := range n {
		t := base + mtime.Time(i)
		b = append(b[:0], `{"card":"k`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","amount":`...)
		b = strconv.AppendInt(b, int64(i%997), 10)
		b = append(b, `,"ts":"`...)
		b = t.AppendFormat(b)
		b = append(b, "\"}\n"...)
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	f.Close()
	return path, os.Rename(tmp, path)
}

const perKeyJob = `name: perkey
source: {file: %s}
time: {field: ts}
key: card
watermark: {delay: 2s}
window: {tumbling: 1h}
aggregates: {orders: count, spent: sum(amount)}
output: %s
`

// statePerKey runs the job while a sampler collects it every 100 ms and
// pairs the live heap with the lines read; the least-squares slope of one
// over the other, between a tenth and nine tenths of the input, is the
// memory of a live key (its windows, timers, interned key and the
// decoders' key tables).
func statePerKey(in string) (int64, map[string]float64, string, error) {
	dir, err := os.MkdirTemp("", "weir-bench-perkey-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	j, err := jobfile.Parse([]byte(fmt.Sprintf(perKeyJob, in, filepath.Join(dir, "out.jsonl"))), "perkey.yaml", dir)
	if err != nil {
		return 0, nil, "", err
	}
	rn, err := job.Build(j, job.Options{})
	if err != nil {
		return 0, nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type point struct{ read, heap float64 }
	var pts []point
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctl := rn.Engine().Control()
		var ms runtime.MemStats
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			st := ctl.Status(ctx, time.Second)
			runtime.GC()
			runtime.ReadMemStats(&ms)
			if r := st.Counts.Read; r > int64(PerKeyLines)/10 && r < int64(PerKeyLines)*9/10 {
				pts = append(pts, point{float64(r), float64(ms.HeapAlloc)})
			}
		}
	}()
	sum, err := rn.Run(ctx)
	cancel()
	<-done
	if err != nil {
		return 0, nil, "", err
	}
	if len(pts) < 5 {
		return 0, nil, "", fmt.Errorf("%d samples of the heap: too few for a slope", len(pts))
	}
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		sx, sy, sxx, sxy = sx+p.read, sy+p.heap, sxx+p.read*p.read, sxy+p.read*p.heap
	}
	n := float64(len(pts))
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return sum.Read, map[string]float64{"bytes_per_key": slope, "samples": n, "panes": float64(sum.PanesWritten)}, "", nil
}

// jobKeys runs the job of state-per-key over JobKeys lines on a backend
// (Pebble with the budget of pebble-1m-p1), as a user runs it: what Pebble
// costs a whole job whose state is several times its budget.
func jobKeys(in, backend string) (int64, map[string]float64, string, error) {
	dir, err := os.MkdirTemp("", "weir-bench-jobkeys-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	text := fmt.Sprintf(perKeyJob, in, filepath.Join(dir, "out.jsonl"))
	extra := map[string]float64{}
	if backend == "pebble" {
		text += fmt.Sprintf("state: {backend: pebble, memory_budget: %dMiB, dir: state}\n", pebbleBudget>>20)
		extra["budget_mib"] = pebbleBudget >> 20
	}
	_, sum, err := runJobText(text, "jobkeys.yaml", dir)
	if err != nil {
		return 0, nil, "", err
	}
	extra["panes"] = float64(sum.PanesWritten)
	return sum.Read, extra, "", nil
}
