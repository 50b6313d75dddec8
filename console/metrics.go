package console

import (
	"context"
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// Metric names, as /metrics serves them and the alert rules use them. Every
// metric has the label job (the job's name).
const (
	MetricRecords            = "weir_records_total"                       // counter, by outcome: accepted, duplicate, too_late, beyond_dedup_horizon, quarantined, lost, filtered, superseded, revision_too_late
	MetricRevisions          = "weir_revisions_total"                     // counter: versioned records that replaced their earlier version
	MetricQuarantined        = "weir_quarantined_total"                   // counter, by reason
	MetricLateAccepted       = "weir_late_records_accepted_total"         // counter: late, within the allowed lateness
	MetricLateDropped        = "weir_late_records_dropped_total"          // counter: too late (Flink's numLateRecordsDropped)
	MetricLatePartly         = "weir_late_records_partly_dropped_total"   // counter: accepted, and too late for some of their windows
	MetricTriggerFinished    = "weir_late_records_trigger_finished_total" // counter: came for a window whose composite trigger had finished
	MetricJoinTooLate        = "weir_join_records_too_late_total"         // counter, by join and side: too late for an interval join
	MetricLookupRecords      = "weir_lookup_records_total"                // counter, by lookup and outcome: cached, read, failed (to its dead letters)
	MetricLookupCalls        = "weir_lookup_calls_total"                  // counter, by lookup: calls to the table, and retries
	MetricProcessTimers      = "weir_process_timers_fired_total"          // counter, by keyed process function and domain
	MetricAggregationRecords = "weir_aggregation_records_total"           // counter, by aggregation of a job of several and outcome: accepted, late_accepted, too_late, late_for_some_windows, trigger_finished
	MetricWatermark          = "weir_watermark_seconds"                   // gauge: the combined watermark, Unix seconds
	MetricPartitionWM        = "weir_partition_watermark_seconds"         // gauge, by partition
	MetricWatermarkGap       = "weir_watermark_gap_seconds"               // gauge: processing time - watermark
	MetricSkew               = "weir_event_time_skew_seconds"             // gauge: the spread of the partitions' watermarks
	MetricWatermarkDelay     = "weir_watermark_delay_seconds"             // gauge: the bounded out-of-orderness
	MetricPartitionIdle      = "weir_partition_idle"                      // gauge 0/1, by partition
	MetricPartitionState     = "weir_partition_diagnosis"                 // gauge 1, by partition and diagnosis
	MetricPartitionBacklog   = "weir_partition_backlog"                   // gauge, by partition: records (bytes for a file) waiting
	MetricHoldsBack          = "weir_partition_holds_watermark"           // gauge 0/1, by partition
	MetricPaused             = "weir_partition_paused"                    // gauge 0/1, by partition: held by the watermark alignment
	MetricOpenWindows        = "weir_open_windows"                        // gauge
	MetricKeys               = "weir_keys"                                // gauge: keys with state
	MetricStateBytes         = "weir_state_bytes"                         // gauge
	MetricPanesFired         = "weir_panes_fired_total"                   // counter, by timing
	MetricSinkWritten        = "weir_sink_records_written_total"          // counter, by sink
	MetricSinkCommitted      = "weir_sink_records_committed_total"
	MetricSinkRefused        = "weir_sink_records_refused_total"      // counter, by sink: items it could not store (dead letters)
	MetricBackpressure       = "weir_reading_paused"                  // gauge 0/1: reading paused while a sink cannot commit or holds its bound
	MetricSinkCommit         = "weir_sink_commit_seconds"             // gauge, by sink: the last commit's duration
	MetricCkptDuration       = "weir_checkpoint_duration_seconds"     // gauge: the last checkpoint's
	MetricCkptBytes          = "weir_checkpoint_size_bytes"           // gauge: the last checkpoint's
	MetricCkptLast           = "weir_checkpoint_last_success_seconds" // gauge: Unix seconds of the last success
	MetricCkptAge            = "weir_checkpoint_age_seconds"          // gauge: since the last success
	MetricCkptTotal          = "weir_checkpoints_total"               // counter
	MetricCkptFailed         = "weir_checkpoint_failures_total"       // counter
	MetricCkptFailing        = "weir_checkpoint_failures_in_a_row"    // gauge
	MetricPaneLatency        = "weir_pane_latency_seconds"            // histogram: an on-time pane at the sinks after its firing
	MetricEventDelay         = "weir_event_delay_seconds"             // histogram, by partition: arrival (or processing) time minus event time
	MetricBehindWatermark    = "weir_event_behind_watermark_seconds"  // histogram: watermark minus event time, of the events that came behind it
	MetricUp                 = "weir_up"                              // gauge: 1 while the job answers, 0 when it is stale
)

// collector turns a job's status into metrics at each scrape: it costs the
// job nothing between scrapes.
type collector struct {
	s *Server
}

// Describe implements prometheus.Collector (an unchecked collector: the
// partitions and sinks are known only at a scrape).
func (c collector) Describe(chan<- *prometheus.Desc) {}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"job_name"}, labels...), nil)
}

