package bench

import (
	"fmt"
	"runtime"
	"strings"
)

// nexmarkFloored are the Nexmark queries with a hand-written floor.
var nexmarkFloored = []string{"q3", "q5", "q7", "q8", "q11"}

func find(rs []Result, name string) (Result, bool) {
	for _, r := range rs {
		if r.Name == name && r.Err == "" && r.EventsPerSec > 0 {
			return r, true
		}
	}
	return Result{}, false
}

// Ratios compares each of weir's figures with its floor and its peer.
func Ratios(rs []Result) string {
	var b strings.Builder
	b.WriteString("ratios (from this run)\n")
	for _, k := range []string{"10k", "1m"} {
		for _, v := range []string{"chained", "p1"} {
			w, okw := find(rs, "tumbling-"+k+"-"+v)
			if f, ok := find(rs, "floor-"+k); ok && okw {
				fmt.Fprintf(&b, "  tumbling-%s-%s takes %.2fx the time of the hand-written floor\n", k, v, f.EventsPerSec/w.EventsPerSec)
			}
			if p, ok := find(rs, "beam-"+k); ok && okw {
				fmt.Fprintf(&b, "  tumbling-%s-%s is %.0fx Beam Go's local runner per core (%.0fx in events/s)\n", k, v, w.PerCore/p.PerCore, w.EventsPerSec/p.EventsPerSec)
			}
		}
		w, okw := find(rs, "tumbling-"+k+"-p1")
		for _, every := range []string{"10s", "1s"} {
			if c, ok := find(rs, "tumbling-"+k+"-p1-ckpt"+every); ok && okw {
				fmt.Fprintf(&b, "  checkpoints every %s cost %.1f%% of tumbling-%s-p1's throughput (the operator stalled %.2f%% of the time for snapshots)\n",
					every, 100*(1-c.EventsPerSec/w.EventsPerSec), k, c.Extra["ckpt_stall_pct"])
			}
		}
		if p2, ok := find(rs, "tumbling-"+k+"-p2"); ok && okw {
			fmt.Fprintf(&b, "  parallelism 2 gives %.2fx parallelism 1 (events/s)\n", p2.EventsPerSec/w.EventsPerSec)
		}
	}
	if j, ok := find(rs, "jsonl-run"); ok {
		if p, ok := find(rs, "jsonl-parse-only"); ok {
			fmt.Fprintf(&b, "  weir run takes %.2fx the time of the parse-only pass over the same lines\n", p.EventsPerSec/j.EventsPerSec)
		}
		if p, ok := find(rs, "jsonl-run-percentile"); ok {
			fmt.Fprintf(&b, "  a percentile for the sum takes %.2fx jsonl-run's time\n", j.EventsPerSec/p.EventsPerSec)
		}
		if m, ok := find(rs, "jsonl-run-metrics"); ok {
			fmt.Fprintf(&b, "  serving the console and metrics (scraped every second) costs %.1f%% of jsonl-run's throughput\n", 100*(1-m.EventsPerSec/j.EventsPerSec))
		}
		if f, ok := find(rs, "jsonl-run-where"); ok {
			fmt.Fprintf(&b, "  a where: that keeps every line costs %.1f%% of jsonl-run's throughput\n", 100*(1-f.EventsPerSec/j.EventsPerSec))
		}
		if d, ok := find(rs, "jsonl-duckdb"); ok {
			// The same lines: the ratio of the rates is that of the wall times.
			fmt.Fprintf(&b, "  weir run takes %.2fx DuckDB's wall time (%.2fx its CPU time)\n", d.EventsPerSec/j.EventsPerSec, d.PerCore/j.PerCore)
		}
	}
	if j, ok := find(rs, "jsonl-run"); ok {
		for _, f := range [][2]string{{"avro", "an Avro object container file"}, {"csv", "a CSV file"}} {
			if r, ok := find(rs, "jsonl-run-"+f[0]); ok {
				fmt.Fprintf(&b, "  the job over the same events in %s takes %.2fx jsonl-run's time\n", f[1], j.EventsPerSec/r.EventsPerSec)
			}
		}
	}
	if j, ok := find(rs, "decode-json"); ok {
		for _, f := range []string{"avro", "protobuf"} {
			if d, ok := find(rs, "decode-"+f); ok {
				fmt.Fprintf(&b, "  decoding an order of %s takes %.2fx the time of its JSON (%.0f against %.0f ns an order, one core)\n", f, j.PerCore/d.PerCore, 1e9/d.PerCore, 1e9/j.PerCore)
			}
		}
	}
	if j, ok := find(rs, "join-run"); ok {
		if f, ok := find(rs, "join-floor"); ok {
			fmt.Fprintf(&b, "  the join job takes %.2fx its hand-written floor's time (%.2fx its CPU time); both find %.0f unpaid orders\n", f.EventsPerSec/j.EventsPerSec, f.PerCore/j.PerCore, j.Extra["unpaid"])
		}
	}
	if w, ok := find(rs, "pebble-1m-p1"); ok {
		if c, ok := find(rs, "pebble-1m-p1-ckpt1s"); ok {
			fmt.Fprintf(&b, "  on Pebble, checkpoints every 1s cost %.1f%% of pebble-1m-p1's throughput (the operator stalled %.2f%% of the time; %.1f MiB written a checkpoint; state %.0f MiB on disk, %.0fx the budget)\n",
				100*(1-c.EventsPerSec/w.EventsPerSec), c.Extra["ckpt_stall_pct"], c.Extra["ckpt_mib"], c.Extra["state_mib"], c.Extra["state_mib"]/c.Extra["budget_mib"])
		}
	}
	if p, ok := find(rs, "job-1m-pebble"); ok {
		if m, ok := find(rs, "job-1m-memory"); ok {
			fmt.Fprintf(&b, "  a whole job file of 1M keys on Pebble takes %.2fx its time on the memory backend (%.2f s against %.2f s; peak RSS %.0f against %.0f MiB)\n",
				p.Wall/m.Wall, p.Wall, m.Wall, float64(p.PeakRSS)/(1<<20), float64(m.PeakRSS)/(1<<20))
		}
	}
	for _, backend := range []string{"memory", "pebble"} {
		w, okw := find(rs, "steep-"+backend)
		if c, ok := find(rs, "steep-"+backend+"-ckpt500ms"); ok && okw {
			fmt.Fprintf(&b, "  the steep job on %s takes %.2fx its time without checkpoints with a checkpoint every 500ms (%.2f s against %.2f s)\n", backend, c.Wall/w.Wall, c.Wall, w.Wall)
		}
	}
	for _, q := range nexmarkFloored {
		w, okw := find(rs, "nexmark-"+q)
		if f, ok := find(rs, "nexmark-"+q+"-floor"); ok && okw {
			fmt.Fprintf(&b, "  nexmark-%s takes %.2fx the time of its hand-written floor\n", q, f.EventsPerSec/w.EventsPerSec)
		}
	}
	for _, db := range []string{"sqlite", "postgres"} {
		for _, f := range tableFloors {
			if r, u, fl, ok := upsertRatio(rs, db, f.name); ok {
				fmt.Fprintf(&b, "  upserts into %s take %.2fx the time of %s (%.0f vs %.0f rows/s)\n", db, r, f.what, u, fl)
			}
		}
	}
	return b.String()
}

