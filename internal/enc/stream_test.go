package enc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// items are n items of a string each, some larger than a chunk, as a
// count and the items.
func items(n int) ([]byte, []string) {
	var want []string
	b := AppendUvarint(nil, uint64(n))
	for i := range n {
		s := fmt.Sprintf("item %d ", i)
		switch i % 97 {
		case 0:
			s += strings.Repeat("x", 3*streamChunk+i) // larger than a chunk
		case 1:
			s += strings.Repeat("y", 5000)
		}
		want = append(want, s)
		b = AppendString(b, s)
	}
	return b, want
}

// ReadItems reads every item, those larger than a chunk and those across
// chunks, from a reader that hands out a few bytes at a time, as a Decoder
// reads them from memory.
func TestReadItems(t *testing.T) {
	for _, n := range []int{0, 1, 2, 300} {
		b, want := items(n)
		for name, r := range map[string]io.Reader{"whole": bytes.NewReader(b), "halves": iotest.HalfReader(bytes.NewReader(b)), "data errors": iotest.DataErrReader(bytes.NewReader(b))} {
			var got []string
			err := ReadItems(r, func(d *Decoder) {
				s := d.String()
				if d.Err() == nil {
					got = append(got, s)
				}
			})
			if err != nil || len(got) != len(want) {
				t.Fatalf("%d items, %s: %d read, %v", n, name, len(got), err)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%d items, %s: item %d is %.20q…, want %.20q…", n, name, i, got[i], want[i])
				}
			}
		}
	}
}

// What does not decode is corrupt: an item cut short, bytes after the
// last item, a count with no items, items that take no bytes (a count
// that would loop for ever); and a reader's error is returned.
func TestReadItemsCorrupt(t *testing.T) {
	b, _ := items(100)
	read := func(r io.Reader) error { return ReadItems(r, func(d *Decoder) { _ = d.Bytes() }) }
	for name, in := range map[string][]byte{
		"cut short":        b[:len(b)-1],
		"cut in the count": {0x80},
		"a byte after":     append(append([]byte(nil), b...), 0),
		"no items":         AppendUvarint(nil, 3),
		"empty":            nil,
	} {
		if err := read(bytes.NewReader(in)); err != ErrCorrupt {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if err := ReadItems(bytes.NewReader(AppendUvarint(nil, 1<<62)), func(*Decoder) {}); err != ErrCorrupt {
		t.Errorf("items of no bytes: %v, want ErrCorrupt", err)
	}
	broken := errors.New("the disk is gone")
	if err := read(io.MultiReader(bytes.NewReader(b[:len(b)/2]), iotest.ErrReader(broken))); !errors.Is(err, broken) {
		t.Errorf("a reader that fails: %v", err)
	}
}
