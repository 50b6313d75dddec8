// Package tabletest runs weir jobs that write SQLite and PostgreSQL tables
// as processes: killed with SIGKILL at seeded points of a million-event
// replay, a table the job cannot write, a lost connection, and weir
// reconcile. It holds tests only; they run the weir command that TestMain
// builds.
package tabletest

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx"
	_ "modernc.org/sqlite"             // database/sql's "sqlite"

	"github.com/weirstream/weir/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

// tableRow is one row of a result table, as text, for comparisons.
type tableRow struct {
	Key, Start, End string
	Revision        int64
	Timing, Status  string
	Final           bool
	Version         int64
	Values          []float64 // NaN for NULL
}

func (r tableRow) String() string {
	return fmt.Sprintf("%s [%s, %s) rev %d %s final=%v %s v%d %v", r.Key, r.Start, r.End, r.Revision, r.Timing, r.Final, r.Status, r.Version, r.Values)
}

// expectedTable is the table the panes of results.jsonl make, by the rules
// a table follows: per key and window the highest revision, a retraction
// with no pane after it a tombstone that keeps its revision.
func expectedTable(t *testing.T, path string, values []string) []tableRow {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[[3]string]tableRow{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p map[string]any
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		r := tableRow{Key: p["key"].(string), Start: p["window_start"].(string), End: p["window_end"].(string),
			Revision: int64(p["revision"].(float64)), Timing: p["timing"].(string), Final: p["final"].(bool),
			Status: p["status"].(string), Version: int64(p["version"].(float64))}
		for _, v := range values {
			n, ok := p[v].(float64)
			if !ok {
				n = -1e300
			}
			r.Values = append(r.Values, n)
		}
		id := [3]string{r.Key, r.Start, r.End}
		if old, ok := rows[id]; ok && old.Revision > r.Revision {
			t.Fatalf("%s: revision %d after %d", id, r.Revision, old.Revision)
		}
		rows[id] = r
	}
	var out []tableRow
	for _, r := range rows {
		out = append(out, r)
	}
	sortRows(out)
	return out
}

func sortRows(rs []tableRow) {
	slices.SortFunc(rs, func(a, b tableRow) int {
		return strings.Compare(a.Key+"\x00"+a.Start+"\x00"+a.End, b.Key+"\x00"+b.Start+"\x00"+b.End)
	})
}

// readTable reads a result table through database/sql.
func readTable(t *testing.T, db *sql.DB, q string, values []string) []tableRow {
	t.Helper()
	rs, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []tableRow
	for rs.Next() {
		var r tableRow
		vals := make([]sql.NullFloat64, len(values))
		dest := []any{&r.Key, &r.Start, &r.End, &r.Revision, &r.Timing, &r.Final, &r.Status, &r.Version}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rs.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if !v.Valid {
				v.Float64 = -1e300
			}
			r.Values = append(r.Values, v.Float64)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	sortRows(out)
	return out
}

func readSQLite(t *testing.T, path, tbl, key string, values []string) []tableRow {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := fmt.Sprintf("SELECT %s, window_start, window_end, revision, timing, final, status, version, %s FROM %s", key, strings.Join(values, ", "), tbl)
	return readTable(t, db, q, values)
}

func readPostgres(t *testing.T, dsn, tbl, key string, values []string) []tableRow {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cols := make([]string, len(values))
	for i, v := range values {
		cols[i] = v + "::float8"
	}
	const utc = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
	q := fmt.Sprintf(`SELECT %s, to_char(window_start AT TIME ZONE 'UTC', %s), to_char(window_end AT TIME ZONE 'UTC', %[2]s),
		revision, timing, final, status, version, %s FROM %s`, key, utc, strings.Join(cols, ", "), tbl)
	return readTable(t, db, q, values)
}

// sameRows compares two tables row for row; values to 1e-9, relatively
// (SQLite keeps a sum of cents as a double).
func sameRows(t *testing.T, what string, got, want []tableRow) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the expected table is empty", what)
	}
	bad := 0
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w tableRow
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		same := g.Key == w.Key && g.Start == w.Start && g.End == w.End && g.Revision == w.Revision && g.Timing == w.Timing &&
			g.Final == w.Final && g.Status == w.Status && g.Version == w.Version && len(g.Values) == len(w.Values)
		for k := 0; same && k < len(g.Values); k++ {
			d := g.Values[k] - w.Values[k]
			same = d == 0 || d < 0 && -d <= 1e-9*max(-w.Values[k], w.Values[k]) || d > 0 && d <= 1e-9*max(-w.Values[k], w.Values[k])
		}
		if !same {
			if bad++; bad <= 5 {
				t.Errorf("%s: row %d is\n  %s\nwant\n  %s", what, i, g, w)
			}
		}
	}
	if bad > 0 || len(got) != len(want) {
		t.Fatalf("%s: %d rows differ; %d rows, want %d", what, bad, len(got), len(want))
	}
}

