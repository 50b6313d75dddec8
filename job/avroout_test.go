package job

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/window"
)

// avroOutJob writes the fraud job's panes both as JSON lines and, exactly
// once, as Avro records in a schema registry's framing.
const avroOutJob = `name: fraud-alerts
source: {file: orders.jsonl}
time: {field: ts}
key: card
id: order_id
watermark: {delay: 2s, interval: 0s}
window: {tumbling: 1m}
aggregates: {orders: count, spent: sum(amount), biggest: max(amount), mean: avg(amount), first_order: first(order_id)%s}
output:
  - results.jsonl
  - {kafka: {brokers: [%s], topic: alerts}, format: avro, registry: {url: %q}}
checkpoint: {dir: ckpt, interval: 1s}
`

// The fraud job's Avro output, read by Confluent's own client library
// (its MessageSerializer looking the schemas up by id in the registry,
// Apache Avro's Python library decoding them), holds exactly the panes of
// its JSON output, field for field: the key's record is the pane's key and
// window, the value's every field of the JSON line, a sum of decimal
// amounts as its exact text, first as its JSON text. The same job with one
// aggregate more registers a second version of the value's subject, which
// the registry's backward compatibility takes, and its records carry the
// new field.
func TestAvroOutputReadByConfluentClient(t *testing.T) {
	py := python(t)
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	addr := broker(t, "alerts")
	orders := fraudOrders(t, 1500)

	run := func(extra string) (want []map[string]any, got []map[string]any) {
		t.Helper()
		dir := runOrdersJob(t, fmt.Sprintf(avroOutJob, extra, addr, reg.URL()), orders)
		for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n") {
			want = append(want, jsonObject(t, l))
		}
		for _, l := range confluentDecode(t, py, "testdata/confluent_avro_decode.py", reg.URL(), committed(t, addr, "alerts")) {
			got = append(got, jsonObject(t, l))
		}
		return want, got
	}

	want, got := run("")
	if len(want) < 100 || len(got) != len(want) {
		t.Fatalf("%d records in the topic, %d panes in the JSON output", len(got), len(want))
	}
	check := func(got, want []map[string]any, aggregates map[string]string) {
		t.Helper()
		for i, w := range want {
			key, value := got[i]["key"].(map[string]any), got[i]["value"].(map[string]any)
			wantKey := map[string]any{"key": w["key"], "window_start": w["window_start"], "window_end": w["window_end"]}
			if !reflect.DeepEqual(key, wantKey) {
				t.Fatalf("record %d: key %v, want %v", i, key, wantKey)
			}
			expect := map[string]any{"partial": []any{}}
			for k, v := range w {
				switch aggregates[k] {
				case "number":
					// An exact sum's text, as the JSON line's; or a
					// number, of the JSON line's value (Python writes
					// a double 10 as 10.0).
					switch a := value[k].(type) {
					case string:
						if a != w[k].(json.Number).String() {
							t.Fatalf("record %d: %s is %q, the JSON line's %s", i, k, a, w[k])
						}
						v = a
					case json.Number:
						x, _ := a.Float64()
						y, _ := w[k].(json.Number).Float64()
						if x != y {
							t.Fatalf("record %d: %s is %s, the JSON line's %s", i, k, a, w[k])
						}
						v = a
					}
				case "json":
					j, _ := json.Marshal(v)
					v = string(j)
				}
				expect[k] = v
			}
			if !reflect.DeepEqual(value, expect) {
				t.Fatalf("record %d:\n got %v\nwant %v", i, value, expect)
			}
		}
	}
	check(got, want, map[string]string{"spent": "number", "biggest": "number", "mean": "number", "first_order": "json"})
	if _, ok := reg.GetSchema("alerts-value", 2); ok {
		t.Fatal("a second version before the job changed")
	}

	// One aggregate more: a second version, and records that carry it.
	want2, got2 := run(", smallest: min(amount)")
	if _, ok := reg.GetSchema("alerts-value", 2); !ok {
		t.Fatal("the job with an aggregate more registered no second version of alerts-value")
	}
	if _, ok := reg.GetSchema("alerts-key", 2); ok {
		t.Error("the key's schema changed")
	}
	if len(got2) != len(want)+len(want2) {
		t.Fatalf("%d records after the second run, want %d", len(got2), len(want)+len(want2))
	}
	check(got2[len(want):], want2, map[string]string{"spent": "number", "biggest": "number", "mean": "number", "smallest": "number", "first_order": "json"})
}

