package console

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
)

// A job is ready while it runs, answers, reads every partition and
// checkpoints within three intervals; each reason it is not is said.
func TestReadyReasons(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	started := now.Add(-time.Minute)
	ok := engine.Status{State: "running", Checkpoint: engine.CheckpointInfo{At: now.Add(-25 * time.Second)},
		Partitions: []engine.PartitionStatus{{Name: "orders/0", Diagnosis: engine.DiagActive}}}
	cases := []struct {
		name     string
		change   func(*engine.Status)
		interval time.Duration
		started  time.Time
		want     string
	}{
		{"ready", func(*engine.Status) {}, 10 * time.Second, started, ""},
		{"no checkpoints", func(s *engine.Status) { s.Checkpoint = engine.CheckpointInfo{} }, 0, started, ""},
		{"stopped", func(s *engine.Status) { s.State = "stopped" }, 10 * time.Second, started, "the job is stopped"},
		{"stale", func(s *engine.Status) { s.Stale = true }, 10 * time.Second, started, "the job does not answer its status"},
		{"old checkpoint", func(*engine.Status) {}, 5 * time.Second, started, "the last checkpoint is 25s old, more than three checkpoint intervals (5s)"},
		{"none yet, early", func(s *engine.Status) { s.Checkpoint = engine.CheckpointInfo{} }, 30 * time.Second, started, ""},
		{"none yet, late", func(s *engine.Status) { s.Checkpoint = engine.CheckpointInfo{} }, 10 * time.Second, started, "no checkpoint in 1m0s, three checkpoint intervals (10s)"},
		{"source error", func(s *engine.Status) {
			s.Sources = []engine.SourceStatus{{Name: "input", Partitions: []connector.PartitionReport{{Name: "orders/0", Err: "dial tcp: connection refused"}}}}
			s.Partitions[0].Diagnosis, s.Partitions[0].Err = engine.DiagInterrupted, "dial tcp: connection refused"
		}, 10 * time.Second, started, "orders/0 cannot be read: dial tcp: connection refused"},
	}
	for _, c := range cases {
		st := ok
		st.Partitions = append([]engine.PartitionStatus(nil), ok.Partitions...)
		c.change(&st)
		if got := strings.Join(readyReasons(st, c.interval, c.started, now), "; "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// /api/status names its fields in snake_case, the sources' partitions
// included.
func TestStatusFieldNames(t *testing.T) {
	st := engine.Status{State: "running", Partitions: []engine.PartitionStatus{{Name: "p"}},
		Sources: []engine.SourceStatus{{Name: "input", Partitions: []connector.PartitionReport{{Partition: 0, Name: "p", Backlog: 3, CaughtUp: true, Err: "gone"}}}},
		Sinks:   []engine.SinkStatus{{Name: "output"}}}
	b, err := json.Marshal(newStatusReply(JobInfo{Name: "j", Settings: []Setting{{Name: "window", Value: "tumbling 1m0s"}}}, st))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	json.Unmarshal(b, &doc)
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if strings.HasSuffix(path, ".panes_by_timing") || strings.HasSuffix(path, ".quarantine_reasons") {
					continue // their keys are values: EARLY, not_json
				}
				if !snake.MatchString(k) {
					t.Errorf("%s.%s is not snake_case", path, k)
				}
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	walk("", doc)
	if !strings.Contains(string(b), `"partitions":[{"partition":0,"name":"p","backlog":3,"caught_up":true,"error":"gone"}]`) {
		t.Errorf("sources: %s", b)
	}
}