func seconds(t mtime.Time) float64 { return float64(t) / 1000 }

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.jobStatus(context.Background())
	up := 1.0
	if st.Stale {
		up = 0
	}
	job := redactLabel(c.s.Redact, st.Job)
	ch <- prometheus.MustNewConstMetric(desc(MetricUp, upHelp), prometheus.GaugeValue, up, job)
	ch <- prometheus.MustNewConstMetric(desc(MetricWatermarkDelay, delayHelp), prometheus.GaugeValue, float64(st.WatermarkDelay)/1000, job)
	jobMetrics(ch, st, job, "", c.s.Redact)
}

// redactLabel is a label's value with the secrets redact takes out of a
// JSON document taken out of it: a label shows what the status shows.
func redactLabel(redact func([]byte) []byte, v string) string {
	if redact == nil {
		return v
	}
	b, _ := json.Marshal(v)
	var out string
	if json.Unmarshal(redact(b), &out) != nil {
		return "[redacted]"
	}
	return out
}

const (
	upHelp    = "1 while the job answers its status, 0 when the last answer is stale"
	delayHelp = "The watermark's bounded out-of-orderness (delay), seconds"
)

// jobMetrics sends the metrics of a job's status: every series labelled
// with the job's name, and in a group with the task's partition (task);
// every label's value redacted by redact (job and task are already).
func jobMetrics(ch chan<- prometheus.Metric, st engine.Status, job, task string, redact func([]byte) []byte) {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		if task != "" {
			labels = append(labels, "task")
		}
		return desc(name, help, labels...)
	}
	put := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		for i := range labels {
			labels[i] = redactLabel(redact, labels[i])
		}
		labels = append([]string{job}, labels...)
		if task != "" {
			labels = append(labels, task)
		}
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	cnt := st.Counts
	rec := desc(MetricRecords, "Records, by outcome: every record read is accepted, a duplicate, too late, filtered out (a where), superseded or a revision too late (version_field), or quarantined; lost counts those a source skipped (deleted before they were read, on_gap: skip)", "outcome")
	put(rec, prometheus.CounterValue, float64(cnt.Accepted), "accepted")
	put(rec, prometheus.CounterValue, float64(cnt.Duplicates), "duplicate")
	put(rec, prometheus.CounterValue, float64(cnt.TooLate), "too_late")
	put(rec, prometheus.CounterValue, float64(cnt.BeyondDedupHorizon), "beyond_dedup_horizon")
	put(rec, prometheus.CounterValue, float64(cnt.Quarantined), "quarantined")
	put(rec, prometheus.CounterValue, float64(cnt.Lost), "lost")
	put(rec, prometheus.CounterValue, float64(cnt.Filtered), "filtered")
	// A versioned job's (version_field): an older version arriving after a
	// newer one, and a revision that could not replace its earlier
	// version, each set aside in the late output.
	put(rec, prometheus.CounterValue, float64(cnt.Superseded), "superseded")
	put(rec, prometheus.CounterValue, float64(cnt.RevisionsTooLate), "revision_too_late")
	put(desc(MetricRevisions, "Records of a versioned job that replaced their earlier version in the results (a part of the accepted)"), prometheus.CounterValue, float64(cnt.Revisions))
	q := desc(MetricQuarantined, "Records quarantined, by reason", "reason")
	for r, n := range cnt.QuarantineReasons {
		put(q, prometheus.CounterValue, float64(n), r)
	}
	put(desc(MetricLateAccepted, "Late records added within the allowed lateness"), prometheus.CounterValue, float64(cnt.LateAccepted))
	put(desc(MetricLateDropped, "Records too late for every window: dropped, or sent to the late output (Flink's numLateRecordsDropped)"), prometheus.CounterValue, float64(cnt.TooLate))
	put(desc(MetricLatePartly, "Records accepted into some of their windows and too late for others (a sliding window's earlier ones): each also sent to the late output"), prometheus.CounterValue, float64(cnt.LateForSomeWindows))
	put(desc(MetricTriggerFinished, "Records that came for a window whose composite trigger had finished (a part of the too late, or of the partly dropped when other windows took them): each sent to the late output as trigger_finished"), prometheus.CounterValue, float64(cnt.TriggerFinished))
	// An interval join's (the Go API's): what came after the join let go
	// of what it could have joined, set aside on its late stream.
	joinLate := desc(MetricJoinTooLate, "Records too late for an interval join (too_late_for_join), by join and side (left, right): set aside on the join's late stream", "join", "side")
	for _, j := range st.Joins {
		put(joinLate, prometheus.CounterValue, float64(j.LateLeft), j.Name, "left")
		put(joinLate, prometheus.CounterValue, float64(j.LateRight), j.Name, "right")
	}
	// A lookup join's (the Go API's): where each record's row came from,
	// and the records whose lookup kept failing.
	lookupRec := desc(MetricLookupRecords, "Records of a lookup join, by lookup and outcome: their row from the cache (cached), read from the table (read, with or without a row), or their lookup failed after its retries (failed: on its dead letters)", "lookup", "outcome")
	lookupCalls := desc(MetricLookupCalls, "Calls of a lookup join to its table, by lookup and kind: a first try (call) or a retry (retry)", "lookup", "kind")
	for _, l := range st.Lookups {
		put(lookupRec, prometheus.CounterValue, float64(l.CacheHits), l.Name, "cached")
		put(lookupRec, prometheus.CounterValue, float64(l.Records-l.CacheHits-l.Failed), l.Name, "read")
		put(lookupRec, prometheus.CounterValue, float64(l.Failed), l.Name, "failed")
		put(lookupCalls, prometheus.CounterValue, float64(l.Calls), l.Name, "call")
		put(lookupCalls, prometheus.CounterValue, float64(l.Retries), l.Name, "retry")
	}
	timers := desc(MetricProcessTimers, "Timers fired by a keyed process function, by function and domain (event_time, processing_time)", "process", "domain")
	for _, p := range st.Processes {
		put(timers, prometheus.CounterValue, float64(p.FiredEventTimers), p.Name, "event_time")
		put(timers, prometheus.CounterValue, float64(p.FiredProcessingTimers), p.Name, "processing_time")
	}
	// A job of several aggregations: what each one's windows took and set
	// aside (the rest of a record's outcome is the same for every one).
	aggRec := desc(MetricAggregationRecords, "Records, by aggregation of a job of several and outcome: accepted into its windows (late_accepted: within its allowed lateness), too late for them, too late for some of them, or for a window whose composite trigger had finished; duplicates, filtered and quarantined are in weir_records_total, the same for every aggregation", "aggregation", "outcome")
	for _, a := range st.Aggregations {
		c := a.Counts
		for _, o := range []struct {
			outcome string
			n       int64
		}{{"accepted", c.Accepted}, {"late_accepted", c.LateAccepted}, {"too_late", c.TooLate}, {"late_for_some_windows", c.LateForSomeWindows}, {"trigger_finished", c.TriggerFinished}} {
			put(aggRec, prometheus.CounterValue, float64(o.n), a.Name, o.outcome)
		}
	}
	if st.Watermark > mtime.MinTime && st.Watermark < mtime.MaxTime {
		put(desc(MetricWatermark, "The combined watermark, Unix seconds"), prometheus.GaugeValue, seconds(st.Watermark))
		put(desc(MetricWatermarkGap, "Processing time minus the watermark, seconds"), prometheus.GaugeValue, float64(st.WatermarkGap)/1000)
	}
	put(desc(MetricSkew, "The spread of the partitions' watermarks, seconds"), prometheus.GaugeValue, float64(st.EventTimeSkew)/1000)
	pwm := desc(MetricPartitionWM, "A partition's watermark, Unix seconds", "partition")
	idle := desc(MetricPartitionIdle, "1 when a partition is idle: it does not hold the watermark back", "partition")
	diag := desc(MetricPartitionState, "A partition's diagnosis (active, inactive, backlogged, transport interrupted, declared idle)", "partition", "diagnosis")
	backlog := desc(MetricPartitionBacklog, "Records (for a file, bytes) waiting to be read, by partition", "partition")
	holds := desc(MetricHoldsBack, "1 for the partition that holds the combined watermark back", "partition")
	paused := desc(MetricPaused, "1 while the watermark alignment (max_drift) pauses a partition that ran ahead", "partition")
	for _, p := range st.Partitions {
		if p.Watermark > mtime.MinTime {
			put(pwm, prometheus.GaugeValue, seconds(p.Watermark), p.Name)
		}
		put(idle, prometheus.GaugeValue, b2f(p.Idle), p.Name)
		put(diag, prometheus.GaugeValue, 1, p.Name, p.Diagnosis)
		if p.Backlog >= 0 {
			put(backlog, prometheus.GaugeValue, float64(p.Backlog), p.Name)
		}
		put(holds, prometheus.GaugeValue, b2f(p.HoldsBack), p.Name)
		put(paused, prometheus.GaugeValue, b2f(p.Paused), p.Name)
	}
	put(desc(MetricOpenWindows, "Windows holding state"), prometheus.GaugeValue, float64(st.OpenWindows))
	put(desc(MetricKeys, "Keys holding state"), prometheus.GaugeValue, float64(st.Keys))
	put(desc(MetricStateBytes, "What the state takes at most: with the memory backend the Go heap in use (the state and more), with Pebble its files and cache"), prometheus.GaugeValue, float64(st.StateBytes))
	fired := desc(MetricPanesFired, "Panes fired, retractions included, by timing", "timing")
	for _, tm := range []string{"EARLY", "ON_TIME", "LATE"} {
		put(fired, prometheus.CounterValue, float64(st.PanesByTiming[tm]), tm)
	}
	wr := desc(MetricSinkWritten, "Records a sink was given to write by this run", "sink")
	cm := desc(MetricSinkCommitted, "Records that reached readers, by every run since the job started: committed at a checkpoint, or flushed", "sink")
	cl := desc(MetricSinkCommit, "How long the sink's last commit took, seconds", "sink")
	rf := desc(MetricSinkRefused, "Records a sink refused for a value it cannot store: not written there, sent to dead_letter if the job has one", "sink")
	for _, s := range st.Sinks {
		put(wr, prometheus.CounterValue, float64(s.Written), s.Name)
		put(cm, prometheus.CounterValue, float64(s.Committed), s.Name)
		put(cl, prometheus.GaugeValue, s.CommitLatency/1000, s.Name)
		put(rf, prometheus.CounterValue, float64(s.Refused), s.Name)
	}
	backpressure := 0.0
	if st.Backpressure != "" {
		backpressure = 1
	}
	put(desc(MetricBackpressure, "1 while reading is paused because a sink cannot commit, or holds checkpoint.max_held_output until a checkpoint takes it (backpressure): what waits for the commit does not grow"), prometheus.GaugeValue, backpressure)
	ck := st.Checkpoint
	put(desc(MetricCkptTotal, "Checkpoints taken, failed ones included"), prometheus.CounterValue, float64(ck.Total))
	put(desc(MetricCkptFailed, "Checkpoints that failed"), prometheus.CounterValue, float64(ck.Failed))
	put(desc(MetricCkptFailing, "Checkpoints that failed in a row"), prometheus.GaugeValue, float64(ck.Failures))
	if !ck.At.IsZero() {
		put(desc(MetricCkptDuration, "How long the last checkpoint took, barrier to commit, seconds"), prometheus.GaugeValue, ck.Duration.Seconds())
		put(desc(MetricCkptBytes, "The size of the last checkpoint"), prometheus.GaugeValue, float64(ck.Bytes))
		put(desc(MetricCkptLast, "When the last checkpoint succeeded, Unix seconds"), prometheus.GaugeValue, float64(ck.At.UnixMilli())/1000)
		put(desc(MetricCkptAge, "Seconds since the last checkpoint succeeded"), prometheus.GaugeValue, st.At.Sub(ck.At).Seconds())
	}
	hist := func(d *prometheus.Desc, h *engine.Histogram, labels ...string) {
		if h == nil || h.Bounds == nil {
			return
		}
		buckets := make(map[float64]uint64, len(h.Bounds))
		var cum uint64
		for i, b := range h.Bounds {
			cum += uint64(h.Counts[i])
			buckets[b/1000] = cum
		}
		for i := range labels {
			labels[i] = redactLabel(redact, labels[i])
		}
		labels = append([]string{job}, labels...)
		if task != "" {
			labels = append(labels, task)
		}
		ch <- prometheus.MustNewConstHistogram(d, uint64(h.Count), h.Sum/1000, buckets, labels...)
	}
	hist(desc(MetricPaneLatency, "How long after its firing an on-time pane reached the sinks, seconds (live jobs)"), &st.PaneLatency)
	delay := desc(MetricEventDelay, "How long after its event time an event arrived (its arrival time, or the processing time when it was read, minus its event time), seconds, by partition: what the watermark's delay has to cover", "partition")
	for i := range st.Partitions {
		hist(delay, st.Partitions[i].EventDelay, st.Partitions[i].Name)
	}
	hist(desc(MetricBehindWatermark, "How far behind the watermark an event came (the watermark at its arrival minus its event time), seconds, for the events that came behind it, late and too late: what an allowed lateness has to cover"), st.BehindWatermark)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
