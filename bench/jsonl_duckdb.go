package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// DuckDBDir is the directory of the DuckDB peer's module (bench/duckdb of the
// repository); weir bench builds it with the go command (cgo: it needs a C
// compiler) and runs the binary.
var DuckDBDir = filepath.Join("bench", "duckdb")

func init() {
	register(Bench{
		Name: "jsonl-duckdb", Group: "jsonl",
		About: "the peer for jsonl-run: DuckDB (in-process, Go bindings) over the same file as one batch query: read_json, count and sum per card and minute, COPY to JSON lines",
		Setup: onFile(jsonlInput(jsonlRate), func(in string) (int64, map[string]float64, string, error) {
			return duckdb(in, "")
		}),
	})
}

// duckdbResult is what bench/duckdb prints.
type duckdbResult struct {
	DuckDB       string  `json:"duckdb"`
	Lines        int64   `json:"lines"`
	Rows         int64   `json:"rows"`
	Seconds      float64 `json:"seconds"`
	Setup        float64 `json:"setup_seconds"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	PerCore      float64 `json:"events_per_sec_per_core"`
	Threads      int     `json:"threads"`
	MaxRSS       int64   `json:"max_rss_bytes"`
}

// duckdb builds the DuckDB peer and runs it over the file in, writing its
// results to out (to a temporary file if out is ""). The peer measures its
// own time and memory; they replace this process's in the result. The
// number of its rows, one per (card, minute), is given as panes, the figure
// jsonl-run reports.
func duckdb(in, out string) (int64, map[string]float64, string, error) {
	if _, err := os.Stat(filepath.Join(DuckDBDir, "go.mod")); err != nil {
		return 0, nil, "", fmt.Errorf("no DuckDB peer module in %s (run weir bench from the repository's root)", DuckDBDir)
	}
	bin := filepath.Join(os.TempDir(), "weir-bench-duckdb")
	t0 := time.Now()
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = DuckDBDir
	if b, err := build.CombinedOutput(); err != nil {
		return 0, nil, "", fmt.Errorf("building the DuckDB peer (it needs cgo and a C compiler): %v: %s", err, bytes.TrimSpace(b))
	}
	buildTime := time.Since(t0)
	args := []string{"-in", in, "-lines", fmt.Sprint(JSONLines)}
	if out != "" {
		args = append(args, "-out", out)
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t1 := time.Now()
	b, err := cmd.Output()
	if err != nil {
		return 0, nil, "", fmt.Errorf("the DuckDB peer failed: %v: %.300s %.300s", err, b, stderr.String())
	}
	var r duckdbResult
	if err := json.Unmarshal(bytes.TrimSpace(b), &r); err != nil {
		return 0, nil, "", fmt.Errorf("the DuckDB peer printed %q", b)
	}
	return r.Lines, map[string]float64{
		"peer_events_per_sec": r.EventsPerSec, "peer_per_core": r.PerCore, "peer_rss_mib": float64(r.MaxRSS) / (1 << 20),
		"peer_wall_s": r.Seconds, "peer_cpu_s": r.CPUSeconds,
		"panes": float64(r.Rows), "process_s": time.Since(t1).Seconds(), "build_s": buildTime.Seconds(),
	}, fmt.Sprintf("DuckDB %s, %d threads", r.DuckDB, r.Threads), nil
}
