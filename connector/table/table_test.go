package table

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// The window W of the acceptance tests: [12:00, 12:01) on 2026-09-07.
var (
	w0 = mtime.FromTime(time.Date(2026, 9, 7, 12, 0, 0, 0, time.UTC))
	w1 = w0 + 60_000
)

var alerts = Schema{Table: "alerts", Keys: []Column{{"line", Text}}, Values: []Column{{"orders", Integer}}}

// pane is revision rev of window W for key, counting orders; it is emitted
// rev seconds after the window's end.
func pane(key string, rev int64, timing string, orders int64) Row {
	return Row{Key: []any{key}, WindowStart: w0, WindowEnd: w1, Revision: rev, Timing: timing,
		Values: []any{orders}, EmittedAt: w1 + mtime.Time(rev)*1000}
}

func retraction(r Row) Row {
	r.Retract = true
	return r
}

const alertsQuery = `SELECT line, window_start, window_end, revision, timing, CASE WHEN final THEN 'true' ELSE 'false' END, status, version, orders, updated_at
	FROM alerts ORDER BY line, window_start`

// row is how alertsQuery shows a row of window W.
func row(key string, rev int64, timing, status string, orders any) string {
	return fmt.Sprintf("%s|2026-09-07T12:00:00.000Z|2026-09-07T12:01:00.000Z|%d|%s|false|%s|1|%v|2026-09-07T12:01:%02d.000Z", key, rev, timing, status, orders, rev)
}

func expect(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func checkpointed() Options { return Options{Checkpointed: true, SinkName: "alerts-sink"} }

// Highest revision wins: r1 then r2 leaves r2; r2 again, a delayed r1, and
// the same panes delivered twice change nothing (not even updated_at).
func TestRevisions(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		commit(t, k, 1, pane("line-1", 1, "ON_TIME", 2))
		expect(t, "after r1", d.rows(t, alertsQuery), []string{row("line-1", 1, "ON_TIME", "provisional", 2)})
		commit(t, k, 2, pane("line-1", 2, "LATE", 3))
		want := []string{row("line-1", 2, "LATE", "provisional", 3)}
		expect(t, "after r2", d.rows(t, alertsQuery), want)

		again := pane("line-1", 2, "LATE", 3)
		again.EmittedAt += 30_000 // a retry, later
		commit(t, k, 3, again)
		expect(t, "after r2 redelivered", d.rows(t, alertsQuery), want)

		commit(t, k, 4, pane("line-1", 1, "ON_TIME", 2))
		expect(t, "after a delayed r1", d.rows(t, alertsQuery), want)

		// The same pane rows twice, in one commit and in the next.
		c := []Row{pane("line-1", 1, "ON_TIME", 2), pane("line-1", 2, "LATE", 3)}
		commit(t, k, 5, append(c, c...)...)
		commit(t, k, 6, c...)
		expect(t, "after the panes delivered twice", d.rows(t, alertsQuery), want)

		// A stale lower revision in a later commit, among other rows.
		commit(t, k, 7, pane("line-2", 3, "LATE", 9), pane("line-1", 1, "ON_TIME", 1))
		commit(t, k, 8, pane("line-2", 2, "LATE", 5), pane("line-2", 1, "ON_TIME", 4))
		expect(t, "after stale revisions", d.rows(t, alertsQuery), append(want, row("line-2", 3, "LATE", "provisional", 9)))
		expect(t, "markers", d.rows(t, "SELECT sink, checkpoint FROM weir_commits ORDER BY checkpoint"),
			[]string{"alerts-sink|1", "alerts-sink|2", "alerts-sink|3", "alerts-sink|4", "alerts-sink|5", "alerts-sink|6", "alerts-sink|7", "alerts-sink|8"})
	})
}

// A new metric-definition version replaces the row whatever its revision;
// within it, revisions count again.
func TestVersion(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		commit(t, k, 1, pane("line-1", 3, "LATE", 7))
		v2 := pane("line-1", 1, "ON_TIME", 5)
		v2.Version = 2
		commit(t, k, 2, v2)
		old := pane("line-1", 4, "LATE", 8) // version 1, stale now
		commit(t, k, 3, old)
		expect(t, "rows", d.rows(t, "SELECT line, revision, version, orders FROM alerts"), []string{"line-1|1|2|5"})
	})
}

// A reconciled row (a correction published from a ledger) is never replaced
// by a pane of the stream, whatever its revision; a new version of the
// definitions replaces it, and clears its reason.
func TestReconciledRowsWin(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		commit(t, k, 1, pane("line-1", 2, "LATE", 3))
		d.exec(t, "UPDATE alerts SET orders = 4, revision = 3, status = 'reconciled', reason = 'ledger: orders 3 -> 4'")
		commit(t, k, 2, pane("line-1", 3, "LATE", 3), pane("line-1", 9, "LATE", 3))
		commit(t, k, 3, retraction(pane("line-1", 3, "LATE", 3)))
		q := "SELECT line, revision, status, version, orders, reason FROM alerts"
		expect(t, "after stream panes", d.rows(t, q), []string{"line-1|3|reconciled|1|4|ledger: orders 3 -> 4"})
		v2 := pane("line-1", 1, "ON_TIME", 5)
		v2.Version = 2
		commit(t, k, 4, v2)
		expect(t, "after version 2", d.rows(t, q), []string{"line-1|1|provisional|2|5|NULL"})
	})
}

