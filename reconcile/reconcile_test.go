package reconcile_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/internal/pgtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/reconcile"
)

var pg struct {
	dsn  string
	stop func()
	dir  string
	err  error
	n    int
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.stop != nil {
		pg.stop()
	}
	if pg.dir != "" {
		os.RemoveAll(pg.dir)
	}
	os.Exit(code)
}

// postgresDSN makes a database of its own in a throwaway cluster; without
// PostgreSQL the test fails.
func postgresDSN(t *testing.T) string {
	if pg.dsn == "" && pg.err == nil {
		if pg.dir, pg.err = os.MkdirTemp("", "weir-reconcile-pg-"); pg.err == nil {
			pg.dsn, pg.stop, pg.err = pgtest.Start(pg.dir)
		}
	}
	if pg.err != nil {
		t.Fatalf("this test needs PostgreSQL (apt-get install postgresql): %v", pg.err)
	}
	pg.n++
	db, err := sql.Open("pgx", pg.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("r%d", pg.n)
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(pg.dsn, "/postgres?", "/"+name+"?", 1)
}

// Seed 004's timeline: A and B on time (revision 1: 2), C late within the
// allowed lateness (revision 2: 3), D after the window's state is gone (to
// the late output). A reconciliation from the ledger (input and late output)
// publishes 4 as a reconciled revision; a pane of the stream delivered
// again does not overwrite it.
const timelineJob = `name: orders
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: shop
id: id
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
allowed_lateness: 1m
aggregates: {orders: count, amount: sum(amount)}
late_output: late.jsonl
`

const timelineInput = `{"id":"A","shop":"s1","amount":10.25,"ts":"2026-09-07T12:00:10Z","at":"2026-09-07T12:00:10Z"}
{"id":"B","shop":"s1","amount":5,"ts":"2026-09-07T12:00:20Z","at":"2026-09-07T12:00:20Z"}
{"id":"X","shop":"s2","amount":1,"ts":"2026-09-07T12:01:05Z","at":"2026-09-07T12:01:05Z"}
{"id":"C","shop":"s1","amount":2.5,"ts":"2026-09-07T12:00:40Z","at":"2026-09-07T12:01:30Z"}
{"id":"Y","shop":"s2","amount":1,"ts":"2026-09-07T12:02:30Z","at":"2026-09-07T12:02:30Z"}
{"id":"D","shop":"s1","amount":4,"ts":"2026-09-07T12:00:50Z","at":"2026-09-07T12:02:40Z"}
{"id":"B","shop":"s1","amount":5,"ts":"2026-09-07T12:00:20Z","at":"2026-09-07T12:02:41Z"}
`

type dbCase struct {
	name   string
	output func(dir string) string
	query  func(t *testing.T, dir string) *sql.DB
}

func cases(t *testing.T) []dbCase {
	return []dbCase{
		{"sqlite", func(dir string) string { return "{sqlite: {path: results.db, table: orders}}" },
			func(t *testing.T, dir string) *sql.DB { return open(t, "sqlite", filepath.Join(dir, "results.db")) }},
		{"postgres", func(dir string) string {
			dsn := postgresDSN(t)
			os.WriteFile(filepath.Join(dir, "dsn"), []byte(dsn), 0o644)
			return fmt.Sprintf("{postgres: {dsn: %q, table: orders}}", dsn)
		}, func(t *testing.T, dir string) *sql.DB {
			dsn, _ := os.ReadFile(filepath.Join(dir, "dsn"))
			return open(t, "pgx", string(dsn))
		}},
	}
}

func open(t *testing.T, driver, dsn string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func rows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rs, err := db.Query(`SELECT shop, revision, status, orders, CAST(amount AS TEXT), CAST(COALESCE(reason, '-') AS TEXT) FROM orders ORDER BY shop, window_start`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var shop, status, amount, reason string
		var rev, orders int64
		if err := rs.Scan(&shop, &rev, &status, &orders, &amount, &reason); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s r%d %s orders=%d amount=%s reason=%s", shop, rev, status, orders, amount, reason))
	}
	return out
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func setup(t *testing.T, c dbCase) (string, *jobfile.Job) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(timelineInput), 0o644)
	text := timelineJob + "output: [results.jsonl, " + c.output(dir) + "]\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(text), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, j
}

