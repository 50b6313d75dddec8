package jobfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/expression"
	"github.com/weirstream/weir/internal/secret"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Job is a validated job file. Paths are absolute (the file's own paths are
// relative to its directory), except "-" for standard input or output.
type Job struct {
	Name string
	File string // the job file, as given

	Input string // JSON-lines file in arrival order, or "-"; empty with Kafka
	// Follow reads Input as tail -F does: it waits for more at its end and
	// goes on across rotation.
	Follow bool
	// Kafka, when set, is the source instead of a file.
	Kafka *KafkaInput
	// Custom, when set, is the source instead of a file: one of a kind
	// registered in package plan.
	Custom *CustomSource
	// Format, when set, is the format of the source's records (Avro);
	// without, they are JSON lines.
	Format *SourceFormat

	TimeField  Path
	RecordTime bool // time.record_timestamp: the event time is the Kafka record's timestamp
	// Ingestion (time.ingestion) takes each event's arrival as its event
	// time: the arrival field's value, or the clock when weir reads it.
	// For a backfill that must not be late: run with it while catching up,
	// then restore a savepoint into the job with time.field (a change the
	// restore carries over).
	Ingestion    bool
	ArrivalField Path // empty: the wall clock
	// SentField, when set, is when the device sent each event, on its own
	// clock: the event time is corrected by it for the device's clock
	// (time.sent_field; linedec.Rules.Sent).
	SentField      Path
	PartitionField Path // empty: one partition
	Key            Path // empty: one global key (or a composite one, KeyParts)
	// KeyParts are the fields of a composite key (key: [user, page]), two
	// or more; then Key is empty. A key is their values as a JSON array,
	// each keeping its type ("1" and 1 stay two keys).
	KeyParts     []Path
	ID           Path // empty: no de-duplication
	DedupHorizon mtime.Time
	// VersionField, with ID, makes events versioned: of two events with
	// one id within the de-duplication horizon, the higher version
	// (compared as integers) replaces the lower in the results; a lower
	// version arriving after a higher one is set aside as superseded.
	VersionField Path
	MaxFuture    mtime.Time // 0: no check (max_future: none)

	Watermark watermark.Strategy
	WMField   Path // watermark.from_field

	Window     window.Strategy
	Aggregates []Aggregate
	// Where keeps the events for which it holds (where:); the others are
	// counted as filtered. Fields are the events' derived fields
	// (fields:), computed before their time, key, id and aggregates are
	// read, in order.
	Where  *expression.Program
	Fields []DerivedField
	// Heartbeat says which records are a source's heartbeats (heartbeat:):
	// their time advances their partition's event time, and they are not
	// events (counted apart, never windowed). A record without a field it
	// reads is not a heartbeat.
	Heartbeat *expression.Program
	// Deletion, of a temporal join's table (join.with.deletion), says
	// which of its records are deletions of their key's row.
	Deletion    *expression.Program
	Having      string
	Parallelism int

	// Outputs are where panes go (output: one, or a list).
	Outputs []Output
	// Late is where too-late events go (nil: dropped, and counted);
	// Rejects where rejected lines go (nil: only counted); DeadLetter where
	// the panes and too-late events an output refused go (a value it
	// cannot store; nil: logged and counted).
	Late, Rejects, DeadLetter *Output
	// WritePartlyLate says the late output also holds the events accepted
	// into some of their windows and too late for the others, naming the
	// windows they missed (late_for_some_windows: write). By default they
	// are counted only: the late output holds the events no window counted,
	// so that replaying it into the results doubles nothing.
	WritePartlyLate bool
	Summary         string

	Checkpoint Checkpoint
	State      State
	// HTTP is where the job serves its metrics, status and console
	// (host:port); empty: nowhere.
	HTTP string
	// HTTPToken, when set, is the bearer token every request to the
	// console but /healthz must carry (http.token); HTTPHosts are the host
	// names it answers besides the local ones and its own address
	// (http.allowed_hosts).
	HTTPToken string
	HTTPHosts []string
	// FileMode is the mode of the job's output files (file_mode): 0, the
	// default, creates them for their owner alone (0600). Checkpoints and
	// state are working storage, their owner's alone whatever it says.
	FileMode os.FileMode
	// MaxKeyBytes is the longest key, in bytes, an event may have
	// (max_key_bytes; 0: the default, DefaultMaxKeyBytes): a longer one is
	// quarantined as key_too_long.
	MaxKeyBytes int64
	// DeadLetterMax is the most bytes of a line or an event a quarantine or
	// late_output record keeps (dead_letter_max_bytes; 0: the default,
	// DefaultDeadLetterMax): beyond, its first bytes, its length and its
	// SHA-256.
	DeadLetterMax int64
	// Acceptance is where weir run writes the acceptance record (JSON, and
	// Markdown beside it); empty: nowhere.
	Acceptance string
	// Version is the version of the job's metric definitions:
	// every pane carries it, and a table keeps a new version's rows over an
	// old one's whatever their revisions. 1 when the file does not say.
	Version int64
	// Task is set in the job of a task of a group job: its partition + 1.
	Task int32

	// Join, when set, makes the job an interval join of its source with
	// another input: see Join. It writes the joined records to Outputs,
	// the records too late to join to Late, and the rejected lines of
	// either input to Rejects; a job with Join has no windows.
	Join *Join
	// Lookup, when set, makes the job a lookup join of its source with a
	// table of SQLite or PostgreSQL: see Lookup. It writes each record
	// with its row to Outputs, and the records whose lookup kept failing
	// to DeadLetter; a job with Lookup has no windows.
	Lookup *Lookup

	// Aggregation names the job's aggregation in a job of several
	// (aggregations:), whose others are Siblings: each a Job with the
	// fields of the file in common and its own AggregationFields. Empty in
	// a job of one.
	Aggregation string
	Siblings    []*Job

	text    []byte      // the job file as read
	doc     *yaml.Node  // the job file as resolved: --set applied, variables expanded
	vars    []expansion // the values that came from environment variables
	secrets *secret.Set // what weir never shows (Redact)

	inputName string // source.file as written, for errors
	inputLine int
	lines     map[string]int // the line of each field the file checks name
}

// InputName is source.file as written, for messages.
func (j *Job) InputName() string { return j.inputName }

// Secrets are what weir never shows of the job: the values of its secret
// settings and of the variables they came from (Redact hides them).
func (j *Job) Secrets() *secret.Set { return j.secrets }

// DefaultMaxFuture is how far ahead of its arrival an event may be when a
// job file does not say (max_future): an hour, as Kafka 4.0 brokers accept
// (message.timestamp.after.max.ms). An event stamped further ahead is
// quarantined as future_event_time before it can move the watermark and
// make every later event too late.
const DefaultMaxFuture mtime.Time = 3_600_000

// Checkpoint configures durable checkpoints.
type Checkpoint struct {
	Dir      string // empty: no checkpoints
	Interval mtime.Time
	Keep     int
	// KeepSavepoints is how many savepoints stay (keep_savepoints,
	// default 3): a new one prunes the oldest beyond, and says so.
	KeepSavepoints    int
	TolerableFailures int
	// MaxHeld bounds the output an exactly-once file or table output holds
	// in memory between two checkpoints (max_held_output, default
	// engine.DefaultMaxHeld): one that reaches it has a checkpoint taken
	// early.
	MaxHeld int64
}

// State configures where window state lives.
type State struct {
	Backend string // "memory" or "pebble"
	Dir     string
	// MemoryBudget (bytes): the Pebble backend's cache, memtables and
	// decoded state stay within it; the memory backend, which cannot spill,
	// warns when its state passes it.
	MemoryBudget int64
}

// Path is a JSON field path: "amount", or "payment.amount" for a nested field.
type Path []string

// ParsePath splits a dotted field name.
func ParsePath(s string) Path {
	if s == "" {
		return nil
	}
	return strings.Split(s, ".")
}

// String joins the path with dots.
func (p Path) String() string { return strings.Join(p, ".") }

// AggKind is an aggregate function of the job file.
type AggKind uint8

// The aggregate functions a job file can name.
const (
	AggCount          AggKind = iota // count: events
	AggCountField                    // count(f): events where f is not null
	AggSum                           // sum(f)
	AggMin                           // min(f)
	AggMax                           // max(f)
	AggAvg                           // avg(f)
	AggCountDistinct                 // count_distinct(f)
	AggPercentile                    // percentile(f, q)
	AggMedian                        // median(f): percentile(f, 0.5)
	AggFirst                         // first(f): of the earliest event time
	AggLast                          // last(f): of the latest event time
	AggHistogram                     // histogram(f, [b1, b2, ...])
	AggTop                           // top(f, n)
	AggApproxDistinct                // approx_count_distinct(f)
)

var aggNames = map[string]AggKind{
	"count": AggCountField, "sum": AggSum, "min": AggMin, "max": AggMax, "avg": AggAvg,
	"count_distinct": AggCountDistinct, "percentile": AggPercentile, "median": AggMedian,
	"first": AggFirst, "last": AggLast, "histogram": AggHistogram, "top": AggTop,
	"approx_count_distinct": AggApproxDistinct,
}

// aggList is how an error lists the aggregates.
const aggList = "count, count(f), sum(f), min(f), max(f), avg(f), count_distinct(f), approx_count_distinct(f), " +
	"percentile(f, q), median(f), first(f), last(f), histogram(f, [b1, b2, ...]) or top(f, n)"

// Aggregate is one named result column.
type Aggregate struct {
	Name  string
	Kind  AggKind
	Field Path // empty for count
	// Q is the quantile of a percentile (0.5 for a median).
	Q float64
	// Bounds are a histogram's, ascending.
	Bounds []float64
	// N is how many values a top keeps.
	N int
}

// maxTop is the largest n of top(f, n).
const maxTop = 1000

// maxBounds is the most bounds a histogram has.
const maxBounds = 1000

// JSONValued reports whether the aggregate's value is JSON text rather than
// a number: first and last keep their values' types, and a histogram and a
// top are objects and arrays.
func (a Aggregate) JSONValued() bool {
	switch a.Kind {
	case AggFirst, AggLast, AggHistogram, AggTop:
		return true
	}
	return false
}

// Reserved output fields: aggregates may not take these names.
var reserved = map[string]bool{
	"key": true, "window_start": true, "window_end": true, "revision": true, "timing": true,
	"final": true, "retract": true, "watermark": true, "emitted_at": true,
	"status": true, "mode": true, "version": true, "updated_at": true, "delta_id": true, "partial": true,
}

// Load reads and validates a job file. The input file must exist (unless it
// is "-"). Every error is an *Error.
func Load(path string) (*Job, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith is Load with the file changed as o says (--set).
func LoadWith(path string, o LoadOptions) (*Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read the job file: " + text.ErrorText(err)}
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	j, err := ParseWith(data, path, dir, o)
	if err != nil {
		return nil, err
	}
	for _, in := range []struct {
		j     *Job
		field string
	}{{j, "source.file"}, {j.joinWith(), "join.with.source.file"}} {
		if in.j == nil || !in.j.InputIsFile() {
			continue
		}
		if st, err := os.Stat(in.j.Input); err != nil {
			return nil, &Error{File: path, Line: in.j.inputLine, Field: in.field,
				Msg: fmt.Sprintf("input %s does not exist (%s)", in.j.inputName, text.ErrorText(err))}
		} else if st.IsDir() {
			return nil, &Error{File: path, Line: in.j.inputLine, Field: in.field,
				Msg: fmt.Sprintf("input %s is a directory, expected a file of JSON lines", in.j.inputName)}
		}
	}
	if err := checkFiles(j, path); err != nil {
		return nil, err
	}
	return j, nil
}

// Parse reads a job file's text. dir is the directory relative paths are
// resolved against; file names the file in errors.
func Parse(data []byte, file, dir string) (*Job, error) {
	return ParseWith(data, file, dir, LoadOptions{})
}

// ParseWith is Parse with the file changed as o says (--set).
func ParseWith(data []byte, file, dir string, o LoadOptions) (*Job, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(quoteCalls(data)))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "the job file is empty"}
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, &Error{File: file, Line: line, Msg: "a second YAML document (after ---): a job file holds one job"}
	} else if !errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if err := noDuplicates(file, "", doc.Content[0]); err != nil {
		return nil, err
	}
	if err := applySets(file, &doc, o.Set); err != nil {
		return nil, err
	}
	exps, err := expandVars(file, "", doc.Content[0], os.LookupEnv)
	if err != nil {
		return nil, err
	}
	secrets := &secret.Set{}
	for _, e := range exps {
		if e.Secret {
			secrets.Add(e.Value, "${"+e.Var+"}")
		}
	}
	// Every secret is known before the file is checked: a mistake quotes
	// the value it found, which may hold one (a connection string).
	addSecrets(secrets, "", doc.Content[0])
	root, err := asMapping(file, "", &doc)
	if err != nil {
		return nil, secrets.RedactError(err)
	}
	p := &parser{file: file, dir: dir}
	j, err := p.job(root)
	if err != nil {
		// A mistake quotes the value it found: never a secret.
		var e *Error
		if errors.As(err, &e) {
			e.Msg = secrets.Redact(e.Msg)
			return nil, e
		}
		return nil, secrets.RedactError(err)
	}
	for _, a := range j.Aggregations() {
		a.text, a.vars, a.secrets, a.doc = data, exps, secrets, &doc
		// The name is shown everywhere (every log line, the summary, the
		// metrics' labels, checkpoints) and names the job to brokers and
		// databases (transactional ids): a secret that came into it is the
		// ${NAME} it came from there too.
		a.Name = secrets.Redact(a.Name)
	}
	if j.Custom != nil {
		addKindSecrets(secrets, j.Custom.Config)
	}
	for _, o := range j.EveryOutput() {
		if o.Custom != nil {
			addKindSecrets(secrets, o.Custom.Config)
		}
		if t := o.Table; t != nil && t.DSN != "" {
			// The connection string with its password put in (withPassword).
			for _, pw := range secret.DSNSecrets(t.DSN) {
				secrets.Add(pw, secret.Mask)
			}
		}
	}
	return j, nil
}

