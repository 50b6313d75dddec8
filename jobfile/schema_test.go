package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var updateSchema = flag.Bool("update-schema", false, "write the job file's JSON schema to docs/job.schema.json")

// The schema shipped for editors is the one the parser's definitions make.
func TestSchemaFile(t *testing.T) {
	const path = "../docs/job.schema.json"
	want := Schema()
	if *updateSchema {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("docs/job.schema.json is not the schema of the job file's definitions (%v): go test ./jobfile -run TestSchemaFile -update-schema", err)
	}
	if !json.Valid(want) {
		t.Errorf("the schema is not JSON")
	}
}

// schemaBase is a job file every field can be added to.
const schemaBase = `name: t
source: {file: in.jsonl}
time: {field: ts}
window: {tumbling: 1m}
aggregates: {n: count}
output: out.jsonl
`

// schemaJoinBase is a job file with a join, which the fields under join
// are added to.
const schemaJoinBase = `name: t
source: {file: in.jsonl}
time: {field: ts}
key: k
join: {with: {source: {file: in2.jsonl}, time: {field: ts}, key: k}, between: [0s, 1m]}
output: out.jsonl
`

// schemaLookupBase is a job file with a lookup, which the fields under
// lookup are added to; DATABASE is its database.
const schemaLookupBase = `name: t
source: {file: in.jsonl}
time: {field: ts}
key: k
lookup: {DATABASE, query: "SELECT k, v FROM t WHERE k IN ({keys})"}
output: out.jsonl
`

// baseOf is the job file path is added to.
func baseOf(path string) []byte {
	switch {
	case path == "join" || strings.HasPrefix(path, "join."):
		return []byte(schemaJoinBase)
	case strings.HasPrefix(path, "lookup.postgres"):
		return []byte(strings.Replace(schemaLookupBase, "DATABASE", "postgres: {dsn: postgres://h/db}", 1))
	case path == "lookup" || strings.HasPrefix(path, "lookup."):
		return []byte(strings.Replace(schemaLookupBase, "DATABASE", "sqlite: {path: l.db}", 1))
	}
	return []byte(schemaBase)
}

// schemaContext is what a field needs around it to be read at all: the
// settings of its mapping's kind, by the mapping's path.
var schemaContext = map[string][]string{
	"source.kafka":           {"source={kafka: {brokers: [b:9092], topic: in}}"},
	"join.with.source.kafka": {"join.with.source={kafka: {brokers: [b:9092], topic: in2}}"},
	"window.sliding":         {"window={sliding: {size: 10m, slide: 1m}}"},
	"window.session":         {"window={session: {gap: 1m}}"},
	"output.kafka":           {"output={kafka: {brokers: [b:9092], topic: out}}"},
	"output.registry":        {"output={kafka: {brokers: [b:9092], topic: out}, format: avro, registry: {url: http://r:8081}}"},
	"output.sqlite":          {"output={sqlite: {path: r.db, table: r}}"},
	"output.postgres":        {"output={postgres: {dsn: postgres://h/db, table: r}}"},
	"late_output.kafka":      {"late_output={kafka: {brokers: [b:9092], topic: late}}"},
	"quarantine.kafka":       {"quarantine={kafka: {brokers: [b:9092], topic: bad}}"},
	"output":                 {"output={file: o.jsonl}"},
	"late_output":            {"late_output={file: l.jsonl}"},
	"quarantine":             {"quarantine={file: q.jsonl}"},
	"dead_letter.kafka":      {"dead_letter={kafka: {brokers: [b:9092], topic: refused}}"},
	"dead_letter":            {"dead_letter={file: d.jsonl}"},
	"http":                   {"http={listen: 127.0.0.1:1}"},
	"checkpoint":             {"checkpoint={dir: ck}"},
	"lookup.cache":           {"lookup.cache={size: 10}"},
}

// contextOf is what path needs around it (schemaContext), the outer
// mappings' first; with self, path's own too.
func contextOf(path string, self bool) []string {
	var prefixes []string
	for p := range schemaContext {
		if strings.HasPrefix(path, p+".") || self && path == p {
			prefixes = append(prefixes, p)
		}
	}
	slices.SortFunc(prefixes, func(a, b string) int { return len(a) - len(b) })
	var sets []string
	for _, p := range prefixes {
		sets = append(sets, schemaContext[p]...)
	}
	return sets
}

