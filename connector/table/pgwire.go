package table

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/mtime"
)

// A commit's rows travel to PostgreSQL as the parameters of one statement
// per chunk of rows: an array per column in the binary format (nothing for
// the server to parse), unnested side by side in the select list of an
// INSERT ... SELECT (set-returning functions there run in step, one row at a
// time; in FROM, each would fill a tuplestore first).

// Object ids of the types of the arrays' elements, and of the arrays.
const (
	oidBool        = 16
	oidInt8        = 20
	oidText        = 25
	oidFloat8      = 701
	oidTimestamptz = 1184

	oidBoolArray        = 1000
	oidTextArray        = 1009
	oidInt8Array        = 1016
	oidFloat8Array      = 1022
	oidTimestamptzArray = 1185
)

// pgEpoch is PostgreSQL's epoch for timestamps, 2000-01-01, in Unix
// milliseconds.
const pgEpoch = 946_684_800_000

// pgField is where a column's values come from in a row.
type pgField uint8

const (
	fieldValue pgField = iota // a key or a value: prow.vals[pgColumn.index]
	fieldWindowStart
	fieldWindowEnd
	fieldRevision
	fieldTiming
	fieldFinal
	fieldStatus
	fieldVersion
	fieldUpdatedAt
	fieldDeltaID
)

// pgFields are the columns the sink adds, by name.
var pgFields = map[string]pgField{
	"window_start": fieldWindowStart, "window_end": fieldWindowEnd, "revision": fieldRevision,
	"timing": fieldTiming, "final": fieldFinal, "status": fieldStatus, "version": fieldVersion,
	"updated_at": fieldUpdatedAt, "delta_id": fieldDeltaID,
}

// pgColumn is a column the upsert sends an array for.
type pgColumn struct {
	field pgField
	typ   ColumnType
	index int // fieldValue: the index in prow.vals
}

// pgColumns are the columns of s the upsert sends, in the order of
// s.columns: all but mode, the same in every row, and reason, which the
// rows leave NULL.
func pgColumns(s *Schema) []pgColumn {
	var pc []pgColumn
	nv := len(s.Keys) + len(s.Values)
	for i, c := range s.columns(pgDialect) {
		if i < nv {
			pc = append(pc, pgColumn{field: fieldValue, typ: c.typ, index: i})
		} else if f, ok := pgFields[c.name]; ok {
			pc = append(pc, pgColumn{field: f, typ: c.typ})
		}
	}
	return pc
}

// pgUpsertSQL is the statement that upserts a chunk of rows into the table
// of s: its parameters are the arrays of pgColumns(s), in order.
func pgUpsertSQL(s *Schema) string {
	cs := s.columns(pgDialect)
	return fmt.Sprintf("INSERT INTO %s AS cur (%s) SELECT %s%s", quote(s.Table), quoteAll(names(cs)),
		strings.Join(pgSelect(s), ", "), upsertTail(s, cs))
}

// pgSelect is the select list of the upsert's rows, a value for each of
// s.columns: the arrays of pgColumns(s) unnested, the mode as a literal,
// and NULL for reason (the last column).
func pgSelect(s *Schema) []string {
	var sel []string
	pc := pgColumns(s)
	k := 0 // the next array
	for _, c := range s.columns(pgDialect) {
		switch {
		case c.modeOf:
			sel = append(sel, "'"+s.Mode.String()+"'::text")
		case k < len(pc):
			v := "unnest($" + strconv.Itoa(k+1) + "::" + pgElementType(pc[k].typ) + "[])"
			if pc[k].typ == Numeric {
				v += "::numeric" // sent as text, exactly
			}
			sel = append(sel, v)
			k++
		default:
			sel = append(sel, "NULL") // reason
		}
	}
	return sel
}

// pgMergeSQL is pgUpsertSQL as one MERGE (PostgreSQL 15 and later), for
// the modes that replace rows: the same arrays, joined to the table by its
// primary key, each row updated under the revision guard or inserted. A
// commit took about a tenth less time with it than with INSERT ... ON
// CONFLICT DO UPDATE, which looks for each row's conflict before it
// inserts (weir bench, upsert-postgres). Unlike
// it, a MERGE whose insert meets a key another transaction inserted since
// it looked fails (unique_violation): the commit is then made again with
// pgUpsertSQL (pgBackend.apply).
func pgMergeSQL(s *Schema) string {
	cs := s.columns(pgDialect)
	pk := s.primaryKey()
	sel := pgSelect(s)
	var vals, on []string
	for i, c := range cs {
		sel[i] += " AS " + quote(c.name)
		vals = append(vals, "src."+quote(c.name))
		if slices.Contains(pk, c.name) {
			on = append(on, "cur."+quote(c.name)+" = src."+quote(c.name))
		}
	}
	return fmt.Sprintf("MERGE INTO %s AS cur USING (SELECT %s) AS src ON %s WHEN MATCHED AND (%s) THEN UPDATE SET %s WHEN NOT MATCHED THEN INSERT (%s) VALUES (%s)",
		quote(s.Table), strings.Join(sel, ", "), strings.Join(on, " AND "), replaces("src"),
		assignments(cs, pk, "src"), quoteAll(names(cs)), strings.Join(vals, ", "))
}

