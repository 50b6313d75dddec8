package weir_test

import (
	"context"
	"io"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// clockless is a source of n records that knows no arrival times.
type clockless struct{ n, next int }

func (s *clockless) Open(context.Context, []byte) error { return nil }

func (s *clockless) Read(_ context.Context, b *connector.Batch) error {
	if s.next == 0 {
		b.Partitions = []connector.Partition{{Name: "p"}}
	}
	for ; s.next < s.n && len(b.Records) < 100; s.next++ {
		b.Records = append(b.Records, connector.Record{Value: []byte("x"), Offset: int64(s.next + 1), Arrival: mtime.MinTime})
	}
	if s.next == s.n {
		return io.EOF
	}
	return nil
}

func (s *clockless) Close() error { return nil }

// Ingestion time in Go, as a job file's time: {ingestion: true}: decode
// sees each record's arrival, the engine's clock when the source knows
// none, and an element that keeps it is timestamped by it.
func TestReadGivesDecodeTheArrival(t *testing.T) {
	before := mtime.Now()
	p := weir.NewPipeline()
	arrivals, _ := weir.Read(p, "records", &clockless{n: 1000}, func(r connector.Record) (mtime.Time, error) { return r.Arrival, nil })
	var seen []mtime.Time
	weir.Sink(arrivals, func(at mtime.Time) error { seen = append(seen, at); return nil })
	stamped := weir.WithTimestamps(arrivals, func(at mtime.Time) mtime.Time { return at }, watermark.BoundedOutOfOrderness(0))
	counts, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(mtime.Time) string { return "all" }),
		window.NewStrategy(window.GlobalWindows())), aggregate.Count[mtime.Time]())
	total := 0
	weir.Sink(counts, func(p weir.Pane[string, int64]) error { total = int(p.Value); return nil })
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := mtime.Now()
	if len(seen) != 1000 || total != 1000 {
		t.Fatalf("%d records decoded, %d counted; want 1000", len(seen), total)
	}
	for i, at := range seen {
		if at < before || at > after || i > 0 && at < seen[i-1] {
			t.Fatalf("record %d arrived at %v: not between %v and %v, or before the record ahead of it", i, at, before, after)
		}
	}
}
