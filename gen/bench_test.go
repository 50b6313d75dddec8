package gen

import (
	"io"
	"testing"
)

const benchEvents = 200_000

func benchWriter(b *testing.B, write func(io.Writer, Options) error) {
	b.ReportAllocs()
	for b.Loop() {
		if err := write(io.Discard, Options{Events: benchEvents, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSteep measures Steep: 200,000 lines an op.
func BenchmarkSteep(b *testing.B) { benchWriter(b, Steep) }

// BenchmarkOrders measures Orders: 200,000 lines an op.
func BenchmarkOrders(b *testing.B) { benchWriter(b, Orders) }

// BenchmarkNexmarkJSON measures NexmarkJSON: 200,000 lines an op.
func BenchmarkNexmarkJSON(b *testing.B) { benchWriter(b, NexmarkJSON) }

// BenchmarkNexmarkNext measures the in-process generator: one event an op,
// with no allocation.
func BenchmarkNexmarkNext(b *testing.B) {
	g := NewNexmark(NexmarkConfig{Seed: 1})
	var e NexmarkEvent
	b.ReportAllocs()
	for b.Loop() {
		g.Next(&e)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