// An interruption after the database committed, with the acknowledgement
// lost: a restarted sink commits the same checkpoint again, and nothing
// changes; the marker, not only the revision guard, makes it a no-op.
func TestCommitAgainAfterRestart(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		commit(t, k, 6, pane("line-1", 1, "ON_TIME", 2))
		pre := commit(t, k, 7, pane("line-1", 2, "LATE", 3), pane("line-2", 1, "ON_TIME", 1))
		k.Close() // the process dies before it learns that commit 7 took effect
		want := []string{row("line-1", 2, "LATE", "provisional", 3), row("line-2", 1, "ON_TIME", "provisional", 1)}
		expect(t, "rows after commit 7", d.rows(t, alertsQuery), want)

		// Someone lowers a revision by hand: a re-run that wrote its rows
		// again would overwrite it; a re-run that finds its marker does not.
		d.exec(t, `UPDATE alerts SET revision = 0 WHERE line = 'line-2'`)

		restarted := d.newSink(alerts, checkpointed())
		ctx := context.Background()
		if err := restarted.Open(ctx, resumeWith(pre)); err != nil {
			t.Fatal(err)
		}
		defer restarted.Close()
		if err := restarted.Commit(ctx, 7, pre); err != nil {
			t.Fatalf("commit 7 again: %v", err)
		}
		expect(t, "rows after commit 7 again", d.rows(t, "SELECT line, revision, orders FROM alerts ORDER BY line"),
			[]string{"line-1|2|3", "line-2|0|1"})
		expect(t, "markers of checkpoint 7", d.rows(t, "SELECT sink, checkpoint FROM weir_commits WHERE checkpoint = 7"),
			[]string{"alerts-sink|7"})
		if k.run == restarted.run {
			t.Fatal("two sinks have one run identity")
		}
		markerRun := d.rows(t, "SELECT run FROM weir_commits WHERE checkpoint = 7")
		expect(t, "run of marker 7", markerRun, []string{k.run})

		// A job started afresh (its checkpoint directory moved away)
		// numbers its checkpoints from 1 again: its checkpoint 7 is not
		// the old one, and is written.
		commit(t, restarted, 7, pane("line-3", 1, "ON_TIME", 4))
		expect(t, "rows after the new run's checkpoint 7", d.rows(t, "SELECT line, revision, orders FROM alerts ORDER BY line"),
			[]string{"line-1|2|3", "line-2|0|1", "line-3|1|4"})
		expect(t, "marker 7 after the new run", d.rows(t, "SELECT run FROM weir_commits WHERE checkpoint = 7"), []string{restarted.run})
	})
}

var deltas = Schema{Table: "deltas", Keys: []Column{{"line", Text}}, Values: []Column{{"orders", Integer}}, Mode: Discarding, Job: "orders-per-line"}

// Discarding mode: deltas +2 then +1; the +1 committed twice (by two
// checkpoints, as after a restore) is one delta: the sum is 3, not 4.
func TestDiscardingDeltas(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, deltas, checkpointed())
		commit(t, k, 1, pane("line-1", 1, "ON_TIME", 2))
		plus1 := pane("line-1", 2, "LATE", 1)
		commit(t, k, 2, plus1)
		restored := d.sink(t, deltas, checkpointed()) // another run: its markers do not match
		commit(t, restored, 2, plus1)
		commit(t, restored, 3, plus1, plus1)
		expect(t, "sum", d.rows(t, "SELECT line, sum(orders), count(*) FROM deltas GROUP BY line"), []string{"line-1|3|2"})
		ids := d.rows(t, "SELECT delta_id, revision FROM deltas ORDER BY revision")
		if len(ids) != 2 || !regexp.MustCompile(`^[0-9a-f]{64}\|1$`).MatchString(ids[0]) || !regexp.MustCompile(`^[0-9a-f]{64}\|2$`).MatchString(ids[1]) {
			t.Errorf("delta ids: %q", ids)
		}
		// Another job appending to the same table has deltas of its own.
		other := deltas
		other.Job = "another-job"
		commit(t, d.sink(t, other, Options{}), 0, plus1)
		expect(t, "count", d.rows(t, "SELECT count(*) FROM deltas"), []string{"3"})
	})
}

var sessions = Schema{Table: "alerts", Keys: []Column{{"line", Text}}, Values: []Column{{"orders", Integer}}, Mode: Retracting}

// Retracting mode: a session window retracted with nothing after it becomes
// a tombstone keeping its revision, which a delayed pane of that revision
// does not bring back, and the next revision replaces.
func TestTombstone(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, sessions, checkpointed())
		commit(t, k, 1, pane("line-1", 1, "ON_TIME", 2))
		commit(t, k, 2, retraction(pane("line-1", 1, "ON_TIME", 2)))
		tomb := []string{row("line-1", 1, "ON_TIME", "retracted", 2)}
		expect(t, "after the retraction", d.rows(t, alertsQuery), tomb)
		commit(t, k, 3, pane("line-1", 1, "ON_TIME", 2))
		expect(t, "after a delayed revision 1", d.rows(t, alertsQuery), tomb)
		commit(t, k, 4, retraction(pane("line-1", 1, "ON_TIME", 2)))
		expect(t, "after the retraction again", d.rows(t, alertsQuery), tomb)
		commit(t, k, 5, pane("line-1", 2, "LATE", 5))
		expect(t, "after revision 2", d.rows(t, alertsQuery), []string{row("line-1", 2, "LATE", "provisional", 5)})

		// A pane and its retraction in one commit: a tombstone at once.
		commit(t, k, 6, pane("line-2", 1, "EARLY", 1), retraction(pane("line-2", 1, "EARLY", 1)))
		expect(t, "line-2", d.rows(t, alertsQuery)[1:], []string{row("line-2", 1, "EARLY", "retracted", 1)})
		if n := d.rows(t, "SELECT count(*) FROM alerts"); n[0] != "2" {
			t.Errorf("%s rows, want 2: tombstones are rows", n[0])
		}
	})
}

