package source

import (
	"bytes"
	"crypto/sha256"
	"io"
	"runtime"
	"strings"
	"testing"
)

// A line longer than the limit is cut to its first bytes, read past without
// being held, and comes with its whole length and checksum; the lines around
// it are intact, whatever the chunks' boundaries.
func TestLongLinesAreCut(t *testing.T) {
	long := strings.Repeat("x", 1000)
	for _, chunk := range []int{7, 64, 100, 1 << 20} {
		in := "a\n" + long + "\nb\n" + long + "y" // the last without its end
		l := NewLines(strings.NewReader(in), chunk, 0, 0)
		l.SetMaxLine(100)
		var got []string
		for {
			ln, ok := l.Next()
			if !ok {
				break
			}
			s := string(ln.Text)
			if ln.Cut != nil {
				s = s[:3] + "..."
				if want := sha256.Sum256([]byte(strings.TrimSuffix(in[ln.Offset:ln.End], "\n"))); ln.Cut.SHA256 != want || len(ln.Text) != 100 {
					t.Errorf("chunk %d: line %d: cut %d bytes of %d, checksum %x", chunk, ln.No, len(ln.Text), ln.Cut.Length, ln.Cut.SHA256[:4])
				}
				s += strings.Repeat("", int(ln.Cut.Length)) + string(rune('0'+ln.Cut.Length/1000))
			}
			got = append(got, s)
		}
		if strings.Join(got, "|") != "a|xxx...1|b|xxx...1" {
			t.Errorf("chunk %d: %q", chunk, got)
		}
		if l.Offset() != int64(len(in)) {
			t.Errorf("chunk %d: offset %d, want %d", chunk, l.Offset(), len(in))
		}
	}
}

// zeros is a run of NUL bytes with no line ending: a log zero-filled after
// a power loss.
type zeros struct{ n int }

func (z *zeros) Read(b []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	n := min(len(b), z.n)
	clear(b[:n])
	z.n -= n
	return n, nil
}

// A 256 MiB line costs a few times the limit in memory (the chunks that
// grew to see it was longer), not its size.
func TestLongLineMemory(t *testing.T) {
	l := NewLines(&zeros{n: 256 << 20}, 0, 0, 0)
	l.SetMaxLine(16 << 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ln, ok := l.Next()
	runtime.ReadMemStats(&after)
	if !ok || ln.Cut == nil || ln.Cut.Length != 256<<20 || len(ln.Text) != 16<<20 || !bytes.Equal(ln.Text[:4], []byte{0, 0, 0, 0}) {
		t.Fatalf("ok %v, cut %+v, %d bytes kept", ok, ln.Cut, len(ln.Text))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*16<<20 {
		t.Errorf("reading a 256 MiB line allocated %d MiB", grew>>20)
	}
	if _, ok := l.Next(); ok {
		t.Error("a line after the end")
	}
}
