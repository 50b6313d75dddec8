package reconcile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/job"
)

// A ledger's ids are told apart as weir run tells them apart: 1 and 1.0 are
// one id, "A" and "\u0041" too, and an object is no id at all.
func TestLedgerIDsAreWeirRuns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: input.jsonl}\ntime: {field: ts}\nid: id\n"+
		"window: {tumbling: 1m}\naggregates: {n: count}\noutput: results.jsonl\n"), 0o644)
	j, err := job.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "ledger.jsonl")
	os.WriteFile(in, []byte(`{"id":1,"ts":"2026-09-07T12:00:01Z"}
{"id":1.0,"ts":"2026-09-07T12:00:02Z"}
{"id":"A","ts":"2026-09-07T12:00:03Z"}
{"id":"\u0041","ts":"2026-09-07T12:00:04Z"}
{"id":{"a":1},"ts":"2026-09-07T12:00:05Z"}
`), 0o644)
	rep := &Report{}
	if err := writeLedger(j, []string{in}, filepath.Join(dir, "out.jsonl"), rep); err != nil {
		t.Fatal(err)
	}
	if rep.LedgerLines != 5 || rep.LedgerEvents != 2 || rep.LedgerDuplicates != 2 || rep.LedgerUnreadable != 1 || rep.Unreadable["no_id"] != 1 {
		t.Errorf("%d lines: %d events, %d duplicates, %d unreadable %v; want 5: 2, 2, 1 (no_id 1)",
			rep.LedgerLines, rep.LedgerEvents, rep.LedgerDuplicates, rep.LedgerUnreadable, rep.Unreadable)
	}
}
