package job

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
)

const versionsJob = `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: shop
id: order_id
version_field: rev
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
allowed_lateness: 2m
aggregates: {orders: count, total: sum(amount), mean: avg(amount)}
output: out.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`

// versionsInput holds revisions (before a window fires, after it, to
// another key, as a string), a duplicate, an older version arriving after
// a newer one, a revision too late, and versions missing and bad.
var versionsInput = lines(
	`{"order_id":"o1","rev":1,"shop":"a","ts":"2026-09-01T00:00:10Z","arrival":"2026-09-01T00:00:10Z","amount":10}`,
	`{"order_id":"o2","rev":1,"shop":"a","ts":"2026-09-01T00:00:20Z","arrival":"2026-09-01T00:00:20Z","amount":5.25}`,
	`{"order_id":"o1","rev":1,"shop":"a","ts":"2026-09-01T00:00:10Z","arrival":"2026-09-01T00:00:30Z","amount":10}`,
	`{"order_id":"o1","rev":2,"shop":"a","ts":"2026-09-01T00:00:10Z","arrival":"2026-09-01T00:00:40Z","amount":12}`,
	`{"order_id":"o3","rev":1,"shop":"a","ts":"2026-09-01T00:01:30Z","arrival":"2026-09-01T00:01:30Z","amount":1}`,
	`{"order_id":"o2","rev":2,"shop":"b","ts":"2026-09-01T00:00:20Z","arrival":"2026-09-01T00:01:40Z","amount":6}`,
	`{"order_id":"o1","rev":1,"shop":"a","ts":"2026-09-01T00:00:10Z","arrival":"2026-09-01T00:01:50Z","amount":10}`,
	`{"order_id":"o1","rev":"x","shop":"a","ts":"2026-09-01T00:00:10Z","arrival":"2026-09-01T00:01:55Z","amount":10}`,
	`{"order_id":"o4","shop":"a","ts":"2026-09-01T00:01:10Z","arrival":"2026-09-01T00:01:58Z","amount":1}`,
	`{"order_id":"o5","rev":1,"shop":"a","ts":"2026-09-01T00:03:30Z","arrival":"2026-09-01T00:03:30Z","amount":2}`,
	`{"order_id":"o2","rev":3,"shop":"a","ts":"2026-09-01T00:03:40Z","arrival":"2026-09-01T00:03:40Z","amount":100}`,
	`{"order_id":"o3","rev":"2","shop":"a","ts":"2026-09-01T00:01:30Z","arrival":"2026-09-01T00:03:45Z","amount":3}`,
)

