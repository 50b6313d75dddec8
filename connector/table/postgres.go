package table

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
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

// CheckDSN reports whether dsn is a connection string pgx reads (a URL or
// key=value pairs), with an error that says what is wrong without quoting
// it (it may hold a password): a job file's mistake is found when it is
// read, not when the output opens.
func CheckDSN(dsn string) error {
	_, err := pgx.ParseConfig(dsn)
	if err == nil {
		return nil
	}
	why := "expected postgres://user@host:5432/db?sslmode=disable, or host=... user=... dbname=..."
	var ue *url.Error
	var pe *pgconn.ParseConfigError
	switch {
	case errors.As(err, &ue):
		why = ue.Err.Error()
	case errors.As(err, &pe) && errors.Unwrap(pe) != nil:
		why = errors.Unwrap(pe).Error()
	}
	if strings.Contains(dsn, "://") {
		why += "; in a URL, write a password's %, @, / and : as %25, %40, %2F and %3A, or give it apart in password:"
	}
	return errors.New("not a connection string pgx can read: " + why)
}

// Postgres returns a sink that writes the table s to the PostgreSQL
// database at dsn (a URL, postgres://user@host:port/db?sslmode=disable, or
// key=value pairs, as pgx takes them).
//
// A commit sends its rows as parameters, an array per column in the binary
// format, of one INSERT ... SELECT unnest($1), unnest($2), ... ON CONFLICT
// per chunk of pgChunk rows, in one transaction with the commit marker: a
// round trip for the marker, then one per chunk (the last with the commit).
// The rows are decoded from the checkpoint a chunk at a time. A table it
// creates for upserts keeps half of each page free (fillfactor 50), so that
// a row's next revision fits beside it (a HOT update: no new index entry).
// A connection lost is opened again at the next commit.
func Postgres(dsn string, s Schema, o Options) *Sink {
	k := newSink(s, o)
	k.backend, k.dialect = &pgBackend{s: k, dsn: dsn}, pgDialect
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
	value:   func(c Column) string { return quote(c.Name) + "::text" }, // numeric is exact
	arg:     pgArg,
	millis:  func(c string) string { return "(extract(epoch from " + c + ") * 1000)::bigint" },
	timeArg: func(t mtime.Time) any { return t.Time() },
	boolArg: func(v bool) any { return v },
}

// pgArg is v as an argument of PostgreSQL through database/sql: a decimal
// as its text, which numeric reads exactly.
func pgArg(v *val) any {
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
		return false
	case tagTrue:
		return true
	}
	return nil
}

// handle opens, the first time, a database/sql handle on the same server (pgx's
// stdlib driver), for reading rows back and correcting them.
func (b *pgBackend) handle() *sql.DB {
	if b.sqlDB == nil {
		cfg, err := pgx.ParseConfig(b.dsn)
		if err == nil {
			b.sqlDB = stdlib.OpenDB(*cfg)
		} else {
			b.sqlDB = sql.OpenDB(failing{err})
		}
	}
	return b.sqlDB
}

// failing is a database/sql connector that reports why it cannot connect.
type failing struct{ err error }

func (f failing) Connect(context.Context) (driver.Conn, error) { return nil, f.err }
func (f failing) Driver() driver.Driver                        { return nil }

// pgChunk is how many rows one statement of a commit upserts.
const pgChunk = 8192

// upsertStatement and mergeStatement are the names of the prepared
// upserts in the sink's session: INSERT ... ON CONFLICT, and MERGE where
// the server has it (pgMergeSQL).
const (
	upsertStatement = "weir_upsert"
	mergeStatement  = "weir_merge"
)

// pgUpsertFill is the fillfactor of the upsert tables the sink creates.
const pgUpsertFill = 50

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
	refused  atomic.Int64
	s        *Sink
	dsn      string
	cfg      *pgx.ConnConfig
	conn     *pgx.Conn
	prepared bool // the upsert is prepared in conn's session
	lost     bool // the last error closed the connection

	upsert, mark string
	merge        string     // the MERGE of the rows, on PostgreSQL 15 and later
	cols         []pgColumn // what the upsert's arrays hold
	oids         []uint32   // the upsert's parameter types
	params       [][]byte   // the upsert's arguments, reused
	formats      []int16    // binary, for every parameter
	buf          []byte
	sqlDB        *sql.DB // for reads and corrections
}