func runJob(t *testing.T, j *jobfile.Job) {
	t.Helper()
	sum, err := job.Run(context.Background(), j, job.Options{Log: io{}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.TooLate != 1 || sum.Duplicates != 1 || sum.Accepted != 5 {
		t.Fatalf("summary %+v", sum)
	}
}

type io struct{}

func (io) Write(b []byte) (int, error) { return len(b), nil }

func at(s string) mtime.Time {
	t, err := mtime.Parse([]byte(s))
	if err != nil {
		panic(err)
	}
	return t
}

func options(dir string) reconcile.Options {
	return reconcile.Options{
		Ledger: []string{filepath.Join(dir, "input.jsonl"), filepath.Join(dir, "late.jsonl")},
		From:   mtime.MinTime, To: mtime.MaxTime, Reason: "nightly ledger", Output: -1,
		Now: func() mtime.Time { return at("2026-09-08T02:00:00Z") },
	}
}

func TestSeed004Timeline(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir, j := setup(t, c)
			runJob(t, j)
			db := c.query(t, dir)
			same(t, "the stream's rows", rows(t, db), []string{
				"s1 r3 closed orders=3 amount=17.75 reason=-",
				"s2 r2 closed orders=1 amount=1 reason=-",
				"s2 r1 closed orders=1 amount=1 reason=-",
			})
			rep, err := reconcile.Run(context.Background(), j, options(dir))
			if err != nil {
				t.Fatal(err)
			}
			if rep.LedgerLines != 8 || rep.LedgerEvents != 6 || rep.LedgerDuplicates != 2 || rep.Corrected != 1 || rep.AlreadyRight != 2 || rep.NotCorrectable != 0 || rep.Raced != 0 {
				t.Fatalf("report %+v", rep)
			}
			w := rep.Windows[0]
			if w.Key != "s1" || w.Base != 3 || w.Revision != 4 || w.Changes != "orders 3 -> 4, amount 17.75 -> 21.75" {
				t.Errorf("window %+v", w)
			}
			want := []string{
				"s1 r4 reconciled orders=4 amount=21.75 reason=nightly ledger (orders 3 -> 4, amount 17.75 -> 21.75)",
				"s2 r2 closed orders=1 amount=1 reason=-",
				"s2 r1 closed orders=1 amount=1 reason=-",
			}
			same(t, "after the reconciliation", rows(t, db), want)
			// The stream's panes delivered again (a replay of the job) do
			// not overwrite the correction.
			runJob(t, j)
			same(t, "after the stream again", rows(t, db), want)
			// Reconciled again: already right.
			rep, err = reconcile.Run(context.Background(), j, options(dir))
			if err != nil || rep.Corrected != 0 || rep.AlreadyRight != 3 {
				t.Fatalf("again: %+v, %v", rep, err)
			}
		})
	}
}

// A correction whose base went stale between reading and writing (a pane of
// the stream came in between) is refused: the window is reported raced and
// the stream's row stays.
func TestStaleBaseRefused(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir, j := setup(t, c)
			runJob(t, j)
			p, err := reconcile.Prepare(context.Background(), j, options(dir))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Report().Corrected != 1 {
				t.Fatalf("plan %+v", p.Report())
			}
			// The stream's revision 4 of s1 arrives now.
			k := job.TableSink(j, &j.Outputs[1], nil)
			if err := k.Open(context.Background(), connector.Resume{}); err != nil {
				t.Fatal(err)
			}
			r := table.Row{Key: []any{"s1"}, WindowStart: at("2026-09-07T12:00:00Z"), WindowEnd: at("2026-09-07T12:01:00Z"),
				Revision: 4, Timing: "LATE", Values: []any{int64(5), table.Decimal{Unscaled: 2475, Scale: 2}}, EmittedAt: at("2026-09-07T12:01:59Z")}
			if err := k.Write(context.Background(), []table.Row{r}); err != nil {
				t.Fatal(err)
			}
			if err := k.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			k.Close()
			rep, err := p.Apply(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Raced != 1 || rep.Corrected != 0 || rep.Windows[0].Outcome != reconcile.Raced {
				t.Fatalf("report %+v", rep)
			}
			same(t, "rows", rows(t, c.query(t, dir)), []string{
				"s1 r4 provisional orders=5 amount=24.75 reason=-",
				"s2 r2 closed orders=1 amount=1 reason=-",
				"s2 r1 closed orders=1 amount=1 reason=-",
			})
		})
	}
}

