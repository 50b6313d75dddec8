package job

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/vfs"
)

// The common fields of the jobs of several aggregations below: the upgrade
// matrix's input (duplicates, late events, lines that are not JSON), read
// with arrival times, so that every byte of the outputs is the input's.
const severalCommon = `name: orders
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
id: order_id
dedup_horizon: 1m
watermark: {delay: 1s, interval: 200ms}
quarantine: quarantine.jsonl
`

// The two aggregations, as they are written under aggregations: and as
// the whole of a job of one.
const (
	perCard = `key: card
window: {tumbling: 10s}
allowed_lateness: 1s
aggregates: {orders: count, spent: sum(amount)}
output: cards.jsonl
late_output: cards-late.jsonl
summary: cards.json
`
	perAmount = `where: amount >= 10
window: {sliding: {size: 20s, slide: 10s}}
mode: retracting
trigger: {early: 5s}
aggregates: {orders: count, biggest: max(ts)}
having: orders > 1
output: amounts.jsonl
late_output: amounts-late.jsonl
late_for_some_windows: write
summary: amounts.json
`
)

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}

// severalJob is a job of the aggregations given, by name.
func severalJob(aggs ...string) string {
	var b strings.Builder
	b.WriteString(severalCommon + "aggregations:\n")
	for i := 0; i+1 < len(aggs); i += 2 {
		b.WriteString("  " + aggs[i] + ":\n" + indent(aggs[i+1]))
	}
	return b.String()
}

// A job of two aggregations writes exactly what two jobs of one write,
// each reading the input: every output file byte for byte, and each
// aggregation's summary the separate job's.
func TestSeveralAggregationsWriteWhatSeparateJobsWrite(t *testing.T) {
	both := t.TempDir()
	sum := runJobAt(t, both, severalJob("per_card", perCard, "per_amount", perAmount), upInput(), Options{})
	if sum.Aggregation != "per_card" || len(sum.Aggregations) != 1 || sum.Aggregations[0].Aggregation != "per_amount" {
		t.Fatalf("the summary's aggregations: %q, %d others", sum.Aggregation, len(sum.Aggregations))
	}
	for _, c := range []struct{ name, agg, files, summary string }{
		{"per_card", perCard, "cards.jsonl cards-late.jsonl quarantine.jsonl", "cards.json"},
		{"per_amount", perAmount, "amounts.jsonl amounts-late.jsonl quarantine.jsonl", "amounts.json"},
	} {
		alone := t.TempDir()
		runJobAt(t, alone, severalCommon+c.agg, upInput(), Options{})
		for _, f := range strings.Fields(c.files) {
			got, want := read(t, both, f), read(t, alone, f)
			if got != want {
				t.Errorf("%s: the job of two aggregations wrote\n%s\nthe job of one\n%s", f, got, want)
			}
			if len(want) < 100 {
				t.Errorf("%s: only %q: the test compares nothing", f, want)
			}
		}
		got := read(t, both, c.summary)
		if want := read(t, alone, c.summary); strings.Replace(got, "  \"aggregation\": \""+c.name+"\",\n", "", 1) != want {
			t.Errorf("%s: the job of two aggregations' summary\n%s\nthe job of one's\n%s", c.summary, got, want)
		}
	}
}

