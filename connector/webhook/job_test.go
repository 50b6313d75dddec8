package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir/checkpoint"
	_ "github.com/weirstream/weir/internal/kindtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
)

// receiver keeps what it takes by Idempotency-Key, and fails the first
// attempt of each request with a 503; it refuses with a 400 a pane whose
// key is "bad".
type receiver struct {
	mu       sync.Mutex
	attempts map[string]int
	taken    map[string][]string
	auth     map[string]bool
	// after, when set, is called with the number of keys taken after each.
	after func(n int)
	// down makes it answer every request with a 503.
	down bool
}

func newReceiver() *receiver {
	return &receiver{attempts: map[string]int{}, taken: map[string][]string{}, auth: map[string]bool{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	rc.mu.Lock()
	rc.auth[r.Header.Get("Authorization")] = true
	rc.attempts[key]++
	switch {
	case rc.down:
		rc.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case bytes.Contains(b, []byte(`"key":"bad"`)):
		rc.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"unknown card","detail":"cards named bad are not taken here"}`)
		return
	case rc.attempts[key] == 1:
		rc.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	rc.taken[key] = append(rc.taken[key], string(b))
	n, after := len(rc.taken), rc.after
	rc.mu.Unlock()
	if after != nil {
		after(n)
	}
}

// events are n events of the cards, a second apart, arriving as they
// happen.
func events(n int, cards ...string) []string {
	var out []string
	for i := range n {
		ts := 1_780_000_000_000 + int64(i)*1000
		out = append(out, fmt.Sprintf(`{"card":%q,"amount":%d,"ts":%d,"at":%d}`, cards[i%len(cards)], i%7, ts, ts))
	}
	return out
}

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// A job writes its results to a webhook as to a file: each pane arrives,
// once when de-duplicated by its Idempotency-Key, its body the file's
// line, through a receiver that fails each first attempt; the panes the
// receiver refuses are in the dead letter with its status and answer. The
// URL's path and query and the headers' values, given by variables, are in
// no log line, error, plan or dead letter.
func TestAJobWritesToAWebhook(t *testing.T) {
	rc := newReceiver()
	srv := httptest.NewServer(rc)
	defer srv.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(strings.Join(events(600, "c0", "c1", "bad", "c2"), "\n")+"\n"), 0o644)
	t.Setenv("HOOK_URL", srv.URL+"/services/T0/B0/PATHSECRET?sig=QUERYSECRET")
	t.Setenv("HOOK_AUTH", "Basic HEADERSECRET")
	yaml := `name: spend
source: {file: events.jsonl}
time: {field: ts, arrival_field: at}
key: card
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count, spent: sum(amount)}
output:
  - webhook: {url: "${HOOK_URL}", headers: {Authorization: "${HOOK_AUTH}", X-Team: fraud}, backoff: 1ms, max_backoff: 5ms, max_in_flight: 3}
  - results.jsonl
dead_letter: refused.jsonl
summary: summary.json
`
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	sum, err := job.Run(context.Background(), j, job.Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	var good, bad []string
	for _, l := range lines(filepath.Join(dir, "results.jsonl")) {
		if strings.Contains(l, `"key":"bad"`) {
			bad = append(bad, l)
		} else {
			good = append(good, l)
		}
	}
	rc.mu.Lock()
	var got []string
	for _, bodies := range rc.taken {
		got = append(got, bodies[0])
		if len(bodies) != 1 {
			t.Errorf("taken %d times: %s", len(bodies), bodies[0])
		}
	}
	auth := rc.auth
	rc.mu.Unlock()
	slices.Sort(got)
	slices.Sort(good)
	if len(good) != 33 || len(bad) != 11 || !slices.Equal(got, good) {
		t.Errorf("the webhook took %d panes, the file holds %d (and %d bad):\n%s\nwant\n%s", len(got), len(good), len(bad), strings.Join(got, "\n"), strings.Join(good, "\n"))
	}
	if !auth["Basic HEADERSECRET"] || len(auth) != 1 {
		t.Errorf("Authorization headers %v", auth)
	}
	dead := lines(filepath.Join(dir, "refused.jsonl"))
	if len(dead) != len(bad) {
		t.Errorf("%d dead letters, want %d:\n%s", len(dead), len(bad), strings.Join(dead, "\n"))
	}
	for _, d := range dead {
		if !strings.Contains(d, `400 Bad Request: {\"error\":\"unknown card\",\"detail\":\"cards named bad are not taken here\"}`) || !strings.Contains(d, `"output":"output[0]"`) {
			t.Errorf("dead letter %s", d)
		}
	}
	if sum.PanesWritten == 0 {
		t.Errorf("summary %+v", sum)
	}
	summary, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	shown := map[string]string{"log": log.String(), "plan": job.Plan(j).String(), "dead letters": strings.Join(dead, "\n"), "summary": string(summary),
		"file": j.Text(), "redacted": j.Redact(os.Getenv("HOOK_URL") + " " + os.Getenv("HOOK_AUTH"))}
	for what, text := range shown {
		for _, s := range []string{"PATHSECRET", "QUERYSECRET", "HEADERSECRET"} {
			if strings.Contains(text, s) {
				t.Errorf("the %s shows %s:\n%s", what, s, text)
			}
		}
	}
	if !strings.Contains(shown["plan"], "webhook "+srv.URL+"/…") || !strings.Contains(shown["log"], "webhook "+srv.URL+"/…: request failed (attempt 1): 503 Service Unavailable") {
		t.Errorf("plan:\n%s\nlog:\n%s", shown["plan"], shown["log"])
	}
}

