package file

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/vfs"
)

// Encoder appends the text of one item, its line ending included, to b.
type Encoder[T any] func(b []byte, v T) []byte

// Sink writes items as lines to a file.
//
// Exactly-once (a job with checkpoints): what is written between two
// checkpoints is kept in memory and handed to the checkpoint at the barrier
// (PreCommit); once the checkpoint is durable Commit appends it to the file
// at the offset the checkpoint recorded, and syncs. So the file only ever
// holds the output of complete checkpoints; after a crash, Open cuts it back
// to what the restored checkpoint had committed and the engine commits that
// checkpoint's output again (writing the same bytes at the same place).
//
// Plain (no checkpoints): lines go through a buffer to the file; Flush makes
// them visible.
//
// A file that exists when a job starts afresh is replaced only if it looks
// like weir's output (empty, or starting with a JSON object): weir does not
// overwrite a file it did not write.
type Sink[T any] struct {
	Path   string
	Encode Encoder[T]
	// ExactlyOnce selects the transactional mode.
	ExactlyOnce bool
	// FS is the file system the file is written through (nil: the real
	// one; tests crash a file system in memory).
	FS vfs.FS

	f   vfs.File
	w   *bufio.Writer
	buf []byte
	// pending is the output since the last barrier (exactly once), in
	// chunks of about pendingChunk bytes: a buffer that grew by appending
	// would copy itself over and over (Go grows large slices by a quarter).
	pending [][]byte
	size    int      // bytes in pending
	spare   [][]byte // chunks to reuse
	mu      sync.Mutex
	end     int64 // offset after every pre-committed (or restored and committed) byte
}

// Guarantee implements connector.Sink.
func (s *Sink[T]) Guarantee() connector.Guarantee {
	if s.ExactlyOnce {
		return connector.ExactlyOnce
	}
	return connector.AtLeastOnce
}

// Open implements connector.Sink.
func (s *Sink[T]) Open(ctx context.Context, restored []byte) error {
	if s.FS == nil {
		s.FS = vfs.OS
	}
	if restored == nil {
		if err := checkReplace(s.FS, s.Path); err != nil {
			return err
		}
		f, err := s.FS.OpenFile(s.Path, os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return err
		}
		// The file's existence is durable before anything is committed
		// to it.
		if err := s.FS.SyncDir(filepath.Dir(s.Path)); err != nil {
			f.Close()
			return err
		}
		s.f = f
		if !s.ExactlyOnce {
			s.w = bufio.NewWriterSize(&writerAt{f: f}, 256<<10)
		}
		return nil
	}
	if !s.ExactlyOnce {
		return errors.New("a plain file sink cannot be restored")
	}
	off, _, err := decodePre(restored)
	if err != nil {
		return fmt.Errorf("the checkpoint's record of %s is corrupt: %w", s.Path, err)
	}
	f, err := s.FS.OpenFile(s.Path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &DamagedError{Path: s.Path, Want: off, Missing: true}
		}
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if st.Size() < off {
		f.Close()
		return &DamagedError{Path: s.Path, Want: off, Have: st.Size()}
	}
	if st.Size() > off {
		// Output of checkpoints that did not complete.
		if err := f.Truncate(off); err != nil {
			f.Close()
			return err
		}
	}
	s.f, s.end = f, off
	return nil
}

// writerAt appends to a file through WriteAt.
type writerAt struct {
	f   vfs.File
	off int64
}

func (w *writerAt) Write(b []byte) (int, error) {
	n, err := w.f.WriteAt(b, w.off)
	w.off += int64(n)
	return n, err
}

// DamagedError is an output file that no longer holds what the checkpoint
// the job resumes from had committed: truncated, replaced or deleted since.
// weir refuses to go on: appending would leave a hole in the output.
type DamagedError struct {
	Path    string
	Want    int64 // bytes committed
	Have    int64
	Missing bool
}

func (e *DamagedError) Error() string {
	what := fmt.Sprintf("holds %d bytes, fewer than the %d the checkpoint had committed: it was truncated or replaced", e.Have, e.Want)
	if e.Missing {
		what = fmt.Sprintf("is gone, but the checkpoint had committed %d bytes to it: it was deleted or moved", e.Want)
	}
	return fmt.Sprintf("%s %s since the job last ran; weir will not write after a hole. Put the file back, or, to start over from the beginning, move the checkpoint directory away", e.Path, what)
}

// CheckReplace reports an error if path exists and does not look like
// weir's output (a file that is empty or starts with a JSON object): a job
// starting afresh would replace it.
func CheckReplace(path string) error { return checkReplace(vfs.OS, path) }

func checkReplace(fsys vfs.FS, path string) error {
	st, err := fsys.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", path)
	}
	if st.Size() == 0 {
		return nil
	}
	var head []byte
	if fsys == vfs.OS {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		head = make([]byte, 512)
		n, _ := io.ReadFull(f, head)
		head = head[:n]
	} else if head, err = fsys.ReadFile(path); err != nil {
		return err
	}
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return nil
	}
	return fmt.Errorf("%s exists and does not look like weir's output (it does not start with a JSON object): weir will not overwrite a file it did not write; choose another path or remove it", path)
}

