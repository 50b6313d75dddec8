package job

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/internal/golden"
	"github.com/weirstream/weir/jobfile"
)

// Golden checkpoints: savepoints written by an earlier weir, kept in
// testdata/golden/layoutN-NAME (savepoint.tar.gz) with the job, its input, its outputs as they
// were when the savepoint was taken (at-savepoint/) and the outputs of an
// uninterrupted run (want/). Every later weir must restore them and end
// with exactly those bytes. A change of the format adds a golden of the new
// layout with -golden, and keeps the old ones: that is its migration's test.
var writeGolden = flag.Bool("golden", false, "write golden checkpoints of this weir's format into testdata/golden (existing ones are kept)")

// goldenCases are the jobs golden checkpoints are written of: the outputs
// a job file has (files, a table), de-duplication, lateness, both backends
// and a merging window in retracting mode.
var goldenCases = []struct{ name, job string }{
	{"memory", goldenJob},
	{"pebble", goldenJob + "state: {backend: pebble}\n"},
	{"session-retracting", strings.NewReplacer("{tumbling: 10s}", "{session: {gap: 4s}}", "mode: accumulating", "mode: retracting").Replace(goldenJob)},
	// The same job once more, written after the head's file gained its
	// processing time (version 6) and the memory de-duplication its buckets
	// of expiry, within layout 4.
	{"memory-head6", goldenJob},
	// A merging window on Pebble, written after count_distinct's large
	// sets went into the state database beside the keys' windows (the
	// window state's format 3): a card's session has some hundred
	// orders at the savepoint.
	{"pebble-sets", strings.NewReplacer("{tumbling: 10s}", "{session: {gap: 4s}}", "mode: accumulating", "mode: retracting",
		"users: count_distinct(user)}", "users: count_distinct(user), ids: count_distinct(order_id)}").Replace(goldenJob) + "state: {backend: pebble}\n"},
}

const goldenJob = `name: golden
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
id: order_id
dedup_horizon: 1m
watermark: {delay: 1s, interval: 200ms}
window: {tumbling: 10s}
allowed_lateness: 5s
mode: accumulating
aggregates: {orders: count, spent: sum(amount), biggest: max(amount), users: count_distinct(user)}
output: [results.jsonl, {sqlite: {path: alerts.db, table: alerts}}]
late_output: late.jsonl
quarantine: quarantine.jsonl
checkpoint: {dir: ckpt, interval: 1h}
`

// goldenOutputs are the files a golden job writes; alerts.db is compared
// by its rows (goldenRows).
var goldenOutputs = []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"}

// goldenInput is the input of the golden jobs: orders of 7 cards, 2 or 3
// a second, with repeated deliveries, late orders and lines that are not
// JSON.
func goldenInput() string {
	var b strings.Builder
	const t0 = 1_788_000_000_000
	for i := range 1500 {
		arr := t0 + int64(i)*400
		ts := arr - int64(i%7)*150
		if i%97 == 0 {
			ts -= 14_000 // late: within the allowed lateness, or not
		}
		fmt.Fprintf(&b, `{"order_id":"o%d","card":"c%d","user":"u%d","amount":%d.%02d,"ts":%d,"arrival":%d}`+"\n",
			i, i%7, i%5, i%40, i%100, ts, arr)
		if i%89 == 0 {
			fmt.Fprintf(&b, `{"order_id":"o%d","card":"c%d","user":"u%d","amount":%d.%02d,"ts":%d,"arrival":%d}`+"\n",
				i, i%7, i%5, i%40, i%100, ts, arr+40)
		}
		if i%251 == 0 {
			b.WriteString("not json\n")
		}
	}
	return b.String()
}

// goldenRows is the table alerts as text, a row a line, in key order: its
// columns of cols (the golden run's), or all of them when cols is empty.
// Columns besides those must be the exact companions and the mode a table
// of an older weir is given (table.ExactColumn; the mode of the rows
// written since the restore, one for all): the rest is compared as it was.
func goldenRows(t *testing.T, path string, cols ...string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sel := "*"
	if len(cols) > 0 {
		all, err := db.Query(`SELECT name FROM pragma_table_info('alerts')`)
		if err != nil {
			t.Fatal(err)
		}
		for all.Next() {
			var name string
			all.Scan(&name)
			if name == "mode" && !slices.Contains(cols, name) {
				var modes, written int
				if err := db.QueryRow(`SELECT count(DISTINCT mode), count(mode) FROM alerts`).Scan(&modes, &written); err != nil {
					t.Fatal(err)
				}
				if modes != 1 || written == 0 {
					t.Errorf("the table alerts has %d modes in %d rows, want one", modes, written)
				}
				continue
			}
			if !slices.Contains(cols, name) && !slices.ContainsFunc(cols, func(c string) bool { return table.ExactColumn(c) == name }) {
				t.Errorf("the table alerts has a column %q the golden run's has not, and that is no exact companion of one", name)
			}
		}
		all.Close()
		sel = strings.Join(cols, ", ")
	}
	rows, err := db.Query(`SELECT ` + sel + ` FROM alerts ORDER BY card, window_start, window_end`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ = rows.Columns()
	var b strings.Builder
	b.WriteString(strings.Join(cols, "\t") + "\n")
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteByte('\t')
			}
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprint(&b, v)
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// copyTree copies a file or a directory tree.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := golden.Copy(from, to); err != nil {
		t.Fatal(err)
	}
}

// Every golden checkpoint restores, and the job ends with the outputs of
// an uninterrupted run, byte for byte.
func TestGoldenCheckpointsRestore(t *testing.T) {
	if *writeGolden {
		writeGoldens(t)
	}
	dirs, _ := filepath.Glob(filepath.Join("testdata", "golden", "layout*"))
	if len(dirs) == 0 {
		t.Fatal("no golden checkpoints in testdata/golden")
	}
	for _, g := range dirs {
		t.Run(filepath.Base(g), func(t *testing.T) { restoreGolden(t, g, nil) })
	}
}

