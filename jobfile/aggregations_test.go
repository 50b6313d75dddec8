package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// severalFile is a job of two aggregations over one file.
const severalFile = `name: orders
source: {file: input.jsonl}
time: {field: ts}
id: order_id
quarantine: quarantine.jsonl
aggregations:
  per_card:
    key: card
    window: {tumbling: 1m}
    aggregates: {orders: count}
    output: cards.jsonl
    late_output: late.jsonl
  per_merchant:
    key: merchant
    window: {tumbling: 1h}
    allowed_lateness: 10m
    aggregates: {spent: sum(amount)}
    output: [merchants.jsonl, {sqlite: {path: m.db, table: hourly}}]
`

// Each aggregation is a whole job: the common fields, and its own.
func TestParseAggregations(t *testing.T) {
	j, err := Parse([]byte(severalFile), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	all := j.Aggregations()
	if len(all) != 2 || !j.Several() || all[0].Aggregation != "per_card" || all[1].Aggregation != "per_merchant" {
		t.Fatalf("aggregations %d: %q", len(all), j.Aggregation)
	}
	for _, a := range all {
		if a.Input != "/d/input.jsonl" || a.ID.String() != "order_id" || a.Rejects == nil || a.Rejects.Field != "quarantine" || a.Text() != severalFile {
			t.Errorf("%s: the common fields: input %q id %q quarantine %+v", a.Aggregation, a.Input, a.ID, a.Rejects)
		}
	}
	c, m := all[0], all[1]
	if c.KeyName() != "card" || c.Window.AllowedLateness != 0 || c.Late == nil || c.Late.Field != "aggregations.per_card.late_output" || c.Late.Role() != "late_output" ||
		c.Outputs[0].Field != "aggregations.per_card.output" || c.Outputs[0].Role() != "results" {
		t.Errorf("per_card: key %q lateness %d late %+v outputs %+v", c.KeyName(), c.Window.AllowedLateness, c.Late, c.Outputs)
	}
	if m.KeyName() != "merchant" || m.Window.AllowedLateness != 600_000 || m.Late != nil || len(m.Outputs) != 2 || m.Outputs[1].Field != "aggregations.per_merchant.output[1]" {
		t.Errorf("per_merchant: key %q lateness %d outputs %+v", m.KeyName(), m.Window.AllowedLateness, m.Outputs)
	}
	if one := j.Alone("per_merchant"); one == nil || one.Several() || one.KeyName() != "merchant" || len(one.Siblings) != 0 {
		t.Errorf("Alone(per_merchant): %+v", one)
	}
	if one := j.Alone(""); one == nil || one.KeyName() != "merchant" {
		t.Errorf("Alone(\"\") is not the first aggregation with a table: %+v", one)
	}
	if j.Alone("per_day") != nil {
		t.Error("Alone(per_day) found an aggregation")
	}
}

func TestParseAggregationsErrors(t *testing.T) {
	for _, tt := range []struct{ name, yaml, want string }{
		{"a field of its own at the top", strings.Replace(severalFile, "id: order_id\n", "id: order_id\nkey: card\n", 1),
			`job.yaml:5: key: a job with aggregations gives each its own key: move it under aggregations.NAME`},
		{"a common field under one", strings.Replace(severalFile, "    key: card\n", "    key: card\n    id: order_id\n", 1),
			`job.yaml:9: aggregations.per_card.id: unknown field "id"; expected one of acceptance, aggregates, allowed_lateness, having, key, late_for_some_windows, late_output, mode, output, summary, trigger, where, window`},
		{"a mistake in one", strings.Replace(severalFile, "window: {tumbling: 1h}", "window: {tumbling: 1x}", 1),
			`job.yaml:15: aggregations.per_merchant.window.tumbling: expected a duration such as 2s, 5m or 1h, got "1x"`},
		{"one without output", strings.Replace(severalFile, "    output: cards.jsonl\n", "", 1),
			`job.yaml:8: aggregations.per_card.output: missing: where results go, a file or - for standard output`},
		{"two into one file", strings.Replace(severalFile, "[merchants.jsonl,", "[cards.jsonl,", 1),
			`job.yaml:18: aggregations.per_merchant.output[0]: is the same file as aggregations.per_card.output`},
		{"a table's file that is another's output", strings.Replace(severalFile, "path: m.db", "path: cards.jsonl", 1),
			`job.yaml:18: aggregations.per_merchant.output[1].sqlite.path: is the same file as aggregations.per_card.output`},
		{"two to standard output", strings.Replace(strings.Replace(severalFile, "output: cards.jsonl", "output: \"-\"", 1), "    allowed_lateness: 10m\n", "    allowed_lateness: 10m\n    summary: \"-\"\n", 1),
			`job.yaml:17: aggregations.per_merchant.summary: aggregations.per_card.output already goes to standard output (-); give one of them a file`},
		{"a bad name", strings.Replace(severalFile, "  per_card:", "  per-card:", 1),
			`job.yaml:7: aggregations.per-card: expected a name of letters, digits and _ (not first a digit)`},
		{"in a consumer group", "source: {kafka: {brokers: [b:9092], topic: in, group: g}}\ntime: {field: ts}\naggregations:\n  a: {key: card, window: {tumbling: 1m}, aggregates: {n: count}, output: {kafka: {brokers: [b:9092], topic: out}}}\n",
			`job.yaml:4: aggregations: a job in a consumer group has one aggregation: its task moves with its partition's state`},
		{"where twice", strings.Replace(strings.Replace(severalFile, "id: order_id\n", "id: order_id\nwhere: amount > 0\n", 1), "    key: card\n", "    key: card\n    where: amount > 1\n", 1),
			`job.yaml:10: aggregations.per_card.where: the job gives where for every aggregation (line 5): give it there or in each aggregation, not both`},
		{"a where that does not compile", strings.Replace(severalFile, "    key: card\n", "    key: card\n    where: amount >\n", 1),
			`job.yaml:9: aggregations.per_card.where: expression "amount >" does not compile: unexpected token EOF (1:8)`},
		{"none", strings.Replace(severalFile, severalFile[strings.Index(severalFile, "aggregations:"):], "aggregations: {}\n", 1),
			`job.yaml:6: aggregations: expected a mapping of aggregations by name, e.g. aggregations: {per_card: {key: card, window: {tumbling: 1m}, aggregates: {orders: count}, output: cards.jsonl}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "job.yaml", "/d")
			if err == nil || err.Error() != tt.want {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// The files of every aggregation are looked at together: two aggregations
// that write to one file under two names (a symbolic link) are refused,
// as two outputs of one aggregation are.
func TestLoadAggregationsOneFileTwoNames(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "cards.jsonl"), nil, 0o644)
	if err := os.Symlink("cards.jsonl", filepath.Join(dir, "alias.jsonl")); err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(severalFile, "[merchants.jsonl, {sqlite: {path: m.db, table: hourly}}]", "alias.jsonl", 1)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o644)
	_, err := Load(filepath.Join(dir, "job.yaml"))
	want := "job.yaml:18: aggregations.per_merchant.output: " + filepath.Join(dir, "alias.jsonl") + " is the same file as aggregations.per_card.output"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got  %v\nwant …%s", err, want)
	}
}
