package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAggregate runs the query over a small file of lines like weir bench's
// (100 cards, event times jittered by up to 2 s across minute boundaries,
// the keys the job does not read present too) and checks every row against
// a count and sum made with a plain map.
func TestAggregate(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	type key struct {
		card  string
		start time.Time
	}
	type agg struct {
		n   int64
		sum float64
	}
	want := map[key]agg{}
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(1, 2))
	base := time.UnixMilli(1_780_000_000_000).UTC()
	const lines = 20_000
	for i := range lines {
		arr := base.Add(time.Duration(i) * 10 * time.Millisecond) // 100 lines/s: 200 s
		ts := arr.Add(-time.Duration(r.IntN(2000)) * time.Millisecond)
		card := fmt.Sprintf("c%d", r.IntN(100))
		cents := r.IntN(20_000)
		fmt.Fprintf(w, `{"id":"e%d","card":"%s","amount":%d.%02d,"ts":"%s","arrival":"%s"}`+"\n",
			i, card, cents/100, cents%100, ts.Format("2006-01-02T15:04:05.000Z"), arr.Format("2006-01-02T15:04:05.000Z"))
		k := key{card, ts.Truncate(time.Minute)}
		a := want[k]
		a.n++
		a.sum += float64(cents) / 100
		want[k] = a
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := Aggregate(context.Background(), db, in, out)
	if err != nil {
		t.Fatal(err)
	}
	if rows != int64(len(want)) {
		t.Errorf("COPY wrote %d rows, want %d", rows, len(want))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[key]agg{}
	var total int64
	for _, ln := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var v struct {
			Key    string  `json:"key"`
			Start  string  `json:"window_start"`
			End    string  `json:"window_end"`
			Orders int64   `json:"orders"`
			Spent  float64 `json:"spent"`
		}
		if err := json.Unmarshal(ln, &v); err != nil {
			t.Fatalf("%v: %s", err, ln)
		}
		start, err1 := time.Parse("2006-01-02 15:04:05", v.Start)
		end, err2 := time.Parse("2006-01-02 15:04:05", v.End)
		if err1 != nil || err2 != nil || end.Sub(start) != time.Minute {
			t.Fatalf("window [%s, %s): %v %v", v.Start, v.End, err1, err2)
		}
		k := key{v.Key, start}
		if _, dup := got[k]; dup {
			t.Fatalf("%v twice", k)
		}
		got[k] = agg{v.Orders, v.Spent}
		total += v.Orders
	}
	if total != lines {
		t.Errorf("the counts add up to %d, want %d", total, lines)
	}
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
	for k, a := range want {
		if g := got[k]; g.n != a.n || math.Abs(g.sum-a.sum) > 1e-6 {
			t.Errorf("%v: got %+v, want %+v", k, g, a)
		}
	}
}