const sessionJob = `name: sessions
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
id: id
dedup_horizon: 10m
watermark: {delay: 1s, interval: 200ms}
window: {session: {gap: 3s}}
allowed_lateness: 2m
trigger: {late: 5s}
mode: retracting
version: 3
aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`

var sessionValues = []string{"orders", "spent", "biggest"}

// kill -9 at 10 seeded points of a 1M-event replay with allowed lateness,
// retractions and session merges, writing to SQLite and PostgreSQL: the
// final tables equal, row for row, the table the uninterrupted run's panes
// make.
func TestTablesKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1M-event replay: not in -short")
	}
	dsn := clitest.PGDatabase(t)
	dir := t.TempDir()
	clitest.WriteCrashInput(t, filepath.Join(dir, "input.jsonl"), 1_000_000)
	ref := filepath.Join(dir, "ref")
	os.Mkdir(ref, 0o755)
	refJob := strings.Replace(sessionJob, "input.jsonl", "../input.jsonl", 1) + "output: results.jsonl\n"
	os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(refJob), 0o644)
	if out, err := exec.Command(clitest.Bin, "run", "--quiet", filepath.Join(ref, "job.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := expectedTable(t, filepath.Join(ref, "results.jsonl"), sessionValues)
	tombstones := 0
	for _, r := range want {
		if r.Status == "retracted" {
			tombstones++
		}
	}
	if tombstones == 0 {
		t.Fatal("the stream merges no session away: the test would not test tombstones")
	}

	job := sessionJob + fmt.Sprintf(`output:
  - results.jsonl
  - sqlite: {path: results.db, table: sessions}
  - postgres: {dsn: "%s", table: sessions}
checkpoint: {dir: ckpt, interval: 150ms}
`, dsn)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	start := time.Now()
	out := clitest.KillRuns(t, dir, rand.New(rand.NewPCG(11, 11)), 10, 150, 1050)
	t.Logf("%d rows (%d tombstones); 10 crashes and the final run took %s; the final run said:\n%s",
		len(want), tombstones, time.Since(start).Round(time.Millisecond), out)
	clitest.SameAsReference(t, dir, ref)
	sameRows(t, "sqlite", readSQLite(t, filepath.Join(dir, "results.db"), "sessions", "card", sessionValues), want)
	sameRows(t, "postgres", readPostgres(t, dsn, "sessions", "card", sessionValues), want)
}

// The demo job leaves its alerts in an SQLite table that a newcomer can
// query at once; running it again changes nothing.
func TestDemoAlertsInSQLite(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"job.yaml", "orders.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../../examples/fraud", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	values := []string{"orders", "spent", "biggest"}
	var first []tableRow
	for run := 0; run < 2; run++ {
		code, stdout, stderr := clitest.Run(t, dir, "run", "job.yaml")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		os.WriteFile(filepath.Join(dir, "alerts.jsonl"), []byte(stdout), 0o644)
		want := expectedTable(t, filepath.Join(dir, "alerts.jsonl"), values)
		got := readSQLite(t, filepath.Join(dir, "alerts.db"), "alerts", "card", values)
		sameRows(t, "alerts", got, want)
		if len(got) != strings.Count(stdout, "\n") {
			t.Errorf("%d rows for %d alerts", len(got), strings.Count(stdout, "\n"))
		}
		if run == 0 {
			first = got
			if !strings.Contains(stderr, "created table alerts") {
				t.Errorf("no word of the table created: %s", stderr)
			}
		} else {
			sameRows(t, "second run", got, first)
		}
	}
	// The sqlite3 shell sees the same rows.
	if _, err := exec.LookPath("sqlite3"); err == nil {
		out, err := exec.Command("sqlite3", filepath.Join(dir, "alerts.db"),
			"SELECT card, orders, spent FROM alerts ORDER BY orders DESC, card LIMIT 1").CombinedOutput()
		if err != nil {
			t.Fatalf("sqlite3: %v: %s", err, out)
		}
		top := first[0]
		for _, r := range first {
			if r.Values[0] > top.Values[0] || r.Values[0] == top.Values[0] && r.Key < top.Key {
				top = r
			}
		}
		if want := fmt.Sprintf("%s|%d|%s", top.Key, int(top.Values[0]), strconv.FormatFloat(top.Values[1], 'f', -1, 64)); strings.TrimSpace(string(out)) != want {
			t.Errorf("sqlite3 says %q, want %q", out, want)
		}
	}
}

// pgExec runs statements as the cluster's superuser in the database of dsn.
func pgExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A table the job may read but not write stops a checkpointed job with a
// one-line error once the failed commits pass tolerable_failures, and the
// next run, once the table is writable, commits what the checkpoints kept:
// nothing lost, nothing doubled.
func TestTableNotWritable(t *testing.T) {
	dsn := clitest.PGDatabase(t)
	name := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	role := "reader_" + name
	pgExec(t, dsn,
		"CREATE TABLE counts (k text NOT NULL, n bigint, window_start timestamptz NOT NULL, window_end timestamptz NOT NULL, revision bigint NOT NULL, timing text NOT NULL, final boolean NOT NULL, status text NOT NULL, mode text NOT NULL, version bigint NOT NULL, updated_at timestamptz NOT NULL, reason text, PRIMARY KEY (k, window_start, window_end))",
		"CREATE TABLE weir_commits (sink text NOT NULL, checkpoint bigint NOT NULL, run text NOT NULL, committed_at timestamptz NOT NULL, PRIMARY KEY (sink, checkpoint))",
		"CREATE ROLE "+role+" LOGIN",
		"GRANT SELECT ON counts, weir_commits TO "+role)
	readerDSN := strings.Replace(dsn, "//weir@", "//"+role+"@", 1)
	dir := t.TempDir()
	var in strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&in, `{"k":"k%d","ts":%d,"at":%d}`+"\n", i%3, 1_700_000_000_000+int64(i)*1000, 1_700_000_000_000+int64(i)*1000)
	}
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in.String()), 0o644)
	job := func(dsn string) string {
		return fmt.Sprintf(`name: t
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: k
window: {tumbling: 1m}
aggregates: {n: count}
output: {postgres: {dsn: "%s", table: counts}}
checkpoint: {dir: ckpt, interval: 10ms, tolerable_failures: 1}
`, dsn)
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job(readerDSN)), 0o644)
	code, _, stderr := clitest.Run(t, dir, "run", "job.yaml")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 1 || !strings.Contains(last, "permission denied for table") || !strings.Contains(stderr, "2 in a row, 1 tolerated") {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if got := readPostgres(t, dsn, "counts", "k", []string{"n"}); len(got) != 0 {
		t.Fatalf("rows were written: %v", got)
	}
	// Writable again: the restart commits what the checkpoints kept, and the
	// table is the uninterrupted run's.
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job(dsn)), 0o644)
	if code, _, stderr := clitest.Run(t, dir, "run", "job.yaml"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := readPostgres(t, dsn, "counts", "k", []string{"n"})
	var total float64
	for _, r := range got {
		total += r.Values[0]
		if r.Status != "closed" || r.Revision != 1 {
			t.Errorf("row %s", r)
		}
	}
	if len(got) != 18 || total != 300 {
		t.Fatalf("%d rows, %v events counted, want 18 (3 keys, 6 minutes) and 300: %v", len(got), total, got)
	}
}

