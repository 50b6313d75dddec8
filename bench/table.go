package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/internal/pgtest"
	"github.com/weirstream/weir/mtime"
)

// The rows of the table benchmarks: panes of 100K keys, each key's window
// getting revisions 1, 2 and 3 before the next window begins; commits of
// 2,000 rows.
const (
	tableKeys  = 100_000
	tableBatch = 2000
)

// tableWriter is what a table benchmark writes its rows with.
type tableWriter uint8

const (
	// viaSink: table.Sink, upserts with the revision guard and a commit
	// marker.
	viaSink tableWriter = iota
	// appendFloor: plain appends to a table with no key at all.
	appendFloor
	// keyedFloor, the fair floor: plain inserts into a table with the
	// sink's primary key (so that every row updates its index, as an upsert
	// probes it), each revision a row of its own, with no guard or marker.
	keyedFloor
)

func init() {
	for _, db := range []string{"sqlite", "postgres"} {
		register(Bench{
			Name: "upsert-" + db, Group: "table",
			About: fmt.Sprintf("accumulating upserts into %s through table.Sink.Commit, %d rows a commit (with its marker), revisions 1..3 of %d keys", db, tableBatch, tableKeys),
			Run:   func(d time.Duration) (int64, map[string]float64, string, error) { return tableRun(d, db, viaSink) },
		})
		register(Bench{
			Name: "keyed-insert-" + db + "-floor", Group: "table",
			About: fmt.Sprintf("the fair floor for upsert-%s: the same rows plainly inserted in the same transactions into a table with the same primary key (each revision its own row: its window shifted by revision-1 ms), no guard, no marker", db),
			Run:   func(d time.Duration) (int64, map[string]float64, string, error) { return tableRun(d, db, keyedFloor) },
		})
		register(Bench{
			Name: "append-" + db + "-floor", Group: "table",
			About: fmt.Sprintf("the lowest floor for upsert-%s: the same rows appended in the same transactions to a table without a key, guard or marker", db),
			Run:   func(d time.Duration) (int64, map[string]float64, string, error) { return tableRun(d, db, appendFloor) },
		})
	}
}

var tableSchema = table.Schema{
	Table:  "panes",
	Keys:   []table.Column{{Name: "card", Type: table.Text}},
	Values: []table.Column{{Name: "orders", Type: table.Integer}, {Name: "amount", Type: table.Real}},
}

// tableRows fills batch with the rows from the i-th on.
type tableRows struct {
	keys  []any // the keys, boxed once
	slots [][3]any
}

func newTableRows() *tableRows {
	g := &tableRows{keys: make([]any, tableKeys), slots: make([][3]any, tableBatch)}
	for i := range g.keys {
		g.keys[i] = fmt.Sprintf("card-%06d", i)
	}
	return g
}

func (g *tableRows) fill(batch []table.Row, i int64) {
	for j := range batch {
		n := i + int64(j)
		cycle := n / tableKeys
		start := tumblingBase + mtime.Time(cycle/3)*60_000
		rev := cycle%3 + 1
		s := &g.slots[j]
		s[0] = g.keys[n%tableKeys]
		s[1], s[2] = n%1000*rev, float64(n%10_000)/4
		batch[j] = table.Row{Key: s[0:1:1], WindowStart: start, WindowEnd: start + 60_000, Revision: rev,
			Timing: [...]string{"ON_TIME", "LATE", "LATE"}[rev-1], Final: rev == 3, Values: s[1:3:3],
			EmittedAt: start + 60_000 + mtime.Time(rev)*1000}
	}
}

