package job

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
	_ "modernc.org/sqlite"
)

// A job whose interval's output is larger than checkpoint.max_held_output
// takes checkpoints early instead of holding it all in memory, for a file
// and a table alike; what it writes is what it writes without the bound.
func TestMaxHeldOutput(t *testing.T) {
	var in bytes.Buffer
	for i := range 20_000 {
		fmt.Fprintf(&in, `{"card":"c%05d","ts":%d,"arrival":%d}`+"\n", i, 1_780_000_000_000+int64(i)*10, 1_780_000_000_000+int64(i)*10)
	}
	run := func(held string) (results, rows, log string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "input.jsonl"), in.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		yaml := "source: {file: input.jsonl}\ntime: {field: ts, arrival_field: arrival}\nkey: card\n" +
			"watermark: {delay: 0s, interval: 0s}\nwindow: {tumbling: 1s}\naggregates: {n: count}\n" +
			"output: [results.jsonl, {sqlite: {path: results.db, table: counts}}]\n" +
			"checkpoint: {dir: ckpt, interval: 1h" + held + "}\n"
		var lb bytes.Buffer
		if _, err := Run(context.Background(), loadJob(t, dir, yaml), Options{Log: &lb}); err != nil {
			t.Fatalf("%v\n%s", err, lb.String())
		}
		db, err := sql.Open("sqlite", filepath.Join(dir, "results.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n, sum int64
		if err := db.QueryRow(`SELECT count(*), sum(n) FROM counts`).Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		return read(t, dir, "results.jsonl"), fmt.Sprintf("%d rows, %d events", n, sum), lb.String()
	}
	free, freeRows, _ := run("")
	got, gotRows, log := run(", max_held_output: 64KiB")
	if got != free || gotRows != freeRows || freeRows != "20000 rows, 20000 events" {
		t.Errorf("with a bound: %d bytes and %s; without: %d bytes and %s", len(got), gotRows, len(free), freeRows)
	}
	if !strings.Contains(log, "weir: output[0] holds ") || !strings.Contains(log, "checkpoint.max_held_output is 64.0 KiB: a checkpoint is taken now") {
		t.Errorf("log:\n%s", log)
	}
}

// A max_held_output too small to be worth a checkpoint is refused, naming
// the field.
func TestMaxHeldOutputRefused(t *testing.T) {
	_, err := jobfile.Parse([]byte("source: {file: in.jsonl}\ntime: {field: ts}\nwindow: {tumbling: 1m}\naggregates: {n: count}\n"+
		"output: out.jsonl\ncheckpoint: {dir: ckpt, max_held_output: 1KiB}\n"), "job.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `checkpoint.max_held_output: expected a size of at least 64KiB such as 64MiB, got "1KiB"`) {
		t.Errorf("err = %v", err)
	}
}
