// Package file is weir's connector for files and standard input and output:
// a source of JSON lines (a recorded file, a file that grows and rotates, or
// standard input) and a sink that writes JSON lines to a file exactly once at
// each checkpoint, or to standard output.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
	"github.com/weirstream/weir/vfs"
)

// MaxBatch is the most records one Read returns.
const MaxBatch = 1024

// Source reads a file of lines, one record per line (without its line
// ending), in the file's order; a record's Offset is its line number.
//
// A recorded file is read to its end (Follow false). A followed file is read
// as tail -F does: at its end the source waits for more; when the file is
// replaced (rotated: renamed away and created again) it finishes the old one
// and goes on with the new one from its start; when it is truncated in place
// it starts again from the beginning. A last line without a line ending is
// held back until its end comes. Its position (byte offset, line count and
// the file's identity) travels in checkpoints; a restore seeks back to it, or,
// if the file was rotated while the job was stopped, reads the new one from
// its start and says so.
type Source struct {
	// Path is the file.
	Path string
	// Follow keeps reading as the file grows and rotates.
	Follow bool
	// Poll is how often a followed file is looked at while nothing comes
	// (default 10 ms).
	Poll time.Duration
	// Log, when set, receives a line when the file is rotated or truncated.
	Log func(string)

	f     *os.File
	lines *source.Lines
	id    vfs.ID
	line  int64 // lines taken so far
	sent  bool  // partitions announced

	lastOffset atomic.Int64 // for Report, from another goroutine
}

// Open implements connector.Source.
func (s *Source) Open(ctx context.Context, position []byte) error {
	if s.Poll <= 0 {
		s.Poll = 10 * time.Millisecond
	}
	var pos filePos
	if position != nil {
		var err error
		if pos, err = decodePos(position); err != nil {
			return fmt.Errorf("the checkpointed position of %s is corrupt: %w", s.Path, err)
		}
	}
	f, err := os.Open(s.Path)
	if err != nil {
		return err
	}
	id, err := identify(f)
	if err != nil {
		f.Close()
		return err
	}
	s.f, s.id, s.line = f, id, pos.line
	offset := pos.offset
	if position != nil && s.Follow && pos.id.Known() && id != pos.id {
		s.logf("%s was replaced while the job was stopped; reading the new file from its start (lines after line %d of the old one, if any were written, are not read)", s.Path, pos.line)
		offset = 0
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return err
		}
	}
	s.lines = source.NewLines(f, 0, offset, s.line)
	s.lines.HoldPartial(s.Follow)
	return nil
}

func (s *Source) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(fmt.Sprintf(format, args...))
	}
}

// Read implements connector.Source.
func (s *Source) Read(ctx context.Context, b *connector.Batch) error {
	if !s.sent {
		s.sent = true
		b.Partitions = []connector.Partition{{Name: s.Path}}
	}
	var timer *time.Timer
	for {
		for len(b.Records) < MaxBatch {
			ln, ok := s.lines.Next()
			if !ok {
				break
			}
			s.line = ln.No
			b.Records = append(b.Records, connector.Record{Value: ln.Text, Partition: 0, Offset: ln.No, Arrival: mtime.MinTime})
			if !s.lines.Buffered() {
				break
			}
		}
		if err := s.lines.Err(); err != nil {
			return err
		}
		if len(b.Records) > 0 || b.Partitions != nil {
			b.Position = s.position()
			return nil
		}
		if !s.Follow {
			b.Position = s.position()
			return io.EOF
		}
		// At the end of a followed file: look for more, a rotation or a
		// truncation, then wait.
		if err := s.check(); err != nil {
			return err
		}
		if s.lines.AtEOF() {
			if timer == nil {
				timer = time.NewTimer(s.Poll)
				defer timer.Stop()
			} else {
				timer.Reset(s.Poll)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
			}
			s.lines.Continue()
		}
	}
}

// check looks at the followed file's path when the open file has no more.
func (s *Source) check() error {
	st, err := os.Stat(s.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // moved away; wait for the new one
		}
		return err
	}
	cur, err := s.f.Stat()
	if err != nil {
		return err
	}
	id := vfs.IDOf(st)
	switch {
	case id != s.id:
		// Rotated: the open file is read to its end (its last line, even
		// without a line ending, is complete now), then the new one.
		if cur.Size() > s.readTo() {
			return nil
		}
		if s.lines.Held() > 0 {
			s.lines.HoldPartial(false)
			return nil
		}
		f, err := os.Open(s.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		nid, err := identify(f)
		if err != nil {
			f.Close()
			return err
		}
		s.f.Close()
		s.f, s.id = f, nid
		s.lines.Reset(f)
		s.lines.HoldPartial(true)
		s.logf("%s was rotated; reading the new file from its start", s.Path)
	case cur.Size() < s.readTo():
		// Truncated in place (copytruncate): start again.
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		s.lines.Reset(s.f)
		s.logf("%s was truncated; reading it again from its start", s.Path)
	}
	return nil
}

// readTo is the offset up to which the open file has been read.
func (s *Source) readTo() int64 { return s.lines.ReadOffset() }

func (s *Source) position() []byte {
	off := s.lines.Offset()
	s.lastOffset.Store(off)
	return encodePos(filePos{offset: off, line: s.line, id: s.id})
}

// Close implements connector.Source.
func (s *Source) Close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

// Report implements connector.Reporter: how many bytes of the file are
// still to read.
func (s *Source) Report() []connector.PartitionReport {
	r := connector.PartitionReport{Name: s.Path, Backlog: -1}
	if st, err := os.Stat(s.Path); err == nil {
		// An estimate: the reader's position moves while we look.
		r.Backlog = max(0, st.Size()-s.lastOffset.Load())
		r.CaughtUp = r.Backlog == 0
	} else {
		r.Err = err.Error()
	}
	return []connector.PartitionReport{r}
}

// filePos is a position in a file: the offset of the next line, the number
// of lines before it, and which file it was.
type filePos struct {
	offset, line int64
	id           vfs.ID
}

const posVersion = 1

func encodePos(p filePos) []byte {
	b := []byte{posVersion}
	b = enc.AppendVarint(b, p.offset)
	b = enc.AppendVarint(b, p.line)
	b = enc.AppendUvarint(b, p.id.Dev)
	return enc.AppendUvarint(b, p.id.Ino)
}

func decodePos(b []byte) (filePos, error) {
	d := enc.NewDecoder(b)
	if v := d.Count(255); v != posVersion {
		return filePos{}, fmt.Errorf("unknown version %d", v)
	}
	p := filePos{offset: d.Varint(), line: d.Varint()}
	p.id.Dev, p.id.Ino = d.Uvarint(), d.Uvarint()
	if d.Err() != nil || p.offset < 0 || p.line < 0 {
		return filePos{}, enc.ErrCorrupt
	}
	return p, nil
}

func identify(f *os.File) (vfs.ID, error) {
	st, err := f.Stat()
	if err != nil {
		return vfs.ID{}, err
	}
	return vfs.IDOf(st), nil
}

// Line is the number of lines read before a position that Source returned
// (0 for one it cannot read).
func Line(position []byte) int64 {
	p, err := decodePos(position)
	if err != nil {
		return 0
	}
	return p.line
}
