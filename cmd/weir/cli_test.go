package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/reconcile"
)

// fraudDir copies the fraud example into a new directory, with its job
// file changed by the replacements (old, new, ...).
func fraudDir(t *testing.T, replace ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"job.yaml", "orders.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../examples/fraud", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "job.yaml" {
			for i := 0; i+1 < len(replace); i += 2 {
				if !bytes.Contains(b, []byte(replace[i])) {
					t.Fatalf("the example has no %q", replace[i])
				}
				b = bytes.Replace(b, []byte(replace[i]), []byte(replace[i+1]), 1)
			}
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	return dir
}

// recipeCopy copies files of the cookbook's recipe into a directory of
// their own, with an out directory, old replaced by new in the first place
// it stands.
func recipeCopy(t *testing.T, recipe, old, new string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("../../examples", recipe, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), bytes.Replace(b, []byte(old), []byte(new), 1), 0o644)
	}
	return dir
}

// weir lint reads the sample by each aggregation of a job of several, and
// names a typo in one under its name; what they find alike it says once.
func TestLintSeveralAggregations(t *testing.T) {
	dir := recipeCopy(t, "two-aggregations", "sold: sum(amount)", "sold: sum(amout)", "job.yaml", "orders.jsonl")
	code, stdout, _ := runCLI(t, dir, "lint", "job.yaml")
	want := `job.yaml: the job file is valid
sample: the first 12 lines of orders.jsonl
quarantined: 8.33% of the lines sampled: not_json 1 (the first at line 7)
job.yaml:21: aggregations.per_merchant.aggregates.sold: sum(amout): the field "amout" occurs in none of the 12 lines sampled (did you mean "amount"?)
job.yaml: warning: no late_output: too-late events are dropped; they are counted, but they are lost (send them to a late_output to correct the results later)
`
	if code != 1 || stdout != want {
		t.Errorf("exit %d\n%s\nwant:\n%s", code, stdout, want)
	}
}

// weir lint names a misspelt field of a temporal join's deletion, which a
// run would not: a record without the field is a version, so no record
// would ever delete its key's row.
func TestLintTemporalJoinDeletion(t *testing.T) {
	dir := recipeCopy(t, "card-limits", "op == 'close'", "opp == 'close'", "job.yaml", "orders.jsonl", "limits.jsonl")
	code, stdout, _ := runCLI(t, dir, "lint", "job.yaml")
	want := `job.yaml: the job file is valid
sample: the first 6 lines of orders.jsonl
quarantined: none of the lines sampled
sample: the first 5 lines of limits.jsonl
quarantined: none of the lines sampled
job.yaml:16: join.with.deletion: the field "opp" occurs in none of the 5 lines sampled (did you mean "op"?)
`
	if code != 1 || stdout != want {
		t.Errorf("exit %d\n%s\nwant:\n%s", code, stdout, want)
	}
}

