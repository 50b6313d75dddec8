package exec

import (
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/window"
)

// FuzzRestore: any bytes given as an operator snapshot restore or fail with
// an error, never a panic; an operator that restores can take a
// snapshot.
func FuzzRestore(f *testing.F) {
	s := window.NewStrategy(window.SessionWindows(2 * time.Second)).WithLateness(time.Minute).WithMode(window.Retracting)
	op := NewWindowOp[string](s, aggregate.Count[int]())
	for i, e := range []int64{1000, 1500, 9000, 400} {
		op.Event(uint64(i+1), "k", mtime.Time(e), mtime.Time(e), 1)
	}
	snap, err := op.Snapshot(nil, countCodec{}, hashKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(snap)
	f.Add([]byte{snapshotVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := []*WindowOp[string, int, int64, int64]{NewWindowOp[string](s, aggregate.Count[int]()), NewWindowOp[string](s, aggregate.Count[int]())}
		if _, err := Restore(ops, [][]byte{data}, nil, countCodec{}, RestoreOptions{}); err != nil {
			return
		}
		for _, op := range ops {
			if _, err := op.Snapshot(nil, countCodec{}, hashKey); err != nil {
				t.Errorf("a restored operator does not snapshot: %v", err)
			}
		}
	})
}

type countCodec struct{}

func (countCodec) AppendKey(b []byte, k string) []byte { return enc.AppendString(b, k) }
func (countCodec) ReadKey(d *enc.Decoder) string       { return d.String() }
func (countCodec) AppendAcc(b []byte, a int64) []byte  { return enc.AppendVarint(b, a) }
func (countCodec) ReadAcc(d *enc.Decoder) int64        { return d.Varint() }
func (countCodec) AppendOut(b []byte, o int64) []byte  { return enc.AppendVarint(b, o) }
func (countCodec) ReadOut(d *enc.Decoder) int64        { return d.Varint() }

func hashKey(k string) uint64 { return uint64(len(k)) * 7 }