type parser struct {
	file string
	dir  string
}

func (p *parser) resolve(path string) string {
	if path == "-" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(p.dir, path)
}

// versioned checks that a job with version_field can withdraw an earlier
// version of an event from its windows when a revision replaces it: every
// aggregate has an inverse (count, sum and avg; min and max keep no trace
// of the value before theirs, count_distinct no count of each value, the
// others are sketches or picks), and the windows are not sessions (a
// session would keep the extent the withdrawn version gave it).
func (p *parser) versioned(root *node, j *Job) error {
	if j.VersionField == nil {
		return nil
	}
	n := root.get("version_field")
	for _, a := range j.Aggregates {
		switch a.Kind {
		case AggCount, AggCountField, AggSum, AggAvg:
			continue
		}
		return root.errf(n, "version_field", "aggregate %s (%s) cannot withdraw the earlier version a revision replaces: with version_field, use count, sum and avg only", a.Name, a.String())
	}
	if _, ok := j.Window.Assigner.(window.Session); ok {
		return root.errf(n, "version_field", "session windows cannot withdraw the earlier version a revision replaces (the session would keep the extent it gave it): use tumbling or sliding windows")
	}
	if j.Window.Trigger.Composite != nil {
		return root.errf(n, "version_field", "a composite trigger may finish a window, which then cannot withdraw the earlier version a revision replaces: use the trigger's fields (early, late, final_only)")
	}
	return nil
}

// id reads id: the field that identifies an event, for de-duplication.
func (p *parser) id(root *node, j *Job) error {
	s, n, err := root.str("id")
	if err != nil {
		return err
	}
	if n != nil && s == "" {
		return root.errf(n, "id", "expected a field name")
	}
	j.ID = ParsePath(s)
	return nil
}

