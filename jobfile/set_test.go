package jobfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir/window"
)

const setBase = `name: t
source: {file: in.jsonl}
time: {field: ts}
key: card
window: {tumbling: 1m}
aggregates: {n: count}
output: [out.jsonl, {sqlite: {path: a.db, table: alerts}}]
`

// --set overrides any field: a value, a mapping, an item of a list, a
// field the file does not have, a Kafka setting with dots in its name.
func TestSet(t *testing.T) {
	t.Setenv("WEIR_TEST_TOPIC", "orders")
	j, err := ParseWith([]byte(setBase), "job.yaml", "/d", LoadOptions{Set: []string{
		"window={sliding: {size: 10m, slide: 1m}}",
		"output[1].sqlite.path=b.db",
		"output[2]=-",
		"trigger.early=30s",
		"parallelism=4",
		"name=my job",
		"key=payment.card",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if j.Window.Assigner != (window.Sliding{Size: 600_000, Slide: 60_000}) || j.Window.Trigger.EarlyDelay != 30_000 || j.Parallelism != 4 ||
		j.Name != "my job" || j.Key.String() != "payment.card" || len(j.Outputs) != 3 ||
		j.Outputs[1].Table.Path != "/d/b.db" || j.Outputs[2].File != "-" {
		t.Errorf("job after --set: %+v %+v %+v", j.Window, j.Outputs, j.Key)
	}
	k, err := ParseWith([]byte(setBase), "job.yaml", "/d", LoadOptions{Set: []string{
		"source={kafka: {brokers: [b:9092], topic: x}}",
		"source.kafka.topic=${WEIR_TEST_TOPIC}",
		"source.kafka.sasl.mechanism=PLAIN",
		"source.kafka.security.protocol=SASL_PLAINTEXT",
		"source.kafka.sasl.username=u",
		"source.kafka.sasl.password=pa$$word",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c := k.Kafka.KafkaConn; c.Topic != "orders" || c.SASLPassword != "pa$word" || c.SASLMechanism != "PLAIN" {
		t.Errorf("kafka after --set: %+v", c)
	}
}

// A --set that cannot apply, or that makes the file wrong, is a one-line
// error naming the field.
func TestSetErrors(t *testing.T) {
	cases := map[string]string{
		"window":               `job.yaml: window: --set: expected path=value, such as window.tumbling=5m, got "window"`,
		"=1m":                  `job.yaml: --set: expected path=value, such as window.tumbling=5m`,
		"window.tumblin=1m":    `job.yaml: window.tumblin: unknown field "tumblin" (did you mean "tumbling"?)`,
		"window.tumbling=soon": `job.yaml: window.tumbling: expected a duration such as 2s, 5m or 1h, got "soon"`,
		"output[5]=x.jsonl":    `job.yaml: output[5]: --set: output has 2 items: the next is [2]`,
		"source.file.x=1":      `job.yaml: source.file.x: --set: source.file is not a mapping of fields: set it whole (--set source.file={...})`,
		"key[0]=a":             `job.yaml: key[0]: --set: key is not a list`,
		"key=${WEIR_UNSET_X}":  `job.yaml: key: ${WEIR_UNSET_X} is not set, and has no default (${WEIR_UNSET_X:-default} gives one)`,
	}
	for set, want := range cases {
		_, err := ParseWith([]byte(setBase), "job.yaml", "/d", LoadOptions{Set: []string{set}})
		var e *Error
		if !errors.As(err, &e) || err.Error() != want {
			t.Errorf("--set %s: %v\nwant %s", set, err, want)
		}
	}
}

// The resolved file: --set applied, variables expanded, secrets shown as
// the variable they came from; read again, it is the same job.
func TestResolved(t *testing.T) {
	t.Setenv("WEIR_TEST_DB", "alerts.db")
	t.Setenv("WEIR_TEST_PASSWORD", "s3cr$t")
	text := `name: t
source: {file: in.jsonl}
time: {field: ts}
key: card
window: {tumbling: 1m}
aggregates: {n: count, spent: sum(amount)}
having: "n >= ${WEIR_TEST_MIN:-5}"
output:
  - out.jsonl
  - sqlite: {path: "${WEIR_TEST_DB}", table: alerts}
  - postgres: {dsn: "postgres://weir@db/m", password: "${WEIR_TEST_PASSWORD}", table: alerts}
late_output: {kafka: {brokers: [b:9092], topic: "cost$${X}", sasl.mechanism: PLAIN, security.protocol: SASL_SSL, sasl.username: u, sasl.password: literal}}
`
	j, err := ParseWith([]byte(text), "job.yaml", "/d", LoadOptions{Set: []string{"window.tumbling=5m"}})
	if err != nil {
		t.Fatal(err)
	}
	got := string(j.Resolved())
	want := `name: t
source: {file: in.jsonl}
time: {field: ts}
key: card
window: {tumbling: 5m}
aggregates: {n: count, spent: sum(amount)}
having: "n >= 5"
output:
  - out.jsonl
  - sqlite: {path: "alerts.db", table: alerts}
  - postgres: {dsn: "postgres://weir@db/m", password: "${WEIR_TEST_PASSWORD}", table: alerts}
late_output: {kafka: {brokers: ['b:9092'], topic: "cost$${X}", sasl.mechanism: PLAIN, security.protocol: SASL_SSL, sasl.username: u, sasl.password: "[redacted]"}}
`
	if got != want {
		t.Errorf("resolved:\n%s\nwant:\n%s", got, want)
	}
	// Read again, with the variables it still names: the same job.
	again, err := Parse([]byte(got), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := string(again.Resolved()), got; a != b {
		t.Errorf("read again, resolved:\n%s\nwant:\n%s", a, b)
	}
	if again.Window != j.Window || again.Outputs[1].Table.Path != "/d/alerts.db" || again.Outputs[2].Table.DSN != j.Outputs[2].Table.DSN ||
		again.Late.Kafka.Topic != "cost${X}" || again.Having != "n >= 5" {
		t.Errorf("read again: %+v %+v", again.Window, again.Outputs)
	}
	if strings.Contains(got, "s3cr") {
		t.Errorf("a secret in the resolved file")
	}
}
