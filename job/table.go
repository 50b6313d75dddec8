package job

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/internal/secret"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/vfs"
	"github.com/weirstream/weir/window"
)

// identRE is a column or table name weir creates: lower-case, so that
// PostgreSQL and SQLite spell it alike and no query needs quotes.
var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// tableOutput reads {sqlite: {path, table, key_column}} or {postgres: {dsn,
// password, table, key_column}}.
func (p *parser) tableOutput(m *node, field, driver string, o *Output) error {
	k, err := m.sub(driver)
	if err != nil {
		return err
	}
	where := "path"
	if driver == "postgres" {
		where = "dsn"
	}
	known := sqliteShape
	if driver == "postgres" {
		known = postgresShape
	}
	if err := k.strict(known.names()...); err != nil {
		return err
	}
	t := &TableOutput{Driver: driver}
	w, wn, err := k.str(where)
	if err != nil {
		return err
	}
	if w == "" {
		if driver == "sqlite" {
			return k.errf(wn, field+".sqlite.path", "missing: the database file, e.g. path: results.db")
		}
		return k.errf(wn, field+".postgres.dsn", "missing: the connection string, e.g. dsn: postgres://weir@localhost/metrics (${NAME} reads NAME from the environment)")
	}
	if driver == "sqlite" {
		t.Path = p.resolve(w)
	} else {
		pw, pn, err := k.str("password")
		if err != nil {
			return err
		}
		if t.DSN, err = withPassword(w, pw, pn != nil); err != nil {
			return k.errf(pn, field+".postgres.password", "%v", err)
		}
		if err := table.CheckDSN(t.DSN); err != nil {
			return k.errf(wn, field+".postgres.dsn", "%v", err)
		}
	}
	name, tn, err := k.str("table")
	if err != nil {
		return err
	}
	if name == "" {
		return k.errf(tn, field+"."+driver+".table", "missing: the table's name, e.g. table: alerts")
	}
	if !identRE.MatchString(name) || strings.HasPrefix(name, "weir_") {
		return k.errf(tn, field+"."+driver+".table", "expected a lower-case name of letters, digits and _ (not starting with weir_), got %q", name)
	}
	t.Table = name
	kc, kn, err := k.str("key_column")
	if err != nil {
		return err
	}
	if kc != "" && !identRE.MatchString(kc) {
		return k.errf(kn, field+"."+driver+".key_column", "expected a lower-case name of letters, digits and _, got %q", kc)
	}
	t.KeyColumn = kc
	o.Table = t
	return nil
}

