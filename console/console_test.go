package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// twoPartitions is a live source of two partitions whose records the test
// adds and whose backlog it sets, as a Kafka source would report it.
type twoPartitions struct {
	mu      sync.Mutex
	recs    []connector.Record
	backlog [2]int64
	more    chan struct{}
	sent    bool
}

func (s *twoPartitions) add(part int, key string, ts mtime.Time) {
	s.mu.Lock()
	s.recs = append(s.recs, connector.Record{Value: []byte(fmt.Sprintf("%s %d", key, ts)), Partition: part, Arrival: mtime.MinTime})
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *twoPartitions) setBacklog(part int, n int64) {
	s.mu.Lock()
	s.backlog[part] = n
	s.mu.Unlock()
}

func (s *twoPartitions) Open(context.Context, []byte) error { return nil }
func (s *twoPartitions) Close() error                       { return nil }

func (s *twoPartitions) Read(ctx context.Context, b *connector.Batch) error {
	if !s.sent {
		s.sent = true
		b.Partitions = []connector.Partition{{Name: "orders/0"}, {Name: "orders/1"}}
		return nil
	}
	for {
		s.mu.Lock()
		b.Records = append(b.Records, s.recs...)
		s.recs = s.recs[:0]
		s.mu.Unlock()
		if len(b.Records) > 0 {
			return nil
		}
		select {
		case <-s.more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *twoPartitions) Report() []connector.PartitionReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []connector.PartitionReport
	for i, n := range s.backlog {
		out = append(out, connector.PartitionReport{Partition: i, Name: fmt.Sprintf("orders/%d", i), Backlog: n, CaughtUp: n == 0})
	}
	return out
}

type decoder struct{}

func (decoder) Decode(r *connector.Record, d *engine.Decoded[string, int]) {
	key, ts, _ := strings.Cut(string(r.Value), " ")
	t, _ := strconv.ParseInt(ts, 10, 64)
	d.Kind, d.Key, d.Time, d.Value = engine.Event, key, mtime.Time(t), 1
}

type discard struct{}

func (discard) Open(context.Context, connector.Resume) error              { return nil }
func (discard) Write(context.Context, []window.Pane[string, int64]) error { return nil }
func (discard) Flush(context.Context) error                               { return nil }
func (discard) PreCommit(context.Context, uint64) ([]byte, error)         { return nil, nil }
func (discard) Commit(context.Context, uint64, []byte) error              { return nil }
func (discard) Guarantee() connector.Guarantee                            { return connector.AtLeastOnce }
func (discard) Close() error                                              { return nil }

func get(t *testing.T, s *Server, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != 200 {
		t.Fatalf("%s: %d %s", path, rec.Code, b)
	}
	return string(b)
}

func status(t *testing.T, s *Server) engine.Status {
	t.Helper()
	var r StatusReply
	if err := json.Unmarshal([]byte(get(t, s, "/api/status")), &r); err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// serves reports whether a scrape has a series of the metric name: a
// histogram's name stands for its _bucket, _sum and _count series.
func serves(scrape, name string) bool {
	name = strings.TrimSuffix(name, "_bucket")
	return strings.Contains(scrape, "\n"+name+"{") || strings.Contains(scrape, "\n"+name+"_bucket{")
}

// metricLines are the lines of /metrics for the given metric names.
func metricLines(t *testing.T, s *Server, names ...string) []string {
	var out []string
	for _, l := range strings.Split(get(t, s, "/metrics"), "\n") {
		for _, n := range names {
			if strings.HasPrefix(l, n+"{") || strings.HasPrefix(l, n+" ") {
				out = append(out, l)
			}
		}
	}
	return out
}

func has(t *testing.T, lines []string, want ...string) {
	t.Helper()
	joined := strings.Join(lines, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("no %q in\n%s", w, joined)
		}
	}
}

// A live job with a fake clock: a partition goes quiet, then idle, then
// comes back with a too-late event; a backlog builds on the other. The
// metrics and the diagnoses say so, exactly.
func TestMetricsAndDiagnoses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &twoPartitions{more: make(chan struct{}, 1)}
		e, err := engine.New(engine.Config{Name: "orders", Live: true})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := engine.NewWindow(e, engine.WindowConfig[string, int, int64, int64]{
			Name: "window", Strategy: window.NewStrategy(window.TumblingWindows(10 * time.Second)),
			Watermark: watermark.BoundedOutOfOrderness(0).WithInterval(100 * time.Millisecond).WithIdleness(5 * time.Second),
			Agg:       aggregate.Count[int](), Parallelism: 1, Hash: func(s string) uint64 { return uint64(len(s)) },
		})
		out, _ := engine.NewSink[window.Pane[string, int64]](e, "output", discard{})
		w.Panes.Subscribe(out)
		h, _ := engine.NewHead(e, engine.HeadConfig[string, int]{Name: "head", Source: "orders", Decoder: decoder{}, Window: w})
		e.AddSource("orders", src, h)
		e.OnSignal(h)
		srv := &Server{Control: e.Control(), Job: JobInfo{Name: "orders"}}
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()

		t0 := mtime.Now() // 2000-01-01T00:00:00Z in the bubble
		// Before any record, both partitions are there, as the source
		// reports them: one with records waiting.
		src.setBacklog(1, 7)
		time.Sleep(time.Second)
		synctest.Wait()
		st := status(t, srv)
		if len(st.Partitions) != 2 || st.Partitions[0].Diagnosis != engine.DiagInactive || st.Partitions[1].Diagnosis != engine.DiagBacklogged || st.Partitions[1].Backlog != 7 || st.HeldBy != "" {
			t.Errorf("before the first record: %+v, held by %q", st.Partitions, st.HeldBy)
		}
		has(t, metricLines(t, srv, MetricPartitionState, MetricPartitionBacklog),
			`weir_partition_diagnosis{diagnosis="inactive",job_name="orders",partition="orders/0"} 1`,
			`weir_partition_diagnosis{diagnosis="backlogged",job_name="orders",partition="orders/1"} 1`,
			`weir_partition_backlog{job_name="orders",partition="orders/1"} 7`)
		src.setBacklog(1, 0)
		src.add(0, "a", t0+1000)
		src.add(1, "b", t0+1000)
		time.Sleep(time.Second) // t0+2s: p0 moves on, p1 is quiet
		src.add(0, "a", t0+12_000)
		time.Sleep(2 * time.Second) // t0+4s
		synctest.Wait()
		st = status(t, srv)
		if d0, d1 := st.Partitions[0].Diagnosis, st.Partitions[1].Diagnosis; d0 != engine.DiagActive || d1 != engine.DiagInactive {
			t.Errorf("at 4 s: %s, %s", d0, d1)
		}
		if st.HeldBy != "orders/1" || st.HeldBySince != t0+1000 || st.Watermark != t0+999 || st.EventTimeSkew != 11_000 {
			t.Errorf("held by %q since %s, watermark %s, skew %d", st.HeldBy, st.HeldBySince, st.Watermark, st.EventTimeSkew)
		}
		has(t, metricLines(t, srv, MetricPartitionState, MetricHoldsBack, MetricWatermarkGap),
			`weir_partition_diagnosis{diagnosis="inactive",job_name="orders",partition="orders/1"} 1`,
			`weir_partition_holds_watermark{job_name="orders",partition="orders/1"} 1`,
			`weir_watermark_gap_seconds{job_name="orders"} 3.001`)

		time.Sleep(3 * time.Second) // t0+7s: p1 has been quiet for 6 s
		synctest.Wait()
		st = status(t, srv)
		if d := st.Partitions[1].Diagnosis; d != engine.DiagIdle || st.HeldBy != "" || st.Watermark != t0+11_999 {
			t.Errorf("at 7 s: %s, held by %q, watermark %s", d, st.HeldBy, st.Watermark)
		}
		has(t, metricLines(t, srv, MetricPartitionIdle, MetricPanesFired, MetricOpenWindows),
			`weir_partition_idle{job_name="orders",partition="orders/1"} 1`,
			`weir_panes_fired_total{job_name="orders",timing="ON_TIME"} 2`,
			`weir_open_windows{job_name="orders"} 1`)

		// A backlog builds on p0; p1 comes back with a too-late event.
		src.setBacklog(0, 250)
		src.add(1, "b", t0+500)
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		st = status(t, srv)
		if d0, d1 := st.Partitions[0].Diagnosis, st.Partitions[1].Diagnosis; d0 != engine.DiagBacklogged || d1 != engine.DiagActive || st.Partitions[0].Backlog != 250 {
			t.Errorf("at 7.3 s: %s (backlog %d), %s", d0, st.Partitions[0].Backlog, d1)
		}
		has(t, metricLines(t, srv, MetricRecords, MetricLateDropped, MetricPartitionBacklog),
			`weir_records_total{job_name="orders",outcome="accepted"} 3`,
			`weir_records_total{job_name="orders",outcome="too_late"} 1`,
			`weir_late_records_dropped_total{job_name="orders"} 1`,
			`weir_partition_backlog{job_name="orders",partition="orders/0"} 250`)
		has(t, metricLines(t, srv, MetricWatermarkDelay), `weir_watermark_delay_seconds{job_name="orders"} 0`)
		// The event delays by partition: on p0 a at 1 s read at 1 s and a at
		// 12 s read at 2 s (ahead of the clock: 0); on p1 b at 1 s read at
		// 1 s, and b at 0.5 s read at 7 s (6.5 s), which came 11.499 s behind
		// the watermark (t0+11.999 s).
		has(t, metricLines(t, srv, MetricEventDelay+"_bucket", MetricEventDelay+"_sum", MetricEventDelay+"_count", MetricBehindWatermark+"_bucket", MetricBehindWatermark+"_sum"),
			`weir_event_delay_seconds_bucket{job_name="orders",partition="orders/0",le="0.1"} 2`,
			`weir_event_delay_seconds_count{job_name="orders",partition="orders/0"} 2`,
			`weir_event_delay_seconds_bucket{job_name="orders",partition="orders/1",le="0.1"} 1`,
			`weir_event_delay_seconds_bucket{job_name="orders",partition="orders/1",le="5"} 1`,
			`weir_event_delay_seconds_bucket{job_name="orders",partition="orders/1",le="10"} 2`,
			`weir_event_delay_seconds_sum{job_name="orders",partition="orders/1"} 6.5`,
			`weir_event_behind_watermark_seconds_bucket{job_name="orders",le="10"} 0`,
			`weir_event_behind_watermark_seconds_bucket{job_name="orders",le="30"} 1`,
			`weir_event_behind_watermark_seconds_sum{job_name="orders"} 11.499`)
		if d := st.Partitions[1].EventDelay; d == nil || d.Count != 2 || d.Sum != 6500 {
			t.Errorf("the event delay of orders/1 in the status: %+v", d)
		}
		// Every metric the shipped alert rules name is served.
		rules, err := os.ReadFile("../monitoring/weir-alerts.yml")
		if err != nil {
			t.Fatal(err)
		}
		scrape := get(t, srv, "/metrics")
		names := regexp.MustCompile(`weir_[a-z_]+`).FindAllString(string(rules), -1)
		if len(names) < 10 {
			t.Fatalf("the rules name %d metrics", len(names))
		}
		for _, n := range names {
			if !serves(scrape, n) {
				t.Errorf("the alert rules use %s, which /metrics does not serve", n)
			}
		}
		e.Control().Stop(context.Background(), true)
		<-done
	})
}

