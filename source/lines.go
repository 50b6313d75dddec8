// Package source reads recorded and live streams: JSON lines from files and
// standard input, in arrival order, with the position of every line so that
// a checkpoint can resume exactly after it; and the fields of a record as
// every reader of them sees them (Value, TimeOf).
package source

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"io"
)

// Line is one line of input.
type Line struct {
	Text   []byte // without the line ending; valid as long as the caller keeps it
	No     int64  // 1-based line number
	Offset int64  // byte offset of the line's start
	End    int64  // byte offset just after its line ending
	// Cut, for a line longer than the limit (Lines.SetMaxLine), says so:
	// Text is its first bytes only.
	Cut *Cut
}

// Cut describes a line cut to its first bytes: its whole length and the
// SHA-256 of its bytes, read once, never held.
type Cut struct {
	Length int64
	SHA256 [32]byte
}

// DefaultMaxLine is the longest line a reader holds (16 MiB): longer ones
// are cut, read past, and counted.
const DefaultMaxLine = 16 << 20

// Lines splits a stream into lines without copying them: it reads into large
// chunks that it never reuses, so a line handed out stays valid after later
// calls (and is freed by the garbage collector with its chunk).
type Lines struct {
	r     io.Reader
	size  int
	chunk []byte
	pos   int   // start of unread data
	end   int   // end of data in chunk
	base  int64 // stream offset of chunk[0]
	no    int64
	eof   bool
	err   error
	hold  bool // keep a last line without a line ending back (a followed file)
	max   int  // the longest line held (0: no limit)
	// skipping a line longer than max: its first bytes, the bytes of it
	// read so far, and their hash
	long     []byte
	longLen  int64
	longHash hash.Hash
	longAt   int64 // its offset
	// scratch: the chunk holds nothing handed out, and may be reused
	scratch bool
}

// SetMaxLine makes Next cut lines longer than n bytes to their first n: the
// rest is read past (never held, so memory stays bounded by about n) and the
// line comes with a Cut. 0 is no limit.
func (l *Lines) SetMaxLine(n int) { l.max = n }

// NewLines reads r in chunks of about chunkSize bytes (1 MiB if 0).
// startOffset and startLine position a reader that resumes mid-stream (r
// already positioned at startOffset, startLine lines before it).
func NewLines(r io.Reader, chunkSize int, startOffset, startLine int64) *Lines {
	if chunkSize <= 0 {
		chunkSize = 1 << 20
	}
	return &Lines{r: r, size: chunkSize, base: startOffset, no: startLine}
}

// Next returns the next line. ok is false at the end of the stream or on a
// read error (see Err). A last line without a line ending is returned too.
func (l *Lines) Next() (line Line, ok bool) {
	for {
		if l.long != nil {
			if ln, ok := l.skip(); ok {
				return ln, true
			}
		} else if i := bytes.IndexByte(l.chunk[l.pos:l.end], '\n'); i >= 0 {
			if l.max > 0 && i > l.max {
				l.startLong()
				continue
			}
			return l.take(l.pos+i, l.pos+i+1), true
		} else if l.max > 0 && l.end-l.pos > l.max {
			l.startLong()
			continue
		}
		if l.eof || l.err != nil {
			if l.long != nil {
				if l.hold && l.err == nil {
					return Line{}, false
				}
				return l.endLong(0), true
			}
			if l.pos < l.end && !(l.hold && l.err == nil) {
				return l.take(l.end, l.end), true
			}
			return Line{}, false
		}
		l.fill()
	}
}

// startLong begins reading past a line longer than the limit: its first
// bytes are kept, the rest only hashed and counted.
func (l *Lines) startLong() {
	// The first bytes stay where they are: the chunk is not reused.
	l.long = l.chunk[l.pos : l.pos+l.max : l.pos+l.max]
	l.longHash = sha256.New()
	l.longAt = l.base + int64(l.pos)
	l.longLen = 0
}

