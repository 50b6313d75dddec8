// Package checkpoint stores weir's checkpoints and savepoints: directories
// of files written atomically, each described by a manifest with checksums,
// so that a torn or corrupt checkpoint is detected and an older complete one
// is used instead.
//
// A checkpoint is written into a temporary directory; every file is synced;
// the manifest (with the size and SHA-256 of every file, and its own
// checksum) is written last; the directory is synced and renamed into place,
// and the parent directory synced. A directory without a valid manifest is
// never used.
//
// Layout of a store:
//
//	DIR/WEIR-CHECKPOINTS          the marker: the directory is weir's
//	DIR/chk-00000012/MANIFEST     periodic checkpoints; the newest Keep stay
//	DIR/chk-00000012/WEIR-WROTE   the checkpoint's mark (and the objects it added)
//	DIR/chk-00000012/...          the files of checkpoint 12
//	DIR/savepoints/sp-00000013/   savepoints, kept until deleted by hand
//	DIR/shared/OBJECT             files kept once for every checkpoint that has them
//	DIR/.tmp-00000014/            a checkpoint being written (removed on open)
//	DIR/ABANDONED                 the ids a restore from an older one left behind
//
// weir deletes only what it wrote. A store is opened only in a directory
// that is new, empty, or weir's: marked (MarkerName), or, written by a weir
// from before the marker, holding nothing but checkpoints with sound
// manifests and the objects they name (it is then marked). A checkpoint
// directory is removed only when its manifest is sound or it holds its mark
// (MarkName); a shared object only when a manifest named it or this store
// wrote it; a temporary directory only when it holds its mark or nothing.
// A name of weir's shape alone (chk-*, .tmp-*) is never reason enough.
//
// Shared objects make checkpoints incremental: the immutable table files of
// a state database are copied into DIR/shared the first time a checkpoint
// has them and only referenced by the next ones, so that a checkpoint costs
// what changed since the last one. Pruning deletes the objects no remaining
// checkpoint references. A savepoint holds copies of its objects instead,
// so that it stands alone: it can be moved, and outlives the checkpoints.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/vfs"
)

// FormatVersion is the version of the manifest format.
const FormatVersion = 1

// ManifestName is the name of the manifest file in a checkpoint directory.
const ManifestName = "MANIFEST"

// MarkerName is the file that marks a directory as weir's checkpoint
// directory, written when a store is first opened in it: weir prunes old
// checkpoints there, and keeps checkpoints in no directory holding files it
// did not write.
const MarkerName = "WEIR-CHECKPOINTS"

// MarkName is the mark of a checkpoint weir writes, the first file of its
// temporary directory: a temporary directory or a checkpoint that holds it
// is weir's to remove, even when it has no sound manifest (torn, or
// corrupt). It lists the shared objects the checkpoint adds, so that a
// crash between copying them and completing the checkpoint leaves nothing
// weir cannot name.
const MarkName = "WEIR-WROTE"

// PIDName is the file of a checkpoint directory that holds the running
// job's process id (weir run writes it), for people and scripts.
const PIDName = "weir.pid"

// Kind says why a checkpoint was taken.
type Kind string

const (
	// Periodic checkpoints are taken every interval and pruned.
	Periodic Kind = "checkpoint"
	// Savepoint is taken on request or on stop, and kept.
	Savepoint Kind = "savepoint"
	// Final records that the input ended and every output was committed.
	Final Kind = "final"
)

// Manifest describes one checkpoint.
type Manifest struct {
	Format      int             `json:"format"`
	ID          uint64          `json:"id"`
	Kind        Kind            `json:"kind"`
	Job         string          `json:"job"`
	Fingerprint string          `json:"fingerprint"`
	Created     string          `json:"created"`
	Parallelism int             `json:"parallelism"`
	Meta        json.RawMessage `json:"meta,omitempty"`
	Files       []File          `json:"files"`
}

// File is one file of a checkpoint.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Object is set for a file kept in the store's shared directory under
	// this name, rather than in the checkpoint's.
	Object string `json:"object,omitempty"`
	// Lazy files are verified when the checkpoint is loaded, but not kept
	// in memory: they are read from their path (Checkpoint.Paths).
	Lazy bool `json:"lazy,omitempty"`
}

// Checkpoint is a loaded, verified checkpoint.
type Checkpoint struct {
	Path     string
	Manifest Manifest
	Files    map[string][]byte // every file but the lazy ones
	Paths    map[string]string // where the lazy files are
}

