package job

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"github.com/weirstream/weir/jobfile"
)

// weir lint checks a topic's job against its records' schema, not read
// from the topic: a field the job names that the schema lacks is refused
// with the closest field it has, an aggregate that needs a number over a
// field the schema says is a string is refused, a derived field is the
// job's own; the schema is the registry's latest of the subject (Avro,
// JSON Schema) or the .proto's message.
func TestLintAgainstSchema(t *testing.T) {
	reg := srfake.New()
	t.Cleanup(reg.Close)
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersV1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersV2}); err != nil {
		t.Fatal(err)
	}
	jsonSchema := `{"type":"object","properties":{"order_id":{"type":"string"},"card":{"type":["string","null"]},
"amount":{"type":"number"},"ts":{"type":"string","format":"date-time"},"meta":{"type":"object","properties":{"shop":{"type":"integer"}}},
"attrs":{"type":"object","additionalProperties":{"type":"number"}}}}`
	if _, _, err := reg.RegisterSchema("js-value", sr.Schema{Schema: jsonSchema, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	proto, _ := filepath.Abs("../examples/fraud/orders.proto")
	const job = "source: {kafka: {brokers: [127.0.0.1:1], topic: %s}, format: %s}\ntime: {field: ts}\nkey: card\nid: order_id\n" +
		"fields: {cents: amount * 100}\nwindow: {tumbling: 1m}\naggregates: {n: count, spent: sum(amout), c: sum(cents), top: max(card)%s}\noutput: out.jsonl\n"
	for _, c := range []struct {
		topic, format, extra string
		source               string
		want                 []string
	}{
		{"orders", fmt.Sprintf("avro, registry: {url: %q}", reg.URL()), "", "none: the job's fields checked against the schema of subject orders-value, version 2", []string{
			`aggregates.spent: sum(amout): the field "amout" is not in the schema of subject orders-value, version 2 (did you mean "amount"?)`,
			`aggregates.top: max(card): "card" is a string in the schema of subject orders-value, version 2, never a number: such records are quarantined as bad_value`,
		}},
		{"js", fmt.Sprintf("json_schema, registry: {url: %q}", reg.URL()), ", shop: max(meta.shop), x: max(meta.shp), any: max(attrs.anything)", "none: the job's fields checked against the schema of subject js-value, version 1", []string{
			`aggregates.spent: sum(amout): the field "amout" is not in the schema of subject js-value, version 1 (did you mean "amount"?)`,
			`aggregates.top: max(card): "card" is a string in the schema of subject js-value, version 1, never a number: such records are quarantined as bad_value`,
			`aggregates.x: max(meta.shp): the field "meta.shp" is not in the schema of subject js-value, version 1 (did you mean "meta.shop"?)`,
		}},
		{"orders", fmt.Sprintf("protobuf, schema: %q, message: shop.Order", proto), "", "none: the job's fields checked against message shop.Order of " + proto, []string{
			`aggregates.spent: sum(amout): the field "amout" is not in message shop.Order of ` + proto + ` (did you mean "amount"?)`,
			`aggregates.top: max(card): "card" is a string in message shop.Order of ` + proto + `, never a number: such records are quarantined as bad_value`,
		}},
		{"nosuch", fmt.Sprintf("avro, registry: {url: %q}", reg.URL()), "", "none: the records' schema cannot be read (the registry at " + reg.URL() + " has no subject nosuch-value); weir run says what the first records show", nil},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(job, c.topic, c.format, c.extra)), 0o644)
		j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := SampleInput(j, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range s.Findings() {
			got = append(got, f.String())
		}
		if s.Source != c.source || !slices.Equal(got, c.want) {
			t.Errorf("%s:\n source %s\n   want %s\n got %q\nwant %q", c.format, s.Source, c.source, got, c.want)
		}
	}
}
