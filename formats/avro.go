// Package formats registers the formats of records weir reads besides JSON
// lines (package plan's RegisterFormat): Avro and Protobuf, alone with a
// schema file or framed by a schema registry, JSON validated by a
// registry's JSON Schema, and CSV. A decoder turns a record into the JSON
// object the job's line rules read (see plan.Decoder); a format that knows
// its records' fields before one is read lists them for weir lint
// (plan.FieldLister). It also writes panes as Avro in a registry's framing
// (AvroPanes), their schema derived from the job's plan.PaneShape.
package formats

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/plan"
)

func init() {
	plan.RegisterFormat(plan.FormatKind{
		Name: "avro",
		Doc:  "Avro binary: framed by a schema registry (registry:), or alone, written with the schema file schema:.",
		Fields: []plan.Field{
			{Name: "schema", Type: plan.Path, Doc: schemaDoc},
		},
		Registry: true,
		Parse:    parseAvro,
	})
}

// schemaDoc is the doc of the setting schema, which avro and protobuf
// share.
const schemaDoc = "The schema file: for avro, the Avro schema (.avsc): without a registry, the one every record is written with; with one, the reader's schema records are resolved to; for protobuf without a registry, the .proto file (its imports found beside it)."

// avroConfig is the avro format's settings.
type avroConfig struct {
	schemaFile string
	reader     *avro.Schema // from schemaFile, or nil
	reg        *plan.Registry
}

func parseAvro(s plan.Settings, reg *plan.Registry) (plan.FormatConfig, error) {
	c := &avroConfig{reg: reg}
	f, ok, err := s.Path("schema")
	if err != nil {
		return nil, err
	}
	if ok {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, s.Errorf("schema", "%v", err)
		}
		if c.reader, err = avro.Parse(string(b)); err != nil {
			return nil, s.Errorf("schema", "not an Avro schema: %v", err)
		}
		c.schemaFile = f
	}
	return c, nil
}

func (c *avroConfig) Describe() string {
	if c.reg != nil {
		return "avro, schemas from the registry at " + c.reg.URL
	}
	if c.schemaFile == "" {
		return "avro, the schema of the file's header"
	}
	return "avro, schema " + c.schemaFile
}

// CheckRecords: records of a topic carry no schema of their own.
func (c *avroConfig) CheckRecords() error {
	if c.reg == nil && c.reader == nil {
		return errors.New("avro records need a schema registry (registry: {url: ...}) or a schema file (schema: orders.avsc)")
	}
	return nil
}

func (c *avroConfig) New(env plan.Env, topic string) (plan.Decoder, error) {
	if err := c.CheckRecords(); err != nil {
		return nil, err
	}
	d := &avroDecoder{reader: c.reader}
	if c.reader != nil {
		d.readerNode = c.reader.Root().ExpandReferences()
		d.fixed = directly(&avroSchema{s: c.reader, node: d.readerNode})
	}
	if c.reg != nil {
		cl, err := newRegistryClient(c.reg, env.Log)
		if err != nil {
			return nil, err
		}
		d.reg = cl
		d.subject = c.reg.Subject
		if d.subject == "" && topic != "" {
			d.subject = topic + "-value"
		}
	}
	return d, nil
}

// avroDecoder decodes Avro records. With a registry, each record's writer
// schema is the one of its id, resolved to the reader's schema (the schema
// file, else the subject's latest when the first record is read, else the
// writer's own): a field the writer added with a default since is not
// seen, one it removed takes its default, as the registry's compatible
// evolutions intend.
type avroDecoder struct {
	reader     *avro.Schema
	readerNode *avro.SchemaNode
	reg        *registryClient
	subject    string
	// fixed is the schema of every record, without a registry.
	fixed *avroSchema

	// readerOnce settles the reader's schema, when no file gives it.
	readerOnce sync.Once
	byID       compiled[*avroSchema]
}

// avroSchema is a writer's schema resolved to the reader's, and the
// reader's tree that guides the writing of its values.
type avroSchema struct {
	s    *avro.Schema
	node *avro.SchemaNode
	// direct, when the writer's schema is the reader's, writes its
	// records straight from their binary.
	direct *transcoder
	err    error
}

// directly is s, writing its records straight from their binary when its
// schema is a record's.
func directly(s *avroSchema) *avroSchema {
	if s.node != nil && s.node.Type == "record" {
		s.direct = newTranscoder(s.node)
	}
	return s
}

