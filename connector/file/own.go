package file

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/vfs"
)

// spanBytes is how many bytes at each end of what weir committed to a file
// its checksums cover.
const spanBytes = 4096

// span is what weir knows of the bytes it wrote to a file: how many, and
// checksums of the first and the last of them (spanBytes each, at most).
// It tells weir's own file from another one at the same path (replaced,
// regenerated, edited) without reading the file whole.
type span struct {
	Size int64
	Head [16]byte
	Tail [16]byte
}

func digest(b []byte) [16]byte {
	sum := sha256.Sum256(b)
	var d [16]byte
	copy(d[:], sum[:])
	return d
}

// spanOf is the span of the first size bytes of a file.
func spanOf(r io.ReaderAt, size int64) (span, error) {
	sp := span{Size: size}
	head, err := readAt(r, 0, min(size, spanBytes))
	if err != nil {
		return sp, err
	}
	tail, err := readAt(r, size-min(size, spanBytes), min(size, spanBytes))
	if err != nil {
		return sp, err
	}
	sp.Head, sp.Tail = digest(head), digest(tail)
	return sp, nil
}

// readAt reads n bytes at off.
func readAt(r io.ReaderAt, off, n int64) ([]byte, error) {
	b := make([]byte, n)
	got, err := r.ReadAt(b, off)
	if int64(got) == n {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// tracker follows the bytes written to a file, in order, to give their
// span at any time without reading them back.
type tracker struct {
	size int64
	head []byte // the first spanBytes bytes
	tail []byte // the last spanBytes bytes (at most 2*spanBytes kept)
}

func (t *tracker) add(b []byte) {
	t.size += int64(len(b))
	if n := spanBytes - len(t.head); n > 0 {
		t.head = append(t.head, b[:min(n, len(b))]...)
	}
	if len(b) >= spanBytes {
		t.tail = append(t.tail[:0], b[len(b)-spanBytes:]...)
		return
	}
	t.tail = append(t.tail, b...)
	if len(t.tail) > 2*spanBytes {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-spanBytes:]...)
	}
}

// clone is a copy of t that follows writes of its own.
func (t *tracker) clone() tracker {
	return tracker{size: t.size, head: bytes.Clone(t.head), tail: bytes.Clone(t.tail)}
}

func (t *tracker) span() span {
	tail := t.tail[len(t.tail)-min(len(t.tail), spanBytes):]
	return span{Size: t.size, Head: digest(t.head), Tail: digest(tail)}
}

// reset makes t follow a file whose first size bytes are already there.
func (t *tracker) reset(r io.ReaderAt, size int64) error {
	head, err := readAt(r, 0, min(size, spanBytes))
	if err != nil {
		return err
	}
	tail, err := readAt(r, size-min(size, spanBytes), min(size, spanBytes))
	if err != nil {
		return err
	}
	t.size, t.head, t.tail = size, head, tail
	return nil
}

// mark is a file sink's mark in a checkpoint: the file it committed to
// and the span of what it had committed.
type mark struct {
	id vfs.ID
	span
}

const markVersion = 1

func (m mark) encode() []byte {
	b := []byte{markVersion}
	b = enc.AppendUvarint(b, m.id.Dev)
	b = enc.AppendUvarint(b, m.id.Ino)
	b = enc.AppendVarint(b, m.Size)
	b = append(b, m.Head[:]...)
	return append(b, m.Tail[:]...)
}

func decodeMark(b []byte) (mark, error) {
	d := enc.NewDecoder(b)
	if v := d.Count(255); v != markVersion {
		return mark{}, fmt.Errorf("unknown version %d", v)
	}
	m := mark{id: vfs.ID{Dev: d.Uvarint(), Ino: d.Uvarint()}}
	m.Size = d.Varint()
	rest := b[len(b)-d.Len():]
	if d.Err() != nil || m.Size < 0 || len(rest) != 32 {
		return mark{}, enc.ErrCorrupt
	}
	copy(m.Head[:], rest[:16])
	copy(m.Tail[:], rest[16:])
	return m, nil
}

// The owner record is a small file beside each file weir writes (.NAME.weir,
// JSON): the file's identity and the span of what weir wrote to it. It is
// how weir knows, with or without a checkpoint, that a file is its own and
// may be replaced or cut back; a file without one, or that does not match
// it, is never overwritten or truncated.
type ownerRecord struct {
	Note   string `json:"weir"`
	File   string `json:"file"`
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Born   int64  `json:"born,omitempty"`
	Size   int64  `json:"size"`
	Head   string `json:"head_sha256"`
	Tail   string `json:"tail_sha256"`
	Closed bool   `json:"closed,omitempty"`
	// Before is what the file held before the write this record
	// announces (written before the bytes, so that a crash between the two
	// leaves a file that matches one or the other).
	Before *spanRecord `json:"before,omitempty"`
	// Pages are the digests of the announced write's pages (pageDigests,
	// base64): a process killed in the middle of the write leaves the
	// pages it had written, which they prove weir's.
	Pages string `json:"pages,omitempty"`
}

