package table

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// Postgres returns a sink that writes the table s to the PostgreSQL
// database at dsn (a URL, postgres://user@host:port/db?sslmode=disable, or
// key=value pairs, as pgx takes them).
//
// A commit copies the rows into a temporary table (COPY) and upserts them
// from there with one INSERT ... SELECT, in one transaction with the commit
// marker. A connection lost is opened again at the next commit.
func Postgres(dsn string, s Schema, o Options) *Sink {
	k := newSink(s, o)
	k.backend = &pgBackend{s: k, dsn: dsn}
	return k
}

var pgDialect = &dialect{
	typeName: func(t ColumnType) string {
		switch t {
		case Text:
			return "text"
		case Integer:
			return "bigint"
		case Real:
			return "double precision"
		case Numeric:
			return "numeric"
		case Boolean:
			return "boolean"
		}
		return "timestamp with time zone"
	},
	compatible: func(t ColumnType, decl string) bool {
		base, _, _ := strings.Cut(decl, "(")
		switch base = strings.TrimSpace(base); t {
		case Text:
			return base == "text" || base == "character varying"
		case Integer:
			return base == "bigint" || base == "numeric"
		case Real:
			return base == "double precision"
		case Numeric:
			return base == "numeric"
		case Boolean:
			return base == "boolean"
		case timestamp:
			return base == "timestamp with time zone"
		}
		return false
	},
	param:   func(i int) string { return "$" + strconv.Itoa(i) },
	text:    func(c string) string { return c + "::text" },
	millis:  func(c string) string { return "(extract(epoch from " + c + ") * 1000)::bigint" },
	timeArg: func(t mtime.Time) any { return t.Time() },
	boolArg: func(v bool) any { return v },
}

// handle opens, the first time, a database/sql handle on the same server (pgx's
// stdlib driver), for reading rows back and correcting them.
func (b *pgBackend) handle() (*dialect, *sql.DB) {
	if b.sqlDB == nil {
		cfg, err := pgx.ParseConfig(b.dsn)
		if err == nil {
			b.sqlDB = stdlib.OpenDB(*cfg)
		} else {
			b.sqlDB = sql.OpenDB(failing{err})
		}
	}
	return pgDialect, b.sqlDB
}

// failing is a database/sql connector that reports why it cannot connect.
type failing struct{ err error }

func (f failing) Connect(context.Context) (driver.Conn, error) { return nil, f.err }
func (f failing) Driver() driver.Driver                        { return nil }

// stageTable is the temporary table a commit copies its rows into.
const stageTable = "weir_stage"

// pgMaxKeyBytes is the most bytes the key values of a row may take: the
// primary key's index holds a row of at most 2704 bytes (a third of a page),
// with the window's bounds beside the key.
const pgMaxKeyBytes = 2600

// refuses implements backend: PostgreSQL text holds neither NUL nor bytes
// that are not UTF-8, and the primary key's index takes rows of a bounded
// size.
func (b *pgBackend) refuses(r *Row) string {
	keyBytes := 0
	for _, v := range r.Key {
		if s, ok := v.(string); ok {
			keyBytes += len(s)
			if why := pgText(s); why != "" {
				return "the key " + why
			}
		}
	}
	if keyBytes > pgMaxKeyBytes {
		return fmt.Sprintf("the key takes %d bytes, more than PostgreSQL's index on it takes (%d)", keyBytes, pgMaxKeyBytes)
	}
	for _, v := range r.Values {
		if s, ok := v.(string); ok {
			if why := pgText(s); why != "" {
				return "a value " + why
			}
		}
	}
	return ""
}

// pgText says why PostgreSQL text cannot hold s, or "".
func pgText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return "holds a NUL character, which PostgreSQL text cannot store"
	}
	if !utf8.ValidString(s) {
		return "is not UTF-8, which PostgreSQL text needs"
	}
	return ""
}

