package lateness

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/mtime"
)

// pqColumn is one column read from a Parquet file.
type pqColumn struct {
	name  string
	index int
	kind  parquet.Kind
	unit  int64 // a TIMESTAMP's units per millisecond (1, 1000, 1000000); 0: not a timestamp
	date  bool  // DATE: days since the epoch
}

// openParquet reads the schema of a Parquet file and checks the columns
// named. The rows are read later, a row group at a time and only the
// columns needed, so the file is never held in memory.
func openParquet(f *os.File, c *config) (producer, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, usagef("cannot read %s: %v", c.path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, usagef("%s is not a Parquet file: %v", c.path, err)
	}
	schema := pf.Schema()
	var names []string
	for _, p := range schema.Columns() {
		names = append(names, strings.Join(p, "."))
	}
	col := func(what, name string) (*pqColumn, error) {
		leaf, ok := schema.Lookup(splitPath(name)...)
		if !ok {
			return nil, usagef("%s has no column %q for %s (its columns: %s)", c.path, name, what, strings.Join(names, ", "))
		}
		if leaf.MaxRepetitionLevel > 0 {
			return nil, usagef("column %q of %s is repeated: want one value per row", name, c.path)
		}
		t := leaf.Node.Type()
		pc := &pqColumn{name: name, index: leaf.ColumnIndex, kind: t.Kind()}
		if lt := t.LogicalType(); lt != nil {
			switch v := lt.Value.(type) {
			case *format.TimestampType:
				pc.unit = unitPerMilli(v.Unit.Value)
			case *format.DateType:
				pc.date = true
			}
		} else if ct := t.ConvertedType(); ct != nil {
			switch *ct {
			case deprecated.TimestampMillis:
				pc.unit = 1
			case deprecated.TimestampMicros:
				pc.unit = 1000
			case deprecated.Date:
				pc.date = true
			}
		}
		return pc, nil
	}
	timeCol := func(what, name string) (*pqColumn, error) {
		pc, err := col(what, name)
		if err != nil {
			return nil, err
		}
		switch pc.kind {
		case parquet.Int32, parquet.Int64, parquet.Int96, parquet.Float, parquet.Double, parquet.ByteArray:
			return pc, nil
		}
		return nil, usagef("column %q of %s holds %s: want a timestamp, an RFC 3339 string or epoch milliseconds", name, c.path, pc.kind)
	}
	ts, err := timeCol(c.timeWhat(), c.TimeField)
	if err != nil {
		return nil, err
	}
	arr, err := timeCol("the arrival time", c.ArrivalField)
	if err != nil {
		return nil, err
	}
	var sent *pqColumn
	if c.SentField != "" && !c.ledger {
		if sent, err = timeCol("the send time", c.SentField); err != nil {
			return nil, err
		}
	}
	var part, weight *pqColumn
	if c.PartitionField != "" {
		if part, err = col("the partition", c.PartitionField); err != nil {
			return nil, err
		}
	}
	switch {
	case c.NoWeight:
	case c.Weight != "":
		if weight, err = col("the weight", c.Weight); err != nil {
			return nil, err
		}
	default:
		if _, ok := schema.Lookup(DefaultWeightField); ok {
			c.Weight = DefaultWeightField
			if weight, err = col("the weight", c.Weight); err != nil {
				return nil, err
			}
		}
	}
	if weight != nil {
		switch weight.kind {
		case parquet.Int32, parquet.Int64, parquet.Float, parquet.Double:
		default:
			return nil, usagef("column %q of %s holds %s: a weight must be a number", weight.name, c.path, weight.kind)
		}
		c.weightP = splitPath(c.Weight)
	}
	var by []*pqColumn
	names, what := c.groupFields()
	for j, b := range names {
		pc, err := col(what[j], b)
		if err != nil {
			return nil, err
		}
		by = append(by, pc)
	}
	if c.Match != "" {
		pc, err := col("--match", c.Match)
		if err != nil {
			return nil, err
		}
		by = append(by, pc) // read like a group, after the partition
	}
	return func(p *pool, emit func(*batch) bool) error {
		return readParquet(pf, c, ts, arr, sent, part, weight, by, p, emit)
	}, nil
}

func unitPerMilli(u format.TimeUnitValue) int64 {
	switch u.(type) {
	case *format.MicroSeconds:
		return 1000
	case *format.NanoSeconds:
		return 1000000
	}
	return 1
}

// cursor reads the values of one column chunk, page after page.
type cursor struct {
	pages parquet.Pages
	vr    parquet.ValueReader
}

