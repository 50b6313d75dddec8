package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/clitest"
)

// The getting-started page's commands on recorded files, run in the order
// the page gives them, each as it is shown (go run ./cmd/weir is this
// weir), and what the page shows of each one's output found in it: every
// line shown, in order, times, paths, rates and elisions aside. The live
// part of the page (a broker, the console) is the console walkthrough's
// (console TestConsoleWalkthrough); weir reconcile's run is its recipe's
// (examples TestCookbook).
func TestGettingStartedAsShown(t *testing.T) {
	page, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"fraud/job.yaml", "fraud/orders.jsonl", "phones-online/never-arrived.yaml", "phones-online/online.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../examples", f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, "examples", f)), 0o755)
		os.WriteFile(filepath.Join(dir, "examples", f), b, 0o644)
	}
	steps := tutorialSteps(string(page))
	var ran []string
	for _, st := range steps {
		var out strings.Builder
		stepRan := false
		for _, c := range st.commands {
			args := strings.Fields(c)
			switch {
			case len(args) > 3 && strings.Join(args[:3], " ") == "go run ./cmd/weir":
				args = args[3:]
			case args[0] == "sqlite3":
			default:
				continue // not run here: see above
			}
			if live(args) {
				continue
			}
			ran, stepRan = append(ran, c), true
			if args[0] == "sqlite3" {
				b, err := exec.Command("sqlite3", append([]string{"-cmd", ".cd " + dir}, unquote(args[1:])...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", c, err, b)
				}
				out.Write(b)
				continue
			}
			code, stdout, stderr := clitest.Run(t, dir, unquote(args)...)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", c, code, stderr)
			}
			out.WriteString(stdout + stderr)
		}
		if st.output != "" && stepRan {
			if missing := shownIn(st.output, out.String()); missing != "" {
				t.Errorf("after %q, the page shows %q, which the output lacks:\n%s", strings.Join(st.commands, "; "), missing, out.String())
			}
		}
	}
	want := []string{
		"go run ./cmd/weir run examples/fraud/job.yaml",
		`sqlite3 -header -column examples/fraud/alerts.db "SELECT card, window_start, orders, spent, status FROM alerts ORDER BY orders DESC LIMIT 3"`,
		"go run ./cmd/weir gen steep --events 2000000 -o steep.jsonl",
		"go run ./cmd/weir lateness --by platform --plot lateness.svg steep.jsonl",
		"go run ./cmd/weir gen ledger --events 200000 -o ledger.jsonl",
		"go run ./cmd/weir gen ledger-events --events 200000 -o events.jsonl",
		"go run ./cmd/weir lateness --ledger ledger.jsonl --match order_id --by platform --plot late-or-lost.png events.jsonl",
		"go run ./cmd/weir gen ledger-checkouts --events 200000 -o checkouts.jsonl",
		"go run ./cmd/weir lateness --ledger ledger.jsonl --match order_id --by platform --seen checkouts.jsonl events.jsonl",
		"go run ./cmd/weir run examples/phones-online/never-arrived.yaml",
		"go run ./cmd/weir run examples/phones-online/online.yaml",
	}
	if strings.Join(ran, "\n") != strings.Join(want, "\n") {
		t.Errorf("the page's commands on files are\n%s\nthis test knows\n%s", strings.Join(ran, "\n"), strings.Join(want, "\n"))
	}
}

// tutorialStep is a block of commands of a page and the output block
// after it, if any.
type tutorialStep struct {
	commands []string
	output   string
}

// tutorialSteps are the page's sh blocks, each with the plain block that
// follows it (its output) when one does before the next sh block.
func tutorialSteps(page string) []tutorialStep {
	var steps []tutorialStep
	blocks := regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```").FindAllStringSubmatch(page, -1)
	for _, b := range blocks {
		switch b[1] {
		case "sh":
			var cmds []string
			cont := ""
			for _, l := range strings.Split(strings.TrimSuffix(b[2], "\n"), "\n") {
				l = strings.TrimSpace(l)
				if i := strings.Index(l, "  #"); i >= 0 {
					l = strings.TrimSpace(l[:i])
				}
				if strings.HasSuffix(l, "\\") {
					cont += strings.TrimSuffix(l, "\\")
					continue
				}
				cmds = append(cmds, cont+l)
				cont = ""
			}
			steps = append(steps, tutorialStep{commands: cmds})
		case "":
			if n := len(steps); n > 0 && steps[n-1].output == "" {
				steps[n-1].output = b[2]
			}
		}
	}
	return steps
}

// live says whether a weir command needs a broker or serves a console: the
// walkthrough's.
func live(args []string) bool {
	return args[0] == "kafka" || args[0] == "status" || strings.Contains(strings.Join(args, " "), "kafka.yaml")
}

// unquote joins the double-quoted arguments a shell would make one.
func unquote(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, `"`) {
			for !strings.HasSuffix(a, `"`) || len(a) == 1 {
				i++
				a += " " + args[i]
			}
			a = strings.Trim(a, `"`)
		}
		out = append(out, a)
	}
	return out
}

// shownIn is the first line of shown that output lacks, or "": each line
// of shown must be a line of output, in order (other lines may come
// between), where a time at the start of a line, a path before …/, a
// run's time and rate, and a trailing " ..." stand for what a run says
// there; a line "..." stands for any lines.
func shownIn(shown, output string) string {
	var lines []string
	for _, l := range strings.Split(output, "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	at := 0
	for _, s := range strings.Split(strings.TrimSuffix(shown, "\n"), "\n") {
		s = strings.TrimRight(s, " ")
		if strings.TrimSpace(s) == "..." || strings.TrimSpace(s) == "" {
			continue
		}
		re := shownLine(s)
		found := false
		for ; at < len(lines); at++ {
			if re.MatchString(lines[at]) {
				found, at = true, at+1
				break
			}
		}
		if !found {
			return s
		}
	}
	return ""
}

var (
	logTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z`)
	runRate = regexp.MustCompile(` in [0-9.]+s \([0-9]+ lines/s\)`)
)

// shownLine is the pattern of a line the page shows.
func shownLine(s string) *regexp.Regexp {
	prefix := strings.HasSuffix(s, " ...")
	s = strings.TrimSuffix(s, " ...")
	stamp := logTime.FindString(s)
	s = strings.TrimPrefix(s, stamp)
	var b strings.Builder
	b.WriteString("^")
	if stamp != "" {
		b.WriteString(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z`)
	}
	for i, part := range strings.Split(s, "…/") {
		if i > 0 {
			b.WriteString(`\S*/`)
		}
		for j, p := range runRate.Split(part, -1) {
			if j > 0 {
				b.WriteString(` in [0-9.]+s \([0-9]+ lines/s\)`)
			}
			b.WriteString(regexp.QuoteMeta(p))
		}
	}
	if !prefix {
		b.WriteString("$")
	}
	return regexp.MustCompile(b.String())
}
