package job

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/jobfile"
)

// limitsDB makes the SQLite database of the lookup tests: the cards'
// limits, some with a NULL, and a table keyed by number.
func limitsDB(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "limits.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE limits (card TEXT PRIMARY KEY, credit_limit INTEGER, tier TEXT, ratio REAL)",
		"INSERT INTO limits VALUES ('c1', 500, 'gold', 0.5), ('c2', 100, NULL, 1.25), ('c4', 50, 'basic', 2)",
		"CREATE TABLE stores (id INTEGER PRIMARY KEY, city TEXT)",
		"INSERT INTO stores VALUES (1, 'Lyon'), (7, 'Graz')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// lookupRows are the rows of limits as the lookup writes them.
var lookupRows = map[string]string{
	"c1": `{"card":"c1","credit_limit":500,"tier":"gold","ratio":0.5}`,
	"c2": `{"card":"c2","credit_limit":100,"tier":null,"ratio":1.25}`,
	"c4": `{"card":"c4","credit_limit":50,"tier":"basic","ratio":2}`,
}

// lookupOrders are n orders, a second apart in arrival, of the cards c0
// to c5 in turn, with a duplicate of every tenth and a line that is not
// JSON every 25th.
func lookupOrders(n int) (lines []string) {
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		arr := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		ts := base.Add(time.Duration(i-i%3) * time.Second).Format(time.RFC3339)
		switch {
		case i%25 == 24:
			lines = append(lines, "not json")
			continue
		case i%10 == 9:
			// A delivery again of the order before.
			prev := lines[len(lines)-1]
			lines = append(lines, strings.Replace(prev, `"arr":"`, `"arr":"`+arr+`","was":"`, 1))
			continue
		}
		lines = append(lines, fmt.Sprintf(`{"order":"o%d","card":"c%d","store":%d,"ts":"%s","arr":"%s"}`, i, i%6, i%8, ts, arr))
	}
	return lines
}

const lookupJob = `name: enrich
source: {file: input.jsonl}
time: {field: ts, arrival_field: arr}
key: card
id: order
lookup:
  sqlite: {path: limits.db}
  query: SELECT card, credit_limit, tier, ratio FROM limits WHERE card IN ({keys})
  kind: KIND
  cache: {size: 100, ttl: 10s}
  batch: {keys: 1}
output: out.jsonl
quarantine: bad.jsonl
dead_letter: dead.jsonl
summary: summary.json
`

