package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/internal/clitest"
)

// The secrets of the run below, and the job that uses them: a PostgreSQL
// password from the environment with / @ # $ : % in it (a password
// authentication, not trust), a SASL password written in the job file with
// a $ in it, and the console's token.
const (
	pgPassword   = `pg/@#$:%pw`
	saslPassword = `kafka-pa$s/@#word`
	consoleToken = `t0ken-Zq8`
)

const secretsJob = `name: secrets
source: {file: input.jsonl, follow: true}
time: {field: ts}
key: k
window: {tumbling: 1s}
aggregates: {n: count}
output:
  - results.jsonl
  - {postgres: {dsn: "postgres://secretuser:${WEIR_TEST_PGPASSWORD}@127.0.0.1:%[1]s/%[2]s?sslmode=disable", table: counts}}
  - {kafka: {brokers: [%[3]s], topic: counts, security.protocol: SASL_PLAINTEXT, sasl.mechanism: SCRAM-SHA-256, sasl.username: weir, sasl.password: "kafka-pa$s/@#word"}}
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
checkpoint: {dir: ck, interval: 200ms}
http: {listen: "127.0.0.1:%[4]d", token: "${WEIR_TEST_TOKEN}"}
`

// A run with known secrets writes none of them anywhere: not on standard
// output or error, in no file it writes (outputs, checkpoints, summary), not
// in /api/status or /metrics. And the secrets work: the rows reach
// PostgreSQL through password authentication, the records reach a broker
// that requires SCRAM.
func TestSecretsAreNeverShown(t *testing.T) {
	dsn := clitest.PGDatabase(t)
	u, _ := url.Parse(dsn)
	database := strings.TrimPrefix(u.Path, "/")
	clitest.PGAddUser(t, database, "secretuser", pgPassword)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(clitest.FreePort(t)), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "weir", saslPassword), kfake.SeedTopics(1, "counts"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	httpPort := clitest.FreePort(t)
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	var input strings.Builder
	for i := range 40 {
		fmt.Fprintf(&input, `{"k":"k%d","ts":"%s"}`+"\n", i%3, now.Add(time.Duration(i-40)*250*time.Millisecond).Format(time.RFC3339Nano))
	}
	input.WriteString("not json\n")
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(input.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(secretsJob, u.Port(), database, c.ListenAddrs()[0], httpPort)), 0o644)

	cmd := exec.Command(clitest.Bin, "run", "job.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEIR_TEST_PGPASSWORD="+pgPassword, "WEIR_TEST_TOKEN="+consoleToken)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+consoleToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Wait for a few checkpoints: the rows and records committed.
	deadline := time.Now().Add(60 * time.Second)
	var status string
	for {
		code, body := get("/api/status")
		var r console.StatusReply
		committed := 0
		if code == 200 && json.Unmarshal([]byte(body), &r) == nil {
			for _, k := range r.Status.Sinks {
				if strings.HasPrefix(k.Name, "output") && k.Committed > 0 {
					committed++
				}
			}
		}
		if committed == 3 {
			status = body
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status with committed output within 60 s: %d %.300s\nstderr: %s", code, body, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, metrics := get("/metrics")
	if code != 200 || !strings.Contains(metrics, "weir_up") {
		t.Fatalf("/metrics: %d %.200s", code, metrics)
	}
	// A page that rebinds its name to 127.0.0.1 learns nothing, token or not.
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/status", nil)
	req.Host = "rebind.attacker.example"
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("DNS rebinding: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, _ := get("/api/status?token=x"); code != 200 {
		t.Errorf("the token in a header: %d", code)
	}
	// weir status finds the job with the job file's token.
	if code, out, errOut := runCLIEnv(t, dir, []string{"WEIR_TEST_PGPASSWORD=" + pgPassword, "WEIR_TEST_TOKEN=" + consoleToken}, "status", "job.yaml"); code != 0 || !strings.Contains(out, "job secrets, running") {
		t.Errorf("weir status: %d %s %s", code, out, errOut)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("weir run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(status, `sasl.password: \"[redacted]\"`) || !strings.Contains(status, `${WEIR_TEST_PGPASSWORD}`) {
		t.Errorf("the job file in the status does not show what it should: %.2000s", status)
	}

	// The secrets worked.
	pgc, err := pgx.Connect(context.Background(), strings.Replace(dsn, "weir@", "secretuser:"+url.QueryEscape(pgPassword)+"@", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer pgc.Close(context.Background())
	var rows int
	if err := pgc.QueryRow(context.Background(), "SELECT count(*) FROM counts").Scan(&rows); err != nil || rows == 0 {
		t.Errorf("rows in PostgreSQL: %d, %v", rows, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.SASL(scram.Auth{User: "weir", Pass: saslPassword}.AsSha256Mechanism()),
		kgo.ConsumeTopics("counts"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	fetches := cl.PollFetches(ctx)
	cancel()
	if fetches.NumRecords() == 0 {
		t.Errorf("no record reached the broker: %v", fetches.Errors())
	}

	// Nothing shows a secret, in any form it could travel in, nor a piece of
	// one (a URL that breaks at a password's / or @ shows the rest of it).
	outputs := map[string]string{"standard output": stdout.String(), "standard error": stderr.String(), "/api/status": status, "/metrics": metrics}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != "job.yaml" {
			b, _ := os.ReadFile(p)
			outputs[p] = string(b)
		}
		return nil
	})
	if len(outputs) < 12 {
		t.Errorf("only %d outputs to look at", len(outputs))
	}
	for _, s := range []string{pgPassword, saslPassword, consoleToken} {
		forms := []string{s, url.QueryEscape(s), url.PathEscape(s), strings.TrimPrefix(url.UserPassword("", s).String(), ":"), fmt.Sprintf("%q", s)}
		for i := 0; i+4 <= len(s); i++ {
			if piece := s[i : i+4]; strings.ContainsAny(piece, "-/@#$:%") {
				forms = append(forms, piece)
			}
		}
		for _, form := range forms {
			for where, text := range outputs {
				if strings.Contains(text, form) {
					t.Errorf("%s shows the secret %q (as %q)", where, s, form)
				}
			}
		}
	}
	t.Logf("looked at %d outputs; standard error:\n%s", len(outputs), stderr.String())
}

// runCLIEnv is runCLI with environment variables set for the call.
func runCLIEnv(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return runCLI(t, dir, args...)
}

// lockedBuffer is a buffer a child process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
