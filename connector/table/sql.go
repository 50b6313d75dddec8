package table

import (
	"fmt"
	"slices"
	"strings"

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

	// For reading rows back and correcting them (corrections.go): text
	// and millis select a column as text and as a window bound (Unix
	// milliseconds, or text the reader parses); timeArg and boolArg are a
	// window bound's and a boolean's argument.
	text, millis func(col string) string
	timeArg      func(mtime.Time) any
	boolArg      func(bool) any
}

// column is a column the sink writes.
type column struct {
	name    string
	typ     ColumnType
	notNull bool
}

// columns lists the table's columns in the order the sink writes them:
// keys, values, window_start, window_end, revision, timing, final, status,
// version, updated_at, and in Discarding mode delta_id.
func (s *Schema) columns() []column {
	var cs []column
	for _, c := range s.Keys {
		cs = append(cs, column{c.Name, c.Type, true})
	}
	for _, c := range s.Values {
		cs = append(cs, column{c.Name, c.Type, false})
	}
	cs = append(cs,
		column{"window_start", timestamp, true}, column{"window_end", timestamp, true},
		column{"revision", Integer, true}, column{"timing", Text, true}, column{"final", Boolean, true},
		column{"status", Text, true}, column{"version", Integer, true}, column{"updated_at", timestamp, true})
	if s.Mode == Discarding {
		cs = append(cs, column{"delta_id", Text, true})
	}
	// reason is NULL in the rows the sink writes: a reconciliation (weir
	// reconcile) says there why it corrected a row.
	return append(cs, column{"reason", Text, false})
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

var markerColumns = []column{{"sink", Text, true}, {"checkpoint", Integer, true}, {"run", Text, true}, {"committed_at", timestamp, true}}

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
// higher (version, revision), or by a tombstone of the same one.
func upsertTail(s *Schema) string {
	if s.Mode == Discarding {
		return ` ON CONFLICT ("delta_id") DO NOTHING`
	}
	pk := s.primaryKey()
	var b strings.Builder
	fmt.Fprintf(&b, " ON CONFLICT (%s) DO UPDATE SET ", quoteAll(pk))
	first := true
	for _, c := range s.columns() {
		if slices.Contains(pk, c.name) {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		fmt.Fprintf(&b, "%s = excluded.%[1]s", quote(c.name))
	}
	// A reconciled row (a correction from a ledger) is replaced only by a
	// new version of the definitions: never by a pane of the stream, however
	// high its revision.
	b.WriteString(` WHERE excluded."version" > cur."version" OR (excluded."version" = cur."version" AND cur."status" <> 'reconciled'` +
		` AND (excluded."revision" > cur."revision" OR (excluded."status" = 'retracted' AND excluded."revision" = cur."revision")))`)
	return b.String()
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

// addColumns are the statements that add to an existing table the value
// columns named in add that it lacks.
func addColumns(d *dialect, table string, s *Schema, e existing, add []string) (stmts, names []string) {
	for _, c := range s.Values {
		if _, ok := e.cols[c.Name]; ok || !slices.Contains(add, c.Name) {
			continue
		}
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", quote(table), quote(c.Name), d.typeName(c.Type)))
		names = append(names, c.Name)
	}
	return stmts, names
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