// A retraction followed by the next revision in one commit is one upsert
// that ends at the new revision (no tombstone in between, whichever order
// they come in).
func TestRetractionThenNextRevision(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, sessions, checkpointed())
		commit(t, k, 1, pane("line-1", 1, "ON_TIME", 2), pane("line-2", 1, "ON_TIME", 7))
		commit(t, k, 2, retraction(pane("line-1", 1, "ON_TIME", 2)), pane("line-1", 2, "LATE", 3),
			pane("line-2", 2, "LATE", 8), retraction(pane("line-2", 1, "ON_TIME", 7)))
		expect(t, "rows", d.rows(t, alertsQuery), []string{row("line-1", 2, "LATE", "provisional", 3), row("line-2", 2, "LATE", "provisional", 8)})
	})
}

// coalesce keeps one row per key, the winner, ordered by key.
func TestCoalesce(t *testing.T) {
	k := SQLite("unused", sessions, Options{})
	ctx := context.Background()
	in := []Row{
		pane("b", 1, "EARLY", 1), retraction(pane("b", 1, "EARLY", 1)), pane("b", 2, "ON_TIME", 2),
		pane("a", 3, "LATE", 3), pane("a", 1, "EARLY", 1), retraction(pane("a", 3, "LATE", 3)), pane("a", 2, "EARLY", 2),
		pane("c", 1, "EARLY", 10), pane("c", 1, "EARLY", 11),
	}
	if err := k.Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	pre, _ := k.PreCommit(ctx, 1)
	_, refs, _, err := k.sc.index(pre, &k.schema, nil, k.run)
	if err != nil {
		t.Fatal(err)
	}
	rs := &rowSet{pre: pre, refs: coalesce(pre, refs), sc: &k.sc, schema: &k.schema}
	var got []string
	for _, r := range rs.rows(0, rs.len()) {
		got = append(got, fmt.Sprintf("%s r%d %s %s %d", r.vals[0].s, r.revision, r.timingText(), r.statusText(), r.vals[1].i))
	}
	expect(t, "winners", got, []string{"a r3 LATE retracted 3", "b r2 ON_TIME provisional 2", "c r1 EARLY provisional 11"})
}

// Without checkpoints the sink is idempotent: Flush writes, no markers, and
// writing the same panes again converges.
func TestWithoutCheckpoints(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, Options{})
		if g := k.Guarantee(); g != connector.Idempotent {
			t.Fatalf("guarantee %s", g)
		}
		ctx := context.Background()
		for range 3 {
			for _, r := range []Row{pane("line-1", 1, "ON_TIME", 2), pane("line-1", 2, "LATE", 3), pane("line-1", 1, "ON_TIME", 2)} {
				if err := k.Write(ctx, []Row{r}); err != nil {
					t.Fatal(err)
				}
				if err := k.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		expect(t, "rows", d.rows(t, alertsQuery), []string{row("line-1", 2, "LATE", "provisional", 3)})
		expect(t, "marker table", d.rows(t, markerTableQuery(d)), []string{"0"})

		// An exactly-once sink in a job without checkpoints is flushed by
		// PreCommit(0) and Commit(0): no marker either.
		e := d.sink(t, alerts, checkpointed())
		if g := e.Guarantee(); g != connector.ExactlyOnce {
			t.Fatalf("guarantee %s", g)
		}
		commit(t, e, 0, pane("line-2", 1, "ON_TIME", 1))
		commit(t, e, 0, pane("line-2", 1, "ON_TIME", 1))
		expect(t, "markers", d.rows(t, "SELECT count(*) FROM weir_commits"), []string{"0"})
		expect(t, "line-2", d.rows(t, "SELECT line, revision, orders FROM alerts ORDER BY line"), []string{"line-1|2|3", "line-2|1|1"})
		if err := e.Flush(ctx); err != nil { // nothing to do with checkpoints
			t.Fatal(err)
		}
	})
}

// markerTableQuery counts the tables named weir_commits.
func markerTableQuery(d *testDB) string {
	if d.kind == "sqlite" {
		return "SELECT count(*) FROM sqlite_master WHERE name = 'weir_commits'"
	}
	return "SELECT count(*) FROM pg_tables WHERE tablename = 'weir_commits'"
}

// A sink without checkpoints writes a large buffer by itself, before it
// takes more rows.
func TestWithoutCheckpointsAutoFlush(t *testing.T) {
	d := newSQLiteDB(t)
	k := d.sink(t, alerts, Options{})
	batch := make([]Row, 512)
	for i := 0; i < autoFlushRows/len(batch)+1; i++ {
		for j := range batch {
			batch[j] = pane(fmt.Sprintf("k%05d", i*len(batch)+j), 1, "ON_TIME", 1)
		}
		if err := k.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, "rows written", d.rows(t, "SELECT count(*) FROM alerts"), []string{fmt.Sprint(autoFlushRows)})
	if k.rows != len(batch) {
		t.Errorf("%d rows buffered, want %d", k.rows, len(batch))
	}
}