// runOrdersJob runs the job file yaml on the orders (orders.jsonl) in a
// new directory, to its end: the directory.
func runOrdersJob(t *testing.T, yaml string, orders []string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(strings.Join(orders, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), j, Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// confluentDecode hands the records (key and value in hex, a line each)
// to a script of Confluent's Python client with the registry's address
// (and args), and returns what it prints, a line a record.
func confluentDecode(t *testing.T, py, script, registry string, records []*kgo.Record, args ...string) []string {
	t.Helper()
	var in bytes.Buffer
	for _, r := range records {
		fmt.Fprintf(&in, "%s %s\n", hex.EncodeToString(r.Key), hex.EncodeToString(r.Value))
	}
	cmd := exec.Command(py, append([]string{script, registry}, args...)...)
	cmd.Stdin = &in
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// jsonObject is a line's JSON object, its numbers as json.Number.
func jsonObject(t *testing.T, line string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return m
}

// An avro output that the job file cannot have is refused with one line
// naming the field.
func TestAvroOutputRefused(t *testing.T) {
	for _, c := range []struct{ output, late, want string }{
		{`{file: out.jsonl, format: avro, registry: {url: "http://127.0.0.1:1"}}`, ``,
			`output.format: format avro is for a Kafka output; a file holds JSON lines, a table columns`},
		{`{sqlite: {path: r.db, table: r}, format: avro, registry: {url: "http://127.0.0.1:1"}}`, ``,
			`output.format: format avro is for a Kafka output; a file holds JSON lines, a table columns`},
		{`{sqlite: {path: r.db, table: r}, registry: {url: "http://127.0.0.1:1"}}`, ``,
			`output.registry: belongs to the format of a Kafka output: give format: avro, protobuf or json_schema`},
		{`{kafka: {brokers: [127.0.0.1:1], topic: a}, format: avro}`, ``,
			`output.registry: missing: the schema registry the Avro schemas are registered in, e.g. registry: {url: http://127.0.0.1:8081}`},
		{`{kafka: {brokers: [127.0.0.1:1], topic: a}, registry: {url: "http://127.0.0.1:1"}}`, ``,
			`output.registry: belongs to the format of a Kafka output: give format: avro, protobuf or json_schema`},
		{`{kafka: {brokers: [127.0.0.1:1], topic: a}, format: parquet}`, ``,
			`output.format: unknown format "parquet"; an output writes json, avro, protobuf or json_schema`},
		{`{kafka: {brokers: [127.0.0.1:1], topic: a}, format: json_schema}`, ``,
			`output.registry: missing: the schema registry the JSON schemas are registered in, e.g. registry: {url: http://127.0.0.1:8081}`},
		{`out.jsonl`, `{kafka: {brokers: [127.0.0.1:1], topic: late}, format: json_schema, registry: {url: "http://127.0.0.1:1"}}`,
			`late_output.format: format json_schema is for the results' outputs; late_output is written as JSON`},
		{`{kafka: {brokers: [127.0.0.1:1], topic: a}, format: avro, registry: {url: "http://127.0.0.1:1"}, subject_name_strategy: by_topic}`, ``,
			`output.subject_name_strategy: expected topic_name, record_name or topic_record_name, got "by_topic"`},
		{`out.jsonl`, `{kafka: {brokers: [127.0.0.1:1], topic: late}, format: avro, registry: {url: "http://127.0.0.1:1"}}`,
			`late_output.format: format avro is for the results' outputs; late_output is written as JSON`},
	} {
		src := "source: {file: in.jsonl}\ntime: {field: ts}\nkey: k\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: " + c.output + "\n"
		if c.late != "" {
			src += "late_output: " + c.late + "\n"
		}
		_, err := jobfile.Parse([]byte(src), "job.yaml", "/jobs")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s:\n got %v\nwant ...%s", c.output, err, c.want)
		}
	}
	// A key's field that no Avro field can be named.
	src := "source: {file: in.jsonl}\ntime: {field: ts}\nkey: [user-id, page]\nwindow: {tumbling: 1m}\naggregates: {n: count}\n" +
		"output: {kafka: {brokers: [127.0.0.1:1], topic: a}, format: avro, registry: {url: \"http://127.0.0.1:1\"}}\n"
	_, err := jobfile.Parse([]byte(src), "job.yaml", "/jobs")
	if want := `key: output writes avro, and the key's field "user-id" is not a name an Avro field can have`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want ...%s", err, want)
	}
	// Protobuf: the same rule, and a number's exact text is a field too.
	for _, c := range []struct{ key, aggregates, want string }{
		{"[user-id, page]", "{n: count}", `key: output writes protobuf, and the key's field "user-id" is not a name a Protobuf field can have`},
		{"k", "{spent: sum(amount), spent_exact: count}", `aggregates.spent_exact: output writes protobuf, where spent's exact text is the field spent_exact: rename the aggregate spent_exact`},
	} {
		src := "source: {file: in.jsonl}\ntime: {field: ts}\nkey: " + c.key + "\nwindow: {tumbling: 1m}\naggregates: " + c.aggregates + "\n" +
			"output: {kafka: {brokers: [127.0.0.1:1], topic: a}, format: protobuf, registry: {url: \"http://127.0.0.1:1\"}}\n"
		_, err := jobfile.Parse([]byte(src), "job.yaml", "/jobs")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want ...%s", err, c.want)
		}
	}
}

