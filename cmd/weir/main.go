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
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/job"
)

const usage = `weir: event-time stream processing

Usage:
  weir run [flags] JOB.yaml    run a job file (see README.md for its fields)
  weir savepoint JOB.yaml      ask the running job for a savepoint
  weir status JOB.yaml         the running job's partitions, watermark and counts
                               (from its http address)
  weir simulator [flags]       serve seed 000's watermark simulator, computed by weir
  weir gen steep|orders|nexmark|ledger|ledger-events [flags]
                               write a realistic stream of JSON lines
  weir lateness [flags] FILE   measure how late a recorded stream is: travel
                               times, Table 1 and a recommended watermark
  weir reconcile --ledger FILE... JOB.yaml
                               correct the job's table from a retained ledger
  weir bench [flags]           run the benchmarks (from the repository's root)
  weir kafka [flags]           a development Kafka broker on 127.0.0.1, with the
                               fraud demo's topics (and --orders, its orders live)
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
	case "status":
		return cmdStatus(args[1:], stdout, stderr)
	case "simulator":
		return cmdSimulator(args[1:], stdout, stderr)
	case "gen":
		return cmdGen(args[1:], stdout, stderr)
	case "bench":
		return cmdBench(args[1:], stdout, stderr)
	case "lateness":
		return cmdLateness(args[1:], stdout, stderr)
	case "kafka":
		return cmdKafka(args[1:], stdout, stderr)
	case "reconcile":
		return cmdReconcile(args[1:], stdout, stderr)
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
	httpAddr := fs.String("http", "", "serve /metrics, /api/status, /healthz and the web console on `host:port` (overrides the job file's http address; its token and allowed hosts stay)")
	acceptChanged := fs.Bool("accept-changed-input", false, "read an input file that is not the one the restored checkpoint read (regenerated or replaced since) from its start, instead of refusing to resume")
	force := fs.Bool("force", false, "take existing output files over even when weir has no record of writing them (weir never overwrites or cuts back a file it cannot prove it wrote, unless told so)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: weir run [flags] JOB.yaml

Runs a job file until its input ends; the summary goes to standard error.
With checkpoint.dir set, the job resumes from its newest complete checkpoint,
commits its output at each checkpoint, and on SIGTERM or Ctrl-C takes a
savepoint and exits 0 (a second signal stops it at once); SIGUSR1 (or weir
savepoint) takes a savepoint and goes on.

A job whose Kafka source names a group is one instance of a consumer group:
the instances share the topic's partitions, a task each, with the state in
the changelog topic. It runs until SIGTERM or Ctrl-C; then every task takes
a last checkpoint and the instance leaves the group.

Every string of the job file may read the environment: ${NAME}, or
${NAME:-default} when NAME is unset or empty; $$ is a dollar. An unset NAME
without a default is a bad job file (exit 2).

The console (http, or --http) answers only requests that name this machine
(localhost, an IP address, its listen host, or http.allowed_hosts); with
http.token every request but /healthz must carry the token (Authorization:
Bearer TOKEN, or open a page once with ?token=TOKEN). weir warns when it
listens beyond loopback without a token. Secrets (passwords, tokens, what
came from a variable into them) are never printed or served.

Files weir creates are its user's alone (0600, directories 0700);
file_mode: "0640" in the job file widens the outputs. weir deletes or
empties only what it wrote: its checkpoint directory must be new, empty or
marked by weir (WEIR-CHECKPOINTS).

Flags:
`)
		fs.PrintDefaults()
	}
	j, _, code, ok := loadJobArg(fs, args, stderr)
	if !ok {
		return code
	}
	// Nothing the run says shows a secret of the job file.
	stderr = j.RedactWriter(stderr)
	if *from != "" {
		if st, err := os.Stat(*from); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "weir: --from %s: not a checkpoint directory\n", *from)
			return 2
		}
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
	if *httpAddr != "" {
		j.HTTP = *httpAddr
	}
	opts := job.Options{Stdin: stdin, Stdout: stdout, Log: stderr, From: *from, NoSavepointOnStop: *noSavepoint, Console: j.HTTP != "", Force: *force, AcceptChangedInput: *acceptChanged}
	if j.Grouped() {
		if *from != "" {
			fmt.Fprintln(stderr, "weir: --from: a job in a consumer group starts each partition from its changelog topic")
			return 2
		}
		return runGroup(j, opts, stderr)
	}
	if *progress {
		opts.Progress = stderr
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := handleSignals(ctx, cancel, stderr)
	defer sig.stop()
	rn, err := job.Build(j, opts)
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		var je *job.Error
		if errors.As(err, &je) {
			return 2 // a file the job names is not its to write
		}
		return 1
	}
	sig.attach(rn.Engine().Control())
	if j.HTTP != "" {
		sctx, stopServer := context.WithCancel(context.Background())
		defer stopServer()
		addr, err := console.Listen(sctx, j.HTTP, rn.Console())
		if err != nil {
			fmt.Fprintln(stderr, "weir:", err)
			return 1
		}
		fmt.Fprintf(stderr, "weir: the console is on http://%s/ (metrics on /metrics, status on /api/status)\n", addr)
		if w := console.ExposureWarning(j.HTTP, j.ConsoleAccess()); w != "" {
			fmt.Fprintln(stderr, "weir:", w)
		}
	}
	if j.Checkpoint.Dir != "" {
		pidFile := writePID(j.Checkpoint.Dir)
		defer removePID(pidFile)
	}
	sum, err := rn.Run(ctx)
	if sum != nil && !*quiet {
		fmt.Fprint(stderr, sum.Text())
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	return 0
}

