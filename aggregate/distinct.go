package aggregate

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/axiomhq/hyperloglog"
	"github.com/cespare/xxhash/v2"
)

// DistinctExact is the most distinct values a Distinct counts exactly (by
// their 64-bit hashes), in 8 bytes each. Past it, it holds a HyperLogLog of
// precision DistinctPrecision.
const DistinctExact = 1024

// DistinctPrecision is the precision of a Distinct's HyperLogLog: 2^14
// registers of a byte (16 KiB), a standard error of 1.04/√16384, about
// 0.81%.
const DistinctPrecision = 14

// Distinct is the accumulator of ApproxCountDistinct: the 64-bit hashes
// (xxHash) of the values, sorted, up to DistinctExact of them, then a
// HyperLogLog (LogLog-Beta, axiomhq/hyperloglog) of precision
// DistinctPrecision that they go into. Its memory is fixed: at most 16
// KiB. Its state depends only on the set of values added, never on their
// order, on merges, on when it was counted or on its checkpoints: the
// HyperLogLog's own sparse form does, so it is not used.
type Distinct struct {
	small []uint64
	dense *hyperloglog.Sketch
}

// NewDistinct returns an empty Distinct.
func NewDistinct() *Distinct { return &Distinct{} }

// Insert adds a value, given by its bytes.
func (d *Distinct) Insert(v []byte) { d.InsertHash(xxhash.Sum64(v)) }

// InsertString adds a value, given by its bytes, without copying them.
func (d *Distinct) InsertString(v string) {
	d.Insert(unsafe.Slice(unsafe.StringData(v), len(v)))
}

// InsertHash adds a value by its 64-bit hash.
func (d *Distinct) InsertHash(h uint64) {
	if d.dense != nil {
		d.dense.InsertHash(h)
		return
	}
	i, found := slices.BinarySearch(d.small, h)
	if found {
		return
	}
	if len(d.small) == DistinctExact {
		d.toDense()
		d.dense.InsertHash(h)
		return
	}
	d.small = slices.Insert(d.small, i, h)
}

// toDense moves the hashes into a HyperLogLog.
func (d *Distinct) toDense() {
	d.dense = hyperloglog.NewNoSparse()
	for _, h := range d.small {
		d.dense.InsertHash(h)
	}
	d.small = nil
}

// Merge adds the values of o to d; o is unchanged.
func (d *Distinct) Merge(o *Distinct) {
	switch {
	case o == nil:
	case o.dense != nil:
		if d.dense == nil {
			small := d.small
			d.dense, d.small = o.dense.Clone(), nil
			for _, h := range small {
				d.dense.InsertHash(h)
			}
			return
		}
		d.dense.Merge(o.dense) // no error: one precision
	default:
		for _, h := range o.small {
			d.InsertHash(h)
		}
	}
}

// Copy returns a Distinct of the same values that shares nothing with d.
func (d *Distinct) Copy() *Distinct {
	c := &Distinct{small: slices.Clone(d.small)}
	if d.dense != nil {
		c.dense = d.dense.Clone()
	}
	return c
}

// Estimate is the number of distinct values added: exact up to
// DistinctExact (but for values whose hashes collide), then within the
// HyperLogLog's error.
func (d *Distinct) Estimate() int64 {
	if d == nil {
		return 0
	}
	if d.dense != nil {
		return int64(d.dense.Estimate()) // a dense sketch's estimate changes nothing
	}
	return int64(len(d.small))
}

// Bytes is the memory d holds, roughly.
func (d *Distinct) Bytes() int {
	if d.dense != nil {
		return 1 << DistinctPrecision
	}
	return 8 * cap(d.small)
}

// AppendBinary appends the encoding of d: 0 and its hashes, or 1 and the
// HyperLogLog's.
func (d *Distinct) AppendBinary(b []byte) ([]byte, error) {
	if d.dense != nil {
		return d.dense.AppendBinary(append(b, 1))
	}
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(len(d.small)))
	for _, h := range d.small {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return b, nil
}

var errDistinct = errors.New("aggregate: not the encoding of a distinct count")

// UnmarshalBinary sets d to what AppendBinary encoded in b.
func (d *Distinct) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		return errDistinct
	}
	switch b[0] {
	case 0:
		n, m := binary.Uvarint(b[1:])
		if m <= 0 || n > DistinctExact || uint64(len(b)-1-m) != 8*n {
			return errDistinct
		}
		small := make([]uint64, n)
		for i := range small {
			small[i] = binary.LittleEndian.Uint64(b[1+m+8*i:])
			if i > 0 && small[i] <= small[i-1] {
				return errDistinct
			}
		}
		d.small, d.dense = small, nil
		return nil
	case 1:
		s := hyperloglog.NewNoSparse()
		if err := s.UnmarshalBinary(b[1:]); err != nil {
			return fmt.Errorf("%w: %w", errDistinct, err)
		}
		d.small, d.dense = nil, s
		return nil
	}
	return errDistinct
}

// MarshalJSON encodes d as the base64 of AppendBinary.
func (d *Distinct) MarshalJSON() ([]byte, error) {
	b, err := d.AppendBinary(nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (d *Distinct) UnmarshalJSON(data []byte) error {
	var b []byte
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("aggregate: a distinct count: %w", err)
	}
	return d.UnmarshalBinary(b)
}

// ApproxCountDistinct estimates the number of distinct values of f among
// the events, in fixed memory (see Distinct): exactly up to DistinctExact
// of them, then with a standard error of about 0.81%.
func ApproxCountDistinct[T any](f func(T) string) Func[T, *Distinct, int64] {
	return approxDistinct[T]{f}
}

type approxDistinct[T any] struct{ f func(T) string }

func (approxDistinct[T]) New() *Distinct { return NewDistinct() }
func (a approxDistinct[T]) Add(acc *Distinct, v T) *Distinct {
	acc.InsertString(a.f(v))
	return acc
}
func (approxDistinct[T]) Merge(a, b *Distinct) *Distinct {
	a.Merge(b)
	return a
}
func (approxDistinct[T]) Result(acc *Distinct) int64 { return acc.Estimate() }
