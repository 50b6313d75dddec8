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
	"syscall"
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
	dir := t.TempDir()
	bin := buildWeir(t, dir)

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

// buildWeir builds the weir command from this repository into dir.
func buildWeir(t *testing.T, dir string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "weir")
	build := exec.Command("go", "build", "-o", bin, "./cmd/weir")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building weir: %v\n%s", err, out)
	}
	return bin
}

// writeEvents writes n events of 40 cards, 100 ms apart, to dir/events.jsonl.
func writeEvents(t *testing.T, dir string, n int) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(7, 70))
	base := time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := range n {
		cents := r.IntN(100_000)
		fmt.Fprintf(w, `{"card":"c%d","amount":%d.%02d,"ts":%d}`+"\n", r.IntN(40), cents/100, cents%100, base+int64(i)*100)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// uninterrupted runs killJob's job once, to its end, in tmp/ref: the
// panes DuckDB reads of its files, and how long it took.
func uninterrupted(t *testing.T, bin string, db *sql.DB, tmp string) ([]string, time.Duration) {
	t.Helper()
	ref := filepath.Join(tmp, "ref")
	os.Mkdir(ref, 0o755)
	writeEvents(t, ref, 150_000)
	os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(killJob), 0o644)
	run := exec.Command(bin, "run", "job.yaml")
	run.Dir = ref
	start := time.Now()
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("weir run: %v\n%s", err, out)
	}
	took := time.Since(start)
	want := readLake(t, db, ref)
	if len(want) < 1000 {
		t.Fatalf("the uninterrupted run wrote %d panes", len(want))
	}
	return want, took
}

// killSixTimes runs the weir command on dir's job six times, each killed
// with SIGKILL at a random moment within took (each run resumes from the
// last checkpoint), then to its end: the moments of the kills, and how
// many runs resumed from a checkpoint.
func killSixTimes(t *testing.T, bin, dir string, took time.Duration, env []string) (kills []time.Duration, resumed int) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 90))
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(bin, "run", "job.yaml")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var log strings.Builder
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		if attempt <= 6 {
			after := time.Duration(r.Int64N(int64(took)))
			select {
			case err = <-done:
			case <-time.After(after):
				cmd.Process.Signal(syscall.SIGKILL)
				err = <-done
				kills = append(kills, after.Round(time.Millisecond))
			}
		} else {
			err = <-done
		}
		if strings.Contains(log.String(), "resuming from") {
			resumed++
		}
		if len(kills) == attempt {
			continue
		}
		if err != nil && len(kills) > 0 && strings.Contains(log.String(), "the last run of this job finished") {
			// The last kill came after that run had recorded the end of
			// its input, as it was about to exit: the job had ended.
			return kills[:len(kills)-1], resumed
		}
		if err != nil {
			t.Fatalf("run %d: %v\n%s", attempt, err, log.String())
		}
		return kills, resumed
	}
}

const killJob = `name: spend
source: {file: events.jsonl}
time: {field: ts}
key: card
watermark: {delay: 0s}
window: {tumbling: 1m}
aggregates: {n: count, spent: sum(amount)}
output:
  - parquet: {dir: lake, partition_by: [date, hour]}
  - results.jsonl
checkpoint: {dir: ckpt, interval: 20ms}
`

// readLake is what DuckDB reads of a directory's Parquet files, a row a
// pane (key, window, revision, timing, final, count, exact sum), sorted.
func readLake(t *testing.T, db *sql.DB, dir string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT key, epoch_ms(window_start), epoch_ms(window_end), revision, timing, final, CAST(n AS BIGINT), spent_exact
		FROM read_parquet(?)`, filepath.Join(dir, "lake", "**", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var key, timing, exact string
		var start, end, rev, n int64
		var final bool
		if err := rows.Scan(&key, &start, &end, &rev, &timing, &final, &n, &exact); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s|%d|%d|%d|%s|%v|%d|%s", key, start, end, rev, timing, final, n, exact))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestParquetOutputKilled: the weir command runs a job writing Parquet
// with a checkpoint every 100 ms, killed with SIGKILL at random moments
// (up to six times, each run started again on the same job file, which
// resumes from the last checkpoint), then to its end. DuckDB reads
// exactly the panes of an uninterrupted run of the same job (its Parquet
// files read the same way), each once; no in-progress file is left but
// those of a run killed before the job's first checkpoint.
func TestParquetOutputKilled(t *testing.T) {
	tmp := t.TempDir()
	bin := buildWeir(t, tmp)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	want, took := uninterrupted(t, bin, db, tmp)

	dir := filepath.Join(tmp, "killed")
	os.Mkdir(dir, 0o755)
	writeEvents(t, dir, 150_000)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(killJob), 0o644)
	kills, resumed := killSixTimes(t, bin, dir, took, nil)
	got := readLake(t, db, dir)
	if !slices.Equal(got, want) {
		t.Fatalf("killed after %v: DuckDB reads %d panes, the uninterrupted run's files %d:\n%s\nwant\n%s", kills, len(got), len(want), head(got), head(want))
	}
	var dupes int
	if err := db.QueryRow(`SELECT count(*) FROM (SELECT key, window_start, revision FROM read_parquet(?) GROUP BY ALL HAVING count(*) > 1)`,
		filepath.Join(dir, "lake", "**", "*.parquet")).Scan(&dupes); err != nil || dupes != 0 {
		t.Fatalf("%d panes twice (%v)", dupes, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "lake", "*", "*", ".*"))
	if resumed == 0 {
		t.Errorf("no run resumed from a checkpoint (killed after %v)", kills)
	}
	t.Logf("killed with SIGKILL after %v (an uninterrupted run takes %v), %d runs resumed from a checkpoint: DuckDB reads the %d panes of the uninterrupted run, each once; %d in-progress files of runs killed before the first checkpoint left", kills, took.Round(time.Millisecond), resumed, len(got), len(left))
}
