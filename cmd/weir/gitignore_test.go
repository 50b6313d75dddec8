package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/clitest"
)

// The documented commands (the README's and docs/getting-started.md's)
// leave nothing git would show: what they write is in .gitignore. In a
// repository of the example and .gitignore alone, the demo job, weir lint,
// the generator and weir lateness of the getting-started page run, and git
// status stays clean.
func TestGitignoreCoversTheREADME(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("this test needs git")
	}
	dir := t.TempDir()
	copyTo := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755)
		os.WriteFile(filepath.Join(dir, to), b, 0o644)
	}
	copyTo("../../.gitignore", ".gitignore")
	for _, f := range []string{"job.yaml", "kafka.yaml", "group.yaml", "orders.jsonl"} {
		copyTo("../../examples/fraud/"+f, "examples/fraud/"+f)
	}
	sh := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	sh(git, "init", "-q")
	sh(git, "add", "-A")
	sh(git, "commit", "-qm", "the example")
	for _, args := range [][]string{
		{"run", "examples/fraud/job.yaml"},
		{"run", "examples/fraud/job.yaml"}, // again: the table stays
		{"lint", "examples/fraud/job.yaml"},
		{"gen", "steep", "--events", "20000", "-o", "steep.jsonl"},
		{"lateness", "--by", "platform", "--plot", "lateness.svg", "steep.jsonl"},
		{"gen", "ledger", "--events", "2000", "-o", "ledger.jsonl"},
		{"gen", "ledger-events", "--events", "2000", "-o", "events.jsonl"},
		{"lateness", "--ledger", "ledger.jsonl", "--match", "order_id", "--by", "platform", "--plot", "late-or-lost.png", "events.jsonl"},
	} {
		if code, _, stderr := clitest.Run(t, dir, args...); code != 0 {
			t.Fatalf("weir %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
	}
	if st := sh(git, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after the documented commands:\n%s", st)
	}
}
