package table

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// SQLite returns a sink that writes the table s to the SQLite database in
// the file at path, created if absent. The database is put in WAL mode (so
// that readers do not block the sink), with full syncs at each commit.
func SQLite(path string, s Schema, o Options) *Sink {
	k := newSink(s, o)
	k.backend, k.dialect = &sqliteBackend{s: k, path: path}, sqliteDialect
	return k
}

var sqliteDialect = &dialect{
	typeName: func(t ColumnType) string {
		switch t {
		case Text, timestamp:
			return "TEXT"
		case Integer, Boolean:
			return "INTEGER"
		case Real:
			return "REAL"
		}
		return "NUMERIC"
	},
	compatible: func(t ColumnType, decl string) bool {
		a := affinity(decl)
		switch t {
		case Text, timestamp:
			return a == "TEXT"
		case Integer, Boolean:
			return a == "INTEGER" || a == "NUMERIC"
		case Real:
			return a == "REAL" || a == "NUMERIC"
		case Numeric:
			return a == "NUMERIC" || a == "TEXT"
		}
		return false
	},
	param:   func(int) string { return "?" },
	exact:   true,
	text:    func(c string) string { return "CAST(" + c + " AS TEXT)" },
	value:   sqliteRead,
	arg:     sqliteValue,
	millis:  func(c string) string { return c }, // RFC 3339 text, parsed by the reader
	timeArg: func(t mtime.Time) any { return t.String() },
	boolArg: func(v bool) any { return boolInt(v) },
}

// sqliteRead selects value column c as text: a Numeric one from its exact
// companion, unless the companion is NULL (a row written before it was
// added) or no longer the number c holds (c changed by hand, or by a weir
// that did not write the companion), where c's own text is all there is.
func sqliteRead(c Column) string {
	v := "CAST(" + quote(c.Name) + " AS TEXT)"
	if c.Type != Numeric {
		return v
	}
	e := quote(ExactColumn(c.Name))
	return fmt.Sprintf("CASE WHEN CAST(%s AS NUMERIC) = %s THEN %[1]s ELSE %s END", e, quote(c.Name), v)
}

func (b *sqliteBackend) handle() *sql.DB { return b.db }

// refuses implements backend: SQLite stores any text, NULs included.
func (b *sqliteBackend) refuses(*Row) string { return "" }

// affinity is the type affinity of a column declared as decl
// (https://www.sqlite.org/datatype3.html#determination_of_column_affinity).
func affinity(decl string) string {
	d := strings.ToUpper(decl)
	switch {
	case strings.Contains(d, "INT"):
		return "INTEGER"
	case strings.Contains(d, "CHAR"), strings.Contains(d, "CLOB"), strings.Contains(d, "TEXT"):
		return "TEXT"
	case d == "", strings.Contains(d, "BLOB"):
		return "BLOB"
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}

type sqliteBackend struct {
	s       *Sink
	path    string
	db      *sql.DB
	insert  *sql.Stmt // one row
	insertN *sql.Stmt // sqliteChunk rows
	mark    *sql.Stmt
	args    []any
	exact   []bool // per key and value: a Numeric value, with a companion column
	mode    string // the schema's mode, in every row
	ts      []byte
	times   [4]struct {
		t mtime.Time
		s string
	}
	next int
}

// dsn is the driver's name for the file: a URI, so that any path works,
// with the settings of the connection.
func (b *sqliteBackend) dsn() string {
	return sqliteURI(b.path) + "&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
}

// sqliteURI is the driver's name for the file at path, as a URI (so that
// any path works), with its busy timeout.
func sqliteURI(path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + p + "?_pragma=busy_timeout(" + strconv.Itoa(sqliteBusyMillis) + ")"
}

// sqliteChunk is how many rows one INSERT of a commit writes.
const sqliteChunk = 32

// sqliteBusyMillis is how long a commit waits for another writer to let go
// of the database before it fails with SQLITE_BUSY (and is retried).
var sqliteBusyMillis = 10_000

func (b *sqliteBackend) open(ctx context.Context) error {
	if b.db != nil {
		b.close()
	}
	db, err := sql.Open("sqlite", b.dsn())
	if err != nil {
		return err
	}
	// One connection: the sink's transactions are serial anyway, and
	// SQLite has one writer at a time.
	db.SetMaxOpenConns(1)
	b.db = db
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("%s: %w", b.path, err)
	}
	sc := &b.s.schema
	cs := sc.columns(sqliteDialect)
	unique, suffix := "", " WITHOUT ROWID"
	if sc.Mode == Discarding {
		unique, suffix = "delta_id", ""
	}
	if err := b.ensure(ctx, sc.Table, cs, sc.primaryKey(), unique, suffix, b.s.opts.AddColumns); err != nil {
		return err
	}
	if b.s.opts.Checkpointed {
		if err := b.ensure(ctx, markerTable, markerColumns, markerKey, "", " WITHOUT ROWID", nil); err != nil {
			return err
		}
		if b.mark, err = db.PrepareContext(ctx, markerSQL(sqliteDialect)); err != nil {
			return err
		}
	}
	// reason, last, is NULL in the rows the sink writes: a literal, one
	// parameter less to bind a row.
	one := "(" + strings.Repeat("?, ", len(cs)-1) + "NULL)"
	insert := func(rows int) (*sql.Stmt, error) {
		values := strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
		q := fmt.Sprintf("INSERT INTO %s AS cur (%s) VALUES %s%s", quote(sc.Table), quoteAll(names(cs)), values, upsertTail(sc, cs))
		return db.PrepareContext(ctx, q)
	}
	if b.insert, err = insert(1); err != nil {
		return err
	}
	if b.insertN, err = insert(sqliteChunk); err != nil {
		return err
	}
	b.args = make([]any, (len(cs)-1)*sqliteChunk)
	b.mode = sc.Mode.String()
	b.exact = make([]bool, len(sc.Keys), len(sc.Keys)+len(sc.Values))
	for _, c := range sc.Values {
		b.exact = append(b.exact, c.Type == Numeric)
	}
	return nil
}

