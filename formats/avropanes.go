package formats

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/window"
)

// SubjectStrategy is how the subjects a topic's schemas are registered
// under are named: the strategies of the registry's own clients.
type SubjectStrategy string

// The subject name strategies.
const (
	// TopicName: TOPIC-key and TOPIC-value (the clients' default).
	TopicName SubjectStrategy = "topic_name"
	// RecordName: the record's full name (weir.JOB.PaneKey, weir.JOB.Pane).
	RecordName SubjectStrategy = "record_name"
	// TopicRecordName: TOPIC-FULLNAME.
	TopicRecordName SubjectStrategy = "topic_record_name"
)

// AvroPanes writes a job's panes as Avro records in a schema registry's
// framing (a magic byte 0, the schema's 4-byte id, the Avro binary): the
// record's key a PaneKey (the key's fields and the window), its value a
// Pane (the key's fields, the window, revision, timing, final, retract,
// status, version, watermark, emitted_at, the aggregates, partial). Both
// schemas derive from the job's PaneShape and are registered at start
// (Register). Every field a job may add or drop later (an aggregate) is a
// union with null, defaulting to null, so that a job that adds an
// aggregate registers a backward-compatible evolution.
//
// The encoding is written here rather than through a generic Avro
// library: the schema is weir's own and fixed for the run, so a pane is
// appended field by field without building a map of it.
type AvroPanes struct {
	paneSchemas
	shape         plan.PaneShape
	windowedKey   bool
	aggregateType []plan.ValueType
}

// paneSchemas are the schemas of a job's panes as a topic's records, the
// subjects they are registered under, and their ids once registered: what
// every format of panes behind a registry shares.
type paneSchemas struct {
	typ          sr.SchemaType
	topic        string
	strategy     SubjectStrategy
	reg          *registryClient
	keyName      string // full names
	valueName    string
	key, value   string // the schemas' text
	keyID, valID int
	registered   bool
}

// newPaneSchemas checks strategy and makes the registry's client; the
// schemas' names are weir.JOB.PaneKey and weir.JOB.Pane.
func newPaneSchemas(typ sr.SchemaType, job string, reg *plan.Registry, topic string, strategy SubjectStrategy, log func(string)) (paneSchemas, error) {
	if strategy == "" {
		strategy = TopicName
	}
	switch strategy {
	case TopicName, RecordName, TopicRecordName:
	default:
		return paneSchemas{}, fmt.Errorf("unknown subject name strategy %q", strategy)
	}
	cl, err := newRegistryClient(reg, log)
	if err != nil {
		return paneSchemas{}, err
	}
	ns := "weir." + avroIdent(job)
	return paneSchemas{typ: typ, topic: topic, strategy: strategy, reg: cl, keyName: ns + ".PaneKey", valueName: ns + ".Pane"}, nil
}

// NewAvroPanes is the writer of the panes of shape to topic, registered
// in the registry reg under the subjects strategy names.
func NewAvroPanes(shape plan.PaneShape, reg *plan.Registry, topic string, strategy SubjectStrategy, log func(string)) (*AvroPanes, error) {
	for _, n := range slices.Concat(shape.Keys, aggregateNames(shape)) {
		if !AvroName(n) {
			return nil, fmt.Errorf("%q is not a name an Avro field can have (letters, digits and _, not beginning with a digit)", n)
		}
	}
	ps, err := newPaneSchemas(sr.TypeAvro, shape.Job, reg, topic, strategy, log)
	if err != nil {
		return nil, err
	}
	a := &AvroPanes{paneSchemas: ps, shape: shape, windowedKey: shape.Windowed}
	a.key, a.value = a.schemas("weir." + avroIdent(shape.Job))
	for _, g := range shape.Aggregates {
		a.aggregateType = append(a.aggregateType, g.Type)
	}
	return a, nil
}

func aggregateNames(s plan.PaneShape) []string {
	var out []string
	for _, g := range s.Aggregates {
		out = append(out, g.Name)
	}
	return out
}

// AvroName reports whether s can name an Avro field: [A-Za-z_][A-Za-z0-9_]*.
func AvroName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// avroIdent is s made an Avro name: other characters become _, and a name
// that begins with a digit (or is empty) begins with _.
func avroIdent(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		b = append([]byte{'_'}, b...)
	}
	return string(b)
}

// avroField is a field of a record schema, marshalled in this order.
type avroField struct {
	Name    string          `json:"name"`
	Type    any             `json:"type"`
	Default json.RawMessage `json:"default,omitempty"`
	Doc     string          `json:"doc,omitempty"`
}