// pageBytes is the granularity at which an owner record proves a write cut
// short. A process killed in the middle of a write leaves what the kernel
// had copied, page by page of the file (Linux stops a write at a page
// boundary when its process is killed); a write cut anywhere else is not
// proven, and the file is refused rather than cut back.
const pageBytes = 4096

// digestBytes is how much of a page's SHA-256 an owner record keeps.
const digestBytes = 8

// pageDigests are the digests of data written at offset off, a page of the
// file each: the first from off to the next page boundary, then whole
// pages, the last up to the end of data.
func pageDigests(off int64, data []byte) []byte {
	out := make([]byte, 0, (len(data)/pageBytes+2)*digestBytes)
	for len(data) > 0 {
		n := min(int64(len(data)), pageBytes-off%pageBytes)
		sum := sha256.Sum256(data[:n])
		out = append(out, sum[:digestBytes]...)
		data, off = data[n:], off+n
	}
	return out
}

// tornWrite reports whether a file of size bytes holds what the record's
// Before span describes followed by a part of the write the record
// announces, cut at a page boundary: what a process killed in the middle
// of that write leaves.
func (r ownerRecord) tornWrite(f io.ReaderAt, size int64) (bool, error) {
	if r.Before == nil || r.Pages == "" {
		return false, nil
	}
	before, ok1 := r.Before.span()
	after, ok2 := r.span()
	pages, err := base64.StdEncoding.DecodeString(r.Pages)
	if !ok1 || !ok2 || err != nil || size <= before.Size || size >= after.Size {
		return false, nil
	}
	if got, err := spanOf(f, before.Size); err != nil || got != before {
		return false, err
	}
	for off := before.Size; off < size; {
		if len(pages) < digestBytes {
			return false, nil
		}
		n := min(after.Size-off, pageBytes-off%pageBytes)
		if off+n > size {
			return false, nil // cut inside a page: not proven
		}
		page, err := readAt(f, off, n)
		if err != nil {
			return false, err
		}
		if sum := sha256.Sum256(page); !bytes.Equal(sum[:digestBytes], pages[:digestBytes]) {
			return false, nil
		}
		pages, off = pages[digestBytes:], off+n
	}
	return true, nil
}

// spanRecord is a span in an owner record.
type spanRecord struct {
	Size int64  `json:"size"`
	Head string `json:"head_sha256"`
	Tail string `json:"tail_sha256"`
}

func (r spanRecord) span() (span, bool) {
	sp := span{Size: r.Size}
	h, err1 := hex.DecodeString(r.Head)
	t, err2 := hex.DecodeString(r.Tail)
	if err1 != nil || err2 != nil || len(h) != 16 || len(t) != 16 {
		return sp, false
	}
	copy(sp.Head[:], h)
	copy(sp.Tail[:], t)
	return sp, true
}

func recordOf(sp span) spanRecord {
	return spanRecord{Size: sp.Size, Head: hex.EncodeToString(sp.Head[:]), Tail: hex.EncodeToString(sp.Tail[:])}
}

const ownerNote = "written by weir beside a file it writes: the file's identity and checksums, so that weir replaces or cuts back only files it wrote"

// OwnerPath is the path of the owner record of the file at path.
func OwnerPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".weir")
}

// same reports whether the record is of the file id: the same device and
// inode, and the same birth time where both know it.
func (r ownerRecord) same(id vfs.ID) bool {
	return sameFile(vfs.ID{Dev: r.Dev, Ino: r.Ino, Born: r.Born}, id)
}

// sameFile reports whether two identities are of one file.
func sameFile(a, b vfs.ID) bool {
	if !a.Known() || !b.Known() || a.Dev != b.Dev || a.Ino != b.Ino {
		return false
	}
	return a.Born == 0 || b.Born == 0 || a.Born == b.Born
}

func (r ownerRecord) span() (span, bool) {
	return spanRecord{Size: r.Size, Head: r.Head, Tail: r.Tail}.span()
}

// spans are the spans the file may have: the one the record announces, and
// the one before the write it announces, if any.
func (r ownerRecord) spans() []span {
	var out []span
	if sp, ok := r.span(); ok {
		out = append(out, sp)
	}
	if r.Before != nil {
		if sp, ok := r.Before.span(); ok {
			out = append(out, sp)
		}
	}
	return out
}

