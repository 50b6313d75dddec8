package reconcile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/reconcile"
)

// A job of ingestion time counts events by when weir read them: without
// an arrival field no ledger holds those times, and reconcile refuses it,
// saying why; with one, the ledger's arrivals are its event times.
func TestIngestionTimeNeedsArrival(t *testing.T) {
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.jsonl")
	os.WriteFile(ledger, []byte(`{"card":"c1","at":1788000000000}`+"\n"), 0o600)
	const job = "name: t\nsource: {file: ledger.jsonl}\ntime: {ingestion: true%s}\nkey: card\nwindow: {tumbling: 1m}\n" +
		"aggregates: {n: count}\noutput: {sqlite: {path: t.db, table: t}}\n"
	for _, c := range []struct{ arrival, want string }{
		{"", "time.ingestion counts events by when weir read them, which no ledger holds: give time.arrival_field"},
		{", arrival_field: at", ""},
	} {
		j, err := jobfile.Parse([]byte(strings.Replace(job, "%s", c.arrival, 1)), "job.yaml", dir)
		if err != nil {
			t.Fatal(err)
		}
		err = reconcile.Check(j, reconcile.Options{Ledger: []string{ledger}})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("with %q: %v", c.arrival, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("with %q: %v, want %q", c.arrival, err, c.want)
		}
	}
}

// A job that corrects its event times by the devices' send times cannot be
// recounted from a ledger in event time (the correction needs each event's
// arrival): reconcile refuses it, saying why, and writes nothing.
func TestSentTimeRefused(t *testing.T) {
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.jsonl")
	os.WriteFile(ledger, []byte(`{"card":"c1","ts":1788000000000,"sent":1788000000000,"at":1788000000100}`+"\n"), 0o600)
	j, err := jobfile.Parse([]byte("name: t\nsource: {file: ledger.jsonl}\ntime: {field: ts, arrival_field: at, sent_field: sent}\nkey: card\n"+
		"window: {tumbling: 1m}\naggregates: {n: count}\noutput: {sqlite: {path: t.db, table: t}}\n"), "job.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	err = reconcile.Check(j, reconcile.Options{Ledger: []string{ledger}})
	if err == nil || !strings.Contains(err.Error(), "time.sent_field corrects each event time by its arrival") {
		t.Errorf("%v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t.db")); !os.IsNotExist(err) {
		t.Errorf("t.db: %v", err)
	}
}
