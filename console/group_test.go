package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/mtime"
)

// An instance of a group job serves its ownership as /api/status and
// per-partition metrics.
func TestGroupServer(t *testing.T) {
	st := group.GroupStatus{Group: "fraud", Topic: "orders", Changelog: "fraud-changelog", Partitions: 4, Owned: []int32{1, 3},
		Tasks: []group.TaskStatus{
			{Partition: 1, State: "running", Starts: 1, Restored: group.TaskRestore{Checkpoint: 7, Millis: 250}, ChangelogWritten: 1000, ChangelogReused: 5000,
				Status: engine.Status{Watermark: 1_780_000_000_000, OpenWindows: 12, Counts: engine.Counts{Accounting: engine.Accounting{Read: 99}}}},
			{Partition: 3, State: "restoring", Starts: 2},
		}}
	gw := mtime.Time(1_779_999_000_000)
	st.Watermarks, st.GroupWatermark = "fraud-watermarks", &gw
	s := &GroupServer{Job: JobInfo{Name: "j"}, Status: func(context.Context) group.GroupStatus { return st }}
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
		`weir_group_watermark_seconds{group="fraud",job_name="j"} 1.779999e+09`,
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

// An instance serves what a single job serves: every metric the shipped
// alert rules name (a task's labelled with it), the page of its tasks and
// each running task's console, and /readyz says which task is not ready.
func TestGroupServerLikeAJob(t *testing.T) {
	at := time.Now()
	running := func(p int32, ck time.Time) group.TaskStatus {
		return group.TaskStatus{Partition: p, State: "running", Status: engine.Status{State: "running", At: at, WatermarkDelay: 2000,
			Watermark: 1_780_000_000_000, WatermarkGap: 3000, Counts: engine.Counts{Accounting: engine.Accounting{Read: 10, Accepted: 9, TooLate: 1}},
			Partitions: []engine.PartitionStatus{{Name: fmt.Sprintf("orders/%d", p), Watermark: 1_780_000_000_000, Diagnosis: engine.DiagActive,
				EventDelay: &engine.Histogram{Bounds: []float64{100, 1000}, Counts: []int64{7, 3, 0}, Sum: 900, Count: 10}}},
			BehindWatermark: &engine.Histogram{Bounds: []float64{100, 1000}, Counts: []int64{0, 1, 0}, Sum: 500, Count: 1},
			Checkpoint:      engine.CheckpointInfo{At: ck, Total: 3}}}
	}
	st := group.GroupStatus{Group: "fraud", Member: "m1", Generation: 4, Topic: "orders", Changelog: "fraud-changelog", Partitions: 3, Owned: []int32{0, 2},
		Tasks: []group.TaskStatus{running(0, at.Add(-time.Second)), running(2, at.Add(-time.Minute))}}
	s := &GroupServer{Job: JobInfo{Name: "j"}, Status: func(context.Context) group.GroupStatus { return st }, CheckpointInterval: time.Second}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		`weir_up{job_name="j"} 1`,
		`weir_watermark_delay_seconds{job_name="j"} 2`,
		`weir_records_total{job_name="j",outcome="accepted",task="orders/0"} 9`,
		`weir_late_records_dropped_total{job_name="j",task="orders/2"} 1`,
		`weir_partition_watermark_seconds{job_name="j",partition="orders/2",task="orders/2"} 1.78e+09`,
		`weir_event_delay_seconds_bucket{job_name="j",partition="orders/0",task="orders/0",le="0.1"} 7`,
		`weir_event_delay_seconds_count{job_name="j",partition="orders/2",task="orders/2"} 10`,
		`weir_event_behind_watermark_seconds_sum{job_name="j",task="orders/0"} 0.5`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	rules, err := os.ReadFile("../monitoring/weir-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range regexp.MustCompile(`weir_[a-z_]+`).FindAllString(string(rules), -1) {
		if !serves(metrics, n) {
			t.Errorf("the alert rules use %s, which a group instance's /metrics does not serve", n)
		}
	}
	if code, page := get("/"); code != 200 || !strings.Contains(page, `<script type="module" src="assets/group.js">`) {
		t.Errorf("/: %d %.200s", code, page)
	}
	if code, js := get("/assets/group.js"); code != 200 || !strings.Contains(js, `h("a", {href: `+"`task/${t.partition}/`"+`}`) {
		t.Errorf("/assets/group.js: %d", code)
	}
	if code, body := get("/task/0/"); code != 404 || body != "weir: this instance runs no task of partition 0\n" {
		t.Errorf("/task/0/ without a console: %d %q", code, body)
	}
	code, body := get("/readyz")
	want := "not ready: orders/2: the last checkpoint is 1m0s old, more than three checkpoint intervals (1s)\n"
	if code != 503 || body != want {
		t.Errorf("/readyz: %d %q, want %q", code, body, want)
	}
	st.Tasks[1] = running(2, at)
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	st.Tasks = append(st.Tasks, group.TaskStatus{Partition: 1, State: "restoring"})
	st.Member = ""
	if code, body := get("/readyz"); code != 503 || body != "not ready: not a member of group fraud yet; orders/1: restoring\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
}
