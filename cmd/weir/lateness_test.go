package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/lateness"
	"github.com/weirstream/weir/mtime"
)

// A stream in arrival order: the third line is a minute late.
const latenessInput = `{"ts":"2026-01-01T00:00:10Z","arrival":"2026-01-01T00:00:11Z","platform":"iOS"}
{"ts":"2026-01-01T00:01:10Z","arrival":"2026-01-01T00:01:11Z","platform":"web"}
{"ts":"2026-01-01T00:00:20Z","arrival":"2026-01-01T00:01:20Z","platform":"iOS"}
{"ts":"2026-01-01T00:01:30Z","arrival":"2026-01-01T00:01:31Z","platform":"web"}
`

func runLateness(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, dir, append([]string{"lateness"}, args...)...)
}

func latenessDir(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(latenessInput), 0o644)
	return dir
}

func TestLatenessText(t *testing.T) {
	dir := latenessDir(t)
	code, stdout, stderr := runLateness(t, dir, "events.jsonl", "--by", "platform", "--delays", "none,2s,5m", "--plot", "out.svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"4 lines: 4 events, 0 rejected", "by platform", "Table 1", "25.00%", "Recommendation"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "out.svg"))
	if err != nil || !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("plot: %v %.40q", err, svg)
	}
}

func TestLatenessJSONAndCSV(t *testing.T) {
	dir := latenessDir(t)
	code, stdout, stderr := runLateness(t, dir, "--format", "json", "--target", "30%", "events.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Events int64 `json:"events"`
		Delays []struct {
			Label   string `json:"label"`
			TooLate int64  `json:"too_late_events"`
		} `json:"delays"`
		Recommendation struct {
			Met   bool `json:"met"`
			Delay struct {
				Label string `json:"label"`
			} `json:"delay"`
		} `json:"recommendation"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Events != 4 || len(rep.Delays) != 6 || rep.Delays[0].TooLate != 1 || rep.Delays[2].TooLate != 0 ||
		!rep.Recommendation.Met || rep.Recommendation.Delay.Label != "none" {
		t.Errorf("json: %+v", rep)
	}
	code, stdout, stderr = runLateness(t, dir, "--format", "csv", "-o", "table1.csv", "events.jsonl")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	f, _ := os.Open(filepath.Join(dir, "table1.csv"))
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 7 || rows[0][0] != "delay" || rows[1][0] != "none" || rows[1][2] != "1" {
		t.Errorf("csv: %v %v", err, rows)
	}
}

func TestLatenessJob(t *testing.T) {
	dir := latenessDir(t)
	// The job's own input need not exist when FILE is given; its field
	// names and window size are used.
	os.WriteFile(filepath.Join(dir, "events.csv"), []byte("when,got\n2026-01-01T00:00:10Z,1767225611000\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: live.jsonl}\ntime: {field: when, arrival_field: got}\n"+
		"window: {tumbling: 5m}\naggregates: {n: count}\noutput: out.jsonl\n"), 0o644)
	code, stdout, stderr := runLateness(t, dir, "--job", "job.yaml", "--format", "json", "events.csv")
	if code != 0 || !strings.Contains(stdout, `"time_field": "when"`) || !strings.Contains(stdout, `"window_ms": 300000`) {
		t.Errorf("exit %d: %s %s", code, stdout, stderr)
	}
	// Without FILE, the job's input is read, and must exist.
	code, _, stderr = runLateness(t, dir, "--job", "job.yaml")
	if code != 2 || !strings.Contains(stderr, "live.jsonl does not exist") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// A job without an arrival field cannot be measured.
	os.WriteFile(filepath.Join(dir, "wall.yaml"), []byte("source: {file: events.jsonl}\ntime: {field: ts}\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: out.jsonl\n"), 0o644)
	code, _, stderr = runLateness(t, dir, "--job", "wall.yaml")
	if code != 2 || !strings.Contains(stderr, "no time.arrival_field") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// Usage and input errors exit 2 with one line (or the usage text).
func TestLatenessErrors(t *testing.T) {
	dir := latenessDir(t)
	os.WriteFile(filepath.Join(dir, "events.csv"), []byte("ts,arrival\n2026-01-01T00:00:10Z,2026-01-01T00:00:11Z\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{nil, "Usage: weir lateness"},
		{[]string{"a.jsonl", "b.jsonl"}, "Usage: weir lateness"},
		{[]string{"--frobnicate", "events.jsonl"}, "flag provided but not defined"},
		{[]string{"nowhere.jsonl"}, "weir lateness: cannot read nowhere.jsonl: no such file or directory"},
		{[]string{"--time", "event_time", "events.csv"}, `events.csv has no column "event_time"`},
		{[]string{"--time", "event_time", "events.jsonl"}, `no event time in field "event_time"`},
		{[]string{"--delays", "2x", "events.jsonl"}, `--delays: "2x" is not a duration`},
		{[]string{"--target", "200%", "events.jsonl"}, "--target"},
		{[]string{"--format", "xml", "events.jsonl"}, "--format must be text, json or csv"},
		{[]string{"--plot", "out.gif", "events.jsonl"}, "--plot"},
		{[]string{"--input-format", "orc", "events.jsonl"}, "unknown input format"},
		{[]string{"--job", "job.yaml", "--time", "x", "events.jsonl"}, "weir lateness:"},
	}
	for _, c := range cases {
		code, stdout, stderr := runLateness(t, dir, c.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
		if !strings.Contains(c.want, "Usage") && !strings.Contains(c.want, "flag provided") && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: not one line: %q", c.args, stderr)
		}
	}
	if code, stdout, _ := runLateness(t, dir, "-h"); code != 0 || stdout != "" {
		t.Errorf("-h: exit %d", code)
	}
}

// JSON lines are weighted by sample_weight when they have it: a line
// without it weighs 1, a bad weight rejects the line.
func TestLatenessJSONWeights(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "sample.jsonl"), []byte(
		`{"ts":"2026-01-01T00:00:10Z","arrival":"2026-01-01T00:00:10.500Z","sample_weight":3}`+"\n"+
			`{"ts":"2026-01-01T00:00:20Z","arrival":"2026-01-01T00:00:21Z"}`+"\n"+
			`{"ts":"2026-01-01T00:00:30Z","arrival":"2026-01-01T00:10:30Z","sample_weight":0.5}`+"\n"+
			`{"ts":"2026-01-01T00:00:40Z","arrival":"2026-01-01T00:00:41Z","sample_weight":"2"}`+"\n"+
			`{"ts":"2026-01-01T00:00:50Z","arrival":"2026-01-01T00:00:51Z","sample_weight":-1}`+"\n"), 0o644)
	code, stdout, stderr := runLateness(t, dir, "--format", "json", "sample.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		WeightField   string           `json:"weight_field"`
		Events        int64            `json:"events"`
		Weight        float64          `json:"weight"`
		RejectReasons map[string]int64 `json:"reject_reasons"`
		Travel        struct {
			Buckets []struct {
				Events  int64   `json:"events"`
				Weight  float64 `json:"weight"`
				Percent float64 `json:"percent"`
			} `json:"buckets"`
		} `json:"travel"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.WeightField != "sample_weight" || rep.Events != 3 || rep.Weight != 4.5 || rep.RejectReasons["bad_weight"] != 2 {
		t.Errorf("weights: %+v", rep)
	}
	// Under 2 s: 3 + 1 of 4.5; 5 min to 1 h: 0.5 of 4.5.
	b := rep.Travel.Buckets
	if b[0].Events != 2 || b[0].Weight != 4 || b[0].Percent != 100*4/4.5 || b[1].Weight != 0 || b[2].Weight != 0.5 || b[2].Percent != 100*0.5/4.5 {
		t.Errorf("buckets: %+v", b)
	}
	code, stdout, _ = runLateness(t, dir, "--format", "json", "--no-weight", "sample.jsonl")
	if code != 0 || !strings.Contains(stdout, `"events": 5,`) || strings.Contains(stdout, "weight_field") {
		t.Errorf("--no-weight: exit %d: %s", code, stdout)
	}
}

// ledgerTruth is what the generated ledger and events say, worked out here
// from the files themselves.
type ledgerTruth struct {
	entries, arrived, later, never, dups, unmatched int64
	within                                          []int64
}

func readLedgerTruth(t *testing.T, dir string, waits []int64) map[string]*ledgerTruth {
	t.Helper()
	type entry struct {
		plat   string
		ts     mtime.Time
		arr    mtime.Time
		events int
	}
	entries := map[string]*entry{}
	truth := map[string]*ledgerTruth{}
	of := func(p string) *ledgerTruth {
		if truth[p] == nil {
			truth[p] = &ledgerTruth{within: make([]int64, len(waits))}
		}
		return truth[p]
	}
	each := func(name string, f func(v *fastjson.Value)) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var p fastjson.Parser
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			v, err := p.ParseBytes(line)
			if err != nil {
				t.Fatal(err)
			}
			f(v)
		}
	}
	tm := func(v *fastjson.Value, k string) mtime.Time {
		ts, err := mtime.Parse(v.GetStringBytes(k))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	each("ledger.jsonl", func(v *fastjson.Value) {
		entries[string(v.GetStringBytes("order_id"))] = &entry{plat: string(v.GetStringBytes("platform")), ts: tm(v, "ts")}
	})
	each("events.jsonl", func(v *fastjson.Value) {
		e := entries[string(v.GetStringBytes("order_id"))]
		if e == nil {
			of(string(v.GetStringBytes("platform"))).unmatched++
			return
		}
		if arr := tm(v, "arrival"); e.events == 0 || arr < e.arr {
			e.arr = arr
		}
		e.events++
	})
	for _, e := range entries {
		for _, g := range []*ledgerTruth{of(e.plat), of("(all)")} {
			g.entries++
			if e.events == 0 {
				g.never++
				continue
			}
			g.arrived++
			g.dups += int64(e.events - 1)
			w := int64(e.arr - e.ts)
			for i, max := range waits {
				if w <= max {
					g.within[i]++
				}
			}
			if w > waits[len(waits)-1] {
				g.later++
			}
		}
	}
	for p, g := range truth {
		if p != "(all)" {
			of("(all)").unmatched += g.unmatched
		}
	}
	return truth
}