// paneLines is the key, window start, revision, timing and values of each
// pane of a job's output, a line each.
func paneLines(t *testing.T, out string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var p struct {
			Key    string  `json:"key"`
			Start  string  `json:"window_start"`
			Rev    int     `json:"revision"`
			Timing string  `json:"timing"`
			Orders int     `json:"orders"`
			Total  float64 `json:"total"`
			Mean   any     `json:"mean"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		fmt.Fprintf(&b, "%s %s #%d %s orders=%d total=%g mean=%v\n", p.Key, p.Start[11:19], p.Rev, p.Timing, p.Orders, p.Total, p.Mean)
	}
	return b.String()
}

// Of two events with one order_id, the higher rev replaces the lower in
// the panes: withdrawn from its window (before the firing, or with a late
// pane after it, from its key) and added to its own; the same rev is a
// duplicate; a lower rev after a higher one is set aside as superseded, a
// revision whose earlier version's window is closed as revision_too_late;
// a missing or bad rev is quarantined. read is the sum of its parts.
func TestVersionField(t *testing.T) {
	want := "a 00:00:00 #1 ON_TIME orders=2 total=17.25 mean=8.625\n" + // o1 rev 2 in place of rev 1, and o2
		"a 00:00:00 #2 LATE orders=1 total=12 mean=12\n" + // o2 rev 2 moves to shop b: withdrawn from a,
		"b 00:00:00 #1 LATE orders=1 total=6 mean=6\n" + // added to b
		"a 00:01:00 #1 ON_TIME orders=1 total=1 mean=1\n" + // o3 rev 1, at o5 (watermark 00:03:29.999),
		"a 00:00:00 #3 LATE orders=1 total=12 mean=12\n" + // which closes 00:00
		"b 00:00:00 #2 LATE orders=1 total=6 mean=6\n" +
		"a 00:01:00 #2 LATE orders=1 total=3 mean=3\n" + // o3 rev "2": one late pane, 3 in place of 1
		"a 00:01:00 #3 LATE orders=1 total=3 mean=3\n" + // the end
		"a 00:03:00 #1 ON_TIME orders=1 total=2 mean=2\n"
	wantLate := []string{`{"reason":"superseded","key":"a","window_start":"2026-09-01T00:00:00.000Z"`, `"line":7,`,
		`{"reason":"revision_too_late","key":"a","window_start":"2026-09-01T00:03:00.000Z"`, `"line":11,`}
	for _, extra := range []string{"", "parallelism: 2\n", "state: {backend: pebble, memory_budget: 64KiB}\n"} {
		dir, sum := runJob(t, versionsJob+extra, versionsInput)
		if got := paneLines(t, read(t, dir, "out.jsonl")); got != want {
			t.Errorf("%q: panes:\n%s\nwant:\n%s", extra, got, want)
		}
		late := strings.Split(strings.TrimSpace(read(t, dir, "late.jsonl")), "\n")
		if len(late) != 2 || !strings.HasPrefix(late[0], wantLate[0]) || !strings.Contains(late[0], wantLate[1]) ||
			!strings.HasPrefix(late[1], wantLate[2]) || !strings.Contains(late[1], wantLate[3]) {
			t.Errorf("%q: late output:\n%s", extra, strings.Join(late, "\n"))
		}
		q := read(t, dir, "quarantine.jsonl")
		if !strings.Contains(q, `{"reason":"bad_version","line":8,"detail":"rev is \"x\", not an integer of 64 bits in decimal digits"`) ||
			!strings.Contains(q, `{"reason":"no_version","line":9,"detail":"rev is missing"`) {
			t.Errorf("%q: quarantine:\n%s", extra, q)
		}
		a := sum.Accounting
		if a.Read != 12 || a.Accepted != 7 || a.Duplicates != 1 || a.Superseded != 1 || a.RevisionsTooLate != 1 || a.Quarantined != 2 ||
			a.TooLate != 0 || sum.Revisions != 3 || sum.LateAccepted != 2 || !a.Balanced() {
			t.Errorf("%q: counts %+v, revisions %d, late accepted %d", extra, a, sum.Revisions, sum.LateAccepted)
		}
		s := read(t, dir, "summary.json")
		for _, k := range []string{`"superseded": 1,`, `"revisions_too_late": 1,`, `"revisions": 3,`} {
			if !strings.Contains(s, k) {
				t.Errorf("%q: the summary lacks %s:\n%s", extra, k, s)
			}
		}
	}
}

// versionedInput is a stream of n orders in arrival order, with late ones,
// revisions (a higher rev, often another amount, shop or time), repeated
// deliveries, older revs arriving after newer ones, revisions of orders
// long closed, and a few lines without a rev.
func versionedInput(n int) string {
	r := rand.New(rand.NewPCG(12, 52))
	type order struct {
		id, shop string
		rev      int
		ts       int64
		amount   int
	}
	var b strings.Builder
	var seen []order
	now := int64(1_780_000_000_000)
	write := func(o order) {
		fmt.Fprintf(&b, `{"order_id":%q,"rev":%d,"shop":%q,"ts":%d,"arrival":%d,"amount":%d}`+"\n", o.id, o.rev, o.shop, o.ts, now, o.amount)
	}
	for i := range n {
		now += int64(r.IntN(120))
		switch k := r.IntN(20); {
		case k < 3 && len(seen) > 0: // a revision of a recent (or older) order
			j := len(seen) - 1 - r.IntN(min(len(seen), 400))
			o := seen[j]
			o.rev += 1 + r.IntN(2)
			o.amount = r.IntN(100)
			if r.IntN(3) == 0 {
				o.shop = fmt.Sprintf("s%d", r.IntN(13))
			}
			if r.IntN(4) == 0 {
				o.ts += int64(r.IntN(20_000)) - 10_000
			}
			seen[j] = o
			write(o)
		case k == 3 && len(seen) > 0: // a repeat, of the latest version or an older one
			o := seen[len(seen)-1-r.IntN(min(len(seen), 400))]
			if o.rev > 1 && r.IntN(2) == 0 {
				o.rev--
			}
			write(o)
		case k == 4 && i%50 == 0:
			fmt.Fprintf(&b, `{"order_id":"x%d","shop":"s1","ts":%d,"arrival":%d,"amount":1}`+"\n", i, now, now)
		default:
			o := order{id: fmt.Sprintf("o%d", i), shop: fmt.Sprintf("s%d", r.IntN(13)), rev: 1, ts: now - int64(r.IntN(3000)), amount: r.IntN(100)}
			if r.IntN(40) == 0 {
				o.ts -= int64(r.IntN(60_000))
			}
			seen = append(seen, o)
			write(o)
		}
	}
	return b.String()
}

const versionedDurableJob = `name: versioned
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: shop
id: order_id
version_field: rev
dedup_horizon: 10m
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 30s
aggregates: {orders: count, total: sum(amount), mean: avg(amount)}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
`

// A versioned job resumed from any of its savepoints, into either state
// backend from either, writes what an uninterrupted run writes, and counts
// the same: what the de-duplication state keeps of each version applied
// (its version, its time, its key and values) is in every checkpoint.
func TestVersionedRestore(t *testing.T) {
	in := versionedInput(20000)
	refDir, ref := runJob(t, versionedDurableJob, in)
	if ref.Revisions < 500 || ref.Superseded < 50 || ref.RevisionsTooLate < 10 || ref.Duplicates < 50 || ref.QuarantineReasons[ReasonNoVersion] == 0 || !ref.Balanced() {
		t.Fatalf("the input is not what the test needs: %+v, %d revisions", ref.Accounting, ref.Revisions)
	}
	backends := map[string]string{"memory": "", "pebble": "state: {backend: pebble, memory_budget: 256KiB}\n"}
	ckpt := "checkpoint: {dir: ckpt, interval: 1h, keep: 2, keep_savepoints: 100}\n"
	for from, fromState := range backends {
		for to, toState := range backends {
			// A run with savepoints, then a restore from some of them, the
			// newest first (a restore takes the outputs back to its
			// savepoint: those taken after it no longer describe them).
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(versionedDurableJob+fromState+ckpt), 0o644)
			_, paths, err := runWithSavepoints(t, dir, nil)
			if err != nil || len(paths) < 3 {
				t.Fatalf("%s: %v: %d savepoints", from, err, len(paths))
			}
			sameOutputs(t, dir, refDir)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(versionedDurableJob+toState+ckpt), 0o644)
			for _, sp := range []string{paths[len(paths)-2], paths[len(paths)/2], paths[0]} {
				j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				sum, err := Run(context.Background(), j, Options{From: sp})
				if err != nil {
					t.Fatalf("%s to %s from %s: %v", from, to, sp, err)
				}
				sameOutputs(t, dir, refDir)
				if sum.Accounting != ref.Accounting || sum.Revisions != ref.Revisions {
					t.Errorf("%s to %s from %s: %+v, %d revisions; want %+v, %d", from, to, filepath.Base(sp), sum.Accounting, sum.Revisions, ref.Accounting, ref.Revisions)
				}
			}
		}
	}
}

// A savepoint of a job without version_field restores into the job with
// it: the restore says so, the ids it remembered (without versions) are
// duplicates as they were, and the orders after it are versioned.
func TestVersionFieldAddedOnRestore(t *testing.T) {
	in := versionedInput(20000)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
	plain := strings.Replace(versionedDurableJob, "version_field: rev\n", "", 1)
	ckpt := "checkpoint: {dir: ckpt, interval: 1h, keep: 2, keep_savepoints: 100}\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(plain+ckpt), 0o644)
	_, paths, err := runWithSavepoints(t, dir, nil)
	if err != nil || len(paths) < 3 {
		t.Fatalf("%v: %d savepoints", err, len(paths))
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(versionedDurableJob+ckpt), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), j, Options{From: paths[len(paths)/2]})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sum.RestoreChanges, "\n"), "version_field") {
		t.Errorf("the restore does not say version_field was added: %q", sum.RestoreChanges)
	}
	if sum.Revisions == 0 || sum.Superseded == 0 || !sum.Balanced() {
		t.Errorf("after the restore: %+v, %d revisions", sum.Accounting, sum.Revisions)
	}
}
