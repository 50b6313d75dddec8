package job

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/jobfile"
)

// Every window of every key holds an accumulator: a job's count and sum take
// 72 bytes in it (112 before a slot kept its count and its sum in one field,
// and the accumulator stopped keeping its length and a slice of its extra
// slots).
func TestAccumulatorSize(t *testing.T) {
	if got := unsafe.Sizeof(slot{}); got > 32 {
		t.Errorf("a slot takes %d bytes, more than 32", got)
	}
	if got := unsafe.Sizeof(acc{}); got > 72 {
		t.Errorf("an accumulator takes %d bytes, more than 72", got)
	}
}

// A slot keeps a count and a sum or extreme in one field, but checkpoints
// keep them apart as they always did: the bytes are those of the format,
// and a checkpoint's slots read back, whichever of the two it filled.
func TestCodecKeepsCountsApart(t *testing.T) {
	j := &jobfile.Job{Aggregates: []jobfile.Aggregate{
		{Name: "n", Kind: jobfile.AggCount}, {Name: "s", Kind: jobfile.AggSum}, {Name: "a", Kind: jobfile.AggAvg}, {Name: "m", Kind: jobfile.AggMax},
	}}
	c := newCodec(j)
	a := newAcc(4)
	*a.slot(0) = slot{i: 7}
	*a.slot(1) = slot{i: 12345, scale: 2}
	*a.slot(2) = slot{i: 3, f: 4.5}
	*a.slot(3) = slot{i: -9, has: true, partial: true}
	got := c.AppendAcc(nil, a)

	// The format: the number of slots; each slot's count, its sum or
	// extreme, float, flags, scale, partial, set and state kept in ext
	// (format 4; none for these).
	want := enc.AppendUvarint(nil, 4)
	for _, s := range []struct {
		n, i         int64
		f            float64
		has, partial bool
		scale        int8
	}{{n: 7}, {i: 12345, scale: 2}, {n: 3, f: 4.5}, {i: -9, has: true, partial: true}} {
		want = enc.AppendVarint(want, s.n)
		want = enc.AppendVarint(want, s.i)
		want = enc.AppendFloat(want, s.f)
		want = enc.AppendBool(want, false)
		want = enc.AppendBool(want, s.has)
		want = append(want, byte(s.scale))
		want = enc.AppendBool(want, s.partial)
		want = enc.AppendUvarint(want, 0)
		want = enc.AppendUvarint(want, 0)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendAcc wrote\n%x\nwant\n%x", got, want)
	}
	back := c.ReadAcc(enc.NewDecoder(got))
	for k := range 4 {
		if g, w := *back.slot(k), *a.slot(k); g.i != w.i || g.f != w.f || g.float != w.float || g.has != w.has || g.scale != w.scale || g.partial != w.partial || len(g.set()) != 0 {
			t.Errorf("slot %d read back as %+v, want %+v", k, *back.slot(k), *a.slot(k))
		}
	}
	// A checkpoint of a job of another number of aggregates, read as it
	// is, is corrupt (aggs reads an accumulator's slots without a length).
	short := newCodec(&jobfile.Job{Aggregates: j.Aggregates[:2]})
	d := enc.NewDecoder(got)
	short.ReadAcc(d)
	if d.Err() == nil {
		t.Errorf("an accumulator of 4 slots read by a job of 2: no error")
	}
}

// A sliding window's own accumulator is the zero one (its slices hold its
// values): in a job of more than accInline aggregates it has no slots, and
// a checkpoint holds it as none, which reads back as the zero accumulator,
// also where the restore maps the aggregates of another job.
func TestCodecZeroAccumulator(t *testing.T) {
	j := &jobfile.Job{Aggregates: []jobfile.Aggregate{{Name: "n", Kind: jobfile.AggCount}, {Name: "s", Kind: jobfile.AggSum}, {Name: "m", Kind: jobfile.AggMax}}}
	c := newCodec(j)
	b := c.AppendAcc(nil, acc{})
	if want := enc.AppendUvarint(nil, 0); !bytes.Equal(b, want) {
		t.Fatalf("the zero accumulator is written as %x, want %x", b, want)
	}
	if n := c.SizeAcc(acc{}); n <= 0 {
		t.Errorf("SizeAcc of the zero accumulator: %d", n)
	}
	for _, from := range [][]int{nil, {0, -1, 2}} {
		rc := c
		rc.from = from
		d := enc.NewDecoder(b)
		if a := rc.ReadAcc(d); a.more != nil || d.Err() != nil {
			t.Errorf("from %v: read back with extra slots %v, error %v", from, a.more != nil, d.Err())
		}
	}
}