// runGroup runs an instance of a consumer-group job until SIGTERM or
// Ctrl-C: then each of its tasks takes a last checkpoint and it leaves the
// group.
func runGroup(j *job.Job, opts job.Options, stderr io.Writer) int {
	gr, err := job.NewGroup(j, opts)
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if j.HTTP != "" {
		addr, err := console.Listen(ctx, j.HTTP, gr.Console())
		if err != nil {
			fmt.Fprintln(stderr, "weir:", err)
			return 1
		}
		fmt.Fprintf(stderr, "weir: the instance's status is on http://%s/api/status (metrics on /metrics)\n", addr)
		if w := console.ExposureWarning(j.HTTP, j.ConsoleAccess()); w != "" {
			fmt.Fprintln(stderr, "weir:", w)
		}
	}
	term := make(chan os.Signal, 2)
	signal.Notify(term, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(term)
	go func() {
		<-term
		fmt.Fprintln(stderr, "weir: stopping: every task takes a last checkpoint, then the instance leaves the group")
		cancel()
		<-term
		fmt.Fprintln(stderr, "weir: second signal: exiting at once; the partitions resume from their changelog")
		os.Exit(1)
	}()
	if err := gr.Run(ctx); err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	return 0
}

// writePID writes the running job's process id into the checkpoint
// directory, for people and scripts (weir savepoint asks the lock).
func writePID(dir string) string {
	p := filepath.Join(dir, checkpoint.PIDName)
	_ = os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	return p
}

// removePID removes the pid file if it is still this process's.
func removePID(p string) {
	if b, err := os.ReadFile(p); err == nil && string(b) == strconv.Itoa(os.Getpid())+"\n" {
		os.Remove(p)
	}
}

// cmdSavepoint asks the job running with a checkpoint directory for a
// savepoint and waits for it.
func cmdSavepoint(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weir savepoint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Duration("timeout", time.Minute, "how long to wait for the savepoint")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir savepoint [flags] JOB.yaml\n\nAsks the running job (which must have checkpoint.dir) for a savepoint and prints its directory.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	j, pos, code, ok := loadJobArg(fs, args, stderr)
	if !ok {
		return code
	}
	if j.Checkpoint.Dir == "" {
		fmt.Fprintf(stderr, "weir: %s has no checkpoint.dir: it cannot take savepoints\n", pos[0])
		return 2
	}
	path, err := requestSavepoint(j.Checkpoint.Dir, *wait)
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	fmt.Fprintln(stdout, path)
	return 0
}

// requestSavepoint asks the process that holds the checkpoint directory's
// lock for a savepoint, and waits until a new savepoint is complete. A pid
// left behind by a job that was killed is never signalled: the lock tells a
// running job from a stale file.
func requestSavepoint(dir string, timeout time.Duration) (string, error) {
	pid, running, err := checkpoint.Holder(dir)
	if err != nil {
		return "", fmt.Errorf("cannot tell whether a job runs with %s: %v", dir, err)
	}
	if !running || pid <= 0 {
		return "", fmt.Errorf("no job is running with the checkpoint directory %s", dir)
	}
	before := newestSavepoint(dir)
	if err := askSavepoint(pid); err != nil {
		return "", fmt.Errorf("cannot signal the job (pid %d): %v", pid, err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if sp := newestSavepoint(dir); sp != before {
			if _, err := checkpoint.Load(checkpoint.OSFS, sp); err == nil {
				return sp, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", fmt.Errorf("no savepoint appeared within %s", timeout)
}

func newestSavepoint(dir string) string {
	entries, _ := os.ReadDir(filepath.Join(dir, "savepoints"))
	newest := ""
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "sp-") && e.Name() > filepath.Base(newest) {
			newest = filepath.Join(dir, "savepoints", e.Name())
		}
	}
	return newest
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, and returns those. When parsing stops (bad flags, or
// -h), ok is false and code is the exit status: 0 for help, 2 otherwise.
// loadJobArg parses a command's flags and its one argument, the job file, and
// loads the job; when ok is false the command exits with code (2: a usage
// or job-file error, said on stderr; 0: --help).
func loadJobArg(fs *flag.FlagSet, args []string, stderr io.Writer) (j *job.Job, pos []string, code int, ok bool) {
	pos, code, ok = parseInterspersed(fs, args)
	if !ok {
		return nil, nil, code, false
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, nil, 2, false
	}
	j, err := job.Load(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return nil, nil, 2, false
	}
	return j, pos, 0, true
}

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