// weir reconcile from the command line: seed 004's timeline, corrected once,
// then already right; without a ledger, exit 2.
// reconcileInput is the input of the reconcile commands' jobs: D comes
// after X moved the watermark past its minute and the minute's allowed
// lateness, and goes to the late output, which the ledger holds.
const reconcileInput = `{"id":"A","shop":"s1","ts":"2026-09-07T12:00:10Z","at":"2026-09-07T12:00:10Z"}
{"id":"B","shop":"s1","ts":"2026-09-07T12:00:20Z","at":"2026-09-07T12:00:20Z"}
{"id":"C","shop":"s1","ts":"2026-09-07T12:00:40Z","at":"2026-09-07T12:01:30Z"}
{"id":"X","shop":"s2","ts":"2026-09-07T12:02:30Z","at":"2026-09-07T12:02:30Z"}
{"id":"D","shop":"s1","ts":"2026-09-07T12:00:50Z","at":"2026-09-07T12:02:40Z"}
`

func TestReconcileCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: orders
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: shop
id: id
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
allowed_lateness: 1m
aggregates: {orders: count}
late_output: late.jsonl
output: {sqlite: {path: results.db, table: orders}}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(reconcileInput), 0o644)
	if code, _, stderr := clitest.Run(t, dir, "run", "--quiet", "job.yaml"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := clitest.Run(t, dir, "reconcile", "--ledger", "input.jsonl,late.jsonl", "--reason", "nightly", "--report", "--acceptance", "acceptance.json", "job.yaml")
	want := `ledger: 6 lines in 2 files: 5 events from 2026-09-07T12:00:10.000Z to 2026-09-07T12:02:30.000Z, 1 duplicates dropped, 0 lines not events
corrected  s1 [2026-09-07T12:00:00.000Z, 2026-09-07T12:01:00.000Z): revision 1 -> 2: orders 3 -> 4
window_start               window_end                 corrected already_right not_correctable raced
2026-09-07T12:00:00.000Z   2026-09-07T12:01:00.000Z           1             0               0     0
2026-09-07T12:02:00.000Z   2026-09-07T12:03:00.000Z           0             1               0     0
table orders: 1 windows corrected, 1 already right, 0 not correctable (the ledger lacks their events), 0 raced
`
	if code != 0 || stdout != want {
		t.Fatalf("exit %d\n%s\nwant\n%s\nstderr: %s", code, stdout, want, stderr)
	}
	rec, _ := os.ReadFile(filepath.Join(dir, "acceptance.json"))
	if !strings.Contains(string(rec), `"corrections": {
    "corrected": 1,
    "already_right": 1,
    "not_correctable": 0,
    "raced": 0,`) || !strings.Contains(string(rec), `"events": 5`) {
		t.Errorf("acceptance record:\n%s", rec)
	}
	got := readSQLite(t, filepath.Join(dir, "results.db"), "orders", "shop", []string{"orders"})
	if len(got) != 2 || got[0].Status != "reconciled" || got[0].Revision != 2 || got[0].Values[0] != 4 || got[1].Status != "closed" {
		t.Fatalf("rows %v", got)
	}
	code, stdout, _ = clitest.Run(t, dir, "reconcile", "--ledger", "input.jsonl", "--ledger", "late.jsonl", "job.yaml")
	if code != 0 || !strings.HasSuffix(stdout, "table orders: 0 windows corrected, 2 already right, 0 not correctable (the ledger lacks their events), 0 raced\n") {
		t.Fatalf("again: exit %d: %s", code, stdout)
	}
	if code, _, stderr := clitest.Run(t, dir, "reconcile", "job.yaml"); code != 2 || !strings.Contains(stderr, "--ledger") {
		t.Fatalf("without a ledger: exit %d: %s", code, stderr)
	}
}

