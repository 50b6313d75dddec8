package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/plan"
)

// JSON Schema records are JSON objects in Confluent's framing: the magic
// byte 0, the schema's 4-byte id, the JSON text (as Confluent's
// JSONSerializer writes it). The schema of each id is fetched from the
// registry once, compiled once by santhosh-tekuri/jsonschema (drafts 4, 6,
// 7, 2019-09 and 2020-12; a schema without $schema is read as draft 7,
// pinned rather than the library's default, which moves with new drafts),
// its references (other subjects' versions) fetched by subject and
// version. A record is validated against its schema and, valid, handed on
// as the JSON it is: nothing is re-encoded.
//
// A payload that is not one JSON object is not_decodable; an object the
// schema refuses is not_valid, with the validator's first error.

// ReasonNotValid: the payload is JSON, but not valid under its schema.
const ReasonNotValid = "not_valid"

func init() {
	plan.RegisterFormat(plan.FormatKind{
		Name:     "json_schema",
		Doc:      "JSON objects framed by a schema registry (registry:), each validated against its JSON Schema: one it refuses is quarantined as not_valid.",
		Registry: true,
		Parse:    parseJSONSchema,
	})
}

// jsonSchemaConfig is the json_schema format's settings: its registry.
type jsonSchemaConfig struct {
	reg *plan.Registry
}

func parseJSONSchema(s plan.Settings, reg *plan.Registry) (plan.FormatConfig, error) {
	if reg == nil {
		return nil, s.Errorf("registry", "missing: json_schema records are framed by a schema registry, which serves their schemas (registry: {url: ...}); JSON lines without one are format json")
	}
	if reg.Subject != "" {
		return nil, s.Errorf("registry", "subject is the reader's schema of Avro records: a JSON Schema record is validated against its own schema; leave subject out")
	}
	return &jsonSchemaConfig{reg: reg}, nil
}

func (c *jsonSchemaConfig) Describe() string {
	return "json_schema, schemas from the registry at " + c.reg.URL
}

func (c *jsonSchemaConfig) New(env plan.Env, topic string) (plan.Decoder, error) {
	cl, err := newRegistryClient(c.reg, env.Log)
	if err != nil {
		return nil, err
	}
	return &jsonSchemaDecoder{reg: cl}, nil
}

// jsonSchemaDecoder validates JSON records against their schemas by id.
type jsonSchemaDecoder struct {
	reg  *registryClient
	byID compiled[*jsonSchema]
}

// jsonSchema is a registry's schema, compiled, or why it cannot be.
type jsonSchema struct {
	s   *jsonschema.Schema
	err error
}

// maxDetail bounds a not_valid record's detail: the validator's first
// error, which may quote long values.
const maxDetail = 300

// AppendJSON implements plan.Decoder.
func (d *jsonSchemaDecoder) AppendJSON(dst, value []byte) ([]byte, error) {
	id, payload, err := frame(value)
	if err != nil {
		return dst, err
	}
	s, err := d.byID.get(d.reg, id, d.compile)
	if err != nil {
		return dst, err
	}
	if s.err != nil {
		return dst, s.err
	}
	v, err := decodeJSON(payload)
	if err != nil {
		return dst, plan.Bad(ReasonNotDecodable, "%v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return dst, plan.Bad(ReasonNotDecodable, "the payload is a JSON %s, not an object", jsonKind(v))
	}
	if err := s.s.Validate(v); err != nil {
		return dst, plan.Bad(ReasonNotValid, "%s", firstError(err))
	}
	payload = bytes.TrimSpace(payload)
	if bytes.IndexAny(payload, "\r\n") < 0 {
		return append(dst, payload...), nil
	}
	// Written across lines: one line, as the line rules and the late
	// output's lines have it.
	var b bytes.Buffer
	json.Compact(&b, payload)
	return append(dst, b.Bytes()...), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// firstError is the validator's first error, the deepest: where in the
// record, and what ("at '/amount': got string, want number"), bounded.
func firstError(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return bound(err.Error())
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return bound(ve.Error())
}

// bound is s cut to maxDetail bytes, on a rune's boundary.
func bound(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	n := maxDetail
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// compile compiles the schema of id, and its references, once.
func (d *jsonSchemaDecoder) compile(id int, w sr.Schema) *jsonSchema {
	s, err := compileJSONSchema(id, w, d.reg)
	if err != nil {
		return &jsonSchema{err: err}
	}
	return &jsonSchema{s: s}
}

// jsonSchemaBase is where a registry's schema of id is, for the compiler:
// a name only, as nothing is ever loaded (a reference's name, relative,
// is resolved against it).
func jsonSchemaBase(id int) string {
	return fmt.Sprintf("https://schema-registry.invalid/schemas/ids/%d", id)
}

// compileJSONSchema compiles the registry's schema w of id. Its references
// are fetched from the registry by subject and version, and found by
// their names (resolved against the schema's $id, or its place); no other
// schema is loaded from anywhere, the drafts' metaschemas aside.
func compileJSONSchema(id int, w sr.Schema, reg *registryClient) (*jsonschema.Schema, error) {
	if w.Type != sr.TypeJSON {
		return nil, plan.Bad(ReasonUnknownSchema, "schema %d is %s, not JSON Schema", id, w.Type)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no file, no URL
	c.DefaultDraft(jsonschema.Draft7)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(w.Schema))
	if err != nil {
		return nil, plan.Bad(ReasonUnknownSchema, "schema %d is not JSON: %v", id, err)
	}
	base := jsonSchemaBase(id)
	if err := c.AddResource(base, doc); err != nil {
		return nil, plan.Bad(ReasonUnknownSchema, "schema %d: %v", id, err)
	}
	bases := []string{base}
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$id"].(string); ok {
			bases = append(bases, s)
		}
	}
	added := map[string]bool{base: true}
	for _, r := range w.References {
		ref, err := reg.version(r.Subject, r.Version)
		if err != nil {
			return nil, err
		}
		rdoc, err := jsonschema.UnmarshalJSON(strings.NewReader(ref.Schema))
		if err != nil {
			return nil, plan.Bad(ReasonUnknownSchema, "schema %d: its reference %s (subject %s version %d) is not JSON: %v", id, r.Name, r.Subject, r.Version, err)
		}
		for _, b := range bases {
			u, err := resolveURL(b, r.Name)
			if err != nil || added[u] {
				continue
			}
			added[u] = true
			if err := c.AddResource(u, rdoc); err != nil {
				return nil, plan.Bad(ReasonUnknownSchema, "schema %d: its reference %s: %v", id, r.Name, err)
			}
		}
	}
	s, err := c.Compile(base)
	if err != nil {
		return nil, plan.Bad(ReasonUnknownSchema, "schema %d does not compile: %s", id, bound(err.Error()))
	}
	return s, nil
}

// resolveURL is ref resolved against base, without a fragment.
func resolveURL(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	u := b.ResolveReference(r)
	u.Fragment = ""
	if !u.IsAbs() {
		return "", fmt.Errorf("%s is not absolute", u)
	}
	return u.String(), nil
}