// Write implements connector.Sink.
func (s *Sink[T]) Write(ctx context.Context, items []T) error {
	if s.ExactlyOnce {
		for i := range items {
			n := len(s.pending) - 1
			if n < 0 || cap(s.pending[n])-len(s.pending[n]) < pendingRoom {
				s.pending = append(s.pending, s.chunk())
				n++
			}
			l := len(s.pending[n])
			s.pending[n] = s.Encode(s.pending[n], items[i])
			s.size += len(s.pending[n]) - l
		}
		return nil
	}
	b := s.buf[:0]
	for i := range items {
		b = s.Encode(b, items[i])
	}
	s.buf = b[:0]
	_, err := s.w.Write(b)
	return err
}

// A chunk of pending output holds pendingChunk bytes; a new one is started
// when less than pendingRoom is left (an item that needs more grows its
// chunk).
const (
	pendingChunk = 1 << 20
	pendingRoom  = 16 << 10
)

func (s *Sink[T]) chunk() []byte {
	if n := len(s.spare); n > 0 {
		c := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return c
	}
	return make([]byte, 0, pendingChunk)
}

// Flush implements connector.Sink.
func (s *Sink[T]) Flush(ctx context.Context) error {
	if s.w == nil {
		return nil
	}
	return s.w.Flush()
}

// PreCommit implements connector.Sink: the output since the last barrier,
// with the offset it goes to.
func (s *Sink[T]) PreCommit(ctx context.Context, checkpoint uint64) ([]byte, error) {
	if !s.ExactlyOnce {
		return nil, s.Flush(ctx)
	}
	s.mu.Lock()
	pre := enc.AppendVarint(make([]byte, 0, binary.MaxVarintLen64+s.size), s.end)
	s.end += int64(s.size)
	s.mu.Unlock()
	for _, c := range s.pending {
		pre = append(pre, c...)
		if cap(c) == pendingChunk && len(s.spare) < 64 {
			s.spare = append(s.spare, c[:0])
		}
	}
	clear(s.pending)
	s.pending, s.size = s.pending[:0], 0
	return pre, nil
}

func decodePre(pre []byte) (off int64, data []byte, err error) {
	d := enc.NewDecoder(pre)
	off = d.Varint()
	if d.Err() != nil || off < 0 {
		return 0, nil, enc.ErrCorrupt
	}
	return off, pre[len(pre)-d.Len():], nil
}

// Commit implements connector.Sink: the pre-committed output is written at
// its offset and synced; done twice, it writes the same bytes at the same
// place.
func (s *Sink[T]) Commit(ctx context.Context, checkpoint uint64, pre []byte) error {
	off, data, err := decodePre(pre)
	if err != nil {
		return err
	}
	// After a restore, the checkpoint's pre-commits are committed again
	// before anything is written: what comes next goes after them.
	s.mu.Lock()
	s.end = max(s.end, off+int64(len(data)))
	s.mu.Unlock()
	if len(data) == 0 {
		return nil
	}
	if _, err := s.f.WriteAt(data, off); err != nil {
		return err
	}
	return s.f.Sync()
}

// Close implements connector.Sink.
func (s *Sink[T]) Close() error {
	if s.f == nil {
		return nil
	}
	var err error
	if s.w != nil {
		err = s.w.Flush()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	return err
}

// Writer is a sink of lines to a stream, such as standard output: at least
// once (a job with checkpoints may write output again after a restart, and
// refuses it unless it says so).
type Writer[T any] struct {
	W      io.Writer
	Encode Encoder[T]

	w   *bufio.Writer
	buf []byte
}

// Guarantee implements connector.Sink.
func (w *Writer[T]) Guarantee() connector.Guarantee { return connector.AtLeastOnce }

// Open implements connector.Sink.
func (w *Writer[T]) Open(ctx context.Context, restored []byte) error {
	w.w = bufio.NewWriterSize(w.W, 64<<10)
	return nil
}

// Write implements connector.Sink.
func (w *Writer[T]) Write(ctx context.Context, items []T) error {
	b := w.buf[:0]
	for i := range items {
		b = w.Encode(b, items[i])
	}
	w.buf = b[:0]
	_, err := w.w.Write(b)
	return err
}

// Flush implements connector.Sink.
func (w *Writer[T]) Flush(ctx context.Context) error { return w.w.Flush() }

// PreCommit implements connector.Sink: it flushes.
func (w *Writer[T]) PreCommit(ctx context.Context, checkpoint uint64) ([]byte, error) {
	return nil, w.w.Flush()
}

// Commit implements connector.Sink; the output is out already.
func (w *Writer[T]) Commit(ctx context.Context, checkpoint uint64, pre []byte) error { return nil }

// Close implements connector.Sink: it flushes.
func (w *Writer[T]) Close() error {
	if w.w == nil {
		return nil
	}
	return w.w.Flush()
}
