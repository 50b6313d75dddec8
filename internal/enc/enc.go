// Package enc is the binary encoding of weir's checkpoints: varints, byte
// strings and floats appended to a buffer, and a decoder that remembers its
// first error so that a caller checks once at the end.
package enc

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrCorrupt is returned for bytes that do not decode.
var ErrCorrupt = errors.New("enc: corrupt data")

// AppendUvarint appends v.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendVarint appends v.
func AppendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// AppendBytes appends a length-prefixed byte string.
func AppendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendString appends a length-prefixed string.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBool appends a byte 0 or 1.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendFloat appends the IEEE 754 bits of f.
func AppendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// Decoder reads what the Append functions wrote. After the first error every
// read returns a zero value; Err reports it.
type Decoder struct {
	b   []byte
	err error
}

// NewDecoder reads b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Reset makes d read b, as a new Decoder would, without allocating one.
func (d *Decoder) Reset(b []byte) { *d = Decoder{b: b} }

// Err is the first error, if any.
func (d *Decoder) Err() error { return d.err }

// Len is the number of bytes not read yet.
func (d *Decoder) Len() int { return len(d.b) }

// Fail marks the input corrupt: a reader that found a value it cannot use.
func (d *Decoder) Fail() { d.fail() }

func (d *Decoder) fail() {
	if d.err == nil {
		d.err = ErrCorrupt
	}
	d.b = nil
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Varint reads a signed varint.
func (d *Decoder) Varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Count reads an unsigned varint that must be at most max: a small number
// (a version, a kind, a scale) checked against its range.
func (d *Decoder) Count(max int) int {
	v := d.Uvarint()
	if v > uint64(max) {
		d.fail()
		return 0
	}
	return int(v)
}

// Items reads a number of entries that follow, at most max: as every entry
// takes at least a byte, more entries than bytes left is corrupt too, so
// that corrupt data cannot make a reader loop or allocate for long.
func (d *Decoder) Items(max int) int {
	n := d.Count(max)
	if n > len(d.b) {
		d.fail()
		return 0
	}
	return n
}

// Bytes reads a length-prefixed byte string (aliasing the input).
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

// Fixed32Bytes reads a byte string prefixed by a 4-byte little-endian
// length (written in place by a writer that patches the length afterwards).
func (d *Decoder) Fixed32Bytes() []byte {
	if len(d.b) < 4 {
		d.fail()
		return nil
	}
	n := binary.LittleEndian.Uint32(d.b)
	if uint64(n) > uint64(len(d.b)-4) {
		d.fail()
		return nil
	}
	s := d.b[4 : 4+n : 4+n]
	d.b = d.b[4+n:]
	return s
}

// String reads a length-prefixed string.
func (d *Decoder) String() string { return string(d.Bytes()) }

// Bool reads a byte 0 or 1.
func (d *Decoder) Bool() bool {
	if len(d.b) < 1 || d.b[0] > 1 {
		d.fail()
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// Float reads a float64.
func (d *Decoder) Float() float64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}
