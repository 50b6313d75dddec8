package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/vfs"
)

// fullFS is the real file system, except that writes of checkpoint files
// (under a directory named ckpt) fail with ENOSPC while full is set: a
// checkpoint disk that fills up, the outputs' disk beside it still fine.
type fullFS struct {
	checkpoint.FS // the real one
	mu            sync.Mutex
	full          func(n int) bool // asked before each checkpoint file write, n counting from 1
	writes        int
}

func (f *fullFS) WriteFile(path string, data []byte) error {
	if !strings.Contains(path, string(filepath.Separator)+"ckpt"+string(filepath.Separator)) {
		return checkpoint.OSFS.WriteFile(path, data)
	}
	f.mu.Lock()
	f.writes++
	n := f.writes
	f.mu.Unlock()
	if f.full(n) {
		return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	return checkpoint.OSFS.WriteFile(path, data)
}

// runWithSavepoints runs a job in-process with a savepoint every 2000 lines,
// and returns the savepoints' directories, oldest first.
func runWithSavepoints(t *testing.T, dir string, fs checkpoint.FS) (*Summary, []string, error) {
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), j, Options{FS: fs, savepointEvery: 2})
	entries, _ := os.ReadDir(filepath.Join(dir, "ckpt", "savepoints"))
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(dir, "ckpt", "savepoints", e.Name()))
	}
	return sum, paths, err
}

type syncWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func bigInput(n int) string {
	var b strings.Builder
	for i := range n {
		ts := 1_780_000_000_000 + i*50 - (i%9)*300
		if i%101 == 0 {
			ts -= 70_000
		}
		fmt.Fprintf(&b, `{"k":"k%d","v":%d,"ts":%d,"arrival":%d}`+"\n", i%17, i%10, ts, 1_780_000_000_000+i*50)
		if i%997 == 0 {
			b.WriteString("garbage\n")
		}
	}
	return b.String()
}

const durableJob = `name: durable
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 30s
aggregates: {n: count, total: sum(v)}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
`

func setupDurable(t *testing.T) (dir, refDir string) {
	in := bigInput(20000)
	refDir, _ = runJob(t, durableJob, in)
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"checkpoint: {dir: ckpt, interval: 1h, keep: 2, keep_savepoints: 100}\n"), 0o644)
	return dir, refDir
}

// savepointsOfDurable runs the durable job to its end with a savepoint
// every 2 batches (at least 3 of them), and returns its directory, the run
// without checkpoints, the savepoints oldest first and the job, loaded
// again to be run from one of them.
func savepointsOfDurable(t *testing.T) (dir, refDir string, paths []string, j *jobfile.Job) {
	t.Helper()
	dir, refDir = setupDurable(t)
	_, paths, err := runWithSavepoints(t, dir, nil)
	if err != nil || len(paths) < 3 {
		t.Fatalf("%v: %d savepoints", err, len(paths))
	}
	if j, err = jobfile.Load(filepath.Join(dir, "job.yaml")); err != nil {
		t.Fatal(err)
	}
	return dir, refDir, paths, j
}

func sameOutputs(t *testing.T, dir, refDir string) {
	t.Helper()
	for _, f := range []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"} {
		if a, b := read(t, dir, f), read(t, refDir, f); a != b || len(b) == 0 {
			t.Errorf("%s differs from the run without checkpoints (%d bytes, want %d)", f, len(a), len(b))
		}
	}
}

// Periodic checkpoints that fail fewer times in a row than tolerated do not
// stop the job, and lose nothing.
func TestPeriodicFailuresTolerated(t *testing.T) {
	dir, refDir := setupDurable(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"checkpoint: {dir: ckpt, interval: 1ms, keep: 2, tolerable_failures: 1000}\n"), 0o644)
	j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
	var log strings.Builder
	var mu sync.Mutex
	fs := &fullFS{FS: checkpoint.OSFS, full: func(n int) bool { return n%20 == 0 }}
	sum, err := Run(context.Background(), j, Options{FS: fs, Log: &syncWriter{&mu, &log}, checkpointEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, dir, refDir)
	if sum.Read != 20000+21 || !strings.Contains(log.String(), "no space left on device (1 in a row, 1000 tolerated)") {
		t.Errorf("read %d; log:\n%.500s", sum.Read, log.String())
	}
}

// More failures in a row than tolerated stop the job with a clear error, and
// the last good checkpoint stays: a new run resumes from it and ends with the
// right output.
func TestTooManyFailuresStopTheJob(t *testing.T) {
	dir, refDir := setupDurable(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"checkpoint: {dir: ckpt, interval: 1ms, keep: 2, tolerable_failures: 2}\n"), 0o644)
	j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
	fs := &fullFS{FS: checkpoint.OSFS, full: func(n int) bool { return n > 12 }}
	_, err := Run(context.Background(), j, Options{FS: fs, checkpointEvery: 1})
	var re *RuntimeError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "checkpoints are failing") ||
		!strings.Contains(err.Error(), "(3 in a row, 2 tolerated)") || !strings.Contains(err.Error(), "the last good checkpoint is "+filepath.Join(dir, "ckpt", "chk-")) {
		t.Fatalf("err = %v", err)
	}
	// The disk has room again.
	if _, err := Run(context.Background(), j, Options{}); err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, dir, refDir)
}