// Input is a file to save in a checkpoint: its bytes, or, with Object, a
// file on the real file system (Path) to keep as a shared object.
type Input struct {
	Name string
	Data []byte
	// Parts, when Data is nil, are the file's bytes in pieces, written one
	// after another without being joined (a commit record holds the sinks'
	// pending output, which the caller keeps anyway: a joined copy would
	// double it for as long as the checkpoint is being written).
	Parts [][]byte
	// Path is an immutable file with Object, a name no other file's object
	// has: the store copies it into its shared directory unless a checkpoint
	// has it there already (a savepoint copies it into its own directory).
	Path   string
	Object string
}

// Store is a directory of checkpoints.
type Store struct {
	fs   FS
	dir  string
	keep int
	lock *os.File // the LOCK file, held while the store is open (real file system only)
	// objects are the shared objects written by this store, with their
	// size and checksum, as long as a checkpoint references them.
	objects map[string]File
	// Copied counts the bytes of shared objects copied into the store, for
	// statistics.
	Copied int64
}

// Open returns the store in dir (created if needed), keeping the newest keep
// periodic checkpoints. dir must be new, empty or weir's (CheckDir): a
// *ForeignError names the first entry that is not. On the real file system
// Open takes the store's lock (LOCK): a second Open of the same directory, by
// any process, fails with a *LockedError until Close. The leftovers of a
// crashed writer (its temporary directories, and the shared objects they
// were adding) are removed.
func Open(fs FS, dir string, keep int) (*Store, error) {
	if err := CheckDir(fs, dir); err != nil {
		return nil, err
	}
	if err := fs.MkdirAll(dir); err != nil {
		return nil, err
	}
	s := &Store{fs: fs, dir: dir, keep: max(keep, 1), objects: map[string]File{}}
	if vfs.OnDisk(fs) {
		l, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		s.lock = l
	}
	if _, err := fs.Stat(filepath.Join(dir, MarkerName)); err != nil {
		text := "weir's checkpoints: weir deletes old checkpoints here, and nothing it did not write\n"
		if err := fs.WriteFile(filepath.Join(dir, MarkerName), []byte(text)); err != nil {
			s.Close()
			return nil, err
		}
		if err := fs.SyncDir(dir); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.removeLeftovers(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// ForeignError is a directory a store will not open: it holds Entry (a
// path relative to Dir), which weir did not write.
type ForeignError struct {
	Dir   string
	Entry string
}

// Error names the directory, the foreign entry, and the way on.
func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s holds %s, which weir did not write: weir deletes old checkpoints in its checkpoint directory, and keeps them only in a directory that is new, empty or marked %s by weir; choose another directory", e.Dir, e.Entry, MarkerName)
}

// CheckDir reports an error if a store cannot be opened in dir: it is not a
// directory, or it holds something and is not weir's. A directory is weir's
// when it holds the marker (MarkerName); or when a weir that did not write
// markers yet left it, holding only checkpoints and savepoints whose
// manifests are sound, the shared objects they name, the lock and pid
// files, and empty temporary directories. A directory that does not exist
// is fine (Open makes it).
func CheckDir(fs FS, dir string) error {
	st, err := fs.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is a file, not a directory", dir)
	}
	names, err := fs.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(names) == 0 || slices.Contains(names, MarkerName) {
		return nil
	}
	foreign := func(entry string) error { return &ForeignError{Dir: dir, Entry: entry} }
	isDir := func(p string) bool {
		st, err := fs.Stat(p)
		return err == nil && st.IsDir()
	}
	objects := map[string]bool{}
	sound := func(p string) bool {
		m, ok := soundManifest(fs, p)
		for _, f := range m.Files {
			if f.Object != "" {
				objects[f.Object] = true
			}
		}
		return ok
	}
	// Checkpoints first: the shared objects must be ones they name.
	for _, n := range names {
		if _, ok := idOf(n, "chk-"); ok && (!isDir(filepath.Join(dir, n)) || !sound(filepath.Join(dir, n))) {
			return foreign(n)
		}
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		switch _, chk := idOf(n, "chk-"); {
		case chk:
		case n == LockName || n == PIDName || n == AbandonedName:
			if isDir(p) {
				return foreign(n)
			}
		case n == "savepoints":
			sps, err := fs.ReadDir(p)
			if err != nil || !isDir(p) {
				return foreign(n)
			}
			for _, sp := range sps {
				if _, ok := idOf(sp, "sp-"); !ok || !isDir(filepath.Join(p, sp)) || !sound(filepath.Join(p, sp)) {
					return foreign(filepath.Join(n, sp))
				}
			}
		case n == "shared":
			objs, err := fs.ReadDir(p)
			if err != nil || !isDir(p) {
				return foreign(n)
			}
			for _, o := range objs {
				if !objects[o] || isDir(filepath.Join(p, o)) {
					return foreign(filepath.Join(n, o))
				}
			}
		default:
			if _, tmp := idOf(n, ".tmp-"); tmp && isDir(p) {
				if inside, err := fs.ReadDir(p); err == nil && len(inside) == 0 {
					continue // an empty directory holds nothing to lose
				}
			}
			return foreign(n)
		}
	}
	return nil
}

// idOf reads the id of a checkpoint's directory name (prefix and digits).
func idOf(name, prefix string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" {
		return 0, false
	}
	id, err := strconv.ParseUint(rest, 10, 64)
	return id, err == nil
}