// job reads the top level. The order of the checks follows the order of a
// job file, so the first error reported is the first a reader would meet.
func (p *parser) job(root *node) (*Job, error) {
	j := &Job{File: p.file, Parallelism: 1, DedupHorizon: mtime.Millis(3600e9), lines: map[string]int{}}
	for _, f := range []string{"output", "late_output", "quarantine", "dead_letter", "summary", "checkpoint", "state", "aggregates", "key"} {
		if v := root.get(f); v != nil {
			j.lines[f] = v.Line
		}
	}
	// Unknown fields first: a typo explains every later error.
	if err := root.strict(jobShape.names()...); err != nil {
		return nil, err
	}
	if v := root.get("aggregations"); v != nil {
		return p.aggregations(root, v)
	}
	var err error
	if j.Name, _, err = root.str("name"); err != nil {
		return nil, err
	}
	if err := p.source(root, j); err != nil {
		return nil, err
	}
	if err := p.sourceFormat(root, j); err != nil {
		return nil, err
	}
	if err := p.fields(root, j); err != nil {
		return nil, err
	}
	if err := p.time(root, j); err != nil {
		return nil, err
	}
	if err := p.key(root, j); err != nil {
		return nil, err
	}
	if err := p.id(root, j); err != nil {
		return nil, err
	}
	if d, ok, err := root.duration("dedup_horizon"); err != nil {
		return nil, err
	} else if ok {
		if j.ID == nil && root.get("join") == nil {
			return nil, root.errf(root.get("dedup_horizon"), "dedup_horizon", "needs id: the field that identifies an event")
		}
		j.DedupHorizon = d
	}
	if s, n, err := root.str("version_field"); err != nil {
		return nil, err
	} else if n != nil {
		if s == "" {
			return nil, root.errf(n, "version_field", "expected a field name")
		}
		if j.ID == nil {
			return nil, root.errf(n, "version_field", "needs id: the field that identifies an event, whose versions it orders")
		}
		j.VersionField = ParsePath(s)
	}
	j.MaxFuture = DefaultMaxFuture
	if v := root.get("max_future"); v != nil && (v.Value == "none" || v.Value == "off") {
		j.MaxFuture = 0
	} else if d, ok, err := root.duration("max_future"); err != nil {
		return nil, err
	} else if ok {
		j.MaxFuture = d
	}
	if err := p.watermark(root, j); err != nil {
		return nil, err
	}
	switch {
	case root.get("lookup") != nil:
		if err := p.where(root, j); err != nil {
			return nil, err
		}
		if err := p.lookup(root, j); err != nil {
			return nil, err
		}
	case root.get("join") != nil:
		if err := p.where(root, j); err != nil {
			return nil, err
		}
		if err := p.join(root, j); err != nil {
			return nil, err
		}
	default:
		if err := p.window(root, j); err != nil {
			return nil, err
		}
		if err := p.aggregates(root, j); err != nil {
			return nil, err
		}
		if err := p.versioned(root, j); err != nil {
			return nil, err
		}
		if err := p.checkKeyParts(j); err != nil {
			return nil, err
		}
		if err := p.where(root, j); err != nil {
			return nil, err
		}
	}
	if err := p.having(root, j); err != nil {
		return nil, err
	}
	if err := p.outputs(root, j); err != nil {
		return nil, err
	}
	if err := p.checkJoinOutputs(j); err != nil {
		return nil, err
	}
	if n, ok, err := root.integer("parallelism"); err != nil {
		return nil, err
	} else if ok {
		if n < 1 || n > 256 {
			return nil, root.errf(root.get("parallelism"), "parallelism", "expected a number from 1 to 256, got %d", n)
		}
		j.Parallelism = n
	}
	j.Version = 1
	if n, ok, err := root.integer("version"); err != nil {
		return nil, err
	} else if ok {
		if n < 1 {
			return nil, root.errf(root.get("version"), "version", "expected a whole number from 1, got %d", n)
		}
		j.Version = int64(n)
	}
	if err := p.checkpoint(root, j); err != nil {
		return nil, err
	}
	if j.Grouped() && j.Checkpoint.Interval == 0 {
		j.Checkpoint = Checkpoint{Interval: 1000, Keep: 3, TolerableFailures: 3}
	}
	if err := p.checkGroup(j); err != nil {
		return nil, err
	}
	if err := p.checkDelivery(j); err != nil {
		return nil, err
	}
	if err := p.checkAvroNames(j); err != nil {
		return nil, err
	}
	if err := p.checkTables(j); err != nil {
		return nil, err
	}
	if err := p.state(root, j); err != nil {
		return nil, err
	}
	if err := p.http(root, j); err != nil {
		return nil, err
	}
	if m, mn, err := root.str("file_mode"); err != nil {
		return nil, err
	} else if mn != nil {
		v, err := strconv.ParseUint(strings.TrimPrefix(m, "0o"), 8, 32)
		if err != nil || v&^0o777 != 0 || v&0o600 != 0o600 {
			return nil, root.errf(mn, "file_mode", "expected an octal mode from 0600 to 0777 such as \"0640\" (the owner reads and writes; group and others as you choose), got %q", m)
		}
		j.FileMode = os.FileMode(v)
	}
	if m, mn, err := root.str("max_key_bytes"); err != nil {
		return nil, err
	} else if mn != nil {
		v, err := parseBytes(m)
		if err != nil || v < 1 || v > 1<<20 {
			return nil, root.errf(mn, "max_key_bytes", "expected a size from 1B to 1MiB such as 1KiB, got %q", m)
		}
		j.MaxKeyBytes = v
	}
	if m, mn, err := root.str("dead_letter_max_bytes"); err != nil {
		return nil, err
	} else if mn != nil {
		v, err := parseBytes(m)
		if err != nil || v < 256 || v > 16<<20 {
			return nil, root.errf(mn, "dead_letter_max_bytes", "expected a size from 256B to 16MiB such as 64KiB, got %q", m)
		}
		j.DeadLetterMax = v
	}
	return j, nil
}

// key reads key: a field, or a list of fields (a composite key).
func (p *parser) key(root *node, j *Job) error {
	v := root.get("key")
	if v == nil || v.Kind != yaml.SequenceNode {
		s, n, err := root.str("key")
		if err != nil {
			return root.errf(n, "key", "expected a field name, or a list of them: key: [user, page]")
		}
		if n != nil && s == "" {
			return root.errf(n, "key", "expected a field name")
		}
		j.Key = ParsePath(s)
		return nil
	}
	seen := map[string]bool{}
	for _, c := range v.Content {
		if c.Kind != yaml.ScalarNode || c.Value == "" {
			return root.errf(c, "key", "expected a list of field names: key: [user, page]")
		}
		if seen[c.Value] {
			return root.errf(c, "key", "%s is in the key twice", c.Value)
		}
		seen[c.Value] = true
		j.KeyParts = append(j.KeyParts, ParsePath(c.Value))
	}
	switch len(j.KeyParts) {
	case 0:
		return root.errf(v, "key", "an empty list: name the key's fields, or leave key out for one global key")
	case 1:
		j.Key, j.KeyParts = j.KeyParts[0], nil
	}
	return nil
}

// checkKeyParts checks that a composite key's fields, each written to a
// result as a field of its own, take no name a result already has.
func (p *parser) checkKeyParts(j *Job) error {
	for _, k := range j.KeyParts {
		name := k.String()
		if reserved[name] {
			return &Error{File: p.file, Line: j.lines["key"], Field: "key",
				Msg: fmt.Sprintf("%q is a field of every result, and a composite key's fields are written beside it: rename the input field with fields:", name)}
		}
		for _, a := range j.Aggregates {
			if a.Name == name {
				return &Error{File: p.file, Line: j.lines["aggregates"], Field: "aggregates." + a.Name,
					Msg: "is also a field of the composite key, which every result holds: rename the aggregate"}
			}
		}
	}
	return nil
}

// Keyed reports whether the job has a key (one field, or composite).
func (j *Job) Keyed() bool { return j.Key != nil || j.KeyParts != nil }

// inputIsFile reports whether the job reads a file of the local disk
// (source.file), not standard input, a topic or a registered kind's
// source.
func (j *Job) InputIsFile() bool { return j.Input != "-" && j.Kafka == nil && j.Custom == nil }