// leaves are the paths of every field that holds a value, not a mapping of
// known fields (its alternatives' fields included).
func leaves(prefix string, s *shape) []string {
	var out []string
	switch s.Kind {
	case kObject:
		for _, f := range s.Fields {
			p := f.Name
			if prefix != "" {
				p = prefix + "." + f.Name
			}
			out = append(out, leaves(p, f.Shape)...)
			if f.Shape.Kind != kObject {
				out = append(out, p)
			}
		}
	case kOneOf:
		for _, a := range s.OneOf {
			if a.Kind == kObject {
				out = append(out, leaves(prefix, a)...)
			}
		}
	case kList:
		if s.Item.Kind == kObject || s.Item.Kind == kOneOf {
			out = append(out, leaves(prefix, s.Item)...)
		}
	case kMap:
		out = append(out, prefix+".n")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Every field the schema names is read by the parser: given a value of the
// wrong kind, the job file is refused with an error that names the field.
// A field the schema added and the parser never reads would be accepted
// and ignored.
func TestSchemaFieldsAreRead(t *testing.T) {
	paths := leaves("", jobShape)
	if len(paths) < 80 {
		t.Fatalf("only %d fields: %v", len(paths), paths)
	}
	for _, path := range paths {
		sets := append(contextOf(path, false), path+"={wrong: [1]}")
		_, err := ParseWith(baseOf(path), "job.yaml", t.TempDir(), LoadOptions{Set: sets})
		var e *Error
		if !errors.As(err, &e) || (e.Field != path && !strings.HasPrefix(e.Field, path+".") && !strings.HasPrefix(e.Field, path+"[")) {
			t.Errorf("%s: a mapping where a value belongs gives %v; want an error naming %s", path, err, path)
		}
	}
	// And the parser knows no field the schema does not name: a typo in
	// every mapping of the schema is refused as unknown.
	var objects func(prefix string, s *shape)
	objects = func(prefix string, s *shape) {
		switch s.Kind {
		case kObject:
			typo := "zz"
			if prefix != "" {
				typo = prefix + ".zz"
			}
			sets := contextOf(prefix, true)
			if prefix == "source" {
				sets = append(sets, "source={file: in.jsonl}")
			}
			_, err := ParseWith(baseOf(prefix), "job.yaml", t.TempDir(), LoadOptions{Set: append(sets, typo+"=1")})
			var e *Error
			if !errors.As(err, &e) || e.Field != typo || !strings.Contains(e.Msg, `unknown field "zz"`) {
				t.Errorf("%s: %v; want unknown field zz", typo, err)
			}
			for _, f := range s.Fields {
				objects(strings.TrimPrefix(prefix+"."+f.Name, "."), f.Shape)
			}
		case kOneOf:
			for _, a := range s.OneOf {
				objects(prefix, a)
			}
		case kList:
			objects(prefix, s.Item)
		}
	}
	objects("", jobShape)
}

// The example job files, and the job-file reference's description of
// every field (docs/job-file.md), follow the schema.
func TestSchemaValidatesExamples(t *testing.T) {
	var schema any
	if err := json.Unmarshal(Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range []string{"job.yaml", "kafka.yaml", "group.yaml", "kafka-avro.yaml", "kafka-protobuf.yaml", "kafka-json-schema.yaml"} {
		b, err := os.ReadFile("../examples/fraud/" + f)
		if err != nil {
			t.Fatal(err)
		}
		files["examples/fraud/"+f] = b
	}
	readme, err := os.ReadFile("../docs/job-file.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "## The job file")
	_, block, _ = strings.Cut(block, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	files["docs/job-file.md's job file"] = []byte(block)
	_, block, _ = strings.Cut(string(readme), "### Joins")
	_, block, _ = strings.Cut(block, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	files["docs/job-file.md's join"] = []byte(block)
	_, block, _ = strings.Cut(string(readme), "**A stream joined with a versioned table")
	_, block, _ = strings.Cut(block, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	files["docs/job-file.md's temporal join"] = []byte(block)
	for _, f := range []string{"unpaid-orders", "card-limits"} {
		b, err := os.ReadFile("../examples/" + f + "/job.yaml")
		if err != nil {
			t.Fatal(err)
		}
		files["examples/"+f+"/job.yaml"] = b
	}
	for name, b := range files {
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := validate(schema, v, ""); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// And a typo is caught, as an editor would show it.
	var v any
	yaml.Unmarshal([]byte(strings.Replace(schemaBase, "window:", "windw:", 1)), &v)
	if err := validate(schema, v, ""); err == nil || !strings.Contains(err.Error(), "windw") {
		t.Errorf("a typo passes the schema: %v", err)
	}
}

// validate checks v against the part of JSON Schema that Schema writes.
func validate(s, v any, at string) error {
	m, ok := s.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: not a schema", at)
	}
	if alts, ok := m["anyOf"].([]any); ok {
		var errs []string
		for _, a := range alts {
			if err := validate(a, v, at); err == nil {
				return nil
			} else {
				errs = append(errs, err.Error())
			}
		}
		return fmt.Errorf("%s: none of %d alternatives: %s", at, len(alts), strings.Join(errs, "; "))
	}
	if c, ok := m["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		return fmt.Errorf("%s: %v is not %v", at, v, c)
	}
	if e, ok := m["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, e)
	}
	switch m["type"] {
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %v is not a string", at, v)
		}
		if p, ok := m["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, p)
		}
		if n, ok := m["minLength"].(float64); ok && float64(len(str)) < n {
			return fmt.Errorf("%s: %q is too short", at, str)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %v is not a boolean", at, v)
		}
	case "integer":
		n, ok := v.(int)
		if !ok {
			return fmt.Errorf("%s: %v is not an integer", at, v)
		}
		if lo, ok := m["minimum"].(float64); ok && float64(n) < lo {
			return fmt.Errorf("%s: %d is below %v", at, n, lo)
		}
		if hi, ok := m["maximum"].(float64); ok && float64(n) > hi {
			return fmt.Errorf("%s: %d is above %v", at, n, hi)
		}
	case "array":
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %v is not a list", at, v)
		}
		if n, ok := m["minItems"].(float64); ok && float64(len(list)) < n {
			return fmt.Errorf("%s: fewer than %v items", at, n)
		}
		for i, x := range list {
			if err := validate(m["items"], x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v is not a mapping", at, v)
		}
		props, _ := m["properties"].(map[string]any)
		for k, x := range obj {
			field := strings.TrimPrefix(at+"."+k, ".")
			if pn, ok := m["propertyNames"].(map[string]any); ok && !regexp.MustCompile(pn["pattern"].(string)).MatchString(k) {
				return fmt.Errorf("%s: not a name", field)
			}
			sub, ok := props[k]
			if !ok {
				sub = m["additionalProperties"]
			}
			if sub == false {
				return fmt.Errorf("%s: unknown field", field)
			}
			if err := validate(sub, x, field); err != nil {
				return err
			}
		}
		for _, r := range asStrings(m["required"]) {
			if _, ok := obj[r]; !ok {
				return fmt.Errorf("%s: %s is missing", at, r)
			}
		}
		if n, ok := m["minProperties"].(float64); ok && float64(len(obj)) < n {
			return fmt.Errorf("%s: fewer than %v fields", at, n)
		}
	}
	return nil
}

func asStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		out = append(out, x.(string))
	}
	return out
}

// The reference of every field is the one the parser's definitions make.
func TestReferenceFile(t *testing.T) {
	const path = "../docs/job-file-reference.md"
	want := Reference()
	if *updateSchema {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("docs/job-file-reference.md is not the reference of the job file's definitions (%v): go test ./jobfile -run TestReferenceFile -update-schema", err)
	}
	// Every field a job file may have at its top is in it, by its path.
	for _, f := range jobShape.Fields {
		if !bytes.Contains(want, []byte("| `"+f.Name+"` |")) {
			t.Errorf("the reference has no row of %s", f.Name)
		}
	}
}