type pgBackend struct {
	// refused counts the rows the database refused at a commit, for a
	// value of their own (rowsAlone).
	refused atomic.Int64
	s       *Sink
	dsn     string
	cfg     *pgx.ConnConfig
	conn    *pgx.Conn
	staged  bool // the stage table exists in conn's session
	lost    bool // the last error closed the connection

	stage, copy, upsert, mark string
	buf                       []byte
	sqlDB                     *sql.DB // for reads and corrections
}

func (b *pgBackend) connect(ctx context.Context) error {
	if b.conn != nil && !b.conn.IsClosed() {
		return nil
	}
	if b.conn != nil {
		b.s.log("reconnecting to the database after the connection was lost")
	}
	b.conn, b.staged = nil, false
	if b.cfg == nil {
		cfg, err := pgx.ParseConfig(b.dsn)
		if err != nil {
			return connector.Permanent(err)
		}
		if cfg.RuntimeParams["application_name"] == "" {
			cfg.RuntimeParams["application_name"] = "weir"
		}
		b.cfg = cfg
	}
	conn, err := pgx.ConnectConfig(ctx, b.cfg)
	if err != nil {
		return err
	}
	b.conn = conn
	return nil
}

func (b *pgBackend) open(ctx context.Context) (err error) {
	b.lost = false
	defer b.afterError(&err)
	if err := b.connect(ctx); err != nil {
		return err
	}
	sc := &b.s.schema
	cs := sc.columns()
	unique := ""
	if sc.Mode == Discarding {
		unique = "delta_id"
	}
	if err := b.ensure(ctx, sc.Table, cs, sc.primaryKey(), unique, b.s.opts.AddColumns); err != nil {
		return err
	}
	if b.s.opts.Checkpointed {
		if err := b.ensure(ctx, markerTable, markerColumns, markerKey, "", nil); err != nil {
			return err
		}
		b.mark = markerSQL(pgDialect)
	}
	var st strings.Builder
	fmt.Fprintf(&st, "CREATE TEMPORARY TABLE IF NOT EXISTS %s (", stageTable)
	for i, c := range cs {
		if i > 0 {
			st.WriteString(", ")
		}
		fmt.Fprintf(&st, "%s %s", quote(c.name), pgDialect.typeName(c.typ))
	}
	st.WriteString(") ON COMMIT DELETE ROWS")
	b.stage = st.String()
	cols := quoteAll(names(cs))
	b.copy = fmt.Sprintf("COPY %s (%s) FROM STDIN", stageTable, cols)
	b.upsert = fmt.Sprintf("INSERT INTO %s AS cur (%s) SELECT %[2]s FROM %s%s", quote(sc.Table), cols, stageTable, upsertTail(sc))
	return nil
}

// ensure creates the table if absent, adds the value columns of add it
// lacks, and checks it.
func (b *pgBackend) ensure(ctx context.Context, table string, cs []column, pk []string, unique string, add []string) error {
	e, err := b.existing(ctx, table)
	if err != nil {
		return err
	}
	if stmts, names := addColumns(pgDialect, table, &b.s.schema, e, add); e.cols != nil && len(stmts) > 0 {
		for _, q := range stmts {
			if _, err := b.conn.Exec(ctx, q); err != nil {
				return err
			}
		}
		b.s.log(fmt.Sprintf("added the columns %s to table %s (aggregates added to the job)", strings.Join(names, ", "), table))
		if e, err = b.existing(ctx, table); err != nil {
			return err
		}
	}
	if e.cols == nil {
		if _, err := b.conn.Exec(ctx, createTable(pgDialect, table, cs, pk, unique, "")); err != nil {
			return err
		}
		b.s.log(fmt.Sprintf("created table %s", table))
		if e, err = b.existing(ctx, table); err != nil {
			return err
		}
	}
	if err := checkTable(pgDialect, table, cs, pk, unique, e); err != nil {
		return connector.Permanent(err)
	}
	return nil
}

