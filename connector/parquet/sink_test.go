package parquet

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

var ctx = context.Background()

// at is an instant of 2026-12-05, UTC.
func at(hh, mm int) mtime.Time {
	return mtime.FromTime(time.Date(2026, 12, 5, hh, mm, 0, 0, time.UTC))
}

var shape = plan.PaneShape{Job: "orders", Keys: []string{"card"}, Windowed: true, Aggregates: []plan.AggregateShape{
	{Name: "orders", Type: plan.Integer}, {Name: "spent", Type: plan.Number}, {Name: "first_item", Type: plan.JSONText}}}

// pane is a pane of shape: a card's window of ten minutes from start.
func pane(card string, start mtime.Time, orders int64, spent any) plan.Item {
	return plan.Item{Kind: plan.Pane, Pane: &plan.PaneFields{Keys: []any{card}, Start: start, End: start + 600_000,
		Timing: "ON_TIME", Final: true, Mode: "accumulating", Version: 1, Watermark: start + 600_000, Emitted: start + 601_000,
		Names: []string{"orders", "spent", "first_item"}, Values: []any{orders, spent, plan.RawJSON(`"book"`)}}}
}

func newTestSink(t testing.TB, dir string, checkpointed bool, parts ...string) *Sink {
	t.Helper()
	c, err := Parse(plan.Values{"dir": dir, "partition_by": parts})
	if err != nil {
		t.Fatal(err)
	}
	sh := shape
	ks, err := c.New(plan.Env{Job: "orders", Field: "output", Checkpointed: checkpointed, Shape: &sh, Log: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	return ks.(*Sink)
}

// files are the files under dir, relative, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// finals are the final part files under dir.
func finals(t *testing.T, dir string) []string {
	var out []string
	for _, f := range files(t, dir) {
		if strings.HasSuffix(f, ".parquet") && !strings.HasPrefix(filepath.Base(f), ".") {
			out = append(out, f)
		}
	}
	return out
}

// rows reads a Parquet file's rows, each as name=value pairs.
func rows(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range pf.Schema().Columns() {
		names = append(names, strings.Join(c, "."))
	}
	var out []string
	for _, rg := range pf.RowGroups() {
		rr := rg.Rows()
		buf := make([]pq.Row, 16)
		for {
			n, err := rr.ReadRows(buf)
			for _, r := range buf[:n] {
				var b strings.Builder
				for _, v := range r {
					if b.Len() > 0 {
						b.WriteByte(' ')
					}
					b.WriteString(names[v.Column()] + "=")
					switch {
					case v.IsNull():
						b.WriteString("null")
					case v.Kind() == pq.ByteArray:
						b.Write(v.ByteArray())
					case v.Kind() == pq.Int64:
						b.WriteString(strconv.FormatInt(v.Int64(), 10))
					case v.Kind() == pq.Double:
						b.WriteString(strconv.FormatFloat(v.Double(), 'g', -1, 64))
					case v.Kind() == pq.Boolean:
						b.WriteString(strconv.FormatBool(v.Boolean()))
					}
				}
				out = append(out, b.String())
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rr.Close()
	}
	return out
}

func row(card string, start mtime.Time, orders int64, spent, exact string) string {
	return "card=" + card + " window_start=" + strconv.FormatInt(int64(start), 10) + " window_end=" + strconv.FormatInt(int64(start)+600_000, 10) +
		" revision=0 timing=ON_TIME final=true retract=false status=closed mode=accumulating version=1 watermark=" + strconv.FormatInt(int64(start)+600_000, 10) +
		" emitted_at=" + strconv.FormatInt(int64(start)+601_000, 10) + " orders=" + strconv.FormatInt(orders, 10) +
		" spent=" + spent + " spent_exact=" + exact + ` first_item="book" partial=null`
}

func TestFilesAreFinalOnlyAfterCommit(t *testing.T) {
	dir := t.TempDir()
	s := newTestSink(t, dir, true, "date", "hour")
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 2, int64(30)), pane("c2", at(13, 10), 1, "12.5"), pane("c1", at(14, 0), 3, 0.1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if f := finals(t, dir); len(f) != 0 {
		t.Fatalf("final files before the pre-commit: %v", f)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(pre), `{"task":"`+s.task+`","next":2,"files":[{"dir":"date=2026-12-05/hour=13","n":0,"rows":2},{"dir":"date=2026-12-05/hour=14","n":1,"rows":1}]}`; got != want {
		t.Fatalf("pre-commit:\n got %s\nwant %s", got, want)
	}
	task := s.task
	inprog := []string{"date=2026-12-05/hour=13/.part-" + task + "-0.parquet.inprogress", "date=2026-12-05/hour=14/.part-" + task + "-1.parquet.inprogress"}
	if got := files(t, dir); !slices.Equal(got, inprog) {
		t.Fatalf("after the pre-commit: %v, want %v", got, inprog)
	}
	if err := s.Commit(ctx, 1, pre); err != nil {
		t.Fatal(err)
	}
	want := []string{"date=2026-12-05/hour=13/part-" + task + "-0.parquet", "date=2026-12-05/hour=14/part-" + task + "-1.parquet"}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after the commit: %v, want %v", got, want)
	}
	if got, want := rows(t, filepath.Join(dir, want[0])), []string{row("c1", at(13, 0), 2, "30", "30"), row("c2", at(13, 10), 1, "12.5", "12.5")}; !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %q\nwant %q", got, want)
	}
	if got, want := rows(t, filepath.Join(dir, want[1])), []string{row("c1", at(14, 0), 3, "0.1", "0.1")}; !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %q\nwant %q", got, want)
	}
	// Again, as after a restart: nothing changes.
	if err := s.Commit(ctx, 1, pre); err != nil {
		t.Fatalf("a second commit: %v", err)
	}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after a second commit: %v, want %v", got, want)
	}
	if got := string(s.Mark()); got != `{"next":2}` {
		t.Fatalf("mark %s", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A crash after the pre-commit: the restore commits the checkpoint's
// files once, and removes the in-progress file written after it.
func TestRestoreCommitsPendingOnce(t *testing.T) {
	dir := t.TempDir()
	s := newTestSink(t, dir, true)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	mark0 := s.Mark()
	if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 2, int64(30))}); err != nil {
		t.Fatal(err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// After the barrier, before the crash: a file no checkpoint holds.
	if err := s.Write(ctx, []plan.Item{pane("c9", at(13, 10), 9, int64(9))}); err != nil {
		t.Fatal(err)
	}
	task := s.task
	if got, want := files(t, dir), []string{".part-" + task + "-0.parquet.inprogress", ".part-" + task + "-1.parquet.inprogress"}; !slices.Equal(got, want) {
		t.Fatalf("before the crash: %v, want %v", got, want)
	}
	// kill -9: no Close, no Commit.

	r := connector.Resume{From: 1, Pending: []connector.PreCommit{{Checkpoint: 1, Data: pre}}, Mark: mark0}
	s2 := newTestSink(t, dir, true)
	if err := s2.Open(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, want := files(t, dir), []string{".part-" + task + "-0.parquet.inprogress"}; !slices.Equal(got, want) {
		t.Fatalf("after the restore's open: %v, want %v", got, want)
	}
	for range 2 { // the engine's commit, then again (a second crash)
		if err := s2.Commit(ctx, 1, pre); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"part-" + task + "-0.parquet"}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after the commit: %v, want %v", got, want)
	}
	if got, want := rows(t, filepath.Join(dir, want[0])), []string{row("c1", at(13, 0), 2, "30", "30")}; !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %q\nwant %q", got, want)
	}
	// The run goes on: its next file is numbered after the checkpoint's.
	if err := s2.Write(ctx, []plan.Item{pane("c2", at(13, 20), 1, int64(5))}); err != nil {
		t.Fatal(err)
	}
	pre2, err := s2.PreCommit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(ctx, 2, pre2); err != nil {
		t.Fatal(err)
	}
	if got, want := finals(t, dir), []string{"part-" + task + "-0.parquet", "part-" + task + "-1.parquet"}; !slices.Equal(got, want) {
		t.Fatalf("finals %v, want %v", got, want)
	}
	if got := string(s2.Mark()); got != `{"next":2}` {
		t.Fatalf("mark %s", got)
	}
}

// A crash in the middle of a commit (linked, the in-progress name not yet
// removed) is a commit done when it is run again.
func TestCommitAfterHalfCommit(t *testing.T) {
	dir := t.TempDir()
	s, pre := preCommittedPane(t, dir)
	tmp, final := filepath.Join(dir, s.tmpName(0)), filepath.Join(dir, s.finalName(0))
	if err := os.Link(tmp, final); err != nil {
		t.Fatal(err)
	}
	s2 := newTestSink(t, dir, true)
	restoreCommits(t, s2, dir, pre, s.finalName(0))
}

// Only the output's own in-progress files written after the checkpoint are
// removed on restore; on a fresh start none is.
func TestLeftoversRemovedOnlyWhenProvablyOwn(t *testing.T) {
	for _, resumed := range []bool{false, true} {
		t.Run("resumed="+strconv.FormatBool(resumed), func(t *testing.T) {
			dir := t.TempDir()
			s := newTestSink(t, dir, true, "card")
			task := s.task
			other := "0badcafe"
			put := map[string]string{
				"card=c1/.part-" + task + "-7.parquet.inprogress":  "after the checkpoint",
				"card=c1/.part-" + task + "-2.parquet.inprogress":  "before the checkpoint, no pre-commit names it",
				"card=c1/.part-" + other + "-7.parquet.inprogress": "another output's",
				"card=c1/part-" + task + "-8.parquet.inprogress":   "not the naming (no dot)",
				"card=c1/.part-" + task + "-9.parquet":             "not the naming (no .inprogress)",
				"card=c1/part-" + task + "-6.parquet":              "a final file of a later checkpoint",
				".part-" + task + "-x.parquet.inprogress":          "not a number",
				"notes.txt": "someone's",
			}
			for name, text := range put {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var r connector.Resume
			if resumed {
				r = connector.Resume{From: 3, Mark: []byte(`{"next":5}`)}
			}
			if err := s.Open(ctx, r); err != nil {
				t.Fatal(err)
			}
			var want []string
			for name := range put {
				if !(resumed && name == "card=c1/.part-"+task+"-7.parquet.inprogress") {
					want = append(want, name)
				}
			}
			slices.Sort(want)
			if got := files(t, dir); !slices.Equal(got, want) {
				t.Fatalf("files:\n got %v\nwant %v", got, want)
			}
			for name, text := range put {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && string(b) != text {
					t.Fatalf("%s was changed: %q", name, b)
				}
			}
			// The next part files skip the names taken.
			if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 1, int64(1))}); err != nil {
				t.Fatal(err)
			}
			pre, err := s.PreCommit(ctx, 4)
			if err != nil {
				t.Fatal(err)
			}
			wantPre := `{"task":"` + task + `","next":1,"files":[{"dir":"card=c1","n":0,"rows":1}]}`
			if resumed {
				wantPre = `{"task":"` + task + `","next":6,"files":[{"dir":"card=c1","n":5,"rows":1}]}`
			}
			if string(pre) != wantPre {
				t.Fatalf("pre-commit %s, want %s", pre, wantPre)
			}
		})
	}
}

