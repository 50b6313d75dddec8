package console

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirstream/weir/group"
)

// GroupReply is what /api/status answers for an instance of a group job.
type GroupReply struct {
	Job   JobInfo           `json:"job"`
	Group group.GroupStatus `json:"group"`
}

// GroupServer serves an instance of a consumer-group job: the same console,
// status and metrics as a single job, for each of its tasks, and a page
// listing them: / (the tasks), /task/P/ (the console of the task of
// partition P, with its api/status, api/panes and api/late), /api/status
// (a GroupReply), /metrics (the instance's and every task's, labelled with
// task), /healthz and /readyz.
type GroupServer struct {
	Job    JobInfo
	Status func(ctx context.Context) group.GroupStatus
	// Task is the console of the task of partition p while this instance
	// runs it, or nil.
	Task func(p int32) *Server
	// Redact, when set, takes the secrets out of every JSON reply.
	Redact func(doc []byte) []byte
	// Access says who may use the console (Listen enforces it).
	Access Access
	// CheckpointInterval is the tasks' checkpoint interval: /readyz wants
	// each task's last checkpoint no older than three of them.
	CheckpointInterval time.Duration

	mu       sync.Mutex
	handlers map[*Server]http.Handler // each task console's routes, made once
}

// Handler is the instance's routes (without the checks of Access, which
// Listen adds).
func (s *GroupServer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	reg := prometheus.NewRegistry()
	reg.MustRegister(groupCollector{s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, GroupReply{Job: s.Job, Group: s.Status(r.Context())}, s.Redact)
	})
	static, _ := fs.Sub(assets, "assets")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serveFile(w, r, static, "group.html") })
	mux.HandleFunc("GET /simulator", func(w http.ResponseWriter, r *http.Request) { serveFile(w, r, static, "simulator.html") })
	mux.HandleFunc("GET /api/simulate", simulate)
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("/task/{p}/", s.task)
	return mux
}

