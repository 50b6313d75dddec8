// Command duckdb is the DuckDB peer of weir's benchmark (2), jsonl-run: the
// same per-key tumbling one-minute count and sum over the same file of JSON
// lines, as one batch query.
//
//	go run . -in FILE [-out FILE] [-lines N] [-threads T]
//
// It reads the lines with DuckDB's read_json (the column types given, so that
// nothing is sampled), groups them by card and by the minute of ts (the job's
// key and event time), counts them and sums their amounts, and writes one
// JSON line per (card, minute) to a file with COPY ... (FORMAT JSON). It then
// prints one JSON line on stdout: its wall time, CPU time, peak RSS and the
// number of rows written. With -lines N it exits non-zero unless the counts
// add up to N (every line counted once).
//
// It lives in its own module, so that weir's main module never depends on
// DuckDB (a cgo library of its own).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the driver, registered as "duckdb"
)

var (
	in      = flag.String("in", "", "the file of JSON lines (weir bench's bench.JSONLFile)")
	out     = flag.String("out", "", "where to write the results (default: a file in a temporary directory, removed at the end)")
	lines   = flag.Int64("lines", 0, "if > 0, the number of lines of the input: the counts must add up to it")
	threads = flag.Int("threads", 0, "DuckDB's threads (0: its default, one per core)")
)

// Query is the job's aggregation as one statement: %[1]s is the input, %[2]s
// the output (both quoted). The columns are those the job reads; DuckDB
// ignores the lines' other keys (id, arrival).
const Query = `COPY (
	SELECT card AS key,
		date_trunc('minute', ts) AS window_start,
		date_trunc('minute', ts) + INTERVAL 1 MINUTE AS window_end,
		count(*) AS orders,
		sum(amount) AS spent
	FROM read_json(%[1]s, format = 'newline_delimited',
		columns = {card: 'VARCHAR', amount: 'DOUBLE', ts: 'TIMESTAMP'})
	GROUP BY card, date_trunc('minute', ts)
) TO %[2]s (FORMAT JSON)`

// Result is what the command prints.
type Result struct {
	DuckDB       string  `json:"duckdb"`
	Lines        int64   `json:"lines"` // the sum of the counts
	Rows         int64   `json:"rows"`  // (key, window) rows written
	Seconds      float64 `json:"seconds"`
	SetupSeconds float64 `json:"setup_seconds"` // opening the database
	CPUSeconds   float64 `json:"cpu_seconds"`   // user + system, whole process
	EventsPerSec float64 `json:"events_per_sec"`
	PerCore      float64 `json:"events_per_sec_per_core"` // lines per CPU second
	Threads      int     `json:"threads"`
	MaxRSSBytes  int64   `json:"max_rss_bytes"`
}

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "duckdb bench:", err)
		os.Exit(1)
	}
}

func run() error {
	if *in == "" {
		return fmt.Errorf("need -in FILE")
	}
	if _, err := os.Stat(*in); err != nil {
		return err
	}
	dst := *out
	if dst == "" {
		dir, err := os.MkdirTemp("", "weir-bench-duckdb-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dst = filepath.Join(dir, "out.jsonl")
	}
	ctx := context.Background()
	cpu0 := cpuTime()
	start := time.Now()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: the settings below stay with it
	if *threads > 0 {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("SET threads = %d", *threads)); err != nil {
			return err
		}
	}
	if err := db.PingContext(ctx); err != nil {
		return err
	}
	setup := time.Since(start)
	rows, err := Aggregate(ctx, db, *in, dst)
	if err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	cpu := cpuTime() - cpu0

	// The check, outside the measured time: the rows written and the sum of
	// their counts, read back from the output.
	var n, sum int64
	if err := db.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(orders), 0) FROM read_json("+quote(dst)+
		", format = 'newline_delimited', columns = {orders: 'BIGINT'})").Scan(&n, &sum); err != nil {
		return err
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&version); err != nil {
		return err
	}
	var nthreads int
	if err := db.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&nthreads); err != nil {
		return err
	}
	r := Result{
		DuckDB: version, Lines: sum, Rows: rows, Seconds: wall, SetupSeconds: setup.Seconds(), CPUSeconds: cpu,
		Threads: nthreads, MaxRSSBytes: maxRSS(),
	}
	if wall > 0 {
		r.EventsPerSec = float64(sum) / wall
	}
	if cpu > 0 {
		r.PerCore = float64(sum) / cpu
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
	if n != rows {
		return fmt.Errorf("COPY reported %d rows, the output has %d", rows, n)
	}
	if *lines > 0 && sum != *lines {
		return fmt.Errorf("the counts add up to %d, want %d lines", sum, *lines)
	}
	return nil
}

// Aggregate runs Query from the file in to the file out and returns the
// number of rows written.
func Aggregate(ctx context.Context, db *sql.DB, in, out string) (int64, error) {
	res, err := db.ExecContext(ctx, fmt.Sprintf(Query, quote(in), quote(out)))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// quote makes s a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// cpuTime is the user and system time of the process so far, in seconds:
// DuckDB's worker threads are threads of this process.
func cpuTime() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// maxRSS is the peak resident set of the process, in bytes (Linux reports
// KiB).
func maxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss // bytes there
	}
	return ru.Maxrss * 1024
}