// weir lint finds the typos that a run would not: a sum of a field that
// never occurs (every spent 0), a key that never occurs (every line
// quarantined), an event-time field that never occurs; on the example's
// own input, with the closest field that does occur. weir run --check says
// the same.
func TestLintExample(t *testing.T) {
	dir := fraudDir(t)
	code, stdout, stderr := runCLI(t, dir, "lint", "job.yaml")
	want := `job.yaml: the job file is valid
sample: the first 1000 lines of orders.jsonl
quarantined: none of the lines sampled
`
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("the example: exit %d\n%s%s\nwant:\n%s", code, stdout, stderr, want)
	}
	dir = fraudDir(t, "sum(amount)", "sum(amout)", "key: card", "key: crad")
	for _, args := range [][]string{{"lint", "job.yaml"}, {"run", "--check", "job.yaml"}, {"lint", "job.yaml", "--sample", "1000"}} {
		code, stdout, _ = runCLI(t, dir, args...)
		want = `job.yaml: the job file is valid
sample: the first 1000 lines of orders.jsonl
quarantined: 100.00% of the lines sampled: no_key 1000 (the first at line 1)
job.yaml:8: key: the field "crad" occurs in none of the 1000 lines sampled (did you mean "card"?)
job.yaml:14: aggregates.spent: sum(amout): the field "amout" occurs in none of the 1000 lines sampled (did you mean "amount"?)
job.yaml: every one of the 1000 lines sampled would be quarantined: no_key 1000 (the first at line 1)
`
		if code != 1 || stdout != want {
			t.Errorf("%v: exit %d\n%s\nwant:\n%s", args, code, stdout, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("weir lint wrote files: %v", entries)
	}
	dir = fraudDir(t, "field: ts,", "field: tss,", "sum(amount)", "sum(user_id)")
	code, stdout, _ = runCLI(t, dir, "lint", "--sample", "50", "job.yaml")
	want = `job.yaml: the job file is valid
sample: the first 50 lines of orders.jsonl
quarantined: 100.00% of the lines sampled: no_event_time 50 (the first at line 1)
job.yaml:7: time.field: the field "tss" occurs in none of the 50 lines sampled (did you mean "ts"?)
job.yaml:14: aggregates.spent: sum(user_id): "user_id" is never a number in the 50 lines sampled (string in 50): such lines are quarantined as bad_value
job.yaml: every one of the 50 lines sampled would be quarantined: no_event_time 50 (the first at line 1)
`
	if code != 1 || stdout != want {
		t.Errorf("tss: exit %d\n%s\nwant:\n%s", code, stdout, want)
	}
	// A bad job file is a bad job file: exit 2, one line.
	dir = fraudDir(t, "window:", "windw:")
	if code, stdout, stderr := runCLI(t, dir, "lint", "job.yaml"); code != 2 || stdout != "" ||
		stderr != "weir: job.yaml:13: windw: unknown field \"windw\" (did you mean \"window\"?)\n" {
		t.Errorf("typo: exit %d %q %q", code, stdout, stderr)
	}
}

// A run says at start what its first lines show, as weir lint does; a job
// that quarantines every line stops with exit 1 and the commonest reason,
// after 10,000 lines or at the end of a shorter input, unless
// --allow-all-quarantined.
func TestRunStopsWhenAllQuarantined(t *testing.T) {
	dir := fraudDir(t, "sum(amount)", "sum(amout)", "key: card", "key: crad")
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	for _, want := range []string{
		`WARN  fraud-alerts: key: the field "crad" occurs in none of the first 1000 lines (did you mean "card"?)`,
		`WARN  fraud-alerts: aggregates.spent: sum(amout): the field "amout" occurs in none of the first 1000 lines (did you mean "amount"?)`,
		`ERROR fraud-alerts: every one of the 5018 lines read was quarantined: no_key 5016 (the first at line 1), implausible_event_time 1 (the first at line 2009), not_json 1 (the first at line 1004); key: the field "crad" occurs in none of the 5018 lines read (did you mean "card"?); aggregates.spent: sum(amout): the field "amout" occurs in none of the 5018 lines read (did you mean "amount"?); the job failed (weir run --allow-all-quarantined runs it all the same)`,
	} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want %s in:\n%s", code, want, stderr)
		}
	}
	if code, _, stderr := runCLI(t, dir, "run", "--allow-all-quarantined", "--force", "job.yaml"); code != 0 || !strings.Contains(stderr, "5018 quarantined") {
		t.Errorf("--allow-all-quarantined: exit %d:\n%s", code, stderr)
	}

	// 12,000 lines, none with the key: the job stops after 10,000.
	dir = t.TempDir()
	var in strings.Builder
	for i := range 12_000 {
		fmt.Fprintf(&in, `{"k":"a","ts":"2026-01-01T00:00:%02dZ","at":"2026-01-01T00:00:%02dZ"}`+"\n", i%60, i%60)
	}
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(strings.Replace(jobText, "key: k", "key: card", 1)), 0o644)
	code, _, stderr = runCLI(t, dir, "run", "job.yaml")
	want := `every one of the first 10000 lines was quarantined: no_key 10000 (the first at line 1); key: the field "card" occurs in none of the first 10000 lines; the job stops (weir run --allow-all-quarantined runs it all the same)`
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %s in:\n%s", code, want, stderr)
	}
	if code, _, stderr := runCLI(t, dir, "run", "--allow-all-quarantined", "--force", "job.yaml"); code != 0 || !strings.Contains(stderr, "read 12000 lines") ||
		!strings.Contains(stderr, "12000 quarantined (no_key 12000)") {
		t.Errorf("--allow-all-quarantined: exit %d:\n%s", code, stderr)
	}
}

