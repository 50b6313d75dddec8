// Package file is weir's connector for files and standard input and output:
// a source of JSON lines (a recorded file, a file that grows and rotates, or
// standard input) and a sink that writes JSON lines to a file exactly once at
// each checkpoint, or to standard output.
package file

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
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
// held back until its end comes.
//
// Its position travels in checkpoints: the byte offset and line count, and
// the file's identity (device and inode, and checksums of its first bytes
// and of the bytes before the offset). A restore checks that the file is the
// one the checkpoint read before it seeks back: a recorded file regenerated
// since (other bytes before the offset, or fewer of them) is refused, unless
// AcceptChanged, which reads it from its start. A followed file rotated
// while the job was stopped is found again by its identity in its directory
// (renamed away, or copied away by copytruncate) and read to its end first,
// then the file at the path from its start; if it cannot be found, the
// restore is refused the same way.
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
	// AcceptChanged reads a file that is not the one the restored position
	// was taken in from its start, instead of refusing it.
	AcceptChanged bool
	// Restarted says, after Open, why the file is read from its start
	// although a position was restored (AcceptChanged), or is empty.
	Restarted string

	f     *os.File
	lines *source.Lines
	id    vfs.ID
	line  int64 // lines taken so far
	sent  bool  // partitions announced
	// head is the checksum of the open file's first headBytes bytes, once
	// read that far (headKnown).
	head      uint32
	headKnown bool
	sumBuf    []byte

	lastOffset atomic.Int64 // for Report, from another goroutine
}

// The first headBytes bytes of a file and the tailBytes before the offset
// read identify it, by their checksums.
const headBytes, tailBytes = 4096, 4096

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChangedInputError is an input that is not the file the restored position
// was taken in.
type ChangedInputError struct {
	Path, What string
}

// Error names the file, what differs, and the ways on.
func (e *ChangedInputError) Error() string {
	return fmt.Sprintf("%s is not the file the checkpoint read: %s; weir will not resume in the middle of another file. Put the file back, run with --accept-changed-input to read it from its start, or move the checkpoint directory away to start over", e.Path, e.What)
}

// Open implements connector.Source.
// Recorded implements connector.Recorded: a file that is not followed.
func (s *Source) Recorded() bool { return !s.Follow }

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
	if position != nil && offset > 0 {
		if offset, err = s.resume(pos); err != nil {
			s.f.Close()
			return err
		}
	}
	if offset > 0 {
		if _, err := s.f.Seek(offset, io.SeekStart); err != nil {
			s.f.Close()
			return err
		}
	}
	s.lines = source.NewLines(s.f, 0, offset, s.line)
	s.lines.HoldPartial(s.Follow)
	s.lines.SetMaxLine(source.DefaultMaxLine)
	return nil
}

// resume finds the file the position was taken in, and returns the offset
// to read the open file from: the position's, or 0 when the file is read
// from its start (AcceptChanged).
func (s *Source) resume(pos filePos) (int64, error) {
	why := s.mismatch(s.f, pos)
	if why == "" {
		return pos.offset, nil
	}
	if s.Follow {
		// Rotated while the job was stopped: the rest of the old file
		// first, wherever it went, then the file at the path.
		if old, name := s.findRotated(pos); old != nil {
			s.logf("%s was rotated while the job was stopped; reading the rest of %s, then the new file from its start", s.Path, name)
			oid, err := identify(old)
			if err != nil {
				old.Close()
				return 0, err
			}
			s.f.Close()
			s.f, s.id = old, oid
			return pos.offset, nil
		}
	}
	if pos.version < 2 && s.Follow && pos.id.Known() && s.id != pos.id {
		// A position of an older weir, without checksums: as it did.
		s.logf("%s was replaced while the job was stopped; reading the new file from its start (lines after line %d of the old one, if any were written, are not read)", s.Path, pos.line)
		return 0, nil
	}
	err := &ChangedInputError{Path: s.Path, What: why}
	if !s.AcceptChanged {
		return 0, err
	}
	s.Restarted = err.What
	s.logf("%s is not the file the checkpoint read (%s): reading it from its start, as --accept-changed-input asks", s.Path, why)
	return 0, nil
}

// mismatch says how the open file f differs from the one pos was taken in,
// or "" if it is the same (as far as its size and checksums tell).
func (s *Source) mismatch(f *os.File, pos filePos) string {
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	if pos.version < 2 {
		if s.Follow && pos.id.Known() && vfs.IDOf(st) != pos.id {
			return "another file is at its path (rotated?)"
		}
		return "" // an older weir's position: nothing more to compare
	}
	if st.Size() < pos.offset {
		return fmt.Sprintf("it holds %d bytes, fewer than the %d read before (truncated or regenerated?)", st.Size(), pos.offset)
	}
	head, tail, err := checksums(f, pos.offset)
	if err != nil {
		return err.Error()
	}
	if head != pos.head {
		return fmt.Sprintf("its first %d bytes are not those read before (regenerated?)", min(pos.offset, headBytes))
	}
	if tail != pos.tail {
		return fmt.Sprintf("its bytes before offset %d are not those read before (regenerated, or truncated and written again?)", pos.offset)
	}
	return ""
}