// task serves the console of one task, under /task/P/.
func (s *GroupServer) task(w http.ResponseWriter, r *http.Request) {
	p, err := strconv.ParseInt(r.PathValue("p"), 10, 32)
	var srv *Server
	if err == nil && s.Task != nil {
		srv = s.Task(int32(p))
	}
	if srv == nil {
		http.Error(w, fmt.Sprintf("weir: this instance runs no task of partition %s", r.PathValue("p")), http.StatusNotFound)
		return
	}
	s.mu.Lock()
	if s.handlers == nil {
		s.handlers = map[*Server]http.Handler{}
	}
	h, ok := s.handlers[srv]
	if !ok {
		h = http.StripPrefix("/task/"+r.PathValue("p"), srv.Handler())
		s.handlers[srv] = h
	}
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// readyz is ready when the instance is a member of its group and every
// task it owns runs, reads and checkpoints as a single job must (readyReasons).
func (s *GroupServer) readyz(w http.ResponseWriter, r *http.Request) {
	g := s.Status(r.Context())
	var why []string
	if g.Member == "" {
		why = append(why, "not a member of group "+g.Group+" yet")
	}
	if g.Unreachable {
		why = append(why, "the group's member cannot reach the brokers")
	}
	for i, th := range g.Threads {
		if th.Unreachable {
			why = append(why, fmt.Sprintf("thread %d cannot reach the brokers", i))
		}
	}
	now := time.Now()
	for _, t := range g.Tasks {
		name := fmt.Sprintf("%s/%d", g.Topic, t.Partition)
		if t.State != "running" {
			why = append(why, name+": "+t.State)
			continue
		}
		started := now
		if s.Task != nil {
			if srv := s.Task(t.Partition); srv != nil && !srv.Started.IsZero() {
				started = srv.Started
			}
		}
		for _, reason := range readyReasons(t.Status, s.CheckpointInterval, started, now) {
			why = append(why, name+": "+reason)
		}
	}
	answerReady(w, why)
}

// The metrics of an instance of a group job.
const (
	MetricGroupOwned      = "weir_group_partitions_owned"     // gauge
	MetricGroupWatermark  = "weir_group_watermark_seconds"    // gauge: the group's watermark, when the tasks share theirs and one is not idle
	MetricTaskWatermark   = "weir_task_watermark_seconds"     // gauge, per partition
	MetricTaskRestore     = "weir_task_restore_seconds"       // gauge, per partition: the last restore's duration
	MetricTaskStarts      = "weir_task_starts_total"          // counter, per partition
	MetricTaskRecordsRead = "weir_task_records_read_total"    // counter, per partition
	MetricTaskOpenWindows = "weir_task_open_windows"          // gauge, per partition
	MetricTaskChangelog   = "weir_task_changelog_bytes_total" // counter, per partition and kind (written, reused)
)

type groupCollector struct{ s *GroupServer }

func (c groupCollector) Describe(chan<- *prometheus.Desc) {}

func (c groupCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Status(context.Background())
	job := redactLabel(c.s.Redact, c.s.Job.Name)
	ch <- prometheus.MustNewConstMetric(desc(MetricUp, upHelp), prometheus.GaugeValue, 1, job)
	delay, delayKnown := 0.0, false
	for _, t := range st.Tasks {
		if t.State == "running" {
			// The job's metrics of every task, as a single job serves
			// them, with the task's partition.
			jobMetrics(ch, t.Status, job, redactLabel(c.s.Redact, fmt.Sprintf("%s/%d", st.Topic, t.Partition)), c.s.Redact)
			delay, delayKnown = float64(t.Status.WatermarkDelay)/1000, true
		}
	}
	if delayKnown {
		ch <- prometheus.MustNewConstMetric(desc(MetricWatermarkDelay, delayHelp), prometheus.GaugeValue, delay, job)
	}
	grp := redactLabel(c.s.Redact, st.Group)
	ch <- prometheus.MustNewConstMetric(desc(MetricGroupOwned, "Partitions of the input this instance owns.", "group"), prometheus.GaugeValue, float64(len(st.Owned)), job, grp)
	if w := st.GroupWatermark; w != nil {
		ch <- prometheus.MustNewConstMetric(desc(MetricGroupWatermark, "The group's watermark, which the tasks whose partitions are idle follow: the minimum over the tasks that are not idle, Unix seconds.", "group"), prometheus.GaugeValue, seconds(*w), job, grp)
	}
	for _, t := range st.Tasks {
		p := strconv.Itoa(int(t.Partition))
		ch <- prometheus.MustNewConstMetric(desc(MetricTaskRestore, "How long the task's last start took to read its changelog and restore.", "partition"), prometheus.GaugeValue, float64(t.Restored.Millis)/1000, job, p)
		ch <- prometheus.MustNewConstMetric(desc(MetricTaskStarts, "How many times the task started in this instance.", "partition"), prometheus.CounterValue, float64(t.Starts), job, p)
		if t.State != "running" {
			continue
		}
		cd := desc(MetricTaskChangelog, "Bytes of state the task's checkpoints wrote to its changelog (written) or found there unchanged (reused).", "partition", "kind")
		ch <- prometheus.MustNewConstMetric(cd, prometheus.CounterValue, float64(t.ChangelogWritten), job, p, "written")
		ch <- prometheus.MustNewConstMetric(cd, prometheus.CounterValue, float64(t.ChangelogReused), job, p, "reused")
		ch <- prometheus.MustNewConstMetric(desc(MetricTaskWatermark, "The task's watermark (its partition's), Unix seconds.", "partition"), prometheus.GaugeValue, seconds(t.Status.Watermark), job, p)
		ch <- prometheus.MustNewConstMetric(desc(MetricTaskRecordsRead, "Records the task read since it started.", "partition"), prometheus.CounterValue, float64(t.Status.Counts.Read), job, p)
		ch <- prometheus.MustNewConstMetric(desc(MetricTaskOpenWindows, "The task's open windows.", "partition"), prometheus.GaugeValue, float64(t.Status.OpenWindows), job, p)
	}
}
