package jobfile

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/weirstream/weir/plan"
)

// The shape of a job file: every field the parser reads, with what its
// value may be. The parser takes the fields it knows from here (strict), and
// Schema writes them as a JSON schema for editors: one definition for both,
// so that they cannot disagree (TestSchemaFieldsAreRead checks that every
// field named here is read).

// kind is what a value of the job file is.
type kind uint8

const (
	kString   kind = iota // any string
	kField                // a field name of the input ("amount", "payment.amount")
	kDuration             // 2s, 5m, 1h30m, 1d, or 0
	kBool
	kInt
	kEnum   // one of Enum
	kObject // a mapping of the known Fields
	kMap    // a mapping of names (Pattern) to values of Item
	kList   // a sequence of Item
	kOneOf  // one of OneOf
	kRef    // a trigger of a composite trigger (the schema's $defs.trigger)
)

// shape is what a value may be.
type shape struct {
	Kind     kind
	Doc      string
	Enum     []string // kEnum
	Pattern  string   // kString: the value's; kMap: the names'
	Min, Max int      // kInt (Max 0: no bound); kList, kMap: at least Min items
	Fields   []field  // kObject, in the order of a job file
	Required []string // kObject
	// Either, for kObject, are sets of fields of which the object has all
	// of one: a job has window, aggregates and output, or aggregations.
	Either [][]string
	Item   *shape   // kList, kMap
	OneOf  []*shape // kOneOf
}

// field is one field of a mapping.
type field struct {
	Name  string
	Shape *shape
}

// names are the fields of an object shape, in order.
func (s *shape) names() []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

func str(doc string) *shape       { return &shape{Kind: kString, Doc: doc} }
func fieldName(doc string) *shape { return &shape{Kind: kField, Doc: doc} }
func dur(doc string) *shape       { return &shape{Kind: kDuration, Doc: doc} }
func boolean(doc string) *shape   { return &shape{Kind: kBool, Doc: doc} }
func enum(doc string, values ...string) *shape {
	return &shape{Kind: kEnum, Doc: doc, Enum: values}
}
func oneOf(doc string, alts ...*shape) *shape { return &shape{Kind: kOneOf, Doc: doc, OneOf: alts} }
func object(doc string, required []string, fields ...field) *shape {
	return &shape{Kind: kObject, Doc: doc, Fields: fields, Required: required}
}

