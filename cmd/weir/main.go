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
	"net"
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
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
)

// command is one of weir's commands.
type command struct {
	name  string
	args  string // what follows the name in its usage line
	about string // what it does, in a line or two
	run   func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands are weir's commands, in the order the usage lists them (set in
// init: completion reads them).
var commands []command

func init() {
	commands = []command{
		{"run", "[flags] JOB.yaml", "run a job file (see docs/job-file.md for its fields)", cmdRun},
		{"lint", "[flags] JOB.yaml", "check a job file and the first lines of its\ninput: typos, fields that never occur", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdLint(a, o, e) }},
		{"plan", "[flags] JOB.yaml", "print the plan a job file compiles to: its\nsources, aggregations and sinks", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdPlan(a, o, e) }},
		{"savepoint", "JOB.yaml | inspect DIR", "ask the running job for a savepoint; inspect:\nwhat a savepoint holds", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdSavepoint(a, o, e) }},
		{"status", "JOB.yaml", "the running job's partitions, watermark and\ncounts (from its console)", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdStatus(a, o, e) }},
		{"simulator", "[flags]", "serve the watermark simulator, computed by weir", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdSimulator(a, o, e) }},
		{"gen", "steep|orders|nexmark|ledger|ledger-events [flags]", "write a realistic stream of JSON lines", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdGen(a, o, e) }},
		{"lateness", "[flags] FILE", "measure how late a recorded stream is, and\nrecommend a watermark delay", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdLateness(a, o, e) }},
		{"reconcile", "--ledger FILE... JOB.yaml", "correct the job's table from a retained ledger", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdReconcile(a, o, e) }},
		{"bench", "[flags]", "run the benchmarks (from the repository's root)", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdBench(a, o, e) }},
		{"kafka", "[flags]", "a development Kafka broker on 127.0.0.1 with\nthe fraud demo's topics (--orders: orders live)", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdKafka(a, o, e) }},
		{"schema", "", "print the JSON schema of job files, for editors", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdSchema(a, o, e) }},
		{"completion", "bash|zsh|fish", "print the shell completion script", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdCompletion(a, o, e) }},
		{"version", "[--deps]", "the version, commit and Go it was built with", func(a []string, _ io.Reader, o, e io.Writer) int { return cmdVersion(a, o, e) }},
		{"help", "", "this text", func(_ []string, _ io.Reader, o, _ io.Writer) int { fmt.Fprint(o, usageText()); return 0 }},
	}
}

// exitCodes is the one table of exit statuses, for every command.
const exitCodes = `Exit status, for every command:
  0  done
  1  a failure while running: an output or a checkpoint that cannot be
     written, a job stopped by its failure, a job that answers no status,
     weir lint finding a problem in its sample
  2  bad flags or arguments, or a bad job file (a one-line error naming the
     file, line and field): nothing was run or written
`

// usageText is weir's usage, from the table of commands.
func usageText() string {
	var b strings.Builder
	b.WriteString("weir: event-time stream processing\n\nUsage:\n")
	for _, c := range commands {
		head := "  weir " + c.name
		if c.args != "" {
			head += " " + c.args
		}
		lines := strings.Split(c.about, "\n")
		if len(head) > 30 {
			fmt.Fprintf(&b, "%s\n", head)
			head = ""
		}
		for i, l := range lines {
			if i > 0 {
				head = ""
			}
			fmt.Fprintf(&b, "%-31s%s\n", head, l)
		}
	}
	b.WriteString("\nFlags may come before or after the arguments. weir COMMAND --help says\nwhat a command's flags are.\n\n")
	b.WriteString(exitCodes)
	return b.String()
}

var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText())
		return 2
	}
	switch args[0] {
	case "--version":
		return cmdVersion(args[1:], stdout, stderr)
	case "-h", "--help":
		fmt.Fprint(stdout, usageText())
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdin, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "weir: unknown command %q\n\n%s", args[0], usageText())
	return 2
}

// flagsOf runs a command with --help and returns its flag set: completion
// and the tests read a command's flags from the one place that defines
// them. Not safe to call concurrently.
func flagsOf(c command) *flag.FlagSet {
	capturing, captured = true, nil
	defer func() { capturing = false }()
	c.run([]string{"--help"}, strings.NewReader(""), io.Discard, io.Discard)
	return captured
}

var (
	capturing bool          // flagsOf is asking
	captured  *flag.FlagSet // the first flag set the command made
)

