package table

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// markerTable is the table of commit markers.
const markerTable = "weir_commits"

// dialect is what differs in the SQL of the two databases.
type dialect struct {
	// typeName is a column type's name in a CREATE TABLE, and in errors.
	typeName func(ColumnType) string
	// compatible reports whether a column declared as decl can hold the
	// values of type t.
	compatible func(t ColumnType, decl string) bool
	// param is the placeholder of the i-th parameter (from 1).
	param func(i int) string
	// exact says that each Numeric value column c has a companion TEXT
	// column ExactColumn(c) holding its exact value (SQLite, whose NUMERIC
	// keeps 15 significant digits).
	exact bool

	// For reading rows back and correcting them (corrections.go): text
	// and millis select a column as text and as a window bound (Unix
	// milliseconds, or text the reader parses); value selects a value
	// column as text, exactly; arg is a value's argument, timeArg and
	// boolArg a window bound's and a boolean's.
	text, millis func(col string) string
	value        func(c Column) string
	arg          func(v *val) any
	timeArg      func(mtime.Time) any
	boolArg      func(bool) any
}

// ExactColumn is the name of the column that keeps, in SQLite, the exact
// value of the Numeric value column named name: name + "_exact". SQLite's
// NUMERIC keeps 15 significant digits; the companion, TEXT, keeps every
// digit (see Numeric).
func ExactColumn(name string) string { return name + "_exact" }

// column is a column the sink writes.
type column struct {
	name    string
	typ     ColumnType
	notNull bool
	// exactOf, in a companion column (dialect.exact), names the value
	// column whose exact text it holds.
	exactOf string
	// modeOf marks the mode column, which a table made by a weir that
	// wrote no mode lacks: the sink adds it (NULL in the rows before).
	modeOf bool
}

// columns lists the table's columns in the order the sink writes them:
// keys, values (each Numeric one followed by its exact companion where d
// keeps one), window_start, window_end, revision, timing, final, status,
// mode, version, updated_at, in Discarding mode delta_id, and reason.
func (s *Schema) columns(d *dialect) []column {
	var cs []column
	for _, c := range s.Keys {
		cs = append(cs, column{name: c.Name, typ: c.Type, notNull: true})
	}
	for _, c := range s.Values {
		cs = append(cs, column{name: c.Name, typ: c.Type})
		if d.exact && c.Type == Numeric {
			cs = append(cs, column{name: ExactColumn(c.Name), typ: Text, exactOf: c.Name})
		}
	}
	cs = append(cs,
		column{name: "window_start", typ: timestamp, notNull: true}, column{name: "window_end", typ: timestamp, notNull: true},
		column{name: "revision", typ: Integer, notNull: true}, column{name: "timing", typ: Text, notNull: true},
		column{name: "final", typ: Boolean, notNull: true}, column{name: "status", typ: Text, notNull: true},
		column{name: "mode", typ: Text, notNull: true, modeOf: true},
		column{name: "version", typ: Integer, notNull: true}, column{name: "updated_at", typ: timestamp, notNull: true})
	if s.Mode == Discarding {
		cs = append(cs, column{name: "delta_id", typ: Text, notNull: true})
	}
	// reason is NULL in the rows the sink writes: a reconciliation (weir
	// reconcile) says there why it corrected a row.
	return append(cs, column{name: "reason", typ: Text})
}

// primaryKey is the primary key of the table: keys, window_start and
// window_end; none in Discarding mode.
func (s *Schema) primaryKey() []string {
	if s.Mode == Discarding {
		return nil
	}
	var pk []string
	for _, c := range s.Keys {
		pk = append(pk, c.Name)
	}
	return append(pk, "window_start", "window_end")
}

var markerColumns = []column{{name: "sink", typ: Text, notNull: true}, {name: "checkpoint", typ: Integer, notNull: true},
	{name: "run", typ: Text, notNull: true}, {name: "committed_at", typ: timestamp, notNull: true}}

var markerKey = []string{"sink", "checkpoint"}

// quote quotes an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

func names(cs []column) []string {
	n := make([]string, len(cs))
	for i, c := range cs {
		n[i] = c.name
	}
	return n
}

