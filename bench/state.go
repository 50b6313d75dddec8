package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/state"
)

// The checkpoints of the Pebble backend, and of a demanding job on both
// backends.

// pebbleBudget is the memory budget of the Pebble benchmarks: far below
// their state.
const pebbleBudget = 16 << 20

// SteepLines is the number of lines of the steep job's input: the first
// 120,000 lines of weir gen steep --events 400000 --seed 77.
const SteepLines = 120_000

func init() {
	for _, every := range []time.Duration{0, time.Second} {
		name, about := "pebble-1m-p1", "as tumbling-1m-p1 with hour windows, so that every key stays, and the keys in the Pebble backend (16 MiB budget)"
		if every > 0 {
			name += "-ckpt" + every.String()
			about += fmt.Sprintf(", a checkpoint every %s (Pebble checkpoints, table files copied once into the store)", every)
		}
		register(Bench{
			Name: name, Group: "state", About: about,
			Run: func(d time.Duration) (int64, map[string]float64, string, error) {
				return tumblingPebble(max(d, 25*time.Second), every)
			},
		})
	}
	for _, backend := range []string{"memory", "pebble"} {
		for _, every := range []time.Duration{0, 500 * time.Millisecond} {
			name := "steep-" + backend
			about := fmt.Sprintf("weir run, %s backend, over %d lines of weir gen steep: per-platform watermarks, sliding windows of 10 min every 5 min, early and throttled late panes, 1 h allowed lateness, retractions, count_distinct", backend, SteepLines)
			if every > 0 {
				name += "-ckpt" + every.String()
				about += ", a checkpoint every " + every.String()
			}
			register(Bench{
				Name: name, Group: "state", About: about,
				Setup: onFile(SteepFile, func(in string) (int64, map[string]float64, string, error) { return steepRun(in, backend, every) }),
			})
		}
	}
}

// tumblingPebble runs tumbling-1m-p1 on the Pebble backend, and reports the
// size of the state on disk.
func tumblingPebble(d, every time.Duration) (int64, map[string]float64, string, error) {
	dir, err := os.MkdirTemp("", "weir-bench-state-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	db, err := state.Open(filepath.Join(dir, "state"), pebbleBudget)
	if err != nil {
		return 0, nil, "", err
	}
	defer db.Close()
	debug.SetMemoryLimit(pebbleBudget + 128<<20) // as weir run does
	n, extra, note, err := tumblingOn(d, 1_000_000, 1, every, time.Hour, db)
	if extra != nil {
		extra["budget_mib"] = pebbleBudget >> 20
	}
	return n, extra, note, err
}

// SteepFile returns the steep job's input, writing it first if needed.
func SteepFile() (string, error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("weir-bench-steep-%d.jsonl", SteepLines))
	if st, err := os.Stat(path); err == nil && st.Size() > SteepLines*100 {
		return path, nil
	}
	var all bytes.Buffer
	if err := gen.Steep(&all, gen.Options{Events: 400_000, Seed: 77}); err != nil {
		return "", err
	}
	var head bytes.Buffer
	sc := bufio.NewScanner(&all)
	for i := 0; i < SteepLines && sc.Scan(); i++ {
		head.Write(sc.Bytes())
		head.WriteByte('\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, head.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

const steepJob = `name: steep
source: {file: %s}
time: {field: ts, arrival_field: arrival, partition_field: platform}
key: user_id
watermark: {delay: 30s, interval: 1s}
window: {sliding: {size: 10m, slide: 5m}}
trigger: {early: 1m, late: 30s}
allowed_lateness: 1h
mode: retracting
aggregates: {events: count, kinds: count_distinct(event_name)}
output: out.jsonl
late_output: late.jsonl
`

// steepRun runs the steep job over the file in on a backend, with
// checkpoints every interval (none if 0).
func steepRun(in, backend string, every time.Duration) (int64, map[string]float64, string, error) {
	dir, err := os.MkdirTemp("", "weir-bench-steep-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	text := fmt.Sprintf(steepJob, in)
	if backend == "pebble" {
		text += "state: {backend: pebble, memory_budget: 16MiB, dir: state}\n"
	}
	if every > 0 {
		text += fmt.Sprintf("checkpoint: {dir: ckpt, interval: %s}\n", every)
	}
	rn, sum, err := runJobText(text, "steep.yaml", dir)
	if err != nil {
		return 0, nil, "", err
	}
	extra := map[string]float64{"panes": float64(sum.PanesWritten)}
	if every > 0 {
		ck := rn.Engine().Checkpoints()
		extra["checkpoints"] = float64(ck.Total)
	}
	return sum.Read, extra, "", nil
}

// runJobText parses the text of a job file named name in dir, builds the
// job and runs it to its end.
func runJobText(text, name, dir string) (*job.Runnable, *job.Summary, error) {
	j, err := jobfile.Parse([]byte(text), name, dir)
	if err != nil {
		return nil, nil, err
	}
	rn, err := job.Build(j, job.Options{})
	if err != nil {
		return nil, nil, err
	}
	sum, err := rn.Run(context.Background())
	return rn, sum, err
}