// The simulator answers on /api/simulate with weir's engine's results.
func TestSimulateEndpoint(t *testing.T) {
	srv := &Server{}
	var r SimResult
	if err := json.Unmarshal([]byte(get(t, srv, "/api/simulate?size=15&delay=2&tunnel=10&policy=lateness&seed=81")), &r); err != nil {
		t.Fatal(err)
	}
	want, _ := Simulate(SimParams{Size: 15, Delay: 2, Tunnel: 10, Policy: PolicyLateness, Seed: 81})
	if r.N != want.N || r.Late != want.Late || r.Lost != want.Lost || len(r.Windows) != 6 || r.Summary != want.Summary {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	if page := get(t, srv, "/simulator"); !strings.Contains(page, "<title>") {
		t.Errorf("/simulator: %.200s", page)
	}
}

// statusMetrics is a scrape of the metrics of a status, as /metrics
// serves them for a job of that status.
type statusMetrics struct{ st engine.Status }

func (statusMetrics) Describe(chan<- *prometheus.Desc) {}
func (m statusMetrics) Collect(ch chan<- prometheus.Metric) {
	jobMetrics(ch, m.st, "shops", "", nil)
}

// An interval join's records too late for it (too_late_for_join), which
// its status counts by side, are counted in /metrics too, by join and side.
func TestJoinTooLateMetrics(t *testing.T) {
	got := scrape(engine.Status{Joins: []engine.JoinStatus{
		{Name: "payments", Pairs: 9, LateLeft: 2, LateRight: 1},
		{Name: "refunds", LateRight: 4},
	}}, "weir_join_records_too_late_total{")
	want := `weir_join_records_too_late_total{job_name="shops",join="payments",side="left"} 2
weir_join_records_too_late_total{job_name="shops",join="payments",side="right"} 1
weir_join_records_too_late_total{job_name="shops",join="refunds",side="left"} 0
weir_join_records_too_late_total{job_name="shops",join="refunds",side="right"} 4`
	if got != want {
		t.Errorf("/metrics:\n%s\nwant\n%s", got, want)
	}
}

// A lookup join's records by where their row came from, its calls, and a
// keyed process function's timers, as their statuses count them.
func TestLookupAndProcessMetrics(t *testing.T) {
	st := engine.Status{
		Lookups:   []engine.LookupStatus{{Name: "limits", Records: 10, CacheHits: 6, Failed: 1, Calls: 3, Retries: 2}},
		Processes: []engine.ProcessStatus{{Name: "process:alerts", FiredEventTimers: 5, FiredProcessingTimers: 7}},
	}
	got := scrape(st, "weir_lookup_") + "\n" + scrape(st, "weir_process_")
	want := `weir_lookup_calls_total{job_name="shops",kind="call",lookup="limits"} 3
weir_lookup_calls_total{job_name="shops",kind="retry",lookup="limits"} 2
weir_lookup_records_total{job_name="shops",lookup="limits",outcome="cached"} 6
weir_lookup_records_total{job_name="shops",lookup="limits",outcome="failed"} 1
weir_lookup_records_total{job_name="shops",lookup="limits",outcome="read"} 3
weir_process_timers_fired_total{domain="event_time",job_name="shops",process="process:alerts"} 5
weir_process_timers_fired_total{domain="processing_time",job_name="shops",process="process:alerts"} 7`
	if got != want {
		t.Errorf("/metrics:\n%s\nwant\n%s", got, want)
	}
}

// scrape is what /metrics serves for a job of status st, the lines that
// begin with prefix.
func scrape(st engine.Status, prefix string) string {
	reg := prometheus.NewRegistry()
	reg.MustRegister(statusMetrics{st})
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var got []string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, prefix) {
			got = append(got, l)
		}
	}
	return strings.Join(got, "\n")
}

