package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: any job file gives a job or a one-line error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	// Every job file of the examples, as users start from them.
	examples, err := filepath.Glob("../examples/*/*.yaml")
	if err != nil || len(examples) == 0 {
		f.Fatalf("no example job files: %v", err)
	}
	for _, e := range examples {
		data, err := os.ReadFile(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(minimal + "checkpoint: {dir: ckpt, interval: 1s}\nstate: {backend: pebble, memory_budget: 8MiB}\n"))
	f.Add([]byte("window: {sliding: {size: 10m, slide: 1m, offset: -5s}}\ntrigger: {early: 1m, late: 30s}\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := Parse(data, "job.yaml", "/d")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a multi-line error: %q", err)
			}
			if _, ok := err.(*Error); !ok {
				t.Errorf("an error of type %T: %v", err, err)
			}
			return
		}
		switch {
		case len(j.Outputs) == 0:
			t.Errorf("a job without an output accepted: %+v", j)
		case j.Join != nil:
			// A join writes records, not windows' panes.
			if j.Window.Assigner != nil || len(j.Aggregates) > 0 || j.Join.With == nil || j.Join.Lower > j.Join.Upper || !j.Keyed() || !j.Join.With.Keyed() {
				t.Errorf("an invalid join accepted: %+v %+v", j, j.Join)
			}
		case j.Lookup != nil:
			// A lookup writes records, not windows' panes.
			l := j.Lookup
			if j.Window.Assigner != nil || len(j.Aggregates) > 0 || j.Join != nil || len(j.KeyFields()) != 1 ||
				strings.Count(l.Query, "{keys}") != 1 || (l.Path == "") == (l.DSN == "") || l.Batch < 1 || l.InFlight < 1 || l.Attempts < 1 || l.Backoff <= 0 {
				t.Errorf("an invalid lookup accepted: %+v %+v", j, l)
			}
		case j.Window.Validate() != nil || len(j.Aggregates) == 0:
			t.Errorf("an invalid job accepted: %+v", j)
		}
	})
}
