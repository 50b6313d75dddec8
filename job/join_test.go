package job

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/jobfile"
)

// The orders and payments of joinJob: times in minutes after 10:00.
const (
	joinOrders = `{"order_id":"o1","ts":"2026-01-01T10:00:00Z","amount":10}
{"order_id":"o2","ts":"2026-01-01T10:01:00Z","amount":20}
{"order_id":"o3","ts":"2026-01-01T10:02:00Z","amount":30}
not json
{"order_id":"o4","ts":"2026-01-01T10:20:00Z","amount":40}
{"order_id":"o5","ts":"2026-01-01T10:30:00Z","amount":50}
{"order_id":"o6","ts":"2026-01-01T10:05:00Z","amount":60}
`
	joinPayments = `{"order":"o1","paid_at":"2026-01-01T10:03:00Z","status":"ok"}
{"order":"o3","paid_at":"2026-01-01T10:15:00Z","status":"ok"}
{"order":"o2","paid_at":"2026-01-01T10:05:00Z","status":"failed"}
{"order":"o4","paid_at":"2026-01-01T10:21:00Z","status":"ok"}
{"order":"o9","paid_at":"2026-01-01T10:00:00Z","status":"ok"}
{"order":"o5","paid_at":"2026-01-01T10:31:00Z","status":"ok"}
`
)

// joinJob joins the orders with their payments within ten minutes, with a
// watermark moved by every record.
func joinJob(kind string) string {
	return `name: paid
source: {file: orders.jsonl}
time: {field: ts}
key: order_id
join:
  with: {source: {file: payments.jsonl}, time: {field: paid_at}, key: order, where: "status == 'ok'"}
  between: [0s, 10m]
  kind: ` + kind + `
watermark: {delay: 0s, interval: 0s}
output: joined.jsonl
late_output: late.jsonl
quarantine: bad.jsonl
summary: summary.json
`
}

// runJoinJob runs a job with a join on the orders and payments in dir.
func runJoinJob(t *testing.T, dir, yaml, orders, payments string, o Options) *Summary {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(orders), 0o600)
	os.WriteFile(filepath.Join(dir, "payments.jsonl"), []byte(payments), 0o600)
	j := loadJob(t, dir, yaml)
	sum, err := Run(context.Background(), j, o)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// A join job reads both inputs in one order, by event time (without
// arrival fields): the records it joins, those of the job's source that
// joined nothing, and those too late on either side are the interval
// join's, derived here record by record. The records in merged order, the
// next record of either input with the least time first: o1@0, o2@1,
// o3@2, the line that is not JSON (at once), payment o1@3 (a pair, before
// any watermark), payment o3@15 (passing the intervals of o2 and o3, which
// joined nothing), the failed payment (filtered out), o4@20, payment o4@21
// (a pair), payment o9@0 (too late), o5@30, o6@5 (too late), payment
// o5@31 (a pair).
func TestJoinJob(t *testing.T) {
	pair, unmatched := joinedPair, joinedUnmatched
	orders, payments := strings.Split(joinOrders, "\n"), strings.Split(joinPayments, "\n")
	o1 := pair("o1", orders[0], payments[0], 1, 1) + `"watermark":null}`
	o2 := unmatched("o2", orders[1], 2) + `"watermark":"2026-01-01T10:14:59.999Z"}`
	o3 := unmatched("o3", orders[2], 3) + `"watermark":"2026-01-01T10:14:59.999Z"}`
	o4 := pair("o4", orders[4], payments[3], 5, 4) + `"watermark":"2026-01-01T10:14:59.999Z"}`
	o5 := pair("o5", orders[5], payments[5], 6, 6) + `"watermark":"2026-01-01T10:20:59.999Z"}`
	for _, c := range []struct {
		kind  string
		want  []string
		pairs int64
	}{
		{jobfile.JoinLeftOuter, []string{o1, o2, o3, o4, o5}, 3},
		{jobfile.JoinInner, []string{o1, o4, o5}, 3},
		{jobfile.JoinAnti, []string{o2, o3}, 0},
	} {
		t.Run(c.kind, func(t *testing.T) {
			dir := t.TempDir()
			sum := runJoinJob(t, dir, joinJob(c.kind), joinOrders, joinPayments, Options{})
			if got, want := read(t, dir, "joined.jsonl"), strings.Join(c.want, "\n")+"\n"; got != want {
				t.Errorf("joined:\n%s\nwant:\n%s", got, want)
			}
			late := read(t, dir, "late.jsonl")
			wantLate := []string{
				`{"reason":"too_late_for_join","side":"right","key":"o9","watermark":"2026-01-01T10:19:59.999Z","event_time":"2026-01-01T10:00:00.000Z","line":5,"set_aside_at":`,
				`{"reason":"too_late_for_join","side":"left","key":"o6","watermark":"2026-01-01T10:20:59.999Z","event_time":"2026-01-01T10:05:00.000Z","line":7,"set_aside_at":`,
			}
			lines := strings.Split(strings.TrimSpace(late), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], wantLate[0]) || !strings.HasPrefix(lines[1], wantLate[1]) ||
				!strings.HasSuffix(lines[0], `,"event":`+payments[4]+`}`) || !strings.HasSuffix(lines[1], `,"event":`+orders[6]+`}`) {
				t.Errorf("late:\n%s\nwant lines starting\n%s", late, strings.Join(wantLate, "\n"))
			}
			if bad := read(t, dir, "bad.jsonl"); !strings.HasPrefix(bad, `{"reason":"not_json","line":4,`) || strings.Count(bad, "\n") != 1 {
				t.Errorf("quarantine:\n%s", bad)
			}
			js := sum.Join
			if sum.Read != 7 || sum.Accepted != 5 || sum.Quarantined != 1 || sum.TooLate != 1 || !sum.Accounting.Balanced() {
				t.Errorf("orders: %+v", sum.Accounting)
			}
			if w := js.With; w.Read != 6 || w.Accepted != 4 || w.Filtered != 1 || w.TooLate != 1 || !w.Balanced() {
				t.Errorf("payments: %+v", w)
			}
			if js.Pairs != c.pairs || js.Unmatched != 2 || // o2 and o3, written or not
				js.Written != int64(len(c.want)) || sum.LateWritten != 2 {
				t.Errorf("join: %+v, late written %d", js, sum.LateWritten)
			}
			if s := read(t, dir, "summary.json"); !strings.Contains(s, `"join": {`) || !strings.Contains(s, fmt.Sprintf(`"pairs": %d`, c.pairs)) {
				t.Errorf("summary file:\n%s", s)
			}
			text := sum.Text()
			for _, l := range []string{
				"weir: paid: read 7 lines",
				"weir: paid: join.with: read 6 lines: 4 accepted, 1 filtered out by where, 1 too late, 0 quarantined\n",
				fmt.Sprintf("weir: paid: %s join: %d pairs, %d unmatched; %d records written, 2 too-late records written; watermark 9999-12-31T23:59:59.999Z\n", c.kind, c.pairs, js.Unmatched, len(c.want)),
			} {
				if !strings.Contains(text, l) {
					t.Errorf("the summary lacks %q:\n%s", l, text)
				}
			}
		})
	}
}