type avroRecord struct {
	Type      string      `json:"type"`
	Name      string      `json:"name"`
	Namespace string      `json:"namespace"`
	Doc       string      `json:"doc,omitempty"`
	Fields    []avroField `json:"fields"`
}

var timestamp = map[string]string{"type": "long", "logicalType": "timestamp-millis"}

// schemas are the key's and the value's schemas.
func (a *AvroPanes) schemas(ns string) (key, value string) {
	var keyFields []avroField
	for _, k := range a.shape.Keys {
		keyFields = append(keyFields, avroField{Name: k, Type: "string"})
	}
	if a.shape.Windowed {
		keyFields = append(keyFields, avroField{Name: "window_start", Type: timestamp}, avroField{Name: "window_end", Type: timestamp})
	}
	vf := append([]avroField(nil), keyFields...)
	vf = append(vf,
		avroField{Name: "revision", Type: "long"},
		avroField{Name: "timing", Type: "string", Doc: "EARLY, ON_TIME or LATE"},
		avroField{Name: "final", Type: "boolean"},
		avroField{Name: "retract", Type: "boolean"},
		avroField{Name: "status", Type: "string", Doc: "provisional, closed or retracted"},
		avroField{Name: "mode", Type: "string", Default: json.RawMessage(`""`),
			Doc: "accumulating, discarding or retracting: totals or deltas (empty in records of a weir that wrote none)"},
		avroField{Name: "version", Type: "long"},
		avroField{Name: "watermark", Type: timestamp},
		avroField{Name: "emitted_at", Type: timestamp},
	)
	for _, g := range a.shape.Aggregates {
		var t any
		switch g.Type {
		case plan.Integer:
			t = []string{"null", "long"}
		case plan.Number:
			t = []any{"null", "long", "double", map[string]string{"type": "string", "doc": "an exact decimal"}}
		default:
			t = []any{"null", map[string]string{"type": "string", "doc": "JSON text"}}
		}
		vf = append(vf, avroField{Name: g.Name, Type: t, Default: json.RawMessage("null")})
	}
	vf = append(vf, avroField{Name: "partial", Type: map[string]string{"type": "array", "items": "string"}, Default: json.RawMessage("[]"),
		Doc: "the aggregates whose values cover only part of the window"})
	if keyFields == nil {
		keyFields = []avroField{}
	}
	k, _ := json.Marshal(avroRecord{Type: "record", Name: "PaneKey", Namespace: ns, Doc: "A pane's key and window: what a compacted topic keeps the latest revision of.", Fields: keyFields})
	v, _ := json.Marshal(avroRecord{Type: "record", Name: "Pane", Namespace: ns, Doc: "A window's result, as weir writes it.", Fields: vf})
	return string(k), string(v)
}

// Schemas are the key's and the value's schemas, as registered.
func (a *paneSchemas) Schemas() (key, value string) { return a.key, a.value }

// Subjects are the subjects the key's and the value's schemas are
// registered under.
func (a *paneSchemas) Subjects() (key, value string) {
	switch a.strategy {
	case RecordName:
		return a.keyName, a.valueName
	case TopicRecordName:
		return a.topic + "-" + a.keyName, a.topic + "-" + a.valueName
	}
	return a.topic + "-key", a.topic + "-value"
}

// Register registers the key's and the value's schemas (a registry
// returns the id it has for a schema registered already) and keeps their
// ids. A registry that refuses a schema (an evolution its compatibility
// rule forbids) is a permanent error naming the subject and the rule; one
// that cannot be reached, or fails, a transient one.
func (a *paneSchemas) Register(ctx context.Context) error {
	if a.registered {
		return nil
	}
	ks, vs := a.Subjects()
	for _, s := range []struct {
		subject, schema string
		id              *int
	}{{ks, a.key, &a.keyID}, {vs, a.value, &a.valID}} {
		id, err := a.reg.cl.RegisterSchema(ctx, s.subject, sr.Schema{Schema: s.schema, Type: a.typ}, -1, -1)
		if err != nil {
			return a.refusal(ctx, s.subject, err)
		}
		*s.id = id
	}
	a.registered = true
	return nil
}