// Savepoints at known places, then a restore from one of them with another
// parallelism: the output is what an uninterrupted run writes.
func TestSavepointRestoreOtherParallelism(t *testing.T) {
	dir, refDir := setupDurable(t)
	fs := checkpoint.OSFS
	_, paths, err := runWithSavepoints(t, dir, fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 3 {
		t.Fatalf("only %d savepoints", len(paths))
	}
	sameOutputs(t, dir, refDir)
	// Restore from a savepoint in the middle, as a job with parallelism 3.
	mid := paths[len(paths)/2]
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"parallelism: 3\ncheckpoint: {dir: ckpt, interval: 1h}\n"), 0o644)
	j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
	var log strings.Builder
	var mu sync.Mutex
	if _, err := Run(context.Background(), j, Options{From: mid, Log: &syncWriter{&mu, &log}}); err != nil {
		t.Fatal(err)
	}
	// The line the log names is the savepoint's position, as its
	// inspection reads it.
	c, err := checkpoint.Load(checkpoint.OSFS, mid)
	if err != nil {
		t.Fatal(err)
	}
	in, err := engine.Inspect(c, nil)
	if err != nil || len(in.Sources) != 1 {
		t.Fatalf("inspect %s: %v, %d sources", mid, err, len(in.Sources))
	}
	line := file.Line(in.Sources[0].Position)
	if want := fmt.Sprintf("resuming from %s (line %d, 1 instances, now 3)", mid, line); line <= 0 || !strings.Contains(log.String(), want) {
		t.Errorf("log, want %q in it:\n%s", want, log.String())
	}
	sameOutputs(t, dir, refDir)
}

// A checkpoint of a job whose windows are of another size is refused, in
// one line naming the field and what would be lost.
func TestCheckpointOfAnotherJob(t *testing.T) {
	dir, _ := setupDurable(t)
	_, paths, err := runWithSavepoints(t, dir, checkpoint.OSFS)
	if err != nil || len(paths) == 0 {
		t.Fatal(err, paths)
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(strings.Replace(durableJob, "{tumbling: 10s}", "{tumbling: 20s}", 1)+"checkpoint: {dir: ckpt}\n"), 0o644)
	j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
	_, err = Run(context.Background(), j, Options{From: paths[0]})
	want := filepath.Join(dir, "job.yaml") + ": window: tumbling 10s in " + paths[0] + ", tumbling 20s now: restoring would lose the open windows of 17 keys; --drop-state=windows starts them afresh, keeping the positions"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
}

// The newest checkpoint is torn (a truncated file) or corrupt (a flipped
// byte): it is detected, reported, and the previous complete one is used.
func TestTornAndCorruptCheckpoints(t *testing.T) {
	for _, damage := range []string{"truncate window.op-0", "flip sink:results:file:results.jsonl", "flip MANIFEST", "delete source:input"} {
		t.Run(damage, func(t *testing.T) {
			dir, refDir := setupDurable(t)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"checkpoint: {dir: ckpt, interval: 1h, keep: 5, keep_savepoints: 100}\n"), 0o644)
			// Take savepoints, then make the job look as if it crashed after
			// the third: remove everything later, and the output after it.
			_, paths, err := runWithSavepoints(t, dir, checkpoint.OSFS)
			if err != nil || len(paths) < 4 {
				t.Fatal(err, len(paths))
			}
			for _, p := range paths[3:] {
				os.RemoveAll(p)
			}
			entries, _ := os.ReadDir(filepath.Join(dir, "ckpt"))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "chk-") {
					os.RemoveAll(filepath.Join(dir, "ckpt", e.Name()))
				}
			}
			newest := paths[2]
			verb, file, _ := strings.Cut(damage, " ")
			path := filepath.Join(newest, file)
			switch verb {
			case "truncate":
				b, _ := os.ReadFile(path)
				os.WriteFile(path, b[:len(b)/2], 0o644)
			case "flip":
				b, _ := os.ReadFile(path)
				b[len(b)/3] ^= 0x20
				os.WriteFile(path, b, 0o644)
			case "delete":
				os.Remove(path)
			}
			// The outputs hold what the crashed run had committed, and more
			// (written later and never committed by a complete checkpoint).
			j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
			var log strings.Builder
			var mu sync.Mutex
			if _, err := Run(context.Background(), j, Options{Log: &syncWriter{&mu, &log}}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), "checkpoint "+newest+": ") || !strings.Contains(log.String(), "falling back to an older checkpoint") ||
				!strings.Contains(log.String(), "resuming from "+paths[1]) {
				t.Errorf("log:\n%s", log.String())
			}
			sameOutputs(t, dir, refDir)
		})
	}
}