// A final name that exists is never replaced: a part file is numbered
// past it, and a commit that would replace one (made between the
// pre-commit and the commit) fails and leaves it.
func TestFinalFileNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	s := newTestSink(t, dir, true)
	taken := filepath.Join(dir, s.finalName(0))
	if err := os.WriteFile(taken, []byte("someone's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 1, int64(1))}); err != nil {
		t.Fatal(err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"task":"` + s.task + `","next":2,"files":[{"n":1,"rows":1}]}`; string(pre) != want {
		t.Fatalf("pre-commit %s, want %s", pre, want)
	}
	squatter := filepath.Join(dir, s.finalName(1))
	if err := os.WriteFile(squatter, []byte("made meanwhile"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = s.Commit(ctx, 1, pre)
	if err == nil || connector.Retryable(err) || !strings.Contains(err.Error(), "is not the part file weir wrote") {
		t.Fatalf("commit: %v, want a permanent error", err)
	}
	for p, want := range map[string]string{taken: "someone's", squatter: "made meanwhile"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Fatalf("%s holds %q, want %q", p, b, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, s.tmpName(1))); err != nil {
		t.Fatalf("the in-progress file: %v", err)
	}
}

// Without checkpoints, files roll by size and interval and get their final
// names at once, and Close finishes the rest.
func TestRollWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	c, err := Parse(plan.Values{"dir": dir, "roll": map[string]string{"size": "1KiB", "interval": "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.RollSize != 1024 || c.RollInterval != time.Hour {
		t.Fatalf("roll %d %v", c.RollSize, c.RollInterval)
	}
	sh := shape
	ks, err := c.New(plan.Env{Job: "orders", Field: "output", Shape: &sh})
	if err != nil {
		t.Fatal(err)
	}
	s := ks.(*Sink)
	if s.Guarantee() != connector.AtLeastOnce {
		t.Fatalf("guarantee %v", s.Guarantee())
	}
	now := time.Date(2026, 12, 5, 13, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	// Big enough values that a few rows pass 1KiB.
	var items []plan.Item
	for i := range 40 {
		it := pane("card-"+strings.Repeat("x", 200)+strconv.Itoa(i), at(13, 0), int64(i), int64(i))
		items = append(items, it)
	}
	if err := s.Write(ctx, items); err != nil {
		t.Fatal(err)
	}
	bySize := finals(t, dir)
	if len(bySize) < 2 {
		t.Fatalf("no roll by size: %v", files(t, dir))
	}
	if err := s.Write(ctx, []plan.Item{pane("late", at(13, 0), 1, int64(1))}); err != nil {
		t.Fatal(err)
	}
	before := len(finals(t, dir))
	now = now.Add(time.Hour)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(finals(t, dir)); got != before+1 {
		t.Fatalf("roll by interval: %d finals, want %d", got, before+1)
	}
	if err := s.Write(ctx, []plan.Item{pane("last", at(13, 0), 1, int64(1))}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	all := files(t, dir)
	if got := finals(t, dir); !slices.Equal(got, all) {
		t.Fatalf("in-progress files left: %v", all)
	}
	var n int
	for _, f := range all {
		n += len(rows(t, filepath.Join(dir, f)))
	}
	if n != 42 {
		t.Fatalf("%d rows, want 42", n)
	}
}

func TestRefused(t *testing.T) {
	c, err := Parse(plan.Values{"dir": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"late_output", "quarantine", "dead_letter"} {
		_, err := c.New(plan.Env{Field: f})
		if want := "a Parquet output holds panes only: give " + f + " a file or a topic"; err == nil || err.Error() != want {
			t.Fatalf("%s: %v, want %s", f, err, want)
		}
	}
	s := newTestSink(t, t.TempDir(), true)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	err = s.Write(ctx, []plan.Item{{Kind: plan.LateEvent, JSON: []byte(`{}`)}})
	if err == nil || connector.Retryable(err) || err.Error() != "a Parquet output holds panes only" {
		t.Fatalf("a late event: %v", err)
	}
	for _, tc := range []struct {
		v    plan.Values
		want string
	}{
		{plan.Values{"dir": ""}, "dir: missing: the directory the part files go to"},
		{plan.Values{"dir": "d", "partition_by": []string{"date", "date"}}, "partition_by: date is named twice"},
		{plan.Values{"dir": "d", "roll": map[string]string{"size": "big"}}, `roll: size: expected a size of 1KiB or more (128MB, 1GiB), got "big"`},
		{plan.Values{"dir": "d", "roll": map[string]string{"interval": "0s"}}, `roll: interval: expected a duration (10m, 1h), got "0s"`},
		{plan.Values{"dir": "d", "roll": map[string]string{"every": "1h"}}, `roll: unknown setting "every"; expected size or interval`},
	} {
		if _, err := Parse(tc.v); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %s", tc.v, err, tc.want)
		}
	}
	bad := newTestSink(t, t.TempDir(), true, "date", "merchant")
	if err := bad.Open(ctx, connector.Resume{}); err == nil || err.Error() != "partition_by: merchant is not date, hour or a key field (its key fields: card)" {
		t.Fatalf("open: %v", err)
	}
}

// Without the job's shape the schema comes from the first pane; a key
// field that partitions is escaped as Hive does, and is not a column.
func TestShapeFromFirstPaneAndEscapedKeys(t *testing.T) {
	dir := t.TempDir()
	c, err := Parse(plan.Values{"dir": dir, "partition_by": []string{"key"}})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := c.New(plan.Env{Job: "orders", Field: "output", Checkpointed: true})
	if err != nil {
		t.Fatal(err)
	}
	s := ks.(*Sink)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	p := pane("a/b=c", at(13, 0), 2, int64(30))
	p2 := pane(".hidden", at(13, 0), 1, "1.50")
	if err := s.Write(ctx, []plan.Item{p, p2}); err != nil {
		t.Fatal(err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, pre); err != nil {
		t.Fatal(err)
	}
	want := []string{"key=%2Ehidden/part-" + s.task + "-1.parquet", "key=a%2Fb%3Dc/part-" + s.task + "-0.parquet"}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	got := rows(t, filepath.Join(dir, want[1]))
	wantRow := strings.Replace(strings.TrimPrefix(row("x", at(13, 0), 2, "30", "30"), "card=x "), "orders=2", "orders=2 orders_exact=2", 1)
	if !slices.Equal(got, []string{wantRow}) {
		t.Fatalf("rows:\n got %q\nwant %q", got, wantRow)
	}
	if got := rows(t, filepath.Join(dir, want[0])); !strings.Contains(got[0], " spent=1.5 spent_exact=1.50 ") {
		t.Fatalf("a decimal: %q", got)
	}
}

// A job renamed between a checkpoint and its restore (its files' task
// token changes) still commits the files the checkpoint holds, under their
// names.
func TestRestoreOfARenamedJob(t *testing.T) {
	dir := t.TempDir()
	s, pre := preCommittedPane(t, dir)
	c, _ := Parse(plan.Values{"dir": dir})
	sh := shape
	ks, err := c.New(plan.Env{Job: "orders-v2", Field: "output", Checkpointed: true, Shape: &sh})
	if err != nil {
		t.Fatal(err)
	}
	s2 := ks.(*Sink)
	if s2.task == s.task {
		t.Fatal("the same task token for another job name")
	}
	restoreCommits(t, s2, dir, pre, s.finalName(0))
}

// At most MaxOpenFiles part files are open: a pane of another folder
// finishes the one written least recently, and the pre-commit holds it.
func TestOpenFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	s := newTestSink(t, dir, true, "card")
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	for i := range MaxOpenFiles + 1 {
		if err := s.Write(ctx, []plan.Item{pane("c"+strconv.Itoa(i), at(13, 0), 1, int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write(ctx, []plan.Item{pane("c0", at(13, 10), 1, int64(0))}); err != nil {
		t.Fatal(err)
	}
	if len(s.open) != MaxOpenFiles || len(s.done) != 2 || s.done[0].Dir != "card=c0" || s.done[1].Dir != "card=c1" {
		t.Fatalf("%d open, finished %v", len(s.open), s.done)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, pre); err != nil {
		t.Fatal(err)
	}
	fin := finals(t, dir)
	n := 0
	for _, f := range fin {
		n += len(rows(t, filepath.Join(dir, f)))
	}
	if len(fin) != MaxOpenFiles+2 || n != MaxOpenFiles+2 || !slices.Contains(fin, "card=c0/"+s.finalName(MaxOpenFiles+1)) {
		t.Fatalf("%d rows in %d files: %v", n, len(fin), fin)
	}
}

// preCommittedPane is a checkpointed sink on dir that wrote one pane and
// pre-committed it for checkpoint 1, not committed: the sink and its
// pre-commit.
func preCommittedPane(t *testing.T, dir string) (*Sink, []byte) {
	t.Helper()
	s := newTestSink(t, dir, true)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []plan.Item{pane("c1", at(13, 0), 2, int64(30))}); err != nil {
		t.Fatal(err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s, pre
}

// restoreCommits restores s2 from checkpoint 1, whose pre-commit is pre,
// commits it again as the engine does, and checks that dir then holds the
// one final file want.
func restoreCommits(t *testing.T, s2 *Sink, dir string, pre []byte, want string) {
	t.Helper()
	if err := s2.Open(ctx, connector.Resume{From: 1, Pending: []connector.PreCommit{{Checkpoint: 1, Data: pre}}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(ctx, 1, pre); err != nil {
		t.Fatal(err)
	}
	if got := files(t, dir); !slices.Equal(got, []string{want}) {
		t.Fatalf("%v, want [%s]", got, want)
	}
}
