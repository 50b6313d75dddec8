package formats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/window"
)

// ProtobufPanes writes a job's panes as Protobuf messages in a schema
// registry's framing (a magic byte 0, the schema's 4-byte id, the message
// indexes, here the single 0 of a file's first message, then the message),
// as the registry's Protobuf clients read them: the record's key a PaneKey
// (the key's fields and the window), its value a Pane (the key's fields,
// the window, revision, timing, final, retract, status, mode, version,
// watermark, emitted_at, the aggregates, partial). Both are proto3 files
// derived from the job's PaneShape and registered at start (Register).
//
// Times are int64 milliseconds since the epoch, UTC. A count is an
// optional int64; any other number an optional double NAME and an optional
// string NAME_exact with its exact text as the JSON output writes it (an
// exact decimal sum's digits); first, last, histogram and top an optional
// string of their JSON text. An aggregate without a value is absent.
//
// Field numbers are kept from run to run: Register reads the subject's
// latest schema, and a field of the same name and type keeps its number;
// a new field takes a number above every number used before, and the
// numbers of the fields the job no longer has are reserved, so that a job
// that adds or drops an aggregate registers a compatible evolution.
type ProtobufPanes struct {
	paneSchemas
	shape     plan.PaneShape
	pkg       string
	keyFields []protoField
	valFields []protoField
}

// protoField is a field of a pane's message: its name, type, number, and
// what of the pane it holds.
type protoField struct {
	name string
	typ  string // string, int64, bool, double
	opt  bool   // optional: explicit presence
	rep  bool   // repeated
	num  protowire.Number
	role protoRole
	i    int // the key's field, or the aggregate
	doc  string
}

type protoRole uint8

const (
	protoKey protoRole = iota
	protoStart
	protoEnd
	protoRevision
	protoTiming
	protoFinal
	protoRetract
	protoStatus
	protoMode
	protoVersion
	protoWatermark
	protoEmitted
	protoCount
	protoNumber
	protoExact
	protoJSON
	protoPartial
)

// NewProtobufPanes is the writer of the panes of shape to topic,
// registered in the registry reg under the subjects strategy names.
func NewProtobufPanes(shape plan.PaneShape, reg *plan.Registry, topic string, strategy SubjectStrategy, log func(string)) (*ProtobufPanes, error) {
	ps, err := newPaneSchemas(sr.TypeProtobuf, shape.Job, reg, topic, strategy, log)
	if err != nil {
		return nil, err
	}
	p := &ProtobufPanes{paneSchemas: ps, shape: shape, pkg: "weir." + avroIdent(shape.Job)}
	for i, k := range shape.Keys {
		p.keyFields = append(p.keyFields, protoField{name: k, typ: "string", role: protoKey, i: i})
	}
	if shape.Windowed {
		p.keyFields = append(p.keyFields,
			protoField{name: "window_start", typ: "int64", role: protoStart, doc: "milliseconds since the epoch, UTC"},
			protoField{name: "window_end", typ: "int64", role: protoEnd, doc: "milliseconds since the epoch, UTC"})
	}
	p.valFields = append(slices.Clone(p.keyFields),
		protoField{name: "revision", typ: "int64", role: protoRevision},
		protoField{name: "timing", typ: "string", role: protoTiming, doc: "EARLY, ON_TIME or LATE"},
		protoField{name: "final", typ: "bool", role: protoFinal},
		protoField{name: "retract", typ: "bool", role: protoRetract},
		protoField{name: "status", typ: "string", role: protoStatus, doc: "provisional, closed or retracted"},
		protoField{name: "mode", typ: "string", role: protoMode, doc: "accumulating, discarding or retracting: totals or deltas"},
		protoField{name: "version", typ: "int64", role: protoVersion},
		protoField{name: "watermark", typ: "int64", role: protoWatermark, doc: "milliseconds since the epoch, UTC"},
		protoField{name: "emitted_at", typ: "int64", role: protoEmitted, doc: "milliseconds since the epoch, UTC"})
	for i, g := range shape.Aggregates {
		switch g.Type {
		case plan.Integer:
			p.valFields = append(p.valFields, protoField{name: g.Name, typ: "int64", opt: true, role: protoCount, i: i})
		case plan.Number:
			p.valFields = append(p.valFields,
				protoField{name: g.Name, typ: "double", opt: true, role: protoNumber, i: i},
				protoField{name: g.Name + "_exact", typ: "string", opt: true, role: protoExact, i: i, doc: "the exact value, as the JSON output writes it"})
		default:
			p.valFields = append(p.valFields, protoField{name: g.Name, typ: "string", opt: true, role: protoJSON, i: i, doc: "JSON text"})
		}
	}
	p.valFields = append(p.valFields, protoField{name: "partial", typ: "string", rep: true, role: protoPartial,
		doc: "the aggregates whose values cover only part of the window"})
	seen := map[string]bool{}
	for _, f := range p.valFields {
		if !AvroName(f.name) {
			return nil, fmt.Errorf("%q is not a name a Protobuf field can have (letters, digits and _, not beginning with a digit)", f.name)
		}
		if seen[f.name] {
			return nil, fmt.Errorf("two fields of a pane's Protobuf message are named %s", f.name)
		}
		seen[f.name] = true
	}
	number(p.keyFields, nil)
	number(p.valFields, nil)
	p.key = p.file("PaneKey", "A pane's key and window: what a compacted topic keeps the latest revision of.", p.keyFields, nil)
	p.value = p.file("Pane", "A window's result, as weir writes it.", p.valFields, nil)
	return p, nil
}