// ensure creates the table if absent, and checks it. A table that lacks
// columns the sink may add (the exact companions of its Numeric columns,
// in a table made by a weir that kept none; the value columns of add) gets
// them.
func (b *sqliteBackend) ensure(ctx context.Context, table string, cs []column, pk []string, unique, suffix string, add []string) error {
	e, err := b.existing(ctx, table)
	if err != nil {
		return err
	}
	if e.cols != nil {
		exec := func(ctx context.Context, q string) error { _, err := b.db.ExecContext(ctx, q); return err }
		if e, err = b.s.addMissing(ctx, sqliteDialect, table, cs, pk, unique, add, e, " in "+b.path, exec, b.existing); err != nil {
			return err
		}
	}
	if e.cols == nil {
		if _, err := b.db.ExecContext(ctx, createTable(sqliteDialect, table, cs, pk, unique, suffix)); err != nil {
			return err
		}
		b.s.log(fmt.Sprintf("created table %s in %s", table, b.path))
		if e, err = b.existing(ctx, table); err != nil {
			return err
		}
	}
	if err := checkTable(sqliteDialect, table, cs, pk, unique, e); err != nil {
		return connector.Permanent(err)
	}
	return nil
}

// existing reads a table's columns, primary key and unique columns; cols is
// nil when the table does not exist.
func (b *sqliteBackend) existing(ctx context.Context, table string) (existing, error) {
	var e existing
	rows, err := b.db.QueryContext(ctx, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY pk", table)
	if err != nil {
		return e, err
	}
	for rows.Next() {
		var name, decl string
		var pk int
		if err := rows.Scan(&name, &decl, &pk); err != nil {
			rows.Close()
			return e, err
		}
		if e.cols == nil {
			e.cols = map[string]string{}
		}
		e.cols[name] = decl
		if pk > 0 {
			e.pk = append(e.pk, name)
		}
	}
	if err := rows.Err(); err != nil {
		return e, err
	}
	var indexes []string
	rows, err = b.db.QueryContext(ctx, `SELECT name FROM pragma_index_list(?) WHERE "unique"`, table)
	if err != nil {
		return e, err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return e, err
		}
		indexes = append(indexes, name)
	}
	if err := rows.Err(); err != nil {
		return e, err
	}
	e.unique = map[string]bool{}
	for _, ix := range indexes {
		var cols []string
		rows, err := b.db.QueryContext(ctx, "SELECT name FROM pragma_index_info(?)", ix)
		if err != nil {
			return e, err
		}
		for rows.Next() {
			var name sql.NullString
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return e, err
			}
			cols = append(cols, name.String)
		}
		if err := rows.Err(); err != nil {
			return e, err
		}
		if len(cols) == 1 {
			e.unique[cols[0]] = true
		}
	}
	return e, nil
}

