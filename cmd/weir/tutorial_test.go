package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
	ran := runPageAsShown(t, "../../docs/getting-started.md")
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

// The README's first command, run as it is shown, prints what the README
// shows of it.
func TestREADMEAsShown(t *testing.T) {
	ran := runPageAsShown(t, "../../README.md")
	if want := "go run ./cmd/weir run examples/fraud/job.yaml"; strings.Join(ran, "\n") != want {
		t.Errorf("the README's commands on files are\n%s\nthis test knows\n%s", strings.Join(ran, "\n"), want)
	}
}

// runPageAsShown runs the page's commands on files (the examples it names
// copied into a directory of the test's own), in order, and checks that
// every output block it shows after them is in their output: the commands
// it ran.
func runPageAsShown(t *testing.T, path string) []string {
	t.Helper()
	page, err := os.ReadFile(path)
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
	steps := clitest.Steps(string(page))
	var ran []string
	for _, st := range steps {
		var out strings.Builder
		stepRan := false
		for _, c := range st.Commands {
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
		if st.Output != "" && stepRan {
			if missing := clitest.MissingLine(st.Output, out.String()); missing != "" {
				t.Errorf("%s: after %q, the page shows %q, which the output lacks:\n%s", filepath.Base(path), strings.Join(st.Commands, "; "), missing, out.String())
			}
		}
	}
	return ran
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