// A window the table holds but the ledger has no event of is not
// correctable: it is reported, and left as it is. Windows outside the range
// asked for are not looked at.
func TestIncompleteLedgerAndRange(t *testing.T) {
	c := cases(t)[0]
	dir, j := setup(t, c)
	runJob(t, j)
	partial := filepath.Join(dir, "partial.jsonl")
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(timelineInput), "\n") {
		if !strings.Contains(l, `"s2"`) || strings.Contains(l, `"Y"`) {
			keep = append(keep, l)
		}
	}
	os.WriteFile(partial, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
	o := options(dir)
	o.Ledger = []string{partial, filepath.Join(dir, "late.jsonl")}
	o.From, o.To = at("2026-09-07T12:01:00Z"), at("2026-09-07T12:03:00Z")
	rep, err := reconcile.Run(context.Background(), j, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corrected != 0 || rep.AlreadyRight != 1 || rep.NotCorrectable != 1 || len(rep.Ranges) != 2 {
		t.Fatalf("report %+v", rep)
	}
	if w := rep.Windows[0]; w.Key != "s2" || w.WindowStart != "2026-09-07T12:01:00.000Z" || w.Outcome != reconcile.NotCorrectable {
		t.Errorf("window %+v", w)
	}
	if g := rep.Ranges[0]; g.WindowStart != "2026-09-07T12:01:00.000Z" || g.NotCorrectable != 1 || g.Corrected+g.AlreadyRight+g.Raced != 0 {
		t.Errorf("range %+v", g)
	}
}

// A ledger that holds only the late events (an easy mistake) would lower a
// count the stream published: the window is not corrected but reported as
// ledger_incomplete, and a later pane of the stream may still replace the
// row. With AllowLower the correction is published.
func TestPartialLedgerNeverLowersACount(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir, j := setup(t, c)
			runJob(t, j)
			db := c.query(t, dir)
			before := rows(t, db)
			o := options(dir)
			o.Ledger = []string{filepath.Join(dir, "late.jsonl")}
			rep, err := reconcile.Run(context.Background(), j, o)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Incomplete != 1 || rep.Corrected != 0 {
				t.Fatalf("incomplete %d, corrected %d: %+v", rep.Incomplete, rep.Corrected, rep.Windows)
			}
			w := rep.Windows[0]
			if w.Outcome != reconcile.LedgerIncomplete || !strings.Contains(w.Note, "the ledger would lower orders 3 -> 1") {
				t.Errorf("window: %+v", w)
			}
			same(t, "the table after the refused correction", rows(t, db), before)
			o.AllowLower = true
			if rep, err = reconcile.Run(context.Background(), j, o); err != nil || rep.Corrected != 1 {
				t.Fatalf("with AllowLower: %v, %+v", err, rep)
			}
		})
	}
}