// The types of every column, a global window and no key columns.
func TestTypes(t *testing.T) {
	s := Schema{Table: "totals", Values: []Column{{"n", Integer}, {"avg", Real}, {"spent", Numeric}, {"flag", Boolean}, {"label", Text}, {"missing", Real}}}
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, s, checkpointed())
		r := Row{WindowStart: mtime.MinTime, WindowEnd: mtime.MaxTime, Revision: 1, Timing: "ON_TIME", Final: true,
			Values: []any{int64(-3), 2.5, Decimal{4735, 1}, true, "tab\there, back\\slash\nnewline é", nil}, EmittedAt: w1}
		commit(t, k, 1, r)
		r.Revision, r.Values = 2, []any{7, float32(0.5), Decimal{-5, 2}, false, "", 1.0}
		commit(t, k, 2, r)
		got := d.rows(t, `SELECT window_start, window_end, revision, CASE WHEN final THEN 'true' ELSE 'false' END, status, n, avg, spent, CASE WHEN flag THEN 'true' ELSE 'false' END, label, missing FROM totals`)
		expect(t, "rows", got, []string{"0001-01-01T00:00:00.000Z|9999-12-31T23:59:59.999Z|2|true|closed|7|0.5|-0.05|false||1"})
		r.Revision, r.Values = 3, []any{int64(1), 2.5, Decimal{4735, 1}, true, "tab\there, back\\slash\nnewline é", nil}
		commit(t, k, 3, r)
		got = d.rows(t, `SELECT n, avg, spent, CASE WHEN flag THEN 'true' ELSE 'false' END, label, missing FROM totals`)
		expect(t, "rows", got, []string{"1|2.5|473.5|true|tab\there, back\\slash\nnewline é|NULL"})
	})
}

// Keys of several columns and types; equal keys written differently are one
// row.
func TestKeys(t *testing.T) {
	s := Schema{Table: "k", Keys: []Column{{"name", Text}, {"n", Integer}, {"x", Real}, {"d", Numeric}, {"b", Boolean}}, Values: []Column{{"v", Integer}}}
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, s, checkpointed())
		r := Row{Key: []any{"a", 1, 0.0, Decimal{50, 1}, true}, WindowStart: w0, WindowEnd: w1, Revision: 1, Timing: "EARLY", Values: []any{1}, EmittedAt: w1}
		r2 := r
		r2.Key, r2.Revision, r2.Values = []any{"a", int64(1), -0.0, Decimal{5, 0}, true}, 2, []any{2}
		commit(t, k, 1, r, r2)
		r3 := r
		r3.Key, r3.Revision, r3.Values = []any{"a", int32(1), 0, Decimal{500, 2}, true}, 3, []any{3}
		commit(t, k, 2, r3)
		expect(t, "rows", d.rows(t, "SELECT name, n, x, d, CASE WHEN b THEN 'true' ELSE 'false' END, revision, v FROM k"), []string{"a|1|0|5|true|3|3"})
	})
}

// Rows the table cannot take are refused by Write, whole batches at a time.
func TestWriteRefuses(t *testing.T) {
	k := SQLite("unused", alerts, Options{Checkpointed: true})
	ctx := context.Background()
	cases := map[string]Row{
		`table alerts: key column "line" is NULL: a key column is part of the primary key`:                          {Key: []any{nil}, Values: []any{1}, Timing: "EARLY"},
		`table alerts: column "orders" is integer and cannot hold string x`:                                         {Key: []any{"a"}, Values: []any{"x"}, Timing: "EARLY"},
		`table alerts: column "line" is text and cannot hold int64 3`:                                               {Key: []any{int64(3)}, Values: []any{1}, Timing: "EARLY"},
		`table alerts: a row has 2 values, the table 1 value columns`:                                               {Key: []any{"a"}, Values: []any{1, 2}, Timing: "EARLY"},
		`table alerts: timing "SOON" is not EARLY, ON_TIME or LATE`:                                                 {Key: []any{"a"}, Values: []any{1}, Timing: "SOON"},
		`table alerts: status "retracted" is not provisional or closed (a retraction's row is retracted by itself)`: {Key: []any{"a"}, Values: []any{1}, Timing: "LATE", Status: "retracted"},
	}
	for want, bad := range cases {
		err := k.Write(ctx, []Row{pane("ok", 1, "EARLY", 1), bad})
		var ce *connector.Error
		if err == nil || !errors.As(err, &ce) || ce.Op != "write" || connector.Retryable(err) {
			t.Errorf("%s: %v", want, err)
			continue
		}
		if !strings.HasSuffix(err.Error(), want) {
			t.Errorf("got %q, want ...%q", err, want)
		}
	}
	if k.rows != 0 || len(k.buf) != headerRoom {
		t.Errorf("refused batches left %d rows (%d bytes) in the buffer", k.rows, len(k.buf)-headerRoom)
	}
}