// A job with a lookup writes each record with the row its key had, read
// when the record came (a left_outer lookup also each record whose key has
// none), in the order the records came. Derived here record by record:
// duplicates and lines that are not JSON are set apart first; a key's row
// is read at the arrival of its record unless the cache has it from less
// than its time to live (10s) before, and then it is that read's.
func TestLookupJob(t *testing.T) {
	for _, kind := range []string{jobfile.JoinLeftOuter, jobfile.JoinInner} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			limitsDB(t, dir)
			lines := lookupOrders(200)
			sum := runJobAt(t, dir, strings.Replace(lookupJob, "KIND", kind, 1), strings.Join(lines, "\n")+"\n", Options{})
			var want strings.Builder
			seen, cached := map[string]bool{}, map[string]time.Time{}
			var found, missing, dups, bad int64
			for i, line := range lines {
				var o struct{ Order, Card, Ts, Arr string }
				if json.Unmarshal([]byte(line), &o) != nil {
					bad++
					continue
				}
				if seen[o.Order] {
					dups++
					continue
				}
				seen[o.Order] = true
				arr, _ := time.Parse(time.RFC3339, o.Arr)
				if at, ok := cached[o.Card]; !ok || arr.Sub(at) >= 10*time.Second {
					cached[o.Card] = arr
				}
				row, ok := lookupRows[o.Card]
				if ok {
					found++
				} else {
					missing++
					if kind == jobfile.JoinInner {
						continue
					}
					row = "null"
				}
				ts, _ := time.Parse(time.RFC3339, o.Ts)
				fmt.Fprintf(&want, `{"key":%q,"event_time":%q,"line":%d,"found":%t,"row":%s,"read_at":%q,"event":%s}`+"\n",
					o.Card, ts.Format("2006-01-02T15:04:05.000Z"), i+1, ok, row, cached[o.Card].Format("2006-01-02T15:04:05.000Z"), line)
			}
			if got := read(t, dir, "out.jsonl"); got != want.String() {
				t.Errorf("out.jsonl:\n%s\nwant:\n%s", got, want.String())
			}
			if found == 0 || missing == 0 || dups == 0 || bad == 0 {
				t.Fatalf("the input should have rows found and not, duplicates and bad lines: %d, %d, %d, %d", found, missing, dups, bad)
			}
			ls := sum.Lookup
			written := found
			if kind == jobfile.JoinLeftOuter {
				written += missing
			}
			if ls == nil || ls.Found != found || ls.NotFound != missing || ls.Failed != 0 || ls.Written != written || ls.FailedWritten != 0 ||
				sum.Duplicates != dups || sum.Quarantined != bad || sum.Accepted != found+missing || !sum.Balanced() {
				t.Errorf("summary: %+v %+v; want %d found, %d not found, %d written, %d duplicates, %d quarantined", sum.Accounting, ls, found, missing, written, dups, bad)
			}
			if ls.CacheHits == 0 || ls.Calls == 0 || ls.Calls+ls.CacheHits < found+missing {
				t.Errorf("every record is read from the table or the cache: %d calls, %d from the cache, of %d", ls.Calls, ls.CacheHits, found+missing)
			}
			if got := strings.Count(read(t, dir, "bad.jsonl"), "\n"); got != int(bad) {
				t.Errorf("bad.jsonl has %d lines, want %d", got, bad)
			}
			if got := read(t, dir, "dead.jsonl"); got != "" {
				t.Errorf("dead.jsonl: %s", got)
			}
		})
	}
}

// setAsideAt is the processing time a dead letter was set aside, which
// depends on when its lookup's last try ended.
var setAsideAt = regexp.MustCompile(`"set_aside_at":"[^"]*",`)

// A lookup that keeps failing sends every record it was for to the dead
// letters, with the error and the tries, after its retries; none is
// dropped, and the job goes on to its end.
func TestLookupJobDeadLetters(t *testing.T) {
	dir := t.TempDir()
	limitsDB(t, dir)
	yaml := strings.NewReplacer("FROM limits", "FROM limitz", "KIND", "inner", "batch: {keys: 1}", "batch: {keys: 3, in_flight: 2}\n  retries: {attempts: 2, backoff: 1ms}").Replace(lookupJob)
	lines := lookupOrders(30)
	sum := runJobAt(t, dir, yaml, strings.Join(lines, "\n")+"\n", Options{})
	var want strings.Builder
	seen := map[string]bool{}
	n := int64(0)
	for i, line := range lines {
		var o struct{ Order, Card, Ts string }
		if json.Unmarshal([]byte(line), &o) != nil || seen[o.Order] {
			continue
		}
		seen[o.Order] = true
		n++
		ts, _ := time.Parse(time.RFC3339, o.Ts)
		fmt.Fprintf(&want, `{"reason":"lookup_failed","error":"SQLite database %s: SQL logic error: no such table: limitz (1)","attempts":2,"key":%q,"event_time":%q,"line":%d,"event":%s}`+"\n",
			filepath.Join(dir, "limits.db"), o.Card, ts.Format("2006-01-02T15:04:05.000Z"), i+1, line)
	}
	if got := setAsideAt.ReplaceAllString(read(t, dir, "dead.jsonl"), ""); got != want.String() {
		t.Errorf("dead.jsonl:\n%s\nwant:\n%s", got, want.String())
	}
	if ls := sum.Lookup; ls.Failed != n || ls.FailedWritten != n || ls.Found+ls.NotFound+ls.Written != 0 || ls.Retries == 0 || sum.Accepted != n {
		t.Errorf("summary: %+v %+v; want %d failed and written to the dead letters", sum.Accounting, ls, n)
	}
	if got := read(t, dir, "out.jsonl"); got != "" {
		t.Errorf("out.jsonl: %s", got)
	}
}

