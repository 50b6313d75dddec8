package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
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