// Every golden checkpoint of one backend restores into the other: those
// of before count_distinct's sets were kept in the state database hold
// them in their windows, which go into the database, or stay in memory.
func TestGoldenCheckpointsRestoreOnTheOtherBackend(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "golden", "layout*"))
	for _, g := range dirs {
		t.Run(filepath.Base(g), func(t *testing.T) {
			restoreGolden(t, g, func(yaml string) string {
				if strings.Contains(yaml, "backend: pebble") {
					return strings.Replace(yaml, "state: {backend: pebble}", "state: {backend: memory}", 1)
				}
				return yaml + "state: {backend: pebble, memory_budget: 1MiB}\n"
			})
		})
	}
}

// restoreGolden restores the golden checkpoint in g, into its job changed
// by edit (nil: as it is), and checks that the job ends with the golden
// run's outputs.
func restoreGolden(t *testing.T, g string, edit func(yaml string) string) {
	dir := t.TempDir()
	for _, f := range []string{"job.yaml", "input.jsonl"} {
		copyTree(t, filepath.Join(g, f), filepath.Join(dir, f))
	}
	if edit != nil {
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(edit(read(t, dir, "job.yaml"))), 0o644)
	}
	copyTree(t, filepath.Join(g, "at-savepoint"), dir)
	if err := golden.ExtractArchive(filepath.Join(g, "savepoint.tar.gz"), filepath.Join(dir, "savepoint")); err != nil {
		t.Fatal(err)
	}
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	if _, err := Run(context.Background(), j, Options{From: filepath.Join(dir, "savepoint"), Log: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "resuming from "+filepath.Join(dir, "savepoint")) {
		t.Errorf("the run did not resume from the savepoint:\n%s", log.String())
	}
	for _, f := range goldenOutputs {
		want := read(t, filepath.Join(g, "want"), f)
		if f == "results.jsonl" {
			want = withMode(want, len(read(t, filepath.Join(g, "at-savepoint"), f)), j.Window.Mode.String())
		}
		if got := read(t, dir, f); got != want {
			t.Errorf("%s differs from the golden run's (%d bytes, want %d)", f, len(got), len(want))
		}
	}
	want := read(t, filepath.Join(g, "want"), "alerts.txt")
	header, _, _ := strings.Cut(want, "\n")
	if got := goldenRows(t, filepath.Join(dir, "alerts.db"), strings.Split(header, "\t")...); got != want {
		t.Errorf("the table alerts differs from the golden run's:\n%s\nwant:\n%s", got, want)
	}
}

// withMode is the results a golden run wrote, with the mode a weir since
// writes in every pane (after its status) in the panes after the first
// written bytes, which were at the savepoint and stay as they are.
func withMode(results string, written int, mode string) string {
	var b strings.Builder
	b.WriteString(results[:written])
	for _, line := range strings.SplitAfter(results[written:], "\n") {
		if !strings.Contains(line, `"mode":`) {
			for _, s := range []string{"provisional", "closed", "retracted"} {
				line = strings.Replace(line, `"status":"`+s+`",`, `"status":"`+s+`","mode":"`+mode+`",`, 1)
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// writeGoldens writes a golden checkpoint of every golden case: the job is
// stopped after its first batch (it takes a savepoint), and run again
// without interruption for the outputs it must end with.
func writeGoldens(t *testing.T) {
	in := goldenInput()
	for _, c := range goldenCases {
		run := t.TempDir()
		os.WriteFile(filepath.Join(run, "input.jsonl"), []byte(in), 0o600)
		os.WriteFile(filepath.Join(run, "job.yaml"), []byte(c.job), 0o600)
		j, err := jobfile.Load(filepath.Join(run, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Run(context.Background(), j, Options{stopAfter: 1})
		if err != nil || sum.Savepoint == "" {
			t.Fatalf("%s: the stopped run: %v, savepoint %q", c.name, err, sum.Savepoint)
		}
		sp, err := checkpoint.Load(checkpoint.OSFS, sum.Savepoint)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Layout int }
		json.Unmarshal(sp.Manifest.Meta, &meta)
		g := filepath.Join("testdata", "golden", fmt.Sprintf("layout%d-%s", meta.Layout, c.name))
		if _, err := os.Stat(g); err == nil {
			t.Logf("%s exists: kept", g)
			continue
		}
		os.MkdirAll(g, 0o755)
		if err := golden.WriteArchive(sum.Savepoint, filepath.Join(g, "savepoint.tar.gz")); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(g, "job.yaml"), []byte(c.job), 0o644)
		os.WriteFile(filepath.Join(g, "input.jsonl"), []byte(in), 0o644)
		for _, f := range append(goldenOutputs, "alerts.db", "alerts.db-wal") {
			if _, err := os.Stat(filepath.Join(run, f)); err == nil {
				copyTree(t, filepath.Join(run, f), filepath.Join(g, "at-savepoint", f))
			}
		}
		ref := t.TempDir()
		os.WriteFile(filepath.Join(ref, "input.jsonl"), []byte(in), 0o600)
		os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(c.job), 0o600)
		j, err = jobfile.Load(filepath.Join(ref, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), j, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, f := range goldenOutputs {
			copyTree(t, filepath.Join(ref, f), filepath.Join(g, "want", f))
		}
		os.WriteFile(filepath.Join(g, "want", "alerts.txt"), []byte(goldenRows(t, filepath.Join(ref, "alerts.db"))), 0o644)
		t.Logf("wrote %s", g)
	}
}
