package formats

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/plan"
)

// Protobuf records are read without generated code: the .proto file (or
// the registry's schema) is compiled when the job starts, by Buf's
// protocompile, and each record is parsed into a dynamic message of the
// official runtime (google.golang.org/protobuf's dynamicpb), then written
// as the JSON object the line rules read:
//
//   - fields by their names in the .proto (card_id, not protojson's
//     cardId), in the order the .proto declares them;
//   - every field, set or not, as protojson's EmitUnpopulated has it: a
//     proto3 scalar left at its zero is written as that zero (a key 0 is
//     a key), an unset field that has presence (a message, a proto3
//     optional, a proto2 optional without a default) is null, an empty
//     repeated field [] and an empty map {}; of a oneof only the field set
//     is written;
//   - 64-bit integers as JSON numbers with all their digits (not floats,
//     not protojson's strings), as Avro's longs are;
//   - enums by their names (a number the enum does not name, as its
//     number), bytes in base64, maps as objects (their keys sorted);
//   - google.protobuf.Timestamp in RFC 3339 with all its digits
//     ("2026-09-01T12:00:01.123Z"), as Avro's finer timestamps are: weir's
//     time field reads it; the wrappers (Int64Value, StringValue, ...) as
//     their bare value, null when unset; Duration, Struct, Value,
//     ListValue, FieldMask and Empty as protojson writes them.
//
// With a schema registry, a record is in Confluent's framing: the magic
// byte 0, the schema's 4-byte id, the message indexes (zig-zag varints: a
// count, then the path to the message among the file's messages and their
// nested ones, the map fields' entries among these as in the descriptor; a
// single 0 is the file's first message), the payload. The
// schema is a .proto's text or a serialized FileDescriptorProto in base64
// (as some clients register it), its references fetched by subject and
// version; each id is compiled once.

func init() {
	plan.RegisterFormat(plan.FormatKind{
		Name: "protobuf",
		Doc:  "Protobuf binary: framed by a schema registry (registry:), the message by the record's indexes; or alone, each record a message of the type message: in the .proto file schema:.",
		Fields: []plan.Field{
			{Name: "schema", Type: plan.Path, Doc: schemaDoc},
			{Name: "message", Type: plan.String, Doc: "With format protobuf and schema: the message type of every record, by its full name (shop.Order)."},
		},
		Registry: true,
		Parse:    parseProtobuf,
	})
}

// protoConfig is the protobuf format's settings.
type protoConfig struct {
	schemaFile, message string
	fixed               *protoMessage // without a registry
	reg                 *plan.Registry
}

func parseProtobuf(s plan.Settings, reg *plan.Registry) (plan.FormatConfig, error) {
	c := &protoConfig{reg: reg}
	f, hasFile, err := s.Path("schema")
	if err != nil {
		return nil, err
	}
	msg, hasMsg, err := s.String("message")
	if err != nil {
		return nil, err
	}
	if reg != nil {
		// The registry's schema of each record says what it is.
		switch {
		case hasFile:
			return nil, s.Errorf("schema", "with a registry, each record's schema is the registry's: leave schema out")
		case hasMsg:
			return nil, s.Errorf("message", "with a registry, each record's message is given by its indexes: leave message out")
		case reg.Subject != "":
			// Avro's reader's schema; Protobuf reads each record as
			// written (its fields are found by number).
			return nil, s.Errorf("registry", "subject is the reader's schema of Avro records: a Protobuf record is read with its own schema; leave subject out")
		}
		return c, nil
	}
	if !hasFile {
		return nil, s.Errorf("schema", "missing: the .proto file of the records (schema: orders.proto), or a schema registry (registry: {url: ...})")
	}
	if !hasMsg || msg == "" {
		return nil, s.Errorf("message", "missing: the message type of the records, by its full name (message: shop.Order)")
	}
	fd, err := compileProtoFile(f)
	if err != nil {
		return nil, s.Errorf("schema", "%v", err)
	}
	md, err := findMessage(fd, msg)
	if err != nil {
		return nil, s.Errorf("message", "%v", err)
	}
	c.schemaFile, c.message, c.fixed = f, string(md.FullName()), newProtoMessage(md)
	return c, nil
}

// compileProtoFile compiles a .proto file, its imports found in its
// directory or among the well-known types.
func compileProtoFile(path string) (protoreflect.FileDescriptor, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{filepath.Dir(path)}})}
	files, err := comp.Compile(context.Background(), filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	return files[0], nil
}

