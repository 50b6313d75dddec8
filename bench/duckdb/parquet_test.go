package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestParquetOutput is the independent check of weir's Parquet output: the
// weir command, built from this repository, runs a job file that writes
// its panes both to Parquet (partitioned by date and hour, with
// checkpoints) and to a JSON-lines file; DuckDB reads the Parquet files
// with read_parquet, and every row must be a line of the JSON output, with
// the same key, window, revision, timing, final, count and exact sum, in
// the folder of its window's date and hour, and no line missing.
func TestParquetOutput(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "weir")
	build := exec.Command("go", "build", "-o", bin, "./cmd/weir")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building weir: %v\n%s", err, out)
	}

	// 30,000 events of 40 cards over three hours around midnight, ten a
	// second, amounts in cents.
	f, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(5, 50))
	base := time.Date(2026, 6, 5, 22, 30, 0, 0, time.UTC).UnixMilli()
	for i := range 30_000 {
		cents := r.IntN(100_000)
		fmt.Fprintf(w, `{"card":"c%d","amount":%d.%02d,"ts":%d}`+"\n", r.IntN(40), cents/100, cents%100, base+int64(i)*360)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	job := `name: spend
source: {file: events.jsonl}
time: {field: ts}
key: card
watermark: {delay: 0s}
window: {tumbling: 5m}
aggregates: {n: count, spent: sum(amount)}
output:
  - parquet: {dir: lake, partition_by: [date, hour], roll: {size: 16KiB}}
  - results.jsonl
checkpoint: {dir: ckpt, interval: 50ms}
`
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, "run", "job.yaml")
	run.Dir = dir
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("weir run: %v\n%s", err, out)
	}

	// The JSON output's panes.
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var p struct {
			Key      string
			Start    string `json:"window_start"`
			End      string `json:"window_end"`
			Revision int64
			Timing   string
			Final    bool
			N        int64
			Spent    json.Number
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&p); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		start, err1 := time.Parse(time.RFC3339Nano, p.Start)
		end, err2 := time.Parse(time.RFC3339Nano, p.End)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", l, err1, err2)
		}
		want = append(want, fmt.Sprintf("%s|%d|%d|%d|%s|%v|%d|%s|%s|%s", p.Key, start.UnixMilli(), end.UnixMilli(), p.Revision, p.Timing, p.Final, p.N, p.Spent,
			start.UTC().Format("2006-01-02"), start.UTC().Format("15")))
	}
	slices.Sort(want)

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	glob := filepath.Join(dir, "lake", "**", "*.parquet")
	rows, err := db.Query(`SELECT key, epoch_ms(window_start), epoch_ms(window_end), revision, timing, final,
		CAST(n AS BIGINT), spent_exact, spent, date, hour
		FROM read_parquet(?, hive_partitioning = true, hive_types_autocast = false)`, glob)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var key, timing, exact, date, hour string
		var start, end, rev, n int64
		var final bool
		var spent float64
		if err := rows.Scan(&key, &start, &end, &rev, &timing, &final, &n, &exact, &spent, &date, &hour); err != nil {
			t.Fatal(err)
		}
		if f, err := strconv.ParseFloat(exact, 64); err != nil || f != spent {
			t.Errorf("spent %v is not spent_exact %s", spent, exact)
		}
		got = append(got, fmt.Sprintf("%s|%d|%d|%d|%s|%v|%d|%s|%s|%s", key, start, end, rev, timing, final, n, exact, date, hour))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if len(want) != 1440 || !slices.Equal(got, want) {
		t.Fatalf("DuckDB read %d rows, the JSON output has %d panes:\n%s\nwant\n%s", len(got), len(want), head(got), head(want))
	}
	var files, folders int
	if err := db.QueryRow(`SELECT count(DISTINCT filename), count(DISTINCT parse_dirpath(filename)) FROM read_parquet(?, filename = true)`, glob).Scan(&files, &folders); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "lake", "*", "*", ".*"))
	if len(left) > 0 {
		t.Errorf("files left besides the final ones: %v", left)
	}
	t.Logf("%d panes, each read back by DuckDB as the JSON output has it, from %d part files in %d folders", len(got), files, folders)
}

func head(lines []string) string {
	if len(lines) > 20 {
		lines = append(lines[:20:20], "…")
	}
	return strings.Join(lines, "\n")
}