// With checkpoints a job says it accepts what a webhook gives (at least
// once), or it is refused when it starts.
func TestAWebhookWithCheckpointsIsAtLeastOnce(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(strings.Join(events(10, "c0"), "\n")+"\n"), 0o644)
	yaml := `name: spend
source: {file: events.jsonl}
time: {field: ts}
window: {tumbling: 1m}
aggregates: {n: count}
output: {webhook: {url: "http://127.0.0.1:1/hook"}}
checkpoint: {dir: ckpt}
`
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = job.Run(context.Background(), j, job.Options{})
	if err == nil || !strings.Contains(err.Error(), "output: this sink is at_least_once: after a restart from a checkpoint it may write results again, and the job promises exactly_once") {
		t.Errorf("without delivery: %v", err)
	}
}

// A job restored from a checkpoint sends again what it had sent after
// that checkpoint, with the same Idempotency-Key and the same body: the
// receiver, de-duplicating by it, holds every pane once.
func TestARestoredJobSendsAgainWithTheSameKeys(t *testing.T) {
	rc := newReceiver()
	srv := httptest.NewServer(rc)
	defer srv.Close()
	evs := events(1200, "c0", "c1", "c2")
	quoted := make([]string, len(evs))
	for i, l := range evs {
		quoted[i] = fmt.Sprintf("%q", l)
	}
	dir := t.TempDir()
	yaml := fmt.Sprintf(`name: spend
source: {memlines: {lines: [%s]}}
time: {field: ts, arrival_field: at}
key: card
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 10s}
aggregates: {n: count, spent: sum(amount)}
output: {webhook: {url: %q, backoff: 1ms, max_backoff: 5ms, delivery: at_least_once}}
checkpoint: {dir: ckpt, interval: 1h}
`, strings.Join(quoted, ", "), srv.URL+"/hook")
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The first run takes a checkpoint after 300 events (90 panes); once
	// 200 panes are taken the receiver goes down and the job is stopped
	// without a savepoint (aborted, as its output does not go through):
	// the panes after the checkpoint were sent, and the checkpoint does not
	// know it.
	ctx, cancel := context.WithCancel(context.Background())
	rc.after = func(n int) {
		if n >= 200 {
			rc.mu.Lock()
			rc.down = true
			rc.mu.Unlock()
			cancel()
		}
	}
	var log1 bytes.Buffer
	job.Run(ctx, j, job.Options{Log: &log1, NoSavepointOnStop: true, CheckpointAfter: func(b int64) (checkpoint.Kind, bool) {
		return checkpoint.Periodic, b == 3
	}})
	rc.mu.Lock()
	rc.after, rc.down = nil, false
	first := map[string]string{}
	for k, b := range rc.taken {
		first[k] = b[0]
	}
	rc.mu.Unlock()
	var log2 bytes.Buffer
	if _, err := job.Run(context.Background(), j, job.Options{Log: &log2}); err != nil {
		t.Fatalf("%v\n%s", err, log2.String())
	}
	if !strings.Contains(log2.String(), "resuming from checkpoint") {
		t.Errorf("the second run did not restore:\n%s", log2.String())
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	again := 0
	for k, bodies := range rc.taken {
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Errorf("under %s: %s, then %s", k, bodies[0], b)
			}
		}
		if len(bodies) > 1 {
			again++
		}
	}
	if len(rc.taken) != 360 || again == 0 || len(first) < 200 {
		t.Errorf("%d panes taken (want 360), %d sent again, %d in the first run", len(rc.taken), again, len(first))
	}
	t.Logf("%d panes; the first run sent %d, the restored run sent %d of them again, under the same keys", len(rc.taken), len(first), again)
}
