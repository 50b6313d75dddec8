package plan

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// A kind of source or sink is one registration (RegisterSource,
// RegisterSink), as a database/sql driver is: its name (what a job file
// writes, source: {NAME: {...}} or output: {NAME: {...}}), its settings
// (their names, as the job file's fields and the JSON schema of job files
// show them), how to read and check them once, and how to build the
// connector. Adding a kind touches nothing else: the job file reads it,
// weir schema lists it, weir plan shows it, and a Go program uses it by
// name (package weir's ReadKind and SinkToKind).

// Field is one setting of a kind, as the job file names it and its JSON
// schema describes it.
type Field struct {
	Name string
	Type FieldType
	Doc  string
	// Required says the setting must be given.
	Required bool
}

// FieldType is what a setting's value is.
type FieldType uint8

// The types of settings.
const (
	String FieldType = iota
	Int
	Bool
	Duration // a duration: 2s, 5m, 1h30m
	Strings  // a list of strings (or one string)
	Path     // a file's path, relative to the job file's directory
	// StringMap is a mapping of names to strings (HTTP headers: {Authorization:
	// "Bearer ${TOKEN}"}).
	StringMap
)

// Settings are a kind's settings as a front door gives them: a job file's
// mapping, or a Go program's map. Every getter says whether the setting was
// given; an error names the setting, with its line in a job file.
type Settings interface {
	String(name string) (string, bool, error)
	Int(name string) (int, bool, error)
	Bool(name string) (bool, bool, error)
	Duration(name string) (mtime.Time, bool, error)
	Strings(name string) ([]string, bool, error)
	// Path is a file's path, relative to the job file's directory.
	Path(name string) (string, bool, error)
	// StringMap is a mapping of names to strings.
	StringMap(name string) (map[string]string, bool, error)
	// Errorf is an error about the setting name, in the front door's
	// form (a job file's names its file, line and field).
	Errorf(name, format string, args ...any) error
}

// Env is what a kind's connector is built with.
type Env struct {
	// Job is the job's name; Field the job file's field of the output or
	// source ("output[1]"), or the Go program's name of it.
	Job, Field string
	// Checkpointed says the job takes checkpoints: an exactly-once sink
	// holds its output until they commit.
	Checkpointed bool
	// Log takes the connector's log lines.
	Log func(string)
	// Shape is the shape of the panes the job writes, when the front door
	// knows it before the first pane (a job file's does): what a sink that
	// writes a schema (a columnar file) derives it from. nil when it does
	// not; such a sink derives its schema from the first pane.
	Shape *PaneShape
}

// SourceKind is a kind of source: its connector reads records (bytes),
// which the job's format decodes (JSON lines).
type SourceKind struct {
	Name   string
	Doc    string
	Fields []Field
	// Parse reads and checks the settings once, into what New builds the
	// source from.
	Parse func(s Settings) (SourceConfig, error)
}

// SourceConfig is a source kind's settings, read and checked.
type SourceConfig interface {
	// Reads says what it reads, as restore reports and weir plan show it
	// ("mqtt topics sensors/#").
	Reads() string
	// New builds the source.
	New(env Env) (connector.Source, error)
}

// Secreter is a SourceConfig or SinkConfig whose settings hold secrets: a
// URL's credentials, a header's value, a routing key. The front door hides
// each of them wherever it shows the job (its log lines, errors, status, the
// job file as the console serves it), as it hides a password. Secrets are
// the values as given (variables expanded).
type Secreter interface {
	Secrets() []string
}

// Prober is a SinkConfig that can ask the place it writes to whether it is
// there and answers, as weir lint does before a run (an object store's
// bucket, with the job's credentials): an error says what a run would meet.
type Prober interface {
	Probe(ctx context.Context) error
}

// Accepter is a SinkConfig whose settings say what the job accepts from its
// sink, whatever the job's delivery promise (a webhook's delivery:
// at_least_once): with checkpoints, a sink whose guarantee does not keep the
// job's promise is refused, unless its settings accept what it gives.
type Accepter interface {
	// Accepts is the guarantee the settings accept, and whether they say
	// one.
	Accepts() (connector.Guarantee, bool)
}

// SinkKind is a kind of output: its connector writes what the job
// writes, each item as its front door encodes it (Item).
type SinkKind struct {
	Name   string
	Doc    string
	Fields []Field
	// Parse reads and checks the settings once, into what New builds the
	// sink from.
	Parse func(s Settings) (SinkConfig, error)
	// PanesOnly says the kind writes results alone (its items are
	// panes, columns of a file): a front door refuses it for late events,
	// rejected records and dead letters when it reads the job.
	PanesOnly bool
}

