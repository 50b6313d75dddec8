package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func line(b []byte, s string) []byte { return append(append(b, s...), '\n') }

// Exactly once: nothing reaches the file before Commit; a restore cuts the
// file back to the restored checkpoint and a commit done twice writes the
// same bytes at the same place.
func TestSinkExactlyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := &Sink[string]{Path: path, Encode: line, ExactlyOnce: true}
	if err := s.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s.Write(ctx, []string{`{"a":1}`, `{"a":2}`})
	pre1, _ := s.PreCommit(ctx, 1)
	s.Write(ctx, []string{`{"a":3}`})
	pre2, _ := s.PreCommit(ctx, 2)
	s.Write(ctx, []string{`{"a":4}`}) // never pre-committed: a crash comes first
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("written before the commit: %q", b)
	}
	if err := s.Commit(ctx, 1, pre1); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 2, pre2); err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Fatalf("file %q", b)
	}
	// A restore from checkpoint 1 (checkpoint 2 was lost): the file is cut
	// back, checkpoint 1 committed again, and what comes next follows it.
	r := &Sink[string]{Path: path, Encode: line, ExactlyOnce: true}
	if err := r.Open(ctx, pre1); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, 1, pre1); err != nil {
		t.Fatal(err)
	}
	r.Write(ctx, []string{`{"a":"3 again"}`})
	pre, _ := r.PreCommit(ctx, 3)
	r.Commit(ctx, 3, pre)
	r.Close()
	if b, _ := os.ReadFile(path); string(b) != "{\"a\":1}\n{\"a\":2}\n{\"a\":\"3 again\"}\n" {
		t.Fatalf("after the restore: %q", b)
	}
}

// A file that lost what a checkpoint had committed is refused on restore.
func TestSinkRefusesDamagedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := &Sink[string]{Path: path, Encode: line, ExactlyOnce: true}
	s.Open(ctx, nil)
	s.Write(ctx, []string{`{"a":1}`})
	pre1, _ := s.PreCommit(ctx, 1)
	s.Commit(ctx, 1, pre1)
	pre2, _ := s.PreCommit(ctx, 2)
	s.Close()
	os.Truncate(path, 3)
	var de *DamagedError
	if err := (&Sink[string]{Path: path, Encode: line, ExactlyOnce: true}).Open(ctx, pre2); !errors.As(err, &de) || !strings.Contains(err.Error(), "holds 3 bytes, fewer than the 8 the checkpoint had committed") {
		t.Errorf("truncated: %v", err)
	}
	os.Remove(path)
	if err := (&Sink[string]{Path: path, Encode: line, ExactlyOnce: true}).Open(ctx, pre2); !errors.As(err, &de) || !strings.Contains(err.Error(), "is gone") {
		t.Errorf("deleted: %v", err)
	}
}

// A job starting afresh replaces its own output, never a file that is not
// weir's.
func TestCheckReplace(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"empty": "", "output": "{\"key\":1}\n", "pretty": "  {\n  \"read\": 1\n}\n"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		if err := CheckReplace(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	p := filepath.Join(dir, "job.yaml")
	os.WriteFile(p, []byte("name: x\n"), 0o644)
	if err := CheckReplace(p); err == nil || !strings.Contains(err.Error(), "does not look like weir's output") {
		t.Errorf("a YAML file: %v", err)
	}
	if err := CheckReplace(dir); err == nil {
		t.Error("a directory was accepted")
	}
	if err := CheckReplace(filepath.Join(dir, "absent")); err != nil {
		t.Error(err)
	}
}
