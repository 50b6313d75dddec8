package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

func init() {
	register(Bench{
		Name: "latency-follow", Group: "latency",
		About: "weir run on a followed file, written live at 2,000 events/s (each key once per 2 s window, early: 500ms), writing a file: " +
			"the p99 of (on-time pane visible in the output file - the watermark passing the window's end) and of (event written - its early pane visible)",
		Run: followLatency,
	})
}

const followJob = `name: follow
source: {file: in.jsonl, follow: true}
time: {field: ts}
key: k
watermark: {delay: 0s, interval: 200ms}
window: {tumbling: 2s}
trigger: {early: 500ms}
aggregates: {n: count}
output: out.jsonl
`

// followLatency writes events into a file that a live job follows, and
// watches the job's output file grow: every early pane is the pane of one
// event (each key has one event per window), so its latency is from the
// event's write to the pane's appearance; every on-time pane's latency is
// from its emission, the instant the watermark passed the window's end, to
// its appearance.
func followLatency(d time.Duration) (int64, map[string]float64, string, error) {
	const rate = 2000
	dir, err := os.MkdirTemp("", "weir-follow-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	in, err := os.Create(filepath.Join(dir, "in.jsonl"))
	if err != nil {
		return 0, nil, "", err
	}
	defer in.Close()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(followJob), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		return 0, nil, "", err
	}
	rn, err := job.Build(j, job.Options{})
	if err != nil {
		return 0, nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := rn.Run(ctx)
		done <- err
	}()

	type key struct {
		k   string
		win int64
	}
	var mu sync.Mutex
	written := map[key]time.Time{}
	var early, onTime []time.Duration
	watchDone := make(chan struct{})
	stopWatch := make(chan struct{})
	go func() {
		defer close(watchDone)
		var f *os.File
		var r *bufio.Reader
		var part []byte
		for {
			if f == nil {
				if f, _ = os.Open(filepath.Join(dir, "out.jsonl")); f != nil {
					r = bufio.NewReaderSize(f, 1<<20)
				}
			}
			if r != nil {
				for {
					chunk, err := r.ReadBytes('\n')
					part = append(part, chunk...)
					if err != nil {
						break
					}
					seen := time.Now()
					var p struct {
						Key       string `json:"key"`
						Start     string `json:"window_start"`
						Timing    string `json:"timing"`
						EmittedAt string `json:"emitted_at"`
					}
					if json.Unmarshal(bytes.TrimSpace(part), &p) == nil {
						start, _ := mtime.Parse([]byte(p.Start))
						emitted, _ := mtime.Parse([]byte(p.EmittedAt))
						mu.Lock()
						switch p.Timing {
						case "EARLY":
							if w, ok := written[key{p.Key, int64(start)}]; ok {
								early = append(early, seen.Sub(w))
							}
						case "ON_TIME":
							onTime = append(onTime, seen.Sub(emitted.Time()))
						}
						mu.Unlock()
					}
					part = part[:0]
				}
			}
			select {
			case <-stopWatch:
				if f != nil {
					f.Close()
				}
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()

	start := time.Now()
	var n int64
	w := bufio.NewWriter(in)
	for time.Since(start) < d {
		due := int64(time.Since(start).Seconds() * rate)
		if n >= due {
			time.Sleep(time.Millisecond)
			continue
		}
		now := time.Now()
		ts := mtime.FromTime(now)
		win := int64(ts - ts%2_000)
		for ; n < due; n++ {
			k := fmt.Sprintf("k%d", n%(rate*2))
			mu.Lock()
			written[key{k, win}] = now
			mu.Unlock()
			fmt.Fprintf(w, `{"k":%q,"ts":%d}`+"\n", k, ts)
		}
		w.Flush()
	}
	// Let the last early panes come out, then stop.
	time.Sleep(time.Second)
	cancel()
	runErr := <-done
	close(stopWatch)
	<-watchDone
	if runErr != nil && ctx.Err() == nil {
		return n, nil, "", runErr
	}
	mu.Lock()
	defer mu.Unlock()
	extra := map[string]float64{"early_panes": float64(len(early)), "on_time_panes": float64(len(onTime))}
	q := func(xs []time.Duration, p float64) float64 {
		if len(xs) == 0 {
			return -1
		}
		slices.Sort(xs)
		return xs[int(p*float64(len(xs)-1))].Seconds() * 1000
	}
	extra["on_time_p50_ms"], extra["on_time_p99_ms"] = q(onTime, 0.5), q(onTime, 0.99)
	extra["early_p50_ms"], extra["early_p99_ms"] = q(early, 0.5), q(early, 0.99)
	return n, extra, "targets: on_time_p99 < 100 ms, early_p99 < 600 ms (early 500 ms + 100 ms)", nil
}
