package weir_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Importing weir links the engine and the connectors a program asks for,
// not the application built on it: no console (and its web and metrics
// handlers), no development broker, no benchmark, no test launcher, no
// job-file front door, no table drivers.
func TestTheLibraryLinksNoApplication(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/weirstream/weir").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps gave %d packages", len(deps))
	}
	for _, d := range deps {
		for _, banned := range []string{
			"github.com/weirstream/weir/console", "github.com/weirstream/weir/job", "github.com/weirstream/weir/bench",
			"github.com/weirstream/weir/internal/clitest", "github.com/weirstream/weir/cmd/",
			"github.com/twmb/franz-go/pkg/kfake", "github.com/chromedp/", "github.com/prometheus/client_golang/prometheus/promhttp",
			"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/weirstream/weir/internal/chart",
		} {
			if d == banned || strings.HasPrefix(d, banned+"/") || strings.HasSuffix(banned, "/") && strings.HasPrefix(d, banned) {
				t.Errorf("import weir links %s", d)
			}
		}
	}
	t.Logf("import weir links %d packages", len(deps))
}

// The job file's grammar (package jobfile) says what a file means and runs
// nothing: it links no engine, no operators, no translator, no group, no
// console. Its lowering (package job) is where those meet.
func TestTheGrammarLinksNoEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/weirstream/weir/jobfile").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps gave %d packages", len(deps))
	}
	for _, d := range deps {
		switch strings.TrimPrefix(d, "github.com/weirstream/weir/") {
		case "engine", "internal/exec", "internal/join", "translate", "group", "console", "job", "bench":
			t.Errorf("the grammar links %s", d)
		}
	}
}
