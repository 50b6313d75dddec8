package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// weir lint looks the keys of the sample up in a lookup's table, once: it
// says how many have a row, names a query that fails (exit 1), and warns
// when none has a row (a wrong key_column, or keys written otherwise than
// the table has them).
func TestLintLookup(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, "limits.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE limits (card TEXT, credit_limit INTEGER)", "INSERT INTO limits VALUES ('c1', 500), ('c2', 100)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(`{"card":"c1","ts":"2026-01-01T00:00:00Z"}
{"card":"c2","ts":"2026-01-01T00:00:01Z"}
{"card":"c3","ts":"2026-01-01T00:00:02Z"}
{"card":"c1","ts":"2026-01-01T00:00:03Z"}
`), 0o644)
	job := `name: limits
source: orders.jsonl
time: {field: ts}
key: card
lookup:
  sqlite: {path: limits.db}
  query: QUERY
output: out.jsonl
dead_letter: failed.jsonl
`
	head := "job.yaml: the job file is valid\nsample: the first 4 lines of orders.jsonl\nquarantined: none of the lines sampled\n"
	for _, c := range []struct {
		query, want string
		code        int
	}{
		{"SELECT card, credit_limit FROM limits WHERE card IN ({keys})",
			head + "lookup: 2 of the 3 keys of the sample have a row in SQLite database " + filepath.Join(dir, "limits.db") + "\n", 0},
		{"SELECT card, credit_limit FROM limitz WHERE card IN ({keys})",
			head + "job.yaml: lookup.query: it fails on the sample's keys: SQLite database " + filepath.Join(dir, "limits.db") + ": SQL logic error: no such table: limitz (1)\n", 1},
		{"SELECT credit_limit, card FROM limits WHERE card IN ({keys})",
			head + "job.yaml: warning: lookup: none of the 3 keys of the sample has a row in SQLite database " + filepath.Join(dir, "limits.db") +
				": is the query's first column (key_column) the column of the key, and is the key written as the table has it?\n", 0},
	} {
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(strings.Replace(job, "QUERY", c.query, 1)), 0o644)
		code, stdout, _ := runCLI(t, dir, "lint", "job.yaml")
		if code != c.code || stdout != c.want {
			t.Errorf("%s: exit %d\n%s\nwant exit %d:\n%s", c.query, code, stdout, c.code, c.want)
		}
	}
}
