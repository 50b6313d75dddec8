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
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// revOrder is an order with a version: a revised order has a higher rev.
type revOrder struct {
	ID      string     `json:"id"`
	Rev     int64      `json:"rev"`
	Card    string     `json:"card"`
	Cents   int64      `json:"cents"`
	TS      mtime.Time `json:"ts"`
	Arrival mtime.Time `json:"arrival"`
}

// revisedOrders is a stream of orders in arrival order with revisions
// (another amount, card or time), repeats, and older versions arriving
// after newer ones.
func revisedOrders(n int) []revOrder {
	r := rand.New(rand.NewPCG(52, 12))
	now := mtime.Time(1_780_000_000_000)
	var out, latest []revOrder
	for i := range n {
		now += mtime.Time(r.IntN(700))
		switch k := r.IntN(10); {
		case k < 2 && len(latest) > 0:
			j := len(latest) - 1 - r.IntN(min(len(latest), 80))
			o := latest[j]
			o.Rev++
			o.Cents = int64(r.IntN(5000))
			if r.IntN(3) == 0 {
				o.Card = fmt.Sprintf("c%d", r.IntN(7))
			}
			if r.IntN(3) == 0 {
				o.TS += mtime.Time(r.IntN(20_000) - 10_000)
			}
			latest[j] = o
			o.Arrival = now
			out = append(out, o)
		case k == 2 && len(out) > 0:
			o := out[len(out)-1-r.IntN(min(len(out), 200))] // a repeat, perhaps of an older version
			o.Arrival = now
			out = append(out, o)
		default:
			o := revOrder{ID: fmt.Sprintf("o%d", i), Rev: 1, Card: fmt.Sprintf("c%d", r.IntN(7)), Cents: int64(r.IntN(5000)), TS: now - mtime.Time(r.IntN(1500)), Arrival: now}
			latest = append(latest, o)
			out = append(out, o)
		}
	}
	return out
}

// revAgg is count and sum(cents) that can take an order back out.
type revAgg struct{}

func (revAgg) New() countSum                       { return countSum{} }
func (revAgg) Add(a countSum, o revOrder) countSum { return countSum{a.N + 1, a.Sum + o.Cents} }
func (revAgg) Merge(a, b countSum) countSum        { return countSum{a.N + b.N, a.Sum + b.Sum} }
func (revAgg) Result(a countSum) countSum          { return a }
func (revAgg) Retract(a countSum, o revOrder) countSum {
	return countSum{a.N - 1, a.Sum - o.Cents}
}

// A Go pipeline of versioned orders (Versioned) writes the bytes a job
// file with the same id, version_field, window and aggregates writes: the
// same revisions replace the same earlier versions, with the same panes.
func TestVersionedAsAJobFile(t *testing.T) {
	dir := t.TempDir()
	var lines bytes.Buffer
	for _, o := range revisedOrders(6000) {
		b, _ := json.Marshal(o)
		lines.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), lines.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: versions
source: {file: orders.jsonl}
time: {field: ts, arrival_field: arrival}
key: card
id: id
version_field: rev
dedup_horizon: 10m
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
	if sum.Revisions < 500 || sum.Superseded < 30 || sum.RevisionsTooLate < 10 || sum.Duplicates < 50 {
		t.Fatalf("the stream does not test what it should: %+v, %d revisions", sum.Accounting, sum.Revisions)
	}
	t.Logf("%+v, %d revisions", sum.Accounting, sum.Revisions)

	p := weir.NewPipeline()
	f, err := os.Open(filepath.Join(dir, "orders.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	orders := weir.FromSeq(p, func(yield func(revOrder, mtime.Time) bool) {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var o revOrder
			if json.Unmarshal(sc.Bytes(), &o) != nil || !yield(o, o.Arrival) {
				return
			}
		}
	})
	stamped := weir.WithTimestamps(orders, func(o revOrder) mtime.Time { return o.TS },
		watermark.BoundedOutOfOrderness(2*time.Second).WithInterval(0)).
		Deduplicated(10*time.Minute, func(o revOrder) string { return o.ID }).
		Versioned(func(o revOrder) int64 { return o.Rev })
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(o revOrder) string { return o.Card }),
		window.NewStrategy(window.TumblingWindows(10*time.Second)).WithLateness(30*time.Second)), revAgg{})
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

// Aggregate refuses a Versioned stream whose aggregate cannot take an
// element back out, and Versioned one that is not de-duplicated.
func TestVersionedRefusals(t *testing.T) {
	p := weir.NewPipeline()
	orders := weir.FromSeq(p, func(yield func(revOrder, mtime.Time) bool) {})
	stamped := weir.WithTimestamps(orders, func(o revOrder) mtime.Time { return o.TS }, watermark.BoundedOutOfOrderness(0)).
		Deduplicated(time.Minute, func(o revOrder) string { return o.ID }).
		Versioned(func(o revOrder) int64 { return o.Rev })
	weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(o revOrder) string { return o.Card }),
		window.NewStrategy(window.TumblingWindows(time.Second))), aggregate.Max(func(o revOrder) int64 { return o.Cents }))
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "a Versioned stream needs an aggregate that can take an element back out") {
		t.Errorf("max: %v", err)
	}
	p = weir.NewPipeline()
	orders = weir.FromSeq(p, func(yield func(revOrder, mtime.Time) bool) {})
	weir.WithTimestamps(orders, func(o revOrder) mtime.Time { return o.TS }, watermark.BoundedOutOfOrderness(0)).
		Versioned(func(o revOrder) int64 { return o.Rev })
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "Versioned: expected a version function, on a Deduplicated stream") {
		t.Errorf("without Deduplicated: %v", err)
	}
}