func (b *sqliteBackend) apply(ctx context.Context, rows *rowSet, m marker) (done bool, err error) {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil || done {
			tx.Rollback()
		}
	}()
	if m.checkpoint != 0 {
		res, err := tx.StmtContext(ctx, b.mark).ExecContext(ctx, m.sink, m.checkpoint, m.run, mtime.Now().String())
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err == nil, err
		}
		if m.checkpoint%pruneEvery == 0 && m.checkpoint > keepMarkers {
			if _, err := tx.ExecContext(ctx, pruneMarkersSQL(sqliteDialect), m.sink, m.checkpoint-keepMarkers); err != nil {
				return false, err
			}
		}
	}
	w := len(b.args) / sqliteChunk
	insertN, insert := tx.StmtContext(ctx, b.insertN), tx.StmtContext(ctx, b.insert)
	for at := 0; at < rows.len(); at += commitChunk {
		chunk := rows.rows(at, min(at+commitChunk, rows.len()))
		for len(chunk) >= sqliteChunk {
			for i := range sqliteChunk {
				b.fill(&chunk[i], b.args[i*w:(i+1)*w])
			}
			if _, err := insertN.ExecContext(ctx, b.args...); err != nil {
				return false, err
			}
			chunk = chunk[sqliteChunk:]
		}
		for i := range chunk {
			b.fill(&chunk[i], b.args[:w])
			if _, err := insert.ExecContext(ctx, b.args[:w]...); err != nil {
				return false, err
			}
		}
	}
	clear(b.args) // keep nothing of the rows alive
	return false, tx.Commit()
}

// fill sets the arguments a of one row of the insert to r's columns.
func (b *sqliteBackend) fill(r *prow, a []any) {
	n := 0
	for i := range r.vals {
		v := &r.vals[i]
		if !b.exact[i] {
			a[n] = sqliteValue(v)
			n++
			continue
		}
		a[n+1] = exactText(v)
		if v.tag == tagDecimal {
			a[n] = a[n+1] // the same text: SQLite makes the number of it
		} else {
			a[n] = sqliteValue(v)
		}
		n += 2
	}
	a[n] = b.time(r.ws)
	a[n+1] = b.time(r.we)
	a[n+2] = r.revision
	a[n+3] = r.timingText()
	a[n+4] = boolInt(r.final)
	a[n+5] = r.statusText()
	a[n+6] = b.mode
	a[n+7] = r.version
	a[n+8] = b.time(r.emitted)
	if r.deltaID != nil {
		a[n+9] = string(r.deltaID)
	}
}

// time formats t; the rows of a commit share few windows, so the last
// instants formatted are kept.
func (b *sqliteBackend) time(t mtime.Time) string {
	for i := range b.times {
		if c := &b.times[i]; c.t == t && c.s != "" {
			return c.s
		}
	}
	b.ts = t.AppendFormat(b.ts[:0])
	c := &b.times[b.next]
	c.t, c.s = t, string(b.ts)
	b.next = (b.next + 1) % len(b.times)
	return c.s
}

func boolInt(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// exactText is v in text, exactly, for an exact companion column: a
// decimal's digits, an integer's, a float's shortest text that reads back as
// it; nil for NULL and for NaN (which SQLite stores as NULL).
func exactText(v *val) any {
	switch v.tag {
	case tagInt:
		return strconv.FormatInt(v.i, 10)
	case tagDecimal:
		return v.decimal().String()
	case tagReal:
		if math.IsNaN(v.f) {
			return nil
		}
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	}
	return nil
}

// sqliteValue is v as an argument of SQLite: a decimal as its text, which a
// NUMERIC column makes a number of.
func sqliteValue(v *val) any {
	switch v.tag {
	case tagText:
		return string(v.s)
	case tagInt:
		return v.i
	case tagReal:
		return v.f
	case tagDecimal:
		return v.decimal().String()
	case tagFalse:
		return int64(0)
	case tagTrue:
		return int64(1)
	}
	return nil
}

// classify: BUSY and LOCKED (another writer holds the database beyond the
// busy timeout) are transient; every other refusal is permanent.
func (b *sqliteBackend) classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return connector.Transient(err)
		}
		return connector.Permanent(err)
	}
	return err
}

func (b *sqliteBackend) close() error {
	if b.db == nil {
		return nil
	}
	err := b.db.Close()
	b.db, b.insert, b.insertN, b.mark = nil, nil, nil, nil
	return err
}