// newFlagSet is a command's flag set, its errors and usage on stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if capturing && captured == nil {
		captured = fs
	}
	return fs
}

// setFlag collects --set path=value, repeatable.
type setFlag []string

func (s *setFlag) String() string     { return strings.Join(*s, " ") }
func (s *setFlag) Set(v string) error { *s = append(*s, v); return nil }

// addSetFlag adds --set to a command that reads a job file.
func addSetFlag(fs *flag.FlagSet) {
	fs.Var(new(setFlag), "set", "override a field of the job file: `path=value`, such as window.tumbling=5m or output[1].sqlite.path=x.db (repeat for more)")
}

func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir run", stderr)
	quiet := fs.Bool("quiet", false, "do not print the summary on standard error, nor a live job's lines of progress")
	progress := fs.Bool("progress", isTerminal(stderr), "show progress on standard error (default: when it is a terminal)")
	progressEvery := fs.Duration("progress-every", 30*time.Second, "without --progress, a live job logs a line of progress this often (read, accepted, late, panes, watermark, backlog); 0: never")
	from := fs.String("from", "", "restore from this checkpoint or savepoint `directory` instead of the newest checkpoint")
	noSavepoint := fs.Bool("no-savepoint-on-stop", false, "on SIGTERM or Ctrl-C, stop without taking a savepoint")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to `file` (for go tool pprof)")
	httpAddr := fs.String("http", "", "serve /metrics, /api/status, /healthz, /readyz and the web console on `host:port` (overrides the job file's http address; its token and allowed hosts stay); the console stays up after the input ends, until Ctrl-C")
	acceptChanged := fs.Bool("accept-changed-input", false, "read an input file that is not the one the restored checkpoint read (regenerated or replaced since) from its start, instead of refusing to resume")
	force := fs.Bool("force", false, "take existing output files over even when weir has no record of writing them (weir never overwrites or cuts back a file it cannot prove it wrote, unless told so)")
	check := fs.Bool("check", false, "check the job file and a sample of its input as weir lint does, and exit without running; with --from, say instead what of the checkpoint's state carries over into the job, what restarts and what is refused (exit 1)")
	dropState := fs.String("drop-state", "", "on restoring a checkpoint whose windows, ids or join buffers cannot carry over (window, key, time or id field changed, a join of another kind), start them afresh: `windows`, dedup, join, or a list (windows,dedup); the positions and the rest carry over")
	sample := fs.Int("sample", job.DefaultSample, "with --check: how many lines of the input to read")
	printConfig := fs.Bool("print-config", false, "print the job file as weir reads it (--set applied, ${NAME} expanded, secrets hidden) and exit")
	fresh := fs.Bool("fresh", false, "start from the beginning whatever the checkpoint directory holds: its checkpoints are left behind (kept, never restored) and every output gets every result again (a topic holds the earlier runs' too); how to run again a finished job whose outputs cannot take back what it wrote")
	allowAll := fs.Bool("allow-all-quarantined", false, fmt.Sprintf("run to its end a job whose first %d lines are all quarantined (by default it stops: a misspelt key or time field rejects every line)", job.AllQuarantinedLines))
	addSetFlag(fs)
	lf := addLogFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: weir run [flags] JOB.yaml

Runs a job file until its input ends; the summary goes to standard error.
With checkpoint.dir set, the job resumes from its newest complete checkpoint,
commits its output at each checkpoint, and on SIGTERM or Ctrl-C takes a
savepoint and exits 0 (a second signal stops it at once); SIGUSR1 (or weir
savepoint) takes a savepoint and goes on.

A live job (a topic, MQTT, a followed file) says when its first panes can
come, and logs a line of progress every 30s (--progress-every) unless
standard error is a terminal, which shows the progress line instead, or
--quiet.

A job whose Kafka source names a group is one instance of a consumer group:
the instances share the topic's partitions, a task each, with the state in
the changelog topic. It runs until SIGTERM or Ctrl-C; then every task takes
a last checkpoint and the instance leaves the group.

Every string of the job file may read the environment: ${NAME}, or
${NAME:-default} when NAME is unset or empty; $$ is a dollar. An unset NAME
without a default is a bad job file (exit 2). --set path=value overrides a
field (applied before ${NAME} is read); --print-config shows the result.