// An existing table is checked; a mismatch is a permanent error naming the
// column, in one line.
func TestTableCheck(t *testing.T) {
	type tc struct{ ddl, sqlite, postgres string }
	cols := `line TEXT NOT NULL, window_start %[1]s NOT NULL, window_end %[1]s NOT NULL, revision %[2]s, timing TEXT, final %[3]s, status TEXT, version %[2]s, updated_at %[1]s, reason TEXT`
	cases := []tc{
		{cols + `, PRIMARY KEY (line, window_start, window_end)`,
			`table alerts: no column "orders"`, `table alerts: no column "orders"`},
		{cols + `, orders TEXT, PRIMARY KEY (line, window_start, window_end)`,
			`table alerts: column "orders" is TEXT, expected INTEGER`, `table alerts: column "orders" is text, expected bigint`},
		{cols + `, orders %[2]s, PRIMARY KEY (line, window_start)`,
			`table alerts: primary key is (line, window_start), expected (line, window_start, window_end)`,
			`table alerts: primary key is (line, window_start), expected (line, window_start, window_end)`},
		{cols + `, orders %[2]s`,
			`table alerts: no primary key, expected (line, window_start, window_end)`, `table alerts: no primary key, expected (line, window_start, window_end)`},
		{cols + `, orders %[2]s, extra TEXT NOT NULL DEFAULT 'x', PRIMARY KEY (window_end, line, window_start)`, "", ""},
	}
	both(t, func(t *testing.T, d *testDB) {
		types := []any{"TEXT", "INTEGER", "INTEGER"}
		if d.kind == "postgres" {
			types = []any{"timestamptz", "bigint", "boolean"}
		}
		for i, c := range cases {
			table := fmt.Sprintf("alerts%d", i)
			d.exec(t, fmt.Sprintf("CREATE TABLE %s (%s)", table, fmt.Sprintf(c.ddl, types...)))
			s := alerts
			s.Table = table
			k := d.newSink(s, Options{})
			err := k.Open(context.Background(), connector.Resume{})
			k.Close()
			want := c.sqlite
			if d.kind == "postgres" {
				want = c.postgres
			}
			want = strings.ReplaceAll(want, "table alerts", "table "+table)
			if want == "" {
				if err != nil {
					t.Errorf("%s: %v", table, err)
				}
				continue
			}
			if err == nil || connector.Retryable(err) || err.Error() != "table "+table+": open: "+want {
				t.Errorf("%s: got %v (retryable %v), want %q", table, err, connector.Retryable(err), want)
			}
		}
		// Discarding mode wants a unique delta_id.
		d.exec(t, fmt.Sprintf("CREATE TABLE deltas (%s, orders %s, delta_id TEXT NOT NULL)", fmt.Sprintf(cols, types...), types[1]))
		k := d.newSink(deltas, Options{})
		err := k.Open(context.Background(), connector.Resume{})
		k.Close()
		if want := `table deltas: open: table deltas: column "delta_id" has no UNIQUE constraint of its own`; err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
}

// A corrupt pre-commit is a permanent error, and so is a schema that does
// not match the checkpoint's rows.
func TestCorruptPreCommit(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		ctx := context.Background()
		k.Write(ctx, []Row{pane("line-1", 1, "ON_TIME", 2)})
		pre, _ := k.PreCommit(ctx, 1)
		for _, bad := range [][]byte{{9}, pre[:len(pre)-1], append(slices.Clone(pre), 0)} {
			err := k.Commit(ctx, 1, bad)
			if err == nil || connector.Retryable(err) {
				t.Errorf("commit of %x: %v", bad, err)
			}
		}
		other := d.newSink(Schema{Table: "alerts", Keys: alerts.Keys, Values: []Column{{"orders", Integer}, {"x", Integer}}}, Options{})
		if err := other.Open(ctx, resumeWith(pre)); err == nil || !strings.Contains(err.Error(), "the job's output changed since the checkpoint") {
			t.Errorf("open with another schema: %v", err)
		}
		other.Close()
		expect(t, "rows", d.rows(t, "SELECT count(*) FROM alerts"), []string{"0"})
	})
}

// Commit runs concurrently with Write and PreCommit of the next checkpoint
// (go test -race).
func TestConcurrentCommit(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		ctx := context.Background()
		type pc struct {
			id  uint64
			pre []byte
		}
		pres := make(chan pc, 4)
		var wg sync.WaitGroup
		var commitErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range pres {
				if err := k.Commit(ctx, p.id, p.pre); err != nil && commitErr == nil {
					commitErr = err
				}
			}
		}()
		batch := make([]Row, 100)
		const keys, ckpts = 300, 20
		for c := uint64(1); c <= ckpts; c++ {
			for b := 0; b < 3; b++ {
				for i := range batch {
					n := (int(c)*3 + b + i*7) % keys
					batch[i] = pane(fmt.Sprintf("line-%03d", n), int64(c), "EARLY", int64(c)*10)
				}
				if err := k.Write(ctx, batch); err != nil {
					t.Fatal(err)
				}
				clear(batch) // the sink keeps nothing of the slice
			}
			pre, err := k.PreCommit(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			pres <- pc{c, pre}
		}
		close(pres)
		wg.Wait()
		if commitErr != nil {
			t.Fatal(commitErr)
		}
		// Each key's row is the highest checkpoint that wrote it.
		want := map[string]int64{}
		for c := int64(1); c <= ckpts; c++ {
			for b := 0; b < 3; b++ {
				for i := 0; i < 100; i++ {
					want[fmt.Sprintf("line-%03d", (int(c)*3+b+i*7)%keys)] = c
				}
			}
		}
		var wantRows []string
		for key, c := range want {
			wantRows = append(wantRows, fmt.Sprintf("%s|%d|%d", key, c, c*10))
		}
		slices.Sort(wantRows)
		expect(t, "rows", d.rows(t, "SELECT line, revision, orders FROM alerts ORDER BY line"), wantRows)
		expect(t, "markers", d.rows(t, "SELECT count(*) FROM weir_commits"), []string{fmt.Sprint(ckpts)})
	})
}