// pgElementType is the SQL type of the elements a column of type t travels
// in: a Numeric one as text.
func pgElementType(t ColumnType) string {
	switch t {
	case Integer:
		return "bigint"
	case Real:
		return "double precision"
	case Boolean:
		return "boolean"
	case timestamp:
		return "timestamptz"
	}
	return "text"
}

// elementOID is the object id of pgElementType(t).
func elementOID(t ColumnType) uint32 {
	switch t {
	case Integer:
		return oidInt8
	case Real:
		return oidFloat8
	case Boolean:
		return oidBool
	case timestamp:
		return oidTimestamptz
	}
	return oidText
}

// arrayOID is the object id of the array a column of type t travels in.
func arrayOID(t ColumnType) uint32 {
	switch t {
	case Integer:
		return oidInt8Array
	case Real:
		return oidFloat8Array
	case Boolean:
		return oidBoolArray
	case timestamp:
		return oidTimestamptzArray
	}
	return oidTextArray
}

// appendArray appends column c of rows as a one-dimensional array in
// PostgreSQL's binary format.
func appendArray(b []byte, rows []prow, c pgColumn) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0) // has nulls: set below
	b = binary.BigEndian.AppendUint32(b, elementOID(c.typ))
	b = binary.BigEndian.AppendUint32(b, uint32(len(rows)))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	nulls := false
	for i := range rows {
		var null bool
		b, null = appendElement(b, &rows[i], c)
		nulls = nulls || null
	}
	if nulls {
		binary.BigEndian.PutUint32(b[start+4:], 1)
	}
	return b
}

// appendElement appends column c of r as an array element: its length and
// bytes, or the length -1 for NULL.
func appendElement(b []byte, r *prow, c pgColumn) (_ []byte, null bool) {
	switch c.field {
	case fieldValue:
		return appendValueElement(b, &r.vals[c.index], c.typ)
	case fieldWindowStart:
		return appendTimeElement(b, r.ws), false
	case fieldWindowEnd:
		return appendTimeElement(b, r.we), false
	case fieldRevision:
		return appendInt8Element(b, r.revision), false
	case fieldTiming:
		return appendTextElement(b, r.timingText()), false
	case fieldFinal:
		return appendBoolElement(b, r.final), false
	case fieldStatus:
		return appendTextElement(b, r.statusText()), false
	case fieldVersion:
		return appendInt8Element(b, r.version), false
	case fieldUpdatedAt:
		return appendTimeElement(b, r.emitted), false
	}
	return appendTextElement(b, r.deltaID), false
}

// appendValueElement appends a key or value v of a column of type t.
func appendValueElement(b []byte, v *val, t ColumnType) (_ []byte, null bool) {
	switch {
	case v.tag == tagNull:
		return binary.BigEndian.AppendUint32(b, math.MaxUint32), true // -1
	case t == Numeric:
		at := len(b)
		b = appendNumericText(binary.BigEndian.AppendUint32(b, 0), v)
		binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		return b, false
	case v.tag == tagText:
		return appendTextElement(b, v.s), false
	case v.tag == tagInt:
		return appendInt8Element(b, v.i), false
	case v.tag == tagReal:
		b = binary.BigEndian.AppendUint32(b, 8)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(v.f)), false
	}
	return appendBoolElement(b, v.tag == tagTrue), false
}

// appendNumericText appends a number of a Numeric column as numeric reads
// it: a decimal exactly, a float's shortest text, NaN and the infinities by
// their names.
func appendNumericText(b []byte, v *val) []byte {
	switch {
	case v.tag == tagDecimal:
		return v.decimal().Append(b)
	case v.tag == tagInt:
		return strconv.AppendInt(b, v.i, 10)
	case math.IsNaN(v.f):
		return append(b, "NaN"...)
	case math.IsInf(v.f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(v.f, -1):
		return append(b, "-Infinity"...)
	}
	return strconv.AppendFloat(b, v.f, 'g', -1, 64)
}

func appendTextElement[S string | []byte](b []byte, s S) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendInt8Element(b []byte, i int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(i))
}

func appendBoolElement(b []byte, v bool) []byte {
	b = binary.BigEndian.AppendUint32(b, 1)
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendTimeElement appends t as a timestamptz: microseconds since
// PostgreSQL's epoch.
func appendTimeElement(b []byte, t mtime.Time) []byte {
	return appendInt8Element(b, (int64(t)-pgEpoch)*1000)
}