// createTable is the CREATE TABLE IF NOT EXISTS of a table; suffix ends it
// (" WITHOUT ROWID").
func createTable(d *dialect, table string, cs []column, pk []string, unique string, suffix string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", quote(table))
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", quote(c.name), d.typeName(c.typ))
		if c.notNull {
			b.WriteString(" NOT NULL")
		}
		if c.name == unique {
			b.WriteString(" UNIQUE")
		}
	}
	if len(pk) > 0 {
		fmt.Fprintf(&b, ", PRIMARY KEY (%s)", quoteAll(pk))
	}
	b.WriteString(")")
	b.WriteString(suffix)
	return b.String()
}

// upsertTail is the ON CONFLICT clause of the rows' INSERT: in Discarding
// mode a delta written again is nothing; else the row is replaced by a
// higher (version, revision), or by a tombstone of the same one. cs are the
// columns the INSERT writes.
func upsertTail(s *Schema, cs []column) string {
	if s.Mode == Discarding {
		return ` ON CONFLICT ("delta_id") DO NOTHING`
	}
	pk := s.primaryKey()
	return fmt.Sprintf(" ON CONFLICT (%s) DO UPDATE SET %s WHERE %s", quoteAll(pk), assignments(cs, pk, "excluded"), replaces("excluded"))
}

// assignments is the SET list of an update of a row by the row named
// newer: every column of cs but the primary key's, from newer.
func assignments(cs []column, pk []string, newer string) string {
	var set []string
	for _, c := range cs {
		if !slices.Contains(pk, c.name) {
			set = append(set, fmt.Sprintf("%s = %s.%[1]s", quote(c.name), newer))
		}
	}
	return strings.Join(set, ", ")
}

// replaces is the revision guard: the condition under which the row named
// newer replaces the row cur of its key. A row is replaced by a higher
// (version, revision), or by a tombstone of the same one; a reconciled row
// (a correction from a ledger) only by a new version of the definitions:
// never by a pane of the stream, however high its revision.
func replaces(newer string) string {
	return fmt.Sprintf(`%[1]s."version" > cur."version" OR (%[1]s."version" = cur."version" AND cur."status" <> 'reconciled'`+
		` AND (%[1]s."revision" > cur."revision" OR (%[1]s."status" = 'retracted' AND %[1]s."revision" = cur."revision")))`, newer)
}

// keepMarkers is how many checkpoints back a sink's commit markers are
// kept: every pruneEvery checkpoints, the commit deletes the sink's older
// ones. A commit run again without its marker (a savepoint older than that
// restored) writes nothing new: the revision guard and the deltas' ids keep
// the rows as they are.
const (
	keepMarkers = 1000
	pruneEvery  = 64
)

// pruneMarkersSQL deletes a sink's markers before a checkpoint.
func pruneMarkersSQL(d *dialect) string {
	return fmt.Sprintf(`DELETE FROM %s WHERE "sink" = %s AND "checkpoint" < %s`, quote(markerTable), d.param(1), d.param(2))
}

// markerSQL inserts a commit marker, or takes over the marker of the same
// checkpoint number left by another run (a job started afresh numbers its
// checkpoints from 1 again). It affects no row when the marker of this run
// is there: the checkpoint was committed.
func markerSQL(d *dialect) string {
	return fmt.Sprintf(`INSERT INTO %s AS cur ("sink", "checkpoint", "run", "committed_at") VALUES (%s, %s, %s, %s)`+
		` ON CONFLICT ("sink", "checkpoint") DO UPDATE SET "run" = excluded."run", "committed_at" = excluded."committed_at"`+
		` WHERE cur."run" <> excluded."run"`, quote(markerTable), d.param(1), d.param(2), d.param(3), d.param(4))
}