// number numbers the fields: a field the earlier message had with the
// same type keeps its number; the others take the numbers after the
// highest the earlier message used (reserved ones included). It returns
// the earlier numbers no field keeps, which the new message reserves.
func number(fields []protoField, earlier protoreflect.MessageDescriptor) (reserved []protowire.Number) {
	next := protowire.Number(1)
	kept := map[protowire.Number]bool{}
	if earlier != nil {
		fs := earlier.Fields()
		for i := range fs.Len() {
			next = max(next, fs.Get(i).Number()+1)
		}
		rr := earlier.ReservedRanges()
		for i := range rr.Len() {
			next = max(next, rr.Get(i)[1]) // the end is exclusive
		}
	}
	for i := range fields {
		f := &fields[i]
		if earlier != nil {
			if fd := earlier.Fields().ByName(protoreflect.Name(f.name)); fd != nil && protoType(fd) == f.typ && fd.HasPresence() == f.opt && fd.IsList() == f.rep {
				f.num = fd.Number()
				kept[f.num] = true
				continue
			}
		}
		f.num = next
		next++
	}
	if earlier != nil {
		fs := earlier.Fields()
		for i := range fs.Len() {
			if n := fs.Get(i).Number(); !kept[n] {
				reserved = append(reserved, n)
			}
		}
		rr := earlier.ReservedRanges()
		for i := range rr.Len() {
			for n := rr.Get(i)[0]; n < rr.Get(i)[1]; n++ {
				reserved = append(reserved, n)
			}
		}
	}
	slices.Sort(reserved)
	return slices.Compact(reserved)
}

// protoType is a field's scalar type as the schemas here write it.
func protoType(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return "string"
	case protoreflect.Int64Kind:
		return "int64"
	case protoreflect.BoolKind:
		return "bool"
	case protoreflect.DoubleKind:
		return "double"
	}
	return fd.Kind().String()
}

// file is the proto3 file of one message.
func (p *ProtobufPanes) file(name, doc string, fields []protoField, reserved []protowire.Number) string {
	var b strings.Builder
	fmt.Fprintf(&b, "syntax = \"proto3\";\n\npackage %s;\n\n// %s\nmessage %s {\n", p.pkg, doc, name)
	if len(reserved) > 0 {
		var nums []string
		for _, n := range reserved {
			nums = append(nums, strconv.Itoa(int(n)))
		}
		fmt.Fprintf(&b, "  reserved %s;\n", strings.Join(nums, ", "))
	}
	for _, f := range fields {
		label := ""
		switch {
		case f.opt:
			label = "optional "
		case f.rep:
			label = "repeated "
		}
		fmt.Fprintf(&b, "  %s%s %s = %d;", label, f.typ, f.name, f.num)
		if f.doc != "" {
			fmt.Fprintf(&b, " // %s", f.doc)
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.String()
}

// Register numbers the fields after the subjects' latest schemas (see
// ProtobufPanes), then registers the key's and the value's schemas as
// paneSchemas.Register does.
func (p *ProtobufPanes) Register(ctx context.Context) error {
	if p.registered {
		return nil
	}
	ks, vs := p.Subjects()
	for _, m := range []struct {
		subject, name, doc string
		fields             []protoField
		schema             *string
	}{
		{ks, "PaneKey", "A pane's key and window: what a compacted topic keeps the latest revision of.", p.keyFields, &p.key},
		{vs, "Pane", "A window's result, as weir writes it.", p.valFields, &p.value},
	} {
		earlier, err := p.latest(ctx, m.subject, m.name)
		if err != nil {
			return err
		}
		if earlier == nil {
			continue
		}
		reserved := number(m.fields, earlier)
		*m.schema = p.file(m.name, m.doc, m.fields, reserved)
	}
	return p.paneSchemas.Register(ctx)
}

// latest is the message name of the subject's latest schema, or nil when
// the subject has none (or its latest is not a Protobuf file of it).
func (p *ProtobufPanes) latest(ctx context.Context, subject, name string) (protoreflect.MessageDescriptor, error) {
	s, err := p.reg.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == 404 {
			return nil, nil
		}
		return nil, connector.Transient(fmt.Errorf("schema registry %s: reading the latest schema of subject %s: %w", p.reg.url, subject, err))
	}
	if s.Type != sr.TypeProtobuf || len(s.References) > 0 {
		return nil, nil
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if path == "latest.proto" {
			return protocompile.SearchResult{Source: strings.NewReader(s.Schema.Schema)}, nil
		}
		return protocompile.SearchResult{}, fmt.Errorf("%s: not found", path)
	}))}
	files, err := comp.Compile(ctx, "latest.proto")
	if err != nil {
		return nil, nil // not weir's: the registry judges the new one
	}
	return files[0].Messages().ByName(protoreflect.Name(name)), nil
}

