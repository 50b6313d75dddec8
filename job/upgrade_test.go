package job

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The job of the upgrade matrix: a file source, a file and a SQLite
// output, de-duplication, lateness; every case of the README's table of
// changes is a replacement in it.
const upJob = `name: upgrade
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
id: order_id
dedup_horizon: 1m
watermark: {delay: 1s, interval: 200ms}
window: {tumbling: 10s}
allowed_lateness: 5s
mode: accumulating
aggregates: {orders: count, spent: sum(amount)}
output: [results.jsonl, {sqlite: {path: totals.db, table: totals}}]
late_output: late.jsonl
quarantine: quarantine.jsonl
checkpoint: {dir: ckpt, interval: 1h}
`

// upInput is the matrix's input: orders of 7 cards, 2 or 3 a second, some
// delivered twice (the second delivery after the savepoint for some), some
// 3s late (within every allowed lateness of the matrix but the shortened
// one), and lines that are not JSON.
func upInput() string {
	var b strings.Builder
	const t0 = 1_788_000_000_000
	for i := range 1500 {
		arr := t0 + int64(i)*400
		ts := arr - int64(i%7)*150
		if i%97 == 0 {
			ts -= 3_000
		}
		line := fmt.Sprintf(`{"order_id":"o%d","card":"c%d","amount":%d.%02d,"ts":%d,"arrival":%d}`+"\n", i, i%7, i%40, i%100, ts, arr)
		b.WriteString(line)
		if i%89 == 0 {
			b.WriteString(line)
		}
		if i%251 == 0 {
			b.WriteString("not json\n")
		}
	}
	// Orders read before the savepoint delivered again after it: the
	// restored ids drop them.
	for i := 900; i < 1500; i += 150 {
		arr := int64(t0 + 1499*400 + (i-899)*10)
		fmt.Fprintf(&b, `{"order_id":"o%d","card":"c%d","amount":%d.%02d,"ts":%d,"arrival":%d}`+"\n", i-800, (i-800)%7, 1, 0, arr-100, arr)
	}
	return b.String()
}

// upDir is a directory with the matrix's input and the job yaml.
func upDir(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(upInput()), 0o600)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o600)
	return dir
}

// upSavepoint runs the matrix's job until its first batch is done, when it
// stops with a savepoint, and returns the directory and the savepoint.
func upSavepoint(t *testing.T) (dir, sp string) {
	t.Helper()
	dir = upDir(t, upJob)
	j, err := Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), j, Options{stopAfter: 1})
	if err != nil || sum.Savepoint == "" {
		t.Fatalf("the stopped run: %v, savepoint %q", err, sum.Savepoint)
	}
	return dir, sum.Savepoint
}

// upAfter are the windows whose final pane comes after the first skip
// bytes of the results in dir.
func upAfter(t *testing.T, dir string, skip int) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	for _, p := range upPanes(t, dir, skip) {
		if p["final"] == true {
			m[p.window()] = true
		}
	}
	return m
}

// upRestore restores sp in dir into the job yaml and runs it to its end.
func upRestore(t *testing.T, dir, sp, yaml string, o Options) (*Summary, string, error) {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o600)
	j, err := Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	o.From, o.Log = sp, &log
	sum, err := Run(context.Background(), j, o)
	return sum, log.String(), err
}

// upRun runs yaml from start to end, uninterrupted, in a new directory.
func upRun(t *testing.T, yaml string) string {
	t.Helper()
	dir := upDir(t, yaml)
	j, err := Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), j, Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// upPane is a pane of results.jsonl, its values by name.
type upPane map[string]any

// upPanes are the panes of results.jsonl after its first skip bytes.
func upPanes(t *testing.T, dir string, skip int) []upPane {
	t.Helper()
	var out []upPane
	for _, l := range strings.Split(strings.TrimSpace(read(t, dir, "results.jsonl")[skip:]), "\n") {
		var p upPane
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		out = append(out, p)
	}
	return out
}

func (p upPane) window() string { return fmt.Sprint(p["key"], " ", p["window_start"]) }

