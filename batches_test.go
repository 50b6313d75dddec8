package weir

import (
	"testing"

	"github.com/weirstream/weir/engine"
)

// A typed source keeps every batch given back, as many as one input can
// have in flight: it dropped those beyond four, and made each anew,
// whenever its sequence ran ahead of the loop.
func TestTypedSourceKeepsItsBatches(t *testing.T) {
	const inFlight = 2*1 + 7 // one input: see engine.FreeBatches
	bs := newBatches[int](nil, &engine.Stream[int]{})
	made := map[*typedBatch[int]]bool{}
	var held []*typedBatch[int]
	for range inFlight {
		b := bs.batch()
		b.steps = append(b.steps, step[int]{v: 1})
		made[b] = true
		held = append(held, b)
	}
	for _, b := range held {
		b.Release()
	}
	for i := range inFlight {
		if b := bs.batch(); !made[b] {
			t.Fatalf("batch %d after %d were given back: a new one", i+1, inFlight)
		} else if len(b.steps) != 0 || cap(b.steps) == 0 {
			t.Fatalf("batch %d: %d steps, capacity %d; want none, its buffer kept", i+1, len(b.steps), cap(b.steps))
		}
	}
}
