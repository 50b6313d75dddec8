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
	"syscall"

	"golang.org/x/term"

	"github.com/weirstream/weir/job"
)

const usage = `weir: event-time stream processing

Usage:
  weir run [flags] JOB.yaml    run a job file (see README.md for its fields)
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
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir run [flags] JOB.yaml\n\nRuns a job file until its input ends; the summary goes to standard error.\n\nFlags:\n")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := job.Options{Stdin: stdin, Stdout: stdout}
	if *progress {
		opts.Progress = stderr
	}
	sum, err := job.Run(ctx, j, opts)
	if sum != nil && !*quiet {
		fmt.Fprint(stderr, sum.Text())
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		var re *job.RuntimeError
		if errors.As(err, &re) {
			return 1
		}
		return 1
	}
	return 0
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