// values is the pane's aggregates (and partial), as text, in name order.
func (p upPane) values() string {
	var names []string
	for k := range p {
		switch k {
		case "key", "window_start", "window_end", "revision", "timing", "final", "retract", "status", "version", "watermark", "emitted_at":
		default:
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%v", n, p[n])
	}
	return b.String()
}

// upFinals is every window's final pane, "KEY START values", in order;
// only of the windows in windows, when it is set.
func upFinals(t *testing.T, dir string, skip int, windows map[string]bool) []string {
	t.Helper()
	var out []string
	for _, p := range upPanes(t, dir, skip) {
		if p["final"] == true && (windows == nil || windows[p.window()]) {
			out = append(out, p.window()+" "+p.values())
		}
	}
	sort.Strings(out)
	return out
}

// upTable is the SQLite table's rows, the columns named, a row a line in
// key order.
func upTable(t *testing.T, dir string, cols ...string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "totals.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT ` + strings.Join(cols, ", ") + ` FROM totals ORDER BY card, window_start`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		rows.Scan(ptrs...)
		var b strings.Builder
		for i, v := range vals {
			if i > 0 {
				b.WriteByte(' ')
			}
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprint(&b, v)
		}
		out = append(out, b.String())
	}
	return out
}

func expectLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		for i := range max(len(got), len(want)) {
			g, w := "", ""
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("%s: %d of %d lines (want %d); the first that differs, %d:\n got %s\nwant %s", what, len(got), len(got), len(want), i+1, g, w)
				return
			}
		}
	}
}

// The changes a restore carries over: after each, the job ends with the
// final pane of every window that an uninterrupted run of the changed job
// ends with, in its file and in its table: the windows open at the
// savepoint kept their counts, and the ids their duplicates.
func TestUpgradeCarriesOver(t *testing.T) {
	cases := []struct {
		name string
		repl []string // old, new in the job
		note string   // the change the summary says, "" for none
	}{
		{"watermark delay", []string{"delay: 1s", "delay: 2s"}, "carries over watermark: delay 1s, every 200ms -> delay 2s, every 200ms"},
		{"watermark interval", []string{"interval: 200ms}", "interval: 1s}"}, "carries over watermark: delay 1s, every 200ms -> delay 1s, every 1s"},
		{"watermark idleness", []string{"interval: 200ms}", "interval: 200ms, idle: 1m}"}, "carries over watermark: delay 1s, every 200ms -> delay 1s, every 200ms, idle after 1m0s"},
		{"longer lateness", []string{"allowed_lateness: 5s", "allowed_lateness: 20s"}, "carries over allowed_lateness: 5s -> 20s: the open windows stay open longer (those closed already stay closed)"},
		{"trigger", []string{"mode: accumulating", "mode: accumulating\ntrigger: {early: 2s}"}, ""},
		{"dedup horizon", []string{"dedup_horizon: 1m", "dedup_horizon: 2m"}, ""},
		{"parallelism", []string{"mode: accumulating", "mode: accumulating\nparallelism: 3"}, "carries over parallelism: 1 -> 3"},
		{"state backend", []string{"mode: accumulating", "mode: accumulating\nstate: {backend: pebble}"}, "carries over state.backend: memory -> pebble"},
		{"mode", []string{"mode: accumulating", "mode: retracting"}, ""},
		{"aggregate removed", []string{"{orders: count, spent: sum(amount)}", "{orders: count}"}, "by rule aggregates.spent: removed: was sum(amount): its state in the open windows is dropped"},
		{"output added", []string{"late_output: late.jsonl", "late_output: late.jsonl\ndead_letter: dead.jsonl"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			yaml := strings.Replace(upJob, c.repl[0], c.repl[1], 1)
			if yaml == upJob {
				t.Fatalf("no %q in the job", c.repl[0])
			}
			dir, sp := upSavepoint(t)
			before := read(t, dir, "results.jsonl")
			sum, log, err := upRestore(t, dir, sp, yaml, Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, log)
			}
			if got := read(t, dir, "results.jsonl"); !strings.HasPrefix(got, before) {
				t.Errorf("the results written before the savepoint changed")
			}
			if c.note != "" && !slices.Contains(sum.RestoreChanges, c.note) {
				t.Errorf("the summary says %q, want among them %q", sum.RestoreChanges, c.note)
			}
			ref := upRun(t, yaml)
			after := upAfter(t, dir, len(before))
			if len(after) < 100 {
				t.Errorf("%d windows closed after the restore", len(after))
			}
			expectLines(t, "final panes", upFinals(t, dir, len(before), nil), upFinals(t, ref, 0, after))
			cols := []string{"card", "window_start", "orders", "final"}
			if strings.Contains(yaml, "spent") {
				cols = append(cols, "spent")
			}
			expectLines(t, "table", upTable(t, dir, cols...), upTable(t, ref, cols...))
		})
	}
}
