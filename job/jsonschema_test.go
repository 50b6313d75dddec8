package job

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"github.com/weirstream/weir/jobfile"
)

// The orders' JSON Schema, as Confluent's JSONSerializer registers it (it
// needs a title): the fields of orders.jsonl, ts a date-time.
const ordersJSONSchemaV1 = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object",
 "properties":{"order_id":{"type":"string"},"card":{"type":"string"},"user_id":{"type":"string"},
  "amount":{"type":"number","minimum":0},"ts":{"type":"string","format":"date-time"},"arrival":{"type":"string","format":"date-time"}},
 "required":["order_id","card","user_id","amount","ts"]}`

// ordersJSONSchemaV2 adds a field, channel: a compatible evolution.
var ordersJSONSchemaV2 = strings.Replace(ordersJSONSchemaV1, `"arrival":{`, `"channel":{"type":"string","enum":["web","app"]},"arrival":{`, 1)

// pythonJSONSchema is Debian's Python 3 with python3-confluent-kafka's
// JSON Schema serializer, which validates with python3-jsonschema.
func pythonJSONSchema(t *testing.T) string {
	t.Helper()
	return pythonWith(t, "confluent_kafka.schema_registry.json_schema, jsonschema, requests", "python3-confluent-kafka, python3-jsonschema and python3-requests")
}

// Records written by Confluent's own client library (python3-confluent-
// kafka's JSONSerializer and registry client, which register the schemas
// and validate each order before writing it) are read by weir with exact
// results: the fraud job on them writes the panes of the JSON lines,
// through the schema's evolution halfway (a field added); the bad records
// among them, and orders their schema refuses, are quarantined.
func TestJSONSchemaFromConfluentClient(t *testing.T) {
	py := pythonJSONSchema(t)
	orders := fraudOrders(t, 800)
	want := jsonPanes(t, orders)
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1.json"), filepath.Join(dir, "v2.json")
	os.WriteFile(v1, []byte(ordersJSONSchemaV1), 0o644)
	os.WriteFile(v2, []byte(ordersJSONSchemaV2), 0o644)
	values := hexRecords(t, exec.Command(py, "testdata/confluent_jsonschema.py", reg.URL(), "orders", v1, v2), orders)
	if len(values) != len(orders) {
		t.Fatalf("%d records for %d orders", len(values), len(orders))
	}
	s1, ok1 := reg.GetSchema("orders-value", 1)
	s2, ok2 := reg.GetSchema("orders-value", 2)
	if !ok1 || !ok2 || s1.Schema.Type != sr.TypeJSON || !strings.Contains(s2.Schema.Schema, "channel") {
		t.Fatalf("the client did not register both versions as JSON: %+v %+v", s1, s2)
	}
	first, last := string(values[0][5:]), string(values[len(values)-2][5:])
	if strings.Contains(first, "channel") || !strings.Contains(last, `"channel": "app"`) {
		t.Fatalf("the records do not change schema halfway:\n%s\n%s", first, last)
	}
	// Orders the schema refuses, framed with the first version's id: an
	// amount that is a string, a negative amount, an order without its
	// time, and one (of the second version) on a channel it does not
	// know.
	id1, id2 := values[0][:5], values[len(values)-1][:5]
	refused := [][]byte{
		slices.Concat(id1, []byte(`{"order_id": "o-bad1", "card": "c", "user_id": "u", "amount": "12.5", "ts": "2026-09-01T00:10:00.000Z"}`)),
		slices.Concat(id1, []byte(`{"order_id": "o-bad2", "card": "c", "user_id": "u", "amount": -3, "ts": "2026-09-01T00:10:00.000Z"}`)),
		slices.Concat(id1, []byte(`{"order_id": "o-bad3", "card": "c", "user_id": "u", "amount": 3}`)),
		slices.Concat(id2, []byte(`{"order_id": "o-bad4", "card": "c", "user_id": "u", "amount": 3, "ts": "2026-09-01T00:10:00.000Z", "channel": "fax"}`)),
	}
	values = badRecords(values)
	values = slices.Insert(values, 450, refused...)
	q := checkRegistryRun(t, "json_schema", broker(t, "orders"), reg.URL(), values, want,
		map[string]int64{"bad_magic_byte": 1, "unknown_schema": 1, "not_decodable": 1, "not_valid": 4})
	// Each refused order with the validator's first error, at its offset.
	for _, want := range []string{
		`"reason":"not_decodable","partition":"orders/0","offset":303,"detail":"not JSON: unexpected EOF"`,
		`"reason":"not_valid","partition":"orders/0","offset":450,"detail":"at '/amount': got string, want number"`,
		`"reason":"not_valid","partition":"orders/0","offset":451,"detail":"at '/amount': minimum: got -3, want 0"`,
		`"reason":"not_valid","partition":"orders/0","offset":452,"detail":"at '': missing property 'ts'"`,
		`"reason":"not_valid","partition":"orders/0","offset":453,"detail":"at '/channel': value must be one of 'web', 'app'"`,
	} {
		if !strings.Contains(q, want) {
			t.Errorf("the quarantine lacks %s:\n%s", want, q)
		}
	}
}

// BenchmarkDecodeJSONSchema reads the lines of BenchmarkDecode framed by
// a registry, each validated against its JSON Schema (fetched and compiled
// once): what a record costs beyond its JSON line.
func BenchmarkDecodeJSONSchema(b *testing.B) {
	const schema = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"E","type":"object",
"properties":{"event_id":{"type":"string"},"card":{"type":"string"},"ts":{"type":"integer"},"arrival":{"type":"integer"},
"amount":{"type":"number","minimum":0},"user":{"type":"string"}},"required":["event_id","card","ts","amount"]}`
	reg := srfake.New()
	defer reg.Close()
	id, _, err := reg.RegisterSchema("e-value", sr.Schema{Schema: schema, Type: sr.TypeJSON})
	if err != nil {
		b.Fatal(err)
	}
	job := strings.Replace(fraudJob, "source: {file: input.jsonl}", fmt.Sprintf("source: {kafka: {brokers: [127.0.0.1:1], topic: e}, format: json_schema, registry: {url: %q}}", reg.URL()), 1)
	j, err := jobfile.Parse([]byte(job), "job.yaml", "/d")
	if err != nil {
		b.Fatal(err)
	}
	lines := make([][]byte, 1000)
	for i := range lines {
		lines[i] = framed(id, fmt.Appendf(nil, `{"event_id":"e%d","card":"c%d","ts":%d,"arrival":%d,"amount":%d.%02d,"user":"u%d"}`, i, i%100, 1788782400000+i, 1788782400000+i, i%300, i%100, i%7))
	}
	benchDecode(b, j, lines)
}

// The example job on JSON Schema orders loads, its source the registry's
// framing; without a registry the format is refused, as it would have no
// schemas.
func TestJSONSchemaExample(t *testing.T) {
	j, err := jobfile.Load("../examples/fraud/kafka-json-schema.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := j.Format.Config.Describe(); d != "json_schema, schemas from the registry at http://127.0.0.1:8081" {
		t.Errorf("%s", d)
	}
	_, err = jobfile.Parse([]byte(fmt.Sprintf(avroFraudJob, "{kafka: {brokers: [127.0.0.1:1], topic: orders}, format: json_schema}")), "job.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "source.registry: missing") {
		t.Errorf("%v", err)
	}
	_, err = jobfile.Parse([]byte(fmt.Sprintf(avroFraudJob, "{file: orders.jsonl, format: json_schema, registry: {url: http://127.0.0.1:1}}")), "job.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "read from a Kafka topic, not a file") {
		t.Errorf("%v", err)
	}
}
