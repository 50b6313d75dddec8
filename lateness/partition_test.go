package lateness

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A partition is a value with its JSON type, as weir run reads it: the
// string "1" and the number 1 are two partitions, each holding the watermark
// back, and a value that is not a string, a number JSON can write or a
// boolean is no partition at all.
func TestPartitionValuesAreWeirRuns(t *testing.T) {
	lines := `{"p":"1","ts":"2026-09-07T12:00:10Z","arrival":"2026-09-07T12:00:10Z"}
{"p":1,"ts":"2026-09-07T12:00:05Z","arrival":"2026-09-07T12:00:11Z"}
{"p":"1","ts":"2026-09-07T12:02:00Z","arrival":"2026-09-07T12:02:00Z"}
{"p":1,"ts":"2026-09-07T12:00:30Z","arrival":"2026-09-07T12:02:01Z"}
{"p":NaN,"ts":"2026-09-07T12:00:40Z","arrival":"2026-09-07T12:02:02Z"}
{"p":[1],"ts":"2026-09-07T12:00:41Z","arrival":"2026-09-07T12:02:03Z"}
`
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(in, Options{PartitionField: "p", Delays: []time.Duration{5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	sum := weirRunWith(t, in, 5000, 0, ", partition_field: p", "")
	if len(r.Delays) != 1 {
		t.Fatalf("%d delays, want 1", len(r.Delays))
	}
	if got := r.Delays[0].TooLate; got != 0 || sum.TooLate != 0 {
		t.Errorf("weir lateness says %d too late, weir run %d; want 0 (two partitions hold the watermark at 12:00:00)", got, sum.TooLate)
	}
	if r.Events != 4 || r.Rejected != 2 || r.RejectReasons["no_partition"] != 2 ||
		sum.Quarantined != 2 || sum.QuarantineReasons["no_partition"] != 2 {
		t.Errorf("weir lateness: %d events, %d rejected %v; weir run: %d quarantined %v; want 4 events and 2 no_partition in both",
			r.Events, r.Rejected, r.RejectReasons, sum.Quarantined, sum.QuarantineReasons)
	}
}

// Partitions that are integers beyond 64 bits are told apart by their
// digits, as weir run tells them apart: a float64 made these two one
// partition, whose later event moved the watermark past the other's.
func TestBigIntegerPartitionsAreWeirRuns(t *testing.T) {
	lines := `{"p":18446744073709551615,"ts":"2026-09-07T12:00:10Z","arrival":"2026-09-07T12:00:10Z"}
{"p":18446744073709551614,"ts":"2026-09-07T12:00:05Z","arrival":"2026-09-07T12:00:11Z"}
{"p":18446744073709551615,"ts":"2026-09-07T12:02:00Z","arrival":"2026-09-07T12:02:00Z"}
{"p":18446744073709551614,"ts":"2026-09-07T12:00:30Z","arrival":"2026-09-07T12:02:01Z"}
{"p":1.8446744073709551614e19,"ts":"2026-09-07T12:00:31Z","arrival":"2026-09-07T12:02:02Z"}
`
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(in, Options{PartitionField: "p", Delays: []time.Duration{5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	sum := weirRunWith(t, in, 5000, 0, ", partition_field: p", "")
	if len(r.Delays) != 1 {
		t.Fatalf("%d delays, want 1", len(r.Delays))
	}
	if got := r.Delays[0].TooLate; got != 0 || sum.TooLate != 0 || r.Events != 5 || sum.Accepted != 5 {
		t.Errorf("weir lateness says %d of %d too late, weir run %d of %d; want 0 of 5 (two partitions hold the watermark at 12:00:00)",
			got, r.Events, sum.TooLate, sum.Accepted)
	}
}
