package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/connector"
)

func line(b []byte, s string) []byte { return append(append(b, s...), '\n') }

// record is a checkpoint's commit record of one sink, as the engine keeps
// it: the pre-commits not known to be committed, and the sink's mark after
// its last commit.
type record struct {
	id      uint64
	pending [][]byte
	mark    []byte
}

func (r record) resume() connector.Resume {
	res := connector.Resume{From: r.id, Mark: r.mark}
	for i, p := range r.pending {
		res.Pending = append(res.Pending, connector.PreCommit{Checkpoint: r.id - uint64(len(r.pending)-1-i), Data: p})
	}
	return res
}

func eo(path string) *Sink[string] { return &Sink[string]{Path: path, Encode: line, ExactlyOnce: true} }

func open(t *testing.T, s *Sink[string], r connector.Resume) {
	t.Helper()
	if err := s.Open(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func fileIs(t *testing.T, path, want string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Fatalf("%s holds %q (%v), want %q", filepath.Base(path), b, err, want)
	}
}

// Exactly once: nothing reaches the file before Commit; a restore cuts the
// file back to the restored checkpoint, a commit done twice writes the same
// bytes at the same place, and a restore from an older checkpoint cuts off
// what later ones committed (it is computed again).
func TestSinkExactlyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := eo(path)
	open(t, s, connector.Resume{})
	mark0 := s.Mark()
	s.Write(ctx, []string{`{"a":1}`, `{"a":2}`})
	pre1, _ := s.PreCommit(ctx, 1)
	ck1 := record{id: 1, pending: [][]byte{pre1}, mark: mark0}
	s.Write(ctx, []string{`{"a":3}`})
	pre2, _ := s.PreCommit(ctx, 2)
	s.Write(ctx, []string{`{"a":4}`}) // never pre-committed: a crash comes first
	fileIs(t, path, "")
	if err := s.Commit(ctx, 1, pre1); err != nil {
		t.Fatal(err)
	}
	ck2 := record{id: 2, pending: [][]byte{pre2}, mark: s.Mark()}
	if err := s.Commit(ctx, 2, pre2); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fileIs(t, path, "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")

	// The newest checkpoint: its pending output is committed again, at
	// the same place.
	r := eo(path)
	open(t, r, ck2.resume())
	if err := r.Commit(ctx, 2, pre2); err != nil {
		t.Fatal(err)
	}
	r.Close()
	fileIs(t, path, "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n")

	// Checkpoint 1 (checkpoint 2 is lost, or an older savepoint is
	// restored): the file is cut back, checkpoint 1 committed again, and
	// what comes next follows it.
	r = eo(path)
	open(t, r, ck1.resume())
	if err := r.Commit(ctx, 1, pre1); err != nil {
		t.Fatal(err)
	}
	r.Write(ctx, []string{`{"a":"3 again"}`})
	pre, _ := r.PreCommit(ctx, 3)
	r.Commit(ctx, 3, pre)
	r.Close()
	fileIs(t, path, "{\"a\":1}\n{\"a\":2}\n{\"a\":\"3 again\"}\n")
}

// A checkpoint with nothing pending (its output was committed, as a restart
// records before its sinks start) resumes at the length its mark recorded:
// a resumed sink never empties the file because nothing was pending.
func TestSinkResumesWithNothingPending(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := eo(path)
	open(t, s, connector.Resume{})
	s.Write(ctx, []string{`{"a":1}`})
	pre1, _ := s.PreCommit(ctx, 1)
	s.Commit(ctx, 1, pre1)
	ck := record{id: 2, mark: s.Mark()}
	s.Close()
	for range 2 {
		r := eo(path)
		open(t, r, ck.resume())
		r.Close()
		fileIs(t, path, "{\"a\":1}\n")
	}
	r := eo(path)
	open(t, r, ck.resume())
	r.Write(ctx, []string{`{"a":2}`})
	pre, _ := r.PreCommit(ctx, 3)
	r.Commit(ctx, 3, pre)
	r.Close()
	fileIs(t, path, "{\"a\":1}\n{\"a\":2}\n")
}