// soundManifest reads the manifest of the checkpoint in dir, and reports
// whether it is sound (complete, its checksum right). The files it lists
// are not verified.
func soundManifest(fs FS, dir string) (Manifest, bool) {
	data, err := fs.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return Manifest{}, false
	}
	m, err := openManifest(data)
	return m, err == nil
}

// ownDir reports whether a checkpoint's directory (or a temporary one) is
// weir's to remove: its manifest is sound, it holds its mark, or it is
// empty. Files and other directories are not.
func (s *Store) ownDir(p string) bool {
	if st, err := s.fs.Stat(p); err != nil || !st.IsDir() {
		return false
	}
	if _, err := s.fs.Stat(filepath.Join(p, MarkName)); err == nil {
		return true
	}
	if _, ok := soundManifest(s.fs, p); ok {
		return true
	}
	names, err := s.fs.ReadDir(p)
	return err == nil && len(names) == 0
}

// removeOwn removes the directory p if it exists and is weir's (ownDir); a
// p that is not weir's is an error naming it.
func (s *Store) removeOwn(p string) error {
	if _, err := s.fs.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if !s.ownDir(p) {
		return fmt.Errorf("%s is in the way and weir did not write it; weir will not remove it", p)
	}
	return s.fs.RemoveAll(p)
}

// removeLeftovers removes what a writer that crashed left: its temporary
// directories (those with the mark, or empty) and the shared objects their
// marks list that no checkpoint references. A .tmp- entry that is not
// weir's stays.
func (s *Store) removeLeftovers() error {
	names, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var added []string
	var tmps []string
	for _, n := range names {
		p := filepath.Join(s.dir, n)
		if !strings.HasPrefix(n, ".tmp-") || !s.ownDir(p) {
			continue
		}
		added = append(added, markedObjects(s.fs, p)...)
		tmps = append(tmps, p)
	}
	if len(added) > 0 {
		used, ok := s.referenced()
		for _, o := range added {
			if ok && !used[o] {
				_ = s.fs.RemoveAll(filepath.Join(s.sharedDir(), o))
			}
			// A copy on its way into the shared directory.
			_ = s.fs.RemoveAll(filepath.Join(s.sharedDir(), ".tmp-"+o))
		}
	}
	for _, p := range tmps {
		_ = s.fs.RemoveAll(p)
	}
	return nil
}

// markedObjects are the shared objects a checkpoint's mark says it added.
func markedObjects(fs FS, dir string) []string {
	b, err := fs.ReadFile(filepath.Join(dir, MarkName))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if o := strings.TrimSpace(l); o != "" && o == filepath.Base(o) && !strings.HasPrefix(o, ".") {
			out = append(out, o)
		}
	}
	return out
}

func (s *Store) sharedDir() string { return filepath.Join(s.dir, "shared") }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) pathFor(kind Kind, id uint64) string {
	if kind == Savepoint {
		return filepath.Join(s.dir, "savepoints", fmt.Sprintf("sp-%08d", id))
	}
	return filepath.Join(s.dir, fmt.Sprintf("chk-%08d", id))
}

// Save writes a checkpoint atomically and returns its directory. m.Files is
// filled in from files, whose order is kept.
func (s *Store) Save(m Manifest, names []string, files [][]byte) (string, error) {
	in := make([]Input, len(names))
	for i := range names {
		in[i] = Input{Name: names[i], Data: files[i]}
	}
	return s.SaveFiles(m, in)
}