// tableFloors are the floors of the upsert benchmarks: the fair one first.
var tableFloors = []struct{ name, what string }{
	{"keyed-insert", "plain inserts into a table with the same primary key (the fair floor)"},
	{"append", "appends to a table without a key"},
}

// upsertRatio is how many times the time of the floor named floor
// ("keyed-insert", "append") the upserts into db take, with both rates.
func upsertRatio(rs []Result, db, floor string) (ratio, upserts, floorRate float64, ok bool) {
	u, oku := find(rs, "upsert-"+db)
	f, okf := find(rs, floor+"-"+db+"-floor")
	upserts, floorRate = u.Extra["write_rows_per_s"], f.Extra["write_rows_per_s"]
	if !oku || !okf || upserts <= 0 {
		return 0, 0, 0, false
	}
	return floorRate / upserts, upserts, floorRate, true
}

// Targets says, for each target of the performance issue, what was measured
// and whether it is met.
func Targets(rs []Result) string {
	type row struct{ what, measured, status string }
	var rows []row
	check := func(what string, measured float64, ok bool, have bool, unit string) {
		status := "not met"
		if !have {
			status, unit = "not measured", ""
		} else if ok {
			status = "met"
		}
		rows = append(rows, row{what, fmtNum(measured, unit, have), status})
	}
	for _, name := range []string{"tumbling-10k-chained", "tumbling-10k-p1"} {
		w, okw := find(rs, name)
		check(name+": >= 5M events/s per core", w.PerCore, w.PerCore >= 5e6, okw, "/s")
		if f, ok := find(rs, "floor-10k"); ok && okw {
			r := f.EventsPerSec / w.EventsPerSec
			check(name+": <= 2x the floor's time", r, r <= 2, true, "x")
		} else {
			check(name+": <= 2x the floor's time", 0, false, false, "")
		}
		if p, ok := find(rs, "beam-10k"); ok && okw {
			r := w.PerCore / p.PerCore
			check(name+": >= 10x Beam Go's local runner (per core)", r, r >= 10, true, "x")
		} else {
			check(name+": >= 10x Beam Go's local runner (per core)", 0, false, false, "")
		}
		check(name+": 0 allocations per event", w.AllocsPerEv, w.AllocsPerEv < 0.01, okw, "")
	}
	j, okj := find(rs, "jsonl-run")
	check("JSON lines: >= 1M lines/s per core", j.PerCore, j.PerCore >= 1e6, okj, "/s")
	if p, ok := find(rs, "jsonl-parse-only"); ok && okj {
		r := p.EventsPerSec / j.EventsPerSec
		check("JSON lines: within 1.5x of the parse-only pass", r, r <= 1.5, true, "x")
	} else {
		check("JSON lines: within 1.5x of the parse-only pass", 0, false, false, "")
	}
	{
		d, okd := find(rs, "jsonl-duckdb")
		r := d.EventsPerSec / j.EventsPerSec // weir's wall time over DuckDB's
		check("JSON lines: within 1.25x of DuckDB's wall time", r, r <= 1.25, okd && okj, "x")
		check("JSON lines: faster than DuckDB's batch aggregation (wall time)", r, r < 1, okd && okj, "x")
		f, okf := find(rs, "jsonl-scanner-floor")
		r = f.PerCore / j.PerCore // CPU per line over the scanner's
		check("JSON lines: within 1.5x of the hand scanner's CPU per line", r, r <= 1.5, okf && okj, "x")
		one, ok1 := find(rs, "jsonl-run-1core")
		r = j.EventsPerSec / one.EventsPerSec
		check("JSON lines: 2 cores >= 1.8x one core's throughput", r, r >= 1.8, ok1 && okj, "x")
		for _, f := range []string{"avro", "csv"} {
			a, oka := find(rs, "jsonl-run-"+f)
			r = j.EventsPerSec / a.EventsPerSec // its time over JSON lines'
			check("a whole job on "+strings.ToUpper(f)+": at least as fast as on JSON lines", r, r <= 1, oka && okj, "x")
		}
		k, okk := find(rs, "state-per-key")
		bpk := k.Extra["bytes_per_key"]
		check("<= 300 bytes of memory per live key (count and sum, live heap)", bpk, bpk <= 300, okk && bpk > 0, "B")
	}
	for _, q := range []struct {
		name string
		min  float64
	}{{"nexmark-q5", 500e3}, {"nexmark-q7", 400e3}, {"nexmark-q8", 500e3}, {"nexmark-q11", 150e3}} {
		r, ok := find(rs, q.name)
		check(fmt.Sprintf("%s: >= %.0fK events/s per core", q.name, q.min/1000), r.PerCore, r.PerCore >= q.min, ok, "/s")
	}
	for _, q := range nexmarkFloored {
		w, okw := find(rs, "nexmark-"+q)
		f, okf := find(rs, "nexmark-"+q+"-floor")
		r := 0.0
		if okw && okf {
			r = f.EventsPerSec / w.EventsPerSec
		}
		check("nexmark-"+q+": within 3x of its hand-written floor", r, r <= 3, okw && okf, "x")
	}
	// The cost of checkpoints: the share of the time the operator stood
	// still for snapshots (the writer runs beside it). The throughput of the
	// runs with and without checkpoints is printed in the ratios; on this
	// two-core machine it varies more from run to run than that cost.
	for _, c := range []struct {
		name, label string
		max         float64
	}{
		{"tumbling-10k-p1-ckpt10s", "10K keys, checkpoints every 10 s", 10},
		{"tumbling-10k-p1-ckpt1s", "10K keys, checkpoints every 1 s", 10},
		{"tumbling-1m-p1-ckpt10s", "1M keys, checkpoints every 10 s", 10},
		{"tumbling-1m-p1-ckpt1s", "memory, 1M keys, checkpoints every 1 s", 5},
	} {
		r, ok := find(rs, c.name)
		stall := r.Extra["ckpt_stall_pct"]
		check(fmt.Sprintf("%s: operator stalled < %.0f%%", c.label, c.max), stall, stall < c.max, ok && r.Extra["checkpoints"] > 0, "%")
	}
	{
		w, okw := find(rs, "pebble-1m-p1")
		c, okc := find(rs, "pebble-1m-p1-ckpt1s")
		cost := 100 * (1 - c.EventsPerSec/w.EventsPerSec)
		check("Pebble, 1M keys, checkpoints every 1 s: cost < 10% of throughput", cost, cost < 10, okw && okc && c.Extra["checkpoints"] > 0, "%")
		rss := float64(c.PeakRSS) / (1 << 20)
		check("Pebble, 1M keys, checkpoints every 1 s: RSS < budget + 256 MiB", rss, rss < c.Extra["budget_mib"]+256, okc, "")
		m, okm := find(rs, "tumbling-1m-p1-hour")
		r := m.EventsPerSec / w.EventsPerSec
		check("Pebble, 1M keys (operator): within 3x of the memory backend's time", r, r <= 3, okw && okm, "x")
		jp, okp := find(rs, "job-1m-pebble")
		jm, okm := find(rs, "job-1m-memory")
		r = jp.Wall / jm.Wall
		check("Pebble, 1M keys (job file): within 3x of the memory backend's time", r, r <= 3, okp && okm, "x")
		rss = float64(jp.PeakRSS) / (1 << 20)
		check("Pebble, 1M keys (job file): RSS < budget + 256 MiB", rss, rss < jp.Extra["budget_mib"]+256, okp, "")
		// Not the checkpoint's own table files (they overlap from level
		// to level, and Pebble takes in only tables that do not), but one
		// table written from them in key order.
		rs1, okr := find(rs, "pebble-restore-1m")
		r = rs1.Extra["restore_vs_key_by_key"]
		check("Pebble, 1M keys: a restore as one table, against key by key", r, r < 1, okr, "x")
		w, okw = find(rs, "steep-pebble")
		c, okc = find(rs, "steep-pebble-ckpt500ms")
		r = c.Wall / w.Wall
		check("steep job on Pebble, checkpoints every 500 ms: within 1.5x of none", r, r <= 1.5, okw && okc, "x")
	}
	{
		s, ok := find(rs, "soak")
		rss := float64(s.PeakRSS) / (1 << 20)
		check("soak: peak RSS < budget + 256 MiB", rss, rss < s.Extra["budget_mib"]+256, ok, "")
		accounted := strings.HasPrefix(s.Note, "every line accounted for")
		check("soak: every line accounted for (lines read)", s.Extra["read"], accounted, ok, "")
	}
	l, okl := find(rs, "latency-100k")
	p99 := l.Extra["p99_ms"]
	check("on-time panes reach the sink within 10 ms (p99)", p99, p99 <= 10, okl && l.Extra["panes"] > 0, "ms")
	{
		k, okk := find(rs, "kafka-fraud")
		fl, okf := find(rs, "kafka-floor")
		pf, okp := find(rs, "kafka-parse-floor")
		r := pf.EventsPerSec / k.EventsPerSec
		check("Kafka: the fraud job within 1.5x of the parse-and-produce floor's time", r, r <= 1.5, okk && okp, "x")
		r = fl.EventsPerSec / k.EventsPerSec
		check("Kafka: the fraud job within 3x of the consume-produce floor's time", r, r <= 3, okk && okf, "x")
		check("Kafka: the fraud job within 2x of the consume-produce floor's time", r, r <= 2, okk && okf, "x")
	}
	{
		g1, ok1 := find(rs, "group-1")
		g2, ok2 := find(rs, "group-2")
		s1, s2 := g1.Extra["steady_events_per_sec"], g2.Extra["steady_events_per_sec"]
		r := 0.0
		if s1 > 0 {
			r = s2 / s1
		}
		check("group: 2 instances on 2 cores >= 1 instance's throughput", r, r >= 1, ok1 && ok2 && s1 > 0 && s2 > 0, "x")
		sc, oks := find(rs, "group-scale-256")
		check("group: at most 2 Kafka clients a thread (256 partitions)", sc.Extra["max_clients"],
			sc.Extra["max_clients"] <= 2*float64(runtime.NumCPU()), oks && sc.Extra["max_clients"] > 0, "")
	}
	if p, ok := find(rs, "jsonl-run-percentile"); ok && okj {
		r := j.EventsPerSec / p.EventsPerSec
		check("a job with a percentile for its sum within 2x jsonl-run's time", r, r < 2, true, "x")
	}
	if m, ok := find(rs, "jsonl-run-metrics"); ok && okj {
		cost := 100 * (1 - m.EventsPerSec/j.EventsPerSec)
		check("serving metrics costs < 2% of jsonl-run's throughput", cost, cost < 2, true, "%")
	} else {
		check("serving metrics costs < 2% of jsonl-run's throughput", 0, false, false, "")
	}
	if f, ok := find(rs, "jsonl-run-where"); ok && okj {
		cost := 100 * (1 - f.EventsPerSec/j.EventsPerSec)
		check("a where: costs < 10% of jsonl-run's throughput", cost, cost < 10, true, "%")
	} else {
		check("a where: costs < 10% of jsonl-run's throughput", 0, false, false, "")
	}
	d, okd := find(rs, "decode-json")
	for _, f := range []string{"avro", "protobuf"} {
		r, ok := find(rs, "decode-"+f)
		ratio := 0.0
		if ok && okd {
			ratio = d.PerCore / r.PerCore
		}
		check(f+" records decode at least as fast as JSON (per core)", ratio, ratio <= 1, ok && okd, "x")
	}
	{
		j, okj := find(rs, "join-run")
		f, okf := find(rs, "join-floor")
		r := 0.0
		if okj && okf {
			r = f.EventsPerSec / j.EventsPerSec
		}
		check("join: an interval join within 3x of its hand-written floor", r, r <= 3, okj && okf && j.Extra["unpaid"] == f.Extra["unpaid"], "x")
	}
	{
		// By turns, on events generated ahead: generated as the queries
		// run, the generator takes most of their time.
		q, ok := find(rs, "nexmark-q8-replay")
		r := q.Extra["cogroup_time_ratio"]
		check("nexmark-q8 as a co-group no slower than over one input (by turns, replayed)", r, r <= 1, ok && r > 0, "x")
	}
	for _, db := range []string{"sqlite", "postgres"} {
		r, _, _, ok := upsertRatio(rs, db, "keyed-insert")
		check("upserts into "+db+" within 1.5x of keyed plain inserts' time", r, r <= 1.5, ok, "x")
		r, _, _, ok = upsertRatio(rs, db, "append")
		check("upserts into "+db+" within 1.5x of appends' time", r, r <= 1.5, ok, "x")
	}
	f, okf := find(rs, "latency-follow")
	op99, ep99 := f.Extra["on_time_p99_ms"], f.Extra["early_p99_ms"]
	check("followed file: on-time pane visible < 100 ms after W (p99)", op99, op99 < 100, okf && f.Extra["on_time_panes"] > 0, "ms")
	check("followed file: early pane visible < 500 + 100 ms after the event (p99)", ep99, ep99 < 600, okf && f.Extra["early_panes"] > 0, "ms")
	var b strings.Builder
	b.WriteString("targets\n")
	width := 0
	for _, r := range rows {
		width = max(width, len(r.what))
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-*s %12s  %s\n", width, r.what, r.measured, r.status)
	}
	return b.String()
}

func fmtNum(v float64, unit string, have bool) string {
	if !have {
		return "-"
	}
	switch unit {
	case "/s":
		if v >= 1e6 {
			return fmt.Sprintf("%.2fM/s", v/1e6)
		}
		return fmt.Sprintf("%.0fK/s", v/1e3)
	case "x":
		return fmt.Sprintf("%.2fx", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	case "ms":
		return fmt.Sprintf("%.2fms", v)
	case "B":
		return fmt.Sprintf("%.0f B", v)
	}
	return fmt.Sprintf("%.3f", v)
}
