package table

import (
	"context"
	"fmt"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// The rows of weir bench's upsert benchmarks: panes of 100,000 keys, each
// key's window getting revisions 1, 2 and 3 before the next window begins,
// 2,000 rows a commit. go test -bench Upsert -cpuprofile profiles the sink
// alone (with SQLite, the database too).
const (
	benchKeys  = 100_000
	benchBatch = 2000
)

var benchSchema = Schema{Table: "panes", Keys: []Column{{"card", Text}}, Values: []Column{{"orders", Integer}, {"amount", Real}}}

func BenchmarkUpsertSQLite(b *testing.B) {
	benchUpsert(b, SQLite(b.TempDir()+"/bench.db", benchSchema, Options{Checkpointed: true}))
}

func BenchmarkUpsertPostgres(b *testing.B) {
	benchUpsert(b, Postgres(pgDSN(b), benchSchema, Options{Checkpointed: true}))
}

// benchUpsert commits b.N rows, 2,000 a commit, and reports rows/s.
func benchUpsert(b *testing.B, k *Sink) {
	ctx := context.Background()
	if err := k.Open(ctx, connector.Resume{}); err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	keys := make([]any, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("card-%06d", i)
	}
	slots := make([][3]any, benchBatch)
	batch := make([]Row, benchBatch)
	b.ResetTimer()
	var n int64
	for id := uint64(1); n < int64(b.N); id++ {
		for j := range batch {
			i := n + int64(j)
			cycle := i / benchKeys
			start := w0 + mtime.Time(cycle/3)*60_000
			rev := cycle%3 + 1
			s := &slots[j]
			s[0], s[1], s[2] = keys[i%benchKeys], i%1000*rev, float64(i%10_000)/4
			batch[j] = Row{Key: s[0:1:1], WindowStart: start, WindowEnd: start + 60_000, Revision: rev,
				Timing: [...]string{"ON_TIME", "LATE", "LATE"}[rev-1], Final: rev == 3, Values: s[1:3:3],
				EmittedAt: start + 60_000 + mtime.Time(rev)*1000}
		}
		if err := k.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		pre, err := k.PreCommit(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Commit(ctx, id, pre); err != nil {
			b.Fatal(err)
		}
		n += benchBatch
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}
