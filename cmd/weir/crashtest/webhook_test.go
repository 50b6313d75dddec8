package crashtest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

// A job writing to a webhook beside its file, killed with SIGKILL at 10
// random points and restarted each time: the file ends byte for byte as
// an uninterrupted run's, and the webhook's receiver, de-duplicating by
// Idempotency-Key, holds every pane of it once; what was sent again after
// a restart came under the key and with the body it had.
func TestKillNineWebhook(t *testing.T) {
	dir, ref := clitest.CrashReference(t)
	var mu sync.Mutex
	taken := map[string]string{} // body by Idempotency-Key
	requests, again := 0, 0
	var differ []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		defer mu.Unlock()
		requests++
		if prev, ok := taken[key]; ok {
			again++
			if prev != string(b) && len(differ) < 5 {
				differ = append(differ, prev+"\n"+string(b))
			}
			return
		}
		taken[key] = string(b)
	}))
	defer srv.Close()
	job := strings.Replace(clitest.CrashJob, "output: results.jsonl\n",
		fmt.Sprintf("output: [results.jsonl, {webhook: {url: %q, max_in_flight: 2, delivery: at_least_once}}]\n", srv.URL+"/hook"), 1) +
		"checkpoint: {dir: ckpt, interval: 150ms}\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	start := time.Now()
	clitest.KillRuns(t, dir, rand.New(rand.NewPCG(11, 11)), 10, 100, 800)
	clitest.SameAsReference(t, dir, ref)
	want, _ := os.ReadFile(filepath.Join(ref, "results.jsonl"))
	lines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	mu.Lock()
	defer mu.Unlock()
	got := make([]string, 0, len(taken))
	for _, b := range taken {
		got = append(got, b)
	}
	slices.Sort(got)
	slices.Sort(lines)
	if !slices.Equal(got, lines) {
		t.Errorf("the receiver holds %d panes under distinct keys, the uninterrupted run wrote %d", len(got), len(lines))
	}
	if len(differ) > 0 {
		t.Errorf("a key sent again with another body:\n%s", strings.Join(differ, "\n\n"))
	}
	if again == 0 {
		t.Error("nothing was sent twice: the kills did not cut into the webhook's output")
	}
	t.Logf("10 kills and the final run took %s: %d panes, %d requests, %d of them again after a restart", time.Since(start).Round(time.Millisecond), len(lines), requests, again)
}
