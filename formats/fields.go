package formats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/plan"
)

// The formats whose schema says their records' fields before one is read
// (plan.FieldLister): Avro (its schema file, else the registry's latest
// schema of the subject), Protobuf (its .proto file's message) and JSON
// Schema (the registry's latest schema of the subject). A field's type is
// named as JSON names it, since the line rules read the record as JSON.

// fieldDepth is how deep a schema's nested records are listed.
const fieldDepth = 3

var (
	_ plan.FieldLister = (*avroConfig)(nil)
	_ plan.FieldLister = (*protoConfig)(nil)
	_ plan.FieldLister = (*jsonSchemaConfig)(nil)
)

// latestSchema is the registry's latest schema of the subject (or of
// TOPIC-value), asked once: lint does not wait for a registry that does not
// answer.
func latestSchema(ctx context.Context, reg *plan.Registry, subject, topic string) (sr.SubjectSchema, error) {
	if subject == "" {
		subject = topic + "-value"
	}
	cl, err := newRegistryClient(reg, nil)
	if err != nil {
		return sr.SubjectSchema{}, err
	}
	ss, err := cl.cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		if notFound(err) {
			return ss, fmt.Errorf("the registry at %s has no subject %s", reg.URL, subject)
		}
		return ss, fmt.Errorf("the registry at %s: subject %s: %w", reg.URL, subject, err)
	}
	return ss, nil
}

func (c *avroConfig) Fields(ctx context.Context, topic string) (map[string]string, string, error) {
	node, from := c.readerNode(), "the schema "+c.schemaFile
	if node == nil {
		if c.reg == nil {
			return nil, "", errors.New("no schema: the records carry their own")
		}
		ss, err := latestSchema(ctx, c.reg, c.reg.Subject, topic)
		if err != nil {
			return nil, "", err
		}
		s, err := avro.Parse(ss.Schema.Schema)
		if err != nil {
			return nil, "", fmt.Errorf("subject %s, version %d: %w", ss.Subject, ss.Version, err)
		}
		node = s.Root().ExpandReferences()
		from = fmt.Sprintf("the schema of subject %s, version %d", ss.Subject, ss.Version)
	}
	out := map[string]string{}
	avroFields(out, "", node, fieldDepth)
	return out, from, nil
}

// avroFields notes a record's fields, and its nested records' to depth.
func avroFields(out map[string]string, prefix string, n *avro.SchemaNode, depth int) {
	if depth == 0 {
		return
	}
	for i := range n.Fields {
		f := &n.Fields[i]
		p := f.Name
		if prefix != "" {
			p = prefix + "." + p
		}
		t := nonNull(&f.Type)
		out[p] = avroJSONType(t)
		if t != nil && t.Type == "record" {
			avroFields(out, p, t, depth-1)
		}
	}
}

// nonNull is a union's one branch other than null, or n itself; nil for
// a union of several.
func nonNull(n *avro.SchemaNode) *avro.SchemaNode {
	if n.Type != "union" {
		return n
	}
	var one *avro.SchemaNode
	for i := range n.Branches {
		if n.Branches[i].Type == "null" {
			continue
		}
		if one != nil {
			return nil
		}
		one = &n.Branches[i]
	}
	return one
}

// avroJSONType is the JSON type a value of n is read as (see
// appendAvroJSON).
func avroJSONType(n *avro.SchemaNode) string {
	if n == nil {
		return ""
	}
	switch n.LogicalType {
	case "timestamp-millis", "local-timestamp-millis", "time-millis", "time-micros", "decimal":
		return "number" // epoch milliseconds (weir's event time), milliseconds, digits
	case "timestamp-micros", "timestamp-nanos", "local-timestamp-micros", "local-timestamp-nanos", "date", "uuid":
		return "string" // RFC 3339 with all its digits, a date's midnight, a UUID's text
	}
	switch n.Type {
	case "int", "long", "float", "double":
		return "number"
	case "boolean":
		return "bool"
	case "string", "bytes", "fixed", "enum":
		return "string"
	case "record", "map":
		return "object"
	case "array":
		return "array"
	case "null":
		return "null"
	}
	return ""
}

func (c *protoConfig) Fields(ctx context.Context, topic string) (map[string]string, string, error) {
	if c.fixed == nil {
		return nil, "", errors.New("each record's schema is the registry's of its id: no one message to check the job against")
	}
	out := map[string]string{}
	protoFields(out, "", c.fixed.md, fieldDepth)
	return out, fmt.Sprintf("message %s of %s", c.message, c.schemaFile), nil
}

// protoFields notes a message's fields by their names in the .proto (as
// the format writes them), and its nested messages' to depth.
func protoFields(out map[string]string, prefix string, md protoreflect.MessageDescriptor, depth int) {
	if depth == 0 {
		return
	}
	fs := md.Fields()
	for i := 0; i < fs.Len(); i++ {
		fd := fs.Get(i)
		p := string(fd.Name())
		if prefix != "" {
			p = prefix + "." + p
		}
		t := ""
		switch {
		case fd.IsMap():
			t = "object"
		case fd.IsList():
			t = "array"
		default:
			switch fd.Kind() {
			case protoreflect.BoolKind:
				t = "bool"
			case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.EnumKind:
				t = "string"
			case protoreflect.MessageKind, protoreflect.GroupKind:
				switch fd.Message().FullName() {
				case "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.StringValue", "google.protobuf.BytesValue":
					t = "string"
				case "google.protobuf.BoolValue":
					t = "bool"
				case "google.protobuf.Int32Value", "google.protobuf.Int64Value", "google.protobuf.UInt32Value",
					"google.protobuf.UInt64Value", "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
					t = "number"
				default:
					t = "object"
					protoFields(out, p, fd.Message(), depth-1)
				}
			default:
				t = "number"
			}
		}
		out[p] = t
	}
}

func (c *jsonSchemaConfig) Fields(ctx context.Context, topic string) (map[string]string, string, error) {
	ss, err := latestSchema(ctx, c.reg, "", topic)
	if err != nil {
		return nil, "", err
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(ss.Schema.Schema), &schema); err != nil {
		return nil, "", fmt.Errorf("subject %s, version %d: %w", ss.Subject, ss.Version, err)
	}
	out := map[string]string{}
	jsonSchemaFields(out, "", schema, fieldDepth)
	return out, fmt.Sprintf("the schema of subject %s, version %d", ss.Subject, ss.Version), nil
}

// jsonSchemaFields notes an object schema's properties, and its nested
// objects' to depth. A property whose type is not one name (a list of
// types, a $ref) has the type "".
func jsonSchemaFields(out map[string]string, prefix string, schema map[string]any, depth int) {
	props, _ := schema["properties"].(map[string]any)
	if depth == 0 || props == nil {
		return
	}
	for name, v := range props {
		p := name
		if prefix != "" {
			p = prefix + "." + p
		}
		sub, _ := v.(map[string]any)
		t, _ := sub["type"].(string)
		if list, ok := sub["type"].([]any); ok {
			// ["number", "null"]: the one type other than null.
			for _, x := range list {
				if s, _ := x.(string); s != "null" {
					if t != "" {
						t = ""
						break
					}
					t = s
				}
			}
		}
		switch t {
		case "integer":
			t = "number"
		case "boolean":
			t = "bool"
		}
		out[p] = t
		if t == "object" {
			jsonSchemaFields(out, p, sub, depth-1)
		}
	}
}