// A file that is not the one the checkpoint wrote is refused on restore, and
// left as it is: cut short, deleted, replaced by a larger one, regenerated
// with other bytes, or appended to by someone else.
func TestSinkRefusesChangedFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	s := eo(path)
	open(t, s, connector.Resume{})
	s.Write(ctx, []string{`{"a":1}`, `{"a":2}`})
	pre1, _ := s.PreCommit(ctx, 1)
	s.Commit(ctx, 1, pre1)
	ck := record{id: 2, mark: s.Mark()}
	s.Close()
	weirs := "{\"a\":1}\n{\"a\":2}\n"
	restore := func() error { return eo(path).Open(ctx, ck.resume()) }

	os.Truncate(path, 3)
	var de *DamagedError
	if err := restore(); !errors.As(err, &de) || !strings.Contains(err.Error(), "holds 3 bytes, fewer than the 16 the checkpoint had committed") {
		t.Errorf("truncated: %v", err)
	}
	os.Remove(path)
	if err := restore(); !errors.As(err, &de) || !strings.Contains(err.Error(), "is gone") {
		t.Errorf("deleted: %v", err)
	}
	var ce *ChangedError
	bigger := "{\"b\":1}\n{\"b\":2}\n{\"b\":3}\n"
	os.WriteFile(path, []byte(bigger), 0o644)
	if err := restore(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "its first 16 bytes are not those weir wrote") {
		t.Errorf("replaced by a larger file: %v", err)
	}
	fileIs(t, path, bigger)
	appended := weirs + "{\"mine\":true}\n"
	os.WriteFile(path, []byte(appended), 0o644)
	var fe *ForeignError
	if err := restore(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "holds 14 bytes after the 16 that checkpoint 2 had committed") {
		t.Errorf("appended to: %v", err)
	}
	fileIs(t, path, appended)
	// --force cuts it back.
	f := eo(path)
	f.Force = true
	open(t, f, ck.resume())
	f.Close()
	fileIs(t, path, weirs)
}

// A job starting afresh replaces a file only if it is empty or weir wrote
// it, as its owner record says; with Force, any file. "It starts with a
// JSON object" proves nothing: a user's own JSON lines stay.
func TestSinkReplacesOnlyItsOwnFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	archive := filepath.Join(dir, "orders-2025.jsonl")
	os.WriteFile(archive, []byte("{\"order\":1}\n{\"order\":2}\n"), 0o644)
	var fe *ForeignError
	for _, exactly := range []bool{true, false} {
		s := &Sink[string]{Path: archive, Encode: line, ExactlyOnce: exactly}
		if err := s.Open(ctx, connector.Resume{}); !errors.As(err, &fe) || !strings.Contains(err.Error(), "weir has no record of writing it") {
			t.Errorf("exactly once %v: %v", exactly, err)
		}
	}
	fileIs(t, archive, "{\"order\":1}\n{\"order\":2}\n")

	// weir's own output, exactly once and plain, is replaced by the next
	// run that starts afresh.
	for _, exactly := range []bool{true, false} {
		path := filepath.Join(dir, "out.jsonl")
		s := &Sink[string]{Path: path, Encode: line, ExactlyOnce: exactly}
		open(t, s, connector.Resume{})
		s.Write(ctx, []string{`{"a":1}`})
		pre, _ := s.PreCommit(ctx, 1)
		s.Commit(ctx, 1, pre)
		s.Close()
		fileIs(t, path, "{\"a\":1}\n")
		again := &Sink[string]{Path: path, Encode: line, ExactlyOnce: exactly}
		open(t, again, connector.Resume{})
		again.Close()
		fileIs(t, path, "")
		os.Remove(path)
	}

	// Another file put where weir's was is not weir's.
	path := filepath.Join(dir, "out.jsonl")
	s := eo(path)
	open(t, s, connector.Resume{})
	s.Close()
	os.Remove(path)
	os.WriteFile(path, []byte("{\"theirs\":1}\n"), 0o644)
	if err := eo(path).Open(ctx, connector.Resume{}); !errors.As(err, &fe) {
		t.Errorf("a file put in the place of weir's: %v", err)
	}
	fileIs(t, path, "{\"theirs\":1}\n")

	f := eo(archive)
	f.Force = true
	open(t, f, connector.Resume{})
	f.Close()
	fileIs(t, archive, "")
	if err := eo(dir).Open(ctx, connector.Resume{}); err == nil {
		t.Error("a directory was accepted")
	}
}

// ReplaceFile writes summaries and records whole: weir's own are replaced,
// a user's settings file is not.
func TestReplaceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := ReplaceFile(nil, path, []byte("{\"read\":1}\n"), false); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceFile(nil, path, []byte("{\"read\":2}\n"), false); err != nil {
		t.Fatal(err)
	}
	fileIs(t, path, "{\"read\":2}\n")
	settings := filepath.Join(dir, "settings.json")
	os.WriteFile(settings, []byte("{\"theme\":\"dark\"}\n"), 0o644)
	var fe *ForeignError
	if err := ReplaceFile(nil, settings, []byte("{}\n"), false); !errors.As(err, &fe) {
		t.Errorf("a settings file: %v", err)
	}
	fileIs(t, settings, "{\"theme\":\"dark\"}\n")
	if err := ReplaceFile(nil, settings, []byte("{}\n"), true); err != nil {
		t.Error(err)
	}
	fileIs(t, settings, "{}\n")
}