// A lookup in PostgreSQL by a number: the key's digits are the query's
// parameter, and the row's columns are written as JSON by their types
// (bigint, numeric, boolean, timestamptz, text with NULL, jsonb, bytea as
// text when it is, else in base64).
func TestLookupJobPostgres(t *testing.T) {
	dsn := pgDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE stores (id bigint PRIMARY KEY, city text, rate numeric(6,3), open boolean, since timestamptz, tags jsonb, code bytea)",
		`INSERT INTO stores VALUES (1, 'Lyon', 1.250, true, '2020-03-01T08:00:00Z', '{"zone": "south", "floors": [1, 2]}', 'ab'),
			(7, NULL, 0.5, false, '2021-01-01T00:00:00.5Z', NULL, '\xff00')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	dir := t.TempDir()
	yaml := `name: stores
source: {file: input.jsonl}
time: {field: ts, arrival_field: arr}
key: store
lookup:
  postgres: {dsn: "` + dsn + `"}
  query: SELECT city, id, rate, open, since, tags, code FROM stores WHERE id IN ({keys})
  key_column: id
  kind: left_outer
  cache: {size: 10}
  batch: {keys: 1}
output: out.jsonl
`
	lines := lookupOrders(12)
	runJobAt(t, dir, yaml, strings.Join(lines, "\n")+"\n", Options{})
	rows := map[string]string{
		"1": `{"city":"Lyon","id":1,"rate":1.250,"open":true,"since":"2020-03-01T08:00:00Z","tags":{"zone": "south", "floors": [1, 2]},"code":"ab"}`,
		"7": `{"city":null,"id":7,"rate":0.500,"open":false,"since":"2021-01-01T00:00:00.5Z","tags":null,"code":"/wA="}`,
	}
	var want strings.Builder
	readAt := map[string]string{}
	for i, line := range lines {
		var o struct {
			Store   int
			Ts, Arr string
		}
		if json.Unmarshal([]byte(line), &o) != nil {
			continue
		}
		key := fmt.Sprint(o.Store)
		ts, _ := time.Parse(time.RFC3339, o.Ts)
		arr, _ := time.Parse(time.RFC3339, o.Arr)
		if readAt[key] == "" {
			readAt[key] = arr.Format("2006-01-02T15:04:05.000Z")
		}
		row, ok := rows[key]
		if !ok {
			row = "null"
		}
		fmt.Fprintf(&want, `{"key":%s,"event_time":%q,"line":%d,"found":%t,"row":%s,"read_at":%q,"event":%s}`+"\n",
			key, ts.Format("2006-01-02T15:04:05.000Z"), i+1, ok, row, readAt[key], line)
	}
	// The times are read back in the server's time zone: compare them as
	// instants.
	got := read(t, dir, "out.jsonl")
	for _, tz := range regexp.MustCompile(`"since":"[^"]*"`).FindAllString(got, -1) {
		v, err := time.Parse(time.RFC3339Nano, tz[len(`"since":"`):len(tz)-1])
		if err != nil {
			t.Fatalf("%s: %v", tz, err)
		}
		got = strings.Replace(got, tz, `"since":"`+v.UTC().Format(time.RFC3339Nano)+`"`, 1)
	}
	if got != want.String() {
		t.Errorf("out.jsonl:\n%s\nwant:\n%s", got, want.String())
	}
}

// readAt is when a record's row was read, which a restore, its cache
// empty, reads again.
var readAt = regexp.MustCompile(`"read_at":"[^"]*",`)