// A savepoint restores each aggregation by its name: one added after it
// starts from the savepoint's position (its outputs get the results from
// there on, as an output added since a checkpoint does); the one that was
// there carries its windows over and ends as an uninterrupted run ends.
func TestSeveralAggregationsRestoreByName(t *testing.T) {
	const ckpt = "checkpoint: {dir: ckpt, interval: 1h}\n"
	alone := t.TempDir()
	runJobAt(t, alone, severalJob("per_card", perCard)+ckpt, upInput(), Options{})

	dir := t.TempDir()
	sum := runJobAt(t, dir, severalJob("per_card", perCard)+ckpt, upInput(), Options{stopAfter: 1})
	if sum.Savepoint == "" {
		t.Fatal("no savepoint")
	}
	var log strings.Builder
	sum = runJobAt(t, dir, severalJob("per_card", perCard, "per_amount", perAmount)+ckpt, upInput(), Options{From: sum.Savepoint, Log: &log})
	if got, want := read(t, dir, "cards.jsonl"), read(t, alone, "cards.jsonl"); got != want {
		t.Errorf("per_card restored by its name wrote\n%s\nuninterrupted\n%s", got, want)
	}
	added := sum.Aggregations[0]
	if added.Read != sum.ReadThisRun || sum.ReadThisRun == 0 || sum.Read != added.Read+1024 {
		t.Errorf("per_card read %d (%d in this run), the added per_amount %d", sum.Read, sum.ReadThisRun, added.Read)
	}
	if !strings.Contains(sum.Text(), "restarts aggregation per_amount: new since the checkpoint: starts afresh") {
		t.Errorf("the summary does not say per_amount starts afresh:\n%s", sum.Text())
	}

	// A job of one aggregation names it window: a savepoint of it restores
	// into the aggregation of that name.
	dir = t.TempDir()
	sum = runJobAt(t, dir, severalCommon+perCard+ckpt, upInput(), Options{stopAfter: 1})
	sum = runJobAt(t, dir, severalJob("per_amount", perAmount, "window", perCard)+ckpt, upInput(), Options{From: sum.Savepoint})
	if got, want := read(t, dir, "cards.jsonl"), read(t, alone, "cards.jsonl"); got != want {
		t.Errorf("window restored by its name wrote\n%s\nuninterrupted\n%s", got, want)
	}
	if w := sum.Aggregations[0]; w.Aggregation != "window" || w.Read != 1526 || len(w.RestoreChanges) != 0 {
		t.Errorf("the aggregation window: %+v", w)
	}
}

// The status of a job of several aggregations has each one's accounting,
// by name, beside the partitions and counts of the input (the first's).
func TestSeveralAggregationsStatus(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(upInput()), 0o600)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(severalJob("per_card", perCard, "per_amount", perAmount)), 0o600)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rn, err := Build(j, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rn.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := rn.Engine().StatusAfterRun()
	if len(st.Aggregations) != 2 || len(st.Partitions) != 1 {
		t.Fatalf("%d aggregations, %d partitions in the status", len(st.Aggregations), len(st.Partitions))
	}
	for i, want := range []*Summary{sum, sum.Aggregations[0]} {
		a := st.Aggregations[i]
		if a.Name != want.Aggregation || a.Counts.Read != want.Read || a.Counts.Accepted != want.Accepted || a.Counts.TooLate != want.TooLate ||
			a.Counts.PanesFired != want.PanesFired || a.Counts.LateForSomeWindows != want.LateForSomeWindows {
			t.Errorf("the status of %s: %+v; its summary %+v", a.Name, a.Counts, want.Accounting)
		}
	}
	if st.Counts.Read != sum.Read || st.Counts.PanesFired != sum.PanesFired {
		t.Errorf("the status's counts are not the first aggregation's: %+v", st.Counts)
	}
	if sum.Aggregations[0].PanesFired == sum.PanesFired {
		t.Errorf("both aggregations fired %d panes: the test tells them apart by nothing", sum.PanesFired)
	}
}

// On the Pebble backend, at parallelism 2, each aggregation keeps its
// windows in a database of its own, and a job stopped at a savepoint and
// restored writes what an uninterrupted run writes.
func TestSeveralAggregationsOnPebbleRestored(t *testing.T) {
	const more = "checkpoint: {dir: ckpt, interval: 1h}\nstate: {backend: pebble, memory_budget: 64MiB}\nparallelism: 2\n"
	yaml := severalJob("per_card", perCard, "per_amount", perAmount) + more
	alone := t.TempDir()
	runJobAt(t, alone, severalJob("per_card", perCard, "per_amount", perAmount), upInput(), Options{})
	dir := t.TempDir()
	sum := runJobAt(t, dir, yaml, upInput(), Options{stopAfter: 1})
	if sum.Savepoint == "" {
		t.Fatal("no savepoint")
	}
	sum = runJobAt(t, dir, yaml, upInput(), Options{From: sum.Savepoint})
	for _, f := range []string{"cards.jsonl", "cards-late.jsonl", "amounts.jsonl", "amounts-late.jsonl", "quarantine.jsonl"} {
		if got, want := read(t, dir, f), read(t, alone, f); got != want {
			t.Errorf("%s: restored on Pebble\n%s\nuninterrupted in memory\n%s", f, got, want)
		}
	}
	if sum.Read != sum.Aggregations[0].Read || sum.Read == sum.ReadThisRun {
		t.Errorf("read %d (%d this run), the second aggregation %d", sum.Read, sum.ReadThisRun, sum.Aggregations[0].Read)
	}
}

