// Command weir runs event-time stream jobs described in YAML files.
//
//	weir run job.yaml          run a job over its input until the input ends
//	weir help                  list every command
//
// The command is thin: it turns flags into a call of the library (package
// job and friends), so tests start the same thing in-process.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/weirstream/weir/job"
)

const usage = `weir: event-time stream processing

Usage:
  weir run [flags] JOB.yaml    run a job file (see README.md for its fields)
  weir savepoint JOB.yaml      ask the running job for a savepoint
  weir gen steep|orders|nexmark [flags]
                               write a realistic stream of JSON lines
  weir lateness [flags] FILE   measure how late a recorded stream is: travel
                               times, Table 1 and a recommended watermark
  weir bench [flags]           run the benchmarks (from the repository's root)
  weir version                 print the version
  weir help                    this text

Exit status: 0 done, 1 the job failed while running, 2 a bad job file or
bad flags (nothing is written).
`

var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdin, stdout, stderr)
	case "savepoint":
		return cmdSavepoint(args[1:], stdout, stderr)
	case "gen":
		return cmdGen(args[1:], stdout, stderr)
	case "bench":
		return cmdBench(args[1:], stdout, stderr)
	case "lateness":
		return cmdLateness(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "weir", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "weir: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weir run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.Bool("quiet", false, "do not print the summary on standard error")
	progress := fs.Bool("progress", isTerminal(stderr), "show progress on standard error (default: when it is a terminal)")
	from := fs.String("from", "", "restore from this checkpoint or savepoint `directory` instead of the newest checkpoint")
	noSavepoint := fs.Bool("no-savepoint-on-stop", false, "on SIGTERM or Ctrl-C, stop without taking a savepoint")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to `file` (for go tool pprof)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: weir run [flags] JOB.yaml

Runs a job file until its input ends; the summary goes to standard error.
With checkpoint.dir set, the job resumes from its newest complete checkpoint,
commits its output at each checkpoint, and on SIGTERM or Ctrl-C takes a
savepoint and exits 0; SIGUSR1 (or weir savepoint) takes a savepoint and
goes on.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	j, err := job.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "weir:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "weir:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	savepoints := make(chan chan string)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	go func() {
		for range usr1 {
			done := make(chan string, 1)
			select {
			case savepoints <- done:
			case <-ctx.Done():
				return
			}
			if p := <-done; p != "" {
				fmt.Fprintln(stderr, "weir: savepoint", p)
			} else {
				fmt.Fprintln(stderr, "weir: the savepoint failed (is checkpoint.dir set?)")
			}
		}
	}()
	opts := job.Options{Stdin: stdin, Stdout: stdout, Log: stderr, From: *from, NoSavepointOnStop: *noSavepoint, Savepoints: savepoints}
	if *progress {
		opts.Progress = stderr
	}
	sum, err := job.Run(ctx, j, opts)
	if sum != nil && !*quiet {
		fmt.Fprint(stderr, sum.Text())
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	return 0
}

// cmdSavepoint asks the job running with a checkpoint directory for a
// savepoint (by SIGUSR1 to the process in its weir.pid) and waits for it.
func cmdSavepoint(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weir savepoint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Duration("timeout", time.Minute, "how long to wait for the savepoint")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir savepoint [flags] JOB.yaml\n\nAsks the running job (which must have checkpoint.dir) for a savepoint and prints its directory.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		if err == nil {
			fs.Usage()
		}
		return 2
	}
	j, err := job.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 2
	}
	if j.Checkpoint.Dir == "" {
		fmt.Fprintf(stderr, "weir: %s has no checkpoint.dir: it cannot take savepoints\n", fs.Arg(0))
		return 2
	}
	path, err := job.RequestSavepoint(j, *wait)
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, and returns those. When parsing stops (bad flags, or
// -h), ok is false and code is the exit status: 0 for help, 2 otherwise.
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		if fs.NArg() == 0 {
			return positional, 0, true
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
