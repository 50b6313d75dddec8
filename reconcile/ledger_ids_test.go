package reconcile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// A ledger's ids are told apart as weir run tells them apart: 1 and 1.0 are
// one id, "A" and "\u0041" too, and an object is no id at all.
func TestLedgerIDsAreWeirRuns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: input.jsonl}\ntime: {field: ts}\nid: id\n"+
		"window: {tumbling: 1m}\naggregates: {n: count}\noutput: results.jsonl\n"), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
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
	if err := writeLedger(j, []string{in}, filepath.Join(dir, "out.jsonl"), mtime.Now(), rep); err != nil {
		t.Fatal(err)
	}
	if rep.LedgerLines != 5 || rep.LedgerEvents != 2 || rep.LedgerDuplicates != 2 || rep.LedgerUnreadable != 1 || rep.Unreadable["no_id"] != 1 {
		t.Errorf("%d lines: %d events, %d duplicates, %d unreadable %v; want 5: 2, 2, 1 (no_id 1)",
			rep.LedgerLines, rep.LedgerEvents, rep.LedgerDuplicates, rep.LedgerUnreadable, rep.Unreadable)
	}
}

// Ledger ids that differ only beyond 64 bits are two entries, as they are two
// ids to weir run: a float64 made 18446744073709551615 and
// 18446744073709551614 one id, and the second a duplicate. The same number
// written with an exponent is the same id.
func TestLedgerBigIntegerIDs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: input.jsonl}\ntime: {field: ts}\nid: id\n"+
		"window: {tumbling: 1m}\naggregates: {n: count}\noutput: results.jsonl\n"), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "ledger.jsonl")
	os.WriteFile(in, []byte(`{"id":18446744073709551615,"ts":"2026-09-07T12:00:01Z"}
{"id":18446744073709551614,"ts":"2026-09-07T12:00:02Z"}
{"id":100000000000000000001,"ts":"2026-09-07T12:00:03Z"}
{"id":100000000000000000000,"ts":"2026-09-07T12:00:04Z"}
{"id":1234567890123456789012345678901234567890,"ts":"2026-09-07T12:00:05Z"}
{"id":1234567890123456789012345678901234567891,"ts":"2026-09-07T12:00:06Z"}
{"id":1.8446744073709551614e19,"ts":"2026-09-07T12:00:07Z"}
`), 0o644)
	rep := &Report{}
	if err := writeLedger(j, []string{in}, filepath.Join(dir, "out.jsonl"), mtime.Now(), rep); err != nil {
		t.Fatal(err)
	}
	if rep.LedgerLines != 7 || rep.LedgerEvents != 6 || rep.LedgerDuplicates != 1 || rep.LedgerUnreadable != 0 {
		t.Errorf("%d lines: %d events, %d duplicates, %d unreadable; want 7: 6, 1 (1.8446744073709551614e19), 0",
			rep.LedgerLines, rep.LedgerEvents, rep.LedgerDuplicates, rep.LedgerUnreadable)
	}
}

// With version_field, the ledger keeps an id's highest version, as weir
// run applies it, wherever it comes; the others are counted as duplicates,
// and a line without a valid version is unreadable, as weir run
// quarantines it.
func TestLedgerKeepsTheHighestVersion(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("source: {file: input.jsonl}\ntime: {field: ts}\nid: id\nversion_field: rev\n"+
		"window: {tumbling: 1m}\naggregates: {n: count}\noutput: results.jsonl\n"), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "ledger.jsonl")
	os.WriteFile(in, []byte(`{"id":1,"rev":1,"ts":"2026-09-07T12:00:01Z"}
{"id":1,"rev":3,"ts":"2026-09-07T12:03:00Z"}
{"id":2,"rev":"7","ts":"2026-09-07T12:00:02Z"}
{"id":1,"rev":2,"ts":"2026-09-07T12:02:00Z"}
{"id":2,"rev":7,"ts":"2026-09-07T12:05:00Z"}
{"id":3,"ts":"2026-09-07T12:00:03Z"}
`), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	rep := &Report{}
	if err := writeLedger(j, []string{in}, out, mtime.Now(), rep); err != nil {
		t.Fatal(err)
	}
	if rep.LedgerLines != 6 || rep.LedgerEvents != 2 || rep.LedgerDuplicates != 3 || rep.Unreadable["no_version"] != 1 {
		t.Errorf("%d lines: %d events, %d duplicates, unreadable %v; want 6: 2, 3 (no_version 1)",
			rep.LedgerLines, rep.LedgerEvents, rep.LedgerDuplicates, rep.Unreadable)
	}
	b, _ := os.ReadFile(out)
	if want := `{"id":2,"rev":"7","ts":"2026-09-07T12:00:02Z"}` + "\n" + `{"id":1,"rev":3,"ts":"2026-09-07T12:03:00Z"}` + "\n"; string(b) != want {
		t.Errorf("ledger:\n%s\nwant:\n%s", b, want)
	}
}