// A run that fails still writes its summary, marked failed, and the
// summary adds up: what was read but not yet taken by the windows when it
// stopped is counted as in flight.
func TestFailedRunSummaryAddsUp(t *testing.T) {
	dir, _ := setupDurable(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"summary: summary.json\ncheckpoint: {dir: ckpt, interval: 1ms, keep: 2, tolerable_failures: 0}\n"), 0o644)
	j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
	fs := &fullFS{FS: checkpoint.OSFS, full: func(n int) bool { return n > 40 }}
	sum, err := Run(context.Background(), j, Options{FS: fs, checkpointEvery: 1})
	if err == nil {
		t.Fatal("the run did not fail")
	}
	var got Summary
	if b, rerr := os.ReadFile(filepath.Join(dir, "summary.json")); rerr != nil || json.Unmarshal(b, &got) != nil {
		t.Fatalf("no summary.json after the failure: %v", rerr)
	}
	parts := got.Accepted + got.Duplicates + got.TooLate + got.BeyondDedupHorizon + got.Quarantined + got.InFlight
	if !got.Failed || got.Read == 0 || got.Read != parts || got.Read != sum.Read {
		t.Errorf("summary: failed %v, read %d, parts %d (in flight %d)", got.Failed, got.Read, parts, got.InFlight)
	}
	if text := sum.Text(); !strings.Contains(text, fmt.Sprintf("read %d lines", sum.Read)) {
		t.Errorf("text: %s", text)
	}
}

// Savepoints do not pile up: keep_savepoints (3 by default) stay, and each
// one removed is said.
func TestSavepointsKept(t *testing.T) {
	dir, refDir := setupDurable(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"checkpoint: {dir: ckpt, interval: 1h}\n"), 0o644)
	j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
	var log strings.Builder
	var mu sync.Mutex
	if _, err := Run(context.Background(), j, Options{Log: &syncWriter{&mu, &log}, savepointEvery: 1}); err != nil {
		t.Fatal(err)
	}
	sps, _ := filepath.Glob(filepath.Join(dir, "ckpt", "savepoints", "sp-*"))
	removed := strings.Count(log.String(), "removed the savepoint ")
	if len(sps) != 3 || removed < 10 || !strings.Contains(log.String(), ": keep_savepoints keeps the newest 3") {
		t.Errorf("%d savepoints left, %d removed:\n%.600s", len(sps), removed, log.String())
	}
	sameOutputs(t, dir, refDir)
}

// outputFull is the real file system, except that the output results.jsonl
// takes no more than room bytes: an outputs' disk that fills up.
type outputFull struct {
	checkpoint.FS
	room int64
}

func (f *outputFull) OpenFile(path string, flag int) (vfs.File, error) {
	file, err := f.FS.OpenFile(path, flag)
	if err != nil || filepath.Base(path) != "results.jsonl" {
		return file, err
	}
	return &fullFile{File: file, room: f.room}, nil
}

type fullFile struct {
	vfs.File
	room int64
}

func (f *fullFile) WriteAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > f.room {
		n := max(0, int(f.room-off))
		f.File.WriteAt(b[:n], off)
		return n, &os.PathError{Op: "write", Path: "results.jsonl", Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(b, off)
}

// An output's disk that fills up stops the job at once, with an error that
// names the file; the file holds what was committed before, whole lines,
// as many as the summary says reached it (the commit that failed is cut
// back, not left torn); the next run, once there is room, resumes and the
// outputs are an uninterrupted run's.
func TestOutputDiskFull(t *testing.T) {
	dir, refDir := setupDurable(t)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"checkpoint: {dir: ckpt, interval: 1h, tolerable_failures: 100}\n"), 0o644)
	j, _ := jobfile.Load(filepath.Join(dir, "job.yaml"))
	ref := read(t, refDir, "results.jsonl")
	sum, err := Run(context.Background(), j, Options{FS: &outputFull{FS: checkpoint.OSFS, room: int64(len(ref) / 2)}, checkpointEvery: 1})
	if err == nil || !strings.Contains(err.Error(), "write results.jsonl: no space left on device") {
		t.Fatalf("err = %v", err)
	}
	held := read(t, dir, "results.jsonl")
	if !strings.HasPrefix(ref, held) || len(held) > 0 && !strings.HasSuffix(held, "\n") {
		t.Fatalf("after the failed commit, results.jsonl holds %d bytes that are not whole lines of the results (the last: %q)", len(held), held[max(0, len(held)-40):])
	}
	if n := int64(strings.Count(held, "\n")); sum == nil || n != sum.PanesWritten {
		t.Fatalf("results.jsonl holds %d panes, the summary says %v reached it", n, sum)
	}
	if _, err := Run(context.Background(), j, Options{}); err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, dir, refDir)
}
