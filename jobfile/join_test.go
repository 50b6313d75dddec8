package jobfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/watermark"
)

// joinMinimal is the orders without a payment within ten minutes.
const joinMinimal = `name: unpaid
source: {file: orders.jsonl}
time: {field: ts}
key: order_id
join:
  with: {source: {file: payments.jsonl}, time: {field: paid_at}, key: order, where: "status == 'ok'"}
  between: [-1m, 10m]
  kind: anti
  allowed_lateness: 30s
watermark: {delay: 5s}
output: unpaid.jsonl
late_output: late.jsonl
quarantine: bad.jsonl
`

func TestParseJoin(t *testing.T) {
	j, err := Parse([]byte(joinMinimal), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	jn := j.Join
	if jn == nil {
		t.Fatal("no join")
	}
	if jn.Lower != -60_000 || jn.Upper != 600_000 || jn.Kind != JoinAnti || jn.AllowedLateness != 30_000 {
		t.Errorf("join %+v", jn)
	}
	w := jn.With
	if w.Input != "/d/payments.jsonl" || w.TimeField.String() != "paid_at" || w.KeyName() != "order" || w.Where == nil {
		t.Errorf("with: input %q time %q key %q where %v", w.Input, w.TimeField, w.KeyName(), w.Where)
	}
	if w.Watermark != j.Watermark || j.Watermark.Kind != watermark.Bounded || j.Watermark.Delay != 5000 || w.MaxFuture != j.MaxFuture {
		t.Errorf("the other input's watermark %+v and max_future %d are not the job's %+v and %d", w.Watermark, w.MaxFuture, j.Watermark, j.MaxFuture)
	}
	if j.Window.Assigner != nil || len(j.Aggregates) != 0 || j.Outputs[0].File != "/d/unpaid.jsonl" || j.Late == nil || j.Rejects == nil {
		t.Errorf("window %v aggregates %v outputs %+v", j.Window.Assigner, j.Aggregates, j.Outputs)
	}
	inner, err := Parse([]byte(strings.Replace(joinMinimal, "  kind: anti\n", "", 1)), "job.yaml", "/d")
	if err != nil || inner.Join.Kind != JoinInner {
		t.Errorf("without kind: %v, %+v", err, inner)
	}
}

// A join's inputs each take an id, and share the job's dedup_horizon.
func TestParseJoinIDs(t *testing.T) {
	yaml := strings.Replace(joinMinimal, "key: order,", "key: order, id: payment.id,", 1) + "id: order_id\ndedup_horizon: 20m\n"
	j, err := Parse([]byte(yaml), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	w := j.Join.With
	if j.ID.String() != "order_id" || w.ID.String() != "payment.id" || j.DedupHorizon != 1_200_000 || w.DedupHorizon != 1_200_000 {
		t.Errorf("ids %q and %q, horizons %d and %d", j.ID, w.ID, j.DedupHorizon, w.DedupHorizon)
	}
	// Either input's id alone is enough for a horizon.
	if _, err := Parse([]byte(strings.Replace(yaml, "id: order_id\n", "", 1)), "job.yaml", "/d"); err != nil {
		t.Errorf("the other input's id alone: %v", err)
	}
}

func TestParseJoinErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"a window", joinMinimal + "window: {tumbling: 1m}\n",
			`job.yaml:14: window: not in a job with join: a join writes the records it joins, not windows' panes: a window join's window is join.window`},
		{"aggregates", joinMinimal + "aggregates: {n: count}\n",
			`job.yaml:14: aggregates: not in a job with join: a join writes the records it joins, not aggregates`},
		{"a version field", joinMinimal + "id: order_id\nversion_field: v\n",
			`job.yaml:15: version_field: not in a job with join: a join does not revise records`},
		{"a dedup horizon without ids", joinMinimal + "dedup_horizon: 10m\n",
			`job.yaml:14: dedup_horizon: needs id (or join.with.id): the field that identifies an event`},
		{"the other input's empty id", strings.Replace(joinMinimal, "key: order,", `key: order, id: "",`, 1),
			`job.yaml:6: join.with.id: expected a field name`},
		{"no other input", strings.Replace(joinMinimal, "  with: {source: {file: payments.jsonl}, time: {field: paid_at}, key: order, where: \"status == 'ok'\"}\n", "", 1),
			`job.yaml:6: join.with: missing: the other input, its source, time and key, e.g. join: {with: {source: payments.jsonl, time: {field: ts}, key: order_id}, between: [0s, 10m], kind: anti}`},
		{"a field the other input does not take", strings.Replace(joinMinimal, "key: order,", "key: order, version_field: x,", 1),
			`job.yaml:6: join.with.version_field: unknown field "version_field"; expected one of deletion, fields, id, key, source, time, where`},
		{"the other input's time missing", strings.Replace(joinMinimal, "time: {field: paid_at}, ", "", 1),
			`job.yaml:6: join.with.time: missing: name the event-time field, e.g. time: {field: ts}`},
		{"the other input's where", strings.Replace(joinMinimal, `"status == 'ok'"`, `"status =="`, 1),
			`job.yaml:6: join.with.where: expression "status ==" does not compile: unexpected token EOF (1:9)`},
		{"one arrival field", strings.Replace(joinMinimal, "time: {field: paid_at}", "time: {field: paid_at, arrival_field: at}", 1),
			`job.yaml:6: join.with.time.arrival_field: give both inputs an arrival_field (a replay, in the records' processing time) or neither (the clock's)`},
		{"no key", strings.Replace(joinMinimal, "key: order_id\n", "", 1),
			`job.yaml:1: key: missing: a join matches records by key, e.g. key: order_id (and join.with.key)`},
		{"the other input without key", strings.Replace(joinMinimal, " key: order,", "", 1),
			`job.yaml:6: join.with.key: missing: a join matches records by key, e.g. key: order_id`},
		{"keys of two lengths", strings.Replace(joinMinimal, "key: order,", "key: [order, shop],", 1),
			`job.yaml:6: join.with.key: has 2 fields and the job's key order_id has 1: the keys of the two inputs are compared as they are`},
		{"no interval", strings.Replace(joinMinimal, "  between: [-1m, 10m]\n", "", 1),
			`job.yaml:6: join.between: missing: the interval of the other input's time from this input's, e.g. between: [0s, 10m] (a payment within 10 minutes after its order); or window: {tumbling: 1m}, to join the records of one window; or temporal: true, to join the version of a table valid at a record's time`},
		{"an interval and a window", strings.Replace(joinMinimal, "  between: [-1m, 10m]\n", "  between: [-1m, 10m]\n  window: {tumbling: 1m}\n", 1),
			`job.yaml:7: join.between: a window join joins the records of one window, not those within an interval: leave between out, or window`},
		{"a sliding window", strings.Replace(joinMinimal, "  between: [-1m, 10m]\n", "  window: {sliding: {size: 1m, slide: 10s}}\n", 1),
			`job.yaml:7: join.window.sliding: a job file's window join is tumbling, e.g. window: {tumbling: 1m}; the Go API's weir.WindowJoin takes every kind of window`},
		{"a window of no size", strings.Replace(joinMinimal, "  between: [-1m, 10m]\n", "  window: {tumbling: 0s}\n", 1),
			`job.yaml:7: join.window.tumbling: expected a size above 0, got "0s"`},
		{"a temporal window join", strings.Replace(joinMinimal, "  between: [-1m, 10m]\n", "  window: {tumbling: 1m}\n  temporal: true\n", 1),
			`job.yaml:7: join.window: a temporal join joins the version valid at a record's time, not the records of a window: leave window out, or temporal`},
		{"an interval and temporal", strings.Replace(joinMinimal, "  between: [-1m, 10m]\n", "  between: [-1m, 10m]\n  temporal: true\n", 1),
			`job.yaml:7: join.between: a temporal join joins the version valid at a record's time, not the records within an interval: leave between out, or temporal`},
		{"temporal not a boolean", strings.Replace(joinMinimal, "  between: [-1m, 10m]\n", "  temporal: yes please\n", 1),
			`job.yaml:7: join.temporal: expected true or false, got "yes please"`},
		{"deletions in an interval join", strings.Replace(joinMinimal, `where: "status == 'ok'"`, `deletion: "op == 'd'"`, 1),
			`job.yaml:6: join.with.deletion: only a temporal join's table has deletions (join.temporal: true)`},
		{"a deletion that does not compile", strings.Replace(strings.Replace(joinMinimal, `where: "status == 'ok'"`, `deletion: "op =="`, 1), "  between: [-1m, 10m]\n", "  temporal: true\n", 1),
			`job.yaml:6: join.with.deletion: expression "op ==" does not compile: `},
		{"one bound", strings.Replace(joinMinimal, "[-1m, 10m]", "[10m]", 1),
			`job.yaml:7: join.between: expected [from, to], two durations such as [-5m, 10m]`},
		{"not a duration", strings.Replace(joinMinimal, "[-1m, 10m]", "[-1m, soon]", 1),
			`job.yaml:7: join.between: expected a duration such as 0s, -5m or 10m, got "soon"`},
		{"backwards", strings.Replace(joinMinimal, "[-1m, 10m]", "[10m, -1m]", 1),
			`job.yaml:7: join.between: from 10m is after to -1m: no record could join`},
		{"a kind", strings.Replace(joinMinimal, "kind: anti", "kind: outer", 1),
			`job.yaml:8: join.kind: expected inner, left_outer or anti, got "outer"`},
		{"a perfect watermark", strings.Replace(joinMinimal, "{delay: 5s}", "{perfect: true}", 1),
			`job.yaml:10: watermark: a join's watermark is bounded (delay, interval, idle): perfect and from_field read one input`},
		{"a table", strings.Replace(joinMinimal, "output: unpaid.jsonl", "output: {sqlite: {path: u.db, table: u}}", 1),
			`job.yaml:11: output: a table holds an aggregation's results: give a join's output a file or a Kafka topic`},
		{"avro", strings.Replace(joinMinimal, "output: unpaid.jsonl", "output: {kafka: {brokers: [b:9092], topic: u}, format: avro, registry: {url: http://r:8081}}", 1),
			`job.yaml:11: output.kafka.format: a join's records are JSON: leave format out`},
		{"the output is the other input", strings.Replace(joinMinimal, "output: unpaid.jsonl", "output: payments.jsonl", 1),
			`job.yaml:11: output: is the input file of join.with; it would be overwritten`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "job.yaml", "/d")
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.yaml)
			}
			if err.Error() != tt.want && !(strings.HasSuffix(tt.want, ": ") && strings.HasPrefix(err.Error(), tt.want)) {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
		})
	}
}

