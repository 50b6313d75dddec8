package parquet

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/window"
)

// colKind is what a column holds.
type colKind uint8

const (
	colKey colKind = iota
	colStart
	colEnd
	colRevision
	colTiming
	colFinal
	colRetract
	colStatus
	colMode
	colVersion
	colWatermark
	colEmitted
	colInteger // an aggregate, int64
	colNumber  // an aggregate, double
	colExact   // an aggregate's exact text
	colJSON    // an aggregate's JSON text
	colPartial
)

// column is one column of the files.
type column struct {
	name  string
	kind  colKind
	index int // colKey: the key's field; the aggregates: the aggregate
	node  pq.Node
}

// partKind is what a partition folder is named after.
type partKind uint8

const (
	partDate partKind = iota
	partHour
	partKey
)

// partition is one level of partition folders.
type partition struct {
	name string
	kind partKind
	key  int // partKey: the key's field
}

// layout is the files' schema and their partition folders.
type layout struct {
	cols   []column
	parts  []partition
	schema *pq.Schema
	nkeys  int
	naggs  int
}

// shapeOf is the shape a front door without one gives, from the first
// pane: key or key_1, key_2, ...; every aggregate a number, but JSON text.
func shapeOf(job string, p *plan.PaneFields) plan.PaneShape {
	s := plan.PaneShape{Job: job, Windowed: p.Start != mtime.MinTime || p.End != mtime.MaxTime}
	if len(p.Keys) == 1 {
		s.Keys = []string{"key"}
	} else {
		for i := range p.Keys {
			s.Keys = append(s.Keys, "key_"+strconv.Itoa(i+1))
		}
	}
	for i, name := range p.Names {
		t := plan.Number
		if i < len(p.Values) {
			if _, ok := p.Values[i].(plan.RawJSON); ok {
				t = plan.JSONText
			}
		}
		s.Aggregates = append(s.Aggregates, plan.AggregateShape{Name: name, Type: t})
	}
	return s
}

// newLayout is the layout of the panes of shape s, partitioned by parts.
func newLayout(s plan.PaneShape, parts []string) (*layout, error) {
	l := &layout{nkeys: len(s.Keys), naggs: len(s.Aggregates)}
	partKeys := map[int]bool{}
	for _, p := range parts {
		switch {
		case p == "date" || p == "hour":
			if !s.Windowed {
				return nil, fmt.Errorf("partition_by: %s: the job's panes have no window (the global window)", p)
			}
			k := partDate
			if p == "hour" {
				k = partHour
			}
			l.parts = append(l.parts, partition{name: p, kind: k})
		case slices.Contains(s.Keys, p):
			i := slices.Index(s.Keys, p)
			partKeys[i] = true
			l.parts = append(l.parts, partition{name: p, kind: partKey, key: i})
		default:
			return nil, fmt.Errorf("partition_by: %s is not date, hour or a key field (%s)", p, keysText(s.Keys))
		}
	}
	str, optStr := pq.String(), pq.Optional(pq.String())
	ts := pq.Timestamp(pq.Millisecond)
	add := func(name string, k colKind, index int, n pq.Node) {
		l.cols = append(l.cols, column{name: name, kind: k, index: index, node: n})
	}
	for i, k := range s.Keys {
		if !partKeys[i] {
			add(k, colKey, i, str)
		}
	}
	if s.Windowed {
		add("window_start", colStart, 0, ts)
		add("window_end", colEnd, 0, ts)
	}
	add("revision", colRevision, 0, pq.Leaf(pq.Int64Type))
	add("timing", colTiming, 0, str)
	add("final", colFinal, 0, pq.Leaf(pq.BooleanType))
	add("retract", colRetract, 0, pq.Leaf(pq.BooleanType))
	add("status", colStatus, 0, str)
	add("mode", colMode, 0, str)
	add("version", colVersion, 0, pq.Leaf(pq.Int64Type))
	add("watermark", colWatermark, 0, pq.Optional(ts))
	add("emitted_at", colEmitted, 0, pq.Optional(ts))
	for i, a := range s.Aggregates {
		switch a.Type {
		case plan.Integer:
			add(a.Name, colInteger, i, pq.Optional(pq.Leaf(pq.Int64Type)))
		case plan.JSONText:
			add(a.Name, colJSON, i, optStr)
		default:
			add(a.Name, colNumber, i, pq.Optional(pq.Leaf(pq.DoubleType)))
			add(a.Name+"_exact", colExact, i, optStr)
		}
	}
	add("partial", colPartial, 0, optStr)
	seen := map[string]bool{}
	fields := make([]pq.Field, len(l.cols))
	for i, c := range l.cols {
		if seen[c.name] {
			return nil, fmt.Errorf("two columns are named %s", c.name)
		}
		seen[c.name] = true
		fields[i] = field{Node: c.node, name: c.name}
	}
	l.schema = pq.NewSchema("pane", group(fields))
	return l, nil
}

func keysText(keys []string) string {
	if len(keys) == 0 {
		return "the job has no key"
	}
	return "its key fields: " + strings.Join(keys, ", ")
}

