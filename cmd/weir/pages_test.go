package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

// The job-file page's weir lint on the fraud job with two misspelt fields,
// run as the page shows it: every line the page shows is in its output, in
// order, and it exits 1.
func TestJobFilePageLintAsShown(t *testing.T) {
	s := clitest.PageSession(t, "../../docs/job-file.md", "weir lint job.yaml")
	if s.Steps[0].Comment != "the fraud job with key: crad and sum(amout)" {
		t.Fatalf("the page's job is %q; this test makes the fraud job with key: crad and sum(amout)", s.Steps[0].Comment)
	}
	dir := t.TempDir()
	copyExample(t, dir, "fraud/orders.jsonl", "orders.jsonl")
	copyExample(t, dir, "fraud/job.yaml", "job.yaml", "key: card", "key: crad", "sum(amount)", "sum(amout)")
	checkSession(t, dir, s, 1)
}

// The job-file page's weir lint of the Avro fraud job against its schema
// in the development registry, run as the page shows it: weir kafka
// --orders --registry running, the job with a misspelt field and a max of
// a string.
func TestJobFilePageLintSchemaAsShown(t *testing.T) {
	s := clitest.PageSession(t, "../../docs/job-file.md", "weir lint kafka-avro.yaml")
	const about = "examples/fraud/kafka-avro.yaml with sum(amout) and max(card), weir kafka --orders --registry 8081 running"
	if s.Steps[0].Comment != about {
		t.Fatalf("the page's job is %q; this test runs %s", s.Steps[0].Comment, about)
	}
	dir := t.TempDir()
	copyExample(t, dir, "fraud/kafka-avro.yaml", "kafka-avro.yaml", "sum(amount)", "sum(amout)", "biggest: max(amount)", "top: max(card)")
	kafkaPort, regPort := clitest.FreePort(t), clitest.FreePort(t)
	cmd, out := clitest.Start(t, dir, "kafka", "--port", fmt.Sprint(kafkaPort), "--orders", "--registry", fmt.Sprint(regPort))
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "the orders are Avro"); {
		if time.Now().After(deadline) {
			t.Fatalf("weir kafka --orders --registry did not start:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Setenv("WEIR_KAFKA", fmt.Sprintf("127.0.0.1:%d", kafkaPort))
	t.Setenv("WEIR_REGISTRY", fmt.Sprintf("http://127.0.0.1:%d", regPort))
	checkSession(t, dir, s, 1)
}

// copyExample copies the example file from (under examples/) to dir/to,
// with each old string of edits replaced by the new one after it, each
// of which it must have.
func copyExample(t *testing.T, dir, from, to string, edits ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../examples", from))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("examples/%s has no %q", from, edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	if err := os.WriteFile(filepath.Join(dir, to), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkSession runs the session's one command in dir and checks that it
// exits with code and prints every line the page shows, in order.
func checkSession(t *testing.T, dir string, s clitest.Session, code int) {
	t.Helper()
	if len(s.Steps) != 1 {
		t.Fatalf("the session at line %d has %d commands; this test runs one", s.Line, len(s.Steps))
	}
	st := s.Steps[0]
	if strings.TrimSpace(st.Output) == "" {
		t.Fatalf("the session at line %d shows no output", s.Line)
	}
	args := shellWords(st.Command)
	if args[0] != "weir" {
		t.Fatalf("the session at line %d runs %q", s.Line, st.Command)
	}
	got, stdout, stderr := clitest.Run(t, dir, args[1:]...)
	if got != code {
		t.Errorf("%s: exit %d, want %d", st.Command, got, code)
	}
	if missing := clitest.MissingLine(st.Output, stdout+stderr); missing != "" {
		t.Errorf("%s: the page shows %q, which the output lacks:\n%s%s", st.Command, missing, stdout, stderr)
	}
}