// A job of several aggregations has each one's share of the records in
// /metrics, by aggregation and outcome.
func TestAggregationMetrics(t *testing.T) {
	got := scrape(engine.Status{Aggregations: []engine.AggregationStatus{
		{Name: "per_card", Counts: engine.Counts{Accounting: engine.Accounting{Accepted: 90, TooLate: 10}}},
		{Name: "per_hour", Counts: engine.Counts{Accounting: engine.Accounting{Accepted: 99, TooLate: 1}, LateForSomeWindows: 3, LateAccepted: 2}},
	}}, "weir_aggregation_records_total{")
	want := `weir_aggregation_records_total{aggregation="per_card",job_name="shops",outcome="accepted"} 90
weir_aggregation_records_total{aggregation="per_card",job_name="shops",outcome="late_accepted"} 0
weir_aggregation_records_total{aggregation="per_card",job_name="shops",outcome="late_for_some_windows"} 0
weir_aggregation_records_total{aggregation="per_card",job_name="shops",outcome="too_late"} 10
weir_aggregation_records_total{aggregation="per_card",job_name="shops",outcome="trigger_finished"} 0
weir_aggregation_records_total{aggregation="per_hour",job_name="shops",outcome="accepted"} 99
weir_aggregation_records_total{aggregation="per_hour",job_name="shops",outcome="late_accepted"} 2
weir_aggregation_records_total{aggregation="per_hour",job_name="shops",outcome="late_for_some_windows"} 3
weir_aggregation_records_total{aggregation="per_hour",job_name="shops",outcome="too_late"} 1
weir_aggregation_records_total{aggregation="per_hour",job_name="shops",outcome="trigger_finished"} 0`
	if got != want {
		t.Errorf("/metrics:\n%s\nwant\n%s", got, want)
	}
}
