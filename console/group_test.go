package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/engine"
)

// An instance of a group job serves its ownership as /api/status and
// per-partition metrics.
func TestGroupServer(t *testing.T) {
	st := GroupStatus{Group: "fraud", Topic: "orders", Changelog: "fraud-changelog", Partitions: 4, Owned: []int32{1, 3},
		Tasks: []TaskStatus{
			{Partition: 1, State: "running", Starts: 1, Restored: TaskRestore{Checkpoint: 7, Millis: 250}, ChangelogWritten: 1000, ChangelogReused: 5000,
				Status: engine.Status{Watermark: 1_780_000_000_000, OpenWindows: 12, Counts: engine.Counts{Read: 99}}},
			{Partition: 3, State: "restoring", Starts: 2},
		}}
	s := &GroupServer{Job: JobInfo{Name: "j"}, Status: func(context.Context) GroupStatus { return st }}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(path string) string {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var r GroupReply
	if err := json.Unmarshal([]byte(get("/api/status")), &r); err != nil {
		t.Fatal(err)
	}
	if r.Job.Name != "j" || r.Group.Group != "fraud" || !slices.Equal(r.Group.Owned, []int32{1, 3}) || len(r.Group.Tasks) != 2 || r.Group.Tasks[0].Restored.Checkpoint != 7 {
		t.Errorf("/api/status: %+v", r)
	}
	metrics := get("/metrics")
	for _, want := range []string{
		`weir_group_partitions_owned{group="fraud",job_name="j"} 2`,
		`weir_task_restore_seconds{job_name="j",partition="1"} 0.25`,
		`weir_task_starts_total{job_name="j",partition="3"} 2`,
		`weir_task_watermark_seconds{job_name="j",partition="1"} 1.78e+09`,
		`weir_task_records_read_total{job_name="j",partition="1"} 99`,
		`weir_task_open_windows{job_name="j",partition="1"} 12`,
		`weir_task_changelog_bytes_total{job_name="j",kind="written",partition="1"} 1000`,
		`weir_task_changelog_bytes_total{job_name="j",kind="reused",partition="1"} 5000`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A task that is not running has no watermark yet.
	if strings.Contains(metrics, `weir_task_watermark_seconds{job_name="j",partition="3"}`) {
		t.Error("a restoring task has a watermark")
	}
}
