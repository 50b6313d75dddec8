package bench

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDuckDBAgreesWithWeir runs weir's jsonl-run job and the DuckDB peer over
// the same file of a million lines and compares their results: the same
// (card, minute) rows, the same counts and sums. The peer needs cgo and a C
// compiler, and building it the first time takes a while, so the test runs
// only with WEIR_TEST_DUCKDB=1.
func TestDuckDBAgreesWithWeir(t *testing.T) {
	if os.Getenv("WEIR_TEST_DUCKDB") == "" {
		t.Skip("set WEIR_TEST_DUCKDB=1 to build the DuckDB peer (bench/duckdb) and compare its results with weir run's")
	}
	defer func(n int, dir string) { JSONLines, DuckDBDir = n, dir }(JSONLines, DuckDBDir)
	JSONLines, DuckDBDir = 1_000_000, "duckdb" // the tests run in bench/
	in, err := JSONLFile(jsonlRate)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	weirOut, duckOut := filepath.Join(dir, "weir.jsonl"), filepath.Join(dir, "duckdb.jsonl")
	n, extra, _, err := jsonlRunTo(in, weirOut, false)
	if err != nil {
		t.Fatal(err)
	}
	m, dextra, _, err := duckdb(in, duckOut)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(JSONLines) || m != n {
		t.Fatalf("weir read %d lines, DuckDB counted %d, want %d", n, m, JSONLines)
	}
	if extra["panes"] != dextra["panes"] {
		t.Errorf("weir wrote %v panes, DuckDB %v rows", extra["panes"], dextra["panes"])
	}
	want := readPanes(t, weirOut, time.RFC3339Nano)
	got := readPanes(t, duckOut, "2006-01-02 15:04:05")
	if len(got) != len(want) {
		t.Errorf("DuckDB has %d (card, minute) rows, weir %d", len(got), len(want))
	}
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.Orders != w.Orders || math.Abs(g.Spent-w.Spent) > 1e-6 {
			if bad++; bad <= 5 {
				t.Errorf("%v: DuckDB has %+v (%v), weir %+v", k, g, ok, w)
			}
		}
	}
	t.Logf("%d lines, %d panes", n, len(want))
}

type paneKey struct {
	key   string
	start time.Time
}

type paneVal struct {
	Key    string  `json:"key"`
	Start  string  `json:"window_start"`
	End    string  `json:"window_end"`
	Orders int64   `json:"orders"`
	Spent  float64 `json:"spent"`
}

// readPanes reads a file of results, one JSON object a line, keyed by key
// and window start; a key's window must appear once.
func readPanes(t *testing.T, path, layout string) map[paneKey]paneVal {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[paneKey]paneVal{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v paneVal
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		start, err := time.Parse(layout, v.Start)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		end, err := time.Parse(layout, v.End)
		if err != nil || end.Sub(start) != time.Minute {
			t.Fatalf("%s: window [%s, %s): %v", path, v.Start, v.End, err)
		}
		k := paneKey{v.Key, start.UTC()}
		if _, dup := out[k]; dup {
			t.Fatalf("%s: %v twice", path, k)
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