// SaveFiles is Save with inputs that may be shared objects.
func (s *Store) SaveFiles(m Manifest, files []Input) (string, error) {
	m.Format = FormatVersion
	if m.Created == "" {
		m.Created = time.Now().UTC().Format(time.RFC3339Nano)
	}
	m.Files = nil
	tmp := filepath.Join(s.dir, fmt.Sprintf(".tmp-%08d", m.ID))
	if err := s.removeOwn(tmp); err != nil {
		return "", err
	}
	if err := s.fs.MkdirAll(tmp); err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		_ = s.fs.RemoveAll(tmp)
		return "", err
	}
	if err := s.mark(tmp, m.Kind, files); err != nil {
		return fail(err)
	}
	newObjects := false
	for _, in := range files {
		if in.Object != "" && m.Kind != Savepoint {
			f, wrote, err := s.object(in)
			if err != nil {
				return fail(err)
			}
			newObjects = newObjects || wrote
			f.Name = in.Name
			m.Files = append(m.Files, f)
			continue
		}
		if in.Object != "" {
			// A savepoint's own copy of the object.
			f, err := s.copyFile(in.Path, filepath.Join(tmp, in.Name))
			if err != nil {
				return fail(err)
			}
			f.Name, f.Lazy = in.Name, true
			m.Files = append(m.Files, f)
			continue
		}
		f, err := s.writeParts(filepath.Join(tmp, in.Name), in)
		if err != nil {
			return fail(err)
		}
		f.Name = in.Name
		m.Files = append(m.Files, f)
	}
	if newObjects {
		if err := s.fs.SyncDir(s.sharedDir()); err != nil {
			return fail(err)
		}
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fail(err)
	}
	if err := s.fs.WriteFile(filepath.Join(tmp, ManifestName), sealManifest(body)); err != nil {
		return fail(err)
	}
	if err := s.fs.SyncDir(tmp); err != nil {
		return fail(err)
	}
	final := s.pathFor(m.Kind, m.ID)
	if err := s.fs.MkdirAll(filepath.Dir(final)); err != nil {
		return fail(err)
	}
	if err := s.removeOwn(final); err != nil {
		return fail(err)
	}
	if err := s.fs.Rename(tmp, final); err != nil {
		return fail(err)
	}
	if err := s.fs.SyncDir(filepath.Dir(final)); err != nil {
		return final, err
	}
	return final, nil
}

// Bytes is the file's bytes when it is given by Data or Parts (a copy,
// joined, for Parts).
func (in Input) Bytes() []byte {
	if in.Parts == nil {
		return in.Data
	}
	return bytes.Join(in.Parts, nil)
}

