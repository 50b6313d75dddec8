package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// minimal is the smallest job file the tests build on (package job's
// tests read it too): a file source, a tumbling minute, a count, a file
// output.
var minimal = func() string {
	b, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestParseMinimalDefaults(t *testing.T) {
	j, err := Parse([]byte(minimal), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	if j.Input != "/jobs/input.jsonl" || j.Outputs[0].File != "/jobs/results.jsonl" {
		t.Errorf("paths: %q %q", j.Input, j.Outputs[0].File)
	}
	// Flink's and Beam's defaults.
	if j.Watermark.Kind != watermark.Bounded || j.Watermark.Delay != 0 || j.Watermark.Interval != 200 {
		t.Errorf("watermark %+v", j.Watermark)
	}
	if j.Window.Trigger != (trigger.Trigger{Late: trigger.LateEach}) || j.Window.Mode != window.Accumulating || j.Window.AllowedLateness != 0 {
		t.Errorf("window %+v", j.Window)
	}
	if j.Parallelism != 1 || j.State.Backend != "memory" {
		t.Errorf("parallelism %d state %+v", j.Parallelism, j.State)
	}
}

func TestParseFull(t *testing.T) {
	full := `
name: fraud-alerts
source: {file: orders.jsonl}
time: {field: ts, arrival_field: arrival, partition_field: partition}
key: card
id: event_id
dedup_horizon: 1h
max_future: 10m
watermark: {delay: 2s, interval: 200ms, idle: 1m}
window: {sliding: {size: 10m, slide: 1m}, offset: 30s}
trigger: {early: 1m, early_aligned: true, early_count: 5, late: 30s, final_only: false}
allowed_lateness: 5m
mode: retracting
aggregates: {orders: count, spent: sum(amount), biggest: max(payment.amount), users: count_distinct(user), n: count(amount)}
having: "orders >= 5"
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
parallelism: 2
checkpoint: {dir: ckpt, interval: 1s, keep: 2, tolerable_failures: 5}
state: {backend: pebble, dir: state, memory_budget: 256MiB}
`
	j, err := Parse([]byte(full), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := j.Window.Assigner.(window.Sliding); !ok || s.Size != 600000 || s.Slide != 60000 || s.Offset != 30000 {
		t.Errorf("assigner %#v", j.Window.Assigner)
	}
	tr := j.Window.Trigger
	if tr.EarlyDelay != 60000 || !tr.EarlyAligned || tr.EarlyElements != 5 || tr.Late != trigger.LateThrottled || tr.LatePeriod != 30000 {
		t.Errorf("trigger %+v", tr)
	}
	if j.Watermark.Idle != 60000 || j.DedupHorizon != 3600000 || j.MaxFuture != 600000 {
		t.Errorf("watermark %+v horizon %d", j.Watermark, j.DedupHorizon)
	}
	if len(j.Aggregates) != 5 || j.Aggregates[2].Field.String() != "payment.amount" || j.Aggregates[4].Kind != AggCountField {
		t.Errorf("aggregates %+v", j.Aggregates)
	}
	if j.Checkpoint.Dir != "/d/ckpt" || j.Checkpoint.Interval != 1000 || j.Checkpoint.Keep != 2 || j.State.MemoryBudget != 256<<20 {
		t.Errorf("checkpoint %+v state %+v", j.Checkpoint, j.State)
	}
}

// Every mistake is one line naming the file, the line, the field and what
// is expected.
const groupMinimal = `source: {kafka: {brokers: [b:9092], topic: in, group: g}}
time: {field: ts}
key: card
window: {tumbling: 1m}
aggregates: {n: count}
output: {kafka: {brokers: [b:9092], topic: out}}
`

// A job in a consumer group: its defaults.
func TestParseGroup(t *testing.T) {
	j, err := Parse([]byte(groupMinimal), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	if !j.Grouped() || j.Kafka.Changelog != "g-changelog" || j.Kafka.SessionTimeout != 10_000 || j.Checkpoint.Interval != 1000 || j.Checkpoint.Dir != "" {
		t.Errorf("group %q changelog %q session %d checkpoint %+v", j.Kafka.Group, j.Kafka.Changelog, j.Kafka.SessionTimeout, j.Checkpoint)
	}
	if k := j.Outputs[0].Kafka; k.Delivery != connector.ExactlyOnce || k.TransactionTimeout != DefaultGroupTransactionTimeout {
		t.Errorf("output delivery %v timeout %d", k.Delivery, k.TransactionTimeout)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"typo at top", strings.Replace(minimal, "window:", "windw:", 1),
			`job.yaml:4: windw: unknown field "windw" (did you mean "window"?)`},
		{"unknown field", minimal + "colour: blue\n",
			`job.yaml:7: colour: unknown field "colour"; expected one of acceptance, aggregates, aggregations, allowed_lateness, checkpoint, dead_letter, dead_letter_max_bytes, dedup_horizon, fields, file_mode, having, heartbeat, http, id, join, key, late_for_some_windows, late_output, lookup, max_future, max_key_bytes, mode, name, output, parallelism, quarantine, source, state, summary, time, trigger, version, version_field, watermark, where, window`},
		{"typo inside", strings.Replace(minimal, "{field: ts}", "{feild: ts}", 1),
			`job.yaml:3: time.feild: unknown field "feild" (did you mean "field"?)`},
		{"missing time field", strings.Replace(minimal, "{field: ts}", "{arrival_field: at}", 1),
			`job.yaml:3: time.field: missing: the field that holds each event's time (RFC 3339 or epoch milliseconds)`},
		{"exactly once without checkpoints", strings.Replace(minimal, "output: results.jsonl", "output: {kafka: {brokers: [127.0.0.1:9092], topic: a, delivery: exactly_once}}", 1),
			`job.yaml:6: output.kafka.delivery: exactly_once needs checkpoint.dir: the records of a checkpoint are committed in one transaction when it is durable`},
		{"a transaction that may expire", strings.Replace(minimal, "output: results.jsonl", "output: {kafka: {brokers: [127.0.0.1:9092], topic: a, transaction_timeout: 1m}}\ncheckpoint: {dir: ck, interval: 30s}", 1),
			`job.yaml:6: output.kafka.transaction_timeout: 1m0s must exceed checkpoint.interval (30s) plus the restart budget (5m0s): otherwise a transaction can expire before its checkpoint commits it, and its output is lost`},
		{"a registry that is no URL", strings.Replace(minimal, "source: {file: input.jsonl}", "source: {kafka: {brokers: [127.0.0.1:9092], topic: o}, format: avro, registry: {url: 127.0.0.1:8081}}", 1),
			`job.yaml:2: source.registry.url: expected an http or https URL, such as http://127.0.0.1:8081`},
		{"avro records without a schema", strings.Replace(minimal, "source: {file: input.jsonl}", "source: {kafka: {brokers: [127.0.0.1:9092], topic: o}, format: avro}", 1),
			`job.yaml:2: source.format: avro records need a schema registry (registry: {url: ...}) or a schema file (schema: orders.avsc)`},
		{"ingestion and a time field", strings.Replace(minimal, "{field: ts}", "{field: ts, ingestion: true}", 1),
			`job.yaml:3: time.ingestion: takes each event's arrival as its event time: leave field and record_timestamp out`},
		{"ingestion and a send time", strings.Replace(minimal, "{field: ts}", "{ingestion: true, sent_field: sent}", 1),
			`job.yaml:3: time.sent_field: corrects an event time read from time.field by the device's clock; record timestamps and ingestion time have no device clock to correct`},
		{"ingestion and watermark lines", strings.Replace(minimal, "{field: ts}", "{ingestion: true}", 1) + "watermark: {from_field: wm}\n",
			`job.yaml:7: watermark.from_field: time.ingestion's event times are the arrivals, which the watermark follows: there is no event time for watermark lines to script`},
		{"window without size", strings.Replace(minimal, "{tumbling: 1m}", "{sliding: {slide: 1m}}", 1),
			`job.yaml:4: window.sliding.size: missing: the length of each window, e.g. size: 10m`},
		{"slide larger than size", strings.Replace(minimal, "{tumbling: 1m}", "{sliding: {size: 1m, slide: 5m}}", 1),
			`job.yaml:4: window.sliding.slide: slide 5m0s is larger than the size 1m0s: events between windows would be lost`},
		{"no window kind", strings.Replace(minimal, "{tumbling: 1m}", "{offset: 1s}", 1),
			`job.yaml:4: window: missing the window kind and size: one of tumbling, sliding, session or global, e.g. window: {tumbling: 1m}`},
		{"tumbling without size", strings.Replace(minimal, "{tumbling: 1m}", "{tumbling: }", 1),
			`job.yaml:4: window.tumbling: missing the window size, e.g. tumbling: 1m`},
		{"session without gap", strings.Replace(minimal, "{tumbling: 1m}", "{session: {}}", 1),
			`job.yaml:4: window.session.gap: missing: the silence that ends a session, e.g. gap: 30m`},
		{"empty sliding", strings.Replace(minimal, "{tumbling: 1m}", "{sliding: }", 1),
			`job.yaml:4: window.sliding: missing the window size and slide, e.g. sliding: {size: 10m, slide: 1m}`},
		{"empty session", strings.Replace(minimal, "{tumbling: 1m}", "{session: }", 1),
			`job.yaml:4: window.session.gap: missing the session gap, e.g. session: {gap: 30m}`},
		{"two window kinds", strings.Replace(minimal, "{tumbling: 1m}", "{tumbling: 1m, session: 5m}", 1),
			`job.yaml:4: window: choose one of tumbling, sliding, session and global`},
		{"bad duration", strings.Replace(minimal, "{tumbling: 1m}", "{tumbling: 60}", 1),
			`job.yaml:4: window.tumbling: expected a duration such as 2s, 5m or 1h, got "60"`},
		{"zero size", strings.Replace(minimal, "{tumbling: 1m}", "{tumbling: 0s}", 1),
			`job.yaml:4: window.tumbling: size must be a positive duration`},
		{"sqlite without path", strings.Replace(minimal, "output: results.jsonl", "output: {sqlite: {table: t}}", 1),
			`job.yaml:6: output.sqlite.path: missing: the database file, e.g. path: results.db`},
		{"table name", strings.Replace(minimal, "output: results.jsonl", "output: {sqlite: {path: r.db, table: My-Table}}", 1),
			`job.yaml:6: output.sqlite.table: expected a lower-case name of letters, digits and _ (not starting with weir_), got "My-Table"`},
		{"postgres without dsn", strings.Replace(minimal, "output: results.jsonl", "output: {postgres: {table: t}}", 1),
			`job.yaml:6: output.postgres.dsn: missing: the connection string, e.g. dsn: postgres://weir@localhost/metrics (${NAME} reads NAME from the environment)`},
		{"two kinds of output", strings.Replace(minimal, "output: results.jsonl", "output: {file: a.jsonl, sqlite: {path: r.db, table: t}}", 1),
			`job.yaml:6: output: choose one of file, kafka, sqlite and postgres`},
		{"group with a checkpoint directory", groupMinimal + "checkpoint: {dir: ckpt}\n",
			`job.yaml:7: checkpoint.dir: a job in a consumer group keeps its state in its changelog topic (source.kafka.changelog), not in a directory: give checkpoint.interval alone`},
		{"group writing a file", strings.Replace(groupMinimal, "output: {kafka: {brokers: [b:9092], topic: out}}", "output: results.jsonl", 1),
			`job.yaml:6: output: a job in a consumer group writes to Kafka topics only: a task moves to another machine with its partition, and its output with it`},
		{"group writing elsewhere", strings.Replace(groupMinimal, "output: {kafka: {brokers: [b:9092], topic: out}}", "output: {kafka: {brokers: [c:9092], topic: out}}", 1),
			`job.yaml:6: output.kafka.brokers: a job in a consumer group writes to the cluster it reads (source.kafka.brokers): a transaction spans one cluster`},
		{"group at least once", strings.Replace(groupMinimal, "topic: out}", "topic: out, delivery: at_least_once}", 1),
			`job.yaml:6: output.kafka.delivery: a job in a consumer group writes exactly once: a task's output, state and input positions are one transaction`},
		{"changelog without group", strings.Replace(groupMinimal, "group: g", "changelog: c", 1),
			`job.yaml:1: source.kafka.changelog: belongs to a job in a consumer group: set source.kafka.group too`},
		{"repartition without a key", strings.Replace(strings.Replace(groupMinimal, "group: g", "group: g, repartition: true", 1), "key: card\n", "", 1),
			`job.yaml: source.kafka.repartition: copies the input keyed by the job's key: give key`},
		{"two standbys", strings.Replace(groupMinimal, "group: g", "group: g, standby: 2", 1),
			`job.yaml:1: source.kafka.standby: must be 0 or 1 (one other instance keeps a task's changelog read), got 2`},
		{"standby without group", strings.Replace(groupMinimal, "group: g", "standby: 1", 1),
			`job.yaml:1: source.kafka.standby: belongs to a job in a consumer group: set source.kafka.group too`},
		{"no threads", strings.Replace(groupMinimal, "group: g", "group: g, threads: 0", 1),
			`job.yaml:1: source.kafka.threads: must be 1 to 256 (how many Kafka clients this instance's tasks share), got 0`},
		{"threads without group", strings.Replace(groupMinimal, "group: g", "threads: 2", 1),
			`job.yaml:1: source.kafka.threads: belongs to a job in a consumer group: set source.kafka.group too`},
		{"short session", strings.Replace(groupMinimal, "group: g", "group: g, session_timeout: 500ms", 1),
			`job.yaml:1: source.kafka.session_timeout: must be at least 1s`},
		{"late events to a table", minimal + "late_output: {sqlite: {path: r.db, table: late}}\n",
			`job.yaml:7: late_output: a table holds results only: give it a file or a Kafka topic`},
		{"the same table twice", strings.Replace(minimal, "output: results.jsonl", "output: [{sqlite: {path: r.db, table: t}}, {sqlite: {path: r.db, table: t}}]", 1),
			`job.yaml:6: output[1]: is the same table as output[0]`},
		{"sqlite file is an output file", strings.Replace(minimal, "output: results.jsonl", "output: [{sqlite: {path: r.db, table: t}}, r.db]", 1),
			`job.yaml:6: output[1]: is the same file as output[0].sqlite.path`},
		{"aggregate named like the key column", strings.Replace(strings.Replace(minimal, "output: results.jsonl", "output: {sqlite: {path: r.db, table: t}}", 1), "time: {field: ts}", "time: {field: ts}\nkey: n", 1),
			`job.yaml:6: aggregates.n: is also the key's column in table t: rename one, or set output.sqlite.key_column`},
		{"aggregate named as another's exact column", strings.Replace(strings.Replace(minimal, "output: results.jsonl", "output: {sqlite: {path: r.db, table: t}}", 1), "{n: count}", "{spent: sum(x), spent_exact: count}", 1),
			`job.yaml:5: aggregates.spent_exact: is the name of the column that keeps the exact values of aggregate spent in SQLite table t: rename one`},
		{"key column named as an exact column", strings.Replace(strings.Replace(strings.Replace(minimal, "output: results.jsonl", "output: {sqlite: {path: r.db, table: t, key_column: spent_exact}}", 1), "time: {field: ts}", "time: {field: ts}\nkey: card", 1), "{n: count}", "{spent: sum(x)}", 1),
			`job.yaml:7: output.sqlite.key_column: "spent_exact" is the column that keeps the exact values of aggregate spent in SQLite table t: name the key's column otherwise`},
		{"aggregate named status", strings.Replace(minimal, "{n: count}", "{status: count}", 1),
			`job.yaml:5: aggregates.status: "status" is a field of every result; choose another name`},
		{"version", minimal + "version: 0\n",
			`job.yaml:7: version: expected a whole number from 1, got 0`},
		{"max_drift on a file", strings.Replace(minimal, "window: {tumbling: 1m}", "watermark: {delay: 1s, max_drift: 10m}\nwindow: {tumbling: 1m}", 1),
			`job.yaml:4: watermark.max_drift: needs a source that can pause its partitions (kafka): a file is read in one order`},
		{"bad expression", minimal + "having: \"n >=\"\n",
			`job.yaml:7: having: expression "n >=" does not compile: unexpected token EOF (1:4) | n >= | ...^`},
		{"unknown name in expression", minimal + "having: \"orders > 1\"\n",
			`job.yaml:7: having: expression "orders > 1" does not compile: unknown name orders (1:1) | orders > 1 | ^`},
		{"unknown aggregate", strings.Replace(minimal, "{n: count}", "{n: mode(x)}", 1),
			`job.yaml:5: aggregates.n: unknown function "mode"; expected count, sum, min, max, avg, count_distinct, approx_count_distinct, percentile, median, first, last, histogram or top`},
		{"percentile without q", strings.Replace(minimal, "{n: count}", "{n: percentile(ms)}", 1),
			`job.yaml:5: aggregates.n: percentile takes a field and a quantile, e.g. percentile(latency, 0.95)`},
		{"percentile's q out of range", strings.Replace(minimal, "{n: count}", "{n: percentile(ms, 95)}", 1),
			`job.yaml:5: aggregates.n: percentile's q must be in (0, 1], got 95`},
		{"median of two", strings.Replace(minimal, "{n: count}", "{n: median(ms, 0.5)}", 1),
			`job.yaml:5: aggregates.n: median takes one field, e.g. median(amount), got 2 arguments`},
		{"first without field", strings.Replace(minimal, "{n: count}", "{n: first()}", 1),
			`job.yaml:5: aggregates.n: first needs a field, e.g. first(amount)`},
		{"top's n", strings.Replace(minimal, "{n: count}", "{n: top(page, 0)}", 1),
			`job.yaml:5: aggregates.n: top's n must be a whole number from 1 to 1000, got 0`},
		{"top without n", strings.Replace(minimal, "{n: count}", "{n: top(page)}", 1),
			`job.yaml:5: aggregates.n: top takes a field and a count, e.g. top(page, 10)`},
		{"histogram's bounds descend", strings.Replace(minimal, "{n: count}", "{n: histogram(ms, [10, 5])}", 1),
			`job.yaml:5: aggregates.n: histogram's bounds must ascend, got 5 after 10`},
		{"histogram's bounds not a list", strings.Replace(minimal, "{n: count}", "{n: histogram(ms, 10)}", 1),
			`job.yaml:5: aggregates.n: histogram's bounds must be a list of numbers in brackets, e.g. [10, 50, 100], got 10`},
		{"histogram's bound not a number", strings.Replace(minimal, "{n: count}", "{n: histogram(ms, [1, x])}", 1),
			`job.yaml:5: aggregates.n: histogram's bound "x" is not a number`},
		{"having over a histogram", strings.Replace(minimal, "{n: count}", "{n: count, h: histogram(ms, [1, 2])}", 1) + "having: \"h > 1\"\n",
			`job.yaml:7: having: h is histogram(ms, [1, 2]), a JSON value: having compares numbers (counts, sums, percentiles, first and last of numbers), not histograms`},
		{"aggregate without field", strings.Replace(minimal, "{n: count}", "{n: sum}", 1),
			`job.yaml:5: aggregates.n: sum needs a field, e.g. sum(amount)`},
		{"reserved name", strings.Replace(minimal, "{n: count}", "{revision: count}", 1),
			`job.yaml:5: aggregates.revision: "revision" is a field of every result; choose another name`},
		{"bad mode", minimal + "mode: replacing\n",
			`job.yaml:7: mode: expected accumulating, discarding or retracting, got "replacing"`},
		{"bad late", minimal + "trigger: {late: sometimes}\n",
			`job.yaml:7: trigger.late: expected each, none, a throttle duration such as 1m, or {count: N}, got "sometimes"`},
		{"late count of none", minimal + "trigger: {late: {count: 0}}\n",
			`job.yaml:7: trigger.late.count: expected a count of late events of at least 1, such as late: {count: 10}`},
		{"late count misspelt", minimal + "trigger: {late: {cuont: 2}}\n",
			`job.yaml:7: trigger.late.cuont: unknown field "cuont" (did you mean "count"?)`},
		{"watermark mix", minimal + "watermark: {perfect: true, delay: 2s}\n",
			`job.yaml:7: watermark: delay, interval, idle, max_drift and quiet apply to a bounded watermark, not to perfect or from_field`},
		{"no output", strings.Replace(minimal, "output: results.jsonl\n", "", 1),
			`job.yaml:1: output: missing: where results go, a file or - for standard output`},
		{"no source", strings.Replace(minimal, "source: {file: input.jsonl}\n", "", 1),
			`job.yaml:1: source: missing: say where events come from, e.g. source: {file: events.jsonl}`},
		{"output is input", strings.Replace(minimal, "output: results.jsonl", "output: input.jsonl", 1),
			`job.yaml:6: output: is the input file; it would be overwritten`},
		{"horizon without id", minimal + "dedup_horizon: 1h\n",
			`job.yaml:7: dedup_horizon: needs id: the field that identifies an event`},
		{"version without id", minimal + "version_field: rev\n",
			`job.yaml:7: version_field: needs id: the field that identifies an event, whose versions it orders`},
		{"version empty", minimal + "id: order_id\nversion_field: \"\"\n",
			`job.yaml:8: version_field: expected a field name`},
		{"version with max", strings.Replace(minimal, "aggregates: {n: count}", "aggregates: {n: count, top: max(amount)}", 1) + "id: order_id\nversion_field: rev\n",
			`job.yaml:8: version_field: aggregate top (max(amount)) cannot withdraw the earlier version a revision replaces: with version_field, use count, sum and avg only`},
		{"version with count_distinct", strings.Replace(minimal, "aggregates: {n: count}", "aggregates: {users: count_distinct(user)}", 1) + "id: order_id\nversion_field: rev\n",
			`job.yaml:8: version_field: aggregate users (count_distinct(user)) cannot withdraw the earlier version a revision replaces: with version_field, use count, sum and avg only`},
		{"version with a composite trigger", minimal + "trigger: {after_each: [{count: 1}, {repeatedly: {count: 5}}]}\nid: order_id\nversion_field: rev\n",
			`job.yaml:9: version_field: a composite trigger may finish a window, which then cannot withdraw the earlier version a revision replaces: use the trigger's fields (early, late, final_only)`},
		{"version with sessions", strings.Replace(minimal, "window: {tumbling: 1m}", "window: {session: 1m}", 1) + "id: order_id\nversion_field: rev\n",
			`job.yaml:8: version_field: session windows cannot withdraw the earlier version a revision replaces (the session would keep the extent it gave it): use tumbling or sliding windows`},
		{"negative lateness", minimal + "allowed_lateness: -1s\n",
			`job.yaml:7: allowed_lateness: must not be negative, got "-1s"`},
		{"not yaml", "window: [", `job.yaml: not valid YAML: line 1: did not find expected node content`},
		{"not a mapping", "- a\n- b\n", `job.yaml:1: expected a mapping of fields (name: value)`},
		{"empty", "", `job.yaml: the job file is empty`},
		{"bad parallelism", minimal + "parallelism: 0\n", `job.yaml:7: parallelism: expected a number from 1 to 256, got 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "job.yaml", "/d")
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.yaml)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines")
			}
		})
	}
}

func TestLoadMissingInput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(minimal, "input.jsonl", "nowhere.jsonl", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + ":2: source.file: input nowhere.jsonl does not exist (no such file or directory)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	_, err = Load(filepath.Join(dir, "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "absent.yaml: cannot read the job file: no such file or directory") {
		t.Errorf("got %v", err)
	}
}

func TestParseRefusals(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"duplicate field", minimal + "key: k\nkey: k2\n", `job.yaml:8: key: given twice (first at line 7); say it once`},
		{"duplicate nested field", strings.Replace(minimal, "{tumbling: 1m}", "{tumbling: 1m, tumbling: 2m}", 1), `job.yaml:4: window.tumbling: given twice (first at line 4); say it once`},
		{"second document", minimal + "---\nname: other\n", `job.yaml:8: a second YAML document (after ---): a job file holds one job`},
		{"windows per event", strings.Replace(minimal, "{tumbling: 1m}", "{sliding: {size: 24h, slide: 1ms}}", 1),
			`job.yaml:4: window.sliding: size 24h0m0s and slide 1ms put every event in 86400000 windows; at most 10000 are allowed (a longer slide, or a tumbling window)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "job.yaml", "/d")
			if err == nil || err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// Seed 001's anti-patterns are warned of at start, naming the values.
func TestWarnings(t *testing.T) {
	job := `name: t
source: {file: input.jsonl}
time: {field: ts}
id: id
dedup_horizon: 1m
watermark: {delay: 30s}
window: {sliding: {size: 1d, slide: 1m}}
allowed_lateness: 2d
aggregates: {n: count}
output: results.jsonl
`
	j, err := Parse([]byte(job), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"allowed_lateness 48h0m0s keeps every window's state for days (sliding 24h0m0s every 1m0s: up to 4320 windows per key at once): prefer minutes to hours, and a late_output for what comes later",
		"no late_output: too-late events are dropped; they are counted, but they are lost (send them to a late_output to correct the results later)",
		"dedup_horizon 1m0s is shorter than the watermark delay 30s plus the allowed lateness 48h0m0s: events the windows still accept but older than the watermark minus 1m0s cannot be checked for repeats, and go to the late output as beyond_dedup_horizon instead of being counted",
		"window sliding 24h0m0s every 1m0s puts every event in 1440 windows, and each event costs that many updates: a longer slide, or a tumbling window, costs less",
		"output (results.jsonl) gets more than one pane per window (late panes within the allowed lateness of 48h0m0s): a reader that does not keep each key and window's highest revision counts a window more than once; trigger: {final_only: true} writes one pane per window, and a table (sqlite, postgres) upserts",
	}
	got := j.Warnings()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A lateness of many windows, with the window the job has; early
	// panes into standard output, late ones into a table (no warning).
	job = `name: t
source: {file: input.jsonl}
time: {field: ts}
window: {tumbling: 1m}
allowed_lateness: 2h
trigger: {early: 10s}
aggregates: {n: count}
output: ["-", {sqlite: {path: r.db, table: r}}]
late_output: late.jsonl
`
	if j, err = Parse([]byte(job), "job.yaml", "/jobs"); err != nil {
		t.Fatal(err)
	}
	want = []string{
		"allowed_lateness 2h0m0s is 120 times the window (tumbling 1m0s): a key keeps up to 121 windows open at once, each fired again by every late event: prefer a lateness of a few windows, and a late_output for what comes later",
		"output[0] (standard output) gets more than one pane per window (early panes every 10s, late panes within the allowed lateness of 2h0m0s): a reader that does not keep each key and window's highest revision counts a window more than once; trigger: {final_only: true} writes one pane per window, and a table (sqlite, postgres) upserts",
	}
	if got := j.Warnings(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// One pane per window: nothing to say.
	j, _ = Parse([]byte(strings.Replace(strings.Replace(job, "allowed_lateness: 2h", "allowed_lateness: 5m", 1), "{early: 10s}", "{early: 10s, final_only: true}", 1)), "job.yaml", "/jobs")
	if got := j.Warnings(); len(got) != 0 {
		t.Errorf("warnings: %v", got)
	}
}

// The example job files are valid, and the group examples are group jobs.
// A followed log is the running server's, which the recipe's run writes
// (out/access.log): here, an empty one stands for it.
func TestExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("../examples/*/*.yaml")
	if len(files) < 3 {
		t.Fatalf("found %v", files)
	}
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) == "follow-log" {
			dir := t.TempDir()
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "out", "access.log"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			f = filepath.Join(dir, "job.yaml")
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if filepath.Base(filepath.Dir(f)) == "phones-online" {
			// Its inputs are written by weir gen and the first job, in the
			// repository's root, as the getting-started page runs them.
			root := t.TempDir()
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(root, "examples", "phones-online"), 0o755)
			for _, in := range []string{"ledger.jsonl", "events.jsonl", "checkouts.jsonl", "never-arrived.jsonl"} {
				os.WriteFile(filepath.Join(root, in), nil, 0o644)
			}
			f = filepath.Join(root, "examples", "phones-online", filepath.Base(f))
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		j, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		group := strings.HasSuffix(f, "group.yaml") || filepath.Base(filepath.Dir(f)) == "consumer-group"
		if group != j.Grouped() {
			t.Errorf("%s: grouped %v", f, j.Grouped())
		}
	}
}

// weir lint notes an allowed lateness outside 5% to 20% of the window (of
// the gap for sessions) and below the ten windows past which it warns.
func TestLatenessNote(t *testing.T) {
	for _, c := range []struct{ window, lateness, want string }{
		{"{tumbling: 1m}", "30s", "allowed_lateness 30s is 50% of the window (tumbling 1m0s); the usual advice is 5% to 20% (3s to 12s): weir lateness --job measures what each lateness would keep of this input"},
		{"{tumbling: 1h}", "1s", "allowed_lateness 1s is 0.028% of the window (tumbling 1h0m0s); the usual advice is 5% to 20% (3m0s to 12m0s): weir lateness --job measures what each lateness would keep of this input"},
		{"{session: {gap: 10m}}", "5m", "allowed_lateness 5m0s is 50% of the window (session gap 10m0s); the usual advice is 5% to 20% (30s to 2m0s): weir lateness --job measures what each lateness would keep of this input"},
		{"{tumbling: 1m}", "3s", ""},  // 5%
		{"{tumbling: 1m}", "12s", ""}, // 20%
		{"{tumbling: 1m}", "0s", ""},  // none: the late_output warning speaks
		{"{tumbling: 1m}", "10m", ""}, // ten windows: a warning instead
	} {
		j, err := Parse([]byte(`source: input.jsonl
time: {field: ts}
window: `+c.window+`
allowed_lateness: `+c.lateness+`
aggregates: {n: count}
output: results.jsonl
`), "job.yaml", "/jobs")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(j.Notes(), "\n"); got != c.want {
			t.Errorf("%s, %s: %q, want %q", c.window, c.lateness, got, c.want)
		}
	}
}
