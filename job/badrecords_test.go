package job

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir/jobfile"
)

const badJob = `name: bad
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 10s}
aggregates: {orders: count}
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`

// events writes n events of a few cards, one every 100 ms, and the extra
// lines in the middle.
func events(n int, extra ...string) string {
	var b strings.Builder
	for i := range n {
		at := 1_780_000_000_000 + int64(i)*100
		fmt.Fprintf(&b, `{"card":"c%d","ts":%d,"arrival":%d}`+"\n", i%3, at, at)
		if i == n/2 {
			for _, e := range extra {
				b.WriteString(e + "\n")
			}
		}
	}
	return b.String()
}

// One key that PostgreSQL cannot store (a NUL in it) does not wedge the
// table: its panes are refused by that output alone, kept in the dead
// letter output exactly once, and counted; every other pane reaches the
// table, and every pane the file. A key longer than max_key_bytes never
// reaches an output: the line is quarantined as key_too_long.
func TestAKeyAnOutputCannotStore(t *testing.T) {
	dsn := pgDatabase(t)
	at := int64(1_780_000_000_000 + 50*100)
	in := events(100,
		fmt.Sprintf(`{"card":"c\u0000x","ts":%d,"arrival":%d}`, at, at),
		fmt.Sprintf(`{"card":%q,"ts":%d,"arrival":%d}`, strings.Repeat("k", 10_000), at, at))
	job := badJob + fmt.Sprintf("output: [results.jsonl, {postgres: {dsn: %q, table: alerts}}]\ndead_letter: refused.jsonl\ncheckpoint: {dir: ckpt, interval: 5m}\n", dsn)
	dir, sum := runJob(t, job, in)
	results := fileLines(t, dir, "results.jsonl")
	refused := fileLines(t, dir, "refused.jsonl")
	if len(refused) != 1 || !strings.Contains(refused[0], `"reason":"refused","output":"output[1]","error":"bad/output[1]: the key holds a NUL character, which PostgreSQL text cannot store"`) ||
		!strings.Contains(refused[0], `"pane":{"key":"c\u0000x"`) {
		t.Errorf("dead letters: %q", refused)
	}
	if sum.Refused["output[1]"] != 1 || len(sum.Refused) != 1 {
		t.Errorf("refused: %v", sum.Refused)
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM alerts").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(results)-1 {
		t.Errorf("the table holds %d rows, the file %d panes (one refused)", rows, len(results))
	}
	q := read(t, dir, "quarantine.jsonl")
	if sum.QuarantineReasons["key_too_long"] != 1 || !strings.Contains(q, `"reason":"key_too_long","line":53,"detail":"card is 10000 bytes, more than max_key_bytes (1024)"`) {
		t.Errorf("quarantine %v:\n%s", sum.QuarantineReasons, q)
	}
}

// What weir sets aside always fits where it goes: a line that is not JSON
// keeps its first dead_letter_max_bytes, with its whole length and
// SHA-256; bytes that are not UTF-8 are kept exactly, as base64; a too-late
// event with such bytes in a field weir does not read is kept the same way,
// so that the late output is valid JSON line by line; and every record says
// when it was set aside.
func TestDeadLetterRecordsAreExactAndBounded(t *testing.T) {
	big := strings.Repeat(`"quoted",`, 80_000) // 720 KB, not JSON
	bad := "not \xff\xfe json"
	late := "{\"card\":\"c1\",\"ts\":1779999900000,\"arrival\":1780000005000,\"note\":\"\xff\xfe\"}"
	escape := `{"card":"c2","ts":1779999900000,"arrival":1780000005000,"note":"\x41"}`
	in := events(100, big, bad, late, escape)
	dir, sum := runJob(t, badJob+"output: results.jsonl\n", in)
	var q []map[string]any
	for _, l := range fileLines(t, dir, "quarantine.jsonl") {
		if len(l) > 600_000 {
			t.Errorf("a quarantine record of %d bytes", len(l))
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %.200s", l)
		}
		q = append(q, m)
	}
	if len(q) != 2 || sum.Quarantined != 2 {
		t.Fatalf("%d quarantined: %v", len(q), q)
	}
	sum256 := sha256.Sum256([]byte(big))
	raw, _ := q[0]["raw"].(string)
	if len(raw) != 64<<10 || raw != big[:64<<10] || q[0]["raw_bytes"] != float64(len(big)) || q[0]["raw_sha256"] != hex.EncodeToString(sum256[:]) || q[0]["set_aside_at"] == nil {
		t.Errorf("the long line: %d bytes kept, %v, %v, %v", len(raw), q[0]["raw_bytes"], q[0]["raw_sha256"], q[0]["set_aside_at"])
	}
	if b, _ := base64.StdEncoding.DecodeString(fmt.Sprint(q[1]["raw_base64"])); string(b) != bad || q[1]["raw"] != nil {
		t.Errorf("the line that is not UTF-8: %v", q[1])
	}
	lateLines := fileLines(t, dir, "late.jsonl")
	if len(lateLines) != 2 {
		t.Fatalf("late: %q", lateLines)
	}
	for i, want := range []string{late, escape} {
		var l map[string]any
		if err := json.Unmarshal([]byte(lateLines[i]), &l); err != nil {
			t.Fatalf("the late output is not JSON: %v: %q", err, lateLines[i])
		}
		if b, _ := base64.StdEncoding.DecodeString(fmt.Sprint(l["event_base64"])); string(b) != want || l["set_aside_at"] != "2026-05-28T20:26:45.000Z" {
			t.Errorf("the late event: %v", l)
		}
	}
}

