package parquet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/parquet"
	_ "github.com/weirstream/weir/internal/kindtest"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// events are n events of the cards, a second apart, arriving as they
// happen; the amounts are decimals of two places.
func events(n int, cards ...string) []string {
	var out []string
	for i := range n {
		ts := 1_780_000_000_000 + int64(i)*1000
		out = append(out, fmt.Sprintf(`{"card":%q,"amount":%d.%02d,"ts":%d,"at":%d}`, cards[i%len(cards)], i%7, i%100, ts, ts))
	}
	return out
}

// jobFile is a job of events that writes its panes to Parquet (partitioned
// by date and hour) and to a JSON-lines file, with checkpoints.
func jobFile(t *testing.T, dir string, evs []string) string {
	quoted := make([]string, len(evs))
	for i, l := range evs {
		quoted[i] = strconv.Quote(l)
	}
	yaml := fmt.Sprintf(`name: spend
source: {memlines: {lines: [%s]}}
time: {field: ts, arrival_field: at}
key: card
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count, spent: sum(amount)}
output:
  - parquet: {dir: lake, partition_by: [date, hour], roll: {size: 64KiB}}
  - results.jsonl
checkpoint: {dir: ckpt, interval: 1h}
`, strings.Join(quoted, ", "))
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// jsonPanes are the panes of a JSON-lines output, each as the Parquet
// files' row is compared: key, window in milliseconds, revision, timing,
// final, the count and the exact sum.
func jsonPanes(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var p map[string]any
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		if err := d.Decode(&p); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		ms := func(f string) string {
			v, err := mtime.Parse([]byte(p[f].(string)))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			return strconv.FormatInt(int64(v), 10)
		}
		out = append(out, fmt.Sprintf("%v|%s|%s|%v|%v|%v|%v|%v", p["key"], ms("window_start"), ms("window_end"), p["revision"], p["timing"], p["final"], p["n"], p["spent"]))
	}
	slices.Sort(out)
	return out
}