func (b *pgBackend) connect(ctx context.Context) error {
	if b.conn != nil && !b.conn.IsClosed() {
		return nil
	}
	if b.conn != nil {
		b.s.log("reconnecting to the database after the connection was lost")
	}
	b.conn, b.prepared = nil, false
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
	cs := sc.columns(pgDialect)
	unique := ""
	if sc.Mode == Discarding {
		unique = "delta_id"
	}
	suffix := fmt.Sprintf(" WITH (fillfactor = %d)", pgUpsertFill)
	if sc.Mode == Discarding {
		suffix = "" // appended to, never updated
	}
	if err := b.ensure(ctx, sc.Table, cs, sc.primaryKey(), unique, suffix, b.s.opts.AddColumns); err != nil {
		return err
	}
	if b.s.opts.Checkpointed {
		if err := b.ensure(ctx, markerTable, markerColumns, markerKey, "", "", nil); err != nil {
			return err
		}
		b.mark = markerSQL(pgDialect)
	}
	b.upsert, b.cols = pgUpsertSQL(sc), pgColumns(sc)
	b.merge = ""
	if sc.Mode != Discarding && pgMajor(b.conn.PgConn().ParameterStatus("server_version")) >= 15 {
		b.merge = pgMergeSQL(sc)
	}
	b.oids, b.formats = make([]uint32, len(b.cols)), make([]int16, len(b.cols))
	for i, c := range b.cols {
		b.oids[i], b.formats[i] = arrayOID(c.typ), 1
	}
	b.params = make([][]byte, len(b.cols))
	return nil
}

