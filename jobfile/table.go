package jobfile

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/internal/secret"
	"github.com/weirstream/weir/internal/text"
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
	s := t.Schema(j)
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
		return "", fmt.Errorf("the dsn is not a URL (postgres://user@host/db): %v", text.ErrorText(err))
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}

// Schema is the table a job's panes go to.
func (t *TableOutput) Schema(j *Job) table.Schema {
	s := table.Schema{Table: t.Table, Job: j.DisplayName()}
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
func (j *Job) DisplayName() string {
	if j.Name != "" {
		return j.Name
	}
	return strings.TrimSuffix(filepath.Base(j.File), filepath.Ext(j.File))
}
