package job

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
)

// A newcomer's job: per-minute clicks per page, where the event is a click,
// with a derived field (the page's section, cut from its path) as the key
// and an amount in another currency summed. Views are counted as filtered,
// never windowed and never moving the watermark; a line whose expression
// fails is quarantined with the expression and the reason; read is the sum
// of its parts.
func TestWhereAndDerivedFields(t *testing.T) {
	var in strings.Builder
	const t0 = 1_780_000_000_000
	want := map[string][2]float64{} // section -> clicks, eur
	for i := range 400 {
		event := "click"
		if i%3 == 0 {
			event = "view"
		}
		section := []string{"shop", "blog", "help"}[i%4%3]
		usd := float64(i%7) + 0.5
		fmt.Fprintf(&in, `{"event":%q,"path":"/%s/p%d","usd":%g,"ts":%d}`+"\n", event, section, i, usd, t0+int64(i)*100)
		if event == "click" {
			w := want[section]
			want[section] = [2]float64{w[0] + 1, w[1] + usd*0.5}
		}
	}
	in.WriteString(`{"event":"click","ts":1780000020000}` + "\n") // no path: its field fails
	in.WriteString(`{"event":7,"path":"/shop/x","usd":1,"ts":1780000020000}` + "\n")
	dir, sum := runJob(t, `name: clicks
source: {file: input.jsonl}
time: {field: ts}
fields: {section: "path[1:5] ?? \"none\"", eur: "usd * 0.5"}
key: section
where: event startsWith "click"
window: {tumbling: 1m}
aggregates: {clicks: count, eur: sum(eur)}
output: results.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`, in.String())
	got := map[string][2]float64{}
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n") {
		var key string
		var clicks, eur float64
		if _, err := fmt.Sscanf(l[strings.Index(l, `"key":`):], `"key":%q`, &key); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		fmt.Sscanf(l[strings.Index(l, `"clicks":`):], `"clicks":%g,"eur":%g`, &clicks, &eur)
		g := got[key]
		got[key] = [2]float64{g[0] + clicks, g[1] + eur}
	}
	for k, w := range want {
		if g := got[k]; g[0] != w[0] || g[1]-w[1] > 1e-9 || w[1]-g[1] > 1e-9 {
			t.Errorf("section %s: %v clicks and eur, want %v", k, g, w)
		}
	}
	if len(got) != 3 {
		t.Errorf("sections %v", got)
	}
	if sum.Filtered != 134 || sum.Accepted != 266 || sum.Quarantined != 2 || sum.Read != 402 || !sum.Balanced() {
		t.Errorf("read %d: accepted %d, filtered %d, quarantined %d", sum.Read, sum.Accepted, sum.Filtered, sum.Quarantined)
	}
	q := read(t, dir, "quarantine.jsonl")
	if !strings.Contains(q, `"reason":"expression_failed","line":401,"detail":"fields.eur (usd * 0.5): no field usd"`) {
		t.Errorf("quarantine:\n%s", q)
	}
	if !strings.Contains(q, `"reason":"expression_failed","line":402,"detail":"where (event startsWith \"click\"): startsWith of a number and a string"`) {
		t.Errorf("quarantine lacks the where's failure:\n%s", q)
	}
	if !strings.Contains(sum.Text(), "266 accepted (0 late within allowed lateness), 0 duplicates, 134 filtered out by where, 0 too late") {
		t.Errorf("summary: %s", sum.Text())
	}
}

// A where or a derived field that does not compile is a bad job file,
// naming the field.
func TestWhereAndFieldsErrors(t *testing.T) {
	for yaml, want := range map[string]string{
		strings.Replace(minimal, "window:", "where: foo(x)\nwindow:", 1):            `job.yaml:4: where: expression "foo(x)" does not compile: unknown function foo`,
		strings.Replace(minimal, "window:", "where: \"\"\nwindow:", 1):              `job.yaml:4: where: expected an expression over the event's fields`,
		strings.Replace(minimal, "window:", "fields: {a: \"b ==\"}\nwindow:", 1):    `job.yaml:4: fields.a: expression "b ==" does not compile: unexpected token EOF`,
		strings.Replace(minimal, "window:", "fields: {\"a-b\": \"1\"}\nwindow:", 1): `job.yaml:4: fields.a-b: expected a name of letters, digits and _, got "a-b"`,
	} {
		_, err := jobfile.Parse([]byte(yaml), "job.yaml", "/jobs")
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
}

// The sample of weir lint (and of a run's first lines) looks for a job's
// fields in each line with its derived fields computed, as the run reads
// them: a key or an aggregate over a derived field is found.
func TestSampleSeesDerivedFields(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(lines(
		`{"ts":"2026-09-01T00:00:01Z","site":"a","n":1,"usd":10}`,
		`{"ts":"2026-09-01T00:00:02Z","site":"b","n":2,"usd":20}`,
	)), 0o644); err != nil {
		t.Fatal(err)
	}
	j := loadJob(t, dir, `
source: {file: input.jsonl}
time: {field: ts}
fields: {device: "site + \"/\" + string(n)", eur: "usd * 0.9"}
key: device
window: {tumbling: 1m}
aggregates: {spent: sum(eur)}
output: out.jsonl
`)
	s, err := SampleInput(j, 100)
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Findings(); len(f) != 0 || s.Lines != 2 {
		t.Errorf("%d lines, findings %v", s.Lines, f)
	}
}
