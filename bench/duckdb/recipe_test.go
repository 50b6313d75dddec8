package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParquetRecipe: the cookbook's Parquet recipe (examples/parquet-lake),
// run by the weir command, read by DuckDB with the query the page shows,
// gives the rows the page shows (its expected/rows.csv), as DuckDB's -csv
// writes them.
func TestParquetRecipe(t *testing.T) {
	page, err := os.ReadFile("../../docs/cookbook.md")
	if err != nil {
		t.Fatal(err)
	}
	var query string
	for _, l := range strings.Split(string(page), "\n") {
		if q, ok := strings.CutPrefix(l, `duckdb -csv -c "`); ok && strings.Contains(q, "parquet-lake") {
			query = strings.TrimSuffix(q, `"`)
		}
	}
	if query == "" {
		t.Fatal("docs/cookbook.md shows no DuckDB query of examples/parquet-lake")
	}
	want, err := os.ReadFile("../../examples/parquet-lake/expected/rows.csv")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := buildWeir(t, tmp)
	recipe := filepath.Join(tmp, "examples", "parquet-lake")
	os.MkdirAll(filepath.Join(recipe, "out"), 0o755) // a clone has it (out/.gitignore)
	for _, f := range []string{"job.yaml", "sales.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../examples/parquet-lake", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(recipe, f), b, 0o644)
	}
	run := exec.Command(bin, "run", "examples/parquet-lake/job.yaml")
	run.Dir = tmp
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("weir run: %v\n%s", err, out)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(strings.ReplaceAll(query, "examples/parquet-lake/out", filepath.Join(recipe, "out")))
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	got := strings.Join(cols, ",") + "\n"
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if i > 0 {
				got += ","
			}
			if d, ok := v.(time.Time); ok {
				v = d.Format(time.DateOnly) // a DATE, as DuckDB writes it
			}
			got += fmt.Sprint(v)
		}
		got += "\n"
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("DuckDB reads\n%s\nthe page shows\n%s", got, want)
	}
}
