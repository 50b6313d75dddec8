package exec

import (
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/window"
)

// cc encodes the state of a count per uint64 key.
type cc struct{}

func (cc) AppendKey(b []byte, k uint64) []byte { return enc.AppendUvarint(b, k) }
func (cc) ReadKey(d *enc.Decoder) uint64       { return d.Uvarint() }
func (cc) AppendAcc(b []byte, a int64) []byte  { return enc.AppendVarint(b, a) }
func (cc) ReadAcc(d *enc.Decoder) int64        { return d.Varint() }
func (cc) AppendOut(b []byte, o int64) []byte  { return enc.AppendVarint(b, o) }
func (cc) ReadOut(d *enc.Decoder) int64        { return d.Varint() }

// BenchmarkSnapshot1M is the full snapshot of an instance holding one window for
// each of a million keys: what a checkpoint stops the operator for.
func BenchmarkSnapshot1M(b *testing.B) {
	op := NewWindowOp[uint64](window.NewStrategy(window.TumblingWindows(time.Minute)), aggregate.Count[struct{}]())
	for i := 0; i < 1_000_000; i++ {
		op.Event(uint64(i), uint64(i), mtime.Time(1_780_000_000_000), 0, struct{}{})
	}
	var buf []byte
	b.ResetTimer()
	for b.Loop() {
		buf, _ = op.Snapshot(buf[:0], cc{}, func(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 })
	}
	b.ReportMetric(float64(len(buf)), "bytes")
}
