//go:build !release

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/weirstream/weir/bench"
)

// cmdBench runs every benchmark, each in a child process of its own (so that
// its peak memory is its own), and prints them side by side with the floor,
// the peer and the targets.
func cmdBench(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir bench", stderr)
	only := fs.String("only", "", "run the benchmarks whose name matches this `regexp`")
	dur := fs.Duration("duration", 8*time.Second, "how long each timed benchmark runs")
	quick := fs.Bool("quick", false, "short runs (2 s each, 1M JSON lines): a smoke test, not a measurement")
	asJSON := fs.Bool("json", false, "print one JSON object per benchmark instead of the table")
	list := fs.Bool("list", false, "list the benchmarks and exit")
	child := fs.String("child", "", "run one benchmark in this process and print its result (internal)")
	profile := fs.String("profile", "", "write each benchmark's CPU and allocation profiles into this `dir` (NAME.cpu.pprof, NAME.allocs.pprof; go tool pprof reads them)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir bench [flags]\n\nRuns weir's benchmarks from the repository's root (the peers are modules of their own: bench/beam, Apache Beam's Go SDK; bench/duckdb, DuckDB, built with cgo) and prints events/s,\nevents/s per core, peak memory and allocations per event, with ratios to the floor and the peer.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fs.Usage()
		return 2
	}
	if *quick {
		*dur = 2 * time.Second
		bench.JSONLines = 1_000_000
		bench.KafkaOrders = 200_000
	}
	if *child != "" {
		b, ok := bench.Find(*child)
		if !ok {
			fmt.Fprintf(stderr, "weir bench: no benchmark %q\n", *child)
			return 2
		}
		r := bench.Measure(b, *dur, func() (func() error, error) { return startProfiles(*profile, b.Name) })
		fmt.Fprintln(stdout, r.JSON())
		return 0
	}
	var re *regexp.Regexp
	if *only != "" {
		var err error
		if re, err = regexp.Compile(*only); err != nil {
			fmt.Fprintf(stderr, "weir bench: --only: %v\n", err)
			return 2
		}
	}
	if *list {
		for _, b := range bench.All() {
			fmt.Fprintf(stdout, "%-28s %s\n", b.Name, b.About)
		}
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "weir bench:", err)
		return 1
	}
	var results []bench.Result
	start := time.Now()
	for _, b := range bench.All() {
		if re != nil && !re.MatchString(b.Name) || re == nil && b.Explicit {
			continue
		}
		fmt.Fprintf(stderr, "weir bench: %s ...", b.Name)
		cargs := []string{"bench", "--child", b.Name, "--duration", dur.String()}
		if *quick {
			cargs = append(cargs, "--quick")
		}
		if *profile != "" {
			cargs = append(cargs, "--profile", *profile)
		}
		cmd := exec.Command(self, cargs...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		t0 := time.Now()
		runErr := cmd.Run()
		var r bench.Result
		if jerr := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); jerr != nil || runErr != nil {
			r = bench.Result{Name: b.Name, Group: b.Group, Err: strings.TrimSpace(fmt.Sprint(runErr, " ", errb.String()))}
		}
		fmt.Fprintf(stderr, " %.1fs\n", time.Since(t0).Seconds())
		results = append(results, r)
		if *asJSON {
			fmt.Fprintln(stdout, r.JSON())
		}
	}
	if !*asJSON {
		fmt.Fprint(stdout, bench.Table(results))
		fmt.Fprint(stdout, "\n"+bench.Ratios(results))
		fmt.Fprint(stdout, "\n"+bench.Targets(results))
	}
	fmt.Fprintf(stderr, "weir bench: %d benchmarks in %.0fs\n", len(results), time.Since(start).Seconds())
	return 0
}

// startProfiles starts a CPU profile of the benchmark name into dir (none
// when dir is empty); the returned stop ends it and writes the allocation
// profile beside it. The files are new: an existing one is an error, never
// overwritten.
func startProfiles(dir, name string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	create := func(suffix string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name+suffix), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	cpu, err := create(".cpu.pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			return err
		}
		f, err := create(".allocs.pprof")
		if err != nil {
			return err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}, nil
}
