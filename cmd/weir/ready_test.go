package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/internal/clitest"
)

// httpGet is the status and body of a GET, or -1 when nothing answers.
func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls url until it answers code with a body that contains want.
func waitFor(t *testing.T, url string, code int, want string, log fmt.Stringer) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, body := httpGet(url)
		if c == code && strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %q, want %d with %q\n%s", url, c, body, code, want, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A live job answers /healthz and /readyz: ready while it reads and
// checkpoints; not ready, saying why, when its checkpoints stop
// succeeding (a Kafka source that cannot be read: kafkatest).
func TestHealthAndReadiness(t *testing.T) {
	dir := t.TempDir()
	port := clitest.FreePort(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(`name: live
source: {file: input.jsonl, follow: true}
time: {field: ts}
key: k
window: {tumbling: 1s}
aggregates: {n: count}
output: results.jsonl
checkpoint: {dir: ck, interval: 100ms, tolerable_failures: 1000}
http: 127.0.0.1:%d
`, port)), 0o644)
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(fmt.Sprintf(`{"k":"a","ts":%q}`+"\n", time.Now().UTC().Format(time.RFC3339Nano))), 0o644)
	cmd, stderr := clitest.Start(t, dir, "run", "job.yaml")
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitFor(t, base+"/healthz", 200, "ok\n", stderr)
	// Ready once checkpoints succeed.
	for deadline := time.Now().Add(time.Minute); ; {
		var r console.StatusReply
		_, body := httpGet(base + "/api/status")
		if json.Unmarshal([]byte(body), &r) == nil && r.Status.Checkpoint.ID > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint: %s\n%s", body, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, body := httpGet(base + "/readyz"); c != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", c, body)
	}
	// The checkpoint directory goes away, a file in its place:
	// checkpoints fail, and after three intervals the job is not ready.
	if err := os.Rename(filepath.Join(dir, "ck"), filepath.Join(dir, "ck.away")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ck"), nil, 0o600)
	body := waitFor(t, base+"/readyz", 503, "more than three checkpoint intervals (100ms)", stderr)
	if !strings.HasPrefix(body, "not ready: the last checkpoint is ") {
		t.Errorf("/readyz: %q", body)
	}
	if c, b := httpGet(base + "/healthz"); c != 200 || b != "ok\n" {
		t.Errorf("/healthz while not ready: %d %q", c, b)
	}
}

// weir run --http keeps the console up after a bounded job ends, with the
// status it ended with, until Ctrl-C; weir status finds it without the
// flag.
func TestConsoleStaysUpAfterTheEnd(t *testing.T) {
	dir := fraudDir(t)
	port := clitest.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd, stderr := clitest.Start(t, dir, "run", "--http", addr, "job.yaml")
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "the console stays up on http://"+addr+"/ until Ctrl-C") {
		if time.Now().After(deadline) {
			t.Fatalf("no word of the console staying up:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var r console.StatusReply
	if _, body := httpGet("http://" + addr + "/api/status"); json.Unmarshal([]byte(body), &r) != nil || r.Status.State != "stopped" || r.Status.Counts.Read != 5018 || r.Status.Counts.Accepted != 5000 {
		t.Errorf("/api/status after the end: %s", body)
	}
	if c, b := httpGet("http://" + addr + "/readyz"); c != 503 || b != "not ready: the job is stopped\n" {
		t.Errorf("/readyz after the end: %d %q", c, b)
	}
	st := exec.Command(clitest.Bin, "status", "job.yaml")
	st.Dir = dir
	out, err := st.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "job fraud-alerts, stopped") || !strings.Contains(string(out), "read 5018: 5000 accepted") {
		t.Errorf("weir status without --http: %v\n%s", err, out)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after Ctrl-C: %v\n%s", err, stderr)
	}
	// The record of the address is gone with the run.
	st = exec.Command(clitest.Bin, "status", "job.yaml")
	st.Dir = dir
	if out, err := st.CombinedOutput(); err == nil || !strings.Contains(string(out), "job.yaml serves no status") {
		t.Errorf("weir status after the run: %v\n%s", err, out)
	}
}
