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
// holds the output of complete checkpoints. Every checkpoint also holds the
// sink's mark (Mark): the file's identity and the size and checksums of
// what was committed to it. On restore, Open checks the file against the
// mark (a file replaced, regenerated or cut short is refused) and cuts it
// back to the size the mark recorded, then the engine commits the
// checkpoint's pending output again (the same bytes at the same place).
// Bytes beyond the mark are cut off only when weir can prove it wrote them:
// they are the restored checkpoint's own pending output, or its owner
// record (below) describes them (output of later checkpoints, when an
// older checkpoint or savepoint is restored).
//
// Plain (no checkpoints): lines go through a buffer to the file; Flush makes
// them visible.
//
// Ownership: beside the file, weir keeps a small owner record
// (.NAME.weir: the file's identity and checksums, updated at each commit and
// at Close). A file that exists when a job starts afresh is replaced only if
// it is empty or its owner record says weir wrote it; with Force, any
// regular file is taken over.
type Sink[T any] struct {
	Path   string
	Encode Encoder[T]
	// ExactlyOnce selects the transactional mode.
	ExactlyOnce bool
	// Force takes an existing file over even without proof that weir wrote
	// it (weir run --force).
	Force bool
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
	// The commit side (Open, Commit, Mark, Close): the file's identity and
	// what has been committed to it (written, without checkpoints).
	id        vfs.ID
	committed tracker
}

var (
	_ connector.Marker   = (*Sink[int])(nil)
	_ connector.Holder   = (*Sink[int])(nil)
	_ connector.Rewriter = (*Sink[int])(nil)
	_ connector.Rewriter = (*Writer[int])(nil)
)

// Guarantee implements connector.Sink.
func (s *Sink[T]) Guarantee() connector.Guarantee {
	if s.ExactlyOnce {
		return connector.ExactlyOnce
	}
	return connector.AtLeastOnce
}

// Rewrites implements connector.Rewriter: a run from the beginning
// replaces the file whole.
func (s *Sink[T]) Rewrites() bool { return true }

// Open implements connector.Sink.
func (s *Sink[T]) Open(ctx context.Context, r connector.Resume) error {
	if s.FS == nil {
		s.FS = vfs.OS
	}
	if !r.Resumed() {
		return s.create()
	}
	if !s.ExactlyOnce {
		return errors.New("a plain file sink cannot be restored")
	}
	f, err := s.FS.OpenFile(s.Path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			want := int64(0)
			if m, err := decodeMark(r.Mark); err == nil {
				want = m.Size
			}
			return &DamagedError{Path: s.Path, Want: want, Missing: true}
		}
		return err
	}
	if err := s.resume(f, r); err != nil {
		f.Close()
		return err
	}
	return nil
}

