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
//	DIR/chk-00000012/MANIFEST     periodic checkpoints; the newest Keep stay
//	DIR/chk-00000012/...          the files of checkpoint 12
//	DIR/savepoints/sp-00000013/   savepoints, kept until deleted by hand
//	DIR/shared/OBJECT             files kept once for every checkpoint that has them
//	DIR/.tmp-00000014/            a checkpoint being written (removed on open)
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
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/vfs"
)

// FormatVersion is the version of the manifest format.
const FormatVersion = 1

// ManifestName is the name of the manifest file in a checkpoint directory.
const ManifestName = "MANIFEST"

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
// periodic checkpoints. On the real file system it takes the store's lock
// (LOCK): a second Open of the same directory, by any process, fails with a
// *LockedError until Close. Leftover temporary directories of a crashed
// writer are removed.
func Open(fs FS, dir string, keep int) (*Store, error) {
	if err := fs.MkdirAll(dir); err != nil {
		return nil, err
	}
	s := &Store{fs: fs, dir: dir, keep: max(keep, 1), objects: map[string]File{}}
	if fs == OSFS {
		l, err := lockDir(dir)
		if err != nil {
			return nil, err
		}
		s.lock = l
	}
	entries, err := fs.ReadDir(dir)
	if err != nil {
		s.Close()
		return nil, err
	}
	for _, e := range entries {
		if strings.HasPrefix(e, ".tmp-") {
			_ = fs.RemoveAll(filepath.Join(dir, e))
		}
	}
	objs, _ := fs.ReadDir(s.sharedDir())
	for _, e := range objs {
		if strings.HasPrefix(e, ".tmp-") {
			_ = fs.RemoveAll(filepath.Join(s.sharedDir(), e))
		}
	}
	return s, nil
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
	_ = s.fs.RemoveAll(tmp)
	if err := s.fs.MkdirAll(tmp); err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		_ = s.fs.RemoveAll(tmp)
		return "", err
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
		data := in.Data
		if err := s.fs.WriteFile(filepath.Join(tmp, in.Name), data); err != nil {
			return fail(err)
		}
		sum := sha256.Sum256(data)
		m.Files = append(m.Files, File{Name: in.Name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
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
	_ = s.fs.RemoveAll(final)
	if err := s.fs.Rename(tmp, final); err != nil {
		return fail(err)
	}
	if err := s.fs.SyncDir(filepath.Dir(final)); err != nil {
		return final, err
	}
	return final, nil
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
	if err := dst.Sync(); err != nil {
		dst.Close()
		return File{}, err
	}
	if err := dst.Close(); err != nil {
		return File{}, err
	}
	return File{Size: off, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
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

// list returns every checkpoint and savepoint directory, newest first.
func (s *Store) list() []entry {
	var out []entry
	add := func(dir, prefix string) {
		names, _ := s.fs.ReadDir(dir)
		for _, n := range names {
			if !strings.HasPrefix(n, prefix) {
				continue
			}
			id, err := strconv.ParseUint(strings.TrimPrefix(n, prefix), 10, 64)
			if err == nil {
				out = append(out, entry{id, filepath.Join(dir, n)})
			}
		}
	}
	add(s.dir, "chk-")
	add(filepath.Join(s.dir, "savepoints"), "sp-")
	slices.SortFunc(out, func(a, b entry) int {
		switch {
		case a.id > b.id:
			return -1
		case a.id < b.id:
			return 1
		}
		return 0
	})
	return out
}

// Latest returns the newest complete checkpoint or savepoint, or nil if there
// is none. Every newer one that fails verification is reported to warn and
// skipped.
func (s *Store) Latest(warn func(string)) *Checkpoint {
	for _, e := range s.list() {
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
// sound manifest, and the unsound ones among the older ones. Savepoints are
// never pruned. (Files are verified in full only when a checkpoint is
// loaded; pruning reads manifests only.)
func (s *Store) Prune() {
	kept := 0
	for _, e := range s.list() {
		if strings.HasPrefix(e.path, filepath.Join(s.dir, "savepoints")) {
			continue
		}
		if kept < s.keep {
			if data, err := s.fs.ReadFile(filepath.Join(e.path, ManifestName)); err == nil {
				if _, err := openManifest(data); err == nil {
					kept++
					continue
				}
			}
		}
		_ = s.fs.RemoveAll(e.path)
	}
	s.pruneObjects()
}

// pruneObjects deletes the shared objects that no checkpoint left
// references. A checkpoint whose manifest cannot be read keeps every object:
// what it references is not known.
func (s *Store) pruneObjects() {
	names, err := s.fs.ReadDir(s.sharedDir())
	if err != nil || len(names) == 0 {
		return
	}
	used := map[string]bool{}
	for _, e := range s.list() {
		data, err := s.fs.ReadFile(filepath.Join(e.path, ManifestName))
		if err != nil {
			return
		}
		m, err := openManifest(data)
		if err != nil {
			return
		}
		for _, f := range m.Files {
			if f.Object != "" {
				used[f.Object] = true
			}
		}
	}
	removed := false
	for _, n := range names {
		if !used[n] && !strings.HasPrefix(n, ".tmp-") {
			_ = s.fs.RemoveAll(filepath.Join(s.sharedDir(), n))
			delete(s.objects, n)
			removed = true
		}
	}
	if removed {
		_ = s.fs.SyncDir(s.sharedDir())
	}
}

// Clear deletes every periodic checkpoint (savepoints stay), and the shared
// objects they alone referenced.
func (s *Store) Clear() {
	for _, e := range s.list() {
		if !strings.HasPrefix(e.path, filepath.Join(s.dir, "savepoints")) {
			_ = s.fs.RemoveAll(e.path)
		}
	}
	s.pruneObjects()
}

// FS is the file system a store writes through (package vfs); tests use a
// crashable one.
type FS = vfs.FS

// OSFS is the real file system.
var OSFS = vfs.OS
