package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/internal/clitest"
)

// TestMain builds the weir command, for the walkthrough of the getting-started
// page (docs/getting-started.md).
func TestMain(m *testing.M) { clitest.Main(m) }

// walkthrough is the getting-started page's console walkthrough: the weir commands of
// the block that follows its introduction, each as its arguments.
func walkthrough(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile("../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "A job that keeps running, in three terminals")
	if _, block, ok = strings.Cut(block, "```sh\n"); !ok {
		t.Fatal("docs/getting-started.md has no console walkthrough")
	}
	block, _, _ = strings.Cut(block, "```")
	var cmds [][]string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		line, _, _ = strings.Cut(line, "#")
		args, ok := strings.CutPrefix(strings.TrimSpace(line), "go run ./cmd/weir ")
		if !ok {
			t.Fatalf("not a weir command: %q", line)
		}
		cmds = append(cmds, strings.Fields(args))
	}
	return cmds
}

// The getting-started page's console walkthrough, run as written (on ports of the
// test's own): the development broker with orders coming live, the fraud
// job with its console, and weir status. In a browser the console shows
// what a live job is: the watermark a couple of seconds behind the clock,
// the partitions level, late and too-late orders, the alerts. Its
// screenshot is the README's and the page's (-update-screenshots).
func TestConsoleWalkthrough(t *testing.T) {
	cmds := walkthrough(t)
	want := [][]string{
		{"kafka", "--orders", "--rate", "200"},
		{"run", "--http", "127.0.0.1:8080", "examples/fraud/kafka.yaml"},
		{"status", "examples/fraud/kafka.yaml"},
	}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Fatalf("docs/getting-started.md's walkthrough is %q; this test runs %q", cmds, want)
	}
	if testing.Short() {
		t.Skip("the walkthrough waits for a live job's first minutes: not in -short")
	}
	// The repository's example, in a directory of the test's own: the job
	// writes its checkpoints beside it.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "examples", "fraud"), 0o755)
	b, err := os.ReadFile("../examples/fraud/kafka.yaml")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "examples", "fraud", "kafka.yaml"), b, 0o644)
	kafkaPort, httpPort := clitest.FreePort(t), clitest.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	start := func(args []string, env ...string) (*exec.Cmd, *clitest.Buffer) {
		cmd := exec.Command(clitest.Bin, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out := &clitest.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if t.Failed() {
				t.Logf("weir %s said:\n%s", strings.Join(args, " "), out)
			}
		})
		return cmd, out
	}
	start(append(cmds[0], "--port", fmt.Sprint(kafkaPort)))
	run := append([]string(nil), cmds[1]...)
	run[2] = addr
	_, jobLog := start(run, fmt.Sprintf("WEIR_KAFKA=127.0.0.1:%d", kafkaPort))
	jobStarted := time.Now()

	for deadline := time.Now().Add(time.Minute); ; {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the console did not come up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Until the job has taken late orders, set too-late ones aside and
	// written alerts.
	var st console.StatusReply
	var panes []json.RawMessage
	began := time.Now()
	for deadline := time.Now().Add(4 * time.Minute); ; {
		getJSON(t, "http://"+addr+"/api/status", &st)
		getJSON(t, "http://"+addr+"/api/panes", &panes)
		c := st.Status.Counts
		if c.LateAccepted > 0 && c.TooLate > 0 && len(panes) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 4 minutes: %d late accepted, %d too late, %d panes", c.LateAccepted, c.TooLate, len(panes))
		}
		time.Sleep(time.Second)
	}
	t.Logf("late and too-late orders and alerts after %s", time.Since(began).Round(time.Second))
	// The page, for some history.
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+addr+"/")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second) // what the charts show: 20 s of a live job, not an assertion
	var page struct {
		Gap, Late, TooLate, Held, HeldClass string
		LateChart, Panes                    int
	}
	script := `({gap: document.getElementById("wm-gap").textContent, late: document.getElementById("late-accepted").textContent,
		tooLate: document.getElementById("too-late").textContent, held: document.getElementById("held-by").textContent,
		heldClass: document.getElementById("held-by").className, lateChart: document.querySelectorAll("#late-chart svg path").length,
		panes: document.querySelectorAll("#panes tbody tr").length})`
	for deadline := time.Now().Add(20 * time.Second); ; {
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](script))
		if err != nil {
			t.Fatal(err)
		}
		bs, _ := json.Marshal(raw)
		json.Unmarshal(bs, &page)
		if page.Late != "0" && page.TooLate != "0" && page.LateChart > 0 && page.Panes > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows: %+v", page)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A live job keeps up: the watermark within seconds of the clock (its
	// delay is 2 s), and its three partitions level.
	if !strings.HasSuffix(page.Gap, " s") || strings.Contains(page.Gap, "min") || page.HeldClass != "banner ok" {
		t.Errorf("behind the clock %q; the partitions: %q (%s)", page.Gap, page.Held, page.HeldClass)
	}
	// The top of the page: the tiles, the watermarks, the late data.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1100)); err != nil {
		t.Fatal(err)
	}
	screenshotOf(t, ctx, "console.png", false)

	// What the job logs, as the connectors page shows it (the same job
	// without --http): when its first panes can come, and a line of
	// progress every 30 s.
	shown := clitest.PageOutput(t, "../docs/connectors.md", "go run ./cmd/weir run examples/fraud/kafka.yaml")
	for time.Since(jobStarted) < 75*time.Second && strings.Count(jobLog.String(), " progress: ") < 2 {
		time.Sleep(time.Second)
	}
	if missing := clitest.MissingShape(shown, jobLog.String()); missing != "" {
		t.Errorf("docs/connectors.md shows the job's log with a line of the shape of\n%s\nwhich its log lacks:\n%s", missing, jobLog)
	}

	// weir status finds the job's console by itself.
	cmd := exec.Command(clitest.Bin, cmds[2]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "job fraud-alerts-live, running\n") || strings.Count(string(out), "\norders/") != 3 ||
		!strings.Contains(string(out), " s behind processing time") {
		t.Errorf("weir status: %v\n%s", err, out)
	}
}