// tsOf is the time field of an order or a payment, as weir writes times.
func tsOf(line string) string {
	for _, f := range []string{`"ts":"`, `"paid_at":"`} {
		if i := strings.Index(line, f); i >= 0 {
			return line[i+len(f):i+len(f)+19] + ".000Z"
		}
	}
	return ""
}

func maxTime(a, b string) string { return max(a, b) }

// joinedPair is the start of the joined record of the left line l (line
// lline of its file) and the right line r, up to its watermark.
func joinedPair(key, l, r string, lline, rline int) string {
	return fmt.Sprintf(`{"key":"%s","time":"%s","matched":true,"left":{"event_time":"%s","line":%d,"event":%s},"right":{"event_time":"%s","line":%d,"event":%s},`,
		key, maxTime(tsOf(l), tsOf(r)), tsOf(l), lline, l, tsOf(r), rline, r)
}

// joinedUnmatched is the start of the record of the left line l that
// joined nothing, up to its watermark.
func joinedUnmatched(key, l string, line int) string {
	return fmt.Sprintf(`{"key":"%s","time":"%s","matched":false,"left":{"event_time":"%s","line":%d,"event":%s},"right":null,`, key, tsOf(l), tsOf(l), line, l)
}

// A window join job: the orders and their payments in the same tumbling
// window of 10 minutes. The records in TestJoinJob's merged order: the
// window [10:00, 10:10) fires when the payment of o3 at 10:15 moves the
// watermark past it (o1 paid at 10:03 in it; o2's payment failed; o3's
// came in the next window); the payment of o9 at 10:00 and the order o6
// at 10:05 come after it fired, too late; o4 is paid in its window, which
// fires when o5 and its payment move the watermark to 10:29:59.999, and
// o5 in its own, which the end fires.
func TestWindowJoinJob(t *testing.T) {
	in := func(line, start, end string) string {
		return strings.Replace(line, `,"matched":`, `,"window_start":"2026-01-01T`+start+`:00.000Z","window_end":"2026-01-01T`+end+`:00.000Z","matched":`, 1)
	}
	orders, payments := strings.Split(joinOrders, "\n"), strings.Split(joinPayments, "\n")
	const fired = `"watermark":"2026-01-01T10:14:59.999Z"}`
	end := `"watermark":"9999-12-31T23:59:59.999Z"}`
	want := []string{
		in(joinedPair("o1", orders[0], payments[0], 1, 1), "10:00", "10:10") + fired,
		in(joinedUnmatched("o2", orders[1], 2), "10:00", "10:10") + fired,
		in(joinedUnmatched("o3", orders[2], 3), "10:00", "10:10") + fired,
		in(joinedPair("o4", orders[4], payments[3], 5, 4), "10:20", "10:30") + `"watermark":"2026-01-01T10:29:59.999Z"}`,
		in(joinedPair("o5", orders[5], payments[5], 6, 6), "10:30", "10:40") + end,
	}
	yaml := strings.Replace(joinJob(jobfile.JoinLeftOuter), "between: [0s, 10m]", "window: {tumbling: 10m}", 1)
	dir := t.TempDir()
	sum := runJoinJob(t, dir, yaml, joinOrders, joinPayments, Options{})
	if got := read(t, dir, "joined.jsonl"); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("joined:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	late := read(t, dir, "late.jsonl")
	if !strings.HasPrefix(late, `{"reason":"too_late_for_join","side":"right","key":"o9","watermark":"2026-01-01T10:19:59.999Z","event_time":"2026-01-01T10:00:00.000Z","line":5,`) ||
		!strings.Contains(late, "\n"+`{"reason":"too_late_for_join","side":"left","key":"o6","watermark":"2026-01-01T10:20:59.999Z","event_time":"2026-01-01T10:05:00.000Z","line":7,`) ||
		strings.Count(late, "\n") != 2 {
		t.Errorf("late:\n%s", late)
	}
	if js := sum.Join; js.Pairs != 3 || js.Unmatched != 2 || js.Window != "10m0s" || sum.TooLate != 1 || js.With.TooLate != 1 || !js.With.Balanced() || !sum.Accounting.Balanced() {
		t.Errorf("join: %+v", js)
	}
	if !strings.Contains(sum.Text(), "paid: left_outer window join: 3 pairs, 2 unmatched") {
		t.Errorf("summary:\n%s", sum.Text())
	}
}

// A temporal join job: each order joins its card's limit as it was at the
// order's time, read from a changelog of limits in which op "d" deletes a
// card's row. The records in merged order (least time first): the limits
// of c1 and c2 at 10:00, orders a@10:01 and b@10:02, c1's new limit at
// 10:05 (the watermark passes a, which joins c1's first limit), c2's
// deletion at 10:06, c1's limit at 10:01:30 (behind the watermark: too
// late, it would rewrite a's), order c@10:06:30 (the watermark passes b),
// d@10:07 and e@10:08; at the end c joins c1's limit of 10:05, d finds
// c2's row deleted and e no card.
func TestTemporalJoinJob(t *testing.T) {
	orders := []string{
		`{"order_id":"a","card":"c1","ts":"2026-01-01T10:01:00Z","amount":80}`,
		`{"order_id":"b","card":"c2","ts":"2026-01-01T10:02:00Z","amount":60}`,
		`{"order_id":"c","card":"c1","ts":"2026-01-01T10:06:30Z","amount":150}`,
		`{"order_id":"d","card":"c2","ts":"2026-01-01T10:07:00Z","amount":10}`,
		`{"order_id":"e","card":"c3","ts":"2026-01-01T10:08:00Z","amount":5}`,
	}
	limits := []string{
		`{"card":"c1","paid_at":"2026-01-01T10:00:00Z","limit":100}`,
		`{"card":"c2","paid_at":"2026-01-01T10:00:00Z","limit":50}`,
		`{"card":"c1","paid_at":"2026-01-01T10:05:00Z","limit":200}`,
		`{"card":"c2","paid_at":"2026-01-01T10:06:00Z","op":"d"}`,
		`{"card":"c1","paid_at":"2026-01-01T10:01:30Z","limit":5}`,
	}
	yaml := strings.NewReplacer("key: order_id", "key: card", "key: order, where: \"status == 'ok'\"", `key: card, deletion: "op == 'd'"`,
		"between: [0s, 10m]", "temporal: true").Replace(joinJob(jobfile.JoinLeftOuter))
	dir := t.TempDir()
	sum := runJoinJob(t, dir, yaml, strings.Join(orders, "\n")+"\n", strings.Join(limits, "\n")+"\n", Options{})
	want := []string{
		joinedPair("c1", orders[0], limits[0], 1, 1) + `"watermark":"2026-01-01T10:01:59.999Z"}`,
		joinedPair("c2", orders[1], limits[1], 2, 2) + `"watermark":"2026-01-01T10:05:59.999Z"}`,
		joinedPair("c1", orders[2], limits[2], 3, 3) + `"watermark":"9999-12-31T23:59:59.999Z"}`,
		joinedUnmatched("c2", orders[3], 4) + `"watermark":"9999-12-31T23:59:59.999Z"}`,
		joinedUnmatched("c3", orders[4], 5) + `"watermark":"9999-12-31T23:59:59.999Z"}`,
	}
	if got := read(t, dir, "joined.jsonl"); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("joined:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	late := read(t, dir, "late.jsonl")
	if !strings.HasPrefix(late, `{"reason":"too_late_for_join","side":"right","key":"c1","watermark":"2026-01-01T10:01:59.999Z","event_time":"2026-01-01T10:01:30.000Z","line":5,`) ||
		!strings.HasSuffix(late, `"event":`+limits[4]+"}\n") || strings.Count(late, "\n") != 1 {
		t.Errorf("late:\n%s", late)
	}
	if js := sum.Join; js.Pairs != 3 || js.Unmatched != 2 || js.With.Read != 5 || js.With.Accepted != 4 || js.With.TooLate != 1 || !js.With.Balanced() {
		t.Errorf("join: %+v", js)
	}
	if !strings.Contains(sum.Text(), "paid: left_outer temporal join: 3 pairs, 2 unmatched") {
		t.Errorf("summary:\n%s", sum.Text())
	}
}

// joinInputs are orders, one a second with up to 20 s of disorder, and
// payments for most of them, within 0 to 15 minutes (some too late for
// their order's interval, some failed, some behind the watermark), in
// order of payment, with lines that are not JSON on both sides.
func joinInputs(n int) (orders, payments string) {
	var o, p strings.Builder
	type pay struct {
		at   int
		line string
	}
	var pays []pay
	seed := uint64(7)
	next := func(m int) int {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int(seed>>33) % m
	}
	for i := range n {
		at := i*1000 - next(20_000)
		fmt.Fprintf(&o, `{"order_id":"o%d","ts":%d,"amount":%d,"at":%d}`+"\n", i, 1_700_000_000_000+at, 1+next(500), 1_700_000_000_000+i*1000+2000)
		if i%97 == 5 {
			o.WriteString("{broken\n")
		}
		if next(10) < 8 {
			paid := at + next(15*60_000)
			status := "ok"
			if next(20) == 0 {
				status = "failed"
			}
			arrive := paid
			if next(50) == 0 {
				arrive += 20 * 60_000 // behind the watermark by then
			}
			pays = append(pays, pay{arrive, fmt.Sprintf(`{"order":"o%d","paid_at":%d,"status":"%s","at":%d}`, i, 1_700_000_000_000+paid, status, 1_700_000_000_000+arrive+1000)})
		}
	}
	for i := 1; i < len(pays); i++ {
		for k := i; k > 0 && pays[k-1].at > pays[k].at; k-- {
			pays[k-1], pays[k] = pays[k], pays[k-1]
		}
	}
	for i, x := range pays {
		p.WriteString(x.line + "\n")
		if i%113 == 7 {
			p.WriteString("not a payment\n")
		}
	}
	return o.String(), p.String()
}

// A join job stopped with a savepoint after any batch of either input,
// and resumed, writes byte for byte what a run without a stop writes:
// its records, its too-late records, its quarantine and its summary.
func TestJoinJobRestoredWritesTheSame(t *testing.T) {
	orders, payments := joinInputs(5000)
	yaml := strings.NewReplacer("{delay: 0s, interval: 0s}", "{delay: 30s, interval: 0s}",
		"{field: ts}", "{field: ts, arrival_field: at}", "{field: paid_at}", "{field: paid_at, arrival_field: at}").Replace(joinJob(jobfile.JoinLeftOuter)) +
		"checkpoint: {dir: ckpt, interval: 1h}\n"
	restoredWritesTheSame(t, yaml, orders, payments, 2000, 1000)
}

// dedupJoinJob is a left outer join job of 5,000 orders, every 50th sent
// twice in a row, and their payments, every 10th again 20 lines later,
// each input de-duplicated by its id, checkpointed.
func dedupJoinJob() (orders, payments, yaml string) {
	orders, payments = joinInputs(5000)
	orders, payments = resent(orders, 50, 1), resent(payments, 10, 20)
	yaml = strings.NewReplacer("{delay: 0s, interval: 0s}", "{delay: 30s, interval: 0s}",
		"{field: ts}", "{field: ts, arrival_field: at}\nid: order_id", "{field: paid_at}", "{field: paid_at, arrival_field: at}, id: order").Replace(joinJob(jobfile.JoinLeftOuter)) +
		"checkpoint: {dir: ckpt, interval: 1h}\n"
	return orders, payments, yaml
}

// A join job that de-duplicates both inputs (id, join.with.id), stopped
// and resumed as TestJoinJobRestoredWritesTheSame's: every 50th order is
// sent twice in a row, every 10th payment again 20 lines later, and each
// duplicate is dropped whether its first came before the savepoint or
// after it.
func TestJoinJobDeduplicatesRestoredWritesTheSame(t *testing.T) {
	orders, payments, yaml := dedupJoinJob()
	sum := runJoinJob(t, t.TempDir(), yaml, orders, payments, Options{})
	if sum.Duplicates < 90 || sum.Join.With.Duplicates < 300 || !sum.Accounting.Balanced() || !sum.Join.With.Balanced() {
		t.Fatalf("the inputs' duplicates should be dropped: orders %+v, payments %+v", sum.Accounting, sum.Join.With)
	}
	restoredWritesTheSame(t, yaml, orders, payments, 2000, 1000)
}

// A join job's ids may be added or removed by an upgrade, as an
// aggregation's: added, an input's de-duplication starts afresh; removed,
// its ids are not restored. Either way the job resumes and, on inputs
// without duplicates, writes what a run without a stop writes.
func TestJoinJobDedupAddedOrRemovedOnRestore(t *testing.T) {
	orders, payments := joinInputs(3000)
	plain := strings.NewReplacer("{delay: 0s, interval: 0s}", "{delay: 30s, interval: 0s}",
		"{field: ts}", "{field: ts, arrival_field: at}", "{field: paid_at}", "{field: paid_at, arrival_field: at}").Replace(joinJob(jobfile.JoinLeftOuter)) +
		"checkpoint: {dir: ckpt, interval: 1h}\n"
	withIDs := strings.NewReplacer("{field: ts, arrival_field: at}", "{field: ts, arrival_field: at}\nid: order_id",
		"{field: paid_at, arrival_field: at}", "{field: paid_at, arrival_field: at}, id: order").Replace(plain)
	whole := t.TempDir()
	runJoinJob(t, whole, plain, orders, payments, Options{})
	want := read(t, whole, "joined.jsonl")
	for _, c := range []struct{ name, before, after string }{{"added", plain, withIDs}, {"removed", withIDs, plain}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if s := runJoinJob(t, dir, c.before, orders, payments, Options{stopAfter: 2}); s.Savepoint == "" {
				t.Fatal("no savepoint")
			}
			var log strings.Builder
			sum := runJoinJob(t, dir, c.after, orders, payments, Options{Log: &log})
			if got := read(t, dir, "joined.jsonl"); got != want {
				t.Errorf("resumed with the ids %s: the records differ from a run without a stop (%d bytes against %d)\n%s", c.name, len(got), len(want), log.String())
			}
			if !sum.Accounting.Balanced() || !sum.Join.With.Balanced() {
				t.Errorf("accounting: %+v, %+v", sum.Accounting, sum.Join.With)
			}
		})
	}
}