// The seed's figure 2 on a generated stream: Android's app never sends 4%
// of its order_completed events, iOS's 1%, the web's none; weir lateness
// --ledger recovers each share exactly, and says the missing are lost.
func TestLatenessLedger(t *testing.T) {
	const orders = 200000
	dir := t.TempDir()
	for _, kind := range []string{"ledger", "ledger-events"} {
		name := strings.TrimPrefix(kind+".jsonl", "ledger-")
		if code, _, stderr := runCLI(t, dir, "gen", kind, "--events", strconv.Itoa(orders), "-o", name); code != 0 {
			t.Fatalf("gen %s: exit %d: %s", kind, code, stderr)
		}
	}
	waits := []int64{60000, 300000, 3600000, 21600000, 86400000}
	truth := readLedgerTruth(t, dir, waits)
	nominal := map[string]float64{"Android": 4, "iOS": 1, "web": 0}

	args := []string{"--ledger", "ledger.jsonl", "--match", "order_id", "--by", "platform", "events.jsonl"}
	code, stdout, stderr := runLateness(t, dir, append([]string{"--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep lateness.LedgerReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	all := truth["(all)"]
	if rep.LedgerEntries != orders || rep.LedgerLines != orders || rep.LedgerRejected != 0 || rep.LedgerDuplicates != 0 ||
		rep.EventsRejected != 0 || rep.EventsWithoutMatch != 0 || rep.MatchedEvents != all.arrived+all.dups ||
		rep.DuplicateEvents != all.dups || rep.UnmatchedEvents != all.unmatched || rep.Events != rep.MatchedEvents+rep.UnmatchedEvents ||
		rep.MatchField != "order_id" || rep.LedgerTimeField != "ts" || rep.ByField != "platform" || !slices.Equal(rep.WaitsMS, waits) {
		t.Errorf("counts: %+v", rep)
	}
	pct := func(n, of int64) float64 { return 100 * float64(n) / float64(of) }
	check := func(g lateness.LedgerGroup) {
		want := truth[g.Value]
		if want == nil {
			t.Errorf("unexpected group %q", g.Value)
			return
		}
		if g.Entries != want.entries || g.Arrived != want.arrived || g.NeverArrived != want.never || g.Later != want.later ||
			g.DuplicateEvents != want.dups || g.UnmatchedEvents != want.unmatched || g.WatchedLess != 0 || g.ArrivedBeforeEntry != 0 ||
			g.NeverArrivedPercent != pct(want.never, want.entries) || g.ArrivedPercent != pct(want.arrived, want.entries) ||
			g.LaterPercent != pct(want.later, want.entries) || len(g.Within) != len(waits) {
			t.Errorf("%s: %+v, want %+v", g.Value, g, want)
			return
		}
		for i, w := range g.Within {
			if w.WaitMS != waits[i] || w.Arrived != want.within[i] || w.Percent != pct(want.within[i], want.entries) ||
				w.PercentOfArrived != pct(want.within[i], want.arrived) {
				t.Errorf("%s within %s: %+v, want %d", g.Value, w.Label, w, want.within[i])
			}
		}
	}
	check(rep.All)
	if len(rep.Groups) != 3 {
		t.Fatalf("groups: %+v", rep.Groups)
	}
	for _, g := range rep.Groups {
		check(g)
		// Each never-sent share within 0.1 point of the generator's.
		if d := g.NeverArrivedPercent - nominal[g.Value]; d < -0.1 || d > 0.1 {
			t.Errorf("%s: %.4f%% never arrived, the generator drops %v%%", g.Value, g.NeverArrivedPercent, nominal[g.Value])
		}
		// The late events (5 min to 6 h) are all in by 6 h: flat from there
		// to 24 h, so the missing are lost; the web misses none.
		wantVerdict, wantFlat := lateness.VerdictLost, int64(21600000)
		if g.Value == "web" {
			wantVerdict, wantFlat = lateness.VerdictComplete, 60000
		}
		if g.Verdict != wantVerdict || g.FlatWithinMS == nil || *g.FlatWithinMS != wantFlat {
			t.Errorf("%s: verdict %q, flat within %v", g.Value, g.Verdict, g.FlatWithinMS)
		}
	}
	if rep.Groups[0].Value != "iOS" || rep.Groups[1].Value != "Android" || rep.Groups[2].NeverArrived != 0 {
		t.Errorf("group order: %+v", rep.Groups)
	}

	// The text reaches the seed's conclusion.
	code, stdout, stderr = runLateness(t, dir, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	text := strings.Join(strings.Fields(stdout), " ")
	for _, p := range []string{"Android", "iOS"} {
		g := truth[p]
		want := p + ": " + strconv.FormatFloat(pct(g.never, g.entries), 'f', 2, 64) + "% of ledger entries never arrived; of those that arrived, 100.00% arrived within 6 h: the missing events are not late, they are lost."
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"web: every ledger entry has its event", "every entry was made at least 24 h before",
		"200,000 entries", "1. Ledger entries whose event has arrived"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, stdout)
		}
	}

	// CSV: the same numbers, a row per group and one for all.
	code, stdout, stderr = runLateness(t, dir, append([]string{"--format", "csv"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("csv: %v %v", err, rows)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	p4 := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for k, g := range append(append([]lateness.LedgerGroup(nil), rep.Groups...), rep.All) {
		row := rows[1+k]
		want := map[string]string{
			"group": g.Value, "entries": i64(g.Entries), "arrived": i64(g.Arrived), "never_arrived": i64(g.NeverArrived),
			"never_arrived_percent": p4(g.NeverArrivedPercent), "arrived_later": i64(g.Later), "duplicate_events": i64(g.DuplicateEvents),
			"unmatched_events": i64(g.UnmatchedEvents), "verdict": g.Verdict, "wait_max_ms": i64(*g.WaitMaxMS),
		}
		for i, w := range g.Within {
			c := []string{"within_1m", "within_5m", "within_1h", "within_6h", "within_24h"}[i]
			want[c], want[c+"_percent"] = i64(w.Arrived), p4(w.Percent)
		}
		for c, v := range want {
			if j, ok := col[c]; !ok || row[j] != v {
				t.Errorf("csv %s %s: %v, want %s", g.Value, c, row, v)
			}
		}
	}

	// The figure: deterministic bytes, in both formats.
	for _, ext := range []string{"svg", "png"} {
		var got [][]byte
		for _, name := range []string{"a." + ext, "b." + ext} {
			if code, _, stderr := runLateness(t, dir, append([]string{"--plot", name}, args...)...); code != 0 {
				t.Fatalf("--plot %s: exit %d: %s", name, code, stderr)
			}
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || len(b) < 5000 {
				t.Fatalf("%s: %v, %d bytes", name, err, len(b))
			}
			got = append(got, b)
		}
		if !bytes.Equal(got[0], got[1]) {
			t.Errorf("%s: two runs give different bytes", ext)
		}
	}
}

func TestLatenessLedgerFlags(t *testing.T) {
	dir := latenessDir(t)
	os.WriteFile(filepath.Join(dir, "ledger.jsonl"), []byte(`{"id":"a","ts":"2026-01-01T00:00:00Z"}`+"\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--match", "id", "events.jsonl"}, "--match needs --ledger"},
		{[]string{"--waits", "1m", "events.jsonl"}, "--waits needs --ledger"},
		{[]string{"--ledger", "ledger.jsonl", "events.jsonl"}, "--ledger needs --match"},
		{[]string{"--ledger", "ledger.jsonl", "--match", "id", "--delays", "1m", "events.jsonl"}, "--delays does not apply with --ledger"},
		{[]string{"--ledger", "ledger.jsonl", "--match", "id", "--weight", "w", "events.jsonl"}, "--weight does not apply with --ledger"},
		{[]string{"--ledger", "ledger.jsonl", "--match", "id", "--by", "a,b", "events.jsonl"}, "--by takes one field with --ledger"},
		{[]string{"--ledger", "ledger.jsonl", "--match", "id", "--waits", "1m,0s", "events.jsonl"}, `--waits: "0s" must be positive`},
		{[]string{"--ledger", "ledger.jsonl", "--match", "id", "--waits", "soon", "events.jsonl"}, `--waits: "soon" is not a duration`},
		{[]string{"--ledger", "nowhere.jsonl", "--match", "id", "events.jsonl"}, "cannot read nowhere.jsonl"},
		{[]string{"--ledger", "ledger.jsonl", "--match", "id", "events.jsonl"}, `no event of events.jsonl has an id in field "id"`},
		{[]string{"--ledger", "ledger.jsonl", "--match", "id", "--ledger-time", "when", "events.jsonl"}, `no entry time in field "when"`},
	}
	for _, c := range cases {
		code, stdout, stderr := runLateness(t, dir, c.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
	// --help names every flag of the join.
	_, _, stderr := runLateness(t, dir, "-h")
	for _, want := range []string{"--ledger LEDGER --match FIELD", "-ledger file", "-match field", "-ledger-time field", "-waits waits",
		`(default "1m,5m,1h,6h,24h")`, "sample_weight by default", "never arrived"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help lacks %q:\n%s", want, stderr)
		}
	}
}

// With a job, weir lateness estimates its state (keys x open windows x
// bytes a key and window) and replays the idle timeouts of its partitions.
func TestLatenessJobIdleAndState(t *testing.T) {
	dir := latenessDir(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: events.jsonl}\ntime: {field: ts, arrival_field: arrival, partition_field: platform}\n"+
		"key: platform\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: out.jsonl\n"), 0o644)
	code, stdout, stderr := runLateness(t, dir, "--job", "job.yaml", "--delays", "none", "--idles", "30s,5m", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r lateness.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.State == nil || r.State.Keys != 2 || r.State.Key != "platform" || r.State.Bytes != 2*r.State.OpenWindowsPeak*lateness.BytesPerKeyWindow {
		t.Errorf("state %+v", r.State)
	}
	if r.Idle == nil || len(r.Idle.Timeouts) != 3 || len(r.Idle.Partitions) != 2 || r.Idle.Partitions[0].Partition != "iOS" {
		t.Errorf("idle %+v", r.Idle)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--idles", "30s", "events.jsonl"}, "weir lateness: --idles needs --job"},
		{[]string{"--job", "job.yaml", "--idles", "0s"}, `weir lateness: --idles: "0s" must be positive`},
		{[]string{"--job", "job.yaml", "--idles", "soon"}, `weir lateness: --idles: "soon" is not a duration`},
	} {
		code, stdout, stderr := runLateness(t, dir, c.args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

// --compare reports each period of event time beside the others.
func TestLatenessCompare(t *testing.T) {
	dir := latenessDir(t)
	code, stdout, stderr := runLateness(t, dir, "--compare", "2026-01-01T00:00:00Z/1m, 2026-01-01T00:01:00Z/1m", "--delays", "none,1m", "--format", "json", "events.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r lateness.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	// The third line (00:00:20, arrived 00:01:20) is too late with no
	// delay: the first minute's window fired at 00:01:11.
	if len(r.Periods) != 2 || r.Periods[0].Label != "2026-01-01T00:00:00Z/1m" || r.Periods[0].Events != 2 || r.Periods[1].Events != 2 ||
		r.Periods[0].Delays[0].TooLate != 1 || r.Periods[1].Delays[0].TooLate != 0 || r.Periods[0].Delays[1].TooLate != 0 {
		t.Errorf("periods %+v", r.Periods)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--compare", "2026-01-01/1d", "events.jsonl"}, "weir lateness: --compare: compare at least two periods, not 1"},
		{[]string{"--compare", "2026-01-01/1d,yesterday/1d", "events.jsonl"}, `weir lateness: --compare: "yesterday/1d": the start "yesterday" is not an RFC 3339 date`},
		{[]string{"--compare", "2026-01-01/1d,2026-01-02/0s", "events.jsonl"}, `weir lateness: --compare: "2026-01-02/0s": the length "0s" is not a positive duration`},
		{[]string{"--compare", "2026-01-01,2026-01-02", "events.jsonl"}, `weir lateness: --compare: "2026-01-01" is not START/LENGTH`},
		{[]string{"--compare", "2026-01-01/1d,2026-01-02/1d", "--ledger", "l.jsonl", "--match", "id", "events.jsonl"}, "weir lateness: --compare does not apply with --ledger"},
	} {
		code, stdout, stderr := runLateness(t, dir, c.args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
}

// Were those phones online? On weir gen's streams, 98.8% of the orders whose
// order_completed was never sent had the same user's checkout_start within
// 2 s before the order: weir lateness --ledger --seen finds each group's
// count exactly (worked out here from the files) and says so.
func TestLatenessLedgerSeen(t *testing.T) {
	const orders = 200000
	dir := t.TempDir()
	for _, kind := range []string{"ledger", "ledger-events", "ledger-checkouts"} {
		name := strings.TrimPrefix(kind+".jsonl", "ledger-")
		if code, _, stderr := runCLI(t, dir, "gen", kind, "--events", strconv.Itoa(orders), "-o", name); code != 0 {
			t.Fatalf("gen %s: exit %d: %s", kind, code, stderr)
		}
	}
	lines := func(name string) []map[string]string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]string
		var p fastjson.Parser
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			v, err := p.ParseBytes(l)
			if err != nil {
				t.Fatal(err)
			}
			s := map[string]string{}
			for _, k := range []string{"order_id", "user_id", "platform", "ts", "arrival"} {
				s[k] = string(v.GetStringBytes(k))
			}
			out = append(out, s)
		}
		return out
	}
	tm := func(s string) mtime.Time {
		ts, err := mtime.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	arrived := map[string]bool{}
	for _, e := range lines("events.jsonl") {
		arrived[e["order_id"]] = true
	}
	type seen struct{ ts, arr mtime.Time }
	byUser := map[string][]seen{}
	for _, c := range lines("checkouts.jsonl") {
		byUser[c["user_id"]] = append(byUser[c["user_id"]], seen{tm(c["ts"]), tm(c["arrival"])})
	}
	never, online := map[string]int64{}, map[string]int64{}
	for _, l := range lines("ledger.jsonl") {
		if arrived[l["order_id"]] {
			continue
		}
		p, ts := l["platform"], tm(l["ts"])
		never[p]++
		never["(all)"]++
		for _, s := range byUser[l["user_id"]] {
			if s.ts <= ts && ts-s.ts <= 2000 && s.arr-s.ts <= 2000 {
				online[p]++
				online["(all)"]++
				break
			}
		}
	}
	args := []string{"--ledger", "ledger.jsonl", "--match", "order_id", "--by", "platform", "--seen", "checkouts.jsonl", "events.jsonl"}
	code, stdout, stderr := runLateness(t, dir, append([]string{"--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep lateness.LedgerReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SeenEvents != orders || rep.SeenRejected != 0 || rep.SeenBy != "user_id" || rep.SeenWithinMS != 2000 {
		t.Errorf("seen: %d events, %d rejected, by %s within %d ms", rep.SeenEvents, rep.SeenRejected, rep.SeenBy, rep.SeenWithinMS)
	}
	for _, g := range append(rep.Groups, rep.All) {
		if g.NeverArrived != never[g.Value] || g.NeverArrivedSeenOnline != online[g.Value] || g.NeverArrivedWithoutBy != 0 {
			t.Errorf("%s: %d never arrived, %d seen online; want %d, %d", g.Value, g.NeverArrived, g.NeverArrivedSeenOnline, never[g.Value], online[g.Value])
		}
	}
	if p := rep.All.NeverArrivedSeenOnlinePercent; p < 98.3 || p > 99.3 {
		t.Errorf("%.2f%% of the never arrived seen online, the generator's figure is 98.8%%", p)
	}
	code, stdout, stderr = runLateness(t, dir, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	text := strings.Join(strings.Fields(stdout), " ")
	want := fmt.Sprintf("All entries: of the %s entries that never arrived, %s (%.2f%%) had an event of the same user_id in checkouts.jsonl at most 2 s before the entry, which arrived within 2 s of happening: those devices were online moments before, so their events were not held back by a lost connection: they were never sent, or lost on the way.",
		fmtThousands(never["(all)"]), fmtThousands(online["(all)"]), rep.All.NeverArrivedSeenOnlinePercent)
	if !strings.Contains(text, "4. Were the devices online?") || !strings.Contains(text, want) {
		t.Errorf("text lacks %q:\n%s", want, stdout)
	}
	if code, _, stderr := runLateness(t, dir, "--ledger", "ledger.jsonl", "--match", "order_id", "--seen-by", "user_id", "events.jsonl"); code != 2 ||
		!strings.Contains(stderr, "--seen-by and --seen-within need --seen") {
		t.Errorf("--seen-by without --seen: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runLateness(t, dir, "--seen", "checkouts.jsonl", "events.jsonl"); code != 2 || !strings.Contains(stderr, "--seen needs --ledger") {
		t.Errorf("--seen without --ledger: exit %d: %s", code, stderr)
	}
}

// fmtThousands writes n with commas: 3,640.
func fmtThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The --seen file's format is its extension's, as the ledger's is:
// --input-format names the events' alone.
func TestLatenessSeenFormatByExtension(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ledger.jsonl"), []byte(`{"order_id":"o1","user_id":"u1","ts":"2026-09-07T12:00:00Z"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "events.dat"), []byte("order_id,ts,arrival\no9,2026-09-07T12:00:05Z,2026-09-07T12:00:06Z\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "seen.jsonl"), []byte(`{"user_id":"u1","ts":"2026-09-07T11:59:59Z","arrival":"2026-09-07T11:59:59.500Z"}`+"\n"), 0o644)
	code, stdout, stderr := runLateness(t, dir, "--input-format", "csv", "--ledger", "ledger.jsonl", "--match", "order_id",
		"--seen", "seen.jsonl", "--format", "json", "events.dat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep lateness.LedgerReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SeenFormat != lateness.FormatJSON || rep.All.NeverArrived != 1 || rep.All.NeverArrivedSeenOnline != 1 {
		t.Errorf("seen as %s; %d never arrived, %d seen online; want jsonl, 1, 1", rep.SeenFormat, rep.All.NeverArrived, rep.All.NeverArrivedSeenOnline)
	}
}