// skip reads past the long line in the chunk; it returns it once its end
// is there.
func (l *Lines) skip() (Line, bool) {
	data := l.chunk[l.pos:l.end]
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		l.longHash.Write(data[:i])
		l.longLen += int64(i)
		l.pos += i + 1
		return l.endLong(1), true
	}
	l.longHash.Write(data)
	l.longLen += int64(len(data))
	l.pos = l.end
	return Line{}, false
}

// endLong returns the long line, ended by a line ending of n bytes.
func (l *Lines) endLong(n int) Line {
	cut := &Cut{Length: l.longLen}
	l.longHash.Sum(cut.SHA256[:0])
	l.no++
	ln := Line{Text: l.long, No: l.no, Offset: l.longAt, End: l.base + int64(l.pos), Cut: cut}
	l.long, l.longHash = nil, nil
	// What follows the line in the chunk is handed out from now on.
	l.scratch = false
	return ln
}

// Offset is the byte offset after the last line returned: where a reader
// resuming after it starts.
func (l *Lines) Offset() int64 { return l.base + int64(l.pos) }

// ReadOffset is the byte offset up to which the input has been read.
func (l *Lines) ReadOffset() int64 { return l.base + int64(l.end) }

// HoldPartial makes Next keep a last line without a line ending back at the
// end of the input, instead of returning it: in a file that is still being
// written, the rest of the line may come.
func (l *Lines) HoldPartial(hold bool) { l.hold = hold }

// AtEOF reports whether the reader has reported the end of its input.
func (l *Lines) AtEOF() bool { return l.eof }

// Continue makes Next read again after the end of the input: a followed file
// that has grown.
func (l *Lines) Continue() { l.eof = false }

// Held is the number of bytes read but not returned yet: a partial line held
// back.
func (l *Lines) Held() int {
	if l.long != nil {
		return int(l.longLen) + l.end - l.pos + 1
	}
	return l.end - l.pos
}

// Reset makes l read r from its start: a followed file that was rotated or
// truncated. Line numbers go on.
func (l *Lines) Reset(r io.Reader) {
	l.r, l.chunk, l.pos, l.end, l.base, l.eof, l.err = r, nil, 0, 0, 0, false, nil
	l.long, l.longHash, l.scratch = nil, nil, false
}

func (l *Lines) take(stop, next int) Line {
	text := l.chunk[l.pos:stop:stop]
	if n := len(text); n > 0 && text[n-1] == '\r' {
		text = text[:n-1]
	}
	l.no++
	ln := Line{Text: text, No: l.no, Offset: l.base + int64(l.pos), End: l.base + int64(next)}
	l.pos = next
	return ln
}

// Buffered reports whether a whole line is already read and waiting, so that
// the next Next will not block on the reader.
func (l *Lines) Buffered() bool {
	return bytes.IndexByte(l.chunk[l.pos:l.end], '\n') >= 0 || ((l.eof || l.err != nil) && l.pos < l.end && !l.hold)
}

func (l *Lines) fill() {
	if l.long != nil && l.pos == l.end {
		// Reading past a long line: into a chunk of its own, reused, since
		// nothing in it is handed out (earlier lines may point into the
		// one before).
		l.base += int64(l.end)
		if !l.scratch {
			l.chunk, l.scratch = make([]byte, l.size), true
		}
		l.pos, l.end = 0, 0
	}
	rest := l.end - l.pos
	if l.chunk == nil || l.end == len(l.chunk) {
		// A new chunk: earlier lines keep pointing into the old one.
		size := l.size
		if rest*2 > size {
			size = rest * 2
		}
		if l.max > 0 && size > l.max+l.size {
			// Enough to see that a line is longer than the limit.
			size = l.max + l.size
		}
		c := make([]byte, size)
		copy(c, l.chunk[l.pos:l.end])
		l.base += int64(l.pos)
		l.chunk, l.pos, l.end = c, 0, rest
	}
	n, err := l.r.Read(l.chunk[l.end:])
	l.end += n
	if err == io.EOF {
		l.eof = true
	} else if err != nil {
		l.err = err
	}
}

// Err is the first read error, if any (io.EOF is not an error).
func (l *Lines) Err() error { return l.err }
