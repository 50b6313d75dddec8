package table

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// Row is one pane as a table sees it.
type Row struct {
	// Key holds one value per key column, in the order of Schema.Keys:
	// string, int64 (or another integer type), float64, bool or Decimal,
	// as the column's type takes. A key column is part of the primary key
	// and cannot be NULL: a nil key value is an error.
	Key []any
	// WindowStart and WindowEnd bound the window; a global window is
	// mtime.MinTime to mtime.MaxTime.
	WindowStart mtime.Time
	WindowEnd   mtime.Time
	// Revision numbers the panes of one key and window: 1, 2, 3...; a
	// retraction has the revision of the pane it withdraws.
	Revision int64
	// Timing is "EARLY", "ON_TIME" or "LATE".
	Timing string
	// Final is set on the last pane the window will emit.
	Final bool
	// Retract marks a retraction: it withdraws the pane of its revision.
	Retract bool
	// Status is "provisional" (not final) or "closed" (final); empty, it is
	// derived from Final. A retraction's row gets "retracted" whatever
	// Status says (except in Discarding mode, where a retraction is a delta
	// like any other).
	Status string
	// Version is the job's metric-definition version: 0 is taken as 1.
	Version int64
	// Values holds one value per value column, in the order of
	// Schema.Values: int64 (or another integer type), float64, Decimal,
	// string, bool or nil (NULL), as the column's type takes. (SQLite
	// stores a NaN as NULL.)
	Values []any
	// EmittedAt is the processing time of the emission; it goes to
	// updated_at.
	EmittedAt mtime.Time
}

// Decimal is an exact decimal number: Unscaled / 10^Scale (473.5 is
// {4735, 1}; a negative Scale multiplies: {47, -2} is 4700).
type Decimal struct {
	Unscaled int64
	Scale    int8
}

// String formats d in plain decimal notation, such as "473.5" or "-0.05".
func (d Decimal) String() string { return string(d.Append(nil)) }

// Append appends d as String formats it.
func (d Decimal) Append(b []byte) []byte {
	u := uint64(d.Unscaled)
	if d.Unscaled < 0 {
		b = append(b, '-')
		u = -u
	}
	if d.Scale <= 0 {
		b = strconv.AppendUint(b, u, 10)
		if u != 0 {
			for i := int8(0); i > d.Scale; i-- {
				b = append(b, '0')
			}
		}
		return b
	}
	var digits [20]byte
	ds := strconv.AppendUint(digits[:0], u, 10)
	scale := int(d.Scale)
	if len(ds) <= scale {
		b = append(b, '0', '.')
		for i := len(ds); i < scale; i++ {
			b = append(b, '0')
		}
		return append(b, ds...)
	}
	b = append(b, ds[:len(ds)-scale]...)
	b = append(b, '.')
	return append(b, ds[len(ds)-scale:]...)
}

// normalized is d without trailing zeros after the point, so that equal
// numbers have equal representations (5.0 and 5 are one key).
func (d Decimal) normalized() Decimal {
	if d.Unscaled == 0 {
		return Decimal{}
	}
	for d.Scale > 0 && d.Unscaled%10 == 0 {
		d.Unscaled /= 10
		d.Scale--
	}
	return d
}

// ColumnType is the SQL type of a key or value column.
type ColumnType uint8

const (
	// Text is PostgreSQL text, SQLite TEXT: strings.
	Text ColumnType = iota + 1
	// Integer is PostgreSQL bigint, SQLite INTEGER: int64.
	Integer
	// Real is PostgreSQL double precision, SQLite REAL: float64 (and
	// integers, converted).
	Real
	// Numeric is PostgreSQL numeric, SQLite NUMERIC: Decimal, integers,
	// float64. PostgreSQL keeps a Decimal exactly. SQLite's NUMERIC keeps
	// 15 significant digits, so in SQLite a Numeric value column c has a
	// companion column ExactColumn(c), TEXT, with the exact decimal text
	// (Decimal.String, an integer's digits, a float's shortest text): c
	// stays a number for SQL (ORDER BY, WHERE c > 100), c_exact is what the
	// sink reads back (Read). A Numeric key column has no companion: in
	// SQLite, keys that differ beyond 15 significant digits are one key.
	Numeric
	// Boolean is PostgreSQL boolean, SQLite INTEGER 0 or 1: bool.
	Boolean

	// timestamp is the type of the window bounds and updated_at.
	timestamp ColumnType = 100
)