// KeyName names the job's key as a restore, a plan and a message say it:
// "card", or "[user, page]"; "" without one.
func (j *Job) KeyName() string {
	if j.KeyParts == nil {
		return j.Key.String()
	}
	var names []string
	for _, k := range j.KeyParts {
		names = append(names, k.String())
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// keyFields are the fields the key is read from: one, or a composite key's.
func (j *Job) KeyFields() []Path {
	if j.KeyParts != nil {
		return j.KeyParts
	}
	if j.Key != nil {
		return []Path{j.Key}
	}
	return nil
}

// DefaultMaxKeyBytes is the longest key when the job file does not say:
// 1 KiB, which every output takes (a PostgreSQL index, a Kafka message).
const DefaultMaxKeyBytes = 1 << 10

// KeyBytesLimit is the longest key an event may have: MaxKeyBytes, or
// its default.
func (j *Job) KeyBytesLimit() int64 {
	if j.MaxKeyBytes > 0 {
		return j.MaxKeyBytes
	}
	return DefaultMaxKeyBytes
}

// DefaultDeadLetterMax is how much of a line or an event a dead-letter
// record keeps when the job file does not say: 64 KiB, so that a record,
// escaped, always fits a Kafka message (1 MiB by default).
const DefaultDeadLetterMax = 64 << 10

// DeadLetterLimit is the most of a line or an event a quarantine or late
// record keeps: DeadLetterMax, or its default.
func (j *Job) DeadLetterLimit() int64 {
	if j.DeadLetterMax > 0 {
		return j.DeadLetterMax
	}
	return DefaultDeadLetterMax
}

// http reads where the console listens and who may use it: http:
// host:port, or http: {listen: host:port, token: ..., allowed_hosts: [...]}.
func (p *parser) http(root *node, j *Job) error {
	v := root.get("http")
	if v == nil {
		return nil
	}
	listen, ln := v.Value, v
	if v.Kind != yaml.ScalarNode {
		h, err := root.sub("http")
		if err != nil {
			return err
		}
		if err := h.strict(httpObject.names()...); err != nil {
			return err
		}
		if listen, ln, err = h.str("listen"); err != nil {
			return err
		}
		if j.HTTPToken, _, err = h.str("token"); err != nil {
			return err
		}
		if an := h.get("allowed_hosts"); an != nil {
			list := []*yaml.Node{an}
			if an.Kind == yaml.SequenceNode {
				list = an.Content
			}
			for _, n := range list {
				if n.Kind != yaml.ScalarNode || n.Value == "" || strings.ContainsAny(n.Value, "/ :@") && net.ParseIP(strings.Trim(n.Value, "[]")) == nil {
					return h.errf(n, "http.allowed_hosts", "expected host names without port, such as [weir.example.com], got %q", n.Value)
				}
				j.HTTPHosts = append(j.HTTPHosts, n.Value)
			}
		}
	}
	if ln == nil {
		return nil // no address: weir run --http gives it
	}
	if _, _, err := net.SplitHostPort(listen); err != nil {
		field := "http"
		if v.Kind != yaml.ScalarNode {
			field = "http.listen"
		}
		return root.errf(ln, field, "expected host:port, such as 127.0.0.1:8080, got %q", listen)
	}
	j.HTTP = listen
	return nil
}

// checkGroup applies the rules of a job in a consumer group: every output is
// a Kafka topic (a task's output moves with its partition to another
// machine, which a file cannot), written in the task's transaction.
func (p *parser) checkGroup(j *Job) error {
	if !j.Grouped() {
		return nil
	}
	for _, o := range j.AllOutputs() {
		if o.Kafka == nil {
			return &Error{File: p.file, Line: o.Line, Field: o.Field,
				Msg: "a job in a consumer group writes to Kafka topics only: a task moves to another machine with its partition, and its output with it"}
		}
	}
	if j.Kafka.Repartition && !j.Keyed() {
		return &Error{File: p.file, Field: "source.kafka.repartition", Msg: "copies the input keyed by the job's key: give key"}
	}
	if j.KeyParts != nil {
		return &Error{File: p.file, Line: j.lines["key"], Field: "key", Msg: "a job in a consumer group has a key of one field (the input topic's partitions are keyed by it)"}
	}
	if j.Summary != "" || j.Acceptance != "" {
		return &Error{File: p.file, Field: "summary",
			Msg: "a job in a consumer group never ends, and writes no summary or acceptance record"}
	}
	return nil
}

// noDuplicates refuses a field given twice in one mapping: YAML readers
// differ on which one wins, and a job must not depend on it.
func noDuplicates(file, path string, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			field := k.Value
			if path != "" {
				field = path + "." + k.Value
			}
			if line, ok := first[k.Value]; ok {
				return &Error{File: file, Line: k.Line, Field: field, Msg: fmt.Sprintf("given twice (first at line %d); say it once", line)}
			}
			first[k.Value] = k.Line
			if err := noDuplicates(file, field, n.Content[i+1]); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if err := noDuplicates(file, path, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// isEmpty reports a YAML value left empty ("tumbling:" or "tumbling: ~").
func isEmpty(v *yaml.Node) bool {
	return v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == "")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) source(root *node, j *Job) error {
	v := root.get("source")
	if v == nil {
		return root.errf(nil, "source", "missing: say where events come from, e.g. source: {file: events.jsonl}")
	}
	if v.Kind == yaml.ScalarNode { // source: events.jsonl
		j.Input, j.inputName, j.inputLine = p.resolve(v.Value), v.Value, v.Line
		return nil
	}
	s, err := root.sub("source")
	if err != nil {
		return err
	}
	if err := s.strict(sourceKindNames()...); err != nil {
		return err
	}
	if s.get("kafka") != nil {
		return p.kafkaSource(s, j)
	}
	if name, k, ok := registeredKind(s, plan.LookupSource); ok {
		return p.customSource(s, j, name, k)
	}
	f, n, err := s.str("file")
	if err != nil {
		return err
	}
	if n == nil || f == "" {
		return s.errf(n, "source.file", "missing: the JSON-lines file to read, or - for standard input (or source: {kafka: {...}})")
	}
	j.Input, j.inputName, j.inputLine = p.resolve(f), f, n.Line
	if j.Follow, err = s.boolean("follow"); err != nil {
		return err
	}
	if j.Follow && f == "-" {
		return s.errf(s.get("follow"), "source.follow", "standard input is read as it comes already; follow is for a file that grows")
	}
	return nil
}

// maxThreads is the most threads a group's instance runs.
const maxThreads = 256

// kafkaSource reads source.kafka.
func (p *parser) kafkaSource(s *node, j *Job) error {
	if s.get("file") != nil || s.get("follow") != nil {
		return s.errf(nil, "source", "choose one of file and kafka")
	}
	k, err := s.sub("kafka")
	if err != nil {
		return err
	}
	if err := k.strict(kafkaSourceShape.names()...); err != nil {
		return err
	}
	ki := &KafkaInput{SessionTimeout: 10_000}
	if err := p.kafkaConn(k, "source.kafka", &ki.KafkaConn); err != nil {
		return err
	}
	if ki.Group, _, err = k.str("group"); err != nil {
		return err
	}
	cn := k.get("changelog")
	if ki.Changelog, _, err = k.str("changelog"); err != nil {
		return err
	}
	if d, ok, err := k.duration("session_timeout"); err != nil {
		return err
	} else if ok {
		if d < 1000 {
			return k.errf(k.get("session_timeout"), "source.kafka.session_timeout", "must be at least 1s")
		}
		ki.SessionTimeout = d
	}
	if ki.Repartition, err = k.boolean("repartition"); err != nil {
		return err
	}
	if n, ok, err := k.integer("standby"); err != nil {
		return err
	} else if ok && n > 1 {
		return k.errf(k.get("standby"), "source.kafka.standby", "must be 0 or 1 (one other instance keeps a task's changelog read), got %d", n)
	} else {
		ki.Standby = n
	}
	if n, ok, err := k.integer("threads"); err != nil {
		return err
	} else if ok && (n < 1 || n > maxThreads) {
		return k.errf(k.get("threads"), "source.kafka.threads", "must be 1 to %d (how many Kafka clients this instance's tasks share), got %d", maxThreads, n)
	} else {
		ki.Threads = n
	}
	if ki.Group == "" {
		for _, f := range []string{"changelog", "session_timeout", "repartition", "standby", "threads"} {
			if k.get(f) != nil {
				return k.errf(k.get(f), "source.kafka."+f, "belongs to a job in a consumer group: set source.kafka.group too")
			}
		}
	} else if ki.Changelog == "" {
		ki.Changelog = ki.Group + "-changelog"
	} else if ki.Changelog == ki.Topic {
		return k.errf(cn, "source.kafka.changelog", "must not be the input topic")
	}
	og, ogn, err := k.str("on_gap")
	if err != nil {
		return err
	}
	switch og {
	case "", "fail":
	case "skip":
		ki.SkipGaps = true
	default:
		return k.errf(ogn, "source.kafka.on_gap", "expected fail or skip, got %q", og)
	}
	st, sn, err := k.str("start")
	if err != nil {
		return err
	}
	switch st {
	case "", "earliest":
	case "latest":
		ki.Start.Latest = true
	default:
		t, err := mtime.Parse([]byte(st))
		if err != nil {
			return k.errf(sn, "source.kafka.start", "expected earliest, latest or an RFC 3339 time, got %q", st)
		}
		ki.Start.At = t
	}
	j.Kafka = ki
	j.inputLine = k.n.Line
	return nil
}

func (p *parser) time(root *node, j *Job) error {
	t, err := root.sub("time")
	if err != nil {
		return err
	}
	if t == nil {
		return root.errf(nil, "time", "missing: name the event-time field, e.g. time: {field: ts}")
	}
	if err := t.strict(timeShape.names()...); err != nil {
		return err
	}
	f, n, err := t.str("field")
	if err != nil {
		return err
	}
	if j.RecordTime, err = t.boolean("record_timestamp"); err != nil {
		return err
	}
	if j.Ingestion, err = t.boolean("ingestion"); err != nil {
		return err
	}
	switch {
	case j.Ingestion && (f != "" || j.RecordTime):
		return t.errf(t.get("ingestion"), "time.ingestion", "takes each event's arrival as its event time: leave field and record_timestamp out")
	case j.Ingestion:
		// The arrival, below.
	case j.RecordTime && j.Kafka == nil && j.Custom == nil:
		return t.errf(t.get("record_timestamp"), "time.record_timestamp", "only a Kafka source has record timestamps; name the field that holds each event's time")
	case j.RecordTime && f != "":
		return t.errf(n, "time", "choose one of field and record_timestamp")
	case f == "" && !j.RecordTime:
		return t.errf(n, "time.field", "missing: the field that holds each event's time (RFC 3339 or epoch milliseconds)")
	}
	j.TimeField = ParsePath(f)
	a, _, err := t.str("arrival_field")
	if err != nil {
		return err
	}
	j.ArrivalField = ParsePath(a)
	s, sn, err := t.str("sent_field")
	if err != nil {
		return err
	}
	if sn != nil && f == "" {
		return t.errf(sn, "time.sent_field", "corrects an event time read from time.field by the device's clock; record timestamps and ingestion time have no device clock to correct")
	}
	j.SentField = ParsePath(s)
	pf, _, err := t.str("partition_field")
	if err != nil {
		return err
	}
	j.PartitionField = ParsePath(pf)
	return nil
}

func (p *parser) watermark(root *node, j *Job) error {
	j.Watermark = watermark.Strategy{Kind: watermark.Bounded, Interval: mtime.Millis(watermark.DefaultInterval)}
	w, err := root.sub("watermark")
	if err != nil || w == nil {
		return err
	}
	if err := w.strict(watermarkShape.names()...); err != nil {
		return err
	}
	perfect, err := w.boolean("perfect")
	if err != nil {
		return err
	}
	from, fromNode, err := w.str("from_field")
	if err != nil {
		return err
	}
	delay, hasDelay, err := w.duration("delay")
	if err != nil {
		return err
	}
	interval, hasInterval, err := w.duration("interval")
	if err != nil {
		return err
	}
	idle, hasIdle, err := w.duration("idle")
	if err != nil {
		return err
	}
	drift, hasDrift, err := w.duration("max_drift")
	if err != nil {
		return err
	}
	quiet, hasQuiet, err := w.duration("quiet")
	if err != nil {
		return err
	}
	if hasQuiet && quiet <= 0 {
		return w.errf(w.get("quiet"), "watermark.quiet", "must be a positive duration")
	}
	if fromNode != nil && j.Ingestion {
		return w.errf(fromNode, "watermark.from_field", "time.ingestion's event times are the arrivals, which the watermark follows: there is no event time for watermark lines to script")
	}
	if hasDrift && drift <= 0 {
		return w.errf(w.get("max_drift"), "watermark.max_drift", "must be a positive duration")
	}
	switch {
	case perfect && fromNode != nil:
		return w.errf(fromNode, "watermark", "choose one of perfect and from_field")
	case perfect || fromNode != nil:
		if hasDelay || hasInterval || hasIdle || hasDrift || hasQuiet {
			return w.errf(nil, "watermark", "delay, interval, idle, max_drift and quiet apply to a bounded watermark, not to perfect or from_field")
		}
		if perfect {
			j.Watermark = watermark.PerfectWatermark()
			if j.Input == "-" || j.Follow {
				return w.errf(nil, "watermark.perfect", "needs a recorded file: it reads the input ahead, which standard input and a followed file cannot do")
			}
		} else {
			if from == "" {
				return w.errf(fromNode, "watermark.from_field", "expected a field name")
			}
			j.Watermark = watermark.ScriptedWatermark()
			j.WMField = ParsePath(from)
		}
	default:
		j.Watermark.Delay = delay
		if hasInterval {
			j.Watermark.Interval = interval
		}
		j.Watermark.Idle = idle
		j.Watermark.MaxDrift = drift
		j.Watermark.Quiet = quiet
		if hasDrift && j.Kafka == nil {
			return w.errf(w.get("max_drift"), "watermark.max_drift", "needs a source that can pause its partitions (kafka): a file is read in one order")
		}
	}
	return nil
}

func (p *parser) window(root *node, j *Job) error {
	w, err := root.sub("window")
	if err != nil {
		return err
	}
	if w == nil {
		return root.errf(nil, "window", "missing: e.g. window: {tumbling: 1m}, {sliding: {size: 10m, slide: 1m}}, {session: {gap: 30m}} or {global: true}")
	}
	if err := w.strict(windowShape.names()...); err != nil {
		return err
	}
	var offset mtime.Time
	if v := w.get("offset"); v != nil {
		// An offset may be negative: windows start that much earlier.
		text, sign := strings.TrimSpace(v.Value), mtime.Time(1)
		if strings.HasPrefix(text, "-") {
			text, sign = text[1:], -1
		}
		d, err := mtime.ParseDuration(text)
		if v.Kind != yaml.ScalarNode || err != nil {
			return w.errf(v, "window.offset", "expected a duration such as 15s or -15s, got %q", v.Value)
		}
		offset = sign * d
	}
	kinds := 0
	var a window.Assigner
	if v := w.get("tumbling"); v != nil {
		kinds++
		if isEmpty(v) {
			return w.errf(v, "window.tumbling", "missing the window size, e.g. tumbling: 1m")
		}
		size, err := w.durationOf(v, "window.tumbling")
		if err != nil {
			return err
		}
		a = window.Tumbling{Size: size, Offset: offset}
		if err := a.Validate(); err != nil {
			return w.errf(v, "window.tumbling", "%v", err)
		}
	}
	if v := w.get("sliding"); v != nil {
		kinds++
		if isEmpty(v) {
			return w.errf(v, "window.sliding", "missing the window size and slide, e.g. sliding: {size: 10m, slide: 1m}")
		}
		s, err := asMapping(p.file, "window.sliding", v)
		if err != nil {
			return err
		}
		if err := s.strict(slidingShape.names()...); err != nil {
			return err
		}
		size, hasSize, err := s.duration("size")
		if err != nil {
			return err
		}
		slide, hasSlide, err := s.duration("slide")
		if err != nil {
			return err
		}
		so, hasOffset, err := s.duration("offset")
		if err != nil {
			return err
		}
		if !hasSize {
			return s.errf(v, "window.sliding.size", "missing: the length of each window, e.g. size: 10m")
		}
		if !hasSlide {
			return s.errf(v, "window.sliding.slide", "missing: how often a window starts, e.g. slide: 1m")
		}
		if hasOffset {
			offset = so
		}
		sl := window.Sliding{Size: size, Slide: slide, Offset: offset}
		if err := sl.Validate(); err != nil {
			field := "window.sliding"
			if slide > size || slide <= 0 {
				field = "window.sliding.slide"
			}
			return s.errf(v, field, "%v", err)
		}
		a = sl
	}
	if v := w.get("session"); v != nil {
		kinds++
		var gap mtime.Time
		if isEmpty(v) {
			return w.errf(v, "window.session.gap", "missing the session gap, e.g. session: {gap: 30m}")
		}
		if v.Kind == yaml.ScalarNode {
			if gap, err = w.durationOf(v, "window.session"); err != nil {
				return err
			}
		} else {
			s, err := asMapping(p.file, "window.session", v)
			if err != nil {
				return err
			}
			if err := s.strict(sessionShape.names()...); err != nil {
				return err
			}
			g, ok, err := s.duration("gap")
			if err != nil {
				return err
			}
			if !ok {
				return s.errf(v, "window.session.gap", "missing: the silence that ends a session, e.g. gap: 30m")
			}
			gap = g
		}
		a = window.Session{Gap: gap}
		if err := a.Validate(); err != nil {
			return w.errf(v, "window.session.gap", "%v", err)
		}
	}
	if v := w.get("global"); v != nil {
		kinds++
		g, err := w.boolean("global")
		if err != nil {
			return err
		}
		if !g {
			return w.errf(v, "window.global", "write global: true, or choose another window")
		}
		a = window.Global{}
	}
	switch kinds {
	case 0:
		return w.errf(nil, "window", "missing the window kind and size: one of tumbling, sliding, session or global, e.g. window: {tumbling: 1m}")
	case 1:
	default:
		return w.errf(nil, "window", "choose one of tumbling, sliding, session and global")
	}
	j.Window = window.Strategy{Assigner: a}
	if err := p.trigger(root, j); err != nil {
		return err
	}
	if d, _, err := root.duration("allowed_lateness"); err != nil {
		return err
	} else {
		j.Window.AllowedLateness = d
	}
	mode, n, err := root.str("mode")
	if err != nil {
		return err
	}
	switch mode {
	case "", "accumulating":
		j.Window.Mode = window.Accumulating
	case "discarding":
		j.Window.Mode = window.Discarding
	case "retracting", "accumulating_and_retracting":
		j.Window.Mode = window.Retracting
	default:
		return root.errf(n, "mode", "expected accumulating, discarding or retracting, got %q", mode)
	}
	partly, n, err := root.str("late_for_some_windows")
	if err != nil {
		return err
	}
	switch partly {
	case "", "count":
	case "write":
		j.WritePartlyLate = true
	default:
		return root.errf(n, "late_for_some_windows", "expected count or write, got %q", partly)
	}
	return nil
}

func (p *parser) trigger(root *node, j *Job) error {
	t, err := root.sub("trigger")
	if err != nil || t == nil {
		return err
	}
	if err := t.strict(triggerShape.names()...); err != nil {
		return err
	}
	var tr trigger.Trigger
	if e, ok, err := compositeTrigger(t); err != nil {
		return err
	} else if ok {
		// A composite trigger, with a closing behaviour and nothing else.
		for _, f := range []string{"early", "early_aligned", "early_count", "late", "final_only"} {
			if v := t.get(f); v != nil {
				return t.errf(v, t.field(f), "goes with the early and late fields, not with a composite trigger: write after_watermark: {early: ..., late: ...} instead")
			}
		}
		tr = trigger.Of(e)
		if err := closingOf(t, &tr); err != nil {
			return err
		}
		j.Window.Trigger = tr
		return nil
	}
	early, _, err := t.duration("early")
	if err != nil {
		return err
	}
	aligned := false // Beam's pastFirstElementInPane().plusDelayOf(d)
	if t.get("early_aligned") != nil {
		if aligned, err = t.boolean("early_aligned"); err != nil {
			return err
		}
	}
	count, _, err := t.integer("early_count")
	if err != nil {
		return err
	}
	tr.EarlyDelay, tr.EarlyAligned, tr.EarlyElements = early, aligned, count
	if v := t.get("late"); v != nil && v.Kind == yaml.MappingNode {
		// late: {count: N}: a late pane per N late events.
		lm, err := t.sub("late")
		if err != nil {
			return err
		}
		if err := lm.strict("count"); err != nil {
			return err
		}
		n, given, err := lm.integer("count")
		if err != nil {
			return err
		}
		if !given || n < 1 {
			return lm.errf(lm.get("count"), "trigger.late.count", "expected a count of late events of at least 1, such as late: {count: 10}")
		}
		tr.Late, tr.LateElements = trigger.LateCount, n
		if n == 1 {
			tr.Late, tr.LateElements = trigger.LateEach, 0 // the same
		}
	} else if v != nil {
		switch v.Value {
		case "each", "every", "true":
			tr.Late = trigger.LateEach
		case "none", "never", "false":
			tr.Late = trigger.LateNone
		default:
			d, err := t.durationOf(v, "trigger.late")
			if err != nil {
				return t.errf(v, "trigger.late", "expected each, none, a throttle duration such as 1m, or {count: N}, got %q", v.Value)
			}
			if d == 0 {
				tr.Late = trigger.LateEach
			} else {
				tr.Late, tr.LatePeriod = trigger.LateThrottled, d
			}
		}
	}
	if tr.FinalOnly, err = t.boolean("final_only"); err != nil {
		return err
	}
	if err := closingOf(t, &tr); err != nil {
		return err
	}
	j.Window.Trigger = tr
	return nil
}

// closingOf reads trigger.closing into tr.
func closingOf(t *node, tr *trigger.Trigger) error {
	closing, cn, err := t.str("closing")
	if err != nil {
		return err
	}
	switch closing {
	case "", "always":
	case "if_changed":
		tr.Closing = trigger.ClosingIfChanged
	default:
		return t.errf(cn, "trigger.closing", "expected always or if_changed, got %q", closing)
	}
	return nil
}

var aggRE = regexp.MustCompile(`^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$`)

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// callRE is a mapping's value that is, plain, a call of an aggregate with
// a comma in it, with what follows it on its line: a comma or a brace of a
// flow mapping, a comment or the end.
var callRE = regexp.MustCompile(`(?m)(:[ \t]+)((?:count|sum|min|max|avg|count_distinct|approx_count_distinct|percentile|median|first|last|histogram|top)[ \t]*\([^()"'\\\n#{}]*,[^()"'\\\n#{}]*\))([ \t]*(?:[,}]|#|\r?$))`)

// quoteCalls quotes the plain values of a job file that are calls of an
// aggregate with a comma in them. In a flow mapping, as a newcomer writes
// aggregates ({p95: percentile(ms, 0.95)}), YAML ends a plain value at its
// first comma: p95 would be "percentile(ms" and "0.95)" a key of its own,
// and a histogram's bounds not YAML at all. Quoted, the value is the call
// whole; in a block mapping it is the value it was. Nothing else changes,
// lines included, so that errors name the lines written.
func quoteCalls(data []byte) []byte {
	return callRE.ReplaceAll(data, []byte(`$1"$2"$3`))
}

// fieldArgRE is a field an aggregate reads.
var fieldArgRE = regexp.MustCompile(`^[^()\s,\[\]]+$`)

func (p *parser) aggregates(root *node, j *Job) error {
	a, err := root.sub("aggregates")
	if err != nil {
		return err
	}
	if a == nil || len(a.n.Content) == 0 {
		return root.errf(root.get("aggregates"), "aggregates", "missing: name at least one result, e.g. aggregates: {orders: count, spent: sum(amount)}")
	}
	for i := 0; i+1 < len(a.n.Content); i += 2 {
		k, v := a.n.Content[i], a.n.Content[i+1]
		field := "aggregates." + k.Value
		if !nameRE.MatchString(k.Value) {
			return a.errf(k, field, "a result name must be a plain identifier (letters, digits, _)")
		}
		if reserved[k.Value] {
			return a.errf(k, field, "%q is a field of every result; choose another name", k.Value)
		}
		for _, prev := range j.Aggregates {
			if prev.Name == k.Value {
				return a.errf(k, field, "named twice")
			}
		}
		m := aggRE.FindStringSubmatch(v.Value)
		if v.Kind != yaml.ScalarNode || m == nil {
			return a.errf(v, field, "expected %s, got %q", aggList, v.Value)
		}
		kind, ok := aggNames[m[1]]
		if !ok {
			return a.errf(v, field, "unknown function %q; expected count, sum, min, max, avg, count_distinct, approx_count_distinct, percentile, median, first, last, histogram or top", m[1])
		}
		hasArg := strings.Contains(v.Value, "(")
		args := splitArgs(m[2])
		switch {
		case kind == AggCountField && !hasArg:
			kind = AggCount
		case kind == AggCountField && len(args) == 1 && args[0] == "":
			kind = AggCount // count()
		case len(args) == 0 || args[0] == "":
			return a.errf(v, field, "%s needs a field, e.g. %s", m[1], aggExample(kind))
		}
		agg := Aggregate{Name: k.Value, Kind: kind}
		if kind != AggCount {
			if !fieldArgRE.MatchString(args[0]) {
				return a.errf(v, field, "%q is not a field, in %s", args[0], strings.TrimSpace(v.Value))
			}
			agg.Field = ParsePath(args[0])
			if msg := aggArgs(&agg, m[1], args[1:]); msg != "" {
				return a.errf(v, field, "%s", msg)
			}
		}
		j.Aggregates = append(j.Aggregates, agg)
	}
	return nil
}

// aggExample is an aggregate of kind k as an error shows it.
func aggExample(k AggKind) string {
	switch k {
	case AggPercentile:
		return "percentile(latency, 0.95)"
	case AggHistogram:
		return "histogram(latency, [10, 50, 100])"
	case AggTop:
		return "top(page, 10)"
	}
	n := (Aggregate{Kind: k}).String()
	return strings.TrimSuffix(n, "()") + "(amount)"
}

// splitArgs splits the arguments of an aggregate at the commas outside
// brackets, each trimmed; none for no text.
func splitArgs(s string) []string {
	if strings.TrimSpace(s) == "" {
		if s == "" {
			return nil
		}
		return []string{""}
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// aggArgs reads the arguments of agg after its field into it, or says why
// they are wrong.
func aggArgs(agg *Aggregate, fn string, args []string) string {
	want := 0
	switch agg.Kind {
	case AggPercentile, AggHistogram, AggTop:
		want = 1
	}
	if len(args) != want {
		if want == 0 {
			return fmt.Sprintf("%s takes one field, e.g. %s, got %d arguments", fn, aggExample(agg.Kind), len(args)+1)
		}
		return fmt.Sprintf("%s takes a field and %s, e.g. %s", fn, map[AggKind]string{
			AggPercentile: "a quantile", AggHistogram: "a list of bounds", AggTop: "a count"}[agg.Kind], aggExample(agg.Kind))
	}
	switch agg.Kind {
	case AggMedian:
		agg.Q = 0.5
	case AggPercentile:
		q, err := strconv.ParseFloat(args[0], 64)
		if err != nil || !(q > 0 && q <= 1) {
			return fmt.Sprintf("percentile's q must be in (0, 1], got %s", args[0])
		}
		agg.Q = q
	case AggTop:
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 1 || n > maxTop {
			return fmt.Sprintf("top's n must be a whole number from 1 to %d, got %s", maxTop, args[0])
		}
		agg.N = n
	case AggHistogram:
		list := args[0]
		if len(list) < 2 || list[0] != '[' || list[len(list)-1] != ']' {
			return fmt.Sprintf("histogram's bounds must be a list of numbers in brackets, e.g. [10, 50, 100], got %s", list)
		}
		items := splitArgs(list[1 : len(list)-1])
		if len(items) == 0 || len(items) > maxBounds {
			return fmt.Sprintf("a histogram has 1 to %d bounds, got %d", maxBounds, len(items))
		}
		for _, it := range items {
			b, err := strconv.ParseFloat(it, 64)
			if err != nil || math.IsInf(b, 0) || math.IsNaN(b) {
				return fmt.Sprintf("histogram's bound %q is not a number", it)
			}
			if n := len(agg.Bounds); n > 0 && b <= agg.Bounds[n-1] {
				return fmt.Sprintf("histogram's bounds must ascend, got %s after %s", it, string(text.AppendJSONFloat(nil, agg.Bounds[n-1])))
			}
			agg.Bounds = append(agg.Bounds, b)
		}
	}
	return ""
}

// DerivedField is a field an event gains: its name, and the expression of
// its value over the event's other fields (and those derived before it).
type DerivedField struct {
	Name string
	Expr *expression.Program
}

// fieldNameRE is the name of a derived field.
var fieldNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fields reads fields: {name: expression, ...}, in order.
func (p *parser) fields(root *node, j *Job) error {
	v := root.get("fields")
	if v == nil {
		return nil
	}
	m, err := asMapping(p.file, "fields", v)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(m.n.Content); i += 2 {
		k, e := m.n.Content[i], m.n.Content[i+1]
		if !fieldNameRE.MatchString(k.Value) {
			return m.errf(k, "fields."+k.Value, "expected a name of letters, digits and _, got %q", k.Value)
		}
		if e.Kind != yaml.ScalarNode || e.Value == "" {
			return m.errf(e, "fields."+k.Value, "expected an expression over the event's fields, such as amount * 0.92")
		}
		prog, err := expression.Compile(e.Value)
		if err != nil {
			return m.errf(e, "fields."+k.Value, "expression %q does not compile: %v", e.Value, err)
		}
		j.Fields = append(j.Fields, DerivedField{Name: k.Value, Expr: prog})
	}
	return nil
}

// where reads where: an expression over the event's fields that keeps the
// events for which it holds.
func (p *parser) where(root *node, j *Job) error {
	var err error
	if j.Where, err = condition(root, "where", "event", `event == "click"`); err != nil {
		return err
	}
	if j.Heartbeat, err = condition(root, "heartbeat", "record", `type == "heartbeat"`); err != nil {
		return err
	}
	if j.Heartbeat != nil && j.Watermark.Kind != watermark.Bounded {
		return root.errf(root.get("heartbeat"), "heartbeat", "a heartbeat advances a partition's event time, which only a bounded watermark (delay) follows")
	}
	return nil
}

// condition compiles the expression of field, or is nil when the job has
// none; example shows one over an of's fields in the error of an empty one.
func condition(root *node, field, of, example string) (*expression.Program, error) {
	w, n, err := root.str(field)
	if err != nil || n == nil {
		return nil, err
	}
	if w == "" {
		return nil, root.errf(n, field, "expected an expression over the %s's fields, such as %s", of, example)
	}
	prog, err := expression.Compile(w)
	if err != nil {
		return nil, root.errf(n, field, "expression %q does not compile: %v", w, err)
	}
	return prog, nil
}

func (p *parser) having(root *node, j *Job) error {
	h, n, err := root.str("having")
	if err != nil || h == "" {
		return err
	}
	if _, err := CompileHaving(h, j.Aggregates); err != nil {
		if nn, ok := err.(notNumber); ok {
			return root.errf(n, "having", "%s", nn)
		}
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		return root.errf(n, "having", "expression %q does not compile: %s", h, strings.Join(strings.Fields(msg), " "))
	}
	j.Having = h
	return nil
}

func (p *parser) checkpoint(root *node, j *Job) error {
	c, err := root.sub("checkpoint")
	if err != nil || c == nil {
		return err
	}
	if err := c.strict(checkpointShape.names()...); err != nil {
		return err
	}
	dir, n, err := c.str("dir")
	if err != nil {
		return err
	}
	if j.Grouped() {
		if n != nil {
			return c.errf(n, "checkpoint.dir", "a job in a consumer group keeps its state in its changelog topic (source.kafka.changelog), not in a directory: give checkpoint.interval alone")
		}
	} else if dir == "" {
		return c.errf(n, "checkpoint.dir", "missing: the directory checkpoints are written to")
	} else {
		dir = p.resolve(dir)
	}
	j.Checkpoint = Checkpoint{Dir: dir, Interval: 10000, Keep: 3, KeepSavepoints: 3, TolerableFailures: 3}
	if j.Grouped() {
		j.Checkpoint.Interval = 1000
	}
	if d, ok, err := c.duration("interval"); err != nil {
		return err
	} else if ok {
		if d <= 0 {
			return c.errf(c.get("interval"), "checkpoint.interval", "must be a positive duration")
		}
		j.Checkpoint.Interval = d
	}
	if k, ok, err := c.integer("keep"); err != nil {
		return err
	} else if ok {
		if k < 1 {
			return c.errf(c.get("keep"), "checkpoint.keep", "must be at least 1")
		}
		j.Checkpoint.Keep = k
	}
	if k, ok, err := c.integer("keep_savepoints"); err != nil {
		return err
	} else if ok {
		if k < 1 {
			return c.errf(c.get("keep_savepoints"), "checkpoint.keep_savepoints", "must be at least 1 (the one a stop takes is the one the next run resumes from)")
		}
		j.Checkpoint.KeepSavepoints = k
	}
	if k, ok, err := c.integer("tolerable_failures"); err != nil {
		return err
	} else if ok {
		j.Checkpoint.TolerableFailures = k
	}
	if m, mn, err := c.str("max_held_output"); err != nil {
		return err
	} else if m != "" {
		v, err := parseBytes(m)
		if err != nil || v < minHeld {
			return c.errf(mn, "checkpoint.max_held_output", "expected a size of at least 64KiB such as 64MiB, got %q", m)
		}
		j.Checkpoint.MaxHeld = v
	}
	if j.Input == "-" {
		return c.errf(n, "checkpoint", "standard input cannot be replayed after a crash; read a file")
	}
	for _, o := range j.AllOutputs() {
		if o.File == "-" {
			return c.errf(n, "checkpoint", "%s is standard output: outputs must be files or topics to be committed exactly once at each checkpoint", o.Field)
		}
	}
	return nil
}

func (p *parser) state(root *node, j *Job) error {
	j.State = State{Backend: "memory"}
	s, err := root.sub("state")
	if err != nil || s == nil {
		return err
	}
	if err := s.strict(stateShape.names()...); err != nil {
		return err
	}
	b, n, err := s.str("backend")
	if err != nil {
		return err
	}
	switch b {
	case "", "memory":
	case "pebble":
		j.State.Backend = "pebble"
	default:
		return s.errf(n, "state.backend", "expected memory or pebble, got %q", b)
	}
	dir, _, err := s.str("dir")
	if err != nil {
		return err
	}
	if dir != "" {
		j.State.Dir = p.resolve(dir)
	}
	budget, bn, err := s.str("memory_budget")
	if err != nil {
		return err
	}
	if budget != "" {
		v, err := parseBytes(budget)
		if err != nil {
			return s.errf(bn, "state.memory_budget", "expected a size such as 512MiB or 2GiB, got %q", budget)
		}
		j.State.MemoryBudget = v
	}
	return nil
}

// minHeld is the least max_held_output: a checkpoint for less would cost
// more than the memory it saves.
const minHeld = 64 << 10

func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			var v float64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), "%g", &v); err != nil || v < 0 {
				return 0, fmt.Errorf("bad size")
			}
			return int64(v * float64(u.mult)), nil
		}
	}
	var v int64
	if _, err := fmt.Sscanf(s, "%d", &v); err != nil {
		return 0, fmt.Errorf("bad size")
	}
	return v, nil
}