// --set overrides a field of the job file; --print-config and lint
// --resolved print the file as weir reads it, and that file read again is
// the same job.
func TestSetAndPrintConfig(t *testing.T) {
	dir := fraudDir(t)
	t.Setenv("WEIR_TEST_DELAY", "5s")
	code, stdout, stderr := runCLI(t, dir, "run", "job.yaml", "--set", "window.tumbling=5m", "--set", "watermark.delay=${WEIR_TEST_DELAY}",
		"--set", "output[1].sqlite.path=other.db", "--print-config")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"window: {tumbling: 5m}\n", "watermark: {delay: 5s, interval: 200ms}\n", "- sqlite: {path: other.db, table: alerts}", "having: \"orders >= 5\""} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, stdout)
		}
	}
	os.WriteFile(filepath.Join(dir, "resolved.yaml"), []byte(stdout), 0o644)
	if code, again, _ := runCLI(t, dir, "run", "--print-config", "resolved.yaml"); code != 0 || again != stdout {
		t.Errorf("read again: exit %d\n%s\nwant\n%s", code, again, stdout)
	}
	code, lint, _ := runCLI(t, dir, "lint", "--resolved", "--set", "window.tumbling=5m", "--set", "watermark.delay=5s", "--set", "output[1].sqlite.path=other.db", "job.yaml")
	if _, resolved, _ := strings.Cut(lint, "# job.yaml as weir reads it\n"); code != 0 || resolved != stdout {
		t.Errorf("lint --resolved: exit %d\n%s", code, lint)
	}
	// A --set that does not apply is a bad job file, naming the field.
	if code, _, stderr := runCLI(t, dir, "run", "--set", "window.tumblin=5m", "job.yaml"); code != 2 ||
		stderr != "weir: job.yaml: window.tumblin: unknown field \"tumblin\" (did you mean \"tumbling\"?)\n" {
		t.Errorf("bad --set: exit %d %q", code, stderr)
	}
	// The run does what the file as set says.
	want := `{"key":"card_00002746","window_start":"2026-09-01T00:55:00.000Z","window_end":"2026-09-01T01:00:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-09-01T01:02:56.221Z","emitted_at":"2026-09-01T01:02:58.400Z","orders":30,"spent":773.3,"biggest":43.1}` + "\n"
	if code, stdout, stderr := runCLI(t, dir, "run", "--quiet", "--set", "window.tumbling=5m", "--set", "output=[\"-\"]", "--set", "having=orders >= 30", "job.yaml"); code != 0 || stdout != want {
		t.Errorf("run with --set: exit %d\n%s%s\nwant\n%s", code, stdout, stderr, want)
	}
}