// withPassword puts a postgres output's password (given) into its
// connection string, URL or key=value: written apart, it needs no escaping.
func withPassword(dsn, password string, given bool) (string, error) {
	if !given {
		return dsn, nil
	}
	if len(secret.DSNSecrets(dsn)) > 0 {
		return "", fmt.Errorf("the dsn has a password already: give it in one place")
	}
	if !strings.Contains(dsn, "://") {
		return dsn + " password=" + secret.QuoteValue(password), nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("the dsn is not a URL (postgres://user@host/db): %v", errText(err))
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}

// checkTables checks, once the key and aggregates are known, that each
// table's columns can be named as the job's fields are.
func (p *parser) checkTables(j *Job) error {
	for i := range j.Outputs {
		o := &j.Outputs[i]
		t := o.Table
		if t == nil {
			continue
		}
		field := o.Field + "." + t.Driver
		if j.KeyParts != nil {
			if t.KeyColumn != "" {
				return &Error{File: p.file, Line: o.Line, Field: field + ".key_column",
					Msg: "a composite key's columns are named by its fields: leave key_column out"}
			}
			t.KeyColumns = nil
			for _, k := range j.KeyParts {
				c := strings.ReplaceAll(k.String(), ".", "_")
				if !identRE.MatchString(c) || reserved[c] {
					return &Error{File: p.file, Line: j.lines["key"], Field: "key",
						Msg: fmt.Sprintf("%s is written to table %s as the column %q, which is not a column it can have (lower-case letters, digits and _, not one weir adds)", k, t.Table, c)}
				}
				if slices.Contains(t.KeyColumns, c) {
					return &Error{File: p.file, Line: j.lines["key"], Field: "key",
						Msg: fmt.Sprintf("two of the key's fields are written to table %s as the column %q: rename one with fields:", t.Table, c)}
				}
				for _, a := range j.Aggregates {
					if a.Name == c {
						return &Error{File: p.file, Line: j.lines["aggregates"], Field: "aggregates." + a.Name,
							Msg: fmt.Sprintf("is also a column of the key in table %s: rename it", t.Table)}
					}
				}
				t.KeyColumns = append(t.KeyColumns, c)
			}
		}
		if t.KeyColumn == "" && j.Key != nil {
			t.KeyColumn = strings.ReplaceAll(j.Key.String(), ".", "_")
			if !identRE.MatchString(t.KeyColumn) {
				return &Error{File: p.file, Line: o.Line, Field: field + ".key_column",
					Msg: fmt.Sprintf("the key %q is not a column name (lower-case letters, digits and _): name its column, e.g. key_column: %s", j.Key, "card")}
			}
		}
		if t.KeyColumn != "" && !j.Keyed() {
			return &Error{File: p.file, Line: o.Line, Field: field + ".key_column", Msg: "the job has no key"}
		}
		for _, a := range j.Aggregates {
			if !identRE.MatchString(a.Name) {
				return &Error{File: p.file, Line: j.lines["aggregates"], Field: "aggregates." + a.Name,
					Msg: fmt.Sprintf("is written to table %s: its name must be lower-case letters, digits and _", t.Table)}
			}
			if a.Name == t.KeyColumn {
				return &Error{File: p.file, Line: j.lines["aggregates"], Field: "aggregates." + a.Name,
					Msg: fmt.Sprintf("is also the key's column in table %s: rename one, or set %s.key_column", t.Table, field)}
			}
		}
		if reserved[t.KeyColumn] {
			return &Error{File: p.file, Line: o.Line, Field: field + ".key_column",
				Msg: fmt.Sprintf("%q is a column weir adds to the table: name the key's column, e.g. key_column: %s_key", t.KeyColumn, t.KeyColumn)}
		}
		if t.Driver == "sqlite" {
			if err := p.checkExactColumns(j, t, field, o.Line); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkExactColumns refuses an aggregate or key column named as the column
// in which SQLite keeps another aggregate's exact value (x_exact beside a sum
// x: table.ExactColumn); line is the output's.
func (p *parser) checkExactColumns(j *Job, t *TableOutput, field string, line int) error {
	s := t.schema(j)
	for _, c := range s.Values {
		if c.Type != table.Numeric {
			continue
		}
		e := table.ExactColumn(c.Name)
		if e == t.KeyColumn {
			return &Error{File: p.file, Line: line, Field: field + ".key_column",
				Msg: fmt.Sprintf("%q is the column that keeps the exact values of aggregate %s in SQLite table %s: name the key's column otherwise", e, c.Name, t.Table)}
		}
		for _, a := range j.Aggregates {
			if a.Name == e {
				return &Error{File: p.file, Line: j.lines["aggregates"], Field: "aggregates." + e,
					Msg: fmt.Sprintf("is the name of the column that keeps the exact values of aggregate %s in SQLite table %s: rename one", c.Name, t.Table)}
			}
		}
	}
	return nil
}

// schema is the table a job's panes go to.
func (t *TableOutput) schema(j *Job) table.Schema {
	s := table.Schema{Table: t.Table, Job: jobName(j)}
	if j.Key != nil {
		s.Keys = []table.Column{{Name: t.KeyColumn, Type: table.Text}}
	}
	for _, c := range t.KeyColumns {
		s.Keys = append(s.Keys, table.Column{Name: c, Type: table.Text})
	}
	for _, a := range j.Aggregates {
		c := table.Column{Name: a.Name, Type: table.Numeric}
		switch a.Kind {
		case AggCount, AggCountField, AggCountDistinct, AggApproxDistinct:
			c.Type = table.Integer
		case AggAvg, AggPercentile, AggMedian:
			c.Type = table.Real
		case AggFirst, AggLast, AggHistogram, AggTop:
			// first and last as a key is written (TableKeyText), a
			// histogram's object and a top's array as JSON text.
			c.Type = table.Text
		}
		s.Values = append(s.Values, c)
	}
	switch j.Window.Mode {
	case window.Retracting:
		s.Mode = table.Retracting
	case window.Discarding:
		s.Mode = table.Discarding
	default:
		s.Mode = table.Accumulating
	}
	return s
}

// jobName is the job's name, or its file's.
func jobName(j *Job) string {
	if j.Name != "" {
		return j.Name
	}
	return strings.TrimSuffix(filepath.Base(j.File), filepath.Ext(j.File))
}

// tableSink writes panes to a table: it turns each pane into a table.Row
// and leaves the rest to the table connector.
type tableSink struct {
	*table.Sink
	j    *Job
	o    *Output
	rows []table.Row
	anys []any // the rows' keys and values, reused from Write to Write
}

// newTableSink makes the sink of a table output; added names the
// aggregates added since the checkpoint the job resumes from, whose
// columns a table made before lacks; former the aggregates at that
// checkpoint, when they differ (table.Options.FormerValues).
func newTableSink(j *Job, o *Output, checkpointed bool, added, former []string, log func(string)) *tableSink {
	t := o.Table
	opts := table.Options{Checkpointed: checkpointed, SinkName: jobName(j) + "/" + o.Field, Log: log, AddColumns: added, FormerValues: former}
	s := &tableSink{j: j, o: o}
	if t.Driver == "sqlite" {
		s.Sink = table.SQLite(t.Path, t.schema(j), opts)
	} else {
		s.Sink = table.Postgres(t.DSN, t.schema(j), opts)
	}
	return s
}

// Open implements connector.Sink. An SQLite database weir creates is its
// owner's alone, or has the job's file_mode: the file is made before
// SQLite opens it (SQLite gives its journal and WAL the database's mode).
func (s *tableSink) Open(ctx context.Context, restored connector.Resume) error {
	if t := s.o.Table; t.Driver == "sqlite" {
		mode := s.j.FileMode
		if mode == 0 {
			mode = vfs.FileMode
		}
		if f, err := os.OpenFile(t.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode); err == nil {
			err = f.Chmod(mode) // whatever the umask
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		} else if !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return s.Sink.Open(ctx, restored)
}

// Write implements connector.Sink.
func (s *tableSink) Write(ctx context.Context, items []pane) error {
	nk := len(s.j.keyFields())
	per := nk + len(s.j.Aggregates)
	s.rows = s.rows[:0]
	if need := per * len(items); cap(s.anys) < need {
		s.anys = make([]any, need)
	}
	anys := s.anys[:per*len(items)]
	for i := range items {
		p := &items[i]
		vals := anys[i*per : (i+1)*per : (i+1)*per]
		switch {
		case s.j.KeyParts != nil:
			for k, v := range splitKey(p.Key) {
				vals[k] = TableKeyText(v)
			}
		case nk == 1:
			vals[0] = TableKeyText(p.Key)
		}
		for k, v := range p.Value {
			vals[nk+k] = tableValue(v)
		}
		r := table.Row{
			Key: vals[:nk], Values: vals[nk:],
			WindowStart: p.Window.Start, WindowEnd: p.Window.End,
			Revision: int64(p.Revision), Timing: p.Timing.String(), Final: p.Final, Retract: p.Retract,
			Version: s.j.Version, EmittedAt: p.EmittedAt, // the status follows from Final and Retract
		}
		if p.Window.IsGlobal() {
			r.WindowEnd = mtime.MaxTime
		}
		s.rows = append(s.rows, r)
	}
	err := s.Sink.Write(ctx, s.rows)
	clear(anys)
	return err
}

// tableValue is a pane's value as the table connector takes it.
func tableValue(v outVal) any {
	switch v.kind {
	case vInt:
		return v.i
	case vFloat:
		return v.f
	case vDec:
		return table.Decimal{Unscaled: v.i, Scale: v.scale}
	case vJSON:
		return TableValueText(v.js)
	}
	return nil
}

// TableValueText is how a value that is JSON text (first, last, histogram,
// top; see Aggregate.JSONValued) is written to a table's TEXT column: as a
// key is (TableKeyText), so that first(card) holds card_7 as the key column
// does, and 12.5 for a number; an object or an array as its JSON text.
func TableValueText(js string) string { return TableKeyText(js) }

// TableSink is a sink on the table of output o (which must be a table), as
// the job writes it, not opened: weir reconcile reads the table's rows back
// through it and publishes corrections.
func (j *Job) TableSink(o *Output, log func(string)) *table.Sink {
	return newTableSink(j, o, false, nil, nil, log).Sink
}
