package parquet

import (
	"strconv"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
)

// BenchmarkWrite writes panes of 1,000 keys to Parquet partitioned by date
// and hour, a pre-commit and a commit every 100,000: b.N panes.
func BenchmarkWrite(b *testing.B) {
	s := newTestSink(b, b.TempDir(), true, "date", "hour")
	s.env.Log = nil
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		b.Fatal(err)
	}
	batch := make([]plan.Item, 0, 512)
	for i := range 512 {
		batch = append(batch, pane("card_"+strconv.Itoa(i%1000), at(13, i%60), int64(i), float64(i)/8))
	}
	b.ReportAllocs()
	b.ResetTimer()
	var ckpt uint64
	for n := 0; n < b.N; n += len(batch) {
		if err := s.Write(ctx, batch[:min(len(batch), b.N-n)]); err != nil {
			b.Fatal(err)
		}
		if (n/len(batch))%200 == 199 {
			ckpt++
			pre, err := s.PreCommit(ctx, ckpt)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Commit(ctx, ckpt, pre); err != nil {
				b.Fatal(err)
			}
		}
	}
	ckpt++
	pre, err := s.PreCommit(ctx, ckpt)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Commit(ctx, ckpt, pre); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "panes/s")
}