// tableRun writes rows for about d with w, and reports rows per second of
// the writing alone (the cluster's start is not in it) as write_rows_per_s.
func tableRun(d time.Duration, db string, w tableWriter) (int64, map[string]float64, string, error) {
	setup := time.Now()
	dir, err := os.MkdirTemp("", "weir-bench-table-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	var dsn string
	if db == "postgres" {
		var stop func()
		if dsn, stop, err = pgtest.Start(dir); err != nil {
			return 0, nil, "", err
		}
		defer stop()
	}
	var write func(ctx context.Context, id uint64, rows []table.Row) error
	var count func(ctx context.Context) (int64, error)
	var closeFn func() error
	ctx := context.Background()
	keyed := w == keyedFloor
	if w == viaSink {
		var k *table.Sink
		o := table.Options{Checkpointed: true, SinkName: "bench"}
		if db == "sqlite" {
			k = table.SQLite(filepath.Join(dir, "bench.db"), tableSchema, o)
		} else {
			k = table.Postgres(dsn, tableSchema, o)
		}
		if err := k.Open(ctx, connector.Resume{}); err != nil {
			return 0, nil, "", err
		}
		closeFn = k.Close
		write = func(ctx context.Context, id uint64, rows []table.Row) error {
			for len(rows) > 0 { // in the engine's batches
				n := min(len(rows), 512)
				if err := k.Write(ctx, rows[:n]); err != nil {
					return err
				}
				rows = rows[n:]
			}
			pre, err := k.PreCommit(ctx, id)
			if err != nil {
				return err
			}
			return k.Commit(ctx, id, pre)
		}
	} else if db == "sqlite" {
		f, err := newSQLiteFloor(ctx, filepath.Join(dir, "bench.db"), keyed)
		if err != nil {
			return 0, nil, "", err
		}
		write, closeFn = f.write, f.db.Close
	} else {
		f, err := newPostgresFloor(ctx, dsn, keyed)
		if err != nil {
			return 0, nil, "", err
		}
		write, closeFn = f.write, func() error { return f.conn.Close(ctx) }
	}
	count = func(ctx context.Context) (int64, error) { return countRows(ctx, db, dir, dsn) }
	g := newTableRows()
	batch := make([]table.Row, tableBatch)
	setupTime := time.Since(setup)
	start := time.Now()
	var n int64
	for id := uint64(1); time.Since(start) < d; id++ {
		g.fill(batch, n)
		if err := write(ctx, id, batch); err != nil {
			return n, nil, "", err
		}
		n += tableBatch
	}
	wall := time.Since(start)
	if err := closeFn(); err != nil {
		return n, nil, "", err
	}
	rows, err := count(ctx)
	if err != nil {
		return n, nil, "", err
	}
	extra := map[string]float64{"write_rows_per_s": float64(n) / wall.Seconds(), "setup_s": setupTime.Seconds(), "table_rows": float64(rows)}
	return n, extra, "", nil
}

func countRows(ctx context.Context, db, dir, dsn string) (int64, error) {
	var n int64
	if db == "sqlite" {
		s, err := sql.Open("sqlite", filepath.Join(dir, "bench.db"))
		if err != nil {
			return 0, err
		}
		defer s.Close()
		return n, s.QueryRowContext(ctx, "SELECT count(*) FROM panes").Scan(&n)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	return n, c.QueryRow(ctx, "SELECT count(*) FROM panes").Scan(&n)
}

// The columns the floors write, as the sink's table has them.
const tableColumns = "card, orders, amount, window_start, window_end, revision, timing, final, status, version, updated_at"

// floorDDL is the CREATE TABLE of a floor's table, with the types of db
// (text, integer, real, boolean, timestamp): with the sink's primary key if
// keyed, else without any, as SQLite's tables without a key keep a rowid.
func floorDDL(keyed bool, text, integer, real, boolean, ts, suffix string) string {
	ddl := fmt.Sprintf(`CREATE TABLE panes (card %[1]s NOT NULL, orders %[2]s, amount %[3]s, window_start %[5]s NOT NULL, window_end %[5]s NOT NULL,
		revision %[2]s NOT NULL, timing %[1]s NOT NULL, final %[4]s NOT NULL, status %[1]s NOT NULL, version %[2]s NOT NULL, updated_at %[5]s NOT NULL`,
		text, integer, real, boolean, ts)
	if !keyed {
		return ddl + ")"
	}
	return ddl + ", PRIMARY KEY (card, window_start, window_end))" + suffix
}

// floorWindow is the window a floor writes row r in: its own, or in the
// keyed floor its own shifted by revision-1 ms, so that no insert conflicts.
func floorWindow(r *table.Row, keyed bool) (start, end mtime.Time) {
	if !keyed {
		return r.WindowStart, r.WindowEnd
	}
	shift := mtime.Time(r.Revision - 1)
	return r.WindowStart + shift, r.WindowEnd + shift
}

// sqliteFloor inserts rows with prepared INSERTs of 32 rows (as the sink
// writes them), a transaction a batch, with the sink's settings (WAL, full
// syncs): into a table without a key, or keyed as the sink's (WITHOUT
// ROWID).
type sqliteFloor struct {
	db       *sql.DB
	keyed    bool
	insert32 *sql.Stmt
	insert1  *sql.Stmt
	args     []any
	ts       []byte
}

const sqliteFloorChunk = 32

func newSQLiteFloor(ctx context.Context, path string, keyed bool) (*sqliteFloor, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, floorDDL(keyed, "TEXT", "INTEGER", "REAL", "INTEGER", "TEXT", " WITHOUT ROWID")); err != nil {
		return nil, err
	}
	prepare := func(rows int) (*sql.Stmt, error) {
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", rows), ", ")
		return db.PrepareContext(ctx, "INSERT INTO panes ("+tableColumns+") VALUES "+values)
	}
	f := &sqliteFloor{db: db, keyed: keyed, args: make([]any, 11*sqliteFloorChunk)}
	if f.insert1, err = prepare(1); err != nil {
		return nil, err
	}
	if f.insert32, err = prepare(sqliteFloorChunk); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *sqliteFloor) write(ctx context.Context, _ uint64, rows []table.Row) error {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for len(rows) > 0 {
		st, n := tx.StmtContext(ctx, f.insert1), 1
		if len(rows) >= sqliteFloorChunk {
			st, n = tx.StmtContext(ctx, f.insert32), sqliteFloorChunk
		}
		for i := range n {
			f.fill(&rows[i], f.args[i*11:(i+1)*11])
		}
		if _, err := st.ExecContext(ctx, f.args[:n*11]...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return tx.Commit()
}

func (f *sqliteFloor) fill(r *table.Row, a []any) {
	str := func(t mtime.Time) string { f.ts = t.AppendFormat(f.ts[:0]); return string(f.ts) }
	final, status := int64(0), "provisional"
	if r.Final {
		final, status = 1, "closed"
	}
	ws, we := floorWindow(r, f.keyed)
	a[0], a[1], a[2], a[3], a[4] = r.Key[0], r.Values[0], r.Values[1], str(ws), str(we)
	a[5], a[6], a[7], a[8], a[9], a[10] = r.Revision, r.Timing, final, status, int64(1), str(r.EmittedAt)
}

// postgresFloor inserts rows with COPY (pgx's binary CopyFrom), a
// transaction a batch: into a table without a key, or with the sink's
// primary key.
type postgresFloor struct {
	conn  *pgx.Conn
	keyed bool
	cols  []string
}

func newPostgresFloor(ctx context.Context, dsn string, keyed bool) (*postgresFloor, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, floorDDL(keyed, "text", "bigint", "double precision", "boolean", "timestamptz", "")); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return &postgresFloor{conn: conn, keyed: keyed, cols: strings.Split(strings.ReplaceAll(tableColumns, " ", ""), ",")}, nil
}

func (f *postgresFloor) write(ctx context.Context, _ uint64, rows []table.Row) error {
	tx, err := f.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	vals := make([]any, len(f.cols))
	src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		status := "provisional"
		if r.Final {
			status = "closed"
		}
		ws, we := floorWindow(r, f.keyed)
		vals[0], vals[1], vals[2] = r.Key[0], r.Values[0], r.Values[1]
		vals[3], vals[4], vals[5] = ws.Time(), we.Time(), r.Revision
		vals[6], vals[7], vals[8], vals[9], vals[10] = r.Timing, r.Final, status, int64(1), r.EmittedAt.Time()
		return vals, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"panes"}, f.cols, src); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
