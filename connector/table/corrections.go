package table

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// StatusReconciled is the status of a row a correction published: its
// values were recomputed from a retained ledger. The stream never replaces
// such a row (only a new version of the definitions does); a later
// correction does, conditionally on the row it read.
const StatusReconciled = "reconciled"

// Stored is a row as a table holds it, read back.
type Stored struct {
	// Key holds the key values as text, in the order of Schema.Keys.
	Key                    []string
	WindowStart, WindowEnd mtime.Time
	Revision, Version      int64
	Timing, Status         string
	Final                  bool
	// Values holds each value column as text, exactly as it was written
	// ("473.5", "12345678901234567.89", "12"; in SQLite a Numeric column's
	// exact companion, see Numeric); Valid is false for NULL.
	Values []sql.NullString
	Reason sql.NullString
}

// Correction is a reconciled row: the values of one key and window, to be
// published only if the row is still as Base was read (Base nil: only if
// there is still no row).
type Correction struct {
	Base                   *Stored
	Key                    []any // as Row.Key
	WindowStart, WindowEnd mtime.Time
	Values                 []any // as Row.Values
	// Revision is the correction's revision (the base's plus one); Version
	// the definitions it was computed with; Timing what the row says of
	// its timing.
	Revision, Version int64
	Timing            string
	Reason            string
	At                mtime.Time // updated_at
}