func TestDecimal(t *testing.T) {
	for d, want := range map[Decimal]string{
		{4735, 1}: "473.5", {-5, 2}: "-0.05", {5, 0}: "5", {0, 3}: "0.000", {47, -2}: "4700", {0, -2}: "0",
		{-9223372036854775808, 0}: "-9223372036854775808", {-9223372036854775808, 19}: "-0.9223372036854775808",
		{123, 3}: "0.123", {1234, 3}: "1.234",
	} {
		if got := d.String(); got != want {
			t.Errorf("%+v: %s, want %s", d, got, want)
		}
	}
	if n := (Decimal{500, 2}).normalized(); n != (Decimal{5, 0}) {
		t.Errorf("normalized %+v", n)
	}
}

// Two sinks of one database have markers of their own.
func TestSharedMarkers(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		a := d.sink(t, alerts, Options{Checkpointed: true, SinkName: "a"})
		other := alerts
		other.Table = "alerts_b"
		b := d.sink(t, other, Options{Checkpointed: true})
		commit(t, a, 1, pane("line-1", 1, "ON_TIME", 2))
		commit(t, b, 1, pane("line-1", 1, "ON_TIME", 5))
		expect(t, "markers", d.rows(t, "SELECT sink, checkpoint FROM weir_commits ORDER BY sink"), []string{"a|1", "alerts_b|1"})
		expect(t, "rows", d.rows(t, "SELECT 'a', orders FROM alerts UNION ALL SELECT 'b', orders FROM alerts_b ORDER BY 1"), []string{"a|2", "b|5"})
	})
}

// Read gives the rows back; Correct publishes reconciled rows, each only if
// its row is still as it was read: a stale base, or a row that appeared
// since, is refused and left alone.
func TestReadAndCorrect(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		commit(t, k, 1, pane("line-1", 2, "LATE", 3), pane("line-2", 1, "ON_TIME", 5))
		got, err := k.Read(context.Background(), mtime.MinTime, mtime.MaxTime)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Key[0] != "line-1" || got[0].WindowStart != w0 || got[0].WindowEnd != w1 || got[0].Revision != 2 ||
			got[0].Status != "provisional" || got[0].Values[0].String != "3" || got[0].Reason.Valid || got[1].Key[0] != "line-2" {
			t.Fatalf("read %+v", got)
		}
		if none, err := k.Read(context.Background(), w1, mtime.MaxTime); err != nil || len(none) != 0 {
			t.Fatalf("windows from w1: %v, %v", none, err)
		}
		base := got[0]
		fix := Correction{Base: &base, Key: []any{"line-1"}, WindowStart: w0, WindowEnd: w1, Values: []any{int64(4)},
			Revision: 3, Version: 1, Timing: "LATE", Reason: "ledger: orders 3 -> 4", At: w1 + 3_600_000}
		fresh := Correction{Key: []any{"line-3"}, WindowStart: w0, WindowEnd: w1, Values: []any{int64(1)},
			Revision: 1, Version: 1, Timing: "ON_TIME", Reason: "ledger: a window the stream never saw", At: w1 + 3_600_000}
		applied, err := k.Correct(context.Background(), []Correction{fix, fresh})
		if err != nil || !slices.Equal(applied, []bool{true, true}) {
			t.Fatalf("applied %v, %v", applied, err)
		}
		// The stream's next pane does not replace the correction.
		commit(t, k, 2, pane("line-1", 3, "LATE", 3))
		// The same corrections again: their bases are stale now.
		applied, err = k.Correct(context.Background(), []Correction{fix, fresh})
		if err != nil || !slices.Equal(applied, []bool{false, false}) {
			t.Fatalf("stale: applied %v, %v", applied, err)
		}
		q := "SELECT line, revision, status, orders, reason, updated_at FROM alerts ORDER BY line"
		expect(t, "rows", d.rows(t, q), []string{
			"line-1|3|reconciled|4|ledger: orders 3 -> 4|2026-09-07T13:01:00.000Z",
			"line-2|1|provisional|5|NULL|2026-09-07T12:01:01.000Z",
			"line-3|1|reconciled|1|ledger: a window the stream never saw|2026-09-07T13:01:00.000Z",
		})
	})
}

// resumeWith is how the engine opens a sink resuming from a checkpoint whose
// one pending pre-commit is pre.
func resumeWith(pre []byte) connector.Resume {
	return connector.Resume{From: 7, Pending: []connector.PreCommit{{Checkpoint: 7, Data: pre}}}
}