// --print-config never shows a password of a connection string, in any
// form pgx reads: a URL password with a % that is not an escape (refused
// as a bad job file, exit 2, naming the field, before anything starts),
// written %25 (shown redacted), and a password both in the user
// information and in a parameter (both redacted).
func TestPrintConfigHidesEveryDSNPassword(t *testing.T) {
	dir := setup(t, jobText)
	job := func(dsns ...string) string {
		var outs []string
		for i, d := range dsns {
			outs = append(outs, fmt.Sprintf("{postgres: {dsn: %q, table: t%d}}", d, i))
		}
		return strings.Replace(jobText, "output: results.jsonl", "output: ["+strings.Join(outs, ", ")+"]", 1)
	}
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(job("postgres://weir:50%off@localhost/db")), 0o644)
	code, stdout, stderr := runCLI(t, dir, "run", "--print-config", "bad.yaml")
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "weir: bad.yaml:") || !strings.Contains(stderr, "output[0].postgres.dsn: not a connection string pgx can read") ||
		strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "50%off") {
		t.Errorf("a URL with a %% that is no escape: exit %d\n%s%s", code, stdout, stderr)
	}
	os.WriteFile(filepath.Join(dir, "good.yaml"), []byte(job("postgres://weir:50%25off@localhost/db", "postgres://weir:userinfo-pw@localhost/db?password=param-pw&sslmode=disable")), 0o644)
	code, stdout, stderr = runCLI(t, dir, "run", "--print-config", "good.yaml")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, secret := range []string{"50%25off", "50%off", "userinfo-pw", "param-pw"} {
		if strings.Contains(stdout, secret) {
			t.Errorf("--print-config shows %q:\n%s", secret, stdout)
		}
	}
	for _, want := range []string{`"postgres://weir:[redacted]@localhost/db"`, `"postgres://weir:[redacted]@localhost/db?password=[redacted]&sslmode=disable"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--print-config lacks %s:\n%s", want, stdout)
		}
	}
}

// Every command takes its flags before or after its arguments: a flag
// after the arguments is read as a flag (an unknown one is refused, exit
// 2), and one of its own does what it says.
func TestFlagsAfterArguments(t *testing.T) {
	dir := setup(t, jobText)
	// For every command: its arguments, then a flag of its own, and what
	// must come out with it.
	cases := map[string]struct {
		args []string
		code int
		out  string // in standard output, or error
	}{
		"run":        {[]string{"job.yaml", "--print-config"}, 0, "name: t\n"},
		"lint":       {[]string{"job.yaml", "--sample", "2"}, 0, "sample: the first 2 lines of input.jsonl"},
		"plan":       {[]string{"job.yaml", "--set", "name=p"}, 0, "plan of p: 5 nodes"},
		"savepoint":  {[]string{"job.yaml", "--timeout", "1s"}, 2, "has no checkpoint.dir"},
		"status":     {[]string{"job.yaml", "--http", "127.0.0.1:1"}, 1, "no job answers on 127.0.0.1:1"},
		"simulator":  {[]string{"--http", "nonsense"}, 1, "nonsense"},
		"gen":        {[]string{"orders", "--events", "2"}, 0, `"order_id":"o000000002"`},
		"lateness":   {[]string{"input.jsonl", "--arrival", "at", "--format", "csv"}, 0, "delay"},
		"reconcile":  {[]string{"job.yaml", "--ledger", "input.jsonl"}, 2, "writes to no table"},
		"bench":      {[]string{"--list"}, 0, "tumbling"},
		"kafka":      {[]string{"--rate", "0"}, 2, "Usage: weir kafka"},
		"schema":     {nil, 0, `"title": "weir job file"`},
		"completion": {[]string{"fish"}, 0, "complete -c weir"},
		"version":    {[]string{"--deps"}, 0, "weir " + version},
		"help":       {nil, 0, "Exit status, for every command"},
	}
	for _, c := range commands {
		tc, ok := cases[c.name]
		if !ok {
			t.Errorf("weir %s: no case in this test", c.name)
			continue
		}
		code, stdout, stderr := runCLI(t, dir, append([]string{c.name}, tc.args...)...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.out) {
			t.Errorf("weir %s %s: exit %d, want %d and %q:\n%s%s", c.name, strings.Join(tc.args, " "), code, tc.code, tc.out, stdout, stderr)
		}
		if c.name == "help" {
			continue
		}
		// An unknown flag after the arguments is a flag, and a usage error.
		code, _, stderr = runCLI(t, dir, append(append([]string{c.name}, tc.args...), "--no-such-flag")...)
		if code != 2 || !strings.Contains(stderr, "flag provided but not defined: -no-such-flag") {
			t.Errorf("weir %s ... --no-such-flag: exit %d: %s", c.name, code, stderr)
		}
		// --help is a success.
		if code, _, stderr := runCLI(t, dir, c.name, "--help"); code != 0 || !strings.Contains(stderr, "Usage: weir "+c.name) {
			t.Errorf("weir %s --help: exit %d: %s", c.name, code, stderr)
		}
	}
}

// weir version says the version, the module, the commit and the Go that
// built it, from the build information.
func TestVersion(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/weirstream/weir", Version: "v0.1.0"},
		Deps: []*debug.Module{{Path: "github.com/twmb/franz-go", Version: "v1.22.3"}},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "ffe1507"}, {Key: "vcs.time", Value: "2026-12-01T20:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "weir " + version + "\nmodule: github.com/weirstream/weir v0.1.0\ncommit: ffe1507 (2026-12-01T20:00:00Z), with changes not committed\ngo: go1.26.8 linux/arm64\n"
	if got := versionText(info, false); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := versionText(info, true); got != want+"dep: github.com/twmb/franz-go v1.22.3\n" {
		t.Errorf("--deps:\n%s", got)
	}
	info.Settings = nil
	if got := versionText(info, false); !strings.Contains(got, "commit: unknown (built without version control information)\ngo: go1.26.8 "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("without vcs:\n%s", got)
	}
	// The built command reads its own build information.
	out, err := exec.Command(clitest.Bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "weir "+version+"\nmodule: github.com/weirstream/weir ") || !strings.Contains(string(out), "\ngo: "+runtime.Version()+" ") {
		t.Errorf("weir version: %v\n%s", err, out)
	}
}

// The completion scripts know every command and every flag; bash's
// completes commands, flags, flag values and job files.
func TestCompletion(t *testing.T) {
	cmds := completionCommands()
	var bash, zsh, fish string
	for shell, dst := range map[string]*string{"bash": &bash, "zsh": &zsh, "fish": &fish} {
		code, out, stderr := runCLI(t, t.TempDir(), "completion", shell)
		if code != 0 || stderr != "" {
			t.Fatalf("%s: exit %d %s", shell, code, stderr)
		}
		*dst = out
	}
	for _, c := range cmds {
		if !strings.Contains(zsh, "'"+c.name+":") || !strings.Contains(fish, "-a "+c.name+" ") {
			t.Errorf("%s missing in zsh or fish", c.name)
		}
		for _, f := range c.flags {
			if !strings.Contains(bash, "--"+f.name) || !strings.Contains(zsh, "'--"+f.name+"[") ||
				!strings.Contains(fish, "'__fish_seen_subcommand_from "+c.name+"' -l "+f.name+" ") {
				t.Errorf("weir %s --%s missing in a script", c.name, f.name)
			}
		}
	}
	if len(cmds) != len(commands) || len(cmds[0].flags) < 15 {
		t.Errorf("commands %d, run's flags %d", len(cmds), len(cmds[0].flags))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fraud.yaml"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "weir.bash"), []byte(bash), 0o644)
	complete := func(words ...string) []string {
		script := fmt.Sprintf("source weir.bash\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_weir\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n", quoteWords(words), len(words)-1)
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		return got
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"weir", "r"}, "reconcile run"},
		{[]string{"weir", "run", "--log-f"}, "--log-format"},
		{[]string{"weir", "run", "--log-format", ""}, "json text"},
		{[]string{"weir", "gen", ""}, "ledger ledger-checkouts ledger-events nexmark orders steep"},
		{[]string{"weir", "lint", ""}, "fraud.yaml"},
		{[]string{"weir", "completion", "z"}, "zsh"},
	} {
		if got := strings.Join(complete(c.words...), " "); got != c.want {
			t.Errorf("%v: %q, want %q", c.words, got, c.want)
		}
	}
}

func quoteWords(ws []string) string {
	var q []string
	for _, w := range ws {
		q = append(q, "'"+w+"'")
	}
	return strings.Join(q, " ")
}

// Logs: one record a line, with its time and level, as text or JSON; a
// warning at level warn; --log-level leaves the lesser ones out.
func TestLogFormats(t *testing.T) {
	dir := setup(t, strings.Replace(jobText, "late_output: late.jsonl\n", "", 1))
	code, _, stderr := runCLI(t, dir, "run", "job.yaml")
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO |WARN |ERROR) t: `)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], " WARN  t: no late_output: too-late events are dropped") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("not a log line: %q", l)
		}
	}
	code, _, stderr = runCLI(t, dir, "run", "--force", "--log-format", "json", "job.yaml")
	var levels []string
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var r struct{ Time, Level, Msg, Job string }
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Time == "" || r.Job != "t" || r.Msg == "" {
			t.Errorf("not a JSON record: %q (%v)", l, err)
		}
		levels = append(levels, r.Level)
	}
	if code != 0 || strings.Join(levels, " ") != "WARN INFO INFO" {
		t.Errorf("exit %d, levels %v:\n%s", code, levels, stderr)
	}
	if code, _, stderr := runCLI(t, dir, "run", "--force", "--log-level", "warn", "job.yaml"); code != 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "WARN") {
		t.Errorf("--log-level warn: exit %d:\n%s", code, stderr)
	}
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}} {
		if code, _, stderr := runCLI(t, dir, append(append([]string{"run"}, bad...), "job.yaml")...); code != 2 || !strings.HasPrefix(stderr, "weir: "+bad[0]+": expected") {
			t.Errorf("%v: exit %d %s", bad, code, stderr)
		}
	}
}