// A line of 20 MiB, more than a line may have, is read past without being
// held: quarantined as line_too_long with its length and checksum, and
// what follows it is read as usual.
func TestLineLongerThanTheLimit(t *testing.T) {
	long := strings.Repeat("\x00", 20<<20)
	in := events(100, long)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(badJob+"output: results.jsonl\n"), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), j, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 101 || sum.Accepted != 100 || sum.QuarantineReasons["line_too_long"] != 1 {
		t.Fatalf("summary: %+v", sum)
	}
	q := fileLines(t, dir, "quarantine.jsonl")
	sum256 := sha256.Sum256([]byte(long))
	if len(q) != 1 || len(q[0]) > 400<<10 || !strings.Contains(q[0], fmt.Sprintf(`"raw_bytes":%d,"raw_sha256":"%x"`, len(long), sum256)) ||
		!strings.Contains(q[0], `"detail":"20971520 bytes, longer than the 16777216 a line may have"`) {
		t.Errorf("quarantine (%d bytes): %.300s", len(q[0]), q[0])
	}
}

// A line of 720 KB that is not JSON, every other byte a quote, goes to a
// quarantine topic as a record that fits it (the broker takes about 1 MB):
// the job goes on, and the record says what was cut.
func TestQuarantineTopicNeverWedges(t *testing.T) {
	addr := broker(t, "quarantine")
	big := strings.Repeat(`"quoted",`, 80_000)
	job := strings.Replace(badJob, "quarantine: quarantine.jsonl\n", fmt.Sprintf("quarantine: {kafka: {brokers: [%s], topic: quarantine}}\n", addr), 1) +
		"output: results.jsonl\ncheckpoint: {dir: ckpt, interval: 5m}\n"
	_, sum := runJob(t, job, events(100, big))
	recs := committedRecords(t, addr, "quarantine")
	if sum.Quarantined != 1 || len(recs) != 1 || !strings.Contains(recs[0], fmt.Sprintf(`"raw_bytes":%d`, len(big))) {
		t.Errorf("quarantined %d, records %d", sum.Quarantined, len(recs))
	}
}

// Keys 1 and "1" (and true and "true") are different keys: they are two
// rows of a table, as they are two panes of a file. A string that reads as
// nothing else is written as itself.
func TestKeysOfTwoTypesAreTwoRows(t *testing.T) {
	at := int64(1_780_000_000_000)
	var b strings.Builder
	for i, k := range []string{`1`, `"1"`, `true`, `"true"`, `"c1"`, `"\"q\""`} {
		fmt.Fprintf(&b, `{"card":%s,"ts":%d,"arrival":%d}`+"\n", k, at+int64(i), at+int64(i))
	}
	dir, _ := runJob(t, badJob+"output: [results.jsonl, {sqlite: {path: results.db, table: alerts}}]\n", b.String())
	db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT card, orders FROM alerts ORDER BY card")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var k string
		var n int
		rows.Scan(&k, &n)
		got = append(got, fmt.Sprintf("%s=%d", k, n))
	}
	if want := `"1"=1 "\"q\""=1 "true"=1 1=1 c1=1 true=1`; strings.Join(got, " ") != want {
		t.Errorf("rows %s\nwant %s", strings.Join(got, " "), want)
	}
}

// A number a sum could not add up without becoming infinite is rejected
// (bad_value, overflow), and so is an event whose window would end after
// the last instant weir writes: no pane is ever null or Inf, and no
// accepted event is missing from every output.
func TestValuesAndTimesOutOfRange(t *testing.T) {
	at := int64(1_780_000_000_000)
	in := fmt.Sprintf(`{"card":"c","amount":1e308,"ts":%d,"arrival":%d}
{"card":"c","amount":1e308,"ts":%d,"arrival":%d}
{"card":"c","amount":2.5,"ts":%d,"arrival":%d}
{"card":"c","amount":1,"ts":"9999-12-31T23:59:59Z","arrival":%d}
`, at, at, at, at, at, at, at)
	job := strings.Replace(badJob, "aggregates: {orders: count}", "aggregates: {orders: count, spent: sum(amount), mean: avg(amount)}", 1) + "output: results.jsonl\nmax_future: none\n"
	dir, sum := runJob(t, job, in)
	if sum.Accepted != 1 || sum.QuarantineReasons["bad_value"] != 2 || sum.QuarantineReasons["implausible_event_time"] != 1 {
		t.Errorf("summary: %+v", sum)
	}
	if r := read(t, dir, "results.jsonl"); !strings.Contains(r, `"orders":1,"spent":2.5,"mean":2.5`) || strings.Contains(r, "null") {
		t.Errorf("results: %s", r)
	}
	q := read(t, dir, "quarantine.jsonl")
	if !strings.Contains(q, `"detail":"overflow: amount is too large to be added up (1e308): a sum of such numbers could be infinite"`) ||
		!strings.Contains(q, `"reason":"implausible_event_time","line":4,"detail":"its windows would end after 9999-12-31, the last instant weir writes"`) {
		t.Errorf("quarantine:\n%s", q)
	}
}