// Read returns the rows whose window starts in [from, to), ordered by key
// and window. The sink must be open; Read suits upsert tables (not
// Discarding mode).
func (s *Sink) Read(ctx context.Context, from, to mtime.Time) ([]Stored, error) {
	if s.schema.Mode == Discarding {
		return nil, fmt.Errorf("table %s is a log of deltas: it has no row per window to read", s.schema.Table)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opened {
		return nil, errors.New("the sink is not open")
	}
	sc := &s.schema
	d, q := s.dialect, s.backend.handle()
	var cols []string
	for _, c := range sc.Keys {
		cols = append(cols, d.text(quote(c.Name)))
	}
	cols = append(cols, d.millis(`"window_start"`), d.millis(`"window_end"`), `"revision"`, `"version"`, `"timing"`, `"status"`, `"final"`, `"reason"`)
	for _, c := range sc.Values {
		cols = append(cols, d.value(c))
	}
	order := quoteAll(sc.primaryKey())
	query := fmt.Sprintf(`SELECT %s FROM %s WHERE "window_start" >= %s AND "window_start" < %s ORDER BY %s`,
		strings.Join(cols, ", "), quote(sc.Table), d.param(1), d.param(2), order)
	rows, err := q.QueryContext(ctx, query, d.timeArg(from), d.timeArg(to))
	if err != nil {
		return nil, s.wrap("read", err)
	}
	defer rows.Close()
	var out []Stored
	for rows.Next() {
		r := Stored{Key: make([]string, len(sc.Keys)), Values: make([]sql.NullString, len(sc.Values))}
		var ws, we any
		dest := make([]any, 0, len(cols))
		for i := range r.Key {
			dest = append(dest, &r.Key[i])
		}
		dest = append(dest, &ws, &we, &r.Revision, &r.Version, &r.Timing, &r.Status, &r.Final, &r.Reason)
		for i := range r.Values {
			dest = append(dest, &r.Values[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, s.wrap("read", err)
		}
		if r.WindowStart, err = asTime(ws); err == nil {
			r.WindowEnd, err = asTime(we)
		}
		if err != nil {
			return nil, s.wrap("read", fmt.Errorf("table %s: a window bound: %w", sc.Table, err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("read", err)
	}
	return out, nil
}

// asTime reads a window bound: Unix milliseconds (PostgreSQL), or the RFC
// 3339 text SQLite keeps.
func asTime(v any) (mtime.Time, error) {
	switch v := v.(type) {
	case int64:
		return mtime.Time(v), nil
	case string:
		return mtime.Parse([]byte(v))
	case []byte:
		return mtime.Parse(v)
	}
	return 0, fmt.Errorf("unexpected %T", v)
}

// Correct publishes the corrections in one transaction, each on condition
// that its row is still as its Base was read: applied[i] is false when the
// row changed since (a pane of the stream, or another correction, came
// first), and nothing was written for it.
func (s *Sink) Correct(ctx context.Context, cs []Correction) (applied []bool, err error) {
	sc := &s.schema
	if sc.Mode == Discarding {
		return nil, fmt.Errorf("table %s is a log of deltas: corrections need a row per window", sc.Table)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opened {
		return nil, errors.New("the sink is not open")
	}
	d, db := s.dialect, s.backend.handle()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.wrap("correct", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	applied = make([]bool, len(cs))
	for i := range cs {
		c := &cs[i]
		if len(c.Key) != len(sc.Keys) || len(c.Values) != len(sc.Values) {
			return nil, fmt.Errorf("table %s: a correction has %d key values and %d values, the table %d and %d", sc.Table, len(c.Key), len(c.Values), len(sc.Keys), len(sc.Values))
		}
		var q string
		var args []any
		if c.Base == nil {
			q, args, err = s.insertCorrection(d, c)
		} else {
			q, args, err = s.updateCorrection(d, c)
		}
		if err != nil {
			return nil, s.wrap("correct", err)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return nil, s.wrap("correct", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, s.wrap("correct", err)
		}
		applied[i] = n == 1
	}
	if err := tx.Commit(); err != nil {
		return nil, s.wrap("correct", err)
	}
	return applied, nil
}

// args is an argument list with its placeholders.
type args struct {
	d    *dialect
	list []any
}

func (a *args) add(v any) string {
	a.list = append(a.list, v)
	return a.d.param(len(a.list))
}

// values converts a correction's values as Write converts a row's, and
// returns the value columns and what each is set to: the value cast to the
// column's type, and its exact text in the companion where d keeps one.
func (s *Sink) values(d *dialect, a *args, c *Correction) (cols, exprs []string, err error) {
	var b []byte
	for i, col := range s.schema.Values {
		if b, err = appendValue(b[:0], c.Values[i], col, false); err != nil {
			return nil, nil, fmt.Errorf("table %s: a correction: %w", s.schema.Table, err)
		}
		var v val
		decodeValue(enc.NewDecoder(b), &v)
		cols = append(cols, quote(col.Name))
		exprs = append(exprs, fmt.Sprintf("CAST(%s AS %s)", a.add(d.arg(&v)), d.typeName(col.Type)))
		if d.exact && col.Type == Numeric {
			cols = append(cols, quote(ExactColumn(col.Name)))
			exprs = append(exprs, a.add(exactText(&v)))
		}
	}
	return cols, exprs, nil
}

func (s *Sink) insertCorrection(d *dialect, c *Correction) (string, []any, error) {
	sc := &s.schema
	a := &args{d: d}
	var cols, vals []string
	for i, k := range sc.Keys {
		cols = append(cols, quote(k.Name))
		vals = append(vals, a.add(c.Key[i]))
	}
	vcols, vexprs, err := s.values(d, a, c)
	if err != nil {
		return "", nil, err
	}
	cols, vals = append(cols, vcols...), append(vals, vexprs...)
	cols = append(cols, `"window_start"`, `"window_end"`, `"revision"`, `"timing"`, `"final"`, `"status"`, `"mode"`, `"version"`, `"updated_at"`, `"reason"`)
	vals = append(vals, a.add(d.timeArg(c.WindowStart)), a.add(d.timeArg(c.WindowEnd)), a.add(c.Revision), a.add(c.Timing),
		a.add(d.boolArg(true)), a.add(StatusReconciled), a.add(sc.Mode.String()), a.add(c.Version), a.add(d.timeArg(c.At)), a.add(c.Reason))
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO NOTHING", quote(sc.Table), strings.Join(cols, ", "), strings.Join(vals, ", "), quoteAll(sc.primaryKey()))
	return q, a.list, nil
}

func (s *Sink) updateCorrection(d *dialect, c *Correction) (string, []any, error) {
	sc := &s.schema
	a := &args{d: d}
	var set []string
	cols, exprs, err := s.values(d, a, c)
	if err != nil {
		return "", nil, err
	}
	for i, col := range cols {
		set = append(set, col+" = "+exprs[i])
	}
	set = append(set, `"revision" = `+a.add(c.Revision), `"timing" = `+a.add(c.Timing), `"final" = `+a.add(d.boolArg(true)),
		`"status" = `+a.add(StatusReconciled), `"mode" = `+a.add(sc.Mode.String()), `"version" = `+a.add(c.Version), `"updated_at" = `+a.add(d.timeArg(c.At)), `"reason" = `+a.add(c.Reason))
	var where []string
	for i, k := range sc.Keys {
		where = append(where, quote(k.Name)+" = "+a.add(c.Key[i]))
	}
	b := c.Base
	where = append(where, `"window_start" = `+a.add(d.timeArg(c.WindowStart)), `"window_end" = `+a.add(d.timeArg(c.WindowEnd)),
		`"version" = `+a.add(b.Version), `"revision" = `+a.add(b.Revision), `"status" = `+a.add(b.Status))
	q := fmt.Sprintf("UPDATE %s SET %s WHERE %s", quote(sc.Table), strings.Join(set, ", "), strings.Join(where, " AND "))
	return q, a.list, nil
}
