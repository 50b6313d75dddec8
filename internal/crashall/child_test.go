package crashall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/vfs"
)

// childEnv holds a run's spec when the test binary runs as a child.
const childEnv = "WEIR_CRASHALL_CHILD"

// runSpec is one run of a schedule, as the child process carries it out.
type runSpec struct {
	Dir  string
	From string // restore this checkpoint or savepoint
	// KillAtOp kills the process (SIGKILL) just before the n-th write,
	// sync, rename or removal of a checkpoint or an output file.
	KillAtOp int
	// KillAfterBatch kills it after that batch of the input.
	KillAfterBatch int64
	// StopAfterBatch stops the job (with a savepoint) after that batch;
	// StopAtRead once it has read that many records (a live input).
	StopAfterBatch int64
	StopAtRead     int64
	// CheckpointEvery and SavepointEvery place checkpoints and savepoints
	// every so many batches.
	CheckpointEvery, SavepointEvery int64
	AcceptChanged                   bool
}

// child runs one run of a schedule and returns its exit code: 0 done, 1
// a failure or a refusal, 2 a bad job file, as weir run's.
func child(spec string) int {
	var r runSpec
	if err := json.Unmarshal([]byte(spec), &r); err != nil {
		fmt.Fprintln(os.Stderr, "crashall child:", err)
		return 3
	}
	j, err := job.Load(filepath.Join(r.Dir, "job.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := job.Options{Log: os.Stderr, From: r.From, FS: &killFS{FS: vfs.OS, at: r.KillAtOp}, AcceptChangedInput: r.AcceptChanged}
	opts.CheckpointAfter = func(b int64) (checkpoint.Kind, bool) {
		if r.KillAfterBatch > 0 && b >= r.KillAfterBatch {
			kill()
		}
		if r.StopAfterBatch > 0 && b >= r.StopAfterBatch {
			cancel()
		}
		switch {
		case r.SavepointEvery > 0 && b%r.SavepointEvery == 0:
			return checkpoint.Savepoint, true
		case r.CheckpointEvery > 0 && b%r.CheckpointEvery == 0:
			return checkpoint.Periodic, true
		}
		return "", false
	}
	rn, err := job.Build(j, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
		var je *job.Error
		if errors.As(err, &je) {
			return 2
		}
		return 1
	}
	if r.StopAtRead > 0 {
		go func() {
			for ctx.Err() == nil {
				c := rn.Engine().Control().Status(ctx, time.Second).Counts
				if c.Read+c.WatermarkLines+c.BlankLines >= r.StopAtRead {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	sum, err := rn.Run(ctx)
	if sum != nil {
		fmt.Fprint(os.Stderr, sum.Text())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
		return 1
	}
	return 0
}

func kill() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal comes
}

// killFS is the real file system, killing the process just before its
// at-th operation that changes something (0: never): the crash of a
// process, which loses nothing the kernel has, at any step of a checkpoint
// or a commit.
type killFS struct {
	vfs.FS
	mu sync.Mutex
	n  int
	at int
}

func (f *killFS) step() {
	if f.at == 0 {
		return
	}
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	if n >= f.at {
		kill()
	}
}

func (f *killFS) MkdirAll(dir string) error { f.step(); return f.FS.MkdirAll(dir) }
func (f *killFS) WriteFile(p string, data []byte) error {
	f.step()
	return f.FS.WriteFile(p, data)
}
func (f *killFS) Rename(from, to string) error { f.step(); return f.FS.Rename(from, to) }
func (f *killFS) RemoveAll(p string) error     { f.step(); return f.FS.RemoveAll(p) }
func (f *killFS) SyncDir(dir string) error     { f.step(); return f.FS.SyncDir(dir) }
func (f *killFS) OpenFile(p string, flag int) (vfs.File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		f.step()
	}
	file, err := f.FS.OpenFile(p, flag)
	if err != nil {
		return nil, err
	}
	return &killFile{File: file, fs: f}, nil
}

type killFile struct {
	vfs.File
	fs *killFS
}

func (f *killFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.step()
	return f.File.WriteAt(b, off)
}
func (f *killFile) Truncate(size int64) error { f.fs.step(); return f.File.Truncate(size) }
func (f *killFile) Sync() error               { f.fs.step(); return f.File.Sync() }
