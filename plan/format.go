package plan

import (
	"context"
	"fmt"
	"sort"
)

// A format is what a source's records are written in: JSON lines (the
// default, read by the job itself), Avro, CSV. It is a registration, as a
// kind of source is (RegisterFormat): its name (what a job file writes,
// source: {..., format: NAME}), its settings (fields of the source beside
// format, as schema: orders.avsc), and how to build its decoder.
//
// A decoder turns one record's bytes into one JSON object, which the job's
// line rules then read as they read a JSON line: its times, key, id,
// partition, where and aggregates, with dotted paths into nested records.
// A record it cannot turn into one is a BadRecord: the job quarantines it
// with the decoder's reason, its raw bytes and its position, and goes on.

// FormatKind is a registered format.
type FormatKind struct {
	Name string
	Doc  string
	// Fields are its settings, beside format in the source's mapping.
	Fields []Field
	// Registry says it reads a schema registry's framing when the source
	// names one (registry: {url: ...}).
	Registry bool
	// Parse reads and checks the settings once, into what New builds the
	// decoder from. reg is the source's schema registry, or nil.
	Parse func(s Settings, reg *Registry) (FormatConfig, error)
}

// Registry is a schema registry's address and credentials, as the source
// gives them (registry: {url, username, password, token, subject}).
type Registry struct {
	// URL is the registry's base URL.
	URL string
	// Username and Password authenticate with HTTP basic authentication,
	// Token with a bearer token; all empty, without. Password and Token
	// are secrets: never logged, never shown by weir plan.
	Username, Password, Token string
	// Subject is the subject whose latest schema is the reader's schema,
	// or empty for TOPIC-value.
	Subject string
}

// FieldLister is a FormatConfig whose records' fields are known before a
// record is read: from its schema file, or from the registry's latest
// schema of the topic's subject. weir lint checks the fields a job names
// against them.
type FieldLister interface {
	// Fields are the schema's fields by path (a nested record's field as
	// a.b, to depth 3), each with its type as JSON has it ("number",
	// "string", "bool", "object", "array", or "" when it may be several),
	// and what the schema is ("subject orders-value, version 2").
	Fields(ctx context.Context, topic string) (fields map[string]string, from string, err error)
}

// FormatConfig is a format's settings, read and checked.
type FormatConfig interface {
	// Describe says what the records are, as weir plan shows it ("avro,
	// schemas from the registry at http://…").
	Describe() string
	// New builds a decoder. topic is the source's topic, if any (a
	// registry's default subject is TOPIC-value).
	New(env Env, topic string) (Decoder, error)
}

// RecordsChecker is a FormatConfig that can be read from files of its own
// as well as from records of a topic, and checks, when a front door reads
// the job, that its settings can decode records (an Avro container file
// carries its schema; a record needs a registry or a schema file).
type RecordsChecker interface {
	CheckRecords() error
}

// Decoder turns a record's bytes into one JSON object. It is safe for use
// by concurrent goroutines (a job decodes on several).
type Decoder interface {
	// AppendJSON appends a record's value (connector.Record's Value), as a
	// JSON object, to dst. A record that is not one is a *BadRecord. It may
	// wait (a schema not fetched yet): the source waits with it.
	AppendJSON(dst, value []byte) ([]byte, error)
}

// BadRecord is a record a format cannot read, with the reason the job's
// quarantine gives it (unknown_schema, not_decodable, bad_magic_byte, …).
type BadRecord struct {
	Reason, Detail string
}

func (e *BadRecord) Error() string { return e.Reason + ": " + e.Detail }

// Bad is a BadRecord with a detail in fmt's form.
func Bad(reason, format string, args ...any) *BadRecord {
	return &BadRecord{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

var formats = map[string]FormatKind{}

// RegisterFormat registers a format. It panics if the format has no name,
// no Parse, or a name registered already (json is the job's own).
func RegisterFormat(k FormatKind) {
	registry.Lock()
	defer registry.Unlock()
	if k.Name == "" || k.Parse == nil {
		panic("plan: RegisterFormat: a format needs a name and a Parse")
	}
	if _, dup := formats[k.Name]; dup || k.Name == "json" {
		panic(fmt.Sprintf("plan: RegisterFormat: the format %q is registered already", k.Name))
	}
	formats[k.Name] = k
}

// LookupFormat is the registered format of that name.
func LookupFormat(name string) (FormatKind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	k, ok := formats[name]
	return k, ok
}

// Formats are the registered formats, by name.
func Formats() []FormatKind {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]FormatKind, 0, len(formats))
	for _, k := range formats {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}
