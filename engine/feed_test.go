package engine

import (
	"context"
	"testing"

	"github.com/weirstream/weir/connector"
)

// endless is a source whose every read is a record.
type endless struct{}

func (endless) Open(context.Context, []byte) error { return nil }
func (endless) Close() error                       { return nil }
func (endless) Read(_ context.Context, b *connector.Batch) error {
	b.Records = append(b.Records, connector.Record{Value: []byte("x")})
	return nil
}

// A feed keeps every batch given back, as many as one input can have in
// flight: it dropped those beyond four, and made each anew, its buffers
// with it, whenever its reader ran ahead of the loop.
func TestFeedKeepsItsBatches(t *testing.T) {
	const inFlight = 2*1 + 7 // one input: see FreeBatches
	f := newSourceFeed("s", endless{}, nil)
	made := map[FeedBatch]bool{}
	var held []FeedBatch
	for range inFlight {
		b, err := f.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		made[b] = true
		held = append(held, b)
	}
	for _, b := range held {
		b.Release()
	}
	for i := range inFlight {
		b, err := f.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !made[b] {
			t.Fatalf("read %d after %d batches were given back: a new batch", i+1, inFlight)
		}
	}
}