// ensure creates the table if absent (suffix ends its CREATE TABLE), and
// checks it. A table that lacks the value columns of add gets them.
func (b *pgBackend) ensure(ctx context.Context, table string, cs []column, pk []string, unique, suffix string, add []string) error {
	e, err := b.existing(ctx, table)
	if err != nil {
		return err
	}
	if e.cols != nil {
		exec := func(ctx context.Context, q string) error { _, err := b.conn.Exec(ctx, q); return err }
		if e, err = b.s.addMissing(ctx, pgDialect, table, cs, pk, unique, add, e, "", exec, b.existing); err != nil {
			return err
		}
	}
	if e.cols == nil {
		if _, err := b.conn.Exec(ctx, createTable(pgDialect, table, cs, pk, unique, suffix)); err != nil {
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

// pgMajor is the major version in a server_version such as "15.18 (Debian
// 15.18-0+deb12u1)", or 0.
func pgMajor(version string) int {
	n, _ := strconv.Atoi(version[:strings.IndexFunc(version+".", func(r rune) bool { return r < '0' || r > '9' })])
	return n
}

// apply commits rows with marker m, through MERGE where the server has it:
// a MERGE whose insert met a key another transaction inserted meanwhile
// (unique_violation; INSERT ... ON CONFLICT waits for it and updates
// instead) is rolled back, and the commit made again with the INSERT.
func (b *pgBackend) apply(ctx context.Context, rows *rowSet, m marker) (done bool, err error) {
	if b.merge == "" {
		return b.applyWith(ctx, rows, m, upsertStatement)
	}
	done, err = b.applyWith(ctx, rows, m, mergeStatement)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23505" {
		b.s.log(fmt.Sprintf("checkpoint %d: another writer inserted a key of it meanwhile; committing it again with INSERT ... ON CONFLICT", m.checkpoint))
		return b.applyWith(ctx, rows, m, upsertStatement)
	}
	return done, err
}

func (b *pgBackend) applyWith(ctx context.Context, rows *rowSet, m marker, stmt string) (done bool, err error) {
	b.lost = false
	defer b.afterError(&err)
	if err := b.connect(ctx); err != nil {
		return false, err
	}
	if !b.prepared {
		if _, err := b.conn.PgConn().Prepare(ctx, upsertStatement, b.upsert, b.oids); err != nil {
			return false, err
		}
		if b.merge != "" {
			if _, err := b.conn.PgConn().Prepare(ctx, mergeStatement, b.merge, b.oids); err != nil {
				return false, err
			}
		}
		b.prepared = true
	}
	pc := b.conn.PgConn()
	defer func() {
		if err != nil || done {
			b.rollback(ctx)
		}
	}()
	batch := &pgconn.Batch{}
	batch.ExecParams("BEGIN", nil, nil, nil, nil)
	if m.checkpoint != 0 {
		// The marker first: if it is there, nothing is sent.
		b.queueMarker(batch, m)
		res, err := pc.ExecBatch(ctx, batch).ReadAll()
		if err != nil {
			return false, err
		}
		if res[1].CommandTag.RowsAffected() == 0 {
			return true, nil
		}
		batch = &pgconn.Batch{}
	}
	// A chunk of rows a round trip, decoded when it is sent: what the
	// connection buffers is one chunk, whatever the size of the commit.
	for at := 0; at < rows.len(); at += pgChunk {
		b.queueRows(batch, rows.rows(at, min(at+pgChunk, rows.len())), stmt)
		if at+pgChunk >= rows.len() {
			batch.ExecParams("COMMIT", nil, nil, nil, nil)
		}
		if _, err := pc.ExecBatch(ctx, batch).ReadAll(); err != nil {
			return false, b.rowsAlone(ctx, err, rows, m, stmt)
		}
		batch = &pgconn.Batch{}
	}
	return false, nil
}

// queueMarker queues the statement that writes marker m (and, every
// pruneEvery checkpoints, the one that deletes the sink's old markers).
func (b *pgBackend) queueMarker(batch *pgconn.Batch, m marker) {
	now := mtime.FromTime(time.Now())
	batch.ExecParams(b.mark, [][]byte{[]byte(m.sink), int8Param(m.checkpoint), []byte(m.run), timeParam(now)},
		[]uint32{oidText, oidInt8, oidText, oidTimestamptz}, []int16{1, 1, 1, 1}, nil)
	if m.checkpoint%pruneEvery == 0 && m.checkpoint > keepMarkers {
		batch.ExecParams(pruneMarkersSQL(pgDialect), [][]byte{[]byte(m.sink), int8Param(m.checkpoint - keepMarkers)},
			[]uint32{oidText, oidInt8}, []int16{1, 1}, nil)
	}
}

// queueRows queues the upserts of rows, pgChunk rows a statement, with the
// prepared statement stmt.
func (b *pgBackend) queueRows(batch *pgconn.Batch, rows []prow, stmt string) {
	for len(rows) > 0 {
		n := min(len(rows), pgChunk)
		b.buf = b.buf[:0]
		at := make([]int, len(b.cols)+1)
		for i, c := range b.cols {
			at[i] = len(b.buf)
			b.buf = appendArray(b.buf, rows[:n], c)
		}
		at[len(b.cols)] = len(b.buf)
		for i := range b.cols {
			b.params[i] = b.buf[at[i]:at[i+1]]
		}
		batch.ExecPrepared(stmt, b.params, b.formats, nil) // copies the parameters
		rows = rows[n:]
	}
	clear(b.params)
}

// rollback ends the transaction the connection is in, if any; a connection
// that cannot is closed, as it is in an unknown state.
func (b *pgBackend) rollback(ctx context.Context) {
	pc := b.conn.PgConn()
	if pc.IsClosed() || pc.TxStatus() == 'I' {
		return
	}
	if _, err := pc.Exec(context.WithoutCancel(ctx), "ROLLBACK").ReadAll(); err != nil {
		pc.Close(context.WithoutCancel(ctx))
	}
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
// one of them, one at a time, each in a savepoint of a new transaction: the
// rows it refuses are left out (and said), the others committed with the
// marker. Any other error is the commit's.
func (b *pgBackend) rowsAlone(ctx context.Context, err error, rows *rowSet, m marker, stmt string) error {
	if !rowFault(err) {
		return err
	}
	first := err
	b.rollback(ctx)
	pc := b.conn.PgConn()
	exec := func(batch *pgconn.Batch) error {
		_, err := pc.ExecBatch(ctx, batch).ReadAll()
		return err
	}
	begin := &pgconn.Batch{}
	begin.ExecParams("BEGIN", nil, nil, nil, nil)
	if m.checkpoint != 0 {
		b.queueMarker(begin, m)
	}
	defer b.rollback(ctx)
	if err := exec(begin); err != nil {
		return err
	}
	refused := 0
	for i := range rows.len() {
		row := &pgconn.Batch{}
		row.ExecParams("SAVEPOINT weir_row", nil, nil, nil, nil)
		b.queueRows(row, rows.rows(i, i+1), stmt)
		row.ExecParams("RELEASE SAVEPOINT weir_row", nil, nil, nil, nil)
		switch err := exec(row); {
		case err == nil:
		case rowFault(err):
			refused++
			b.refused.Add(1)
			back := &pgconn.Batch{}
			back.ExecParams("ROLLBACK TO SAVEPOINT weir_row", nil, nil, nil, nil)
			if err := exec(back); err != nil {
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
	commit := &pgconn.Batch{}
	commit.ExecParams("COMMIT", nil, nil, nil, nil)
	return exec(commit)
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

// int8Param is i as a binary bigint parameter.
func int8Param(i int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }

// timeParam is t as a binary timestamptz parameter.
func timeParam(t mtime.Time) []byte { return int8Param((int64(t) - pgEpoch) * 1000) }

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