// A row the database cannot store for a reason of its own (PostgreSQL text
// holds no NUL, its primary key's index takes rows of a bounded size) is
// refused, by its index, and the others are written and committed; the
// refusal is never retried. SQLite takes them all.
func TestRowsTheDatabaseCannotStore(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		ctx := context.Background()
		long := strings.Repeat("k", 3000)
		err := k.Write(ctx, []Row{pane("line-1", 1, "ON_TIME", 2), pane("nul\x00key", 1, "ON_TIME", 1), pane(long, 1, "ON_TIME", 3), pane("line-2", 1, "ON_TIME", 4)})
		var re *connector.RefusedError
		if d.kind == "sqlite" {
			if err != nil {
				t.Fatalf("SQLite refused: %v", err)
			}
		} else if !errors.As(err, &re) || len(re.Items) != 2 || re.Items[0].Index != 1 || re.Items[1].Index != 2 ||
			!strings.Contains(re.Items[0].Reason, "the key holds a NUL character, which PostgreSQL text cannot store") ||
			!strings.Contains(re.Items[1].Reason, "the key takes 3000 bytes, more than PostgreSQL's index on it takes (2600)") || connector.Retryable(err) {
			t.Fatalf("refused: %v", err)
		}
		pre, err := k.PreCommit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Commit(ctx, 1, pre); err != nil {
			t.Fatalf("the commit of the rows it took: %v", err)
		}
		n := 4
		if d.kind == "postgres" {
			n = 2
		}
		if got := d.rows(t, "SELECT count(*) FROM alerts"); len(got) != 1 || got[0] != fmt.Sprint(n) {
			t.Errorf("rows: %v, want %d", got, n)
		}
	})
}

// Commit markers do not pile up: every 64 checkpoints, the commit deletes
// the sink's markers more than 1,000 checkpoints old (other sinks' stay).
func TestMarkersPruned(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		commit(t, k, 1, pane("line-1", 1, "ON_TIME", 1))
		// The markers of checkpoints 2 to 1151, as if committed, and one
		// of another sink.
		for id := 2; id < 1152; id += 50 {
			var b strings.Builder
			for i := id; i < id+50 && i < 1152; i++ {
				if i > id {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "('alerts-sink', %d, 'r', '2026-01-01T00:00:00.000Z')", i)
			}
			d.exec(t, `INSERT INTO weir_commits (sink, checkpoint, run, committed_at) VALUES `+b.String())
		}
		d.exec(t, `INSERT INTO weir_commits (sink, checkpoint, run, committed_at) VALUES ('other', 3, 'r', '2026-01-01T00:00:00.000Z')`)
		commit(t, k, 1152, pane("line-1", 2, "LATE", 2))
		expect(t, "markers left", d.rows(t, "SELECT count(*), min(checkpoint) FROM weir_commits WHERE sink = 'alerts-sink'"), []string{"1001|152"})
		expect(t, "the other sink's", d.rows(t, "SELECT count(*) FROM weir_commits WHERE sink = 'other'"), []string{"1"})
	})
}

// A row PostgreSQL refuses at the commit for a value of its own (here a key
// longer than a column the table's owner narrowed: SQLSTATE 22001, a data
// exception) is left out, alone, and said; the commit's other rows and its
// marker are written. An error of the table's own (a missing column, 42703)
// still fails the commit.
func TestPostgresRefusesRowsAtCommit(t *testing.T) {
	d := newPostgresDB(t)
	var log []string
	o := checkpointed()
	o.Log = func(s string) { log = append(log, s) }
	k := d.sink(t, alerts, o)
	d.exec(t, `ALTER TABLE alerts ALTER COLUMN line TYPE varchar(8)`)
	commit(t, k, 1, pane("line-1", 1, "ON_TIME", 1), pane("a-key-too-long", 1, "ON_TIME", 2), pane("line-2", 1, "ON_TIME", 3))
	expect(t, "rows", d.rows(t, "SELECT line, orders FROM alerts ORDER BY line"), []string{"line-1|1", "line-2|3"})
	expect(t, "markers", d.rows(t, "SELECT checkpoint FROM weir_commits"), []string{"1"})
	if l := log[len(log)-1]; !strings.Contains(l, "the database refused a row of checkpoint 1 for a value of its own, left out") || !strings.Contains(l, "22001") || strings.Count(strings.Join(log, "\n"), "refused") != 1 {
		t.Errorf("log: %q", log)
	}
	// Without checkpoints, the same.
	plain := d.sink(t, Schema{Table: "alerts", Keys: alerts.Keys, Values: alerts.Values}, Options{Log: o.Log})
	if err := plain.Write(context.Background(), []Row{pane("line-3", 1, "ON_TIME", 4), pane("another-too-long", 1, "ON_TIME", 5)}); err != nil {
		t.Fatal(err)
	}
	if err := plain.Flush(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	expect(t, "rows without checkpoints", d.rows(t, "SELECT line, orders FROM alerts ORDER BY line"), []string{"line-1|1", "line-2|3", "line-3|4"})
	d.exec(t, `ALTER TABLE alerts DROP COLUMN orders`)
	ctx := context.Background()
	k.Write(ctx, []Row{pane("line-3", 1, "ON_TIME", 1)})
	pre, _ := k.PreCommit(ctx, 2)
	if err := k.Commit(ctx, 2, pre); err == nil || !strings.Contains(err.Error(), "42703") {
		t.Errorf("a commit into a table without its column: %v", err)
	}
}

// A commit of more rows than one statement takes is one transaction of
// several statements: all its rows, its marker once; committed again, it
// writes nothing.
func TestLargeCommit(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		rows := make([]Row, 2*pgChunk+5)
		for i := range rows {
			rows[i] = pane(fmt.Sprintf("line-%05d", i), 1, "ON_TIME", int64(i))
		}
		pre := commit(t, k, 1, rows...)
		if err := k.Commit(context.Background(), 1, pre); err != nil {
			t.Fatal(err)
		}
		expect(t, "rows", d.rows(t, "SELECT count(*), sum(orders), min(line), max(line) FROM alerts"),
			[]string{fmt.Sprintf("%d|%d|line-00000|line-%05d", len(rows), len(rows)*(len(rows)-1)/2, len(rows)-1)})
		expect(t, "markers", d.rows(t, "SELECT checkpoint FROM weir_commits"), []string{"1"})
	})
}