// findMessage is the message of that name in the file (by its full name,
// or by its name in the file's package).
func findMessage(fd protoreflect.FileDescriptor, name string) (protoreflect.MessageDescriptor, error) {
	name = strings.TrimPrefix(name, ".")
	var all []string
	var found protoreflect.MessageDescriptor
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			all = append(all, string(m.FullName()))
			if string(m.FullName()) == name || fd.Package() != "" && string(m.FullName()) == string(fd.Package())+"."+name {
				found = m
			}
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	if found != nil {
		return found, nil
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s has no message", fd.Path())
	}
	return nil, fmt.Errorf("no message %s in %s; it has %s", name, fd.Path(), strings.Join(all, ", "))
}

func (c *protoConfig) Describe() string {
	if c.reg != nil {
		return "protobuf, schemas from the registry at " + c.reg.URL
	}
	return "protobuf, message " + c.message + " of " + c.schemaFile
}

func (c *protoConfig) New(env plan.Env, topic string) (plan.Decoder, error) {
	d := &protoDecoder{fixed: c.fixed}
	if c.reg == nil {
		if c.fixed == nil {
			return nil, errors.New("protobuf records need a schema registry (registry: {url: ...}) or a .proto file and a message (schema: orders.proto, message: shop.Order)")
		}
		return d, nil
	}
	cl, err := newRegistryClient(c.reg, env.Log)
	if err != nil {
		return nil, err
	}
	d.reg = cl
	return d, nil
}

// protoDecoder decodes Protobuf records: each a message of one type, or,
// with a registry, of its schema's id and indexes.
type protoDecoder struct {
	fixed *protoMessage
	reg   *registryClient

	byID compiled[*protoSchema]
}

// protoSchema is a registry's schema, compiled, and its messages by
// indexes.
type protoSchema struct {
	file  protoreflect.FileDescriptor
	first *protoMessage // the file's first message, indexes [0]
	err   error

	mu     sync.Mutex
	byName map[protoreflect.FullName]*protoMessage
}

// protoMessage is a message type records are of.
type protoMessage struct {
	md   protoreflect.MessageDescriptor
	typ  protoreflect.MessageType
	plan *wirePlan // its records written straight from their bytes
}

func newProtoMessage(md protoreflect.MessageDescriptor) *protoMessage {
	return &protoMessage{md: md, typ: dynamicpb.NewMessageType(md), plan: newWirePlan(md, map[protoreflect.FullName]*wirePlan{})}
}

// protoUnmarshal reads payloads: fields a newer writer added and this
// schema lacks are dropped, as they would be unread.
var protoUnmarshal = proto.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: maxDepth}

// AppendJSON implements plan.Decoder.
func (d *protoDecoder) AppendJSON(dst, value []byte) ([]byte, error) {
	m, payload, err := d.message(value)
	if err != nil {
		return dst, err
	}
	st := wireStates.Get().(*wireState)
	out, err := m.plan.appendWire(dst, payload, st, 0)
	wireStates.Put(st)
	if err == nil {
		return out, nil
	}
	msg := m.typ.New()
	if err := protoUnmarshal.Unmarshal(payload, msg.Interface()); err != nil {
		return dst, plan.Bad(ReasonNotDecodable, "%v", err)
	}
	if out, err = appendProtoMessage(dst, msg, 0); err != nil {
		return dst, plan.Bad(ReasonNotDecodable, "%v", err)
	}
	return out, nil
}

// message is the message type of a record's value, and its payload.
func (d *protoDecoder) message(value []byte) (*protoMessage, []byte, error) {
	if d.reg == nil {
		return d.fixed, value, nil
	}
	id, p, err := frame(value)
	if err != nil {
		return nil, nil, err
	}
	idx, p, err := messageIndexes(p)
	if err != nil {
		return nil, nil, err
	}
	s, err := d.schema(id)
	if err != nil {
		return nil, nil, err
	}
	m, err := s.message(id, idx)
	return m, p, err
}

// messageIndexes reads the framing's message indexes: nil for the file's
// first message (the single byte 0).
func messageIndexes(b []byte) ([]int, []byte, error) {
	if len(b) > 0 && b[0] == 0 {
		return nil, b[1:], nil
	}
	n, k := binary.Varint(b)
	if k <= 0 || n < 0 || n > int64(len(b)) {
		return nil, b, plan.Bad(ReasonNotDecodable, "the message indexes do not decode")
	}
	b = b[k:]
	idx := make([]int, n)
	for i := range idx {
		v, k := binary.Varint(b)
		if k <= 0 || v < 0 || v > math.MaxInt32 {
			return nil, b, plan.Bad(ReasonNotDecodable, "the message indexes do not decode")
		}
		idx[i], b = int(v), b[k:]
	}
	return idx, b, nil
}