// create opens the file afresh: a new file, or one weir may replace.
func (s *Sink[T]) create() error {
	if err := claim(s.FS, s.Path, s.Force); err != nil {
		return err
	}
	f, err := s.FS.OpenFile(s.Path, os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	id, err := vfs.PathID(s.FS, s.Path)
	if err != nil {
		f.Close()
		return err
	}
	s.f, s.id = f, id
	if err := writeOwner(s.FS, s.Path, s.id, s.committed.span(), nil, nil, false); err != nil {
		f.Close()
		return fmt.Errorf("cannot record that weir writes %s: %w", s.Path, err)
	}
	// The file's existence, and the record that it is weir's, are durable
	// before anything is committed to it.
	if err := s.FS.SyncDir(filepath.Dir(s.Path)); err != nil {
		f.Close()
		return err
	}
	if !s.ExactlyOnce {
		s.w = bufio.NewWriterSize(&writerAt{f: f, t: &s.committed}, 256<<10)
	}
	return nil
}

// resume checks the file against the restored checkpoint's mark and cuts
// it back to what the checkpoint had committed.
func (s *Sink[T]) resume(f vfs.File, r connector.Resume) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	id, err := vfs.PathID(s.FS, s.Path)
	if err != nil {
		return err
	}
	size := st.Size()
	var m mark
	switch {
	case r.Mark != nil:
		if m, err = decodeMark(r.Mark); err != nil {
			return fmt.Errorf("the checkpoint's record of %s is corrupt: %w", s.Path, err)
		}
	case len(r.Pending) > 0:
		// A checkpoint of an older weir, without marks: its first pending
		// output goes where the committed output ended.
		off, _, err := decodePre(r.Pending[0].Data)
		if err != nil {
			return fmt.Errorf("the checkpoint's record of %s is corrupt: %w", s.Path, err)
		}
		if size < off {
			return &DamagedError{Path: s.Path, Want: off, Have: size}
		}
		if m.span, err = spanOf(f, off); err != nil {
			return err
		}
	default:
		return fmt.Errorf("checkpoint %d does not record how much of %s weir had committed (it was written by an older weir): move the checkpoint directory away to start afresh", r.From, s.Path)
	}
	if size < m.Size {
		return &DamagedError{Path: s.Path, Want: m.Size, Have: size}
	}
	got, err := spanOf(f, m.Size)
	if err != nil {
		return err
	}
	switch {
	case got.Head != m.Head:
		return &ChangedError{Path: s.Path, Checkpoint: r.From, What: fmt.Sprintf("its first %d bytes are not those weir wrote", min(m.Size, spanBytes))}
	case got.Tail != m.Tail:
		return &ChangedError{Path: s.Path, Checkpoint: r.From, What: fmt.Sprintf("its bytes before offset %d are not those weir wrote", m.Size)}
	}
	if size > m.Size && !s.Force {
		if ok, err := s.ownBeyond(f, size, id, m.Size, r.Pending); err != nil {
			return err
		} else if !ok {
			return &ForeignError{Path: s.Path, Why: fmt.Sprintf("holds %d bytes after the %d that checkpoint %d had committed, and weir has no record of writing them (appended since the job last ran?)", size-m.Size, m.Size, r.From)}
		}
	}
	if size > m.Size {
		// Output of checkpoints that did not complete, or of later ones
		// (an older checkpoint is restored): it is computed again.
		if err := f.Truncate(m.Size); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := s.committed.reset(f, m.Size); err != nil {
		return err
	}
	s.f, s.id, s.end = f, id, m.Size
	if err := writeOwner(s.FS, s.Path, id, s.committed.span(), nil, nil, false); err != nil {
		return fmt.Errorf("cannot record that weir writes %s: %w", s.Path, err)
	}
	return nil
}

// ownBeyond reports whether the bytes of the file after committed (up to
// size) are weir's: the start of the restored checkpoint's pending output
// (a commit that was under way), or, as the owner record says, the output
// of later checkpoints.
func (s *Sink[T]) ownBeyond(f vfs.File, size int64, id vfs.ID, committed int64, pending []connector.PreCommit) (bool, error) {
	off := committed
	for _, pc := range pending {
		at, data, err := decodePre(pc.Data)
		if err != nil || at != off {
			break
		}
		n := min(int64(len(data)), size-off)
		ok, err := equalAt(f, off, data[:n])
		if err != nil || !ok {
			break
		}
		if off += n; off == size {
			return true, nil
		}
	}
	rec, ok := readOwner(s.FS, s.Path)
	if !ok || (id.Known() && !rec.same(id)) {
		return false, nil
	}
	got, err := spanOf(f, size)
	if err != nil {
		return false, err
	}
	for _, want := range rec.spans() {
		if want == got {
			return true, nil
		}
	}
	// The process was killed in the middle of the last commit's write.
	return rec.tornWrite(f, size)
}

// Mark implements connector.Marker: the file's identity and the span of
// what has been committed to it.
func (s *Sink[T]) Mark() []byte {
	return mark{id: s.id, span: s.committed.span()}.encode()
}

// writerAt appends to a file through WriteAt, following what it wrote.
type writerAt struct {
	f   vfs.File
	off int64
	t   *tracker
}

func (w *writerAt) Write(b []byte) (int, error) {
	n, err := w.f.WriteAt(b, w.off)
	if err != nil {
		// A write cut short (a full disk): the file ends after its last
		// whole line, not in the middle of one, and what weir knows it
		// wrote ends there too (the owner record Close writes says so).
		if end, lerr := lastLineEnd(w.f, w.off+int64(n)); lerr == nil && w.f.Truncate(end) == nil && w.t.reset(w.f, end) == nil {
			w.off = end
			return 0, err
		}
	}
	w.off += int64(n)
	w.t.add(b[:n])
	return n, err
}

// lastLineEnd is the offset after the last line ending before off.
func lastLineEnd(f io.ReaderAt, off int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for off > 0 {
		n := min(off, int64(len(buf)))
		if _, err := f.ReadAt(buf[:n], off-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return off - n + int64(i) + 1, nil
		}
		off -= n
	}
	return 0, nil
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

// ChangedError is an output file that is not the one the checkpoint the
// job resumes from wrote: replaced by another, or edited, since.
type ChangedError struct {
	Path       string
	Checkpoint uint64
	What       string
}

// Error names the file, the checkpoint, what differs, and the way on.
func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s is not the file checkpoint %d wrote: %s (replaced or edited since the job last ran); weir will not cut it back or append to it. Put weir's file back, or, to start over from the beginning, move the checkpoint directory away", e.Path, e.Checkpoint, e.What)
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
	// spareChunks is how many chunks a sink keeps for the next checkpoint's
	// output (8 MiB): more is allocated when needed and let go.
	spareChunks = 8
)

func (s *Sink[T]) chunk() []byte {
	if n := len(s.spare); n > 0 {
		c := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return c
	}
	return make([]byte, 0, pendingChunk)
}

// HeldBytes implements connector.Holder: the output since the last barrier.
func (s *Sink[T]) HeldBytes() int64 { return int64(s.size) }

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
		if cap(c) == pendingChunk && len(s.spare) < spareChunks {
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
	if off == s.committed.size {
		// Where the committed output ends: the owner record announces the
		// bytes before they are written (with the digests of their pages),
		// so that whatever a crash leaves (before them, after them, or in
		// the middle of them) is known to be weir's.
		next := s.committed.clone()
		next.add(data)
		before := s.committed.span()
		if err := writeOwner(s.FS, s.Path, s.id, next.span(), &before, pageDigests(off, data), false); err != nil {
			return fmt.Errorf("cannot record that weir writes %s: %w", s.Path, err)
		}
		if err := s.write(data, off); err != nil {
			return err
		}
		s.committed = next
		return nil
	}
	// A commit run again: the same bytes at the same place.
	if err := s.write(data, off); err != nil {
		return err
	}
	if end := off + int64(len(data)); end > s.committed.size {
		if err := s.committed.reset(s.f, end); err != nil {
			return err
		}
		if err := writeOwner(s.FS, s.Path, s.id, s.committed.span(), nil, nil, false); err != nil {
			return fmt.Errorf("cannot record that weir wrote %s: %w", s.Path, err)
		}
	}
	return nil
}

// write writes a commit's data at off and syncs. A write or sync that
// fails (a full disk) leaves the file as the last commit left it: what it
// wrote beyond is cut off before the error is returned, so that a reader
// never sees a line that no checkpoint committed, and the owner record says
// so again.
func (s *Sink[T]) write(data []byte, off int64) error {
	_, err := s.f.WriteAt(data, off)
	if err == nil {
		err = s.f.Sync()
	}
	if err == nil {
		return nil
	}
	end := max(off, s.committed.size)
	if terr := s.f.Truncate(end); terr != nil {
		return fmt.Errorf("%w; and the bytes written past the last commit (from offset %d) could not be cut off: %v", err, end, terr)
	}
	if serr := s.f.Sync(); serr != nil {
		return fmt.Errorf("%w; and the file cut back to its last commit could not be synced: %v", err, serr)
	}
	if werr := writeOwner(s.FS, s.Path, s.id, s.committed.span(), nil, nil, false); werr != nil {
		return fmt.Errorf("%w; and the record of what weir wrote could not be updated: %v", err, werr)
	}
	return err
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
	if err == nil {
		err = writeOwner(s.FS, s.Path, s.id, s.committed.span(), nil, nil, true)
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

// Rewrites implements connector.Rewriter: a stream such as standard
// output holds nothing a run from the beginning would double.
func (w *Writer[T]) Rewrites() bool { return true }

// Open implements connector.Sink.
func (w *Writer[T]) Open(ctx context.Context, r connector.Resume) error {
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
