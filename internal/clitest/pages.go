package clitest

// The pages of the documentation as tests read them: the commands a page
// shows, the output it shows of them, and whether a run printed it.

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// PageOutput is the output a page of the documentation shows after the
// block of commands that has command: the plain block that follows it.
func PageOutput(t testing.TB, page, command string) string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range Steps(string(b)) {
		if st.Output != "" && slices.Contains(st.Commands, command) {
			return st.Output
		}
	}
	t.Fatalf("%s shows no output after a block of commands with %s", page, command)
	return ""
}

// MissingShape is the first line of shown that output has no line of the
// shape of, in order, or "". What a live run prints (its times, counts,
// ports, process ids) differs from run to run, so a line of output has a
// shown line's shape when it is the same but for its numbers (any digits
// where the page shows digits, or a whole number where it shows a
// fraction), the width of its spaces, and what stands where the page
// shows "…".
func MissingShape(shown, output string) string {
	return firstMissing(shown, output, shapeOf)
}

// firstMissing is the first line of shown (its trailing spaces aside) that
// no line of output matches, in order, or "": each line of shown must match
// a line of output after the one the line before it matched, by the
// pattern pattern makes of it, trailing spaces aside. A blank line of
// shown, or one pattern makes nil of, stands for no line.
func firstMissing(shown, output string, pattern func(s string) *regexp.Regexp) string {
	lines := strings.Split(output, "\n")
	at := 0
	for _, s := range strings.Split(strings.TrimSuffix(shown, "\n"), "\n") {
		s = strings.TrimRight(s, " ")
		if strings.TrimSpace(s) == "" {
			continue
		}
		re := pattern(s)
		if re == nil {
			continue
		}
		for at < len(lines) && !re.MatchString(strings.TrimRight(lines[at], " ")) {
			at++
		}
		if at == len(lines) {
			return s
		}
		at++
	}
	return ""
}

var (
	number   = regexp.MustCompile(`[0-9]+(\\\.[0-9]+)?`)
	spaceRun = regexp.MustCompile(` +`)
)

// shapeOf is the pattern of the lines of the shape of s.
func shapeOf(s string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i, part := range strings.Split(strings.TrimRight(s, " "), "…") {
		if i > 0 {
			b.WriteString(".*")
		}
		q := regexp.QuoteMeta(part)
		q = number.ReplaceAllStringFunc(q, func(n string) string {
			if strings.Contains(n, ".") {
				return `[0-9]+(\.[0-9]+)?` // 2.364s, or 2s
			}
			return `[0-9]+`
		})
		q = spaceRun.ReplaceAllString(q, ` +`)
		b.WriteString(q)
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// Step is a block of commands of a page and the output block
// after it, if any.
type Step struct {
	Commands []string
	Output   string
}

// Steps are the page's sh blocks, each with the plain block that
// follows it (its output) when one does before the next sh block.
func Steps(page string) []Step {
	var steps []Step
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
			steps = append(steps, Step{Commands: cmds})
		case "":
			if n := len(steps); n > 0 && steps[n-1].Output == "" {
				steps[n-1].Output = b[2]
			}
		}
	}
	return steps
}

// MissingLine is the first line of shown that output lacks, or "": each line
// of shown must be a line of output, in order (other lines may come
// between), where a time at the start of a line, a path before …/, a
// run's time and rate, a trailing " ..." and any other … stand for what a
// run says there; a line "..." stands for any lines.
func MissingLine(shown, output string) string {
	return firstMissing(shown, output, func(s string) *regexp.Regexp {
		if strings.TrimSpace(s) == "..." {
			return nil
		}
		return shownLine(s)
	})
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
			for k, q := range strings.Split(p, "…") {
				if k > 0 {
					b.WriteString(`.*`)
				}
				b.WriteString(regexp.QuoteMeta(q))
			}
		}
	}
	if !prefix {
		b.WriteString("$")
	}
	return regexp.MustCompile(b.String())
}

// Session is a plain block of a page that shows a terminal: each command
// after its prompt ("$ "), with what the page says of it (its comment
// after "#") and the lines it prints.
type Session struct {
	Line  int // the page's line of the block's first command
	Steps []SessionStep
}

// SessionStep is a command of a session, with its comment and its output.
type SessionStep struct {
	Command, Comment string
	Output           string
}

// Sessions are the page's plain blocks whose first line is a command
// after a prompt.
func Sessions(page string) []Session {
	var out []Session
	in, plain := false, false
	var cur *Session
	for i, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "```") {
			if in && cur != nil {
				out = append(out, *cur)
			}
			in, plain, cur = !in, l == "```", nil
			continue
		}
		if !in || !plain {
			continue
		}
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			if cur == nil {
				cur = &Session{Line: i + 1}
			}
			st := SessionStep{Command: c}
			if j := strings.Index(c, "  #"); j >= 0 {
				st.Command, st.Comment = strings.TrimSpace(c[:j]), strings.TrimSpace(c[j+3:])
			}
			cur.Steps = append(cur.Steps, st)
			continue
		}
		if cur == nil {
			plain = false // output alone: not a session
			continue
		}
		st := &cur.Steps[len(cur.Steps)-1]
		st.Output += l + "\n"
	}
	return out
}

// PageSession is the session of the page whose first command is first.
func PageSession(t testing.TB, page, first string) Session {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Sessions(string(b)) {
		if s.Steps[0].Command == first {
			return s
		}
	}
	t.Fatalf("%s shows no session that starts with $ %s", page, first)
	return Session{}
}