// What a restore does with a join's ids, as weir run --from --check says
// it: the other input's id changed is refused, naming join.with.id and what
// a restore keeps, unless its ids are dropped; an id removed is left
// behind; one added starts afresh.
func TestJoinJobDedupRestoreRules(t *testing.T) {
	orders, payments := joinInputs(300)
	base := strings.NewReplacer("{field: ts}", "{field: ts}\nid: order_id", "{field: paid_at}", "{field: paid_at}, id: order").Replace(joinJob(jobfile.JoinInner)) +
		"checkpoint: {dir: ckpt, interval: 1h}\n"
	dir := t.TempDir()
	if s := runJoinJob(t, dir, base, orders, payments, Options{stopAfter: 1}); s.Savepoint == "" {
		t.Fatal("no savepoint")
	}
	sp := filepath.Join(dir, "ckpt", "savepoints", "sp-00000001")
	for _, c := range []struct {
		name, from, to string
		drop           []string
		line, err      string
	}{
		{"the other input's id changed", "id: order,", "id: status,", nil,
			"refused join.with.id order -> status: its de-duplication ids would be lost\n",
			"join.with.id: order in " + sp + ", status now: restoring would lose the 42 de-duplication ids; --drop-state=dedup starts them afresh, keeping the positions and the join's buffered records"},
		{"its ids dropped", "id: order,", "id: status,", []string{"dedup"},
			"restarts join.with.id order -> status: its de-duplication ids dropped (DropState dedup)\n", ""},
		{"the job's id removed", "id: order_id\n", "", nil,
			"removed de-duplication of source no longer in the job; not restored: its de-duplication ids\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := loadJob(t, dir, strings.Replace(base, c.from, c.to, 1))
			r, err := CheckRestore(j, sp, c.drop)
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want %q", err, c.err)
			}
			if r == nil || !strings.Contains(oneSpaced(r.Text()), c.line) {
				t.Errorf("the report lacks %q:\n%v", c.line, r)
			}
		})
	}
	// An id added to a join without: that input's de-duplication starts
	// afresh.
	plain := strings.NewReplacer("{field: ts}\nid: order_id", "{field: ts}", " id: order,", "").Replace(base)
	dir2 := t.TempDir()
	if s := runJoinJob(t, dir2, plain, orders, payments, Options{stopAfter: 1}); s.Savepoint == "" {
		t.Fatal("no savepoint")
	}
	r, err := CheckRestore(loadJob(t, dir2, base), filepath.Join(dir2, "ckpt", "savepoints", "sp-00000001"), nil)
	if err != nil || !strings.Contains(oneSpaced(r.Text()), "restarts de-duplication of source new since the checkpoint: starts afresh\nrestarts de-duplication of join.with new since the checkpoint: starts afresh\n") {
		t.Errorf("ids added: %v\n%v", err, r)
	}
}

