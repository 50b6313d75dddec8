package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/clitest"
)

// Every weir command the README, CONTRIBUTING and the pages of docs/ show
// (in a block of commands, or as inline code) is one this weir takes: its command exists, its flags are the
// command's and parse, and the example files it names are in the
// repository. What they print is checked where they are run as shown
// (TestGettingStartedAsShown, the cookbook's recipes, the console
// walkthrough); this keeps every other page's commands true to the code.
func TestDocsCommandsAreWeirs(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md", "../../CONTRIBUTING.md")
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range docCommands(string(b)) {
			where := filepath.Base(page) + ":" + c.line
			if strings.ContainsAny(c.text, "[]") {
				continue // a synopsis: [--flag VALUE], a|b
			}
			args := shellWords(c.text)
			if strings.HasSuffix(args[0], ":") {
				continue // output: weir lateness: the input...
			}
			var cmd *command
			for i := range commands {
				if commands[i].name == args[0] {
					cmd = &commands[i]
				}
			}
			if cmd == nil {
				t.Errorf("%s: weir has no command %q: %s", where, args[0], c.text)
				continue
			}
			fs := flagsOf(*cmd)
			if fs == nil {
				continue // a command without flags (help)
			}
			if err := fs.Parse(args[1:]); err != nil {
				if !c.inline || !strings.Contains(err.Error(), "flag needs an argument") {
					t.Errorf("%s: %v: %s", where, err, c.text)
				}
				continue
			}
			rest := fs.Args()
			for len(rest) > 0 {
				// Flags may come after the arguments, as weir takes them.
				if strings.HasPrefix(rest[0], "-") {
					if err := fs.Parse(rest); err != nil {
						t.Errorf("%s: %v: %s", where, err, c.text)
					}
					rest = fs.Args()
					continue
				}
				if strings.HasPrefix(rest[0], "examples/") {
					if _, err := os.Stat(filepath.Join("../..", rest[0])); err != nil {
						t.Errorf("%s: %s is not in the repository: %s", where, rest[0], c.text)
					}
				}
				rest = rest[1:]
			}
			checked++
		}
	}
	t.Logf("%d commands checked", checked)
	if checked < 40 {
		t.Errorf("%d commands checked: the pages' blocks were not read", checked)
	}
}

// inlineWeir is a weir command in a page's text, as inline code.
var inlineWeir = regexp.MustCompile("`(?:go run ./cmd/)?weir ([a-z][^`]*)`")

// docCommand is a weir command in a page's block: its arguments after
// weir (go run ./cmd/weir), and its line.
type docCommand struct {
	text, line string
	inline     bool // in the text: it may name a flag alone (weir lateness --ledger)
}

// docCommands are the weir commands of a page: its inline code that runs
// weir, and the lines of its fenced blocks that are not code (yaml, json,
// go, sql) that run weir (a $ prompt aside), without their comments and
// what a shell does after them (a pipe, a redirection, &).
func docCommands(page string) []docCommand {
	var out []docCommand
	in, code := false, false
	for i, l := range strings.Split(page, "\n") {
		if fence, ok := strings.CutPrefix(strings.TrimSpace(l), "```"); ok {
			if !in {
				lang := strings.Fields(fence + " x")[0]
				code = lang == "yaml" || lang == "json" || lang == "go" || lang == "sql" || lang == "promql"
			}
			in = !in
			continue
		}
		if !in {
			// Inline: `weir lint job.yaml`.
			for _, m := range inlineWeir.FindAllStringSubmatch(l, -1) {
				out = append(out, docCommand{m[1], strconv.Itoa(i + 1), true})
			}
			continue
		}
		if code {
			continue
		}
		l = strings.TrimPrefix(strings.TrimSpace(l), "$ ")
		var rest string
		var ok bool
		if rest, ok = strings.CutPrefix(l, "go run ./cmd/weir "); !ok {
			if rest, ok = strings.CutPrefix(l, "weir "); !ok {
				continue
			}
		}
		if j := strings.Index(rest, " #"); j >= 0 {
			rest = rest[:j]
		}
		for _, sep := range []string{" | ", " > ", " 2>", " &", " ; ", " && "} {
			if j := strings.Index(rest, sep); j >= 0 {
				rest = rest[:j]
			}
		}
		if rest = strings.TrimSpace(rest); rest != "" {
			out = append(out, docCommand{rest, strconv.Itoa(i + 1), false})
		}
	}
	return out
}

// shellWords splits a command as a shell would: words, with single and
// double quotes.
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}

// shownBy names the test that runs each block of the pages that shows
// what weir prints, as the page shows it: the page and the block's first
// command (the sh block's before an output block, or a session's after its
// prompt). The cookbook's blocks are its recipes' (examples TestCookbook
// runs each and compares the page's blocks with what it wrote).
var shownBy = map[string]string{
	"README.md: go run ./cmd/weir run examples/fraud/job.yaml":                                                                   "TestREADMEAsShown",
	"getting-started.md: go run ./cmd/weir run examples/fraud/job.yaml":                                                          "TestGettingStartedAsShown",
	"getting-started.md: go run ./cmd/weir gen steep --events 2000000 -o steep.jsonl":                                            "TestGettingStartedAsShown",
	"getting-started.md: go run ./cmd/weir gen ledger --events 200000 -o ledger.jsonl":                                           "TestGettingStartedAsShown",
	"getting-started.md: go run ./cmd/weir gen ledger-checkouts --events 200000 -o checkouts.jsonl":                              "TestGettingStartedAsShown",
	"getting-started.md: go run ./cmd/weir run examples/phones-online/never-arrived.yaml":                                        "TestGettingStartedAsShown",
	"getting-started.md: weir reconcile --ledger orders.jsonl --ledger late.jsonl --reason \"nightly ledger\" --report job.yaml": "examples TestCookbook",
	"job-file.md: weir lint job.yaml":                                                                                            "TestJobFilePageLintAsShown",
	"job-file.md: weir lint kafka-avro.yaml":                                                                                     "TestJobFilePageLintSchemaAsShown",
	"connectors.md: go run ./cmd/weir kafka --orders":                                                                            "console TestConsoleWalkthrough",
	"connectors.md: go run ./cmd/weir run --http 127.0.0.1:8081 examples/fraud/group.yaml":                                       "grouptest TestConnectorsPageGroupAsShown",
	"operations.md: kill -TERM $(cat ckpt/weir.pid)":                                                                             "TestOperationsPageUpgradeAsShown",
}

// Every block of the README and docs/ that shows what weir prints is run
// by a test that checks the page against it (shownBy), and every test
// shownBy names has its block.
func TestDocsOutputsAreRun(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md", "../../CONTRIBUTING.md")
	seen := map[string]bool{}
	for _, page := range pages {
		if filepath.Base(page) == "cookbook.md" {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		var blocks []string
		for _, st := range clitest.Steps(string(b)) {
			if st.Output != "" && strings.Contains(strings.Join(st.Commands, "\n"), "weir ") {
				blocks = append(blocks, st.Commands[0])
			}
		}
		for _, s := range clitest.Sessions(string(b)) {
			blocks = append(blocks, s.Steps[0].Command)
		}
		for _, first := range blocks {
			key := filepath.Base(page) + ": " + first
			seen[key] = true
			if shownBy[key] == "" {
				t.Errorf("%s: no test runs this block and checks what it shows (shownBy)", key)
			}
		}
	}
	for key, test := range shownBy {
		if !seen[key] {
			t.Errorf("shownBy: %s (%s) is no block of the pages now", key, test)
		}
	}
}