// weir reconcile corrects one aggregation of a job of several: the one
// that writes to a table, or the one --aggregation names, as a job of it
// alone would be corrected.
func TestReconcileOneOfSeveralAggregations(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: orders
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
id: id
watermark: {delay: 0s, interval: 0s}
aggregations:
  all_shops:
    window: {tumbling: 1h}
    aggregates: {orders: count}
    output: all.jsonl
  per_shop:
    key: shop
    window: {tumbling: 1m}
    allowed_lateness: 1m
    aggregates: {orders: count}
    late_output: late.jsonl
    output: {sqlite: {path: results.db, table: orders}}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(reconcileInput), 0o644)
	if code, _, stderr := clitest.Run(t, dir, "run", "--quiet", "job.yaml"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	const ledger = "input.jsonl,late.jsonl"
	if code, _, stderr := clitest.Run(t, dir, "reconcile", "--ledger", ledger, "--aggregation", "per_day", "job.yaml"); code != 2 ||
		stderr != "weir: --aggregation: job.yaml has no aggregation \"per_day\" (it has all_shops, per_shop)\n" {
		t.Fatalf("an aggregation it lacks: exit %d: %q", code, stderr)
	}
	if code, _, stderr := clitest.Run(t, dir, "reconcile", "--ledger", ledger, "--aggregation", "all_shops", "job.yaml"); code != 2 || !strings.Contains(stderr, "writes to no table") {
		t.Fatalf("an aggregation without a table: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := clitest.Run(t, dir, "reconcile", "--ledger", ledger, "job.yaml")
	if code != 0 || !strings.HasSuffix(stdout, "table orders: 1 windows corrected, 1 already right, 0 not correctable (the ledger lacks their events), 0 raced\n") {
		t.Fatalf("exit %d: %s\nstderr: %s", code, stdout, stderr)
	}
	got := readSQLite(t, filepath.Join(dir, "results.db"), "orders", "shop", []string{"orders"})
	if len(got) != 2 || got[0].Status != "reconciled" || got[0].Revision != 2 || got[0].Values[0] != 4 {
		t.Fatalf("rows %v", got)
	}
}

// The database drops the job's connections while it commits (the server
// terminates them, as at a restart or a failover): the commits are retried
// with backoff, said once each, and the table ends as the uninterrupted
// run's panes make it, nothing lost and nothing doubled.
func TestTableConnectionLost(t *testing.T) {
	dsn := clitest.PGDatabase(t)
	dir := t.TempDir()
	clitest.WriteCrashInput(t, filepath.Join(dir, "input.jsonl"), 200_000)
	job := strings.Replace(clitest.CrashJob, "output: results.jsonl\n", fmt.Sprintf("output: [results.jsonl, {postgres: {dsn: %q, table: alerts}}]\n", dsn), 1) +
		"checkpoint: {dir: ckpt, interval: 20ms, tolerable_failures: 100}\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cmd := exec.Command(clitest.Bin, "run", "job.yaml")
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Once the first commit is in, terminate the job's connections, again
	// and again, while it runs.
	killed := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the job failed: %v\n%s", err, out.String())
			}
			running = false
			continue
		case <-time.After(30 * time.Millisecond):
		}
		var commits int
		if db.QueryRow("SELECT count(*) FROM weir_commits").Scan(&commits); commits == 0 || killed >= 8 {
			continue
		}
		var n int
		if err := db.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			killed++
		}
	}
	if killed == 0 {
		t.Fatalf("no connection was terminated: the job ended first\n%s", out.String())
	}
	if !strings.Contains(out.String(), "retrying in") {
		t.Errorf("no word of the retries:\n%s", out.String())
	}
	t.Logf("%d times the connections were terminated; the job said:\n%s", killed, out.String())
	want := expectedTable(t, filepath.Join(dir, "results.jsonl"), []string{"orders", "spent", "biggest"})
	sameRows(t, "postgres", readPostgres(t, dsn, "alerts", "card", []string{"orders", "spent", "biggest"}), want)
}
