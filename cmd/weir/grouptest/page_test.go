package grouptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

// The connectors page's consumer group, run as the page runs it: the
// development broker with the orders live, the fraud job as a group
// twice, and weir status asked of the instance that owns two of the three
// partitions prints what the page shows, but for its counts, times, hosts
// and ports.
func TestConnectorsPageGroupAsShown(t *testing.T) {
	const page = "../../../docs/connectors.md"
	shown := clitest.PageOutput(t, page, "go run ./cmd/weir status --http 127.0.0.1:8081 examples/fraud/group.yaml")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "examples", "fraud"), 0o755)
	job, err := os.ReadFile("../../../examples/fraud/group.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kafkaPort := clitest.FreePort(t)
	if !strings.Contains(string(job), "127.0.0.1:9092") {
		t.Fatal("examples/fraud/group.yaml names no broker on 127.0.0.1:9092")
	}
	job = []byte(strings.ReplaceAll(string(job), "127.0.0.1:9092", fmt.Sprintf("127.0.0.1:%d", kafkaPort)))
	os.WriteFile(filepath.Join(dir, "examples", "fraud", "group.yaml"), job, 0o644)
	start := func(args ...string) *clitest.Buffer {
		cmd, out := clitest.Start(t, dir, args...)
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if t.Failed() {
				t.Logf("weir %s said:\n%s", strings.Join(args, " "), out)
			}
		})
		return out
	}
	broker := start("kafka", "--orders", "--port", fmt.Sprint(kafkaPort))
	for deadline := time.Now().Add(time.Minute); !strings.Contains(broker.String(), "a DEVELOPMENT broker"); {
		if time.Now().After(deadline) {
			t.Fatal("weir kafka did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var addrs []string
	for range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", clitest.FreePort(t))
		start("run", "--http", addr, "examples/fraud/group.yaml")
		addrs = append(addrs, addr)
	}
	// Until one instance owns two partitions and the other one, each
	// task running, with transactions committed.
	var out []byte
	for deadline := time.Now().Add(2 * time.Minute); ; {
		for _, a := range addrs {
			cmd := exec.Command(clitest.Bin, "status", "--http", a, "examples/fraud/group.yaml")
			cmd.Dir = dir
			out, err = cmd.CombinedOutput()
			if err == nil && strings.Contains(string(out), " owns 2 of the 3 partitions of orders") && strings.Count(string(out), "  running  ") == 2 &&
				!strings.Contains(string(out), "; 0 transactions committed") {
				break
			}
			out = nil
		}
		if out != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes, no instance owns two partitions of orders with their tasks running and committing")
		}
		time.Sleep(time.Second)
	}
	if missing := clitest.MissingShape(shown, string(out)); missing != "" {
		t.Errorf("docs/connectors.md shows weir status with a line of the shape of\n%s\nwhich it lacks:\n%s", missing, out)
	}
}