// paneShape is the shape of the job's panes, which an output format
// derives its schema from: a composite key's fields are named as a table
// names their columns (dots made underscores).
func (j *Job) PaneShape() plan.PaneShape {
	s := plan.PaneShape{Job: j.DisplayName()}
	_, global := j.Window.Assigner.(window.Global)
	s.Windowed = !global
	switch {
	case j.KeyParts != nil:
		for _, k := range j.KeyParts {
			s.Keys = append(s.Keys, strings.ReplaceAll(k.String(), ".", "_"))
		}
	case j.Key != nil:
		s.Keys = []string{"key"}
	}
	for _, a := range j.Aggregates {
		t := plan.Number
		switch {
		case a.JSONValued():
			t = plan.JSONText
		case a.Kind == AggCount, a.Kind == AggCountField, a.Kind == AggCountDistinct, a.Kind == AggApproxDistinct:
			t = plan.Integer
		}
		s.Aggregates = append(s.Aggregates, plan.AggregateShape{Name: a.Name, Type: t})
	}
	return s
}

// String is the aggregate as the job file writes it, in one form: count,
// sum(amount), percentile(latency, 0.95), histogram(latency, [10, 50, 100]).
// A restore into a changed job keeps the state of an aggregate whose
// String is the same.
func (a Aggregate) String() string {
	name := map[AggKind]string{AggCount: "count", AggCountField: "count", AggSum: "sum", AggMin: "min", AggMax: "max",
		AggAvg: "avg", AggCountDistinct: "count_distinct", AggPercentile: "percentile", AggMedian: "median",
		AggFirst: "first", AggLast: "last", AggHistogram: "histogram", AggTop: "top",
		AggApproxDistinct: "approx_count_distinct"}[a.Kind]
	if a.Kind == AggCount {
		return name
	}
	b := append([]byte(name+"("), a.Field.String()...)
	switch a.Kind {
	case AggPercentile:
		b = append(b, ", "...)
		b = strconv.AppendFloat(b, a.Q, 'g', -1, 64)
	case AggTop:
		b = append(b, ", "...)
		b = strconv.AppendInt(b, int64(a.N), 10)
	case AggHistogram:
		b = append(b, ", ["...)
		for i, x := range a.Bounds {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = text.AppendJSONFloat(b, x)
		}
		b = append(b, ']')
	}
	return string(append(b, ')'))
}