// Too-late events of windows of their own (a session each) are counted per
// window for the latest windows only: the count of the others is kept, in
// one entry, so that what every checkpoint writes stays bounded.
func TestTooLateCountsAreBounded(t *testing.T) {
	var b strings.Builder
	at := int64(1_780_000_000_000)
	fmt.Fprintf(&b, `{"card":"c","ts":%d,"arrival":%d}`+"\n", at+4_000_000, at+4_000_000)
	for i := range 3000 {
		ts := at + int64(i)*1000
		fmt.Fprintf(&b, `{"card":"k%d","ts":%d,"arrival":%d}`+"\n", i, ts, at+4_000_001)
	}
	job := strings.Replace(badJob, "window: {tumbling: 10s}", "window: {session: {gap: 1s}}", 1) + "output: results.jsonl\n"
	_, sum := runJob(t, job, b.String())
	total := int64(0)
	for _, w := range sum.TooLateByWindow {
		total += w.Dropped
	}
	if sum.TooLate != 3000 || total != 3000 || len(sum.TooLateByWindow) != 1025 || sum.TooLateByWindow[0].Before != "2026-05-28T20:59:36.000Z" || sum.TooLateByWindow[0].Dropped != 3000-1024 {
		t.Errorf("too late %d, %d entries summing to %d, the first %+v", sum.TooLate, len(sum.TooLateByWindow), total, sum.TooLateByWindow[0])
	}
}

// The memory backend cannot spill: memory_budget is a threshold it warns of
// when its state passes it, with the keys it holds, and again each time the
// state doubles; the Pebble backend holds to it.
func TestMemoryBudgetWarns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(events(10)), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(badJob+"output: results.jsonl\nstate: {backend: memory, memory_budget: 1KiB}\n"), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	log := &syncWriter{&mu, &out}
	rn, err := Build(j, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.e.Discard()
	synctest.Test(t, func(t *testing.T) {
		stop := rn.watchMemory(1 << 10)
		time.Sleep(memoryCheck + time.Second)
		synctest.Wait()
		stop()
	})
	mu.Lock()
	defer mu.Unlock()
	if got := out.String(); strings.Count(got, "warning: the state takes about") != 1 || !strings.Contains(got, "more than memory_budget (0 MiB), with up to 0 keys: the memory backend keeps every key in memory") {
		t.Errorf("log:\n%s", got)
	}
}

// A line set aside right after a restore, before any line of the resumed
// run has an arrival, is dated by the processing time the checkpoint
// recorded: its dead-letter record is the uninterrupted run's, byte for
// byte (it was dated year 1, the processing clock not restored).
func TestSetAsideRightAfterARestore(t *testing.T) {
	// The first batch is 1,024 lines: the savepoint after it is at line
	// 1024, and line 1025 is not JSON.
	var b strings.Builder
	for i := range 3000 {
		if i == 1024 {
			b.WriteString("not json at all\n")
			continue
		}
		at := 1_780_000_000_000 + int64(i)*100
		fmt.Fprintf(&b, `{"card":"c%d","ts":%d,"arrival":%d}`+"\n", i%3, at, at)
	}
	jobText := badJob + "output: results.jsonl\ncheckpoint: {dir: ckpt, interval: 1h}\n"
	run := func(dir string, o Options) *Summary {
		t.Helper()
		j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Run(context.Background(), j, o)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	ref, dir := t.TempDir(), t.TempDir()
	for _, d := range []string{ref, dir} {
		os.WriteFile(filepath.Join(d, "input.jsonl"), []byte(b.String()), 0o644)
		os.WriteFile(filepath.Join(d, "job.yaml"), []byte(jobText), 0o644)
	}
	run(ref, Options{})
	if sum := run(dir, Options{stopAfter: 1}); sum.Savepoint == "" || sum.Read != 1024 {
		t.Fatalf("the stopped run read %d lines, savepoint %q", sum.Read, sum.Savepoint)
	}
	run(dir, Options{})
	want := read(t, ref, "quarantine.jsonl")
	if !strings.Contains(want, `"set_aside_at":"2026-05-28T20:28:22.300Z"`) {
		t.Fatalf("the uninterrupted run's quarantine:\n%s", want)
	}
	if got := read(t, dir, "quarantine.jsonl"); got != want {
		t.Errorf("quarantine after the restore:\n%s\nthe uninterrupted run's:\n%s", got, want)
	}
}
