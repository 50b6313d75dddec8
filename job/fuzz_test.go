package job

import (
	"encoding/json"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/source"
)

// FuzzDecode: any line is an event, a rejected line with a reason, a
// watermark line or a blank one; an event has a plausible time and, when a
// key is read, a key that is valid JSON.
func FuzzDecode(f *testing.F) {
	job := `
source: {file: in.jsonl}
time: {field: ts, arrival_field: at, partition_field: p}
key: user.card
id: id
watermark: {from_field: wm}
window: {tumbling: 1m}
aggregates: {n: count, s: sum(v), lo: min(v), hi: max(v), m: avg(v), d: count_distinct(u), c: count(u)}
output: out.jsonl
`
	j, err := jobfile.Parse([]byte(job), "job.yaml", "/d")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"ts":"2026-01-01T00:00:01Z","at":"2026-01-01T00:00:02Z","p":1,"user":{"card":"c1"},"id":7,"v":12.50,"u":"x"}`,
		`{"ts":1788782400000,"at":1788782400001,"p":"a","user":{"card":5},"id":"e","v":-3,"u":true}`,
		`{"ts":1788782400000,"at":1788782400001,"p":1e400,"user":{"card":-1.5e400},"id":18446744073709551615,"v":1,"u":1e-400}`,
		`{"wm":"2026-01-01T00:00:00Z","at":"2026-01-01T00:00:02Z"}`,
		`{"ts":"2026-01-01T00:00:01Z","at":"2026-01-01T00:00:02Z","p":1,"user":{"card":"\xff"},"id":7,"v":NaN}`,
		`not json`, ``, `  `, `[1]`, `{"ts":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		lp := newLineParser(j)
		var d engine.Decoded[string, record]
		d.Partition = -1
		lp.Decode(&connector.Record{Value: line, Offset: 1}, &d)
		switch d.Kind {
		case engine.Rejected:
			if d.Reason == "" {
				t.Errorf("rejected without a reason: %q", line)
			}
		case engine.Event:
			if d.Time < source.PlausibleFrom || d.Arrival == 0 && d.Time == 0 {
				t.Errorf("an event at %v: %q", d.Time, line)
			}
			if len(d.Key) == 0 {
				t.Errorf("an event without a key: %q", line)
			}
			// Valid, not decodable into a float64: a key keeps its digits.
			if !json.Valid([]byte(d.Key)) {
				t.Errorf("key %q is not JSON", d.Key)
			}
		}
	})
}