// Record is a pane as a Kafka record in the registry's framing. It needs
// Register first.
func (p *ProtobufPanes) Record(pane *plan.PaneFields) (key, value []byte) {
	key = append(framedHeader(make([]byte, 0, 64), p.keyID), 0)
	key = p.appendMessage(key, p.keyFields, pane)
	value = append(framedHeader(make([]byte, 0, 256), p.valID), 0)
	value = p.appendMessage(value, p.valFields, pane)
	return key, value
}

// appendMessage appends the fields of a pane, in the order of the
// message's fields (a deterministic encoding). A proto3 field without
// presence is left out when it holds its zero value, as Protobuf's own
// encoders do; an optional one is written whenever the pane has a value.
func (p *ProtobufPanes) appendMessage(b []byte, fields []protoField, pane *plan.PaneFields) []byte {
	for _, f := range fields {
		switch f.role {
		case protoKey:
			b = appendProtoString(b, f.num, pane.KeyText(f.i))
		case protoStart:
			b = appendProtoInt(b, f.num, int64(pane.Start))
		case protoEnd:
			b = appendProtoInt(b, f.num, int64(pane.End))
		case protoRevision:
			b = appendProtoInt(b, f.num, pane.Revision)
		case protoTiming:
			b = appendProtoString(b, f.num, pane.Timing)
		case protoFinal:
			b = appendProtoBool(b, f.num, pane.Final)
		case protoRetract:
			b = appendProtoBool(b, f.num, pane.Retract)
		case protoStatus:
			b = appendProtoString(b, f.num, window.Status(pane.Final, pane.Retract))
		case protoMode:
			b = appendProtoString(b, f.num, pane.Mode)
		case protoVersion:
			b = appendProtoInt(b, f.num, pane.Version)
		case protoWatermark:
			b = appendProtoInt(b, f.num, int64(pane.Watermark))
		case protoEmitted:
			b = appendProtoInt(b, f.num, int64(pane.Emitted))
		case protoPartial:
			for _, n := range pane.Partial {
				b = protowire.AppendString(protowire.AppendTag(b, f.num, protowire.BytesType), n)
			}
		default:
			var v any
			if f.i < len(pane.Values) {
				v = pane.Values[f.i]
			}
			if v != nil {
				b = appendProtoAggregate(b, f, v)
			}
		}
	}
	return b
}

// appendProtoAggregate appends an aggregate's value, present.
func appendProtoAggregate(b []byte, f protoField, v any) []byte {
	switch f.role {
	case protoCount:
		switch x := v.(type) {
		case int64:
			return protowire.AppendVarint(protowire.AppendTag(b, f.num, protowire.VarintType), uint64(x))
		case float64:
			return protowire.AppendVarint(protowire.AppendTag(b, f.num, protowire.VarintType), uint64(int64(x)))
		}
	case protoNumber:
		var d float64
		switch x := v.(type) {
		case int64:
			d = float64(x)
		case float64:
			d = x
		case string:
			d, _ = strconv.ParseFloat(x, 64)
		default:
			panic(fmt.Sprintf("formats: a %T for a number", v))
		}
		return protowire.AppendFixed64(protowire.AppendTag(b, f.num, protowire.Fixed64Type), math.Float64bits(d))
	case protoExact:
		var t []byte
		switch x := v.(type) {
		case int64:
			t = strconv.AppendInt(nil, x, 10)
		case float64:
			t = text.AppendJSONFloat(nil, x)
		case string:
			t = []byte(x)
		}
		return protowire.AppendBytes(protowire.AppendTag(b, f.num, protowire.BytesType), t)
	case protoJSON:
		return protowire.AppendBytes(protowire.AppendTag(b, f.num, protowire.BytesType), jsonText(v))
	}
	panic(fmt.Sprintf("formats: a %T for an aggregate of a pane's field %s", v, f.name))
}

func appendProtoString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func appendProtoInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), uint64(v))
}

func appendProtoBool(b []byte, num protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), 1)
}

// jsonText is an aggregate's value as JSON text.
func jsonText(v any) []byte {
	if r, ok := v.(plan.RawJSON); ok {
		return []byte(r)
	}
	j, _ := json.Marshal(v)
	return j
}