// The connection settings of a Kafka source or output, named as Kafka
// clients name them.
var kafkaConnShape = []field{
	{"brokers", oneOf("The brokers to start from.", str("host:port[,host:port...]"), &shape{Kind: kList, Min: 1, Item: str("host:port")})},
	{"topic", str("The topic.")},
	{"client.id", str("The client id the brokers see (default weir-HOST-PID).")},
	{"security.protocol", enum("How to talk to the brokers (default PLAINTEXT).", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")},
	{"sasl.mechanism", enum("The SASL mechanism, with security.protocol SASL_*.", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")},
	{"sasl.username", str("The SASL user.")},
	{"sasl.password", str("The SASL password (never shown); ${NAME} reads it from the environment.")},
	{"ssl.ca.location", str("A PEM file of the certificate authorities to trust.")},
	{"ssl.certificate.location", str("A PEM file of the client's certificate.")},
	{"ssl.key.location", str("A PEM file of the client's key.")},
}

func withConn(fields ...field) []field {
	return append(append([]field(nil), kafkaConnShape...), fields...)
}

var kafkaSourceShape = object("A Kafka topic: every partition is read (read_committed), with its next offset in the checkpoint.", []string{"brokers", "topic"},
	withConn(
		field{"start", str("Where a job without a checkpoint starts: earliest (default), latest, or an RFC 3339 time.")},
		field{"group", str("A consumer group: every weir run of this file is one instance of one job, a task per partition.")},
		field{"changelog", str("The compacted topic of a group's task state (default GROUP-changelog).")},
		field{"session_timeout", dur("How long a silent instance keeps its partitions (default 10s).")},
		field{"repartition", boolean("Copy an input not keyed by the job's key into GROUP-repartition, keyed by it, first.")},
		field{"standby", &shape{Kind: kInt, Max: 1, Doc: "Standby replicas: 1 keeps each task's changelog read by another instance, for a quick takeover (default 0)."}},
		field{"threads", &shape{Kind: kInt, Min: 1, Max: maxThreads, Doc: "How many threads a group's instance runs, each one Kafka client that reads and commits for its tasks (default: as many as cores)."}},
		field{"on_gap", enum("Records deleted before they were read: fail (default) or skip (counted as lost).", "fail", "skip")},
	)...)

var sourceShape = object("Where events come from.", nil,
	field{"file", str("JSON lines in arrival order; - is standard input.")},
	field{"follow", boolean("Wait for more at the end of the file, across rotation, like tail -F.")},
	field{"kafka", kafkaSourceShape},
)

var timeShape = object("Event time and arrival time.", nil,
	field{"field", fieldName("The event time: RFC 3339, or epoch milliseconds.")},
	field{"record_timestamp", boolean("The event time is the Kafka record's timestamp.")},
	field{"ingestion", boolean("Ingestion time: each event's time is its arrival (arrival_field, or the clock when read); for a backfill, before a savepoint restored into the job with field.")},
	field{"arrival_field", fieldName("Each line's processing time (a replay); absent: the wall clock.")},
	field{"sent_field", fieldName("When the device sent the event, on its own clock: the event time is corrected for the device's clock to arrival - (sent - event time); a line without it is quarantined (no_sent_time).")},
	field{"partition_field", fieldName("Per-partition watermarks, by this field's value.")},
)

var watermarkShape = object("How far event time has progressed: bounded out-of-orderness (delay), perfect, or from a field.", nil,
	field{"delay", dur("W = max(event time) - delay - 1 ms (default 0s).")},
	field{"interval", dur("How often the watermark is emitted, in processing time (default 200ms; 0s: after every event).")},
	field{"idle", dur("A partition with no event for this long stops holding the watermark back.")},
	field{"quiet", dur("Once the whole stream has had no event for this long, the watermark follows the clock (now - quiet), so the last windows close in a quiet night; an event later than this then is late.")},
	field{"max_drift", dur("Pause a Kafka partition whose watermark runs this far ahead of the slowest.")},
	field{"perfect", boolean("Read a recorded file ahead: the smallest event time still to come.")},
	field{"from_field", fieldName("A line with this field and no event time moves the watermark.")},
)

var slidingShape = object("Windows of size starting every slide.", []string{"size", "slide"},
	field{"size", dur("The length of each window.")},
	field{"slide", dur("How often a window starts.")},
	field{"offset", dur("Windows start this much later.")},
)

var sessionShape = object("Sessions of one key's events, ended by a silence of gap.", []string{"gap"},
	field{"gap", dur("The silence that ends a session.")},
)

var windowShape = object("Where in event time: one of tumbling, sliding, session and global.", nil,
	field{"tumbling", dur("Windows of this size, one after the other.")},
	field{"sliding", slidingShape},
	field{"session", oneOf("Sessions ended by a silence of this gap.", dur("The gap."), sessionShape)},
	field{"global", boolean("One window for all time: write global: true.")},
	field{"offset", &shape{Kind: kString, Doc: "Windows start this much later (or earlier: -15s).", Pattern: `^-?` + durationPattern[1:]}},
)

var triggerShape = object("When panes fire besides the watermark: the early and late fields below, or a composite trigger (count to or_finally), either with closing.", nil, append([]field{
	{"early", dur("An early pane every so much processing time.")},
	{"early_aligned", boolean("Early panes aligned to the clock; false: D after the first event of a pane.")},
	{"early_count", &shape{Kind: kInt, Doc: "An early pane every N events (0: none)."}},
	{"late", oneOf("Late panes: each (one per late event), none, at most one per this duration, or one per N late events ({count: N}).",
		enum("each or none.", "each", "every", "none", "never"), &shape{Kind: kBool, Doc: "true: each; false: none."}, dur("A throttle: at most one late pane per this much processing time."),
		object("A late pane per count late events; fewer are in the closing pane.", []string{"count"},
			field{"count", &shape{Kind: kInt, Min: 1, Doc: "Late events a pane (1: each)."}}))},
	{"final_only", boolean("Write only the final pane of each window (emit on window close).")},
	{"closing", enum("The pane a window closes with when its allowed lateness runs out: always (default; final, even if it repeats the last pane) or if_changed (only if an event came since the last pane).", "always", "if_changed")},
}, compositeShape...)...,
)

// triggerRef is a trigger inside a composite trigger: any of the forms of
// compositeShape, again (the schema's $defs.trigger).
var triggerRef = &shape{Kind: kRef, Doc: "A trigger: one of count, processing_time, never, after_watermark, after_each, after_first, after_all, repeatedly, or_finally, as in trigger."}

// compositeShape is the composite triggers (Beam's), one form a mapping:
// at the top of trigger (with closing, and none of the fields above), and
// in every trigger one holds.
var compositeShape = []field{
	{"count", &shape{Kind: kInt, Min: 1, Doc: "Fires once a pane has this many events (Beam's AfterPane.elementCountAtLeast), then is finished: repeat it with repeatedly."}},
	{"processing_time", dur("Fires this much processing time after the first event of a pane (AfterProcessingTime.pastFirstElementInPane), then is finished.")},
	{"aligned", boolean("With processing_time: fire at the next multiple of it of the clock instead.")},
	{"never", boolean("never: true never fires (a window with it fires only when it closes).")},
	{"after_watermark", object("Fires when the watermark passes the end of the window (AfterWatermark.pastEndOfWindow), and then finishes, unless late is given.", nil,
		field{"early", triggerRef},
		field{"late", triggerRef})},
	{"after_each", &shape{Kind: kList, Min: 1, Item: triggerRef, Doc: "Runs these triggers one after the other: fires when the running one fires, finishes when the last finishes (AfterEach.inOrder)."}},
	{"after_first", &shape{Kind: kList, Min: 1, Item: triggerRef, Doc: "Fires once, when the first of these fires (AfterFirst.of)."}},
	{"after_all", &shape{Kind: kList, Min: 1, Item: triggerRef, Doc: "Fires once, when all of these have fired (AfterAll.of)."}},
	{"repeatedly", withDoc(triggerRef, "Fires whenever this trigger fires, starting it again each time; never finishes (Repeatedly.forever).")},
	{"or_finally", object("Fires as trigger does until until fires; that pane is final and the window takes no more events (orFinally).", []string{"trigger", "until"},
		field{"trigger", triggerRef},
		field{"until", triggerRef})},
}

func withDoc(s *shape, doc string) *shape {
	c := *s
	c.Doc = doc
	return &c
}

var sqliteShape = object("An SQLite table, created when absent: the highest revision of each window wins.", []string{"path", "table"},
	field{"path", str("The database file; created when absent.")},
	field{"table", &shape{Kind: kString, Doc: "The table's name.", Pattern: `^[a-z_][a-z0-9_]{0,62}$`}},
	field{"key_column", &shape{Kind: kString, Doc: "The key's column (default: the key field's name).", Pattern: `^[a-z_][a-z0-9_]{0,62}$`}},
)

var postgresShape = object("A PostgreSQL table, created when absent: the highest revision of each window wins.", []string{"dsn", "table"},
	field{"dsn", str("The connection string, a URL or libpq's key=value settings; ${NAME} reads the environment.")},
	field{"password", str("The password, apart from the dsn (never shown).")},
	field{"table", &shape{Kind: kString, Doc: "The table's name.", Pattern: `^[a-z_][a-z0-9_]{0,62}$`}},
	field{"key_column", &shape{Kind: kString, Doc: "The key's column (default: the key field's name).", Pattern: `^[a-z_][a-z0-9_]{0,62}$`}},
)

var kafkaOutputShape = object("A Kafka topic: a record per pane, keyed by [key, window_start, window_end].", []string{"brokers", "topic"},
	withConn(
		field{"delivery", enum("exactly_once (default with checkpoints: a transaction per checkpoint) or at_least_once.", "exactly_once", "at_least_once")},
		field{"transaction_timeout", dur("Must exceed checkpoint.interval plus restart_budget (default 15m; 1m in a group).")},
		field{"restart_budget", dur("How long a restart may take (default 5m).")},
		field{"create", boolean("Create the topic when it does not exist (with the brokers' default partitions; compacted when it gets revised panes); without it, a missing topic is refused.")},
	)...)

var outputObject = object("One output, of one kind.", nil,
	field{"file", str("JSON lines; - is standard output.")},
	field{"kafka", kafkaOutputShape},
	field{"sqlite", sqliteShape},
	field{"postgres", postgresShape},
	field{"format", enum("The records' format: json (the default), avro, protobuf or json_schema (a Kafka output of results: the pane's key and value as Avro, as Protobuf, or as JSON, in a schema registry's framing, their schemas derived from the job).", "json", "avro", "protobuf", "json_schema")},
	field{"registry", object("The schema registry an avro output registers its schemas in.", []string{"url"},
		field{"url", str("The registry's URL (http://127.0.0.1:8081).")},
		field{"username", str("Basic authentication's user.")},
		field{"password", str("Basic authentication's password (a secret).")},
		field{"token", str("A bearer token (a secret).")},
	)},
	field{"subject_name_strategy", enum("The subjects an avro output's schemas are registered under: topic_name (TOPIC-key, TOPIC-value; the default), record_name or topic_record_name.", "topic_name", "record_name", "topic_record_name")},
)

// sideOutputObject is a late_output or a quarantine: a table holds results
// only.
var sideOutputObject = object("One output, of one kind.", nil,
	field{"file", str("JSON lines; - is standard output.")},
	field{"kafka", kafkaOutputShape},
)

var sideOutputShape = oneOf("A file (- is standard output), or one of {file}, {kafka}.", str("A file of JSON lines; - is standard output."), sideOutputObject)

var outputShape = oneOf("A file (- is standard output), or one of {file}, {kafka}, {sqlite}, {postgres}.", str("A file of JSON lines; - is standard output."), outputObject)

var checkpointShape = object("Durable checkpoints: exactly-once outputs and resuming after a crash.", nil,
	field{"dir", str("The checkpoint directory, weir's own (not in a consumer group).")},
	field{"interval", dur("How often a checkpoint is taken (default 10s; 1s in a group).")},
	field{"keep", &shape{Kind: kInt, Min: 1, Doc: "Checkpoints kept (default 3)."}},
	field{"keep_savepoints", &shape{Kind: kInt, Min: 1, Doc: "Savepoints kept (the one a stop takes is the one the next run resumes from)."}},
	field{"tolerable_failures", &shape{Kind: kInt, Doc: "Failed checkpoints in a row before the job stops (default 3)."}},
	field{"max_held_output", &shape{Kind: kString, Doc: "The most an exactly-once file or table output holds in memory between checkpoints; one that reaches it has a checkpoint taken early (default 64MiB, at least 64KiB).", Pattern: sizePattern}},
)

var stateShape = object("Where windows, timers, a join's records and de-duplication ids live.", nil,
	field{"backend", enum("memory (default) or pebble (on disk, within memory_budget).", "memory", "pebble")},
	field{"dir", str("Pebble's working directory (made if missing; emptied at start; weir's own; in a consumer group, each task's, and with several aggregations each one's, is a directory inside it).")},
	field{"memory_budget", &shape{Kind: kString, Doc: "Pebble's memory, such as 512MiB (in a consumer group, each task's).", Pattern: sizePattern}},
)

var httpObject = object("The console's address and who may use it.", nil,
	field{"listen", str("host:port, such as 127.0.0.1:8080.")},
	field{"token", str("Every request but /healthz and /readyz needs Authorization: Bearer TOKEN.")},
	field{"allowed_hosts", oneOf("Host names the console answers besides the local ones.", str("A host name."), &shape{Kind: kList, Item: str("A host name.")})},
)

// jobShape is the job file.
var jobShape = func() *shape {
	s := jobFields
	s.Required = []string{"source", "time"}
	s.Either = [][]string{{"window", "aggregates", "output"}, {"aggregations"}, {"join", "output"}, {"lookup", "output"}}
	agg := object("One aggregation: its own key, windows, aggregates and outputs; the job's other fields are its aggregations' in common.", []string{"window", "aggregates", "output"})
	for _, f := range jobFields.Fields {
		if slices.Contains(AggregationFields, f.Name) {
			agg.Fields = append(agg.Fields, f)
		}
	}
	s.Fields = append(slices.Clip(s.Fields), field{"aggregations", &shape{Kind: kMap, Min: 1, Pattern: `^[A-Za-z_][A-Za-z0-9_]*$`,
		Doc:  "Several aggregations of one read of the source, by name: the source is read, validated, de-duplicated by the same rules and checkpointed once for all. A savepoint restores each by its name (a job without aggregations has one, named window).",
		Item: agg}})
	with := object("The other input (the right one): its own source, time, key, derived fields and where; the watermark and max_future are the job's.", []string{"source", "time", "key"})
	for _, f := range jobFields.Fields {
		if slices.Contains(JoinWithFields, f.Name) {
			with.Fields = append(with.Fields, f)
		}
	}
	with.Fields = append(with.Fields, field{"deletion", str(`A temporal join's table only: an expression over its record's fields that holds for a deletion of the key's row, such as op == "d".`)})
	join := object("A join of the source (the left input) with another input by key and event time: an interval join, as Flink's intervalJoin (between), a window join (window), or a temporal join with a versioned table, as Flink SQL's FOR SYSTEM_TIME AS OF (temporal). The job writes the joined records instead of windows' panes.", []string{"with"},
		field{"with", with},
		field{"between", &shape{Kind: kList, Min: 2, Max: 2, Doc: "[from, to]: a record of the other input joins a record of this one with the same key when its time is within [time + from, time + to], both included.",
			Item: &shape{Kind: kString, Doc: "A duration, negative for before: -5m, 0s, 10m.", Pattern: `^-?` + durationPattern[1:]}}},
		field{"window", object("A window join, as Flink's: the records of one key in one tumbling window join, when the watermark passes the window's end.", []string{"tumbling"},
			field{"tumbling", dur("The size of the tumbling windows, from the epoch.")})},
		field{"temporal", boolean("true: the other input is a versioned table, each record its key's row from its own time on; a record of this input joins the version valid at its time, once the watermark has passed it.")},
		field{"kind", enum("inner (default): the pairs; left_outer: the pairs, and each record of this input that joined nothing once its interval has passed (in a temporal join: that found no version); anti: only those.", JoinInner, JoinLeftOuter, JoinAnti)},
		field{"allowed_lateness", dur("How far behind the combined watermark a record may come and still join (default 0s).")},
	)
	join.Either = [][]string{{"between"}, {"window"}, {"temporal"}}
	s.Fields = append(s.Fields, field{"join", join})
	positive := func(doc string) *shape { return &shape{Kind: kInt, Min: 1, Doc: doc} }
	lookup := object("A lookup join, as Flink's: each record's key is looked up in a table of SQLite or PostgreSQL as the record passes, in processing time, batched and through a cache; the job writes each record with its row. Its results depend on when each row was read: a rerun reads the table as it is then.", []string{"query"},
		field{"sqlite", object("An SQLite database, opened read only.", []string{"path"}, field{"path", str("The database file.")})},
		field{"postgres", object("A PostgreSQL database.", []string{"dsn"},
			field{"dsn", str("The connection string, a URL or libpq's key=value settings; ${NAME} reads the environment.")},
			field{"password", str("The password, apart from the dsn (never shown).")})},
		field{"query", &shape{Kind: kString, Doc: "The query that reads the rows of a batch of keys, {keys} where they go: SELECT card, credit_limit FROM limits WHERE card IN ({keys}).", Pattern: `\{keys\}`}},
		field{"key_column", str("The column of the query's rows that holds their key (default: the first).")},
		field{"kind", enum("inner (default): the records whose key has a row; left_outer: every record, with its row or without.", JoinInner, JoinLeftOuter)},
		field{"cache", object("Rows kept, the least recently used going first; without it every record is looked up.", []string{"size"},
			field{"size", positive("How many keys' rows (or that a key has none) are kept.")},
			field{"ttl", dur("How long a row is kept after it was read, in processing time (default: until it is evicted).")})},
		field{"batch", object("How keys are looked up.", nil,
			field{"keys", positive("The most keys in one query (default 64).")},
			field{"in_flight", positive("The most queries at once (default 4).")})},
		field{"retries", object("How a query that fails is tried again; the records of one that still fails go to dead_letter.", nil,
			field{"attempts", positive("Tries in all (default 3).")},
			field{"backoff", dur("The wait before the second try, doubled before each next one (default 100ms).")})},
	)
	lookup.Either = [][]string{{"sqlite"}, {"postgres"}}
	s.Fields = append(s.Fields, field{"lookup", lookup})
	return &s
}()

// joinShape is the job file's join.
var joinShape = func() *shape {
	for _, f := range jobShape.Fields {
		if f.Name == "join" {
			return f.Shape
		}
	}
	panic("jobfile: the job file has no join")
}()

// jobFields are the fields of a job of one aggregation.
var jobFields = *object("A weir job: windowed aggregations over a stream of events.", nil,
	field{"name", str("The job's name, in logs, metrics and outputs' records.")},
	field{"source", oneOf("Where events come from.", str("A file of JSON lines in arrival order; - is standard input."), sourceShape)},
	field{"time", timeShape},
	field{"key", oneOf("The key: a field (a.b reads a nested field), or a list of fields (a composite key); absent: one global key.",
		fieldName("The key field."), &shape{Kind: kList, Min: 1, Item: fieldName("A field of the composite key.")})},
	field{"id", fieldName("De-duplicate events by this field.")},
	field{"dedup_horizon", dur("How long ids are remembered, in event time (default 1h; needs id, or in a join either input's id).")},
	field{"version_field", fieldName("The event's version (an integer; needs id): of two events with one id, the higher version replaces the lower in the results; a lower one arriving later is set aside as superseded.")},
	field{"max_future", oneOf("Events further ahead of their arrival are quarantined (default 1h).", dur("The bound."), enum("none: no bound.", "none", "off"))},
	field{"watermark", watermarkShape},
	field{"window", windowShape},
	field{"trigger", triggerShape},
	field{"allowed_lateness", dur("Late events within this much of a window's end are added, and the window fires again (default 0s).")},
	field{"mode", enum("How panes relate (default accumulating).", "accumulating", "discarding", "retracting", "accumulating_and_retracting")},
	field{"aggregates", &shape{Kind: kMap, Min: 1, Doc: "The results, by name: count, count(f), sum(f), min(f), max(f), avg(f), count_distinct(f), approx_count_distinct(f), percentile(f, q), median(f), first(f), last(f), histogram(f, [b1, b2, ...]), top(f, n).",
		Pattern: `^[A-Za-z_][A-Za-z0-9_]*$`, Item: &shape{Kind: kString, Doc: "An aggregate.", Pattern: aggPattern}}},
	field{"heartbeat", str("An expression over a record's fields that says it is a source's heartbeat: its time advances its partition's event time (so that a partition with no events does not hold the watermark back); it is counted apart, never windowed. A record without a field it reads is not a heartbeat.")},
	field{"where", str("An expression over the event's fields (expr-lang's syntax): only events for which it holds are windowed; the others are counted as filtered.")},
	field{"fields", &shape{Kind: kMap, Doc: "Derived fields, by name: an expression over the event's fields each, computed before its time, key, id and aggregates are read.",
		Pattern: `^[A-Za-z_][A-Za-z0-9_]*$`, Item: str("An expression.")}},
	field{"having", str("An expr expression over the aggregates and key, revision, timing, final: only panes for which it holds are written.")},
	field{"output", oneOf("Where panes go: one output or a list.", outputShape, &shape{Kind: kList, Min: 1, Item: outputShape})},
	field{"late_output", sideOutputShape},
	field{"late_for_some_windows", enum("Events of a sliding window accepted into its later windows and too late for its earlier ones: count (default; in the summary, status and metrics) or write (also to the late output, naming the windows they missed).", "count", "write")},
	field{"quarantine", sideOutputShape},
	field{"dead_letter", sideOutputShape},
	field{"dead_letter_max_bytes", &shape{Kind: kString, Doc: "The most of a line or an event a quarantine or late record keeps, 256B to 16MiB (default 64KiB).", Pattern: sizePattern}},
	field{"max_key_bytes", &shape{Kind: kString, Doc: "A longer key quarantines its line as key_too_long, 1B to 1MiB (default 1KiB).", Pattern: sizePattern}},
	field{"summary", str("A JSON file for the summary.")},
	field{"parallelism", &shape{Kind: kInt, Min: 1, Max: 256, Doc: "Operator instances (default 1)."}},
	field{"checkpoint", checkpointShape},
	field{"state", stateShape},
	field{"http", oneOf("Serve /metrics, /api/status, /healthz, /readyz and the console.", str("host:port, such as 127.0.0.1:8080."), httpObject)},
	field{"version", &shape{Kind: kInt, Min: 1, Doc: "The version of the metric definitions, in every pane and row (default 1)."}},
	field{"acceptance", &shape{Kind: kString, Doc: "A JSON file for the acceptance record (a Markdown copy beside it).", Pattern: `\.json$`}},
	field{"file_mode", oneOf("The outputs' mode, from 0600 to 0777 (default 0600).", &shape{Kind: kString, Pattern: `^(0o?)?[67][0-7]{2}$`}, &shape{Kind: kInt})},
)

// sizePattern is what parseBytes reads.
const sizePattern = `^[0-9.]+\s*(GiB|MiB|KiB|GB|MB|KB|B)?$`

// durationPattern is what mtime.ParseDuration reads, less its range checks.
const durationPattern = `^(0|[0-9]+(\.[0-9]*)?d|([0-9]*(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+)$`

// aggPattern is what an aggregate's value may be (aggRE, with the known
// functions).
const aggPattern = `^\s*((count|sum|min|max|avg|count_distinct|approx_count_distinct|median|first|last)\s*(\(\s*[^()\s,\[\]]*\s*\))?` +
	`|percentile\s*\(\s*[^()\s,\[\]]+\s*,\s*[0-9.eE+-]+\s*\)` +
	`|top\s*\(\s*[^()\s,\[\]]+\s*,\s*[0-9]+\s*\)` +
	`|histogram\s*\(\s*[^()\s,\[\]]+\s*,\s*\[[^\[\]()]*\]\s*\))\s*$`

// varPattern is a value that names an environment variable: any field may
// take its value from one.
const varPattern = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`

// Schema is the job file's JSON schema (draft 2020-12), for editors: the
// file docs/job.schema.json, and weir schema.
//
// The kinds of sources and outputs registered in package plan are in it,
// each with its settings: the schema is made from the registry, when it
// is asked for.
func Schema() []byte {
	root := jsonShape(withKinds(jobShape, map[*shape]*shape{}))
	doc := ordered{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", "https://github.com/weirstream/weir/docs/job.schema.json"},
		{"title", "weir job file"},
	}
	doc = append(doc, root...)
	doc = append(doc, kv{"$defs", ordered{{"trigger", jsonShape(object(triggerRef.Doc, nil, compositeShape...))}}})
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// withKinds is the shape s with the registered kinds of sources among the
// fields of a source, and those of sinks among the fields of an output: a
// copy of every shape that holds one of those, made once each (done).
func withKinds(s *shape, done map[*shape]*shape) *shape {
	if c, ok := done[s]; ok {
		return c
	}
	c := *s
	done[s] = &c
	c.Fields = nil
	for _, f := range s.Fields {
		c.Fields = append(c.Fields, field{f.Name, withKinds(f.Shape, done)})
	}
	switch s {
	case sourceShape:
		c.Fields = append(c.Fields, formatShapes()...)
		for _, k := range plan.SourceKinds() {
			c.Fields = append(c.Fields, field{k.Name, kindShape(k.Doc, k.Fields)})
		}
	case outputObject, sideOutputObject:
		for _, k := range plan.SinkKinds() {
			c.Fields = append(c.Fields, field{k.Name, kindShape(k.Doc, k.Fields)})
		}
	}
	if s.Item != nil {
		c.Item = withKinds(s.Item, done)
	}
	c.OneOf = nil
	for _, o := range s.OneOf {
		c.OneOf = append(c.OneOf, withKinds(o, done))
	}
	return &c
}

// kindShape is the shape of a registered kind's settings.
func kindShape(doc string, fields []plan.Field) *shape {
	var fs []field
	var required []string
	for _, f := range fields {
		var sh *shape
		switch f.Type {
		case plan.Int:
			sh = &shape{Kind: kInt, Doc: f.Doc}
		case plan.Bool:
			sh = boolean(f.Doc)
		case plan.Duration:
			sh = dur(f.Doc)
		case plan.Strings:
			sh = oneOf(f.Doc, str(f.Doc), &shape{Kind: kList, Item: str(f.Doc)})
		case plan.StringMap:
			sh = &shape{Kind: kMap, Doc: f.Doc, Item: str("")}
		default:
			sh = str(f.Doc)
		}
		fs = append(fs, field{f.Name, sh})
		if f.Required {
			required = append(required, f.Name)
		}
	}
	return object(doc, required, fs...)
}

// ordered is a JSON object that keeps its keys in order.
type ordered []kv

type kv struct {
	K string
	V any
}

// MarshalJSON writes the object's keys in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(e.K); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := enc.Encode(e.V); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// orVar lets a typed value come from an environment variable too.
func orVar(s ordered) ordered {
	return ordered{{"anyOf", []any{s, ordered{{"type", "string"}, {"pattern", varPattern}}}}}
}

func jsonShape(s *shape) ordered {
	var o ordered
	doc := func() {
		if s.Doc != "" {
			o = append(o, kv{"description", s.Doc})
		}
	}
	switch s.Kind {
	case kRef:
		doc()
		o = append(o, kv{"$ref", "#/$defs/trigger"})
	case kString, kField:
		doc()
		o = append(o, kv{"type", "string"})
		if s.Pattern != "" {
			o = append(o, kv{"pattern", s.Pattern})
		}
		if s.Kind == kField {
			o = append(o, kv{"minLength", 1})
		}
	case kDuration:
		doc()
		return append(o, orVar(ordered{{"anyOf", []any{
			ordered{{"type", "string"}, {"pattern", durationPattern}},
			ordered{{"const", 0}},
		}}})...)
	case kBool:
		doc()
		return append(o, orVar(ordered{{"type", "boolean"}})...)
	case kInt:
		doc()
		n := ordered{{"type", "integer"}}
		if s.Min > 0 {
			n = append(n, kv{"minimum", s.Min})
		} else {
			n = append(n, kv{"minimum", 0})
		}
		if s.Max > 0 {
			n = append(n, kv{"maximum", s.Max})
		}
		return append(o, orVar(n)...)
	case kEnum:
		doc()
		o = append(o, kv{"enum", s.Enum})
	case kObject:
		doc()
		o = append(o, kv{"type", "object"})
		props := ordered{}
		for _, f := range s.Fields {
			props = append(props, kv{f.Name, jsonShape(f.Shape)})
		}
		o = append(o, kv{"properties", props}, kv{"additionalProperties", false})
		if len(s.Required) > 0 {
			o = append(o, kv{"required", s.Required})
		}
		if len(s.Either) > 0 {
			var alts []ordered
			for _, set := range s.Either {
				alts = append(alts, ordered{{"required", set}})
			}
			o = append(o, kv{"oneOf", alts})
		}
	case kMap:
		doc()
		o = append(o, kv{"type", "object"})
		if s.Pattern != "" {
			o = append(o, kv{"propertyNames", ordered{{"pattern", s.Pattern}}})
		}
		o = append(o, kv{"additionalProperties", jsonShape(s.Item)})
		if s.Min > 0 {
			o = append(o, kv{"minProperties", s.Min})
		}
	case kList:
		doc()
		o = append(o, kv{"type", "array"}, kv{"items", jsonShape(s.Item)})
		if s.Min > 0 {
			o = append(o, kv{"minItems", s.Min})
		}
	case kOneOf:
		doc()
		var alts []any
		for _, a := range s.OneOf {
			alts = append(alts, jsonShape(a))
		}
		o = append(o, kv{"anyOf", alts})
	}
	return o
}

// schemaAt is the shape of the field at a dotted path ("output.kafka.topic";
// a list's items have the list's path), or nil.
func schemaAt(path string) *shape {
	s := jobShape
	if path == "" {
		return s
	}
	for _, name := range splitSchemaPath(path) {
		s = fieldShape(s, name)
		if s == nil {
			return nil
		}
	}
	return s
}

// splitSchemaPath cuts a field path into names; a Kafka setting's name holds
// dots of its own (sasl.password).
func splitSchemaPath(path string) []string {
	var out []string
	parts := strings.Split(path, ".")
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		for _, f := range kafkaConnShape {
			if n := strings.Count(f.Name, "."); n > 0 && i+n < len(parts) && strings.Join(parts[i:i+n+1], ".") == f.Name {
				p, i = f.Name, i+n
				break
			}
		}
		out = append(out, p)
	}
	return out
}

// fieldShape is the shape of s's field name, looking through alternatives
// and lists.
func fieldShape(s *shape, name string) *shape {
	switch s.Kind {
	case kObject:
		for _, f := range s.Fields {
			if f.Name == name {
				return f.Shape
			}
		}
	case kMap:
		return s.Item
	case kList:
		return fieldShape(s.Item, name)
	case kOneOf:
		for _, a := range s.OneOf {
			if f := fieldShape(a, name); f != nil {
				return f
			}
		}
	}
	return nil
}
