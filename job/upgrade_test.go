package job

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/jobfile"
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
		// Orders read before the savepoint (at line 1024) delivered again
		// after it, within the de-duplication horizon: the restored ids
		// drop them.
		if i >= 1100 && i < 1130 && i%10 == 0 {
			j := i - 100
			fmt.Fprintf(&b, `{"order_id":"o%d","card":"c%d","amount":%d.%02d,"ts":%d,"arrival":%d}`+"\n",
				j, j%7, j%40, j%100, t0+int64(j)*400-int64(j%7)*150, arr+10)
		}
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
	dir, sum := upStopped(t)
	return dir, sum.Savepoint
}

// upStopped is upSavepoint with the stopped run's summary.
func upStopped(t *testing.T) (dir string, sum *Summary) {
	t.Helper()
	dir = upDir(t, upJob)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err = Run(context.Background(), j, Options{stopAfter: 1})
	if err != nil || sum.Savepoint == "" {
		t.Fatalf("the stopped run: %v, savepoint %q", err, sum.Savepoint)
	}
	return dir, sum
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
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
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
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
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
		{"output added", []string{"late_output: late.jsonl", "late_output: late.jsonl\ndead_letter: dead.jsonl"}, "restarts dead_letter: new since the checkpoint: starts afresh"},
		{"output removed", []string{"late_output: late.jsonl\n", ""}, "removed late_output: no longer in the job; not restored: its commit record"},
		{"having", []string{"mode: accumulating", "mode: accumulating\nhaving: \"orders >= 3\""}, "carries over having: none -> orders >= 3"},
		{"version", []string{"name: upgrade", "name: upgrade\nversion: 2"}, "carries over version: 1 -> 2"},
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
			// A change of how the job runs the log says, and the summary
			// leaves out: no output depends on it.
			runs := c.name == "parallelism" || c.name == "state backend"
			switch {
			case runs && slices.Contains(sum.RestoreChanges, c.note):
				t.Errorf("the summary says %q, a change no output depends on", c.note)
			case runs && !strings.Contains(log, "restored into the changed job: "+c.note+"\n"):
				t.Errorf("the log does not say %q:\n%s", c.note, log)
			case !runs && c.note != "" && !slices.Contains(sum.RestoreChanges, c.note):
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
			// The rows of the windows closed since the restore, as the
			// uninterrupted run left them.
			rows := func(dir string) []string {
				var out []string
				for _, r := range upTable(t, dir, cols...) {
					if f := strings.Fields(r); after[f[0]+" "+f[1]] {
						out = append(out, r)
					}
				}
				return out
			}
			expectLines(t, "table", rows(dir), rows(ref))
		})
	}
}

// The changes a restore refuses: one line naming the field, its values and
// what would be lost, and nothing written, neither to the outputs nor to
// the checkpoint directory.
func TestUpgradeRefused(t *testing.T) {
	cases := []struct {
		name string
		repl []string
		want string // the error, after the job file's path; SP the savepoint
	}{
		{"window size", []string{"{tumbling: 10s}", "{tumbling: 20s}"}, "window: tumbling 10s in SP, tumbling 20s now: restoring would lose the open windows of 7 keys; --drop-state=windows starts them afresh, keeping the positions and the de-duplication ids"},
		{"window kind", []string{"{tumbling: 10s}", "{sliding: {size: 10s, slide: 5s}}"}, "window: tumbling 10s in SP, sliding 10s every 5s now: restoring would lose the open windows of 7 keys; --drop-state=windows starts them afresh, keeping the positions and the de-duplication ids"},
		{"key", []string{"key: card", "key: order_id"}, "key: card in SP, order_id now: restoring would lose the open windows of 7 keys; --drop-state=windows starts them afresh, keeping the positions and the de-duplication ids"},
		{"time field", []string{"field: ts,", "field: arrival,"}, "time.field: ts in SP, arrival now: restoring would lose the open windows of 7 keys; --drop-state=windows starts them afresh, keeping the positions and the de-duplication ids"},
		{"id field", []string{"id: order_id", "id: card"}, "id: order_id in SP, card now: restoring would lose the 153 de-duplication ids; --drop-state=dedup starts them afresh, keeping the positions and the windows"},
		{"mode", []string{"mode: accumulating", "mode: discarding"}, "mode: accumulating in SP, discarding now (the open windows of a discarding job hold only what came since their last pane): restoring would lose the open windows of 7 keys; --drop-state=windows starts them afresh, keeping the positions and the de-duplication ids"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			yaml := strings.Replace(upJob, c.repl[0], c.repl[1], 1)
			if yaml == upJob {
				t.Fatalf("no %q in the job", c.repl[0])
			}
			dir, sp := upSavepoint(t)
			snap := upSnapshot(t, dir)
			_, log, err := upRestore(t, dir, sp, yaml, Options{})
			want := filepath.Join(dir, "job.yaml") + ": " + strings.ReplaceAll(c.want, "SP", sp)
			if err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant  %s\n%s", err, want, log)
			}
			if got := upSnapshot(t, dir); got != snap {
				t.Errorf("the refused restore wrote:\n%s\nbefore:\n%s", got, snap)
			}
		})
	}
}