// checksums are the CRC-32C of the first headBytes bytes of f before
// offset, and of the tailBytes bytes before offset.
func checksums(f io.ReaderAt, offset int64) (head, tail uint32, err error) {
	hn := min(offset, headBytes)
	tn := min(offset, tailBytes)
	buf := make([]byte, max(hn, tn))
	if _, err := f.ReadAt(buf[:hn], 0); err != nil && !(errors.Is(err, io.EOF) && hn == 0) {
		return 0, 0, err
	}
	head = crc32.Checksum(buf[:hn], castagnoli)
	if _, err := f.ReadAt(buf[:tn], offset-tn); err != nil && !(errors.Is(err, io.EOF) && tn == 0) {
		return 0, 0, err
	}
	return head, crc32.Checksum(buf[:tn], castagnoli), nil
}

// tailChecksum is checksums with the head's known, into buf (tailBytes).
func tailChecksum(f io.ReaderAt, offset int64, head uint32, buf []byte) (uint32, uint32, error) {
	n := min(offset, tailBytes)
	buf = buf[:n]
	if _, err := f.ReadAt(buf, offset-n); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return head, 0, err
	}
	return head, crc32.Checksum(buf, castagnoli), nil
}

// findRotated looks in the file's directory for the file pos was taken
// in: renamed away (its device and inode), or copied away (copytruncate:
// its bytes up to the offset). It returns it open, and its name.
func (s *Source) findRotated(pos filePos) (*os.File, string) {
	dir := filepath.Dir(s.Path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ""
	}
	var byContent *os.File
	var byContentName string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if p == s.Path || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() < pos.offset {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if s.mismatch(f, pos) != "" {
			f.Close()
			continue
		}
		if st, err := f.Stat(); err == nil && pos.id.Known() && vfs.IDOf(st) == pos.id {
			if byContent != nil {
				byContent.Close()
			}
			return f, e.Name()
		}
		if byContent == nil {
			byContent, byContentName = f, e.Name()
		} else {
			f.Close()
		}
	}
	return byContent, byContentName
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
			b.Records = append(b.Records, connector.Record{Value: ln.Text, Partition: 0, Offset: ln.No, Arrival: mtime.MinTime, Cut: ln.Cut})
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
		s.f, s.id, s.headKnown = f, nid, false
		s.lines.Reset(f)
		s.lines.HoldPartial(true)
		s.logf("%s was rotated; reading the new file from its start", s.Path)
	case cur.Size() < s.readTo():
		// Truncated in place (copytruncate): start again.
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		s.headKnown = false
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
	p := filePos{offset: off, line: s.line, id: s.id}
	if s.headKnown {
		if s.sumBuf == nil {
			s.sumBuf = make([]byte, tailBytes)
		}
		p.head, p.tail, _ = tailChecksum(s.f, off, s.head, s.sumBuf)
	} else if head, tail, err := checksums(s.f, off); err == nil {
		p.head, p.tail = head, tail
		s.head, s.headKnown = head, off >= headBytes
	}
	return encodePos(p)
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
// of lines before it, which file it was, and (version 2) checksums of the
// file's first bytes and of the bytes before the offset.
type filePos struct {
	version    int
	offset     int64
	line       int64
	id         vfs.ID
	head, tail uint32
}

const posVersion = 2

func encodePos(p filePos) []byte {
	b := []byte{posVersion}
	b = enc.AppendVarint(b, p.offset)
	b = enc.AppendVarint(b, p.line)
	b = enc.AppendUvarint(b, p.id.Dev)
	b = enc.AppendUvarint(b, p.id.Ino)
	b = enc.AppendUvarint(b, uint64(p.head))
	return enc.AppendUvarint(b, uint64(p.tail))
}

func decodePos(b []byte) (filePos, error) {
	d := enc.NewDecoder(b)
	v := d.Count(255)
	if v != 1 && v != posVersion {
		return filePos{}, fmt.Errorf("unknown version %d", v)
	}
	p := filePos{version: v, offset: d.Varint(), line: d.Varint()}
	p.id.Dev, p.id.Ino = d.Uvarint(), d.Uvarint()
	if v >= 2 {
		p.head, p.tail = uint32(d.Uvarint()), uint32(d.Uvarint())
	}
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

// DescribePosition describes a position Source returned, for a person
// (weir savepoint inspect): the lines read before it and its byte offset.
// ok is false for bytes that are not such a position.
func DescribePosition(position []byte) (s string, ok bool) {
	p, err := decodePos(position)
	if err != nil || len(encodePos(p)) != len(position) && p.version == posVersion {
		return "", false
	}
	return fmt.Sprintf("line %d (byte offset %d)", p.line, p.offset), true
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