// Recount is the job that computes what j computes over the events of a
// ledger file in event-time order (weir reconcile), with the final values
// of each window written to the file out and nothing else: no other
// output, no late output, quarantine or dead letter, no checkpoint, no
// summary, no acceptance record, no console. Only what decides the values
// is taken from j (an allowlist: a field j gains later writes nothing here
// until it is added), so that a recount never touches a file the job owns.
// The ledger holds events the job's rules accepted (LineRules): the recount
// reads it with a perfect watermark, without lateness, arriving in event
// time.
func (j *Job) Recount(ledger, out string, having bool) *Job {
	r := &Job{
		Name: j.Name, File: j.File, Input: ledger, inputName: ledger,
		TimeField: j.TimeField, ArrivalField: j.TimeField,
		Key: j.Key, KeyParts: j.KeyParts, DedupHorizon: j.DedupHorizon,
		Window: window.NewStrategy(j.Window.Assigner), Aggregates: j.Aggregates,
		Parallelism: 1, Version: j.Version,
		MaxKeyBytes: j.MaxKeyBytes, DeadLetterMax: j.DeadLetterMax,
		State:   State{Backend: "memory"},
		Outputs: []Output{{Field: "output", File: out}},
		text:    j.text, doc: j.doc, vars: j.vars, secrets: j.secrets, lines: map[string]int{},
	}
	if j.Ingestion {
		// An event's time was its arrival (weir reconcile refuses a job
		// of ingestion time without an arrival field).
		r.TimeField, r.ArrivalField = j.ArrivalField, j.ArrivalField
	}
	r.Watermark = watermark.Strategy{Kind: watermark.Perfect}
	if having {
		r.Having = j.Having
	}
	return r
}

// FieldLister is the source's format when it knows its records' fields
// from its schema.
func (f *SourceFormat) FieldLister() (plan.FieldLister, bool) {
	if f == nil {
		return nil, false
	}
	fl, ok := f.Config.(plan.FieldLister)
	return fl, ok
}

// LineOf is the line of a field of the job file (the nearest one the file
// has on the way to it), or 0.
func (j *Job) LineOf(field string) int {
	if j.doc == nil || len(j.doc.Content) == 0 || field == "" {
		return 0
	}
	n, line := j.doc.Content[0], 0
	for _, name := range splitSchemaPath(field) {
		if n.Kind != yaml.MappingNode {
			break
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			break
		}
	}
	return line
}