// missingColumns splits cs into the columns a table that exists (e) lacks
// and that the sink adds to it, and the rest, which it must have: the value
// columns named in add (aggregates added to a job since the checkpoint it
// resumes from) with their exact companions, and the exact companions and
// the mode of a table made by a weir that kept none.
func missingColumns(cs []column, e existing, add []string) (missing, rest []column) {
	rest = make([]column, 0, len(cs))
	for _, c := range cs {
		_, ok := e.cols[c.name]
		if !ok && (c.exactOf != "" || c.modeOf || slices.Contains(add, c.name)) {
			missing = append(missing, c)
			continue
		}
		rest = append(rest, c)
	}
	return missing, rest
}

// addMissing adds to the table e, which exists, the columns it lacks that
// the sink may add (missingColumns, with add), once it has checked the table has all
// the others, and says so for each; it returns the table as it is then. The
// rows already there hold NULL in them. where names the database in the
// lines it logs (" in PATH", or nothing); exec runs a statement and reread
// reads the table again.
func (s *Sink) addMissing(ctx context.Context, d *dialect, table string, cs []column, pk []string, unique string, add []string, e existing, where string,
	exec func(context.Context, string) error, reread func(context.Context, string) (existing, error)) (existing, error) {
	missing, rest := missingColumns(cs, e, add)
	if len(missing) == 0 {
		return e, nil
	}
	if err := checkTable(d, table, rest, pk, unique, e); err != nil {
		return e, connector.Permanent(err)
	}
	for _, c := range missing {
		q := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", quote(table), quote(c.name), d.typeName(c.typ))
		if err := exec(ctx, q); err != nil {
			// Another sink may have added it since.
			if again, rerr := reread(ctx, table); rerr == nil {
				if _, ok := again.cols[c.name]; ok {
					continue
				}
			}
			return e, fmt.Errorf("adding column %s to table %s%s (%s, or add it yourself): %w", c.name, table, where, q, err)
		}
		if c.modeOf {
			s.log(fmt.Sprintf("added column %s to table %s%s: it says of each row whether its values are totals or deltas (the rows written before have none)", c.name, table, where))
			continue
		}
		if c.exactOf != "" && !slices.Contains(add, c.exactOf) {
			s.log(fmt.Sprintf("added column %s to table %s%s: it keeps the exact values of %s, whose NUMERIC keeps 15 significant digits (the rows written before have none, and read as %[4]s holds them)",
				c.name, table, where, c.exactOf))
			continue
		}
		of := c.name
		if c.exactOf != "" {
			of = c.exactOf
		}
		s.log(fmt.Sprintf("added column %s to table %s%s: the aggregate %s was added to the job since its checkpoint (the rows written before have none)", c.name, table, where, of))
	}
	return reread(ctx, table)
}

// existing is what a database says of a table that exists.
type existing struct {
	cols   map[string]string // name: declared type
	pk     []string
	unique map[string]bool // columns with a unique index of their own
}

// checkTable reports the first difference between a table as it exists and
// what the sink writes, in one line naming the column.
func checkTable(d *dialect, table string, cs []column, pk []string, unique string, e existing) error {
	for _, c := range cs {
		decl, ok := e.cols[c.name]
		if !ok {
			return fmt.Errorf("table %s: no column %q", table, c.name)
		}
		if !d.compatible(c.typ, decl) {
			if decl == "" {
				decl = "untyped"
			}
			return fmt.Errorf("table %s: column %q is %s, expected %s", table, c.name, decl, d.typeName(c.typ))
		}
	}
	if len(pk) == 0 && len(e.pk) > 0 && !(len(e.pk) == 1 && e.pk[0] == unique) {
		// An append table with another key would refuse deltas.
		return fmt.Errorf("table %s: primary key is (%s), expected none (an append table of deltas)", table, strings.Join(e.pk, ", "))
	}
	if len(pk) > 0 && !sameSet(pk, e.pk) {
		if len(e.pk) == 0 {
			return fmt.Errorf("table %s: no primary key, expected (%s)", table, strings.Join(pk, ", "))
		}
		return fmt.Errorf("table %s: primary key is (%s), expected (%s)", table, strings.Join(e.pk, ", "), strings.Join(pk, ", "))
	}
	if unique != "" && !e.unique[unique] {
		return fmt.Errorf("table %s: column %q has no UNIQUE constraint of its own", table, unique)
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