// existing reads a table's columns, primary key and unique columns from the
// catalog; cols is nil when the table does not exist.
func (b *pgBackend) existing(ctx context.Context, table string) (existing, error) {
	var e existing
	var oid uint32
	if err := b.conn.QueryRow(ctx, "SELECT coalesce(to_regclass($1)::oid, 0)", quote(table)).Scan(&oid); err != nil {
		return e, err
	}
	if oid == 0 {
		return e, nil
	}
	e.cols, e.unique = map[string]string{}, map[string]bool{}
	rows, err := b.conn.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, oid)
	if err != nil {
		return e, err
	}
	var name, decl string
	if _, err := pgx.ForEachRow(rows, []any{&name, &decl}, func() error { e.cols[name] = decl; return nil }); err != nil {
		return e, err
	}
	rows, err = b.conn.Query(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1 AND i.indisprimary`, oid)
	if err != nil {
		return e, err
	}
	if _, err := pgx.ForEachRow(rows, []any{&name}, func() error { e.pk = append(e.pk, name); return nil }); err != nil {
		return e, err
	}
	rows, err = b.conn.Query(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = $1 AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL`, oid)
	if err != nil {
		return e, err
	}
	if _, err := pgx.ForEachRow(rows, []any{&name}, func() error { e.unique[name] = true; return nil }); err != nil {
		return e, err
	}
	return e, nil
}

func (b *pgBackend) apply(ctx context.Context, rows []prow, m marker) (done bool, err error) {
	b.lost = false
	defer b.afterError(&err)
	if err := b.connect(ctx); err != nil {
		return false, err
	}
	if !b.staged {
		if _, err := b.conn.Exec(ctx, b.stage); err != nil {
			return false, err
		}
		b.staged = true
	}
	b.buf = b.buf[:0]
	for i := range rows {
		b.buf = appendCopyRow(b.buf, &rows[i])
	}
	tx, err := b.conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil || done {
			if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil && !b.conn.IsClosed() {
				b.conn.Close(context.WithoutCancel(ctx)) // in an unknown state: start over
			}
		}
	}()
	if m.checkpoint != 0 {
		tag, err := tx.Exec(ctx, b.mark, m.sink, m.checkpoint, m.run, time.Now())
		if err != nil {
			return false, err
		}
		if tag.RowsAffected() == 0 {
			return true, nil
		}
		if m.checkpoint%pruneEvery == 0 && m.checkpoint > keepMarkers {
			if _, err := tx.Exec(ctx, pruneMarkersSQL(pgDialect), m.sink, m.checkpoint-keepMarkers); err != nil {
				return false, err
			}
		}
	}
	if _, err := b.conn.PgConn().CopyFrom(ctx, bytes.NewReader(b.buf), b.copy); err != nil {
		return false, b.rowsAlone(ctx, tx, err, rows, m)
	}
	if _, err := tx.Exec(ctx, b.upsert); err != nil {
		return false, b.rowsAlone(ctx, tx, err, rows, m)
	}
	return false, tx.Commit(ctx)
}

// rowFault reports whether the database refused a statement for a value of
// one of its rows (SQLSTATE class 22, data exception: a character it cannot
// store, a number out of range, a string too long; class 54, program limit
// exceeded: an index row too large), not for a reason of its own: the other
// rows can be written.
func rowFault(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "54"))
}

// rowsAlone writes the rows of a commit the database refused for a value of
// one of them, one at a time, each in a savepoint of the transaction: the
// rows it refuses are left out (and said), the others committed with the
// marker. Any other error is the commit's.
func (b *pgBackend) rowsAlone(ctx context.Context, tx pgx.Tx, err error, rows []prow, m marker) error {
	if !rowFault(err) {
		return err
	}
	first := err
	if err := tx.Rollback(ctx); err != nil {
		return err
	}
	tx, err = b.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if m.checkpoint != 0 {
		if _, err := tx.Exec(ctx, b.mark, m.sink, m.checkpoint, m.run, time.Now()); err != nil {
			return err
		}
	}
	refused := 0
	for i := range rows {
		if _, err := tx.Exec(ctx, "SAVEPOINT weir_row"); err != nil {
			return err
		}
		b.buf = appendCopyRow(b.buf[:0], &rows[i])
		_, err := b.conn.PgConn().CopyFrom(ctx, bytes.NewReader(b.buf), b.copy)
		if err == nil {
			_, err = tx.Exec(ctx, b.upsert)
		}
		if _, terr := tx.Exec(ctx, "TRUNCATE "+stageTable); terr != nil && err == nil {
			err = terr
		}
		switch {
		case err == nil:
			if _, err := tx.Exec(ctx, "RELEASE SAVEPOINT weir_row"); err != nil {
				return err
			}
		case rowFault(err):
			refused++
			b.refused.Add(1)
			if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT weir_row"); err != nil {
				return err
			}
			b.s.log(fmt.Sprintf("warning: the database refused a row of checkpoint %d for a value of its own, left out: %v", m.checkpoint, err))
		default:
			return err
		}
	}
	if refused == 0 {
		return first // not a row's fault after all
	}
	return tx.Commit(ctx)
}