// A pane as an item for a registered kind's sink or an output format
// carries every aggregate's value typed (first's JSON text as RawJSON, not
// dropped), and names the aggregates whose values are partial.
func TestPaneItemFields(t *testing.T) {
	j, err := jobfile.Parse([]byte("source: {file: in.jsonl}\ntime: {field: ts}\nkey: k\nwindow: {tumbling: 1m}\n"+
		"aggregates: {n: count, f: first(id), s: sum(amount), m: max(v)}\noutput: out.jsonl\n"), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	p := pane{Key: `"c1"`, Window: window.Window{Start: 60_000, End: 120_000}, Revision: 1, Final: true,
		Value: []outVal{{kind: vInt, i: 3}, {kind: vJSON, js: `"o-1"`}, {kind: vDec, i: 1107, scale: 1, partial: true}, {}}}
	it := newFormat(j, nil).paneItem(nil, p)
	want := &plan.PaneFields{Keys: []any{"c1"}, Start: 60_000, End: 120_000, Revision: 1, Timing: p.Timing.String(), Final: true, Mode: "accumulating", Version: j.Version,
		Names: []string{"n", "f", "s", "m"}, Values: []any{int64(3), plan.RawJSON(`"o-1"`), "110.7", nil}, Partial: []string{"s"}}
	if !reflect.DeepEqual(it.Pane, want) {
		t.Errorf("pane fields\n got %+v\nwant %+v", it.Pane, want)
	}
	if s := j.PaneShape(); !reflect.DeepEqual(s, plan.PaneShape{Job: "job", Keys: []string{"key"}, Windowed: true, Aggregates: []plan.AggregateShape{
		{Name: "n", Type: plan.Integer}, {Name: "f", Type: plan.JSONText}, {Name: "s", Type: plan.Number}, {Name: "m", Type: plan.Number}}}) {
		t.Errorf("shape %+v", s)
	}
}

// BenchmarkPaneRecord is what a pane costs as a Kafka record of JSON (its
// key and its line) and, beside it, as Avro in a registry's framing (its
// fields typed, then both records written).
func BenchmarkPaneRecord(b *testing.B) {
	j, err := jobfile.Parse([]byte("name: fraud\nsource: {file: in.jsonl}\ntime: {field: ts}\nkey: card\nwindow: {tumbling: 1m}\n"+
		"aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}\noutput: out.jsonl\n"), "job.yaml", "/jobs")
	if err != nil {
		b.Fatal(err)
	}
	p := pane{Key: `"card_00001984"`, Window: window.Window{Start: 1_788_000_000_000, End: 1_788_000_060_000}, Revision: 1, Final: true,
		Watermark: 1_788_000_062_444, EmittedAt: 1_788_000_064_600, Value: []outVal{{kind: vInt, i: 20}, {kind: vDec, i: 4735, scale: 1}, {kind: vFloat, f: 39.4}}}
	f := newFormat(j, nil)
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.paneRecord(p)
		}
	})
	b.Run("avro", func(b *testing.B) {
		reg := srfake.New()
		defer reg.Close()
		a, err := formats.NewAvroPanes(j.PaneShape(), &plan.Registry{URL: reg.URL()}, "alerts", "", nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Register(context.Background()); err != nil {
			b.Fatal(err)
		}
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			it := f.paneItem(buf[:0], p)
			buf = it.JSON[:0]
			a.Record(it.Pane)
		}
	})
}
