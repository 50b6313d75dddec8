package weir_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// order is an order of the test's stream, as its lines hold it.
type order struct {
	ID      string     `json:"id"`
	Card    string     `json:"card"`
	Cents   int64      `json:"cents"`
	TS      mtime.Time `json:"ts"`
	Arrival mtime.Time `json:"arrival"`
}

// ordersWithRepeats is a stream of orders in arrival order, with late ones
// and repeated deliveries (the same id again, some within the horizon, some
// after it).
func ordersWithRepeats(n int) []order {
	r := rand.New(rand.NewPCG(4, 6))
	now := mtime.Time(1_780_000_000_000)
	var out []order
	for i := range n {
		now += mtime.Time(r.IntN(700))
		o := order{ID: fmt.Sprintf("o%d", i), Card: fmt.Sprintf("c%d", r.IntN(7)), Cents: int64(r.IntN(5000)), TS: now - mtime.Time(r.IntN(1500)), Arrival: now}
		if r.IntN(30) == 0 {
			o.TS -= mtime.Time(r.IntN(90_000)) // late
		}
		out = append(out, o)
		if r.IntN(8) == 0 && len(out) > 3 {
			again := out[len(out)-1-r.IntN(min(len(out)-1, 300))]
			again.Arrival = now
			out = append(out, again)
		}
	}
	return out
}

// countSum is count and sum(cents) in one accumulator.
type countSum struct{ N, Sum int64 }

type countSumAgg struct{}

func (countSumAgg) New() countSum                    { return countSum{} }
func (countSumAgg) Add(a countSum, o order) countSum { return countSum{a.N + 1, a.Sum + o.Cents} }
func (countSumAgg) Merge(a, b countSum) countSum     { return countSum{a.N + b.N, a.Sum + b.Sum} }
func (countSumAgg) Result(a countSum) countSum       { return a }

// paneLine writes a pane as a job file writes it to a JSON-lines output.
func paneLine(p weir.Pane[string, countSum]) []byte {
	status := "provisional"
	switch {
	case p.Retract:
		status = "retracted"
	case p.Final:
		status = "closed"
	}
	b := fmt.Appendf(nil, `{"key":%q,"window_start":%q,"window_end":%q,"revision":%d,"timing":%q,"final":%t,"retract":%t,"status":%q,"mode":"accumulating","version":1,"watermark":%q,"emitted_at":%q,"orders":%d,"cents":%d}`,
		p.Key, p.Window.Start, p.Window.End, p.Revision, p.Timing, p.Final, p.Retract, status, p.Watermark, p.EmittedAt, p.Value.N, p.Value.Sum)
	return append(b, '\n')
}

// A Go pipeline that de-duplicates by id (Deduplicated) writes the bytes a
// job file with the same id, horizon, window, watermark and aggregates
// writes: the same events are duplicates, the same ones beyond the horizon,
// in the same head of the engine.
func TestDeduplicatedAsAJobFile(t *testing.T) {
	dir := t.TempDir()
	in := ordersWithRepeats(6000)
	var lines bytes.Buffer
	for _, o := range in {
		b, _ := json.Marshal(o)
		lines.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), lines.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: dedup
source: {file: orders.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
id: id
dedup_horizon: 1m
watermark: {delay: 2s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 30s
aggregates: {orders: count, cents: sum(cents)}
output: job.jsonl
`), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := job.Run(context.Background(), j, job.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Duplicates < 100 || sum.BeyondDedupHorizon < 10 || sum.LateAccepted < 10 {
		t.Fatalf("the stream does not test what it should: %d duplicates, %d beyond the horizon, %d late", sum.Duplicates, sum.BeyondDedupHorizon, sum.LateAccepted)
	}

	p := weir.NewPipeline()
	f, err := os.Open(filepath.Join(dir, "orders.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	orders := weir.FromSeq(p, func(yield func(order, mtime.Time) bool) {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var o order
			if json.Unmarshal(sc.Bytes(), &o) != nil || !yield(o, o.Arrival) {
				return
			}
		}
	})
	stamped := weir.WithTimestamps(orders, func(o order) mtime.Time { return o.TS },
		watermark.BoundedOutOfOrderness(2*time.Second).WithInterval(0)).
		Deduplicated(time.Minute, func(o order) string { return o.ID })
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(o order) string { return o.Card }),
		window.NewStrategy(window.TumblingWindows(10*time.Second)).WithLateness(30*time.Second)), countSumAgg{})
	weir.SinkTo(panes, "results", &file.Sink[weir.Pane[string, countSum]]{Path: filepath.Join(dir, "go.jsonl"),
		Encode: func(b []byte, p weir.Pane[string, countSum]) []byte { return append(b, paneLine(p)...) }})
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "job.jsonl"))
	got, _ := os.ReadFile(filepath.Join(dir, "go.jsonl"))
	if len(want) < 10_000 || !bytes.Equal(got, want) {
		wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
		for i := range min(len(wl), len(gl)) {
			if !bytes.Equal(wl[i], gl[i]) {
				t.Fatalf("the Go pipeline's line %d (of %d; the job's %d):\n got %s\nwant %s", i+1, len(gl), len(wl), gl[i], wl[i])
			}
		}
		t.Fatalf("the Go pipeline wrote %d lines, the job %d", len(gl), len(wl))
	}
}