// AppendJSON implements plan.Decoder.
func (d *avroDecoder) AppendJSON(dst, value []byte) ([]byte, error) {
	s := d.fixed
	payload := value
	if d.reg != nil {
		id, p, err := frame(value)
		if err != nil {
			return dst, err
		}
		payload = p
		if s, err = d.schema(id); err != nil {
			return dst, err
		}
	}
	if s.direct != nil {
		out, err := s.direct.appendJSON(dst, payload)
		if err != nil {
			return dst, plan.Bad(ReasonNotDecodable, "%v", err)
		}
		return out, nil
	}
	var v any
	rest, err := s.s.Decode(payload, &v)
	if err != nil {
		return dst, plan.Bad(ReasonNotDecodable, "%v", err)
	}
	if len(rest) > 0 {
		return dst, plan.Bad(ReasonNotDecodable, "%d bytes after the record", len(rest))
	}
	if _, ok := v.(map[string]any); !ok {
		return dst, plan.Bad(ReasonNotDecodable, "the schema is not a record's")
	}
	return appendAvroJSON(dst, v, s.node), nil
}

// schema is the resolved schema of a writer's id.
func (d *avroDecoder) schema(id int) (*avroSchema, error) {
	s, err := d.byID.get(d.reg, id, d.resolve)
	if err != nil {
		return nil, err
	}
	return s, s.err
}

// resolve compiles the writer's schema w and resolves it to the reader's.
func (d *avroDecoder) resolve(id int, w sr.Schema) *avroSchema {
	if w.Type != sr.TypeAvro {
		return &avroSchema{err: plan.Bad(ReasonUnknownSchema, "schema %d is %s, not Avro", id, w.Type)}
	}
	if len(w.References) > 0 {
		return &avroSchema{err: plan.Bad(ReasonUnknownSchema, "schema %d has references, which weir does not read yet", id)}
	}
	writer, err := avro.Parse(w.Schema)
	if err != nil {
		return &avroSchema{err: plan.Bad(ReasonUnknownSchema, "schema %d: %v", id, err)}
	}
	d.readerOnce.Do(func() {
		if d.reader != nil {
			return
		}
		// The subject's latest schema when the job first reads a record:
		// later versions resolve to it.
		if d.subject != "" {
			if latest, ok := d.reg.latest(d.subject); ok && latest.Type == sr.TypeAvro {
				if rs, err := avro.Parse(latest.Schema); err == nil {
					d.reader, d.readerNode = rs, rs.Root().ExpandReferences()
					return
				}
			}
		}
		d.reader, d.readerNode = writer, writer.Root().ExpandReferences()
	})
	reader, node := d.reader, d.readerNode
	if reader == writer || bytes.Equal(reader.Canonical(), writer.Canonical()) {
		return directly(&avroSchema{s: writer, node: node})
	}
	resolved, err := avro.Resolve(writer, reader)
	if err != nil {
		// A writer's schema the reader's cannot read (a field's type
		// changed): its records do not decode.
		return &avroSchema{err: plan.Bad(ReasonNotDecodable, "schema %d cannot be read as the reader's schema: %v", id, err)}
	}
	return &avroSchema{s: resolved, node: node}
}

// appendAvroJSON appends a decoded Avro value as JSON, guided by its
// schema (node, nil where unknown): a record's fields in the schema's
// order, a map's keys sorted, a union's value bare; timestamp-millis as
// epoch milliseconds (weir's event time, exactly), the finer timestamps
// as RFC 3339 with all their digits, a date as its midnight, a decimal
// with its scale's digits ("12.50"), bytes as base64.
func appendAvroJSON(b []byte, v any, node *avro.SchemaNode) []byte {
	if node != nil && node.Type == "union" {
		node = branch(v, node.Branches)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return append(b, "null"...)
		}
		return strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(b, "null"...)
		}
		return appendDouble(b, x)
	case string:
		return text.AppendJSONString(b, []byte(x))
	case []byte:
		return appendBase64(b, x)
	case [16]byte:
		if node != nil && node.LogicalType == "uuid" {
			return append(b, fmt.Sprintf("%q", uuidString(x))...)
		}
		return appendBase64(b, x[:])
	case time.Time:
		lt := ""
		if node != nil {
			lt = node.LogicalType
		}
		x = x.UTC()
		switch lt {
		case "timestamp-millis", "local-timestamp-millis":
			return strconv.AppendInt(b, x.UnixMilli(), 10)
		case "date":
			return x.AppendFormat(append(b, '"'), `2006-01-02T15:04:05Z"`)
		}
		return x.AppendFormat(append(b, '"'), `2006-01-02T15:04:05.999999999Z"`)
	case time.Duration:
		return strconv.AppendInt(b, x.Milliseconds(), 10)
	case *big.Rat:
		scale := 0
		if node != nil {
			scale = node.Scale
		}
		if scale == 0 && !x.IsInt() {
			// big-decimal: the value's own digits.
			f, _ := x.Float64()
			return strconv.AppendFloat(b, f, 'f', -1, 64)
		}
		return append(b, x.FloatString(scale)...)
	case []any:
		var item *avro.SchemaNode
		if node != nil {
			item = node.Items
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAvroJSON(b, e, item)
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		if node != nil && node.Type == "record" {
			first := true
			for i := range node.Fields {
				f := &node.Fields[i]
				fv, ok := x[f.Name]
				if !ok {
					continue
				}
				if !first {
					b = append(b, ',')
				}
				first = false
				b = text.AppendJSONString(b, []byte(f.Name))
				b = append(b, ':')
				b = appendAvroJSON(b, fv, &f.Type)
			}
			return append(b, '}')
		}
		var values *avro.SchemaNode
		if node != nil {
			values = node.Values
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = text.AppendJSONString(b, []byte(k))
			b = append(b, ':')
			b = appendAvroJSON(b, x[k], values)
		}
		return append(b, '}')
	case avro.Duration:
		return fmt.Appendf(b, `{"months":%d,"days":%d,"milliseconds":%d}`, x.Months, x.Days, x.Milliseconds)
	}
	return append(b, "null"...)
}