// String is the type's name: text, integer, real, numeric or boolean.
func (t ColumnType) String() string {
	switch t {
	case Text:
		return "text"
	case Integer:
		return "integer"
	case Real:
		return "real"
	case Numeric:
		return "numeric"
	case Boolean:
		return "boolean"
	case timestamp:
		return "timestamp"
	}
	return fmt.Sprintf("ColumnType(%d)", uint8(t))
}

// Column is a key or value column: its name in the table and its type.
type Column struct {
	Name string
	Type ColumnType
}

// Mode is the job's accumulation mode, which decides the table's shape.
type Mode uint8

const (
	// Accumulating: each pane holds the window's whole value so far; the
	// table has one row per key and window, the highest revision's.
	Accumulating Mode = iota
	// Retracting: as Accumulating, and each pane comes after the
	// retraction of the pane it replaces. In both modes a retraction that
	// no pane of the same row follows in the same commit becomes a
	// tombstone.
	Retracting
	// Discarding: each pane is a delta since the pane before; the table
	// is an append log of deltas, one row each, identified by delta_id.
	Discarding
)

// String is accumulating, retracting or discarding.
func (m Mode) String() string {
	switch m {
	case Accumulating:
		return "accumulating"
	case Retracting:
		return "retracting"
	case Discarding:
		return "discarding"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Schema describes the table a sink writes.
type Schema struct {
	// Table is the table's name, one identifier (PostgreSQL looks it up
	// on the search path).
	Table string
	// Keys are the key columns; none for a job without a key (one global
	// key).
	Keys []Column
	// Values are the value columns, one per aggregate.
	Values []Column
	// Mode is the job's accumulation mode.
	Mode Mode
	// Job is the job's name: part of a delta's identity in Discarding mode,
	// so that two jobs may append to one table.
	Job string
}

// Options are a sink's settings besides the table.
type Options struct {
	// Checkpointed says the job takes checkpoints: the sink is then exactly
	// once (rows and commit marker in one transaction at each checkpoint).
	// Without it the sink is idempotent by the revision guard alone.
	Checkpointed bool
	// SinkName identifies the sink in the commit-marker table (several
	// sinks may share a database) and in errors; empty, the table's name.
	SinkName string
	// Log, if set, receives what the sink has to say (a table created, a
	// commit found done already, a reconnection).
	Log func(string)
	// AddColumns names value columns an existing table may lack, which the
	// sink adds to it (ALTER TABLE ... ADD COLUMN, NULL in the rows written
	// before): the aggregates added to a job since the checkpoint it
	// resumes from. Any other column missing is an error.
	AddColumns []string
	// FormerValues, when set, are the value columns of the job at the
	// checkpoint it resumes from, in their order, when they differ from
	// the schema's (aggregates added or removed since): the pre-commits of
	// that checkpoint, committed again at the restore, hold their values
	// so, and each goes to the column of its name (none to a column added
	// since, which is NULL in those rows).
	FormerValues []string
}

// autoFlushRows is how many rows a sink without checkpoints buffers before
// Write writes them by itself.
const autoFlushRows = 8192

// Sink writes rows to a table. It implements connector.Sink[Row]; create it
// with SQLite or Postgres.
type Sink struct {
	schema  Schema
	opts    Options
	name    string // in errors
	marker  string // the sink's name in weir_commits
	run     string // this run's identity in weir_commits
	backend backend
	dialect *dialect

	// The write side: Write, Flush and PreCommit, from the engine's sink
	// goroutine.
	buf  []byte // encoded rows since the last PreCommit
	rows int

	// The commit side: Open, Commit and Close. mu serializes them (a
	// Commit runs concurrently with Write and PreCommit of the next
	// checkpoint, which do not touch what it guards).
	mu     sync.Mutex
	opened bool
	sc     scratch
}

var (
	_ connector.Sink[Row] = (*Sink)(nil)
	_ connector.Holder    = (*Sink)(nil)
)

// backend is one database's side of a sink.
type backend interface {
	// open connects and creates or checks the tables.
	open(ctx context.Context) error
	// apply writes rows in one transaction, with the marker m unless
	// m.checkpoint is 0; done reports that the marker was there already
	// (nothing was written). It decodes the rows a chunk at a time.
	apply(ctx context.Context, rows *rowSet, m marker) (done bool, err error)
	// classify marks err transient or permanent.
	classify(err error) error
	// refuses says why the database cannot store a row, for a reason of the
	// row's own (a value it does not take), or "".
	refuses(r *Row) string
	// handle is the database through database/sql, for reading rows back and
	// correcting them.
	handle() *sql.DB
	close() error
}

// marker is a commit marker: the checkpoint sink committed, and the run that
// pre-committed it.
type marker struct {
	sink       string
	checkpoint int64
	run        string
}

func newSink(s Schema, o Options) *Sink {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	k := &Sink{schema: s, opts: o, run: hex.EncodeToString(id[:])}
	k.name, k.marker = o.SinkName, o.SinkName
	if k.name == "" {
		k.name, k.marker = "table "+s.Table, s.Table
	}
	return k
}

func (s *Sink) log(msg string) {
	if s.opts.Log != nil {
		s.opts.Log(s.name + ": " + msg)
	}
}

func (s *Sink) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ce *connector.Error
	if errors.As(err, &ce) {
		return err
	}
	return &connector.Error{Connector: s.name, Op: op, Err: err}
}

// Guarantee implements connector.Sink: exactly once with checkpoints,
// idempotent without.
func (s *Sink) Guarantee() connector.Guarantee {
	if s.opts.Checkpointed {
		return connector.ExactlyOnce
	}
	return connector.Idempotent
}

// Rewrites implements connector.Rewriter: a run from the beginning writes
// the same rows again, and each keeps its highest revision (a delta its
// delta id), so the table stays as the first run left it.
func (s *Sink) Rewrites() bool { return true }

// Open implements connector.Sink: it connects and creates the tables that
// are absent, or checks those that exist (a mismatch is a permanent error
// naming the column). The pre-commits the job resumes with are only checked
// to decode: the engine commits them right after. Rows of later checkpoints
// (an older checkpoint restored) need nothing: the revision guard keeps
// the higher revision of a row, and delta ids make a delta's insert
// idempotent.
func (s *Sink) Open(ctx context.Context, r connector.Resume) error {
	if err := s.schema.check(s.dialect); err != nil {
		return s.wrap("open", connector.Permanent(err))
	}
	for _, pc := range r.Pending {
		if _, err := decodeHeader(pc.Data, &s.schema, s.opts.FormerValues); err != nil {
			return s.wrap("open", connector.Permanent(err))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.backend.open(ctx); err != nil {
		return s.wrap("open", s.backend.classify(err))
	}
	s.opened = true
	return nil
}

// Write implements connector.Sink: it checks and encodes the rows into the
// sink's buffer (it keeps nothing of items). Without checkpoints, a buffer
// of many rows is written first.
func (s *Sink) Write(ctx context.Context, items []Row) error {
	if !s.opts.Checkpointed && s.rows >= autoFlushRows {
		// Before the new rows, so that a Write retried after a failed
		// flush does not buffer them twice.
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	s.buf = s.rowBuf()
	start, n := len(s.buf), s.rows
	var refused []connector.RefusedItem
	for i := range items {
		if why := s.backend.refuses(&items[i]); why != "" {
			// One row the database cannot store must not stop the others.
			refused = append(refused, connector.RefusedItem{Index: i, Reason: fmt.Sprintf("%s: %s", s.name, why)})
			continue
		}
		var err error
		if s.buf, err = s.appendRow(s.buf, &items[i]); err != nil {
			s.buf, s.rows = s.buf[:start], n
			return s.wrap("write", connector.Permanent(err))
		}
		s.rows++
	}
	if refused != nil {
		return &connector.RefusedError{Items: refused}
	}
	return nil
}

// HeldBytes implements connector.Holder: the encoded rows since the last
// barrier (with checkpoints) or flush.
func (s *Sink) HeldBytes() int64 { return int64(len(s.buf)) }

// Flush implements connector.Sink. With checkpoints it does nothing (rows
// are written at Commit); without, it writes the rows buffered so far.
func (s *Sink) Flush(ctx context.Context) error {
	if s.opts.Checkpointed {
		return nil
	}
	return s.flush(ctx)
}

// flush commits the buffer without a checkpoint, and empties it once that
// worked (a failed flush is retried with the same rows).
func (s *Sink) flush(ctx context.Context) error {
	if s.rows == 0 {
		return nil
	}
	pre := s.encode()
	if err := s.commit(ctx, 0, pre, "flush"); err != nil {
		return err
	}
	s.buf, s.rows = s.buf[:headerRoom], 0
	return nil
}

// PreCommit implements connector.Sink: it returns the rows written since
// the last PreCommit, encoded: the buffer itself, which the checkpoint
// keeps; the next rows go to a new one.
func (s *Sink) PreCommit(ctx context.Context, checkpoint uint64) ([]byte, error) {
	pre := s.encode()
	s.buf, s.rows = nil, 0
	return pre, nil
}

// Commit implements connector.Sink: in one transaction, unless the marker of
// checkpoint says it was committed already, it writes the rows of pre (and,
// with checkpoints and a checkpoint other than 0, the marker). Run again for
// the same checkpoint and pre, it changes nothing.
func (s *Sink) Commit(ctx context.Context, checkpoint uint64, pre []byte) error {
	return s.commit(ctx, checkpoint, pre, "commit")
}

func (s *Sink) commit(ctx context.Context, checkpoint uint64, pre []byte, op string) error {
	if checkpoint > 1<<63-1 {
		return s.wrap(op, connector.Permanent(fmt.Errorf("checkpoint %d is out of range", checkpoint)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opened {
		return s.wrap(op, connector.Permanent(errors.New("the sink is not open")))
	}
	run, refs, to, err := s.sc.index(pre, &s.schema, s.opts.FormerValues, s.run)
	defer s.sc.release()
	if err != nil {
		return s.wrap(op, connector.Permanent(fmt.Errorf("the pre-committed rows of checkpoint %d do not decode: %w", checkpoint, err)))
	}
	if len(refs) == 0 {
		return nil
	}
	rows := &rowSet{pre: pre, refs: refs, sc: &s.sc, schema: &s.schema, to: to}
	if s.schema.Mode == Discarding {
		rows.deltas, rows.job = true, s.schema.Job
	} else {
		rows.refs = coalesce(pre, refs)
	}
	m := marker{sink: s.marker, run: run}
	if s.opts.Checkpointed {
		m.checkpoint = int64(checkpoint)
	}
	done, err := s.backend.apply(ctx, rows, m)
	if err != nil {
		return s.wrap(op, s.backend.classify(err))
	}
	if done {
		s.log(fmt.Sprintf("checkpoint %d was committed already (a commit run again after a restart): nothing to do", checkpoint))
	}
	return nil
}

// Close implements connector.Sink: it drops what was not pre-committed and
// closes the connection.
func (s *Sink) Close() error {
	s.buf, s.rows = nil, 0
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened = false
	if err := s.backend.close(); err != nil {
		return s.wrap("close", err)
	}
	return nil
}

// reserved are the columns the sink adds to the key and value columns.
var reserved = []string{"window_start", "window_end", "revision", "timing", "final", "status", "mode", "version", "updated_at", "delta_id"}

// check reports a schema that cannot make a table in d.
func (s *Schema) check(d *dialect) error {
	if s.Table == "" {
		return errors.New("no table name")
	}
	if s.Mode > Discarding {
		return fmt.Errorf("table %s: unknown mode %d", s.Table, s.Mode)
	}
	seen := map[string]bool{}
	for _, r := range reserved {
		seen[r] = true
	}
	for _, cs := range [][]Column{s.Keys, s.Values} {
		for _, c := range cs {
			switch {
			case c.Name == "":
				return fmt.Errorf("table %s: a column has no name", s.Table)
			case c.Type < Text || c.Type > Boolean:
				return fmt.Errorf("table %s: column %q has no type (%s)", s.Table, c.Name, c.Type)
			case seen[c.Name]:
				return fmt.Errorf("table %s: column %q is named twice, or takes the name of a column the sink adds", s.Table, c.Name)
			}
			seen[c.Name] = true
		}
	}
	if d.exact {
		for _, c := range s.Values {
			if e := ExactColumn(c.Name); c.Type == Numeric && seen[e] {
				return fmt.Errorf("table %s: column %q takes the name of the column that keeps the exact values of %q", s.Table, e, c.Name)
			}
		}
	}
	return nil
}