// schema is the compiled schema of a registry's id.
func (d *protoDecoder) schema(id int) (*protoSchema, error) {
	s, err := d.byID.get(d.reg, id, d.compile)
	if err != nil {
		return nil, err
	}
	return s, s.err
}

// maxReferences bounds the files a schema's references bring.
const maxReferences = 256

// compile compiles a registry's Protobuf schema with its references.
func (d *protoDecoder) compile(id int, w sr.Schema) *protoSchema {
	if w.Type != sr.TypeProtobuf {
		return &protoSchema{err: plan.Bad(ReasonUnknownSchema, "schema %d is %s, not Protobuf", id, w.Type)}
	}
	files := map[string]any{}
	main, mainFile := fmt.Sprintf("schema-%d.proto", id), protoSource(w.Schema)
	if fdp, ok := mainFile.(*descriptorpb.FileDescriptorProto); ok && fdp.GetName() != "" {
		main = fdp.GetName()
	}
	files[main] = mainFile
	if err := d.references(files, w.References, 0); err != nil {
		return &protoSchema{err: err}
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		switch f := files[path].(type) {
		case string:
			return protocompile.SearchResult{Source: strings.NewReader(f)}, nil
		case *descriptorpb.FileDescriptorProto:
			return protocompile.SearchResult{Proto: f}, nil
		}
		return protocompile.SearchResult{}, os.ErrNotExist
	}))}
	compiled, err := comp.Compile(context.Background(), main)
	if err != nil {
		return &protoSchema{err: plan.Bad(ReasonUnknownSchema, "schema %d does not compile: %v", id, err)}
	}
	fd := compiled[0]
	s := &protoSchema{file: fd, byName: map[protoreflect.FullName]*protoMessage{}}
	if fd.Messages().Len() > 0 {
		s.first = newProtoMessage(fd.Messages().Get(0))
	}
	return s
}

// references fetches a schema's references, and theirs, into files.
func (d *protoDecoder) references(files map[string]any, refs []sr.SchemaReference, depth int) error {
	for _, r := range refs {
		if _, ok := files[r.Name]; ok || standardImport(r.Name) {
			// The well-known types are the compiler's own: the copies
			// some clients register are not always well formed.
			continue
		}
		if depth > maxDepth || len(files) > maxReferences {
			return plan.Bad(ReasonUnknownSchema, "its references go too deep")
		}
		s, err := d.reg.version(r.Subject, r.Version)
		if err != nil {
			return err
		}
		files[r.Name] = protoSource(s.Schema)
		if err := d.references(files, s.References, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// noFile is a resolver that has no file.
var noFile = protocompile.ResolverFunc(func(string) (protocompile.SearchResult, error) {
	return protocompile.SearchResult{}, os.ErrNotExist
})

// standardImport says the file is one of the well-known types, which the
// compiler has.
func standardImport(path string) bool {
	_, err := protocompile.WithStandardImports(noFile).FindFileByPath(path)
	return err == nil
}

// protoSource is a registry's Protobuf schema: a .proto's text, or a
// serialized FileDescriptorProto in base64.
func protoSource(schema string) any {
	if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(schema)); err == nil {
		fdp := &descriptorpb.FileDescriptorProto{}
		if proto.Unmarshal(b, fdp) == nil {
			fillJSONNames(fdp.MessageType)
			return fdp
		}
	}
	return schema
}

// fillJSONNames gives the fields of a descriptor that has none (as
// generated code's descriptors are serialized) their default JSON names,
// as protoc does: the compiler otherwise takes each missing one for an
// empty custom name, in conflict with the next.
func fillJSONNames(ms []*descriptorpb.DescriptorProto) {
	for _, m := range ms {
		for _, f := range m.Field {
			if f.GetJsonName() == "" {
				f.JsonName = proto.String(jsonCamelCase(f.GetName()))
			}
		}
		fillJSONNames(m.NestedType)
	}
}

// jsonCamelCase is a field's default JSON name: its underscores dropped,
// the letter after each in upper case.
func jsonCamelCase(s string) string {
	b := make([]byte, 0, len(s))
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			up = true
			continue
		}
		if up && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b = append(b, c)
	}
	return string(b)
}