// branch is the union's branch a decoded value is of.
func branch(v any, branches []avro.SchemaNode) *avro.SchemaNode {
	for i := range branches {
		n := &branches[i]
		switch v.(type) {
		case nil:
			if n.Type == "null" {
				return n
			}
		case time.Time:
			if n.LogicalType != "" && n.LogicalType != "decimal" {
				return n
			}
		case *big.Rat:
			if n.LogicalType == "decimal" || n.LogicalType == "big-decimal" {
				return n
			}
		case map[string]any:
			if n.Type == "record" || n.Type == "map" {
				return n
			}
		case []any:
			if n.Type == "array" {
				return n
			}
		case [16]byte:
			if n.LogicalType == "uuid" || n.Type == "fixed" {
				return n
			}
		}
	}
	return nil
}

func appendBase64(b, x []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, x)
	return append(b, '"')
}

func uuidString(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// OpenFile implements FileFormat: an Avro object container file, whose
// header holds the writer's schema; the schema file, when given, is the
// reader's.
func (c *avroConfig) OpenFile(path string) (RowReader, error) {
	if rows, err := openBlockRows(path, c.reader); rows != nil || err != nil {
		return rows, err
	}
	return libraryRows(path, c.reader)
}

// libraryRows reads the container file at path through the library,
// resolved to reader if not nil.
func libraryRows(path string, reader *avro.Schema) (RowReader, error) {
	c := &avroConfig{reader: reader}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var opts []ocf.ReaderOpt
	if c.reader != nil {
		opts = append(opts, ocf.WithReaderSchema(c.reader))
	}
	rd, err := ocf.NewReader(bufio.NewReaderSize(f, 1<<20), opts...)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("not an Avro object container file: %w", err)
	}
	node := c.readerNode()
	if node == nil {
		node = rd.Schema().Root().ExpandReferences()
	}
	return &ocfRows{f: f, rd: rd, node: node}, nil
}

func (c *avroConfig) readerNode() *avro.SchemaNode {
	if c.reader == nil {
		return nil
	}
	return c.reader.Root().ExpandReferences()
}

// ocfRows are the records of an object container file.
type ocfRows struct {
	f    *os.File
	rd   *ocf.Reader
	node *avro.SchemaNode
	n    int64
	// v is the record decoded last: the library decodes the next into
	// the same map.
	v any
}

func (r *ocfRows) Next(dst []byte) ([]byte, int64, error) {
	if err := r.rd.Decode(&r.v); err != nil {
		if errors.Is(err, io.EOF) {
			return dst, 0, io.EOF
		}
		// A container file's blocks cannot be read past a corrupt one.
		return dst, 0, fmt.Errorf("record %d: %w", r.n+1, err)
	}
	r.n++
	if _, ok := r.v.(map[string]any); !ok {
		return dst, 0, fmt.Errorf("the file's schema is not a record's")
	}
	return appendAvroJSON(dst, r.v, r.node), r.n, nil
}

func (r *ocfRows) Close() error {
	r.rd.Close()
	return r.f.Close()
}

// OpenAvroFile reads an Avro object container file's records, each as a
// JSON object, as weir run reads it (source: {file: F, format: avro}): what
// weir lateness reads such a file with. schema, when not empty, is the
// reader's schema (the .avsc's text).
func OpenAvroFile(path, schema string) (RowReader, error) {
	c := &avroConfig{}
	if schema != "" {
		s, err := avro.Parse(schema)
		if err != nil {
			return nil, fmt.Errorf("not an Avro schema: %w", err)
		}
		c.reader = s
	}
	return c.OpenFile(path)
}
