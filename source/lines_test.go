package source

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLines(t *testing.T) {
	in := "one\r\ntwo\n\nthree"
	// a tiny chunk size and a reader that returns one byte at a time:
	// lines span chunks and reads
	l := NewLines(iotest.OneByteReader(strings.NewReader(in)), 2, 100, 7)
	var got []Line
	var texts []string
	for {
		ln, ok := l.Next()
		if !ok {
			break
		}
		got = append(got, ln)
		texts = append(texts, string(ln.Text))
	}
	if strings.Join(texts, "|") != "one|two||three" {
		t.Fatalf("lines %q", texts)
	}
	// Earlier lines stay valid: chunks are never reused.
	if string(got[0].Text) != "one" {
		t.Errorf("first line changed to %q", got[0].Text)
	}
	want := []Line{{No: 8, Offset: 100, End: 105}, {No: 9, Offset: 105, End: 109}, {No: 10, Offset: 109, End: 110}, {No: 11, Offset: 110, End: 115}}
	for i, w := range want {
		if got[i].No != w.No || got[i].Offset != w.Offset || got[i].End != w.End {
			t.Errorf("line %d: %+v, want %+v", i, got[i], w)
		}
	}
	if l.Err() != nil {
		t.Error(l.Err())
	}
}

func TestLinesError(t *testing.T) {
	l := NewLines(iotest.DataErrReader(iotest.ErrReader(io.ErrUnexpectedEOF)), 0, 0, 0)
	if _, ok := l.Next(); ok || l.Err() != io.ErrUnexpectedEOF {
		t.Errorf("err = %v", l.Err())
	}
}