// oneSpaced is s with each run of spaces one space: a report's columns
// aside.
func oneSpaced(s string) string {
	return regexp.MustCompile(` +`).ReplaceAllString(s, " ")
}

// resent is the lines with every nth line of JSON sent again after later
// more lines.
func resent(lines string, nth, later int) string {
	ls := strings.SplitAfter(lines, "\n")
	var out []string
	var again []struct {
		at   int
		line string
	}
	for i, l := range ls {
		out = append(out, l)
		if i%nth == 0 && strings.HasPrefix(l, `{"`) {
			again = append(again, struct {
				at   int
				line string
			}{i + later, l})
		}
		for len(again) > 0 && again[0].at <= i+1 {
			out, again = append(out, again[0].line), again[1:]
		}
	}
	return strings.Join(out, "")
}

// A temporal join job, stopped and resumed as TestJoinJobRestoredWritesTheSame's:
// each payment joins its order as it was at the payment's time, an order
// of more than 450 being a deletion of the order's row.
func TestTemporalJoinJobRestoredWritesTheSame(t *testing.T) {
	orders, payments := joinInputs(5000)
	yaml := `name: paid
source: {file: payments.jsonl}
time: {field: paid_at, arrival_field: at}
key: order
join:
  with: {source: {file: orders.jsonl}, time: {field: ts, arrival_field: at}, key: order_id, deletion: "amount > 450"}
  temporal: true
  kind: left_outer
  allowed_lateness: 5s
watermark: {delay: 30s, interval: 0s}
output: joined.jsonl
late_output: late.jsonl
quarantine: bad.jsonl
summary: summary.json
checkpoint: {dir: ckpt, interval: 1h}
`
	restoredWritesTheSame(t, yaml, orders, payments, 2000, 300)
}

