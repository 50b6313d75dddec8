package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrCrashed is what every operation of a crashed file system returns.
var ErrCrashed = errors.New("vfs: the file system has crashed")

// Crashable is a file system in memory that remembers what is durable. It
// counts the operations that change something (a write, a sync, a rename, a
// creation...); CrashAt(n) makes the n-th and every later one fail with
// ErrCrashed, as if the machine had stopped just before it; Durable is the
// file system a restart would find.
type Crashable struct {
	mu      sync.Mutex
	root    *memNode
	ops     int
	crashAt int // 0: never
}

type memNode struct {
	dir     bool
	entries map[string]*memNode // live
	durable map[string]*memNode // as of the last sync of the directory
	data    []byte              // live contents
	synced  []byte              // contents as of the last sync
	mod     time.Time
	ino     uint64 // the file's identity (IDOf)
}

// inodes numbers the files of every Crashable.
var inodes atomic.Uint64

func newDir() *memNode {
	return &memNode{dir: true, entries: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// NewCrashable returns an empty file system, whose root is durable.
func NewCrashable() *Crashable { return &Crashable{root: newDir()} }

// CrashAt makes the n-th operation that changes something (counting from 1,
// from now on) and all later ones fail: 0 never crashes.
func (c *Crashable) CrashAt(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops, c.crashAt = 0, n
}

// Ops is the number of operations that changed something since the last
// CrashAt (or since the start).
func (c *Crashable) Ops() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops
}

// Crashed reports whether the crash point was reached.
func (c *Crashable) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashAt > 0 && c.ops >= c.crashAt
}

// step counts an operation; it reports ErrCrashed at and after the crash
// point. c.mu is held.
func (c *Crashable) step() error {
	if c.crashAt > 0 && c.ops >= c.crashAt {
		return ErrCrashed
	}
	c.ops++
	if c.crashAt > 0 && c.ops >= c.crashAt {
		return ErrCrashed
	}
	return nil
}

// Durable returns what a restart after a crash now would find: every
// directory's entries as of its last sync, every file's contents as of its
// last sync. The returned file system is new and does not crash.
func (c *Crashable) Durable() *Crashable {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[*memNode]*memNode{}
	var copyNode func(n *memNode) *memNode
	copyNode = func(n *memNode) *memNode {
		if m, ok := seen[n]; ok {
			return m
		}
		if !n.dir {
			m := &memNode{data: slices.Clone(n.synced), synced: slices.Clone(n.synced), mod: n.mod, ino: n.ino}
			seen[n] = m
			return m
		}
		m := newDir()
		seen[n] = m
		for name, e := range n.durable {
			ce := copyNode(e)
			m.entries[name], m.durable[name] = ce, ce
		}
		return m
	}
	return &Crashable{root: copyNode(c.root)}
}

func split(p string) []string {
	p = filepath.ToSlash(filepath.Clean(p))
	p = strings.Trim(p, "/")
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// lookup finds a node; parent is its directory. c.mu is held.
func (c *Crashable) lookup(p string) (parent, n *memNode, name string) {
	parts := split(p)
	cur := c.root
	if len(parts) == 0 {
		return nil, cur, ""
	}
	for i, part := range parts {
		if !cur.dir {
			return nil, nil, ""
		}
		next := cur.entries[part]
		if i == len(parts)-1 {
			return cur, next, part
		}
		if next == nil {
			return nil, nil, ""
		}
		cur = next
	}
	return nil, nil, ""
}

func notExist(op, p string) error { return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist} }

// MkdirAll implements FS.
func (c *Crashable) MkdirAll(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.root
	for _, part := range split(dir) {
		next := cur.entries[part]
		if next == nil {
			if err := c.step(); err != nil {
				return err
			}
			next = newDir()
			cur.entries[part] = next
		} else if !next.dir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: errors.New("not a directory")}
		}
		cur = next
	}
	return nil
}

// WriteFile implements FS: creating and writing the file is one operation,
// syncing it another.
func (c *Crashable) WriteFile(p string, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	parent, n, name := c.lookup(p)
	if parent == nil {
		return notExist("open", p)
	}
	if err := c.step(); err != nil {
		return err
	}
	if n == nil {
		n = &memNode{ino: inodes.Add(1)}
		parent.entries[name] = n
	}
	n.data, n.mod = slices.Clone(data), time.Now()
	if err := c.step(); err != nil {
		return err
	}
	n.synced = slices.Clone(n.data)
	return nil
}