// writeOwner records that weir wrote the file at path, with identity id and
// the span sp. The record replaces the last one atomically (a rename). It
// is made durable with the file's creation (the caller syncs the
// directory); the later ones are not synced: one lost in a crash leaves the
// one before, and makes weir refuse, at worst, a file it could have taken,
// never take one it should not.
//
// before, when set, is what the file holds now: the record announces a
// write that will make it sp, whose pages have the digests pages
// (pageDigests).
func writeOwner(fsys vfs.FS, path string, id vfs.ID, sp span, before *span, pages []byte, closed bool) error {
	r := ownerRecord{Note: ownerNote, File: filepath.Base(path), Dev: id.Dev, Ino: id.Ino, Born: id.Born, Size: sp.Size,
		Head: hex.EncodeToString(sp.Head[:]), Tail: hex.EncodeToString(sp.Tail[:]), Closed: closed}
	if before != nil {
		b := recordOf(*before)
		r.Before = &b
		r.Pages = base64.StdEncoding.EncodeToString(pages)
	}
	data, _ := json.MarshalIndent(r, "", "  ")
	data = append(data, '\n')
	own := OwnerPath(path)
	tmp := own + ".tmp"
	if err := fsys.WriteFile(tmp, data); err != nil {
		return err
	}
	return fsys.Rename(tmp, own)
}

func readOwner(fsys vfs.FS, path string) (ownerRecord, bool) {
	var r ownerRecord
	data, err := fsys.ReadFile(OwnerPath(path))
	if err != nil || json.Unmarshal(data, &r) != nil || r.File != filepath.Base(path) {
		return ownerRecord{}, false
	}
	return r, true
}

// ForeignError is a file weir would replace or cut back but has no proof it
// wrote: weir leaves it as it is.
type ForeignError struct {
	Path string
	Why  string
}

// Error names the file, why weir cannot own it, and the way on.
func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s %s: weir does not overwrite or cut back a file it cannot prove it wrote; choose another path, move the file away, or run with --force to take it over", e.Path, e.Why)
}

// Claim checks that a file weir is about to replace (a job starting
// afresh) is weir's to replace: absent, empty, or described by its owner
// record (same identity, and the bytes weir wrote first still there).
// force takes any regular file over. A nil fsys is the real file system.
func Claim(fsys vfs.FS, path string, force bool) error {
	if fsys == nil {
		fsys = vfs.OS
	}
	return claim(fsys, path, force)
}

func claim(fsys vfs.FS, path string, force bool) error {
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
	if st.Size() == 0 || force {
		return nil
	}
	r, ok := readOwner(fsys, path)
	if !ok {
		return &ForeignError{Path: path, Why: "exists, and weir has no record of writing it"}
	}
	id, err := vfs.PathID(fsys, path)
	if err != nil {
		return err
	}
	if !r.same(id) {
		return &ForeignError{Path: path, Why: "is not the file weir wrote there (another file has taken its place)"}
	}
	// A file weir closed holds exactly what it wrote; one it did not
	// close (the job stopped or crashed) at least what it recorded before
	// its last write.
	spans := r.spans()
	if len(spans) == 0 {
		return &ForeignError{Path: path, Why: "does not hold what weir wrote to it (its record is damaged)"}
	}
	sp := spans[len(spans)-1]
	if st.Size() < sp.Size || (r.Closed && st.Size() != spans[0].Size) {
		return &ForeignError{Path: path, Why: "does not hold what weir wrote to it (it was changed since)"}
	}
	f, err := fsys.OpenFile(path, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	head, err := readAt(f, 0, min(sp.Size, spanBytes))
	if err != nil {
		return err
	}
	if digest(head) != sp.Head {
		return &ForeignError{Path: path, Why: "does not begin with what weir wrote to it (it was edited or replaced)"}
	}
	return nil
}

// ReplaceFile writes data to path as a whole new file (written beside it,
// then renamed into place), if path is weir's to replace (see the
// rules of an output file starting afresh), and records it as weir's. It is
// how summaries and acceptance records are written.
func ReplaceFile(fsys vfs.FS, path string, data []byte, force bool) error {
	if fsys == nil {
		fsys = vfs.OS
	}
	if err := claim(fsys, path, force); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := fsys.WriteFile(tmp, data); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	id, err := vfs.PathID(fsys, path)
	if err != nil {
		return err
	}
	var t tracker
	t.add(data)
	if err := writeOwner(fsys, path, id, t.span(), nil, nil, true); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}

// equalAt reports whether the file holds want at off.
func equalAt(r io.ReaderAt, off int64, want []byte) (bool, error) {
	for len(want) > 0 {
		n := min(len(want), 1<<20)
		got, err := readAt(r, off, int64(n))
		if err != nil {
			return false, err
		}
		if !bytes.Equal(got, want[:n]) {
			return false, nil
		}
		want, off = want[n:], off+int64(n)
	}
	return true, nil
}