// A window join job, stopped and resumed as TestJoinJobRestoredWritesTheSame's:
// the orders and their payments in tumbling windows of 5 minutes.
func TestWindowJoinJobRestoredWritesTheSame(t *testing.T) {
	orders, payments := joinInputs(5000)
	yaml := strings.NewReplacer("{delay: 0s, interval: 0s}", "{delay: 30s, interval: 0s}", "between: [0s, 10m]", "window: {tumbling: 5m}",
		"{field: ts}", "{field: ts, arrival_field: at}", "{field: paid_at}", "{field: paid_at, arrival_field: at}").Replace(joinJob(jobfile.JoinLeftOuter)) +
		"checkpoint: {dir: ckpt, interval: 1h}\n"
	restoredWritesTheSame(t, yaml, orders, payments, 500, 1000)
}

// restoredWritesTheSame runs the join job yaml on orders and payments
// through, then stopped with a savepoint after each of a few batches and
// resumed, and compares what each writes; the run through must give at
// least pairs pairs and unmatched records that joined nothing.
func restoredWritesTheSame(t *testing.T, yaml, orders, payments string, pairs, unmatched int64) {
	t.Helper()
	files := []string{"joined.jsonl", "late.jsonl", "bad.jsonl", "summary.json"}
	whole := t.TempDir()
	sum := runJoinJob(t, whole, yaml, orders, payments, Options{})
	if sum.Join.Pairs < pairs || sum.Join.Unmatched < unmatched || sum.TooLate+sum.Join.With.TooLate < 50 || sum.Quarantined == 0 || sum.Join.With.Quarantined == 0 {
		t.Fatalf("the input should give pairs, unmatched records, late records and bad lines: %+v, %+v", sum.Accounting, sum.Join)
	}
	want := map[string]string{}
	for _, f := range files {
		want[f] = read(t, whole, f)
	}
	// The same on the Pebble backend, its cache a few keys' records, and
	// stopped on one backend and resumed on the other: a join's
	// checkpoints are the same on both.
	onDisk := yaml + "state: {backend: pebble, memory_budget: 64KiB}\n"
	dir := t.TempDir()
	runJoinJob(t, dir, onDisk, orders, payments, Options{})
	for _, f := range files {
		if got := read(t, dir, f); got != want[f] {
			t.Errorf("on the Pebble backend: %s differs from the run in memory (%d bytes against %d)", f, len(got), len(want[f]))
		}
	}
	for i, stop := range []int64{1, 2, 4, 7, 9} {
		first, then := yaml, yaml
		switch i % 3 {
		case 1:
			first = onDisk
		case 2:
			then = onDisk
		}
		dir := t.TempDir()
		if s := runJoinJob(t, dir, first, orders, payments, Options{stopAfter: stop}); s.Savepoint == "" {
			t.Fatalf("stop after batch %d: no savepoint (read %d)", stop, s.Read)
		}
		runJoinJob(t, dir, then, orders, payments, Options{})
		for _, f := range files {
			if got := read(t, dir, f); got != want[f] {
				t.Errorf("stopped after batch %d and resumed (state on Pebble: %v, %v): %s differs from the run without a stop (%d bytes against %d)",
					stop, first == onDisk, then == onDisk, f, len(got), len(want[f]))
			}
		}
	}
}

