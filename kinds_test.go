package weir_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/kindtest"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// The kinds a package of their own registers (internal/kindtest) are read
// and written by a Go pipeline by their names, with the same settings a
// job file gives them, through the same plan.
func TestRegisteredKindsFromGo(t *testing.T) {
	var lines []string
	for i := range 120 {
		lines = append(lines, fmt.Sprintf(`{"card":"c%d","ts":%d}`, i%2, 1_780_000_000_000+int64(i)*1000))
	}
	lines = append(lines, "not json")
	kindtest.Reset("go-counts")
	type ev struct {
		Card string     `json:"card"`
		TS   mtime.Time `json:"ts"`
	}
	p := weir.NewPipeline()
	evs, rejected := weir.ReadKind(p, "orders", "memlines", plan.Values{"lines": lines}, func(r connector.Record) (ev, error) {
		var e ev
		return e, json.Unmarshal(r.Value, &e)
	})
	var bad []string
	weir.Sink(rejected, func(r weir.Rejected) error { bad = append(bad, string(r.Record.Value)); return nil })
	counts, _ := weir.Aggregate(weir.Window(weir.KeyBy(weir.WithTimestamps(evs, func(e ev) mtime.Time { return e.TS },
		watermark.BoundedOutOfOrderness(0).WithInterval(0)), func(e ev) string { return e.Card }),
		window.NewStrategy(window.TumblingWindows(time.Minute))), aggregate.Count[ev]())
	weir.SinkToKind(counts, "counts", "memsink", plan.Values{"name": "go-counts"}, func(pn weir.Pane[string, int64]) plan.Item {
		return plan.Item{Kind: plan.Pane, JSON: fmt.Appendf(nil, "%s %s %d", pn.Key, pn.Window.Start, pn.Value)}
	})
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := kindtest.Committed("go-counts")
	want := []string{
		"c0 2026-05-28T20:26:00.000Z 10", "c1 2026-05-28T20:26:00.000Z 10",
		"c0 2026-05-28T20:27:00.000Z 30", "c1 2026-05-28T20:27:00.000Z 30",
		"c0 2026-05-28T20:28:00.000Z 20", "c1 2026-05-28T20:28:00.000Z 20",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || !slices.Equal(bad, []string{"not json"}) {
		t.Errorf("committed:\n%s\nwant\n%s\nrejected %q", strings.Join(got, "\n"), strings.Join(want, "\n"), bad)
	}
	if s := p.Plan().String(); !strings.Contains(s, "memlines 121 lines") || !strings.Contains(s, "memsink go-counts") {
		t.Errorf("the plan:\n%s", s)
	}
	// A kind that is not registered, or settings it refuses, are the
	// pipeline's errors.
	for _, c := range []struct {
		kind string
		vals plan.Values
		want string
	}{
		{"nosuch", plan.Values{}, `weir: sink x: no sink kind "nosuch" is registered`},
		{"memsink", plan.Values{}, "weir: sink x: memsink: name: missing: the name they are kept under"},
		{"memsink", plan.Values{"name": 3}, "weir: sink x: memsink: name: expected a string, got int"},
	} {
		p := weir.NewPipeline()
		s := weir.FromSlice(p, []int{1})
		weir.SinkToKind(s, "x", c.kind, c.vals, func(int) plan.Item { return plan.Item{} })
		if err := p.Run(context.Background()); err == nil || err.Error() != c.want {
			t.Errorf("%s %v: %v, want %s", c.kind, c.vals, err, c.want)
		}
	}
}

// The webhook output is registered by importing weir: a Go pipeline
// writes to it by name, with the settings a job file gives it, headers as
// a map.
func TestTheWebhookKindFromGo(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("X-Team")+" "+string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	p := weir.NewPipeline()
	s := weir.FromSlice(p, []int{1, 2, 3})
	weir.SinkToKind(s, "alerts", "webhook", plan.Values{"url": srv.URL + "/hook", "headers": map[string]string{"X-Team": "ops"}, "max_in_flight": 1},
		func(n int) plan.Item { return plan.Item{JSON: fmt.Appendf(nil, `{"n":%d}`, n), ID: uint64(n)} })
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{`ops {"n":1}`, `ops {"n":2}`, `ops {"n":3}`}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if s := p.Plan().String(); !strings.Contains(s, "webhook "+srv.URL+"/…") {
		t.Errorf("the plan:\n%s", s)
	}
}

// The Parquet output is registered by importing weir: a Go pipeline writes
// panes to it by name. SinkToKind gives no pane shape, so the first pane
// decides the columns; without checkpoints the part file gets its final
// name when the pipeline ends.
func TestTheParquetKindFromGo(t *testing.T) {
	dir := t.TempDir()
	p := weir.NewPipeline()
	s := weir.FromSlice(p, []int64{1, 2, 3})
	start := mtime.FromTime(time.Date(2026, 6, 5, 13, 0, 0, 0, time.UTC))
	weir.SinkToKind(s, "lake", "parquet", plan.Values{"dir": dir, "partition_by": []string{"date", "hour"}},
		func(n int64) plan.Item {
			return plan.Item{Kind: plan.Pane, JSON: fmt.Appendf(nil, `{"n":%d}`, n), ID: uint64(n), Pane: &plan.PaneFields{
				Keys: []any{fmt.Sprint("k", n)}, Start: start, End: start + 60_000, Timing: "ON_TIME", Final: true, Mode: "accumulating",
				Watermark: start + 60_000, Emitted: start + 60_000, Names: []string{"n"}, Values: []any{n}}}
		})
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "date=2026-06-05", "hour=13", "part-*.parquet"))
	if len(files) != 1 {
		t.Fatalf("part files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := pq.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range pf.Schema().Columns() {
		cols = append(cols, c[0])
	}
	want := []string{"key", "window_start", "window_end", "revision", "timing", "final", "retract", "status", "mode", "version", "watermark", "emitted_at", "n", "n_exact", "partial"}
	if pf.NumRows() != 3 || !slices.Equal(cols, want) {
		t.Errorf("%d rows, columns %v; want 3, %v", pf.NumRows(), cols, want)
	}
	if s := p.Plan().String(); !strings.Contains(s, "parquet "+dir) {
		t.Errorf("the plan:\n%s", s)
	}
}