// refusal words a registry's refusal to register a schema of subject.
func (a *paneSchemas) refusal(ctx context.Context, subject string, err error) error {
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		return connector.Transient(fmt.Errorf("schema registry %s: registering subject %s: %w", a.reg.url, subject, err))
	}
	switch {
	case re.StatusCode >= 500 || re.StatusCode == 408 || re.StatusCode == 429:
		return connector.Transient(fmt.Errorf("schema registry %s: registering subject %s: %s", a.reg.url, subject, re.Message))
	case re.StatusCode != 409 && re.StatusCode != 422:
		// Not a verdict on the schema: credentials, permissions, a path.
		return connector.Permanent(fmt.Errorf("schema registry %s: registering subject %s: %s (HTTP %d)", a.reg.url, subject, oneLine(re.Message), re.StatusCode))
	}
	rule := "unknown"
	for _, c := range [][]string{{subject}, nil} { // the subject's, else the registry's
		if cs := a.reg.cl.Compatibility(ctx, c...); len(cs) == 1 && cs[0].Err == nil {
			rule = cs[0].Level.String()
			break
		}
	}
	return connector.Permanent(fmt.Errorf("schema registry %s refuses the schema of subject %s (compatibility %s): %s", a.reg.url, subject, rule, oneLine(re.Message)))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Record is a pane as a Kafka record: its key and value, each in the
// registry's framing. It needs Register first.
func (a *AvroPanes) Record(p *plan.PaneFields) (key, value []byte) {
	key = framedHeader(make([]byte, 0, 64), a.keyID)
	key = a.appendKey(key, p)
	value = framedHeader(make([]byte, 0, 256), a.valID)
	value = a.appendKey(value, p)
	value = avroLong(value, p.Revision)
	value = avroString(value, p.Timing)
	value = avroBool(value, p.Final)
	value = avroBool(value, p.Retract)
	value = avroString(value, window.Status(p.Final, p.Retract))
	value = avroString(value, p.Mode)
	value = avroLong(value, p.Version)
	value = avroLong(value, int64(p.Watermark))
	value = avroLong(value, int64(p.Emitted))
	for i, t := range a.aggregateType {
		var v any
		if i < len(p.Values) {
			v = p.Values[i]
		}
		value = appendAggregate(value, t, v)
	}
	if len(p.Partial) > 0 {
		value = avroLong(value, int64(len(p.Partial)))
		for _, n := range p.Partial {
			value = avroString(value, n)
		}
	}
	value = avroLong(value, 0)
	return key, value
}

func (a *AvroPanes) appendKey(b []byte, p *plan.PaneFields) []byte {
	for i := range a.shape.Keys {
		b = avroString(b, p.KeyText(i))
	}
	if a.windowedKey {
		b = avroLong(b, int64(p.Start))
		b = avroLong(b, int64(p.End))
	}
	return b
}

// appendAggregate appends a value of an aggregate's union: its branch's
// index (null, long for an Integer; null, long, double, string for a
// Number; null, string for JSON text), then the value.
func appendAggregate(b []byte, t plan.ValueType, v any) []byte {
	if v == nil {
		return avroLong(b, 0)
	}
	switch t {
	case plan.Integer:
		switch x := v.(type) {
		case int64:
			return avroLong(avroLong(b, 1), x)
		case float64:
			return avroLong(avroLong(b, 1), int64(x))
		}
	case plan.Number:
		switch x := v.(type) {
		case int64:
			return avroLong(avroLong(b, 1), x)
		case float64:
			return binary.LittleEndian.AppendUint64(avroLong(b, 2), math.Float64bits(x))
		case string:
			return avroString(avroLong(b, 3), x)
		case plan.RawJSON:
			return avroString(avroLong(b, 3), string(x))
		}
	default:
		switch x := v.(type) {
		case plan.RawJSON:
			return avroString(avroLong(b, 1), string(x))
		case string:
			j, _ := json.Marshal(x)
			return avroString(avroLong(b, 1), string(j))
		default:
			j, _ := json.Marshal(x)
			return avroString(avroLong(b, 1), string(j))
		}
	}
	// A value the aggregate's type cannot hold: PaneShape and PaneFields
	// disagree, a program's mistake.
	panic(fmt.Sprintf("formats: a %T for an aggregate of type %d", v, t))
}

func framedHeader(b []byte, id int) []byte {
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(id))
}

// avroLong appends v as Avro's long: zig-zag, then a varint.
func avroLong(b []byte, v int64) []byte { return binary.AppendUvarint(b, uint64(v<<1^v>>63)) }

func avroString(b []byte, s string) []byte {
	b = avroLong(b, int64(len(s)))
	return append(b, s...)
}

func avroBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}
