package file

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/connector"
)

// reader reads a source in a goroutine of its own, as the engine does, and
// keeps what it got.
type reader struct {
	mu    sync.Mutex
	lines []string
	pos   []byte
	err   error
	done  chan struct{}
}

func startReading(ctx context.Context, s connector.Source) *reader {
	r := &reader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			var b connector.Batch
			err := s.Read(ctx, &b)
			r.mu.Lock()
			for _, rec := range b.Records {
				r.lines = append(r.lines, string(rec.Value))
			}
			if b.Position != nil {
				r.pos = b.Position
			}
			r.err = err
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *reader) got() (string, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "|"), r.pos
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestRecordedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(path, []byte("a\nb\r\n\nlast"), 0o644)
	s := &Source{Path: path}
	if err := s.Open(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var b connector.Batch
	var texts []string
	var offsets []int64
	for {
		err := s.Read(context.Background(), &b)
		for _, r := range b.Records {
			texts = append(texts, string(r.Value))
			offsets = append(offsets, r.Offset)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b.Reset()
	}
	if strings.Join(texts, "|") != "a|b||last" || len(offsets) != 4 || offsets[3] != 4 {
		t.Errorf("lines %q at %v", texts, offsets)
	}
	if got := Line(b.Position); got != 4 {
		t.Errorf("the position after the end is line %d", got)
	}
	// Resuming after line 2 gives the rest.
	s2 := &Source{Path: path}
	f, _ := os.Open(path)
	head, tail, _ := checksums(f, 5)
	f.Close()
	pos := encodePos(filePos{offset: 5, line: 2, id: s.id, head: head, tail: tail})
	if err := s2.Open(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for {
		b.Reset()
		err := s2.Read(context.Background(), &b)
		for _, r := range b.Records {
			rest = append(rest, string(r.Value))
		}
		if err != nil {
			break
		}
	}
	if strings.Join(rest, "|") != "|last" {
		t.Errorf("resumed: %q", rest)
	}
}

// A followed file: lines that come later, a last line without its end held
// back, a rotation (the file renamed away and created again) and a
// truncation in place, as tail -F follows them.
func TestFollowGrowRotateTruncate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "in.jsonl")
		appendTo(t, path, "1\n2\n")
		var logMu sync.Mutex
		var log []string
		s := &Source{Path: path, Follow: true, Log: func(m string) { logMu.Lock(); log = append(log, m); logMu.Unlock() }}
		if err := s.Open(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := startReading(ctx, s)
		step := func(want string) {
			t.Helper()
			time.Sleep(50 * time.Millisecond)
			synctest.Wait()
			if got, _ := r.got(); got != want {
				t.Fatalf("read %q, want %q", got, want)
			}
		}
		step("1|2")
		appendTo(t, path, "3\n4")
		step("1|2|3") // 4 has no line ending yet
		appendTo(t, path, "\n")
		step("1|2|3|4")
		// Rotation: the old file gets a last line after the rename, the new
		// one starts afresh.
		os.Rename(path, path+".1")
		appendTo(t, path+".1", "5\n")
		appendTo(t, path, "6\n")
		step("1|2|3|4|5|6")
		// Truncation in place (copytruncate), then new lines.
		os.Truncate(path, 0)
		time.Sleep(50 * time.Millisecond)
		appendTo(t, path, "7\n")
		step("1|2|3|4|5|6|7")
		_, pos := r.got()
		if Line(pos) != 7 {
			t.Errorf("position at line %d", Line(pos))
		}
		cancel()
		<-r.done
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("Read after cancel: %v", r.err)
		}
		s.Close()
		logMu.Lock()
		if len(log) != 2 || !strings.Contains(log[0], "was rotated") || !strings.Contains(log[1], "was truncated") {
			t.Errorf("log: %q", log)
		}
		logMu.Unlock()

		// A restart from that position, after the file was rotated again
		// while the job was stopped: the new file from its start, said so.
		os.Rename(path, path+".2")
		appendTo(t, path, "8\n")
		s2 := &Source{Path: path, Follow: true, Log: func(m string) { logMu.Lock(); log = append(log, m); logMu.Unlock() }}
		if err := s2.Open(context.Background(), pos); err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithCancel(context.Background())
		r = startReading(ctx, s2)
		step("8")
		cancel()
		<-r.done
		s2.Close()
		if !strings.Contains(log[len(log)-2], "was rotated while the job was stopped; reading the rest of in.jsonl.2, then the new file from its start") {
			t.Errorf("log: %q", log)
		}
	})
}

func TestReaderCannotResume(t *testing.T) {
	r := &Reader{Name: "standard input", R: strings.NewReader("x\n")}
	if err := r.Open(context.Background(), []byte{1}); !errors.Is(err, ErrNotReplayable) {
		t.Errorf("err = %v", err)
	}
}