// A job with a lookup stopped with a savepoint after each of a few
// batches and resumed writes what the run without a stop writes: its
// records with their rows, its quarantine and its summary, with the counts
// of every run. Only the times the rows were read differ, when a record's
// row was in the cache before the stop: the cache is not state, and the
// resumed run reads the table again.
func TestLookupJobRestoredWritesTheSame(t *testing.T) {
	yaml := strings.Replace(lookupJob, "KIND", jobfile.JoinLeftOuter, 1) + "checkpoint: {dir: ckpt, interval: 1h}\n"
	input := strings.Join(lookupOrders(6000), "\n") + "\n"
	files := []string{"out.jsonl", "bad.jsonl", "dead.jsonl", "summary.json"}
	whole := t.TempDir()
	limitsDB(t, whole)
	sum := runJobAt(t, whole, yaml, input, Options{})
	if sum.Lookup.Found == 0 || sum.Lookup.NotFound == 0 || sum.Quarantined == 0 || sum.Duplicates == 0 {
		t.Fatalf("the input should give rows found and not, bad lines and duplicates: %+v %+v", sum.Accounting, sum.Lookup)
	}
	want := map[string]string{}
	for _, f := range files {
		want[f] = readAt.ReplaceAllString(read(t, whole, f), "")
	}
	for _, stop := range []int64{1, 2, 5} {
		dir := t.TempDir()
		limitsDB(t, dir)
		if s := runJobAt(t, dir, yaml, input, Options{stopAfter: stop}); s.Savepoint == "" {
			t.Fatalf("stop after batch %d: no savepoint (read %d)", stop, s.Read)
		}
		runJobAt(t, dir, yaml, input, Options{})
		for _, f := range files {
			if got := readAt.ReplaceAllString(read(t, dir, f), ""); got != want[f] {
				t.Errorf("stopped after batch %d and resumed: %s differs from the run without a stop (%d bytes against %d)", stop, f, len(got), len(want[f]))
			}
		}
	}
}

// A lookup job's console shows its records as they were written, and its
// status and metrics the lookup's records by outcome and its queries.
func TestLookupJobConsole(t *testing.T) {
	dir := t.TempDir()
	limitsDB(t, dir)
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(strings.Join(lookupOrders(60), "\n")+"\n"), 0o600)
	j := loadJob(t, dir, strings.Replace(lookupJob, "KIND", jobfile.JoinInner, 1))
	rn, err := Build(j, Options{Console: true})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rn.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := rn.Console()
	srv.Ended(rn.Engine())
	get := func(path string) string {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Body.String()
	}
	var panes []json.RawMessage
	json.Unmarshal([]byte(get("/api/panes")), &panes)
	var got []string
	for _, p := range panes {
		got = append(got, string(p))
	}
	if want := strings.TrimSuffix(read(t, dir, "out.jsonl"), "\n"); strings.Join(got, "\n") != want || len(got) == 0 {
		t.Errorf("/api/panes:\n%s\nwant the output's:\n%s", strings.Join(got, "\n"), want)
	}
	var status struct {
		Status struct {
			Lookups []engine.LookupStatus `json:"lookups"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(get("/api/status")), &status); err != nil {
		t.Fatal(err)
	}
	ls := sum.Lookup
	want := engine.LookupStatus{Name: "lookup", Records: ls.Found + ls.NotFound, CacheHits: ls.CacheHits, Calls: ls.Calls}
	if len(status.Status.Lookups) != 1 || status.Status.Lookups[0] != want {
		t.Errorf("/api/status lookups: %+v, want %+v", status.Status.Lookups, want)
	}
	m := get("/metrics")
	for _, line := range []string{
		fmt.Sprintf(`weir_lookup_records_total{job_name="enrich",lookup="lookup",outcome="cached"} %d`, ls.CacheHits),
		fmt.Sprintf(`weir_lookup_calls_total{job_name="enrich",kind="call",lookup="lookup"} %d`, ls.Calls),
	} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s:\n%s", line, m)
		}
	}
}