// The exit status of a usage mistake is 2 for every command; the usage
// names the table of exit statuses.
func TestUsageExitCodes(t *testing.T) {
	if !strings.Contains(usageText(), exitCodes) {
		t.Errorf("the usage lacks the exit statuses")
	}
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		if code, _, _ := runCLI(t, t.TempDir(), c.name, "--no-such-flag"); code != 2 {
			t.Errorf("weir %s --no-such-flag: exit %d", c.name, code)
		}
	}
	if code, _, stderr := runCLI(t, t.TempDir(), "run", "missing.yaml"); code != 2 || stderr != "weir: missing.yaml: cannot read the job file: no such file or directory\n" {
		t.Errorf("a missing job file: exit %d %q", code, stderr)
	}
	// A ledger that does not exist is a missing input, as anywhere else.
	if code, _, stderr := runCLI(t, fraudDir(t), "reconcile", "--ledger", "nowhere.jsonl", "job.yaml"); code != 2 || stderr != "weir: --ledger nowhere.jsonl: no such file or directory\n" {
		t.Errorf("a missing ledger: exit %d %q", code, stderr)
	}
}

// weir status says what a sink's counts are: committed by every run,
// written by this one (after a resume the first may be the larger).
func TestStatusTextSinks(t *testing.T) {
	text := statusText(engine.Status{Job: "j", State: "running", Sinks: []engine.SinkStatus{{Name: "output", Guarantee: "exactly_once", Written: 13, Committed: 15}}})
	if !strings.Contains(text, "\nsink output (exactly_once): 15 committed in all, 13 written by this run\n") {
		t.Errorf("status:\n%s", text)
	}
}

