package job

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// The fraud job's output in format json_schema, read by Confluent's own
// client library (its registry client looks each record's schema up by
// its id, its JSONDeserializer checks the framing and validates the record
// against the schema with python-jsonschema): every record validates, its
// value is the JSON output's pane, its key [key, window_start,
// window_end]. A job with one aggregate more registers a second version
// of the value's subject, which validates its records too.
func TestJSONSchemaOutputReadByConfluentClient(t *testing.T) {
	py := pythonJSONSchema(t)
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	addr := broker(t, "alerts")
	orders := fraudOrders(t, 1500)
	job := strings.Replace(avroOutJob, "format: avro", "format: json_schema", 1)
	seen := 0

	run := func(extra string) {
		t.Helper()
		dir := runOrdersJob(t, fmt.Sprintf(job, extra, addr, reg.URL()), orders)
		var want []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n") {
			want = append(want, jsonObject(t, l))
		}
		records := committed(t, addr, "alerts")[seen:]
		seen += len(records)
		got := confluentDecode(t, py, "testdata/confluent_jsonschema_decode.py", reg.URL(), records)
		if len(want) < 100 || len(got) != len(want) {
			t.Fatalf("%d records in the topic, %d panes in the JSON output", len(got), len(want))
		}
		for i, w := range want {
			var rec struct {
				Key         []any
				Value       map[string]any
				KeySchema   string `json:"key_schema"`
				ValueSchema string `json:"value_schema"`
			}
			d := json.NewDecoder(strings.NewReader(got[i]))
			d.UseNumber()
			if err := d.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			if wantKey := []any{w["key"], w["window_start"], w["window_end"]}; !reflect.DeepEqual(rec.Key, wantKey) {
				t.Fatalf("record %d: key %v, want %v", i, rec.Key, wantKey)
			}
			if !reflect.DeepEqual(rec.Value, w) {
				t.Fatalf("record %d:\n got %v\nwant %v", i, rec.Value, w)
			}
			if rec.KeySchema != "weir.fraud_alerts.PaneKey" || rec.ValueSchema != "weir.fraud_alerts.Pane" {
				t.Fatalf("record %d: schemas %q and %q", i, rec.KeySchema, rec.ValueSchema)
			}
		}
	}
	run("")
	if _, ok := reg.GetSchema("alerts-value", 2); ok {
		t.Fatal("a second version before the job changed")
	}
	run(", smallest: min(amount)")
	if _, ok := reg.GetSchema("alerts-value", 2); !ok {
		t.Fatal("the job with an aggregate more registered no second version of alerts-value")
	}
	if _, ok := reg.GetSchema("alerts-key", 2); ok {
		t.Error("the key's schema changed")
	}
}
