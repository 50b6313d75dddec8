package job

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/mtime"
)

// The fraud job's output in format protobuf, read by Confluent's own
// client library: each record's schema looked up by its id in the registry
// (python3-confluent-kafka's registry client), compiled by protoc into a
// message class, the record read by the client's ProtobufDeserializer.
// Every record is the JSON output's pane, field for field: times as
// milliseconds, a number as a double and its exact text, first as its JSON
// text, an aggregate without a value absent. A job with one aggregate more
// registers a second version of the value's subject, in which every field
// keeps its number and the new one takes the next; a job with one
// aggregate less, a third version, which reserves the number of the one
// dropped.
func TestProtobufOutputReadByConfluentClient(t *testing.T) {
	py, protoc := pythonProtobuf(t)
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	addr := broker(t, "alerts")
	orders := fraudOrders(t, 1500)
	job := strings.Replace(avroOutJob, "format: avro", "format: protobuf", 1)
	seen := 0

	run := func(extra string, aggregates map[string]string) {
		t.Helper()
		dir := runOrdersJob(t, fmt.Sprintf(job, extra, addr, reg.URL()), orders)
		var want []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n") {
			want = append(want, jsonObject(t, l))
		}
		records := committed(t, addr, "alerts")[seen:]
		seen += len(records)
		got := confluentDecode(t, py, "testdata/confluent_protobuf_decode.py", reg.URL(), records, protoc)
		if len(want) < 100 || len(got) != len(want) {
			t.Fatalf("%d records in the topic, %d panes in the JSON output", len(got), len(want))
		}
		ms := func(v any) any {
			tm, err := mtime.Parse([]byte(v.(string)))
			if err != nil {
				t.Fatal(err)
			}
			return json.Number(strconv.FormatInt(int64(tm), 10))
		}
		for i, w := range want {
			var rec struct {
				Key, Value  map[string]any
				KeySchema   string `json:"key_schema"`
				ValueSchema string `json:"value_schema"`
			}
			d := json.NewDecoder(strings.NewReader(got[i]))
			d.UseNumber()
			if err := d.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			wantKey := map[string]any{"key": w["key"], "window_start": ms(w["window_start"]), "window_end": ms(w["window_end"])}
			if !reflect.DeepEqual(rec.Key, wantKey) {
				t.Fatalf("record %d: key %v, want %v", i, rec.Key, wantKey)
			}
			expect := map[string]any{"partial": []any{}} // a JSON line has it only when not empty
			for k, v := range w {
				switch {
				case k == "window_start" || k == "window_end" || k == "watermark" || k == "emitted_at":
					v = ms(v)
				case aggregates[k] == "number":
					if v == nil {
						continue
					}
					f, _ := v.(json.Number).Float64()
					expect[k+"_exact"] = v.(json.Number).String()
					v = f
				case aggregates[k] == "json":
					if v == nil {
						continue
					}
					j, _ := json.Marshal(v)
					v = string(j)
				case aggregates[k] == "count" && v == nil:
					continue
				}
				expect[k] = v
			}
			// A double as Python prints it, and as the JSON line has it:
			// compared as numbers.
			for k := range aggregates {
				if f, ok := rec.Value[k].(json.Number); ok && aggregates[k] == "number" {
					rec.Value[k], _ = f.Float64()
				}
			}
			if fmt.Sprint(rec.Value) != fmt.Sprint(expect) {
				t.Fatalf("record %d:\n got %v\nwant %v", i, rec.Value, expect)
			}
			if rec.KeySchema != "weir.fraud_alerts.PaneKey" || rec.ValueSchema != "weir.fraud_alerts.Pane" {
				t.Fatalf("record %d: messages %q and %q", i, rec.KeySchema, rec.ValueSchema)
			}
		}
	}
	aggs := map[string]string{"orders": "count", "spent": "number", "biggest": "number", "mean": "number", "first_order": "json"}
	run("", aggs)
	v1, _ := reg.GetSchema("alerts-value", 1)
	if _, ok := reg.GetSchema("alerts-value", 2); ok {
		t.Fatal("a second version before the job changed")
	}
	aggs["smallest"] = "number"
	run(", smallest: min(amount)", aggs)
	v2, ok := reg.GetSchema("alerts-value", 2)
	if !ok {
		t.Fatal("the job with an aggregate more registered no second version of alerts-value")
	}
	if _, ok := reg.GetSchema("alerts-key", 2); ok {
		t.Error("the key's schema changed")
	}
	// Every line of the first version is in the second, the new fields
	// after them with the next numbers.
	for _, l := range strings.Split(v1.Schema.Schema, "\n") {
		if strings.Contains(l, " = ") && !strings.Contains(v2.Schema.Schema, l) {
			t.Errorf("the second version lost or renumbered %q:\n%s", l, v2.Schema.Schema)
		}
	}
	for _, l := range []string{"  optional double smallest = 22;", "  optional string smallest_exact = 23;"} {
		if !strings.Contains(v2.Schema.Schema, l+" ") && !strings.Contains(v2.Schema.Schema, l+"\n") {
			t.Errorf("the second version has no %q:\n%s", l, v2.Schema.Schema)
		}
	}
	// One aggregate less than the first: its numbers are reserved.
	delete(aggs, "smallest")
	delete(aggs, "mean")
	job = strings.Replace(job, ", mean: avg(amount)", "", 1)
	run("", aggs)
	v3, ok := reg.GetSchema("alerts-value", 3)
	if !ok {
		t.Fatal("the job with an aggregate less registered no third version")
	}
	if !strings.Contains(v3.Schema.Schema, "  reserved 18, 19, 22, 23;\n") || strings.Contains(v3.Schema.Schema, " mean ") {
		t.Errorf("the third version:\n%s", v3.Schema.Schema)
	}
}
