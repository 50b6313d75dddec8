// Package bench measures weir: the keyed tumbling count over in-memory
// events (against a hand-written floor and Apache Beam's Go SDK), weir run
// over a file of JSON lines (against a parse-only pass and DuckDB's batch
// aggregation), the Nexmark queries (against hand-written floors), and the
// latency from the watermark to the sink. The weir command's bench
// subcommand runs every benchmark in a child process of its own, so that each
// one's peak memory and allocations are its own, and prints them side by
// side.
package bench

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"time"
)

// Result is what one benchmark measured.
type Result struct {
	Name   string  `json:"name"`
	Group  string  `json:"group"` // benchmarks of a group are compared
	Events int64   `json:"events"`
	Wall   float64 `json:"wall_seconds"`
	CPU    float64 `json:"cpu_seconds"` // user + system time of the process
	// EventsPerSec is events over wall time; PerCore is events over CPU
	// time (events per second of one fully used core).
	EventsPerSec float64 `json:"events_per_sec"`
	PerCore      float64 `json:"events_per_sec_per_core"`
	PeakRSS      int64   `json:"peak_rss_bytes"`
	AllocsPerEv  float64 `json:"allocs_per_event"`
	// Extra figures (latency percentiles, output counts).
	Extra map[string]float64 `json:"extra,omitempty"`
	Note  string             `json:"note,omitempty"`
	Err   string             `json:"error,omitempty"`
}

// Bench is one benchmark: Run does the work for about d of wall time (a
// benchmark with a fixed size may take longer or shorter) and returns the
// number of events and extra figures.
type Bench struct {
	Name  string
	Group string
	About string
	Run   func(d time.Duration) (events int64, extra map[string]float64, note string, err error)
	// Setup, when set, prepares the run (a broker filled with the input)
	// outside the measured time, and returns Run's work and the teardown.
	Setup func() (run func(d time.Duration) (int64, map[string]float64, string, error), teardown func(), err error)
	// Explicit benchmarks (the soak, which runs for minutes) run only when
	// weir bench --only names them.
	Explicit bool
}

var registry []Bench

// onFile is a Setup that writes the input file (input writes it once and
// keeps it for the next runs) before the clock starts, and runs run over
// it: writing it is not the benchmark's work, and a first run on a machine
// would otherwise measure it.
func onFile(input func() (string, error), run func(in string) (int64, map[string]float64, string, error)) func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
	return func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
		in, err := input()
		if err != nil {
			return nil, nil, err
		}
		return func(time.Duration) (int64, map[string]float64, string, error) { return run(in) }, func() {}, nil
	}
}

func register(b Bench) { registry = append(registry, b) }

// groupOrder is the order of the groups in a run and in the table.
var groupOrder = []string{"tumbling-10k", "tumbling-1m", "state", "jsonl", "decode", "nexmark", "latency", "kafka", "table"}

// All lists every benchmark, in the order weir bench runs them.
func All() []Bench {
	out := append([]Bench(nil), registry...)
	rank := func(g string) int {
		for i, x := range groupOrder {
			if x == g {
				return i
			}
		}
		return len(groupOrder)
	}
	sort.SliceStable(out, func(a, b int) bool { return rank(out[a].Group) < rank(out[b].Group) })
	return out
}

// Find returns the benchmark named name.
func Find(name string) (Bench, bool) {
	for _, b := range registry {
		if b.Name == name {
			return b, true
		}
	}
	return Bench{}, false
}

// Measure runs b in the current process and measures it. Call it in a fresh
// process for a meaningful peak RSS. watch, if not nil, is called when b's
// setup is done, just before the measured run, and the done it returns just
// after the run: a profile started and stopped so covers what is measured,
// not the input written before it.
func Measure(b Bench, d time.Duration, watch func() (done func() error, err error)) Result {
	run := b.Run
	if b.Setup != nil {
		r, teardown, err := b.Setup()
		if err != nil {
			return Result{Name: b.Name, Group: b.Group, Err: err.Error()}
		}
		defer teardown()
		run = r
	}
	done := func() error { return nil }
	if watch != nil {
		var err error
		if done, err = watch(); err != nil {
			return Result{Name: b.Name, Group: b.Group, Err: err.Error()}
		}
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	start := time.Now()
	events, extra, note, err := run(d)
	wall := time.Since(start).Seconds()
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	if derr := done(); err == nil {
		err = derr
	}
	r := Result{Name: b.Name, Group: b.Group, Events: events, Wall: wall, CPU: cpu, Extra: extra, Note: note, PeakRSS: peakRSS()}
	if err != nil {
		r.Err = err.Error()
	}
	if wall > 0 {
		r.EventsPerSec = float64(events) / wall
	}
	if cpu > 0 {
		r.PerCore = float64(events) / cpu
	}
	if events > 0 {
		r.AllocsPerEv = float64(m1.Mallocs-m0.Mallocs) / float64(events)
	}
	if v, ok := extra["peer_events_per_sec"]; ok {
		// A peer measured in its own process: its figures are the result.
		r.EventsPerSec, r.PerCore = v, extra["peer_per_core"]
		r.PeakRSS = int64(extra["peer_rss_mib"] * (1 << 20))
		r.AllocsPerEv = 0
		if w, ok := extra["peer_wall_s"]; ok {
			r.Wall = w
		}
		if c, ok := extra["peer_cpu_s"]; ok {
			r.CPU = c
		}
	}
	return r
}

// JSON encodes a result on one line.
func (r Result) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Table formats results for a person: each benchmark with its figures, and
// within a group, each figure as a ratio to the group's reference rows.
func Table(rs []Result) string {
	var s string
	s += fmt.Sprintf("%-34s %14s %14s %10s %10s %s\n", "benchmark", "events/s", "per core", "peak MiB", "allocs/ev", "notes")
	groups := map[string][]Result{}
	var order []string
	for _, r := range rs {
		if _, ok := groups[r.Group]; !ok {
			order = append(order, r.Group)
		}
		groups[r.Group] = append(groups[r.Group], r)
	}
	for _, g := range order {
		for _, r := range groups[g] {
			note := r.Note
			if r.Err != "" {
				note = "FAILED: " + r.Err
			}
			keys := make([]string, 0, len(r.Extra))
			for k := range r.Extra {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				note += fmt.Sprintf(" %s=%.4g", k, r.Extra[k])
			}
			s += fmt.Sprintf("%-34s %14.0f %14.0f %10.1f %10.3f %s\n", r.Name, r.EventsPerSec, r.PerCore,
				float64(r.PeakRSS)/(1<<20), r.AllocsPerEv, note)
		}
	}
	return s
}