// A temporal join: no interval, and its table's deletions.
func TestParseTemporalJoin(t *testing.T) {
	yaml := strings.NewReplacer("  between: [-1m, 10m]\n", "  temporal: true\n", `where: "status == 'ok'"`, `deletion: "op == 'd'"`).Replace(joinMinimal)
	j, err := Parse([]byte(yaml), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	if jn := j.Join; !jn.Temporal || jn.Lower != 0 || jn.Upper != 0 || jn.Kind != JoinAnti || jn.With.Deletion == nil || jn.With.Deletion.String() != `op == 'd'` {
		t.Errorf("join %+v, deletion %v", jn, jn.With.Deletion)
	}
}

// The other input's file must exist, as the job's own.
func TestLoadJoinMissingInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "orders.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(joinMinimal), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + ":6: join.with.source.file: input payments.jsonl does not exist (no such file or directory)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// A join whose inputs are de-duplicated warns of a dedup_horizon shorter
// than what the join still takes behind the watermark: its lateness, and a
// window join's window besides. The watermark's delay does not count, as it
// does for windows: a join takes nothing behind the watermark but its
// lateness.
func TestJoinDedupHorizonWarning(t *testing.T) {
	ids := strings.Replace(joinMinimal, "key: order,", "key: order, id: payment_id,", 1) + "dedup_horizon: 20s\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"shorter than the lateness", ids,
			"dedup_horizon 20s is shorter than join.allowed_lateness 30s: records the join still takes but older than the watermark minus 20s cannot be checked for repeats, and go to the late output as beyond_dedup_horizon instead of being joined"},
		{"a window join", strings.Replace(strings.Replace(ids, "allowed_lateness: 30s", "allowed_lateness: 5s", 1), "between: [-1m, 10m]", "window: {tumbling: 1m}", 1),
			"dedup_horizon 20s is shorter than the join's window 1m0s plus join.allowed_lateness 5s: records the join still takes but older than the watermark minus 20s cannot be checked for repeats, and go to the late output as beyond_dedup_horizon instead of being joined"},
		{"long enough, the delay aside", strings.Replace(strings.Replace(ids, "allowed_lateness: 30s", "allowed_lateness: 10s", 1), "watermark: {delay: 5s}", "watermark: {delay: 1m}", 1), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := Parse([]byte(c.yaml), "job.yaml", "/d")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range j.Warnings() {
				if strings.HasPrefix(w, "dedup_horizon") {
					got = append(got, w)
				}
			}
			if want := []string{c.want}; c.want == "" && len(got) != 0 || c.want != "" && !slices.Equal(got, want) {
				t.Errorf("warnings %q, want %q", got, c.want)
			}
		})
	}
}