// Several aggregations on Pebble each have a database in a directory of
// their own inside state.dir, which weir makes when it does not exist yet,
// as it makes it for one aggregation: it failed with "cannot create a
// state directory" before.
func TestSeveralAggregationsMakeTheStateDir(t *testing.T) {
	yaml := severalJob("per_card", perCard, "per_amount", perAmount) + "state: {backend: pebble, memory_budget: 64MiB, dir: work/state}\n"
	alone := t.TempDir()
	runJobAt(t, alone, severalJob("per_card", perCard, "per_amount", perAmount), upInput(), Options{})
	dir := t.TempDir()
	runJobAt(t, dir, yaml, upInput(), Options{})
	for _, f := range []string{"cards.jsonl", "amounts.jsonl"} {
		if got, want := read(t, dir, f), read(t, alone, f); got != want {
			t.Errorf("%s: on Pebble in a new state dir\n%s\nin memory\n%s", f, got, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "work", "state")); err != nil || !st.IsDir() {
		t.Fatalf("state.dir: %v", err)
	}
	// A run killed leaves its databases' directories behind, which made
	// state.dir "not a weir state directory" for the next run: it must
	// run, and sweep them.
	dead := filepath.Join(dir, "work", "state", "weir-state-0000")
	if err := os.MkdirAll(filepath.Join(dead, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, vfs.ScratchMark), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cards.jsonl", "amounts.jsonl"} {
		os.Remove(filepath.Join(dir, f))
	}
	runJobAt(t, dir, yaml, upInput(), Options{})
	if got, want := read(t, dir, "cards.jsonl"), read(t, alone, "cards.jsonl"); got != want {
		t.Errorf("cards.jsonl after a crash's leftovers\n%s\nin memory\n%s", got, want)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead run's state directory is still there: %v", err)
	}
}

// With a perfect watermark, read ahead from the file, each aggregation's
// watermark follows its own events, as a job of it alone does: orders
// without a card, 3 s behind their neighbours, are per_card's quarantined
// lines (no_key) and per_amount's events, which its watermark waits for.
func TestSeveralAggregationsPerfectWatermark(t *testing.T) {
	common := strings.Replace(severalCommon, "watermark: {delay: 1s, interval: 200ms}", "watermark: {perfect: true}", 1)
	var in strings.Builder
	for i, l := range strings.SplitAfter(upInput(), "\n") {
		in.WriteString(l)
		if i%50 == 49 && strings.HasPrefix(l, "{") {
			var o struct{ Ts, Arrival int64 }
			json.Unmarshal([]byte(l), &o)
			fmt.Fprintf(&in, `{"order_id":"x%d","amount":%d,"ts":%d,"arrival":%d}`+"\n", i, 10+i%7, o.Ts-3000, o.Arrival)
		}
	}
	input := in.String()
	both := t.TempDir()
	var b strings.Builder
	b.WriteString(common + "aggregations:\n")
	for _, a := range [][2]string{{"per_card", perCard}, {"per_amount", perAmount}} {
		b.WriteString("  " + a[0] + ":\n" + indent(a[1]))
	}
	runJobAt(t, both, b.String(), input, Options{})
	for _, c := range []struct{ agg, files string }{{perCard, "cards.jsonl cards-late.jsonl"}, {perAmount, "amounts.jsonl amounts-late.jsonl"}} {
		alone := t.TempDir()
		runJobAt(t, alone, common+c.agg, input, Options{})
		for _, f := range strings.Fields(c.files) {
			if got, want := read(t, both, f), read(t, alone, f); got != want {
				t.Errorf("%s: the job of two aggregations wrote\n%s\nthe job of one\n%s", f, got, want)
			}
		}
	}
}