// parquetPanes are the rows of the final part files under dir, as
// jsonPanes, and the files' partition folders.
func parquetPanes(t *testing.T, dir string) (panes, folders []string) {
	t.Helper()
	for _, f := range parquet.Finals(t, dir) {
		folders = append(folders, filepath.Dir(f))
		for _, r := range parquet.Rows(t, filepath.Join(dir, f)) {
			m := map[string]string{}
			for _, kv := range strings.Split(r, " ") {
				k, v, _ := strings.Cut(kv, "=")
				m[k] = v
			}
			// Without the job's shape (job/ does not give it yet) the
			// count is a number: its exact text is the JSON's.
			n := m["n"]
			if e, ok := m["n_exact"]; ok {
				n = e
			}
			panes = append(panes, fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s", m["key"], m["window_start"], m["window_end"], m["revision"], m["timing"], m["final"], n, m["spent_exact"]))
		}
	}
	slices.Sort(panes)
	folders = slices.Compact(slices.Sorted(slices.Values(folders)))
	return panes, folders
}

// A job file writes its panes to Parquet: the committed files hold exactly
// the panes its JSON output holds, in partition folders of the windows'
// date and hour, and no in-progress file is left.
func TestAJobWritesParquet(t *testing.T) {
	dir := t.TempDir()
	j, err := jobfile.Load(jobFile(t, dir, events(5000, "c0", "c1", "c2")))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	ckpts := 0
	if _, err := job.Run(context.Background(), j, job.Options{Log: &log, CheckpointAfter: func(b int64) (checkpoint.Kind, bool) {
		if b%5 == 0 {
			ckpts++
		}
		return checkpoint.Periodic, b%5 == 0
	}}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	want := jsonPanes(t, filepath.Join(dir, "results.jsonl"))
	got, folders := parquetPanes(t, filepath.Join(dir, "lake"))
	if len(want) != 252 || !slices.Equal(got, want) {
		t.Fatalf("Parquet holds %d panes, JSON %d:\n%s\nwant\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if wantFolders := []string{"date=2026-05-28/hour=20", "date=2026-05-28/hour=21"}; !slices.Equal(folders, wantFolders) {
		t.Errorf("folders %v, want %v", folders, wantFolders)
	}
	if all, fin := parquet.Files(t, filepath.Join(dir, "lake")), parquet.Finals(t, filepath.Join(dir, "lake")); !slices.Equal(all, fin) {
		t.Errorf("files left besides the final ones: %v", all)
	}
	t.Logf("%d panes in %d part files, %d checkpoints", len(got), len(parquet.Finals(t, filepath.Join(dir, "lake"))), ckpts)
}

// A job stopped without a savepoint after some checkpoints and run again
// from its last checkpoint commits each pane once: the files hold what an
// uninterrupted run's JSON output holds.
func TestARestoredJobWritesEachPaneOnce(t *testing.T) {
	evs := events(5000, "c0", "c1", "c2")
	ref := t.TempDir()
	j, err := jobfile.Load(jobFile(t, ref, evs))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Run(context.Background(), j, job.Options{}); err != nil {
		t.Fatal(err)
	}
	want := jsonPanes(t, filepath.Join(ref, "results.jsonl"))

	dir := t.TempDir()
	if j, err = jobfile.Load(jobFile(t, dir, evs)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var log1 bytes.Buffer
	job.Run(ctx, j, job.Options{Log: &log1, NoSavepointOnStop: true, CheckpointAfter: func(b int64) (checkpoint.Kind, bool) {
		if b == 23 {
			cancel()
		}
		return checkpoint.Periodic, b%4 == 0
	}})
	first, _ := parquetPanes(t, filepath.Join(dir, "lake"))
	var log2 bytes.Buffer
	if _, err := job.Run(context.Background(), j, job.Options{Log: &log2}); err != nil {
		t.Fatalf("%v\n%s", err, log2.String())
	}
	if !strings.Contains(log2.String(), "weir: resuming from ") || !strings.Contains(log2.String(), "left pending") {
		t.Fatalf("the second run did not restore:\n%s", log2.String())
	}
	got, _ := parquetPanes(t, filepath.Join(dir, "lake"))
	if len(first) == 0 || len(first) >= len(want) || !slices.Equal(got, want) {
		t.Fatalf("the first run committed %d panes; after the restore Parquet holds %d, want %d:\n%s\nwant\n%s", len(first), len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if all, fin := parquet.Files(t, filepath.Join(dir, "lake")), parquet.Finals(t, filepath.Join(dir, "lake")); !slices.Equal(all, fin) {
		t.Errorf("files left besides the final ones: %v", all)
	}
	t.Logf("%d panes; the first run committed %d", len(got), len(first))
}

// The job file docs/connectors.md shows runs as it says, over orders of
// two hours: its part files are in the folders of their windows' date and
// hour, and hold the panes of its JSON output.
func TestTheDocumentedJob(t *testing.T) {
	page, err := os.ReadFile("../../docs/connectors.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(page), "<!-- parquet-example -->\n```yaml\n")
	block, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("docs/connectors.md has no parquet-example block")
	}
	dir := t.TempDir()
	var orders []string
	for i := range 2000 {
		orders = append(orders, fmt.Sprintf(`{"card":"c%d","amount":%d.5,"ts":%d}`, i%5, i%9, 1_780_000_000_000+int64(i)*3600))
	}
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(strings.Join(orders, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(block), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Run(context.Background(), j, job.Options{}); err != nil {
		t.Fatal(err)
	}
	var folders []string
	var n int
	for _, f := range parquet.Finals(t, filepath.Join(dir, "lake")) {
		folders = append(folders, filepath.Dir(f))
		n += len(parquet.Rows(t, filepath.Join(dir, "lake", f)))
	}
	folders = slices.Compact(folders)
	want := []string{"date=2026-05-28/hour=20", "date=2026-05-28/hour=21", "date=2026-05-28/hour=22"}
	if lines := len(strings.Split(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "results.jsonl"))))), "\n")); n != lines || !slices.Equal(folders, want) {
		t.Fatalf("%d rows in %v, want %d in %v", n, folders, lines, want)
	}
}

// The object-storage output docs/connectors.md shows, in place of the
// documented job's directory (its endpoint an S3 server in the test's
// process, its keys from the environment): the objects are in the folders
// of their windows' date and hour, under the prefix, and hold the panes of
// the JSON output; the secret key is in no log line.
func TestTheDocumentedS3Output(t *testing.T) {
	page := string(must(os.ReadFile("../../docs/connectors.md")))
	block := func(name string) string {
		_, after, ok := strings.Cut(page, "<!-- "+name+" -->\n```yaml\n")
		b, _, ok2 := strings.Cut(after, "```")
		if !ok || !ok2 {
			t.Fatalf("docs/connectors.md has no %s block", name)
		}
		return b
	}
	f := parquet.NewFakeS3(t)
	jobText, _, _ := strings.Cut(block("parquet-example"), "output:\n")
	s3 := strings.Replace(block("parquet-s3-example"), "https://minio.internal:9000", f.URL, 1)
	s3 = strings.Replace(s3, "/var/lib/weir/staging", "staging", 1)
	dir := t.TempDir()
	var orders []string
	for i := range 2000 {
		orders = append(orders, fmt.Sprintf(`{"card":"c%d","amount":%d.5,"ts":%d}`, i%5, i%9, 1_780_000_000_000+int64(i)*3600))
	}
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(strings.Join(orders, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(jobText+s3+"  - results.jsonl\ncheckpoint: {dir: ckpt, interval: 10s}\n"), 0o644)
	t.Setenv("S3_KEY", "weir")
	t.Setenv("S3_SECRET", "secret")
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := job.Run(context.Background(), j, job.Options{Log: &log}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	lake := t.TempDir()
	f.Download(t, "spend", lake)
	var folders []string
	var n int
	for _, name := range parquet.Finals(t, lake) {
		folders = append(folders, filepath.Dir(name))
		n += len(parquet.Rows(t, filepath.Join(lake, name)))
	}
	folders = slices.Compact(folders)
	want := []string{"date=2026-05-28/hour=20", "date=2026-05-28/hour=21", "date=2026-05-28/hour=22"}
	if lines := len(strings.Split(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "results.jsonl"))))), "\n")); n != lines || !slices.Equal(folders, want) {
		t.Fatalf("%d rows in %v, want %d in %v", n, folders, lines, want)
	}
	if strings.Contains(log.String(), "secret") {
		t.Fatalf("the log shows the secret key:\n%s", log.String())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A late_output, quarantine or dead_letter cannot be Parquet: the job file
// is refused when it is read, in one line naming the field (exit 2).
func TestOnlyPanesGoToParquet(t *testing.T) {
	for _, field := range []string{"late_output", "quarantine", "dead_letter"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(strings.Join(events(10, "c0"), "\n")+"\n"), 0o644)
		yaml := `name: spend
source: {file: events.jsonl}
time: {field: ts}
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
` + field + `: {parquet: {dir: side}}
`
		os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(yaml), 0o644)
		_, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
		var jerr *jobfile.Error
		if want := "job.yaml:7: " + field + ".parquet: a parquet output holds panes only: give " + field + " a file or a topic"; !errors.As(err, &jerr) || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: %v, want %s", field, err, want)
		}
	}
}