// weir reconcile --report lists the corrected windows only (every window
// with --all), and sums up ranges of windows alike in a line each.
func TestReconcileReport(t *testing.T) {
	r := &reconcile.Report{Table: "alerts", LedgerLines: 9, LedgerFiles: []string{"a", "b"}, LedgerEvents: 8, LedgerFirst: "f", LedgerLast: "l", Applied: true}
	add := func(start string, o reconcile.Outcome) {
		w := reconcile.Window{Key: "k", WindowStart: start, WindowEnd: start + "+1m", Outcome: o}
		switch o {
		case reconcile.Corrected:
			w.Base, w.Revision, w.Changes = 1, 2, "orders 3 -> 4"
		case reconcile.NotCorrectable:
			w.Note = "the ledger holds no event of it"
		}
		r.Windows = append(r.Windows, w)
	}
	for _, s := range []string{"00", "01", "02"} {
		add("t"+s, reconcile.AlreadyRight)
	}
	add("t03", reconcile.Corrected)
	add("t04", reconcile.AlreadyRight)
	add("t05", reconcile.AlreadyRight)
	add("t06", reconcile.NotCorrectable)
	add("t07", reconcile.NotCorrectable)
	r.Corrected, r.AlreadyRight, r.NotCorrectable = 1, 5, 2
	for _, w := range r.Windows {
		g := reconcile.Range{WindowStart: w.WindowStart, WindowEnd: w.WindowEnd}
		switch w.Outcome {
		case reconcile.Corrected:
			g.Corrected = 1
		case reconcile.AlreadyRight:
			g.AlreadyRight = 1
		case reconcile.NotCorrectable:
			g.NotCorrectable = 1
		}
		r.Ranges = append(r.Ranges, g)
	}
	want := `ledger: 9 lines in 2 files: 8 events from f to l, 0 duplicates dropped, 0 lines not events
corrected  k [t03, t03+1m): revision 1 -> 2: orders 3 -> 4
window_start               window_end                 corrected already_right not_correctable raced
t00                        t02+1m                             0             3               0     0
t03                        t03+1m                             1             0               0     0
t04                        t05+1m                             0             2               0     0
t06                        t07+1m                             0             0               2     0
table alerts: 1 windows corrected, 5 already right, 2 not correctable (the ledger lacks their events), 0 raced
`
	if got := reconcileText(r, true, false); got != want {
		t.Errorf("--report:\n%s\nwant:\n%s", got, want)
	}
	got := reconcileText(r, false, true)
	for _, line := range []string{"already right  k [t00, t00+1m)\n", "not correctable  k [t06, t06+1m): the ledger holds no event of it\n", "corrected  k [t03, t03+1m): revision 1 -> 2"} {
		if !strings.Contains(got, line) {
			t.Errorf("--all lacks %q:\n%s", line, got)
		}
	}
	if strings.Count(got, "\n") != 10 {
		t.Errorf("--all: %d lines:\n%s", strings.Count(got, "\n"), got)
	}
}