// SinkConfig is a sink kind's settings, read and checked.
type SinkConfig interface {
	// Writes says where it writes, as restore reports and weir plan show
	// it ("webhook https://hooks.example.com/…").
	Writes() string
	// Target names where it writes for the name of its commit record in
	// checkpoints ("webhook:alerts"): it must not change while the output
	// is the same place, so that a restore finds its record.
	Target() string
	// New builds the sink.
	New(env Env) (connector.Sink[Item], error)
}

// Item is one thing a job writes, as a sink of a registered kind gets it:
// its front door's JSON of it, the key a keyed output writes it under, its
// identity (the same item has the same identity whenever it is computed,
// so that a sink can tell what a restored run writes again), and, for a
// pane, its fields.
type Item struct {
	Kind ItemKind
	// JSON is the item as the job writes it to a file, without the line's
	// end. A sink may keep it only until its Write returns.
	JSON []byte
	// Key is the key a keyed output (a topic) writes it under: a pane's
	// key and window, an event's key.
	Key []byte
	ID  uint64
	// At is when the item was made, in processing time: a pane's
	// emission, when an event or a record was set aside; zero when it
	// says none.
	At mtime.Time
	// Pane holds a pane's fields (Kind Pane), else nil.
	Pane *PaneFields
}

// ItemKind is what an item is.
type ItemKind uint8

// The kinds of items.
const (
	// Pane is a window's result.
	Pane ItemKind = iota
	// LateEvent is an event too late for all its windows.
	LateEvent
	// RejectedRecord is a record that is not a valid event.
	RejectedRecord
	// DeadLetter is an item an output refused.
	DeadLetter
	// Joined is a record of a join: a pair, or a record that joined
	// nothing.
	Joined
)

// PaneFields are a pane's fields, typed: what a sink that stores columns
// (a table, a columnar file) writes.
type PaneFields struct {
	// Keys are the key's values, each its text (a string's characters, a
	// number's digits), as a table's key columns hold them.
	Keys []any
	// Start and End are its window; for the global window, MinTime and
	// MaxTime.
	Start, End     mtime.Time
	Revision       int64
	Timing         string // EARLY, ON_TIME, LATE
	Final, Retract bool
	// Mode is accumulating, discarding or retracting: whether the values
	// are the window's totals so far or deltas since its last pane.
	Mode               string
	Version            int64
	Watermark, Emitted mtime.Time
	// Names and Values are its aggregates, in order: a value is an int64,
	// a float64, a decimal string, a RawJSON (first, last, a histogram, a
	// top), or nil.
	Names  []string
	Values []any
	// Partial names the aggregates whose values cover only part of the
	// window (added to the job after the window opened); usually none.
	Partial []string
}

// KeyText is the i-th of the key's values as its text, what a column or a
// record field of the key holds: a string as it is, another value as fmt
// prints it, none (nil, or a pane with fewer values) as "".
func (p *PaneFields) KeyText(i int) string {
	if i >= len(p.Keys) {
		return ""
	}
	switch x := p.Keys[i].(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(p.Keys[i])
}

// RawJSON is a value that is JSON text: printed as its text, and
// marshalled as the JSON it is.
type RawJSON string

// MarshalJSON is the text itself.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if r == "" {
		return []byte("null"), nil
	}
	return []byte(r), nil
}

// PaneShape is the shape of the panes a job writes, known before it runs:
// what an output format derives a pane's schema from.
type PaneShape struct {
	// Job is the job's name.
	Job string
	// Keys name the key's fields as a pane names them: "key" for a key
	// of one field, each field of a composite key, none for a job without
	// a key. A key's values are their text (PaneFields.Keys).
	Keys []string
	// Windowed says the panes have a window (all but the global window's).
	Windowed bool
	// Aggregates are the aggregates, in order.
	Aggregates []AggregateShape
}

// AggregateShape is an aggregate's name and the type of its values.
type AggregateShape struct {
	Name string
	Type ValueType
}

// ValueType is the type of an aggregate's values.
type ValueType uint8

// The types of aggregates' values.
const (
	// Integer values are int64s: counts.
	Integer ValueType = iota
	// Number values are int64s, float64s or exact decimals' text (a sum
	// of decimal amounts), whichever each pane's value is.
	Number
	// JSONText values are JSON text (first, last, a histogram, a top).
	JSONText
)

var registry struct {
	sync.RWMutex
	sources map[string]SourceKind
	sinks   map[string]SinkKind
}

