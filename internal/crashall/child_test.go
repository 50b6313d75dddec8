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
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/vfs"
)

// childEnv holds a run's spec when the test binary runs as a child.
const childEnv = "WEIR_CRASHALL_CHILD"

// runSpec is one run of a schedule, as the child process carries it out.
type runSpec struct {
	Dir  string
	From string // restore this checkpoint or savepoint
	// KillAtOp kills the process (SIGKILL) just before the n-th write,
	// sync, rename or removal of a checkpoint or an output file; with Torn,
	// a write of more than a page there is cut: its first pages (half of
	// them) are written, then the process is killed, as a kill in the
	// middle of a write leaves a file.
	KillAtOp int
	Torn     bool
	// TornWrite kills the process in the middle of the n-th write of more
	// than a page to TornFile (its first pages written, half of them).
	TornWrite int
	TornFile  string
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
	j, err := jobfile.Load(filepath.Join(r.Dir, "job.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kfs := &killFS{FS: vfs.OS, at: r.KillAtOp, torn: r.Torn, tornWrite: r.TornWrite}
	if r.TornFile != "" {
		kfs.tornFile = filepath.Join(r.Dir, r.TornFile)
	}
	opts := job.Options{Log: os.Stderr, From: r.From, FS: kfs, AcceptChangedInput: r.AcceptChanged}
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
		var je *jobfile.Error
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
	mu   sync.Mutex
	n    int
	at   int
	torn bool
	// tornWrite counts the writes of more than a page to tornFile, and
	// kills in the middle of that one.
	tornWrite, writes int
	tornFile          string
}

func (f *killFS) step() {
	if f.count() {
		kill()
	}
}

// count counts an operation, and reports whether the process dies at it.
func (f *killFS) count() bool {
	if f.at == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return f.n >= f.at
}

// writeAt writes b at off to file, or dies at it: before it, or, for a
// torn kill, after its first pages.
func (f *killFS) writeAt(file vfs.File, path string, b []byte, off int64) (int, error) {
	die := f.count()
	if len(b) > page && f.tornWrite > 0 && path == f.tornFile {
		f.mu.Lock()
		f.writes++
		if f.writes == f.tornWrite {
			f.mu.Unlock()
			tear(file, b, off)
		}
		f.mu.Unlock()
	}
	if die {
		if f.torn && len(b) > page {
			tear(file, b, off)
		}
		kill()
	}
	return file.WriteAt(b, off)
}

// page is the unit a write killed in its middle leaves written: the
// kernel copies a write into the file page by page, and stops at a page
// boundary when the process is killed.
const page = 4096

// tear writes the first half of the pages of b (at off) and kills the
// process.
func tear(file vfs.File, b []byte, off int64) {
	first := page - int(off%page)
	pages := 1 + (len(b)-first+page-1)/page
	n := min(len(b), first+(pages/2-1)*page)
	file.WriteAt(b[:n], off)
	kill()
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
	return &killFile{File: file, fs: f, path: p}, nil
}

type killFile struct {
	vfs.File
	fs   *killFS
	path string
}

func (f *killFile) WriteAt(b []byte, off int64) (int, error) {
	return f.fs.writeAt(f.File, f.path, b, off)
}
func (f *killFile) Truncate(size int64) error { f.fs.step(); return f.File.Truncate(size) }
func (f *killFile) Sync() error               { f.fs.step(); return f.File.Sync() }