// weir status's line of counts has every part of the read, as the summary
// has them: the filtered, those beyond the de-duplication horizon and a
// versioned job's set aside, and among the too late those that came after
// their window's trigger had finished.
func TestStatusTextCounts(t *testing.T) {
	c := engine.Counts{Accounting: engine.Accounting{Read: 20, Accepted: 9, Duplicates: 1, TooLate: 3, BeyondDedupHorizon: 2, Quarantined: 1, Filtered: 2, Superseded: 1, RevisionsTooLate: 1},
		LateAccepted: 2, Revisions: 3, TriggerFinished: 2}
	text := statusText(engine.Status{Job: "j", State: "running", Counts: c})
	if want := "\nread 20: 9 accepted (2 late within allowed lateness, 3 revisions replacing an earlier version), 1 duplicates, 2 filtered out by where, 3 too late (2 for windows whose trigger had finished), 2 beyond the de-duplication horizon, 1 superseded, 1 revisions too late, 1 quarantined\n"; !strings.Contains(text, want) {
		t.Errorf("status:\n%s\nlacks%s", text, want)
	}
}

// weir status of a job whose input ended says so, without a lag.
func TestStatusTextFinished(t *testing.T) {
	text := statusText(engine.Status{Job: "j", State: "finished", Watermark: mtime.MaxTime})
	if !strings.Contains(text, "\nwatermark at the end of the input: every window has fired; 0 open windows, 0 keys\n") || strings.Contains(text, "behind") {
		t.Errorf("status:\n%s", text)
	}
}

// weir status of a job with a join: each input's accounting, and what the
// join holds and did.
func TestStatusTextJoin(t *testing.T) {
	in := func(read, acc, late int64) engine.Counts {
		return engine.Counts{Accounting: engine.Accounting{Read: read, Accepted: acc, TooLate: late}}
	}
	text := statusText(engine.Status{Job: "j", State: "running", Counts: in(7, 6, 1),
		Inputs: []engine.InputStatus{{Name: "source", Counts: in(7, 6, 1)}, {Name: "join.with", Counts: in(5, 5, 0)}},
		Joins:  []engine.JoinStatus{{Name: "join", Keys: 2, Left: 3, Right: 1, Pairs: 4, Unmatched: 1}}})
	for _, want := range []string{
		"\ninput source: read 7: 6 accepted (0 late within allowed lateness), 0 duplicates, 1 too late, 0 quarantined\n",
		"\ninput join.with: read 5: 5 accepted (0 late within allowed lateness), 0 duplicates, 0 too late, 0 quarantined\n",
		"\njoin join: 4 pairs, 1 unmatched; 2 keys holding 3 and 1 records\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("status:\n%s\nlacks%s", text, want)
		}
	}
	if strings.Contains(text, "\nread 7") {
		t.Errorf("status has the first input's counts twice:\n%s", text)
	}
}