After its first %d lines the job says what they show, as weir lint does (a
field it names that never occurs, an aggregate whose field is never a
number); a job whose first %d lines are all quarantined stops (exit 1),
naming the commonest reason.

Logs go to standard error, one record a line with its time and level
(--log-format text or json); warnings are at level warn.

The console (http, or --http) answers only requests that name this machine
(localhost, an IP address, its listen host, or http.allowed_hosts); with
http.token every request but /healthz and /readyz must carry the token
(Authorization: Bearer TOKEN, or open a page once with ?token=TOKEN). weir
warns when it listens beyond loopback without a token. Secrets (passwords,
tokens, what came from a variable into them) are never printed or served.

Files weir creates are its user's alone (0600, directories 0700);
file_mode: "0640" in the job file widens the outputs. weir deletes or
empties only what it wrote: its checkpoint directory must be new, empty or
marked by weir (WEIR-CHECKPOINTS).

%s
Flags:
`, job.DefaultSample, job.AllQuarantinedLines, exitCodes)
		fs.PrintDefaults()
	}
	j, pos, code, ok := loadJobArg(fs, args, stderr)
	if !ok {
		return code
	}
	if *printConfig {
		stdout.Write(j.Resolved())
		return 0
	}
	var drop []string
	if *dropState != "" {
		drop = strings.Split(*dropState, ",")
		if err := engine.CheckDropState(drop); err != nil {
			fmt.Fprintln(stderr, "weir: --drop-state:", err)
			return 2
		}
	}
	if *fresh && *from != "" {
		fmt.Fprintln(stderr, "weir: --fresh and --from: start from the beginning, or from a checkpoint, not both")
		return 2
	}
	if *progressEvery < 0 {
		fmt.Fprintln(stderr, "weir: --progress-every: must not be negative (0: never)")
		return 2
	}
	if *check && *from != "" {
		return checkRestore(j, *from, drop, stdout, stderr)
	}
	if *check {
		return lint(j, pos[0], *sample, false, stdout)
	}
	logger, err := lf.logger(stderr, j.Name)
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 2
	}
	// Nothing the run says shows a secret of the job file.
	log := newLogWriter(logger, j.Name, j.Redact)
	defer log.Flush()
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
			fmt.Fprintln(stderr, "weir: --cpuprofile:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "weir: --cpuprofile:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	keepConsole := false
	if *httpAddr != "" {
		j.HTTP, keepConsole = *httpAddr, true
	}
	opts := job.Options{Stdin: stdin, Stdout: stdout, Log: log, From: *from, NoSavepointOnStop: *noSavepoint, Console: j.HTTP != "",
		Force: *force, AcceptChangedInput: *acceptChanged, AllowAllQuarantined: *allowAll, DropState: drop, Fresh: *fresh}
	if j.Grouped() {
		if *from != "" || *fresh {
			fmt.Fprintln(stderr, "weir: --from, --fresh: a job in a consumer group starts each partition from its changelog topic")
			return 2
		}
		return runGroup(j, pos[0], opts, log)
	}
	if *progress {
		opts.Progress = stderr
	} else if !*quiet {
		opts.ProgressEvery = *progressEvery
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := handleSignals(ctx, cancel, log)
	defer sig.stop()
	rn, err := job.Build(j, opts)
	if err != nil {
		log.Error(err.Error())
		var je *jobfile.Error
		if errors.As(err, &je) {
			return 2 // a file the job names is not its to write
		}
		return 1
	}
	sig.attach(rn.Engine().Control())
	var srv *console.Server
	var addr net.Addr
	if j.HTTP != "" {
		sctx, stopServer := context.WithCancel(context.Background())
		defer stopServer()
		srv = rn.Console()
		srv.CheckpointInterval = time.Duration(j.Checkpoint.Interval) * time.Millisecond
		if addr, err = console.Listen(sctx, j.HTTP, srv); err != nil {
			log.Error(err.Error())
			return 1
		}
		log.Info("the console is on http://%s/ (metrics on /metrics, status on /api/status)", addr)
		if w := console.ExposureWarning(j.HTTP, job.ConsoleAccess(j)); w != "" {
			log.Warn("%s", w)
		}
		defer recordAddress(pos[0], addr)()
	}
	if j.Checkpoint.Dir != "" {
		pidFile := writePID(j.Checkpoint.Dir)
		defer removePID(pidFile)
	}
	sum, err := rn.Run(ctx)
	if sum != nil && !*quiet {
		log.Lines(sum.Text())
	}
	if err != nil {
		log.Error(err.Error())
		return 1
	}
	if keepConsole && ctx.Err() == nil {
		// weir run --http: the console stays up, with the job's last
		// status, until Ctrl-C.
		srv.Ended(rn.Engine())
		log.Info("the input has ended; the console stays up on http://%s/ until Ctrl-C", addr)
		<-ctx.Done()
	}
	return 0
}

// checkRestore prints what restoring the checkpoint from into j does with
// its state, running nothing and writing nothing (weir run --from DIR
// --check): 0 when it restores, 1 when it is refused (the refusal on
// stderr), 2 when from is not a checkpoint.
func checkRestore(j *jobfile.Job, from string, drop []string, stdout, stderr io.Writer) int {
	if st, err := os.Stat(from); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "weir: --from %s: not a checkpoint directory\n", from)
		return 2
	}
	r, err := job.CheckRestore(j, from, drop)
	if r != nil {
		fmt.Fprintf(stdout, "restoring %s (layout %d) into %s:\n", from, r.Layout, j.File)
		fmt.Fprint(stdout, r.Say(job.DropFlag))
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
func runGroup(j *jobfile.Job, jobFile string, opts job.Options, log *logWriter) int {
	gr, err := job.NewGroup(j, opts)
	if err != nil {
		log.Error(err.Error())
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if j.HTTP != "" {
		addr, err := console.Listen(ctx, j.HTTP, gr.Console())
		if err != nil {
			log.Error(err.Error())
			return 1
		}
		log.Info("the console is on http://%s/ (metrics on /metrics, status on /api/status)", addr)
		if w := console.ExposureWarning(j.HTTP, job.ConsoleAccess(j)); w != "" {
			log.Warn("%s", w)
		}
		defer recordAddress(jobFile, addr)()
	}
	term := make(chan os.Signal, 2)
	signal.Notify(term, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(term)
	go func() {
		<-term
		log.Info("stopping: every task takes a last checkpoint, then the instance leaves the group")
		cancel()
		<-term
		log.Info("second signal: exiting at once; the partitions resume from their changelog")
		log.Flush()
		os.Exit(1)
	}()
	if err := gr.Run(ctx); err != nil {
		log.Error(err.Error())
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
	if len(args) > 0 && args[0] == "inspect" {
		return cmdInspect(args[1:], stdout, stderr)
	}
	fs := newFlagSet("weir savepoint", stderr)
	wait := fs.Duration("timeout", time.Minute, "how long to wait for the savepoint")
	addSetFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: weir savepoint [flags] JOB.yaml\n       weir savepoint inspect DIR\n\nAsks the running job (which must have checkpoint.dir) for a savepoint and prints its directory.\nweir savepoint inspect prints what a savepoint or checkpoint holds (see weir savepoint inspect --help).\n\nFlags:\n")
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

// cmdInspect prints what a checkpoint or savepoint holds: its job and
// fingerprint, every operator with its state's size and keys, every
// source's position, every sink's pending commits.
func cmdInspect(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir savepoint inspect", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: weir savepoint inspect DIR

Prints what the savepoint or checkpoint in DIR holds, reading nothing else
and writing nothing: the job's name and fingerprint, every operator with the
size of its state and its keys (and a window's layout and aggregates), every
source's position and every sink's commits not known to be done.

`+exitCodes)
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	if st, err := os.Stat(pos[0]); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "weir: %s: not a checkpoint directory\n", pos[0])
		return 2
	}
	text, err := job.Inspect(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	fmt.Fprint(stdout, text)
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

// loadJobArg parses a command's flags and its one argument, the job file, and
// loads the job (with the command's --set, if it has the flag); when ok is
// false the command exits with code (2: a usage or job-file error, said on
// stderr; 0: --help).
func loadJobArg(fs *flag.FlagSet, args []string, stderr io.Writer) (j *jobfile.Job, pos []string, code int, ok bool) {
	pos, code, ok = parseInterspersed(fs, args)
	if !ok {
		return nil, nil, code, false
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, nil, 2, false
	}
	var o jobfile.LoadOptions
	if f := fs.Lookup("set"); f != nil {
		o.Set = *f.Value.(*setFlag)
	}
	j, err := jobfile.LoadWith(pos[0], o)
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return nil, nil, 2, false
	}
	return j, pos, 0, true
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