// Ledger lines without the time field (the job's input with its watermark
// lines, weir's quarantine file) are counted as unreadable, with their
// reason; records of the quarantine are read as the lines they hold.
func TestLedgerLinesWithoutTime(t *testing.T) {
	c := cases(t)[0]
	dir, j := setup(t, c)
	runJob(t, j)
	quarantine := filepath.Join(dir, "quarantine.jsonl")
	os.WriteFile(quarantine, []byte(`{"reason":"not_json","line":9,"raw":"not json"}
{"reason":"no_event_time","line":10,"raw":"{\"id\":\"Z\",\"shop\":\"s1\"}"}
{"wm":"2026-09-07T12:05:00Z"}
`), 0o644)
	o := options(dir)
	o.Ledger = append(o.Ledger, quarantine)
	rep, err := reconcile.Run(context.Background(), j, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.LedgerUnreadable != 3 || rep.Unreadable["not_json"] != 1 || rep.Unreadable["no_event_time"] != 2 {
		t.Errorf("unreadable %d: %v", rep.LedgerUnreadable, rep.Unreadable)
	}
}

// A reconciliation writes nothing the job owns: not its acceptance record,
// not its dead letters (its recount writes only a temporary file of its
// own), whether it is a dry run or not.
func TestReconcileWritesNothingOfTheJob(t *testing.T) {
	c := cases(t)[0]
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(timelineInput), 0o644)
	text := timelineJob + "output: [results.jsonl, " + c.output(dir) + "]\nacceptance: acceptance.json\ndead_letter: dead.jsonl\nsummary: summary.json\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(text), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, j)
	owned := []string{"acceptance.json", "acceptance.md", "dead.jsonl", "summary.json", "results.jsonl", "late.jsonl"}
	before := map[string]string{}
	for _, f := range owned {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		before[f] = string(b)
	}
	for _, dry := range []bool{true, false} {
		// A dry run is a plan prepared and not applied.
		p, err := reconcile.Prepare(context.Background(), j, options(dir))
		if err != nil {
			t.Fatal(err)
		}
		if !dry {
			if _, err := p.Apply(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
		for _, f := range owned {
			if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != before[f] {
				t.Errorf("dry run %v: the reconciliation changed the job's %s:\n%s", dry, f, b)
			}
		}
	}
}

// The ledger is validated as weir run validates its input: an event the
// job quarantined as future_event_time (stamped 2100) is set aside by the
// recount for the same reason, counted, and makes no window.
func TestLedgerValidatedAsTheJob(t *testing.T) {
	c := cases(t)[0]
	dir, j := setup(t, c)
	runJob(t, j)
	ledger := filepath.Join(dir, "extra.jsonl")
	os.WriteFile(ledger, []byte(`{"id":"F","shop":"s1","amount":9,"ts":"2100-01-01T00:00:00Z","at":"2026-09-07T12:03:00Z"}
{"id":"G","shop":"s1","amount":9,"ts":"0001-01-01T00:00:00Z","at":"2026-09-07T12:03:00Z"}
`), 0o644)
	o := options(dir)
	o.Ledger = append(o.Ledger, ledger)
	p, err := reconcile.Prepare(context.Background(), j, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rep := p.Report()
	if rep.Unreadable["future_event_time"] != 1 || rep.Unreadable["implausible_event_time"] != 1 || rep.LedgerUnreadable != 2 {
		t.Errorf("set aside %d: %v", rep.LedgerUnreadable, rep.Unreadable)
	}
	for _, w := range rep.Windows {
		if strings.HasPrefix(w.Start.String(), "2100") || strings.HasPrefix(w.Start.String(), "0001") {
			t.Errorf("a window of an event the job set aside: %+v", w)
		}
	}
}

// A job of a composite key reconciles as one of a single key: the table's
// key columns together name a window's row, and the correction writes
// each.
func TestCompositeKeyReconciled(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(strings.ReplaceAll(timelineInput, `"shop":`, `"region":"eu","shop":`)), 0o644)
			text := strings.Replace(timelineJob, "key: shop", "key: [shop, region]", 1) + "output: [results.jsonl, " + c.output(dir) + "]\n"
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(text), 0o644)
			j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			runJob(t, j)
			rep, err := reconcile.Run(context.Background(), j, options(dir))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Corrected != 1 || rep.AlreadyRight != 2 {
				t.Fatalf("report %+v", rep)
			}
			if w := rep.Windows[0]; w.Key != `["s1","eu"]` || w.Revision != 4 {
				t.Errorf("window %+v", w)
			}
			rs, err := c.query(t, dir).Query(`SELECT shop, region, revision, orders FROM orders ORDER BY shop, window_start`)
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			var got []string
			for rs.Next() {
				var shop, region string
				var rev, orders int64
				rs.Scan(&shop, &region, &rev, &orders)
				got = append(got, fmt.Sprintf("%s %s r%d orders=%d", shop, region, rev, orders))
			}
			same(t, "after the reconciliation", got, []string{"s1 eu r4 orders=4", "s2 eu r2 orders=1", "s2 eu r1 orders=1"})
		})
	}
}