// writeParts writes in's bytes (Data, or else Parts) to path and syncs it,
// and returns the file's size and checksum.
func (s *Store) writeParts(path string, in Input) (File, error) {
	if in.Parts == nil {
		if err := s.fs.WriteFile(path, in.Data); err != nil {
			return File{}, err
		}
		sum := sha256.Sum256(in.Data)
		return File{Size: int64(len(in.Data)), SHA256: hex.EncodeToString(sum[:])}, nil
	}
	f, err := s.fs.OpenFile(path, os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	var off int64
	for _, b := range in.Parts {
		if _, err := f.WriteAt(b, off); err != nil {
			f.Close()
			return File{}, err
		}
		h.Write(b)
		off += int64(len(b))
	}
	return seal(f, off, h)
}

// mark writes the mark of the checkpoint being written in tmp, first. When
// the checkpoint adds shared objects, the mark lists them and is made
// durable, with tmp itself, before the first object enters the shared
// directory; otherwise it is an empty file, durable with the rest of tmp.
func (s *Store) mark(tmp string, kind Kind, files []Input) error {
	var added []byte
	if kind != Savepoint {
		for _, in := range files {
			if _, ok := s.objects[in.Object]; in.Object != "" && !ok {
				added = append(append(added, in.Object...), '\n')
			}
		}
	}
	if len(added) == 0 {
		f, err := s.fs.OpenFile(filepath.Join(tmp, MarkName), os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return err
		}
		return f.Close()
	}
	if err := s.fs.WriteFile(filepath.Join(tmp, MarkName), added); err != nil {
		return err
	}
	if err := s.fs.SyncDir(tmp); err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// Adopt tells the store that the shared objects of files (a loaded
// checkpoint's, of this store) are in it, so that a checkpoint referencing
// them does not copy them again. Objects not found are ignored (they will
// be copied).
func (s *Store) Adopt(files []File) {
	for _, f := range files {
		if f.Object == "" {
			continue
		}
		if _, ok := s.objects[f.Object]; ok {
			continue
		}
		if st, err := s.fs.Stat(filepath.Join(s.sharedDir(), f.Object)); err == nil && st.Size() == f.Size {
			f.Name = ""
			s.objects[f.Object] = f
		}
	}
}

// object makes sure the shared object of in is in the store, copying it
// there if no checkpoint has it yet, and says whether it did.
func (s *Store) object(in Input) (File, bool, error) {
	if f, ok := s.objects[in.Object]; ok {
		return f, false, nil
	}
	if err := s.fs.MkdirAll(s.sharedDir()); err != nil {
		return File{}, false, err
	}
	tmp := filepath.Join(s.sharedDir(), ".tmp-"+in.Object)
	f, err := s.copyFile(in.Path, tmp)
	if err != nil {
		_ = s.fs.RemoveAll(tmp)
		return File{}, false, err
	}
	if err := s.fs.Rename(tmp, filepath.Join(s.sharedDir(), in.Object)); err != nil {
		return File{}, false, err
	}
	f.Object, f.Lazy = in.Object, true
	s.objects[in.Object] = f
	s.Copied += f.Size
	return f, true, nil
}

// copyFile copies a file of the real file system into the store, a block
// at a time, and syncs it; it returns its size and checksum.
func (s *Store) copyFile(from, to string) (File, error) {
	src, err := os.Open(from)
	if err != nil {
		return File{}, err
	}
	defer src.Close()
	dst, err := s.fs.OpenFile(to, os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var off int64
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, err := dst.WriteAt(buf[:n], off); err != nil {
				dst.Close()
				return File{}, err
			}
			off += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			dst.Close()
			return File{}, rerr
		}
	}
	return seal(dst, off, h)
}

// seal syncs and closes a file written with h, of size bytes, and returns
// its entry.
func seal(f vfs.File, size int64, h hash.Hash) (File, error) {
	if err := f.Sync(); err != nil {
		f.Close()
		return File{}, err
	}
	if err := f.Close(); err != nil {
		return File{}, err
	}
	return File{Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// sealManifest appends a line with the manifest's own checksum, so that a
// flipped byte anywhere in it is caught.
func sealManifest(body []byte) []byte {
	sum := sha256.Sum256(body)
	out := append(append([]byte(nil), body...), "\nsha256 "...)
	out = append(out, hex.EncodeToString(sum[:])...)
	return append(out, '\n')
}

func openManifest(data []byte) (Manifest, error) {
	var m Manifest
	i := bytes.LastIndex(data, []byte("\nsha256 "))
	if i < 0 {
		return m, errors.New("manifest has no checksum line (torn write?)")
	}
	body, tail := data[:i], strings.TrimSpace(string(data[i+len("\nsha256 "):]))
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != tail {
		return m, errors.New("manifest checksum mismatch")
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return m, fmt.Errorf("manifest does not parse: %v", err)
	}
	if m.Format != FormatVersion {
		return m, fmt.Errorf("manifest format %d, this weir reads %d", m.Format, FormatVersion)
	}
	return m, nil
}

// Load reads and verifies the checkpoint in dir: the manifest's own checksum,
// then the size and checksum of every file.
func Load(fs FS, dir string) (*Checkpoint, error) {
	data, err := fs.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	m, err := openManifest(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	c := &Checkpoint{Path: dir, Manifest: m, Files: map[string][]byte{}, Paths: map[string]string{}}
	for _, f := range m.Files {
		path := filepath.Join(dir, f.Name)
		if f.Object != "" {
			// The store's shared directory is beside its checkpoints.
			if f.Object != filepath.Base(f.Object) || strings.HasPrefix(f.Object, ".") {
				return nil, fmt.Errorf("checkpoint %s: %s names no shared object (%q)", dir, f.Name, f.Object)
			}
			path = filepath.Join(filepath.Dir(dir), "shared", f.Object)
		}
		b, err := fs.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
		}
		if int64(len(b)) != f.Size {
			return nil, fmt.Errorf("checkpoint %s: %s has %d bytes, the manifest says %d (truncated?)", dir, f.Name, len(b), f.Size)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != f.SHA256 {
			return nil, fmt.Errorf("checkpoint %s: %s checksum mismatch (corrupt)", dir, f.Name)
		}
		if f.Lazy || f.Object != "" {
			c.Paths[f.Name] = path
			continue
		}
		c.Files[f.Name] = b
	}
	return c, nil
}

type entry struct {
	id   uint64
	path string
}

// Len is how many checkpoints and savepoints the store holds, complete or
// not.
func (s *Store) Len() int { return len(s.list()) }

// list returns every checkpoint and savepoint directory, newest first.
func (s *Store) list() []entry {
	var out []entry
	add := func(dir, prefix string) {
		names, _ := s.fs.ReadDir(dir)
		for _, n := range names {
			if id, ok := idOf(n, prefix); ok {
				out = append(out, entry{id, filepath.Join(dir, n)})
			}
		}
	}
	add(s.dir, "chk-")
	add(filepath.Join(s.dir, "savepoints"), "sp-")
	// sort.Slice, not slices.SortFunc: one sort's code for every
	// element type of a cold path (the release binary's size).
	sort.Slice(out, func(i, j int) bool { return out[i].id > out[j].id })
	return out
}

// AbandonedName is the file of a store that lists the checkpoints a restore
// left behind (see Abandon).
const AbandonedName = "ABANDONED"

// Abandon records that the job resumes from checkpoint base while newer ones
// are in the store: a restore from an older checkpoint or savepoint, or a
// fallback past a corrupt one; base 0 is a start afresh, which leaves every
// checkpoint of the store behind. The checkpoints between base and the next id
// belong to a run whose outputs the restore is about to take back (files cut
// back to base, transactions of theirs aborted), so they no longer describe
// what the outputs hold: Latest never falls back to one of them. It is a
// no-op when base is the newest. The record is durable before it returns.
func (s *Store) Abandon(base uint64) error {
	next := s.NextID()
	if base+1 >= next {
		return nil
	}
	p := filepath.Join(s.dir, AbandonedName)
	b, err := s.fs.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	b = fmt.Appendf(b, "%d %d\n", base, next)
	tmp := filepath.Join(s.dir, ".tmp-"+AbandonedName)
	if err := s.fs.WriteFile(tmp, b); err != nil {
		return err
	}
	if err := s.fs.Rename(tmp, p); err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// abandoned reads the ranges Abandon recorded: each an id after which, and
// one before which, the checkpoints were left behind.
func (s *Store) abandoned() [][2]uint64 {
	b, err := s.fs.ReadFile(filepath.Join(s.dir, AbandonedName))
	if err != nil {
		return nil
	}
	var out [][2]uint64
	for _, line := range strings.Split(string(b), "\n") {
		var r [2]uint64
		if _, err := fmt.Sscanf(line, "%d %d", &r[0], &r[1]); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// Abandoned reports whether the checkpoint or savepoint id was left behind
// by a restore from an older one (Abandon), and the id of that one: the
// outputs no longer hold what it describes, so it is never restored.
func (s *Store) Abandoned(id uint64) (base uint64, ok bool) {
	for _, r := range s.abandoned() {
		if r[0] < id && id < r[1] {
			return r[0], true
		}
	}
	return 0, false
}

// Latest returns the newest complete checkpoint or savepoint, or nil if there
// is none. Every newer one that fails verification, or that a restore from an
// older one abandoned (Abandon), is reported to warn and skipped.
func (s *Store) Latest(warn func(string)) *Checkpoint {
	for _, e := range s.list() {
		if base, gone := s.Abandoned(e.id); gone {
			if base == 0 {
				// Left behind by a start afresh: so is every older one.
				return nil
			}
			warn(fmt.Sprintf("checkpoint %s was left behind by a run that resumed from the older checkpoint %d (its outputs were taken back to that one); falling back to an older checkpoint", e.path, base))
			continue
		}
		c, err := Load(s.fs, e.path)
		if err == nil {
			return c
		}
		warn(fmt.Sprintf("%v; falling back to an older checkpoint", err))
	}
	return nil
}

// NextID is one more than the largest id in the store (1 for an empty one).
func (s *Store) NextID() uint64 {
	l := s.list()
	if len(l) == 0 {
		return 1
	}
	return l[0].id + 1
}

// Prune deletes the periodic checkpoints beyond the newest Keep that have a
// sound manifest, and the unsound ones among them that are weir's (they
// hold their mark), then the shared objects no checkpoint left references.
// Savepoints are never pruned, nor a directory weir cannot tell it wrote.
// (Files are verified in full only when a checkpoint is loaded; pruning
// reads manifests only.)
func (s *Store) Prune() {
	kept := 0
	var gone []string
	for _, e := range s.list() {
		if s.isSavepoint(e) {
			continue
		}
		m, sound := soundManifest(s.fs, e.path)
		if kept < s.keep && sound {
			kept++
			continue
		}
		if sound || s.ownDir(e.path) {
			gone = append(gone, objectsOf(m)...)
			_ = s.fs.RemoveAll(e.path)
		}
	}
	s.pruneObjects(gone)
}

// PruneSavepoints deletes the savepoints of weir's beyond the newest keep,
// never the one at path (the job may resume from it), and returns the
// paths it deleted, oldest first. A savepoint with a manifest that does not
// read is left alone.
func (s *Store) PruneSavepoints(keep int, path string) []string {
	var sps []entry
	for _, e := range s.list() {
		if s.isSavepoint(e) {
			sps = append(sps, e)
		}
	}
	var gone []string
	var objects []string
	for i := len(sps) - 1; i >= keep; i-- {
		e := sps[i]
		if e.path == path {
			continue
		}
		m, sound := soundManifest(s.fs, e.path)
		if !sound {
			continue
		}
		objects = append(objects, objectsOf(m)...)
		if err := s.fs.RemoveAll(e.path); err == nil {
			gone = append(gone, e.path)
		}
	}
	if len(objects) > 0 {
		s.pruneObjects(objects)
	}
	return gone
}

func (s *Store) isSavepoint(e entry) bool {
	return strings.HasPrefix(e.path, filepath.Join(s.dir, "savepoints"))
}

func objectsOf(m Manifest) []string {
	var out []string
	for _, f := range m.Files {
		if f.Object != "" {
			out = append(out, f.Object)
		}
	}
	return out
}

// referenced is the set of shared objects the checkpoints of the store
// reference; ok is false when a checkpoint of weir's has a manifest that
// cannot be read (what it references is not known).
func (s *Store) referenced() (used map[string]bool, ok bool) {
	used = map[string]bool{}
	for _, e := range s.list() {
		m, sound := soundManifest(s.fs, e.path)
		if !sound {
			if s.ownDir(e.path) {
				return nil, false
			}
			continue
		}
		for _, o := range objectsOf(m) {
			used[o] = true
		}
	}
	return used, true
}

// pruneObjects deletes the shared objects that no checkpoint left
// references, among those weir knows it wrote: the ones this store copied
// or adopted, and those named by the manifests of the checkpoints just
// deleted (gone). Any other entry of the shared directory stays. A
// checkpoint of weir's whose manifest cannot be read keeps every object:
// what it references is not known.
func (s *Store) pruneObjects(gone []string) {
	candidates := map[string]bool{}
	for o := range s.objects {
		candidates[o] = true
	}
	for _, o := range gone {
		candidates[o] = true
	}
	if len(candidates) == 0 {
		return
	}
	used, ok := s.referenced()
	if !ok {
		return
	}
	removed := false
	for o := range candidates {
		if used[o] {
			continue
		}
		p := filepath.Join(s.sharedDir(), o)
		if st, err := s.fs.Stat(p); err == nil && !st.IsDir() {
			_ = s.fs.RemoveAll(p)
			removed = true
		}
		delete(s.objects, o)
	}
	if removed {
		_ = s.fs.SyncDir(s.sharedDir())
	}
}

// Clear deletes every periodic checkpoint of weir's (savepoints stay), and
// the shared objects they alone referenced.
func (s *Store) Clear() {
	var gone []string
	for _, e := range s.list() {
		if s.isSavepoint(e) {
			continue
		}
		m, sound := soundManifest(s.fs, e.path)
		if sound || s.ownDir(e.path) {
			gone = append(gone, objectsOf(m)...)
			_ = s.fs.RemoveAll(e.path)
		}
	}
	s.pruneObjects(gone)
}

// FS is the file system a store writes through (package vfs); tests use a
// crashable one.
type FS = vfs.FS

// OSFS is the real file system.
var OSFS = vfs.OS