// message is the message of the indexes (nil: the first) in the schema.
func (s *protoSchema) message(id int, idx []int) (*protoMessage, error) {
	if idx == nil {
		if s.first == nil {
			return nil, plan.Bad(ReasonUnknownSchema, "schema %d has no message", id)
		}
		return s.first, nil
	}
	if len(idx) == 0 {
		return nil, plan.Bad(ReasonUnknownSchema, "no message indexes")
	}
	ms := s.file.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i >= ms.Len() {
			return nil, plan.Bad(ReasonUnknownSchema, "schema %d has no message at indexes %v", id, idx)
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byName[md.FullName()]
	if !ok {
		m = newProtoMessage(md)
		s.byName[md.FullName()] = m
	}
	return m, nil
}

// appendProtoMessage appends a message as JSON (see the top of this file).
func appendProtoMessage(b []byte, m protoreflect.Message, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, errors.New("messages nested too deep")
	}
	md := m.Descriptor()
	if md.FullName().Parent() == "google.protobuf" {
		if out, ok, err := appendWellKnown(b, m); ok {
			return out, err
		}
	}
	b = append(b, '{')
	fields := md.Fields()
	first := true
	var err error
	for i := range fields.Len() {
		fd := fields.Get(i)
		has := m.Has(fd)
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && !has {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = text.AppendJSONString(b, []byte(fd.Name()))
		b = append(b, ':')
		switch {
		case fd.IsList():
			l := m.Get(fd).List()
			b = append(b, '[')
			for j := range l.Len() {
				if j > 0 {
					b = append(b, ',')
				}
				if b, err = appendProtoValue(b, fd, l.Get(j), depth); err != nil {
					return b, err
				}
			}
			b = append(b, ']')
		case fd.IsMap():
			if b, err = appendProtoMap(b, fd, m.Get(fd).Map(), depth); err != nil {
				return b, err
			}
		case !has && fd.HasPresence() && !fd.HasDefault():
			b = append(b, "null"...)
		default:
			if b, err = appendProtoValue(b, fd, m.Get(fd), depth); err != nil {
				return b, err
			}
		}
	}
	return append(b, '}'), nil
}

// appendProtoMap appends a map field as an object, its keys sorted.
func appendProtoMap(b []byte, fd protoreflect.FieldDescriptor, mp protoreflect.Map, depth int) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	kind := fd.MapKey().Kind()
	sort.Slice(keys, func(i, j int) bool {
		switch kind {
		case protoreflect.StringKind:
			return keys[i].String() < keys[j].String()
		case protoreflect.BoolKind:
			return !keys[i].Bool() && keys[j].Bool()
		case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
			return keys[i].Uint() < keys[j].Uint()
		}
		return keys[i].Int() < keys[j].Int()
	})
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = text.AppendJSONString(b, []byte(k.String()))
		b = append(b, ':')
		if b, err = appendProtoValue(b, fd.MapValue(), mp.Get(k), depth); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendProtoValue appends one value of a field (an item of a list, a
// value of a map).
func appendProtoValue(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.FloatKind:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(b, "null"...), nil
		}
		return strconv.AppendFloat(b, f, 'g', -1, 32), nil
	case protoreflect.DoubleKind:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(b, "null"...), nil
		}
		return appendDouble(b, f), nil
	case protoreflect.StringKind:
		return text.AppendJSONString(b, []byte(v.String())), nil
	case protoreflect.BytesKind:
		return appendBase64(b, v.Bytes()), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return text.AppendJSONString(b, []byte(ev.Name())), nil
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendProtoMessage(b, v.Message(), depth+1)
	}
	return append(b, "null"...), nil
}

// appendWellKnown appends a well-known type's message as weir reads it,
// ok false for one written as any message.
func appendWellKnown(b []byte, m protoreflect.Message) (out []byte, ok bool, err error) {
	md := m.Descriptor()
	switch md.Name() {
	case "Timestamp":
		fs := md.Fields()
		sec, nanos := m.Get(fs.ByName("seconds")).Int(), m.Get(fs.ByName("nanos")).Int()
		if nanos < 0 || nanos >= 1e9 || sec < -62135596800 || sec > 253402300799 {
			return b, true, fmt.Errorf("%s: not a timestamp: seconds %d, nanos %d", md.FullName(), sec, nanos)
		}
		return appendRFC3339(b, sec, nanos), true, nil
	case "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value", "BoolValue", "StringValue", "BytesValue":
		fd := md.Fields().ByName("value")
		if fd == nil {
			return b, false, nil
		}
		out, err := appendProtoValue(b, fd, m.Get(fd), 0)
		return out, true, err
	case "Duration", "Struct", "Value", "ListValue", "FieldMask", "Empty":
		j, err := protojson.Marshal(m.Interface())
		if err != nil {
			return b, true, err
		}
		// protojson's spaces vary from build to build: none here.
		return appendCompactJSON(b, j), true, nil
	}
	return b, false, nil
}

// appendCompactJSON appends JSON without the spaces between its tokens.
func appendCompactJSON(b, j []byte) []byte {
	in := false
	for i := 0; i < len(j); i++ {
		c := j[i]
		switch {
		case in && c == '\\' && i+1 < len(j):
			b = append(b, c, j[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			continue
		}
		b = append(b, c)
	}
	return b
}