// read fills dst with the next values of the column.
func (cu *cursor) read(dst []parquet.Value) error {
	n := 0
	for n < len(dst) {
		if cu.vr == nil {
			pg, err := cu.pages.ReadPage()
			if err != nil {
				if err == io.EOF {
					return io.ErrUnexpectedEOF
				}
				return err
			}
			cu.vr = pg.Values()
		}
		k, err := cu.vr.ReadValues(dst[n:])
		n += k
		if err == io.EOF {
			cu.vr = nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

func readParquet(pf *parquet.File, c *config, ts, arr, sent, part, weight *pqColumn, by []*pqColumn, p *pool, emit func(*batch) bool) error {
	cols := []*pqColumn{ts, arr}
	if weight != nil {
		cols = append(cols, weight)
	}
	cols = append(cols, by...)
	partAt, sentAt := -1, -1
	if part != nil {
		partAt = len(cols)
		cols = append(cols, part)
	}
	if sent != nil {
		sentAt = len(cols)
		cols = append(cols, sent)
	}
	vals := make([][]parquet.Value, len(cols))
	for i := range vals {
		vals[i] = make([]parquet.Value, batchSize)
	}
	var buf []byte
	var row int64 // the rows read, for a record's number
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		curs := make([]*cursor, len(cols))
		for i, pc := range cols {
			curs[i] = &cursor{pages: chunks[pc.index].Pages()}
		}
		closeAll := func() {
			for _, cu := range curs {
				cu.pages.Close()
			}
		}
		for left := rg.NumRows(); left > 0; {
			n := int(min(left, batchSize))
			left -= int64(n)
			for i, cu := range curs {
				if err := cu.read(vals[i][:n]); err != nil {
					closeAll()
					return fmt.Errorf("reading column %q of %s: %w", cols[i].name, c.path, err)
				}
			}
			b := p.get()
			for r := range n {
				row++
				rec := record{w: 1, line: row}
				arrWhy := rOK
				if t, why := pqTime(arr, vals[1][r], rNoArrival, rBadArrival); why != rOK {
					arrWhy = why
				} else {
					rec.arr, rec.hasArrival = t, true
				}
				t, why := pqTime(ts, vals[0][r], rNoEventTime, rBadEventTime)
				if why == rOK {
					var st linedec.Times
					if sentAt >= 0 {
						var sw reason
						if st.Sent, sw = pqTime(sent, vals[sentAt][r], rNoSent, rBadSent); sw != rOK {
							st.SentFault = reasonNames[sw]
						}
					}
					t, why = c.checkTimes(t, true, arrWhy, rec.arr, st)
				}
				if rec.why = why; rec.why != rOK {
					b.recs = append(b.recs, rec)
					continue
				}
				rec.ts = t
				var ps span
				if part != nil {
					v := vals[partAt][r]
					if v.IsNull() {
						rec.why = rNoPartition
						b.recs = append(b.recs, rec)
						continue
					}
					buf = pqText(buf[:0], part, v)
					ps = b.text(buf)
				}
				if weight != nil {
					v := vals[2][r]
					w := pqNumber(v)
					if v.IsNull() || !goodWeight(w) {
						rec.why = rBadWeight
						b.recs = append(b.recs, rec)
						continue
					}
					rec.w = w
				}
				first := 2
				if weight != nil {
					first = 3
				}
				nby := len(c.byP)
				for i, bc := range by[:nby] {
					v := vals[first+i][r]
					if v.IsNull() {
						b.groups = append(b.groups, b.text(missingText))
						continue
					}
					buf = pqText(buf[:0], bc, v)
					b.groups = append(b.groups, b.text(buf))
				}
				if part != nil {
					b.groups = append(b.groups, ps)
				}
				if c.matchP != nil {
					v := vals[first+nby][r]
					if !v.IsNull() {
						buf = pqText(buf[:0], by[nby], v)
					}
					if v.IsNull() || len(buf) == 0 {
						b.groups = append(b.groups, noSpan)
					} else {
						b.groups = append(b.groups, b.text(buf))
					}
				}
				b.recs = append(b.recs, rec)
			}
			if !emit(b) {
				closeAll()
				return errStopped
			}
		}
		closeAll()
	}
	return nil
}

// pqTime reads a time value: a TIMESTAMP or DATE, epoch milliseconds in a
// plain number, an RFC 3339 string or a legacy INT96 timestamp.
func pqTime(pc *pqColumn, v parquet.Value, none, bad reason) (mtime.Time, reason) {
	if v.IsNull() {
		return 0, none
	}
	switch pc.kind {
	case parquet.Int32, parquet.Int64:
		i := v.Int64()
		if pc.kind == parquet.Int32 {
			i = int64(v.Int32())
		}
		switch {
		case pc.date:
			return mtime.Time(i * 86400000), rOK
		case pc.unit > 1:
			return mtime.Time(floorDiv(i, pc.unit)), rOK
		}
		if i > int64(mtime.MaxTime) || i < int64(mtime.MinTime) {
			return 0, bad
		}
		return mtime.Time(i), rOK
	case parquet.Float, parquet.Double:
		f := pqNumber(v)
		if math.IsNaN(f) || math.IsInf(f, 0) || f > float64(mtime.MaxTime) || f < float64(mtime.MinTime) {
			return 0, bad
		}
		return mtime.Time(math.Floor(f)), rOK
	case parquet.Int96:
		x := v.Int96()
		nanos := int64(uint64(x[1])<<32 | uint64(x[0]))
		days := int64(x[2]) - 2440588 // Julian day of 1970-01-01
		return mtime.Time(days*86400000 + floorDiv(nanos, 1000000)), rOK
	case parquet.ByteArray:
		t, err := mtime.Parse(v.ByteArray())
		if err != nil {
			return 0, bad
		}
		return t, rOK
	}
	return 0, bad
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func pqNumber(v parquet.Value) float64 {
	switch v.Kind() {
	case parquet.Int32:
		return float64(v.Int32())
	case parquet.Int64:
		return float64(v.Int64())
	case parquet.Float:
		return float64(v.Float())
	case parquet.Double:
		return v.Double()
	}
	return math.NaN()
}

// pqText is the text of a value for grouping.
func pqText(b []byte, pc *pqColumn, v parquet.Value) []byte {
	switch pc.kind {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return append(b, v.ByteArray()...)
	case parquet.Boolean:
		return strconv.AppendBool(b, v.Boolean())
	case parquet.Int32:
		return strconv.AppendInt(b, int64(v.Int32()), 10)
	case parquet.Int64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case parquet.Float, parquet.Double:
		return strconv.AppendFloat(b, pqNumber(v), 'g', -1, 64)
	}
	return append(b, v.String()...)
}