// A commit of rows of many keys with several revisions each, the revisions
// of a key far apart in the pre-commit: each key's highest revision is
// written, and the commit never holds more than one chunk of decoded rows.
func TestLargeCommitCoalesced(t *testing.T) {
	both(t, func(t *testing.T, d *testDB) {
		k := d.sink(t, alerts, checkpointed())
		keys := commitChunk + 3
		var rows []Row
		for rev := int64(1); rev <= 3; rev++ {
			for i := range keys {
				rows = append(rows, pane(fmt.Sprintf("line-%05d", i), rev, "ON_TIME", rev*int64(i)))
			}
		}
		commit(t, k, 1, rows...)
		expect(t, "rows", d.rows(t, "SELECT count(*), sum(orders), min(revision), max(revision) FROM alerts"),
			[]string{fmt.Sprintf("%d|%d|3|3", keys, 3*keys*(keys-1)/2)})
		if c := cap(k.sc.rows); c > commitChunk {
			t.Errorf("a commit of %d rows decoded %d rows at once, more than a chunk of %d", len(rows), c, commitChunk)
		}
	})
}

// Floats PostgreSQL stores as they are: NaN and the infinities, in double
// precision and numeric columns, and -0.
func TestPostgresSpecialFloats(t *testing.T) {
	d := newPostgresDB(t)
	s := Schema{Table: "f", Keys: []Column{{"k", Real}}, Values: []Column{{"x", Real}, {"n", Numeric}}}
	k := d.sink(t, s, checkpointed())
	nan, inf := math.NaN(), math.Inf(1)
	var rows []Row
	for i, v := range []float64{nan, inf, -inf, 1e300, 5e-324, math.Copysign(0, -1)} {
		rows = append(rows, Row{Key: []any{float64(i)}, WindowStart: w0, WindowEnd: w1, Revision: 1, Timing: "ON_TIME", Values: []any{v, v}, EmittedAt: w1})
	}
	commit(t, k, 1, rows...)
	expect(t, "rows", d.rows(t, "SELECT k::text, x::text, n::text FROM f ORDER BY k"), []string{
		"0|NaN|NaN", "1|Infinity|Infinity", "2|-Infinity|-Infinity", "3|1e+300|" + "1" + strings.Repeat("0", 300),
		"4|5e-324|0." + strings.Repeat("0", 323) + "5", "5|-0|0"})
}

// The tables the sink creates in PostgreSQL for upserts keep half of each
// page free, for the rows' next revisions; an append table of deltas does
// not.
func TestPostgresFillFactor(t *testing.T) {
	d := newPostgresDB(t)
	d.sink(t, alerts, Options{})
	d.sink(t, deltas, Options{})
	expect(t, "reloptions", d.rows(t, "SELECT relname, coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE relname IN ('alerts', 'deltas') ORDER BY relname"),
		[]string{"alerts|fillfactor=50", "deltas|"})
}

// A MERGE whose insert meets a key another writer inserted while it looked
// (and committed after) fails with a unique violation; the sink commits the
// checkpoint again with INSERT ... ON CONFLICT, and the guard keeps the
// higher revision.
func TestPostgresMergeMeetsAnotherWritersInsert(t *testing.T) {
	d := newPostgresDB(t)
	var mu sync.Mutex
	var log []string
	o := checkpointed()
	o.Log = func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	k := d.sink(t, alerts, o)
	commit(t, k, 1, pane("line-1", 1, "ON_TIME", 1))
	ctx := context.Background()
	other, err := pgx.Connect(ctx, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	for _, q := range []string{"BEGIN",
		"CREATE TEMP TABLE x AS SELECT * FROM alerts WHERE line = 'line-1'",
		"UPDATE x SET line = 'line-2', revision = 1, orders = 7",
		"INSERT INTO alerts SELECT * FROM x"} {
		if _, err := other.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		if err := k.Write(ctx, []Row{pane("line-2", 2, "ON_TIME", 20)}); err != nil {
			done <- err
			return
		}
		pre, err := k.PreCommit(ctx, 2)
		if err == nil {
			err = k.Commit(ctx, 2, pre)
		}
		done <- err
	}()
	// The sink's insert waits for the other writer's transaction.
	for {
		if n := d.rows(t, "SELECT count(*) FROM pg_locks WHERE NOT granted"); n[0] != "0" {
			break
		}
		runtime.Gosched()
	}
	if _, err := other.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("commit 2: %v", err)
	}
	expect(t, "rows", d.rows(t, "SELECT line, revision, orders FROM alerts ORDER BY line"), []string{"line-1|1|1", "line-2|2|20"})
	expect(t, "markers", d.rows(t, "SELECT checkpoint FROM weir_commits ORDER BY checkpoint"), []string{"1", "2"})
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(log, "\n"), "checkpoint 2: another writer inserted a key of it meanwhile") {
		t.Errorf("log: %q", log)
	}
}