// A join job's console shows its records as they were written, the records
// too late for it, and its status: each input's accounting and the join's.
func TestJoinJobConsole(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(joinOrders), 0o600)
	os.WriteFile(filepath.Join(dir, "payments.jsonl"), []byte(joinPayments), 0o600)
	j := loadJob(t, dir, joinJob(jobfile.JoinLeftOuter))
	rn, err := Build(j, Options{Console: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := rn.Console()
	srv.Ended(rn.Engine())
	get := func(path string) string {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Body.String()
	}
	var panes, late []json.RawMessage
	json.Unmarshal([]byte(get("/api/panes")), &panes)
	json.Unmarshal([]byte(get("/api/late")), &late)
	var got []string
	for _, p := range panes {
		got = append(got, string(p))
	}
	if want := strings.TrimSuffix(read(t, dir, "joined.jsonl"), "\n"); strings.Join(got, "\n") != want {
		t.Errorf("/api/panes:\n%s\nwant the output's:\n%s", strings.Join(got, "\n"), want)
	}
	if len(late) != 2 || !strings.Contains(string(late[0]), `"key":"o9"`) {
		t.Errorf("/api/late: %s", late)
	}
	var status struct {
		Status struct {
			Joins []struct {
				Name      string `json:"name"`
				Pairs     int64  `json:"pairs"`
				Unmatched int64  `json:"unmatched"`
				LateLeft  int64  `json:"late_left"`
				LateRight int64  `json:"late_right"`
			} `json:"joins"`
			Inputs []struct {
				Name   string `json:"name"`
				Counts struct {
					Read     int64 `json:"read"`
					Accepted int64 `json:"accepted"`
					TooLate  int64 `json:"too_late"`
				} `json:"counts"`
			} `json:"inputs"`
			Partitions []struct {
				Name string `json:"name"`
			} `json:"partitions"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(get("/api/status")), &status); err != nil {
		t.Fatal(err)
	}
	st := status.Status
	if ins := fmt.Sprintf("%+v", st.Inputs); ins != "[{Name:source Counts:{Read:7 Accepted:5 TooLate:1}} {Name:join.with Counts:{Read:6 Accepted:4 TooLate:1}}]" {
		t.Errorf("/api/status inputs: %s", ins)
	}
	if len(st.Partitions) != 2 || !strings.HasSuffix(st.Partitions[0].Name, "orders.jsonl") || !strings.HasSuffix(st.Partitions[1].Name, "payments.jsonl") {
		t.Errorf("/api/status partitions: %+v", st.Partitions)
	}
	if len(st.Joins) != 1 || st.Joins[0].Name != "join" || st.Joins[0].Pairs != 3 || st.Joins[0].Unmatched != 2 || st.Joins[0].LateLeft != 1 || st.Joins[0].LateRight != 1 {
		t.Errorf("/api/status joins: %+v", st.Joins)
	}
	if m := get("/metrics"); !strings.Contains(m, `weir_join_records_too_late_total{job_name="paid",join="join",side="right"} 1`) {
		t.Errorf("/metrics lacks the join's late records:\n%s", m)
	}
}

// A join's other input regenerated between a stop and the restart, read
// again from its start with AcceptChangedInput: the summary says so of
// that input (join.with_input_restarted), not of the job's source, in
// summary.json and in the summary's lines.
func TestJoinJobSaysWhichInputRestarted(t *testing.T) {
	orders, payments := joinInputs(5000)
	yaml := strings.NewReplacer("{delay: 0s, interval: 0s}", "{delay: 30s, interval: 0s}",
		"{field: ts}", "{field: ts, arrival_field: at}", "{field: paid_at}", "{field: paid_at, arrival_field: at}").Replace(joinJob(jobfile.JoinLeftOuter)) +
		"checkpoint: {dir: ckpt, interval: 1h}\n"
	dir := t.TempDir()
	if s := runJoinJob(t, dir, yaml, orders, payments, Options{stopAfter: 2}); s.Savepoint == "" {
		t.Fatal("no savepoint")
	}
	// Other bytes: a line more at its start, which the where leaves out.
	os.Remove(filepath.Join(dir, "payments.jsonl"))
	regenerated := strings.Replace(payments, "\n", "\n"+strings.SplitN(payments, "\n", 2)[0]+"\n", 1)
	os.WriteFile(filepath.Join(dir, "payments.jsonl"), []byte(regenerated), 0o600)
	sum, err := Run(context.Background(), loadJob(t, dir, yaml), Options{AcceptChangedInput: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sum.Join.WithInputRestarted, "its first 4096 bytes are not those read before") || sum.InputRestarted != "" {
		t.Errorf("the source restarted: %q; the other input: %q", sum.InputRestarted, sum.Join.WithInputRestarted)
	}
	var file struct {
		Restarted string `json:"input_restarted"`
		Join      struct {
			WithRestarted string `json:"with_input_restarted"`
		} `json:"join"`
	}
	json.Unmarshal([]byte(read(t, dir, "summary.json")), &file)
	if file.Restarted != "" || file.Join.WithRestarted != sum.Join.WithInputRestarted {
		t.Errorf("summary.json says %+v", file)
	}
	if text := sum.Text(); !strings.Contains(text, "join.with: the input was read from its start: it is not the file the checkpoint read (its first 4096 bytes") {
		t.Errorf("the summary's lines:\n%s", text)
	}
}

// A join job with id on both inputs de-duplicates each, as a window's head
// does: an order sent twice and a payment sent twice join once, two
// payments of one order with ids of their own join twice, and a payment too
// old for its id to be checked (its time plus dedup_horizon at or before
// the watermark) goes to the late output as beyond_dedup_horizon, never
// into the join. Every line is accounted for. In merged order: o1@0, o1@0
// again, p1@3 (the pair), p1@3 again, o4@20, p4@21 and p4b@22 (two
// pairs), then p0@4, read when the watermark (the orders', the least of
// the two) is 10:19:59.999.
func TestJoinJobDeduplicates(t *testing.T) {
	const (
		orders = `{"order_id":"o1","ts":"2026-01-01T10:00:00Z","amount":10}
{"order_id":"o1","ts":"2026-01-01T10:00:00Z","amount":10}
{"order_id":"o4","ts":"2026-01-01T10:20:00Z","amount":40}
`
		payments = `{"payment_id":"p1","order":"o1","paid_at":"2026-01-01T10:03:00Z"}
{"payment_id":"p1","order":"o1","paid_at":"2026-01-01T10:03:00Z"}
{"payment_id":"p4","order":"o4","paid_at":"2026-01-01T10:21:00Z"}
{"payment_id":"p4b","order":"o4","paid_at":"2026-01-01T10:22:00Z"}
{"payment_id":"p0","order":"o1","paid_at":"2026-01-01T10:04:00Z"}
`
	)
	job := `name: paid
source: {file: orders.jsonl}
time: {field: ts}
key: order_id
id: order_id
dedup_horizon: 5m
join:
  with: {source: {file: payments.jsonl}, time: {field: paid_at}, key: order, id: payment_id}
  between: [0s, 10m]
watermark: {delay: 0s, interval: 0s}
output: joined.jsonl
late_output: late.jsonl
summary: summary.json
`
	dir := t.TempDir()
	sum := runJoinJob(t, dir, job, orders, payments, Options{})
	o, p := strings.Split(orders, "\n"), strings.Split(payments, "\n")
	want := []string{
		joinedPair("o1", o[0], p[0], 1, 1) + `"watermark":null}`,
		joinedPair("o4", o[2], p[2], 3, 3) + `"watermark":"2026-01-01T10:02:59.999Z"}`,
		joinedPair("o4", o[2], p[3], 3, 4) + `"watermark":"2026-01-01T10:19:59.999Z"}`,
	}
	if got := read(t, dir, "joined.jsonl"); got != strings.Join(want, "\n")+"\n" {
		t.Errorf("joined:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	late := read(t, dir, "late.jsonl")
	wantLate := `{"reason":"beyond_dedup_horizon","side":"right","key":"o1","watermark":"2026-01-01T10:19:59.999Z","event_time":"2026-01-01T10:04:00.000Z","line":5,"set_aside_at":`
	if !strings.HasPrefix(late, wantLate) || !strings.HasSuffix(late, `,"event":`+p[4]+"}\n") || strings.Count(late, "\n") != 1 {
		t.Errorf("late:\n%s\nwant one line starting\n%s", late, wantLate)
	}
	if sum.Read != 3 || sum.Accepted != 2 || sum.Duplicates != 1 || !sum.Accounting.Balanced() {
		t.Errorf("orders: %+v", sum.Accounting)
	}
	js := sum.Join
	if w := js.With; w.Read != 5 || w.Accepted != 3 || w.Duplicates != 1 || w.BeyondDedupHorizon != 1 || w.TooLate != 0 || !w.Balanced() {
		t.Errorf("payments: %+v", w)
	}
	if js.Pairs != 3 || js.Written != 3 || sum.LateWritten != 1 {
		t.Errorf("join: %+v, late written %d", js, sum.LateWritten)
	}
	text := sum.Text()
	for _, l := range []string{
		"weir: paid: join.with: read 5 lines: 3 accepted, 1 duplicates, 1 beyond the de-duplication horizon, 0 too late, 0 quarantined\n",
		"weir: paid: inner join: 3 pairs, 0 unmatched; 3 records written, 1 too-late records written; watermark 9999-12-31T23:59:59.999Z\n",
	} {
		if !strings.Contains(text, l) {
			t.Errorf("the summary lacks %q:\n%s", l, text)
		}
	}
}

// A join on the Pebble backend holds what it buffers in the database: an
// interval of 1,000 hours holds every order until the input ends, and the
// live heap a run adds grows with the orders held (100K, then 200K, about
// 7 and 14 MiB of text) by less than a quarter of what it grows in memory;
// both backends write the same records.
func TestJoinHoldsToTheBudget(t *testing.T) {
	sizes, budget := []int{100_000, 200_000}, 8
	if raceEnabled || testing.Short() {
		sizes = []int{10_000, 20_000} // the bound is not at stake with so few
	}
	// Frequent collections, so that the live heap they measure follows
	// the state closely.
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	added := map[string][]uint64{}
	for _, n := range sizes {
		orders, payments := joinInputs(n)
		wide := wideJoinJob()
		outs := map[string][32]byte{}
		for _, backend := range []string{"memory", "pebble"} {
			dir := t.TempDir()
			yaml := wide + fmt.Sprintf("state: {backend: %s, memory_budget: %dMiB}\n", backend, budget)
			os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(orders), 0o600)
			os.WriteFile(filepath.Join(dir, "payments.jsonl"), []byte(payments), 0o600)
			j := loadJob(t, dir, yaml)
			runtime.GC()
			base := liveHeap()
			stop := liveHeapPeak()
			if _, err := Run(context.Background(), j, Options{}); err != nil {
				t.Fatal(err)
			}
			peak := stop()
			debug.SetMemoryLimit(math.MaxInt64) // the Pebble run sets the budget's
			added[backend] = append(added[backend], peak-min(base, peak))
			outs[backend] = sha256.Sum256([]byte(read(t, dir, "joined.jsonl")))
			t.Logf("%d orders, %s: the run added at most %.1f MiB to the live heap", n, backend, float64(peak-min(base, peak))/(1<<20))
		}
		if outs["pebble"] != outs["memory"] {
			t.Errorf("%d orders: the join on Pebble wrote other records than in memory", n)
		}
	}
	if raceEnabled || testing.Short() {
		return
	}
	grew := func(b string) int64 { return int64(added[b][1]) - int64(added[b][0]) }
	if m := grew("memory"); m < 16<<20 {
		t.Fatalf("in memory the live heap the run adds grew by %d MiB with the orders held: too little to test the bound", m>>20)
	}
	// Pebble's own structures grow with the data (its files' metadata):
	// a little, not with the orders' records.
	if p, m := grew("pebble"), grew("memory"); p > m/4 {
		t.Errorf("on Pebble the live heap the run adds grew by %.1f MiB with the orders held (%.1f MiB in memory)", float64(p)/(1<<20), float64(m)/(1<<20))
	}
}

// A join on Pebble takes its checkpoints, and is restored, within its
// budget: a checkpoint of every order held (one each 4 MiB of output, and
// a savepoint) is written from the database a key at a time, and read
// back as it comes, never whole in memory. In memory the same run takes
// about the state's size.
func TestJoinCheckpointHoldsToTheBudget(t *testing.T) {
	n, stop := 200_000, int64(250)
	if raceEnabled || testing.Short() {
		n, stop = 20_000, 25 // the bound is not at stake with so few
	}
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	orders, payments := joinInputs(n)
	wide := wideJoinJob() + "checkpoint: {dir: ckpt, interval: 1h, max_held_output: 4MiB}\n"
	added := map[string][2]float64{}
	outs := map[string][32]byte{}
	for _, backend := range []string{"memory", "pebble"} {
		dir := t.TempDir()
		yaml := wide + fmt.Sprintf("state: {backend: %s, memory_budget: 8MiB}\n", backend)
		var peaks [2]float64
		for i, o := range []Options{{stopAfter: stop}, {}} {
			runtime.GC()
			base := liveHeap()
			peak := liveHeapPeak()
			sum := runJoinJob(t, dir, yaml, orders, payments, o)
			p := peak()
			debug.SetMemoryLimit(math.MaxInt64) // the Pebble run sets the budget's
			peaks[i] = float64(p-min(base, p)) / (1 << 20)
			if i == 0 && (sum.Savepoint == "" || sum.Read < int64(n)/2) {
				t.Fatalf("%s: stopped after %d orders, savepoint %q", backend, sum.Read, sum.Savepoint)
			}
		}
		added[backend] = peaks
		outs[backend] = sha256.Sum256([]byte(read(t, dir, "joined.jsonl")))
		t.Logf("%s: stopped with a savepoint, the run added at most %.1f MiB to the live heap; resumed, %.1f MiB", backend, peaks[0], peaks[1])
	}
	if outs["pebble"] != outs["memory"] {
		t.Errorf("the join on Pebble, stopped and resumed, wrote other records than in memory")
	}
	if raceEnabled || testing.Short() {
		return
	}
	// The Pebble runs' heap is mostly its batches of writes (4 MiB, and
	// their index) and, resumed, the output the end of the input releases
	// (every order held) on its way to the last checkpoint: 16 MiB.
	limit := [2]float64{3, 1.8}
	for i, what := range []string{"stopped with a savepoint", "resumed"} {
		m, p := added["memory"][i], added["pebble"][i]
		if m < 64 || p > m/limit[i] {
			t.Errorf("%s: the run added %.1f MiB to the live heap on Pebble, %.1f MiB in memory", what, p, m)
		}
	}
}

// wideJoinJob is a left outer join of an interval of 1,000 hours, which
// holds every order until the input ends, by the records' arrival.
func wideJoinJob() string {
	return strings.NewReplacer("{delay: 0s, interval: 0s}", "{delay: 30s, interval: 0s}", "between: [0s, 10m]", "between: [0s, 1000h]",
		"{field: ts}", "{field: ts, arrival_field: at}", "{field: paid_at}", "{field: paid_at, arrival_field: at}").Replace(joinJob(jobfile.JoinLeftOuter))
}

// liveHeap is the live heap at the last garbage collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// On the Pebble backend, both inputs' ids are in a database (the first
// input's in the join's, the second's in their own), so that a checkpoint
// keeps each head's ids as a Pebble checkpoint of them, not in its file.
func TestJoinJobIDsOnDisk(t *testing.T) {
	orders, payments, yaml := dedupJoinJob()
	yaml += "state: {backend: pebble, memory_budget: 64KiB, dir: state}\n"
	dir := t.TempDir()
	s := runJoinJob(t, dir, yaml, orders, payments, Options{stopAfter: 4})
	c, err := checkpoint.Load(checkpoint.OSFS, s.Savepoint)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string]int{}
	for _, f := range c.Manifest.Files {
		if head, _, ok := strings.Cut(f.Name, ".db."); ok && strings.HasSuffix(f.Name, ".sst") {
			tables[head]++
		}
	}
	if tables["head"] == 0 || tables["head:with"] == 0 {
		t.Errorf("the savepoint's Pebble tables by head: %v, want the ids of both inputs", tables)
	}
}