// ReadFile implements FS.
func (c *Crashable) ReadFile(p string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, n, _ := c.lookup(p)
	if n == nil || n.dir {
		return nil, notExist("open", p)
	}
	return slices.Clone(n.data), nil
}

// ReadDir implements FS.
func (c *Crashable) ReadDir(dir string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, n, _ := c.lookup(dir)
	if n == nil || !n.dir {
		return nil, notExist("readdir", dir)
	}
	names := make([]string, 0, len(n.entries))
	for name := range n.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Rename implements FS.
func (c *Crashable) Rename(from, to string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fp, fn, fname := c.lookup(from)
	tp, _, tname := c.lookup(to)
	if fn == nil || tp == nil {
		return notExist("rename", from)
	}
	if err := c.step(); err != nil {
		return err
	}
	delete(fp.entries, fname)
	tp.entries[tname] = fn
	return nil
}

// RemoveAll implements FS.
func (c *Crashable) RemoveAll(p string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	parent, n, name := c.lookup(p)
	if n == nil || parent == nil {
		return nil
	}
	if err := c.step(); err != nil {
		return err
	}
	delete(parent.entries, name)
	return nil
}

// SyncDir implements FS.
func (c *Crashable) SyncDir(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, n, _ := c.lookup(dir)
	if n == nil || !n.dir {
		return notExist("sync", dir)
	}
	if err := c.step(); err != nil {
		return err
	}
	n.durable = map[string]*memNode{}
	for k, v := range n.entries {
		n.durable[k] = v
	}
	return nil
}

// OpenFile implements FS.
func (c *Crashable) OpenFile(p string, flag int) (File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	parent, n, name := c.lookup(p)
	if parent == nil {
		return nil, notExist("open", p)
	}
	if n == nil {
		if flag&os.O_CREATE == 0 {
			return nil, notExist("open", p)
		}
		if err := c.step(); err != nil {
			return nil, err
		}
		n = &memNode{mod: time.Now(), ino: inodes.Add(1)}
		parent.entries[name] = n
	} else if flag&os.O_TRUNC != 0 {
		if err := c.step(); err != nil {
			return nil, err
		}
		n.data = nil
	}
	if n.dir {
		return nil, &fs.PathError{Op: "open", Path: p, Err: errors.New("is a directory")}
	}
	return &memFile{c: c, n: n, name: name}, nil
}

// Stat implements FS.
func (c *Crashable) Stat(p string) (os.FileInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, n, name := c.lookup(p)
	if n == nil {
		return nil, notExist("stat", p)
	}
	return memInfo{name: name, n: n, size: int64(len(n.data))}, nil
}

type memFile struct {
	c    *Crashable
	n    *memNode
	name string
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if err := f.c.step(); err != nil {
		return 0, err
	}
	if end := off + int64(len(b)); end > int64(len(f.n.data)) {
		f.n.data = append(f.n.data, make([]byte, end-int64(len(f.n.data)))...)
	}
	copy(f.n.data[off:], b)
	f.n.mod = time.Now()
	return len(b), nil
}

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(b, f.n.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Truncate(size int64) error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if err := f.c.step(); err != nil {
		return err
	}
	if size < int64(len(f.n.data)) {
		f.n.data = f.n.data[:size]
	} else {
		f.n.data = append(f.n.data, make([]byte, size-int64(len(f.n.data)))...)
	}
	return nil
}

func (f *memFile) Sync() error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if err := f.c.step(); err != nil {
		return err
	}
	f.n.synced = slices.Clone(f.n.data)
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	return memInfo{name: f.name, n: f.n, size: int64(len(f.n.data))}, nil
}

func (f *memFile) Close() error { return nil }

type memInfo struct {
	name string
	n    *memNode
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.n.mod }
func (i memInfo) IsDir() bool        { return i.n.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.n.dir {
		return fs.ModeDir | DirMode
	}
	return FileMode
}

// SameFile reports whether two results of Stat are the same file.
func SameFile(a, b os.FileInfo) bool {
	ma, oka := a.(memInfo)
	mb, okb := b.(memInfo)
	if oka || okb {
		return oka && okb && ma.n == mb.n
	}
	return os.SameFile(a, b)
}
