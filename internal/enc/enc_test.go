package enc

import (
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b []byte
	b = AppendUvarint(b, 300)
	b = AppendVarint(b, -5)
	b = AppendString(b, "héllo")
	b = AppendBytes(b, []byte{0, 1, 2})
	b = AppendBool(b, true)
	b = AppendFloat(b, math.Pi)
	d := NewDecoder(b)
	if d.Uvarint() != 300 || d.Varint() != -5 || d.String() != "héllo" || string(d.Bytes()) != "\x00\x01\x02" ||
		!d.Bool() || d.Float() != math.Pi || d.Err() != nil || d.Len() != 0 {
		t.Fatal("round trip failed")
	}
}

func TestCorruptInput(t *testing.T) {
	d := NewDecoder(AppendUvarint(nil, 1<<40))
	if d.Count(1000) != 0 || d.Err() != ErrCorrupt {
		t.Error("a count over its bound was accepted")
	}
	d = NewDecoder([]byte{5, 'a'})
	if d.Bytes() != nil || d.Err() != ErrCorrupt {
		t.Error("a short string was accepted")
	}
	// after the first error every read is zero
	if d.Uvarint() != 0 || d.Bool() || d.Float() != 0 {
		t.Error("reads after an error")
	}
}