// upSnapshot is every file under dir but the job file, with its size and
// checksum, a line each.
func upSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "job.yaml" {
			return err
		}
		data, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %d %x\n", rel, len(data), sha256.Sum256(data))
		return nil
	})
	return b.String()
}

// upOpen are the windows (upPane.window) that events of the first n lines
// of the input fall in: those the savepoint after them holds, unless their
// final pane came before it.
func upOpen(t *testing.T, n int64, size int64) map[string]bool {
	t.Helper()
	open := map[string]bool{}
	for i, l := range strings.SplitN(upInput(), "\n", int(n)+1)[:n] {
		var e struct {
			Card string
			TS   int64
		}
		if json.Unmarshal([]byte(l), &e) != nil {
			continue
		}
		start := e.TS - e.TS%size
		open[e.Card+" "+time.UnixMilli(start).UTC().Format("2006-01-02T15:04:05.000Z")] = true
		_ = i
	}
	return open
}

// An aggregate added: the windows open at the savepoint start it from its
// zero, and each of their panes says so (partial), their other aggregates
// keeping their counts; the windows opened since have it whole. In the
// table, the column is added, NULL in the rows written before.
func TestUpgradeAggregateAdded(t *testing.T) {
	dir, stopped := upStopped(t)
	before := read(t, dir, "results.jsonl")
	yaml := strings.Replace(upJob, "{orders: count, spent: sum(amount)}", "{orders: count, spent: sum(amount), biggest: max(amount)}", 1)
	sum, log, err := upRestore(t, dir, stopped.Savepoint, yaml, Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	expectLines(t, "changes", sum.RestoreChanges, []string{"by rule aggregates.biggest: added: max(amount): the open windows start it from zero, and their panes say it is partial"})
	ref := upRun(t, yaml)
	whole := map[string]upPane{}
	for _, p := range upPanes(t, ref, 0) {
		if p["final"] == true {
			whole[p.window()] = p
		}
	}
	finalBefore := upAfter(t, dir, 0)
	for w := range upAfter(t, dir, len(before)) {
		delete(finalBefore, w)
	}
	open := upOpen(t, stopped.Read, 10_000)
	partial, full, none := 0, 0, 0
	for _, p := range upPanes(t, dir, len(before)) {
		w := p.window()
		wasOpen := open[w] && !finalBefore[w]
		if got := p["partial"] != nil; got != wasOpen {
			t.Errorf("%s: partial %v, open at the savepoint %v: %v", w, p["partial"], wasOpen, p)
		}
		if p["final"] != true {
			continue
		}
		r := whole[w]
		if p["orders"] != r["orders"] || p["spent"] != r["spent"] {
			t.Errorf("%s: orders %v spent %v, an uninterrupted run %v %v", w, p["orders"], p["spent"], r["orders"], r["spent"])
		}
		if wasOpen {
			partial++
			if p["biggest"] == nil {
				none++ // no order since the restore
			}
			if fmt.Sprint(p["partial"]) != "[biggest]" || p["biggest"] != nil && p["biggest"].(float64) > r["biggest"].(float64) {
				t.Errorf("%s: biggest %v partial %v, an uninterrupted run %v", w, p["biggest"], p["partial"], r["biggest"])
			}
		} else {
			full++
			if p["biggest"] != r["biggest"] {
				t.Errorf("%s: biggest %v, an uninterrupted run %v", w, p["biggest"], r["biggest"])
			}
		}
	}
	if partial != 13 || full != 134 {
		t.Errorf("%d windows partial, %d whole", partial, full)
	}
	rows := upTable(t, dir, "card", "window_start", "biggest IS NULL")
	nulls := 0
	for _, r := range rows {
		if strings.HasSuffix(r, " 1") {
			nulls++
		}
	}
	if nulls != len(finalBefore)+none {
		t.Errorf("%d rows without biggest, want the %d of the windows closed before the savepoint and the %d with no order since", nulls, len(finalBefore), none)
	}
}

// A shorter allowed lateness: the windows open at the savepoint that it
// has already passed close at the restore, first of all, each with a final
// pane of what it held; nothing is dropped silently.
func TestUpgradeShorterLateness(t *testing.T) {
	dir, sp := upSavepoint(t)
	before := read(t, dir, "results.jsonl")
	c, err := checkpoint.Load(checkpoint.OSFS, sp)
	if err != nil {
		t.Fatal(err)
	}
	in, err := engine.Inspect(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	wm := in.Windows[0].Watermark
	// The last pane of each window not closed before the savepoint whose
	// end the watermark has passed: what the new lateness (none) closes.
	due := map[string]upPane{}
	for _, p := range upPanes(t, dir, 0) {
		end, _ := time.Parse(time.RFC3339, p["window_end"].(string))
		if p["final"] == true {
			delete(due, p.window())
		} else if end.UnixMilli() <= int64(wm) {
			due[p.window()] = p
		}
	}
	yaml := strings.Replace(upJob, "allowed_lateness: 5s", "allowed_lateness: 0s", 1)
	sum, log, err := upRestore(t, dir, sp, yaml, Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	expectLines(t, "changes", sum.RestoreChanges, []string{"carries over allowed_lateness: 5s -> 0s: the open windows it has already passed close at the restore, with their final pane"})
	after := upPanes(t, dir, len(before))
	if len(due) != 7 || len(after) < len(due) {
		t.Fatalf("%d windows due, %d panes after the restore", len(due), len(after))
	}
	for _, p := range after[:len(due)] {
		last, ok := due[p.window()]
		if !ok || p["final"] != true || p["status"] != "closed" || p.values() != last.values() || p["revision"].(float64) != last["revision"].(float64)+1 {
			t.Errorf("the restore's first panes: %v, the last before the savepoint %v", p, last)
		}
		delete(due, p.window())
	}
	for _, p := range after {
		if due[p.window()] != nil {
			t.Errorf("%s had a pane after the restore: %v", p.window(), p)
		}
	}
}

// --drop-state=windows restores a job whose windows changed: the windows
// start afresh, the position and the de-duplication ids carry over (the
// orders delivered again after the savepoint are still duplicates), and
// the summary and the acceptance record say so.
func TestUpgradeDropWindows(t *testing.T) {
	dir, sp := upSavepoint(t)
	yaml := strings.Replace(upJob, "{tumbling: 10s}", "{tumbling: 20s}", 1) + "acceptance: acceptance.json\n"
	sum, log, err := upRestore(t, dir, sp, yaml, Options{DropState: []string{engine.StateWindows}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	_, ref := runJob(t, upJob, upInput())
	expectLines(t, "dropped", sum.DroppedState, []string{"the open windows of 7 keys"})
	expectLines(t, "changes", sum.RestoreChanges, []string{"restarts window: tumbling 10s -> tumbling 20s: its open windows dropped (--drop-state=windows)"})
	if sum.Read != int64(strings.Count(upInput(), "\n")) || sum.Duplicates != 20 || ref.Duplicates != 20 {
		t.Errorf("read %d, %d duplicates; uninterrupted, %d", sum.Read, sum.Duplicates, ref.Duplicates)
	}
	text := sum.Text()
	if !strings.Contains(text, "weir: upgrade: started afresh, as --drop-state said: the open windows of 7 keys; the positions and the rest of the state carried over\n") {
		t.Errorf("the summary:\n%s", text)
	}
	md := read(t, dir, "acceptance.md")
	if !strings.Contains(md, "- Started afresh (--drop-state): the open windows of 7 keys; the positions and the rest of the state carried over\n") ||
		!strings.Contains(md, "- Restored into the changed job: restarts window: tumbling 10s -> tumbling 20s: its open windows dropped (--drop-state=windows)\n") {
		t.Errorf("the acceptance record:\n%s", md)
	}
}

// An aggregate added to a job of sliding windows: each window's own
// accumulator is empty (its slices hold its values), and the restore reads
// it as empty, as it was written, instead of refusing the checkpoint; the
// final panes count what an uninterrupted run counts.
func TestUpgradeAggregateAddedSliding(t *testing.T) {
	sliding := strings.Replace(upJob, "{tumbling: 10s}", "{sliding: {size: 10s, slide: 5s}}", 1)
	for _, backend := range []string{"memory", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			upgradeAggregateAddedSliding(t, sliding+"state: {backend: "+backend+"}\n")
		})
	}
}

func upgradeAggregateAddedSliding(t *testing.T, job string) {
	dir := upDir(t, job)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := Run(context.Background(), j, Options{stopAfter: 1})
	if err != nil || stopped.Savepoint == "" {
		t.Fatalf("the stopped run: %v, savepoint %q", err, stopped.Savepoint)
	}
	before := read(t, dir, "results.jsonl")
	yaml := strings.Replace(job, "{orders: count, spent: sum(amount)}", "{orders: count, spent: sum(amount), biggest: max(amount)}", 1)
	if _, log, err := upRestore(t, dir, stopped.Savepoint, yaml, Options{}); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	whole := map[string]upPane{}
	for _, p := range upPanes(t, upRun(t, yaml), 0) {
		if p["final"] == true {
			whole[p.window()] = p
		}
	}
	finals := 0
	for _, p := range upPanes(t, dir, len(before)) {
		if p["final"] != true {
			continue
		}
		finals++
		if r := whole[p.window()]; p["orders"] != r["orders"] || p["spent"] != r["spent"] {
			t.Errorf("%s: orders %v spent %v, an uninterrupted run %v %v", p.window(), p["orders"], p["spent"], r["orders"], r["spent"])
		}
	}
	if finals == 0 {
		t.Fatal("no final panes after the restore")
	}
}

// A restore named from the final checkpoint of a finished run (weir run
// --from ckpt/chk-N, the record of the end of its input) is what running
// the job again is: the final checkpoint holds no position to read on
// from, so the job runs again from its beginning, taking back what that
// run wrote, and its outputs hold each result once. --check says so. (It
// used to read the input again from its start into the outputs as they
// were: every result twice.) One that stopped before committing its output
// commits it.
func TestRestoreFromTheFinalCheckpoint(t *testing.T) {
	for _, yaml := range []string{
		"name: agg\nsource: in.jsonl\ntime: {field: ts, arrival_field: ts}\nkey: k\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: out.jsonl\ncheckpoint: {dir: ckpt, interval: 1h}\n",
		joinJob(jobfile.JoinInner) + "checkpoint: {dir: ckpt, interval: 1h}\n",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(`{"k":"a","ts":"2026-01-01T10:00:00Z"}`+"\n"+`{"k":"b","ts":"2026-01-01T10:05:00Z"}`+"\n"), 0o600)
		os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(joinOrders), 0o600)
		os.WriteFile(filepath.Join(dir, "payments.jsonl"), []byte(joinPayments), 0o600)
		j := loadJob(t, dir, yaml)
		if _, err := Run(context.Background(), j, Options{}); err != nil {
			t.Fatal(err)
		}
		out := j.Outputs[0].File
		want := read(t, dir, filepath.Base(out))
		final := ""
		entries, _ := os.ReadDir(filepath.Join(dir, "ckpt"))
		for _, e := range entries {
			c, err := checkpoint.Load(checkpoint.OSFS, filepath.Join(dir, "ckpt", e.Name()))
			if err == nil && c.Manifest.Kind == checkpoint.Final {
				final = c.Path
			}
		}
		if final == "" || want == "" {
			t.Fatalf("%s: no final checkpoint (%v) or no output", j.Name, entries)
		}
		r, err := CheckRestore(j, final, nil)
		if err != nil || !r.Rerun || !strings.Contains(r.Text(), "the job runs again from its beginning") {
			t.Errorf("%s: --check: %v\n%v", j.Name, err, r)
		}
		if _, err := Run(context.Background(), j, Options{From: final}); err != nil {
			t.Fatal(err)
		}
		if got := read(t, dir, filepath.Base(out)); got != want {
			t.Errorf("%s: restored from its final checkpoint, the job wrote\n%s\nwant, as the first run\n%s", j.Name, got, want)
		}
	}
}