// afterError notes that an error closed the connection (the next call
// opens a new one).
func (b *pgBackend) afterError(err *error) {
	if *err != nil && b.conn != nil && b.conn.IsClosed() {
		b.lost = true
		var pe *pgconn.PgError
		if !errors.As(*err, &pe) {
			*err = fmt.Errorf("lost the connection to the database: %w", *err)
		}
	}
}

// appendCopyRow appends r in the text format of COPY.
func appendCopyRow(b []byte, r *prow) []byte {
	for i := range r.vals {
		b = appendCopyValue(b, &r.vals[i])
		b = append(b, '\t')
	}
	b = append(r.ws.AppendFormat(b), '\t')
	b = append(r.we.AppendFormat(b), '\t')
	b = append(strconv.AppendInt(b, r.revision, 10), '\t')
	b = append(append(b, r.timingText()...), '\t')
	if r.final {
		b = append(b, 't', '\t')
	} else {
		b = append(b, 'f', '\t')
	}
	b = append(append(b, r.statusText()...), '\t')
	b = append(strconv.AppendInt(b, r.version, 10), '\t')
	b = r.emitted.AppendFormat(b)
	if r.deltaID != nil {
		b = append(append(b, '\t'), r.deltaID...)
	}
	return append(b, '\t', '\\', 'N', '\n') // reason: NULL
}

func appendCopyValue(b []byte, v *val) []byte {
	switch v.tag {
	case tagText:
		return appendCopyText(b, v.s)
	case tagInt:
		return strconv.AppendInt(b, v.i, 10)
	case tagReal:
		switch {
		case math.IsNaN(v.f):
			return append(b, "NaN"...)
		case math.IsInf(v.f, 1):
			return append(b, "Infinity"...)
		case math.IsInf(v.f, -1):
			return append(b, "-Infinity"...)
		}
		return strconv.AppendFloat(b, v.f, 'g', -1, 64)
	case tagDecimal:
		return v.decimal().Append(b)
	case tagFalse:
		return append(b, 'f')
	case tagTrue:
		return append(b, 't')
	}
	return append(b, `\N`...)
}

// appendCopyText appends s escaped for COPY's text format.
func appendCopyText(b, s []byte) []byte {
	if bytes.IndexAny(s, "\\\t\n\r") < 0 {
		return append(b, s...)
	}
	for _, c := range s {
		switch c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, c)
		}
	}
	return b
}

// classify: a connection lost or refused, a server shutting down or
// starting, too many connections, a serialization failure or a deadlock are
// transient; every other error the server reports is permanent.
func (b *pgBackend) classify(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if transientState(pe.Code) {
			return connector.Transient(err)
		}
		return connector.Permanent(err)
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return err // classified already
	}
	if b.lost || connector.Retryable(err) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return connector.Transient(err)
	}
	return err
}

// transientState reports whether an SQLSTATE says to try again later.
func transientState(code string) bool {
	if strings.HasPrefix(code, "08") { // connection exception
		return true
	}
	switch code {
	case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
		"40001", "40P01", // serialization_failure, deadlock_detected
		"53300": // too_many_connections
		return true
	}
	return false
}

func (b *pgBackend) close() error {
	if b.sqlDB != nil {
		b.sqlDB.Close()
		b.sqlDB = nil
	}
	if b.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := b.conn.Close(ctx)
	b.conn = nil
	return err
}
