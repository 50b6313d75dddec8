package reconcile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// FuzzLedger feeds the ledger reader any line: it never panics, and every
// line is counted once, as an event, a duplicate or unreadable.
func FuzzLedger(f *testing.F) {
	for _, s := range []string{
		`{"id":"A","shop":"s1","amount":1,"ts":"2026-09-07T12:00:10Z","at":"2026-09-07T12:00:10Z"}`,
		`{"reason":"too_late","event":{"id":"D","shop":"s1","ts":"2026-09-07T12:00:50Z"}}`,
		`{"reason":"not_json","raw":"not json"}`,
		`{"reason":"bad_key","raw_base64":"/w=="}`,
		`{"reason":"line_too_long","raw":"{","raw_bytes":20}`,
		`{"wm":"2026-09-07T12:05:00Z"}`,
		`[1,2]`, `null`, `{"ts":1e400}`, `{"id":{"a":1},"ts":5}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: orders
source: {file: input.jsonl}
time: {field: ts, arrival_field: at}
key: shop
id: id
window: {tumbling: 1m}
aggregates: {orders: count}
output: results.jsonl
`), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		in := filepath.Join(t.TempDir(), "ledger.jsonl")
		os.WriteFile(in, append(append([]byte(nil), line...), '\n'), 0o644)
		rep := &Report{}
		if err := writeLedger(j, []string{in}, filepath.Join(t.TempDir(), "out.jsonl"), mtime.Now(), rep); err != nil {
			return // a line longer than the reader takes
		}
		if n := rep.LedgerEvents + rep.LedgerDuplicates + rep.LedgerUnreadable; rep.LedgerLines != n {
			t.Errorf("%d lines, %d accounted for", rep.LedgerLines, n)
		}
	})
}