// RegisterSource registers a kind of source. It panics if the kind has no
// name, no Parse, or a name registered already: a program's mistake, made
// once at start (a package's init).
func RegisterSource(k SourceKind) {
	registry.Lock()
	defer registry.Unlock()
	if k.Name == "" || k.Parse == nil {
		panic("plan: RegisterSource: a kind needs a name and a Parse")
	}
	if _, dup := registry.sources[k.Name]; dup || reserved[k.Name] {
		panic(fmt.Sprintf("plan: RegisterSource: the kind %q is registered already", k.Name))
	}
	if registry.sources == nil {
		registry.sources = map[string]SourceKind{}
	}
	registry.sources[k.Name] = k
}

// RegisterSink registers a kind of sink, as RegisterSource a kind of
// source.
func RegisterSink(k SinkKind) {
	registry.Lock()
	defer registry.Unlock()
	if k.Name == "" || k.Parse == nil {
		panic("plan: RegisterSink: a kind needs a name and a Parse")
	}
	if _, dup := registry.sinks[k.Name]; dup || reserved[k.Name] {
		panic(fmt.Sprintf("plan: RegisterSink: the kind %q is registered already", k.Name))
	}
	if registry.sinks == nil {
		registry.sinks = map[string]SinkKind{}
	}
	registry.sinks[k.Name] = k
}

// reserved are the kinds the job file reads itself.
var reserved = map[string]bool{"file": true, "kafka": true, "sqlite": true, "postgres": true, "follow": true}

// LookupSource is the registered kind of source of that name.
func LookupSource(name string) (SourceKind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	k, ok := registry.sources[name]
	return k, ok
}

// LookupSink is the registered kind of sink of that name.
func LookupSink(name string) (SinkKind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	k, ok := registry.sinks[name]
	return k, ok
}

// SourceKinds are the registered kinds of sources, by name.
func SourceKinds() []SourceKind {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]SourceKind, 0, len(registry.sources))
	for _, k := range registry.sources {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// SinkKinds are the registered kinds of sinks, by name.
func SinkKinds() []SinkKind {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]SinkKind, 0, len(registry.sinks))
	for _, k := range registry.sinks {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Names are the names of the fields, in order.
func Names(fields []Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return slices.Clip(out)
}

// Values are a kind's settings as a Go program gives them, by their names:
// a string, an int, a bool, a time.Duration or mtime.Time (a Duration), a
// []string.
type Values map[string]any

var _ Settings = Values{}

func (v Values) String(name string) (string, bool, error) {
	x, ok := v[name]
	if !ok {
		return "", false, nil
	}
	s, isString := x.(string)
	if !isString {
		return "", true, v.Errorf(name, "expected a string, got %T", x)
	}
	return s, true, nil
}

func (v Values) Int(name string) (int, bool, error) {
	x, ok := v[name]
	if !ok {
		return 0, false, nil
	}
	i, isInt := x.(int)
	if !isInt {
		return 0, true, v.Errorf(name, "expected an int, got %T", x)
	}
	return i, true, nil
}

func (v Values) Bool(name string) (bool, bool, error) {
	x, ok := v[name]
	if !ok {
		return false, false, nil
	}
	b, isBool := x.(bool)
	if !isBool {
		return false, true, v.Errorf(name, "expected a bool, got %T", x)
	}
	return b, true, nil
}

func (v Values) Duration(name string) (mtime.Time, bool, error) {
	switch x := v[name].(type) {
	case nil:
		return 0, false, nil
	case time.Duration:
		return mtime.Millis(x), true, nil
	case mtime.Time:
		return x, true, nil
	default:
		return 0, true, v.Errorf(name, "expected a time.Duration, got %T", x)
	}
}

func (v Values) Strings(name string) ([]string, bool, error) {
	switch x := v[name].(type) {
	case nil:
		return nil, false, nil
	case string:
		return []string{x}, true, nil
	case []string:
		return x, true, nil
	default:
		return nil, true, v.Errorf(name, "expected a []string, got %T", x)
	}
}

func (v Values) Path(name string) (string, bool, error) { return v.String(name) }

func (v Values) StringMap(name string) (map[string]string, bool, error) {
	switch x := v[name].(type) {
	case nil:
		return nil, false, nil
	case map[string]string:
		return x, true, nil
	default:
		return nil, true, v.Errorf(name, "expected a map[string]string, got %T", x)
	}
}

func (v Values) Errorf(name, format string, args ...any) error {
	return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
}

// Check checks Go values against a kind's fields: every name is a field of
// the kind, and every required field is there.
func (v Values) Check(kind string, fields []Field) error {
	for name := range v {
		if !slices.Contains(Names(fields), name) {
			return fmt.Errorf("%s: unknown setting %q; expected one of %v", kind, name, Names(fields))
		}
	}
	for _, f := range fields {
		if _, ok := v[f.Name]; f.Required && !ok {
			return fmt.Errorf("%s: %s: missing: %s", kind, f.Name, f.Doc)
		}
	}
	return nil
}