// dir is the partition folders of a pane: date=2026-12-05/hour=13/card=c1,
// "" without partitions.
func (l *layout) dir(b []byte, p *plan.PaneFields) ([]byte, error) {
	for i, part := range l.parts {
		if i > 0 {
			b = append(b, '/')
		}
		b = append(b, part.name...)
		b = append(b, '=')
		switch part.kind {
		case partDate:
			b = p.Start.Time().AppendFormat(b, "2006-01-02")
		case partHour:
			b = p.Start.Time().AppendFormat(b, "15")
		case partKey:
			if part.key >= len(p.Keys) {
				return nil, fmt.Errorf("a pane has %d key fields, the output's shape %d", len(p.Keys), l.nkeys)
			}
			b = appendEscaped(b, p.KeyText(part.key))
		}
	}
	return b, nil
}

// appendEscaped appends a partition's value as Hive escapes it: %XX for
// the characters a path or Hive's layout reads otherwise, and for a
// leading dot (no hidden folder, no ..); an empty value is Hive's default
// partition.
func appendEscaped(b []byte, v string) []byte {
	if v == "" {
		return append(b, "__HIVE_DEFAULT_PARTITION__"...)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 || i == 0 && c == '.' {
			b = append(b, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// row appends the row of pane p to r.
func (l *layout) row(r pq.Row, p *plan.PaneFields) (pq.Row, error) {
	if len(p.Keys) != l.nkeys || len(p.Values) != l.naggs {
		return r, fmt.Errorf("a pane with %d key fields and %d aggregates does not fit the output's shape (%d and %d)", len(p.Keys), len(p.Values), l.nkeys, l.naggs)
	}
	for i, c := range l.cols {
		var v pq.Value
		def := 0
		optional := c.node.Optional()
		switch c.kind {
		case colKey:
			v = pq.ByteArrayValue([]byte(p.KeyText(c.index)))
		case colStart:
			v = pq.Int64Value(int64(p.Start))
		case colEnd:
			v = pq.Int64Value(int64(p.End))
		case colRevision:
			v = pq.Int64Value(p.Revision)
		case colTiming:
			v = pq.ByteArrayValue([]byte(p.Timing))
		case colFinal:
			v = pq.BooleanValue(p.Final)
		case colRetract:
			v = pq.BooleanValue(p.Retract)
		case colStatus:
			v = pq.ByteArrayValue([]byte(window.Status(p.Final, p.Retract)))
		case colMode:
			v = pq.ByteArrayValue([]byte(p.Mode))
		case colVersion:
			v = pq.Int64Value(p.Version)
		case colWatermark:
			v = timeValue(p.Watermark)
		case colEmitted:
			v = timeValue(p.Emitted)
		case colInteger:
			switch x := p.Values[c.index].(type) {
			case nil:
			case int64:
				v = pq.Int64Value(x)
			default:
				return r, fmt.Errorf("%s: expected an integer, got %T", c.name, x)
			}
		case colNumber:
			switch x := p.Values[c.index].(type) {
			case nil:
			case int64:
				v = pq.DoubleValue(float64(x))
			case float64:
				v = pq.DoubleValue(x)
			case string:
				f, err := strconv.ParseFloat(x, 64)
				if err != nil {
					return r, fmt.Errorf("%s: %q is not a number", c.name, x)
				}
				v = pq.DoubleValue(f)
			default:
				return r, fmt.Errorf("%s: expected a number, got %T", c.name, x)
			}
		case colExact:
			switch x := p.Values[c.index].(type) {
			case int64:
				v = pq.ByteArrayValue(strconv.AppendInt(nil, x, 10))
			case float64:
				v = pq.ByteArrayValue(text.AppendJSONFloat(nil, x))
			case string:
				v = pq.ByteArrayValue([]byte(x))
			}
		case colJSON:
			switch x := p.Values[c.index].(type) {
			case nil:
			case plan.RawJSON:
				if x != "" {
					v = pq.ByteArrayValue([]byte(x))
				}
			default:
				return r, fmt.Errorf("%s: expected JSON text, got %T", c.name, x)
			}
		case colPartial:
			if len(p.Partial) > 0 {
				js, _ := json.Marshal(p.Partial)
				v = pq.ByteArrayValue(js)
			}
		}
		if optional {
			if !v.IsNull() {
				def = 1
			}
		} else if v.IsNull() {
			return r, fmt.Errorf("%s: no value", c.name)
		}
		r = append(r, v.Level(0, def, i))
	}
	return r, nil
}

// timeValue is an instant as a timestamp, null for MinTime (no watermark
// yet).
func timeValue(t mtime.Time) pq.Value {
	if t == mtime.MinTime {
		return pq.NullValue()
	}
	return pq.Int64Value(int64(t))
}

// group is a group node whose fields keep their order (the library's Group
// sorts them by name).
type group []pq.Field

func (g group) ID() int                     { return 0 }
func (g group) String() string              { return fmt.Sprintf("group%v", []pq.Field(g)) }
func (g group) Type() pq.Type               { return pq.Group{}.Type() }
func (g group) Optional() bool              { return false }
func (g group) Repeated() bool              { return false }
func (g group) Required() bool              { return true }
func (g group) Leaf() bool                  { return false }
func (g group) Fields() []pq.Field          { return g }
func (g group) Encoding() encoding.Encoding { return nil }
func (g group) Compression() compress.Codec { return nil }
func (g group) GoType() reflect.Type        { return reflect.TypeOf(struct{}{}) }

// field is a named column of a group.
type field struct {
	pq.Node
	name string
}

func (f field) Name() string                           { return f.name }
func (f field) Value(base reflect.Value) reflect.Value { return reflect.Value{} }
