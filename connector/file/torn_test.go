package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/vfs"
)

// faultFS is the real file system whose output file's next write stops
// after cut bytes: with dead, the process dies there (nothing it does
// afterwards reaches the disk, as after kill -9); without, the write
// fails as on a full disk and the process goes on.
type faultFS struct {
	vfs.FS
	path string
	cut  int
	dead bool

	tripped bool
}

var errDead = errors.New("the process is dead")

func (f *faultFS) gone() bool { return f.dead && f.tripped }

func (f *faultFS) WriteFile(p string, data []byte) error {
	if f.gone() {
		return errDead
	}
	return f.FS.WriteFile(p, data)
}

func (f *faultFS) Rename(from, to string) error {
	if f.gone() {
		return errDead
	}
	return f.FS.Rename(from, to)
}

func (f *faultFS) OpenFile(p string, flag int) (vfs.File, error) {
	file, err := f.FS.OpenFile(p, flag)
	if err != nil || p != f.path {
		return file, err
	}
	return &faultFile{File: file, fs: f}, nil
}

type faultFile struct {
	vfs.File
	fs *faultFS
}

func (f *faultFile) WriteAt(b []byte, off int64) (int, error) {
	switch {
	case f.fs.gone():
		return 0, errDead
	case f.fs.cut >= 0 && len(b) > f.fs.cut:
		n, _ := f.File.WriteAt(b[:f.fs.cut], off)
		f.fs.cut, f.fs.tripped = -1, true
		if f.fs.dead {
			return n, errDead
		}
		return n, syscall.ENOSPC
	}
	return f.File.WriteAt(b, off)
}

func (f *faultFile) Truncate(size int64) error {
	if f.fs.gone() {
		return errDead
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Sync() error {
	if f.fs.gone() {
		return errDead
	}
	return f.File.Sync()
}

// A commit that fails part of the way through its write (a full disk)
// leaves the file as the last commit left it, not with a torn line: a
// reader of the file never sees what no checkpoint committed. Once there
// is room again, the same commit goes through, and the file is still
// weir's to restore.
func TestSinkFailedCommitCutsBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	fs := &faultFS{FS: vfs.OS, path: path, cut: -1}
	s := &Sink[string]{Path: path, Encode: line, ExactlyOnce: true, FS: fs}
	open(t, s, connector.Resume{})
	s.Write(ctx, []string{`{"a":1}`})
	pre1, _ := s.PreCommit(ctx, 1)
	if err := s.Commit(ctx, 1, pre1); err != nil {
		t.Fatal(err)
	}
	mark1 := s.Mark()
	s.Write(ctx, []string{`{"a":2}`, `{"a":3}`})
	pre2, _ := s.PreCommit(ctx, 2)
	fs.cut = 11 // `{"a":2}` and `{"a`
	if err := s.Commit(ctx, 2, pre2); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("the commit: %v, want the full disk's error", err)
	}
	fileIs(t, path, "{\"a\":1}\n")
	if err := s.Commit(ctx, 2, pre2); err != nil {
		t.Fatalf("the commit, with room again: %v", err)
	}
	s.Close()
	fileIs(t, path, "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")
	r := eo(path)
	open(t, r, record{id: 2, pending: [][]byte{pre2}, mark: mark1}.resume())
	r.Close()
}

// A process killed in the middle of a commit's write leaves the pages it
// had written. If the checkpoint of that commit is then found corrupt, the
// restore falls back to an older one, whose pending output ends before
// them: the owner record, which announced the write with the digests of
// its pages, proves them weir's, and they are cut back. A page that does
// not hold what was announced is not weir's, and the file is refused.
func TestSinkFallbackPastTornCommit(t *testing.T) {
	ctx := context.Background()
	const page = 4096
	for _, tc := range []struct {
		name string
		edit bool // a byte of the torn write changed since: refused
	}{{"torn", false}, {"torn and edited", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			fs := &faultFS{FS: vfs.OS, path: path, cut: -1, dead: true}
			s := &Sink[string]{Path: path, Encode: line, ExactlyOnce: true, FS: fs}
			open(t, s, connector.Resume{})
			lines := func(c byte) []string {
				var out []string
				for i := range 1000 {
					out = append(out, `{"k":"`+strings.Repeat(string(c), 20)+`","i":`+strconv.Itoa(i)+`}`)
				}
				return out
			}
			s.Write(ctx, lines('a'))
			pre1, _ := s.PreCommit(ctx, 1)
			if err := s.Commit(ctx, 1, pre1); err != nil {
				t.Fatal(err)
			}
			// Checkpoint 2's barrier: its mark, and its pending output.
			mark2 := s.Mark()
			s.Write(ctx, lines('b'))
			pre2, _ := s.PreCommit(ctx, 2)
			if err := s.Commit(ctx, 2, pre2); err != nil {
				t.Fatal(err)
			}
			s.Write(ctx, lines('c'))
			pre3, _ := s.PreCommit(ctx, 3)
			committed2, _ := os.Stat(path)
			// Killed after three pages of checkpoint 3's output, the
			// first up to the page boundary after where it starts.
			fs.cut = int(page-committed2.Size()%page) + 2*page
			if err := s.Commit(ctx, 3, pre3); !errors.Is(err, errDead) {
				t.Fatalf("the commit: %v, want it killed", err)
			}
			st, _ := os.Stat(path)
			if st.Size() <= committed2.Size() || st.Size()%page != 0 {
				t.Fatalf("the torn write left %d bytes after %d", st.Size(), committed2.Size())
			}
			if tc.edit {
				f, _ := os.OpenFile(path, os.O_RDWR, 0)
				f.WriteAt([]byte("X"), st.Size()-10)
				f.Close()
			}
			// Checkpoint 3 is corrupt: the restore falls back to 2.
			r := eo(path)
			err := r.Open(ctx, record{id: 2, pending: [][]byte{pre2}, mark: mark2}.resume())
			if tc.edit {
				var fe *ForeignError
				if !errors.As(err, &fe) {
					t.Fatalf("the restore: %v, want the file refused", err)
				}
				if now, _ := os.Stat(path); now.Size() != st.Size() {
					t.Fatalf("the refused file was changed: %d bytes, %d before", now.Size(), st.Size())
				}
				return
			}
			if err != nil {
				t.Fatalf("the restore from checkpoint 2: %v", err)
			}
			if err := r.Commit(ctx, 2, pre2); err != nil {
				t.Fatal(err)
			}
			r.Close()
			want := ""
			for _, l := range append(lines('a'), lines('b')...) {
				want += l + "\n"
			}
			fileIs(t, path, want)
		})
	}
}
