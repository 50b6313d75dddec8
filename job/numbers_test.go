package job

import (
	"slices"
	"strings"
	"testing"
)

// Keys, ids, partitions and distinct values that are integers beyond 64
// bits are told apart by their digits, and written with them: a float64
// made 18446744073709551615 and 18446744073709551614 one key
// 18446744073709552000, with their amounts summed. A number written another
// way (1e3 for 1000, an id 1.8446744073709551615e19) is the same value, one
// key and one id.
func TestBigIntegersAreExact(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
id: id
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count, total: sum(v), users: count_distinct(u)}
output: results.jsonl
quarantine: quarantine.jsonl
`
	ev := func(id, k, u string, v int) string {
		return `{"id":` + id + `,"k":` + k + `,"u":` + u + `,"v":` + string(rune('0'+v)) + `,"ts":"2026-01-01T00:00:01Z","arrival":"2026-01-01T00:00:01Z"}`
	}
	in := lines(
		ev(`18446744073709551615`, `18446744073709551615`, `1`, 1),
		ev(`18446744073709551614`, `18446744073709551614`, `1`, 2),
		ev(`100000000000000000001`, `100000000000000000001`, `18446744073709551615`, 3),
		ev(`100000000000000000000`, `100000000000000000000`, `18446744073709551614`, 4),
		ev(`1234567890123456789012345678901234567890`, `-1234567890123456789012345678901234567890`, `1`, 5),
		ev(`1234567890123456789012345678901234567891`, `-1234567890123456789012345678901234567890`, `1`, 6),
		ev(`1000`, `1e3`, `1`, 7),
		ev(`1001`, `1000.0`, `1e3`, 8),
		ev(`1.8446744073709551615e19`, `7`, `1`, 9), // the first id again
	)
	dir, sum := runJob(t, job, in)
	pane := func(key string, n, total, users int) string {
		return `{"key":` + key + `,"window_start":"2026-01-01T00:00:00.000Z","window_end":"2026-01-01T00:01:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"9999-12-31T23:59:59.999Z","emitted_at":"2026-01-01T00:00:01.000Z","n":` +
			itoa(n) + `,"total":` + itoa(total) + `,"users":` + itoa(users) + `}`
	}
	want := []string{
		pane(`-1234567890123456789012345678901234567890`, 2, 11, 1),
		pane(`1000`, 2, 15, 2),
		pane(`100000000000000000000`, 1, 4, 1),
		pane(`100000000000000000001`, 1, 3, 1),
		pane(`18446744073709551614`, 1, 2, 1),
		pane(`18446744073709551615`, 1, 1, 1),
	}
	got := strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")), "\n")
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("results, sorted:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sum.Accepted != 8 || sum.Duplicates != 1 || sum.Quarantined != 0 {
		t.Errorf("%d accepted, %d duplicates, %d quarantined; want 8, 1 (the id 1.8446744073709551615e19), 0", sum.Accepted, sum.Duplicates, sum.Quarantined)
	}
}

// Partitions of big integers are as many partitions as values: the second
// holds the watermark back, and its old event is on time.
func TestBigIntegerPartitions(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival, partition_field: p}
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
late_output: late.jsonl
`
	in := lines(
		`{"p":18446744073709551615,"ts":"2026-01-01T00:00:10Z","arrival":"2026-01-01T00:00:10Z"}`,
		`{"p":18446744073709551614,"ts":"2026-01-01T00:00:05Z","arrival":"2026-01-01T00:00:11Z"}`,
		`{"p":18446744073709551615,"ts":"2026-01-01T00:02:00Z","arrival":"2026-01-01T00:02:00Z"}`,
		`{"p":18446744073709551614,"ts":"2026-01-01T00:00:30Z","arrival":"2026-01-01T00:02:01Z"}`,
	)
	dir, sum := runJob(t, job, in)
	if sum.TooLate != 0 || sum.Accepted != 4 {
		t.Errorf("%d too late, %d accepted; want 0 and 4 (two partitions hold the watermark at 00:00:05):\n%s", sum.TooLate, sum.Accepted, read(t, dir, "late.jsonl"))
	}
}

// A number as large as JSON writes it is a key, written in all its digits
// and held to max_key_bytes by them; a number JSON has not is a bad key.
func TestHugeNumberKeys(t *testing.T) {
	job := `
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count}
max_key_bytes: 400B
output: results.jsonl
quarantine: quarantine.jsonl
`
	ev := func(k string) string {
		return `{"k":` + k + `,"ts":"2026-01-01T00:00:01Z","arrival":"2026-01-01T00:00:01Z"}`
	}
	dir, sum := runJob(t, job, lines(ev(`1e399`), ev(`1e400`), ev(`-1e-400`), ev(`inf`)))
	got := read(t, dir, "results.jsonl")
	for _, key := range []string{`"key":1` + strings.Repeat("0", 399) + `,`, `"key":-1e-400,`} {
		if !strings.Contains(got, key) {
			t.Errorf("results lack %.40s...:\n%.200s", key, got)
		}
	}
	q := read(t, dir, "quarantine.jsonl")
	for _, want := range []string{
		`"reason":"key_too_long","line":2,"detail":"k is 401 bytes written in full, more than max_key_bytes (400)"`,
		`"reason":"bad_key","line":4,"detail":"k is not a JSON number"`,
	} {
		if !strings.Contains(q, want) {
			t.Errorf("quarantine lacks %s:\n%s", want, q)
		}
	}
	if sum.Accepted != 2 || sum.Quarantined != 2 {
		t.Errorf("%d accepted, %d quarantined; want 2 and 2", sum.Accepted, sum.Quarantined)
	}
}
