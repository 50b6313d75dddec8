package job

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/vfs"
)

// crashFS returns a crashable file system in memory in which dir (and every
// directory above it) exists durably.
func crashFS(dir string) *vfs.Crashable {
	fs := vfs.NewCrashable()
	fs.MkdirAll(dir)
	for d := dir; ; d = filepath.Dir(d) {
		fs.SyncDir(d)
		if d == filepath.Dir(d) {
			break
		}
	}
	return fs
}

// A crash at every step of every checkpoint and of every commit (before and
// after each write, sync, rename and directory sync, in a file system that
// keeps only what was made durable), then a restart: the outputs are byte for
// byte those of an uninterrupted run, and a restart that found a checkpoint
// resumed from it.
func TestCrashAtEveryStep(t *testing.T) {
	in := bigInput(2500)
	refDir, _ := runJob(t, durableJob, in)
	want := map[string][]byte{}
	for _, f := range []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"} {
		want[f], _ = os.ReadFile(filepath.Join(refDir, f))
		if len(want[f]) == 0 {
			t.Fatalf("the reference %s is empty", f)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(durableJob+"checkpoint: {dir: ckpt, interval: 1h, keep: 2}\n"), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(fs vfs.FS) (string, error) {
		var log strings.Builder
		var mu sync.Mutex
		_, err := Run(context.Background(), j, Options{FS: fs, Log: &syncWriter{&mu, &log}, checkpointEvery: 1})
		return log.String(), err
	}
	// How many steps a whole run takes.
	count := crashFS(dir)
	count.CrashAt(0) // counts from here
	if _, err := run(count); err != nil {
		t.Fatal(err)
	}
	steps := count.Ops()
	if steps < 50 {
		t.Fatalf("only %d steps", steps)
	}
	resumed := 0
	for k := 1; k <= steps; k++ {
		fs := crashFS(dir)
		fs.CrashAt(k)
		run(fs) // fails from the crash on, or finishes if the crash came late
		if !fs.Crashed() {
			t.Fatalf("step %d: the run took fewer steps than the first", k)
		}
		img := fs.Durable()
		entries, _ := img.ReadDir(filepath.Join(dir, "ckpt"))
		hasCheckpoint := false
		for _, e := range entries {
			if strings.HasPrefix(e, "chk-") || e == "savepoints" {
				if _, err := img.Stat(filepath.Join(dir, "ckpt", e, "MANIFEST")); err == nil {
					hasCheckpoint = true
				}
			}
		}
		log, err := run(img)
		if err != nil {
			t.Fatalf("crash at step %d of %d: the restart failed: %v\n%s", k, steps, err, log)
		}
		if hasCheckpoint && !strings.Contains(log, "resuming from") && !strings.Contains(log, "the last run of durable finished") {
			t.Errorf("crash at step %d: a checkpoint was on disk, but the restart did not resume:\n%s", k, log)
		}
		if strings.Contains(log, "resuming from") {
			resumed++
		}
		for f, w := range want {
			got, _ := img.ReadFile(filepath.Join(dir, f))
			if !bytes.Equal(got, w) {
				t.Fatalf("crash at step %d of %d: %s differs from an uninterrupted run (%d bytes, want %d)\n%s", k, steps, f, len(got), len(w), log)
			}
		}
	}
	if resumed < steps/2 {
		t.Errorf("only %d of %d restarts resumed from a checkpoint", resumed, steps)
	}
	t.Logf("%d crash points, %d restarts resumed from a checkpoint", steps, resumed)
}
