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

// BeamDir is the directory of the Beam peer's module (bench/beam of the
// repository); weir bench runs it with the go command.
var BeamDir = filepath.Join("bench", "beam")

func init() {
	for _, c := range []struct{ events, keys int }{{1_000_000, 10_000}, {1_000_000, 1_000_000}} {
		register(Bench{
			Name: fmt.Sprintf("beam-%s", short(c.keys)), Group: "tumbling-" + short(c.keys),
			About: fmt.Sprintf("the peer: benchmark (1) on Apache Beam's Go SDK, local runner (%d events)", c.events),
			Run: func(time.Duration) (int64, map[string]float64, string, error) {
				return beam(c.events, c.keys)
			},
		})
	}
}

// beamResult is what bench/beam prints.
type beamResult struct {
	Runner       string  `json:"runner"`
	Events       int64   `json:"events"`
	Seconds      float64 `json:"seconds"`
	Setup        float64 `json:"setup_seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	PerCore      float64 `json:"events_per_sec_per_core"`
	MaxRSS       int64   `json:"max_rss_bytes"`
	WindowsOut   int64   `json:"windows_out"`
}

// beam runs the peer in its own module (go run builds it: the first time, the
// go command downloads Beam). Its own process measures its own time and
// memory; they replace this process's in the result (see Peer).
func beam(events, keys int) (int64, map[string]float64, string, error) {
	if _, err := os.Stat(filepath.Join(BeamDir, "go.mod")); err != nil {
		return 0, nil, "", fmt.Errorf("no Beam peer module in %s (run weir bench from the repository's root)", BeamDir)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(os.TempDir(), "weir-bench-beam"), ".")
	build.Dir = BeamDir
	if out, err := build.CombinedOutput(); err != nil {
		return 0, nil, "", fmt.Errorf("building the Beam peer: %v: %s", err, bytes.TrimSpace(out))
	}
	cmd := exec.Command(filepath.Join(os.TempDir(), "weir-bench-beam"), "-events", fmt.Sprint(events), "-keys", fmt.Sprint(keys))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	out, err := cmd.Output()
	if err != nil {
		return 0, nil, "", fmt.Errorf("the Beam peer failed: %v: %.300s", err, stderr.String())
	}
	var r beamResult
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return 0, nil, "", fmt.Errorf("the Beam peer printed %q", out)
	}
	return r.Events, map[string]float64{
		"peer_events_per_sec": r.EventsPerSec, "peer_per_core": r.PerCore, "peer_rss_mib": float64(r.MaxRSS) / (1 << 20),
		"setup_s": r.Setup, "process_s": time.Since(t0).Seconds(),
	}, "runner " + r.Runner, nil
}
