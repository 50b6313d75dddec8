package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/vfs"
)

// layoutVersion is the version of the engine's files in a checkpoint: 3
// added the sinks' marks to their commit records; 4 the job's shape to the
// manifest (what its parts are, for a restore into a changed job), the late
// limit to the window stages' snapshots (version 4 and 5), and the
// de-duplication horizon to the head's state (version 5). Checkpoints of
// layouts 2 and 3 still restore: their sinks have no marks (2), and they
// restore only into a job with their fingerprint, which has not changed
// (a restore into a changed job needs the shape; see CompareShapes).
const layoutVersion = 4

// Layout is the version of the engine's files in the checkpoints it writes.
const Layout = layoutVersion

// File is one file of a participant in a checkpoint: its bytes, or a file
// on disk kept as a shared object of the checkpoint store (see
// checkpoint.Input). A restored file kept lazily has Path and no Data.
type File struct {
	Name   string
	Data   []byte
	Path   string
	Object string
	// parts, for a commit record the coordinator writes, are its bytes in
	// pieces (see checkpoint.Input.Parts), Data being nil.
	parts [][]byte
}

// Participant is one part of a job that takes part in checkpoints: it
// acknowledges every barrier (CheckpointBarrier.Ack) with its files, and gets
// them back on restore. A sink participant pre-commits instead, and is
// committed by the coordinator.
type Participant struct {
	e        *Engine
	name     string
	kind     string // what it is (partSource, ...), recorded in checkpoints
	label    string // how a message names it
	restored []File

	// sinks: the commit record. pending and mark are the coordinator's
	// (and, before the job runs, the starting goroutine's).
	commit    func(ctx context.Context, id uint64, pre []byte) error
	final     func(ctx context.Context, id uint64) ([]byte, int64, error)
	marker    connector.Marker // nil: the sink keeps no marks
	pending   []preCommit      // not known to be committed, oldest first
	mark      []byte           // the sink's mark after its last commit
	committed atomic.Int64
	commitNs  atomic.Int64 // how long the last commit took
}

// remark takes the sink's mark after Open or a commit.
func (p *Participant) remark() {
	if p.marker != nil {
		p.mark = p.marker.Mark()
	}
}

// preCommit is a sink's pre-commit for one checkpoint, with the number of
// items it covers.
type preCommit struct {
	id    uint64
	items int64
	data  []byte
}

// The kinds of participants, as a checkpoint records them (jobMeta.Kinds):
// what a part is, never read back from its name.
const (
	partSource  = "source"
	partSink    = "sink"
	partWindow  = "window"
	partHead    = "head"
	partJoin    = "join"
	partProcess = "process"
	partOther   = "other"
)

// SourcePart is the name of the position of the source name in checkpoints;
// SinkPart that of the commit record of the sink record. They are the one
// rule of those names, for the engine and every front door.
func SourcePart(name string) string { return "source:" + name }

// SinkPart: see SourcePart.
func SinkPart(record string) string { return "sink:" + record }

// legacyKind is what a part of a checkpoint of an earlier weir is, which
// recorded no kinds: its name's prefix was all there was.
func legacyKind(name string) string {
	switch {
	case strings.HasPrefix(name, "source:"):
		return partSource
	case strings.HasPrefix(name, "sink:"):
		return partSink
	}
	return partOther
}

// kindOf is what the part name of a checkpoint with the engine's meta is.
func (m jobMeta) kindOf(name string) string {
	if k, ok := m.Kinds[name]; ok {
		return k
	}
	return legacyKind(name)
}

// metaOf reads the engine's part of a checkpoint's manifest.
func metaOf(c *checkpoint.Checkpoint) jobMeta {
	var meta jobMeta
	json.Unmarshal(c.Manifest.Meta, &meta)
	return meta
}

// fileKind is what the part that the file name of a checkpoint with the
// engine's meta belongs to is.
func (m jobMeta) fileKind(name string) string {
	return m.kindOf(partOfFile(name, m.Participants))
}

// SourceFiles are the files of a checkpoint (its manifest m, being written
// with the files given) that hold the positions of its sources: a
// front door that publishes checkpoints elsewhere reads them (a group's
// task commits its input's offset).
func SourceFiles(m checkpoint.Manifest, files []checkpoint.Input) []checkpoint.Input {
	var meta jobMeta
	json.Unmarshal(m.Meta, &meta)
	var out []checkpoint.Input
	for _, f := range files {
		if meta.fileKind(f.Name) == partSource && f.Data != nil {
			out = append(out, f)
		}
	}
	return out
}

// Participant registers a part of the job under name, which must be unique
// and stable from run to run (a restore finds the part's files by it).
func (e *Engine) Participant(name string) (*Participant, error) {
	return e.participant(name, partOther)
}

// participant is Participant of a kind the engine knows.
func (e *Engine) participant(name, kind string) (*Participant, error) {
	if e.names[name] {
		return nil, fmt.Errorf("engine: two parts of the job are named %q", name)
	}
	if e.running.Load() {
		return nil, errors.New("engine: parts of a job are added before it runs")
	}
	e.names[name] = true
	p := &Participant{e: e, name: name, kind: kind, label: name}
	if e.resumed != nil {
		for _, f := range e.resumedFiles() {
			if f.Name == name || strings.HasPrefix(f.Name, name+".") {
				p.restored = append(p.restored, f)
			}
		}
	}
	e.parts = append(e.parts, p)
	return p, nil
}

// Name is the participant's name.
func (p *Participant) Name() string { return p.name }

// Restored is the participant's files in the checkpoint the job resumes from
// (none when it starts afresh), in the order they were written.
func (p *Participant) Restored() []File { return p.restored }

// File returns the restored file with the name suffix ("" for the file named
// as the participant), or nil.
func (p *Participant) File(suffix string) []byte {
	f, _ := p.restoredFile(suffix)
	return f.Data
}

// restoredFile is the restored file with the name suffix; a file the
// checkpoint does not have is an error.
func (p *Participant) restoredFile(suffix string) (File, error) {
	name := p.FileName(suffix)
	for _, f := range p.restored {
		if f.Name == name {
			return f, nil
		}
	}
	return File{}, fmt.Errorf("its state %s is missing", name)
}

// OpenFile opens the restored file with the name suffix to read, as File
// finds it: from memory, or, when the checkpoint keeps it as a file of its
// own (a shared object, or a savepoint's own copy of one), from that file;
// a file the checkpoint does not have is an error.
func (p *Participant) OpenFile(suffix string) (io.ReadCloser, error) {
	f, err := p.restoredFile(suffix)
	if err != nil {
		return nil, err
	}
	if f.Data == nil && f.Path != "" {
		return openStored(p.e.cfg.Checkpoint.FS, f.Path)
	}
	return io.NopCloser(bytes.NewReader(f.Data)), nil
}

// FileName is the name of the participant's file with suffix.
func (p *Participant) FileName(suffix string) string {
	if suffix == "" {
		return p.name
	}
	return p.name + "." + suffix
}

// CheckpointBarrier is one checkpoint on its way through the job.
type CheckpointBarrier struct {
	ID   uint64
	Kind checkpoint.Kind

	c       *coordinator
	mu      sync.Mutex
	files   []File
	pres    map[*Participant]preCommit
	missing int
	err     error
	reply   chan savepointResult
	started time.Time
	onDone  []func()
	// sources are the positions of the sources that acknowledge what a
	// checkpoint holds (connector.Committer), told once it is durable.
	sources []sourceAck
}

// sourceAck is a position a checkpoint holds of a source that acknowledges
// it.
type sourceAck struct {
	src connector.Committer
	pos []byte
}

// OnDone registers f to be called once the checkpoint is written, or has
// failed or been abandoned: to release what its files were read from.
func (b *CheckpointBarrier) OnDone(f func()) {
	b.mu.Lock()
	b.onDone = append(b.onDone, f)
	b.mu.Unlock()
}

// snapshotFiles are the files of a Pebble checkpoint of p's state, named
// p.FileName(prefix+name): the table files as shared objects of the store,
// the manifest and markers (small, and new at every checkpoint) read in.
// The snapshot is released once the checkpoint is written or has failed.
func (b *CheckpointBarrier) snapshotFiles(p *Participant, prefix string, snap *state.Snapshot) ([]File, error) {
	b.OnDone(func() { _ = snap.Release() })
	var files []File
	for _, f := range snap.Files {
		file := File{Name: p.FileName(prefix + f.Name), Path: filepath.Join(snap.Dir, f.Name), Object: f.Object}
		if f.Object == "" {
			data, err := os.ReadFile(file.Path)
			if err != nil {
				return nil, err
			}
			file.Data, file.Path = data, ""
		}
		files = append(files, file)
	}
	return files, nil
}

func (b *CheckpointBarrier) release() {
	b.mu.Lock()
	fs := b.onDone
	b.onDone = nil
	b.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

type savepointResult struct {
	path string
	err  error
}

// Ack acknowledges the barrier for p with its files (file names from
// p.FileName). Every participant acknowledges every barrier exactly once.
func (b *CheckpointBarrier) Ack(p *Participant, files ...File) {
	b.mu.Lock()
	b.files = append(b.files, files...)
	b.done()
}

// PreCommitted acknowledges the barrier for a sink participant: pre is what
// its PreCommit returned, items the number of items it covers.
func (b *CheckpointBarrier) PreCommitted(p *Participant, pre []byte, items int64) {
	b.mu.Lock()
	b.pres[p] = preCommit{id: b.ID, items: items, data: pre}
	b.done()
}

// Fail acknowledges the barrier with an error: the checkpoint fails (and
// counts as a failure toward tolerable_failures).
func (b *CheckpointBarrier) Fail(p *Participant, err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = fmt.Errorf("%s: %w", p.name, err)
	}
	b.done()
}

// done is called with b.mu held.
func (b *CheckpointBarrier) done() {
	b.missing--
	last := b.missing == 0
	b.mu.Unlock()
	if last {
		b.c.complete(b)
	}
}

// barrier starts a checkpoint: the source loop's participants acknowledge
// at once, the others as the barrier reaches them.
func (e *Engine) barrier(kind checkpoint.Kind, reply chan savepointResult) {
	b := &CheckpointBarrier{
		ID: e.nextID, Kind: kind, c: e.coord, pres: map[*Participant]preCommit{},
		missing: len(e.parts), reply: reply, started: time.Now(),
	}
	e.nextID++
	e.coord.started(b)
	for _, in := range e.inputs {
		if c := in.committer(); c != nil && in.pos != nil {
			b.sources = append(b.sources, sourceAck{c, in.pos})
		}
		files := []File{{Name: in.p.name, Data: in.pos}}
		if n := in.handed(); n > 0 {
			files = append(files, File{Name: in.p.FileName(deliveredFile), Data: enc.AppendUvarint(nil, uint64(n))})
		}
		b.Ack(in.p, files...)
	}
	e.signal(Signal{Kind: Barrier, Barrier: b})
}

// coordinator writes checkpoints in order and commits the sinks of each once
// it is durable.
type coordinator struct {
	e        *Engine
	done     chan *CheckpointBarrier
	inflight atomic.Int32
	wg       sync.WaitGroup
	failures int
	lastGood string
	closed   atomic.Bool
	dead     atomic.Bool // abandoned: nothing more is written

	mu   sync.Mutex
	last CheckpointInfo
	open map[*CheckpointBarrier]bool // started, not handled yet

	// stalled says why a commit is being retried (nil: none is): the
	// source loop stops reading meanwhile, so that what waits for the
	// commit does not grow with the outage. unstalled wakes it.
	stalled   atomic.Pointer[string]
	unstalled chan struct{}
}

// stall notes that a sink's commit failed and is being retried.
func (c *coordinator) stall(sink string, err error) {
	why := fmt.Sprintf("%s cannot commit (%s): reading is paused until it can", sink, errText(err))
	if c.stalled.Swap(&why) == nil {
		c.e.log("warning: " + why)
	}
}

// unstall notes that the commits go through again.
func (c *coordinator) unstall() {
	if c.stalled.Swap(nil) != nil {
		c.e.log("the commits go through again: reading goes on")
		select {
		case c.unstalled <- struct{}{}:
		default:
		}
	}
}

// Stalled says why reading is paused, or "".
func (c *coordinator) Stalled() string {
	if c == nil {
		return ""
	}
	if s := c.stalled.Load(); s != nil {
		return *s
	}
	return ""
}

// CheckpointInfo describes the last checkpoint written.
type CheckpointInfo struct {
	ID       uint64        `json:"id"`
	Kind     string        `json:"kind"`
	Path     string        `json:"path"`
	At       time.Time     `json:"at"`
	Duration time.Duration `json:"duration_ns"`
	Bytes    int64         `json:"bytes"`
	Failures int           `json:"failures_in_a_row"`
	Total    int64         `json:"total"`
	Failed   int64         `json:"failed_total"`
}

func newCoordinator(e *Engine) *coordinator {
	c := &coordinator{e: e, done: make(chan *CheckpointBarrier, 16), open: map[*CheckpointBarrier]bool{}, unstalled: make(chan struct{}, 1)}
	if e.resumed != nil {
		c.lastGood = e.resumed.Path
	}
	c.wg.Add(1)
	return c
}

func (c *coordinator) started(b *CheckpointBarrier) {
	c.inflight.Add(1)
	c.mu.Lock()
	c.open[b] = true
	c.mu.Unlock()
}

func (c *coordinator) complete(b *CheckpointBarrier) { c.done <- b }

func (c *coordinator) run() {
	defer c.wg.Done()
	for b := range c.done {
		c.handle(b)
		b.release()
		c.mu.Lock()
		delete(c.open, b)
		c.mu.Unlock()
		c.inflight.Add(-1)
		// A sink that filled up while this checkpoint was under way waits
		// for the next one.
		c.e.wakeHeld()
	}
}

// close waits for the checkpoints under way, once the stages have stopped
// (every barrier has been acknowledged or will never be).
func (c *coordinator) close() {
	if c.closed.CompareAndSwap(false, true) {
		// Barriers that will never complete (the job failed or was
		// aborted): answer their requests.
		close(c.done)
		c.wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		for b := range c.open {
			b.release()
			if b.reply != nil {
				b.reply <- savepointResult{err: errors.New("the job stopped before the checkpoint was complete")}
			}
		}
		clear(c.open)
	}
}

// abandon makes the coordinator write nothing more: the job is aborting,
// and what the stages acknowledge from now on is not consistent.
func (c *coordinator) abandon() { c.dead.Store(true) }

// Last is the last checkpoint written, for status.
func (c *coordinator) Last() CheckpointInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func (c *coordinator) handle(b *CheckpointBarrier) {
	e := c.e
	if c.dead.Load() {
		if b.reply != nil {
			b.reply <- savepointResult{err: errors.New("the job stopped before the checkpoint was complete")}
		}
		return
	}
	// Every sink's pre-commit joins those of failed checkpoints before it.
	for _, p := range e.parts {
		if p.commit == nil {
			continue
		}
		if pc, ok := b.pres[p]; ok {
			p.pending = append(p.pending, pc)
		}
		b.files = append(b.files, File{Name: p.name, parts: recordParts(p.pending, p.committed.Load(), p.mark)})
	}
	m, in := c.manifest(b)
	path, size, err := "", int64(0), b.err
	if err == nil {
		path, size, err = c.write(b, m, in)
	}
	c.mu.Lock()
	c.last.Total++
	c.mu.Unlock()
	if err != nil {
		c.failures++
		c.mu.Lock()
		c.last.Failures = c.failures
		c.last.Failed++
		c.mu.Unlock()
		msg := fmt.Sprintf("%s %d failed: %s (%d in a row, %d tolerated)", b.Kind, b.ID, errText(err), c.failures, e.cfg.Checkpoint.TolerableFailures)
		e.log(msg)
		if b.reply != nil {
			b.reply <- savepointResult{err: err}
		}
		if c.failures > e.cfg.Checkpoint.TolerableFailures {
			last := c.lastGood
			if last == "" {
				last = "none"
			}
			e.Fail(&CheckpointError{ID: b.ID, Msg: fmt.Sprintf("checkpoints are failing: %s; the last good checkpoint is %s", msg, last), Err: err})
		}
		return
	}
	c.lastGood = path
	if publish := e.cfg.Checkpoint.Publish; publish != nil {
		// The checkpoint counts once it is published (in the transaction
		// the sinks commit next): without it, nothing may be committed.
		if err := publish(e.sinkCtx, m, in); err != nil {
			err = &CheckpointError{ID: b.ID, Msg: fmt.Sprintf("%s %d could not be published: %s", b.Kind, b.ID, errText(err)), Err: err}
			e.Fail(err)
			if b.reply != nil {
				b.reply <- savepointResult{err: err}
			}
			return
		}
	}
	// The checkpoint holds what the sources read up to their positions:
	// those that acknowledge it to where they read it from may now.
	for _, sa := range b.sources {
		sa.src.Committed(sa.pos)
	}
	if err := c.commitAll(b.ID); err != nil && e.cfg.Checkpoint.Publish != nil {
		e.log(errText(err)) // and the job stops
		if b.reply != nil {
			b.reply <- savepointResult{err: err}
		}
		return
	} else if err != nil {
		// The checkpoint is durable and keeps what is still to commit: the
		// next checkpoint carries it and its commit tries again. A sink that
		// keeps refusing (a table not writable) stops the job once the
		// failures in a row pass the tolerated number, as checkpoints do.
		c.failures++
		c.mu.Lock()
		c.last.Failures = c.failures
		c.last.Failed++
		c.mu.Unlock()
		if connector.StorageFull(err) {
			// An output's disk is full: the job stops now, its output
			// committed up to the last checkpoint; the next run, once
			// there is room, commits this one again.
			e.Fail(err)
		} else {
			e.log(fmt.Sprintf("%s (%d in a row, %d tolerated)", errText(err), c.failures, e.cfg.Checkpoint.TolerableFailures))
			if c.failures > e.cfg.Checkpoint.TolerableFailures {
				e.Fail(err)
			}
		}
		if b.reply != nil {
			b.reply <- savepointResult{path: path, err: err}
		}
		return
	}
	c.failures = 0
	c.mu.Lock()
	c.last.ID, c.last.Kind, c.last.Path, c.last.At = b.ID, string(b.Kind), path, time.Now()
	c.last.Duration, c.last.Bytes, c.last.Failures = time.Since(b.started), size, 0
	c.mu.Unlock()
	if b.Kind == checkpoint.Final {
		// The end of the input is recorded only once its output is
		// committed: a run that dies before that resumes from the final
		// checkpoint and commits it, instead of starting afresh.
		if f := e.cfg.Checkpoint.OnEnd; f != nil {
			if err := f(); err != nil {
				e.Fail(err)
			}
		}
		if err := c.recordFinalCommitted(m, in); err != nil {
			if b.reply != nil {
				b.reply <- savepointResult{err: err}
			}
			return
		}
	}
	if b.Kind != checkpoint.Savepoint {
		e.store.Prune()
	} else if k := e.cfg.Checkpoint.KeepSavepoints; k > 0 {
		for _, gone := range e.store.PruneSavepoints(k, path) {
			e.log(fmt.Sprintf("removed the savepoint %s: keep_savepoints keeps the newest %d", gone, k))
		}
	}
	if b.reply != nil {
		b.reply <- savepointResult{path: path}
	}
}

// finalRecordName is the file of the front door's record in a final
// checkpoint (Checkpointing.FinalRecord).
const finalRecordName = "final"

// recordFinalCommitted writes the final checkpoint again, its output
// committed: the sinks' records hold nothing pending.
func (c *coordinator) recordFinalCommitted(m checkpoint.Manifest, in []checkpoint.Input) error {
	e := c.e
	out := make([]checkpoint.Input, 0, len(in))
	sinks := map[string]bool{}
	for _, p := range e.parts {
		sinks[p.name] = p.commit != nil
	}
	for _, f := range in {
		if sinks[f.Name] {
			continue
		}
		out = append(out, f)
	}
	for _, p := range e.parts {
		if p.commit != nil {
			out = append(out, checkpoint.Input{Name: p.name, Data: encodeRecord(nil, p.committed.Load(), p.mark)})
		}
	}
	m.ID = e.nextID
	e.nextID++
	if _, err := e.store.SaveFiles(m, out); err != nil {
		return &CheckpointError{ID: m.ID, Msg: fmt.Sprintf("cannot record that the output of the end of the input is committed (checkpoint %d): %s; the next run commits it again", m.ID, errText(err)), Err: err}
	}
	return nil
}

// finalRun says whether c is the final checkpoint of a run, which reached
// the end of its input and holds no position to read on from: with its
// output committed, a restore has nothing to resume and the job runs again
// from its beginning; with it uncommitted (finishing), the job commits it
// and reads nothing. c may be nil.
func finalRun(c *checkpoint.Checkpoint) (final, finishing bool) {
	if c == nil || c.Manifest.Kind != checkpoint.Final {
		return false, false
	}
	var meta jobMeta
	json.Unmarshal(c.Manifest.Meta, &meta)
	return true, uncommitted(c, meta.Layout)
}

// uncommitted reports whether a checkpoint's sinks have pre-commits not
// known to be committed.
func uncommitted(c *checkpoint.Checkpoint, layout int) bool {
	meta := metaOf(c)
	for name, data := range c.Files {
		if meta.kindOf(name) != partSink {
			continue
		}
		if list, _, _, err := decodeRecord(data, layout); err != nil || len(list) > 0 {
			return true
		}
	}
	return false
}

// commitAll commits every sink's pending pre-commits, oldest first. A commit
// that fails with a retryable error is tried again with backoff while the
// job lives.
func (c *coordinator) commitAll(id uint64) error {
	for _, p := range c.e.parts {
		if p.commit == nil {
			continue
		}
		t0 := time.Now()
		for _, pc := range p.pending {
			commit := func() error {
				err := p.commit(c.e.sinkCtx, pc.id, pc.data)
				if err != nil && connector.Retryable(err) {
					c.stall(p.label, err)
				}
				return err
			}
			err := retry(c.e, p.name+" commit", commit)
			if err == nil {
				c.unstall()
			}
			if err != nil {
				if c.e.cfg.Checkpoint.Publish != nil {
					// The checkpoint and its output are one transaction:
					// when it cannot commit, neither is visible, and the
					// job starts again from what was published before.
					err = &CheckpointError{ID: id, Msg: fmt.Sprintf("checkpoint %d could not be committed, nor its output: %s", id, errText(err)), Err: err}
					c.e.Fail(err)
					return err
				}
				return &CheckpointError{ID: id, Msg: fmt.Sprintf("checkpoint %d is durable, but its commit failed (the next checkpoint or a restart commits it again): %s", id, errText(err)), Err: err}
			}
			p.committed.Add(pc.items)
			p.remark()
		}
		p.commitNs.Store(int64(time.Since(t0)))
		p.pending = nil
	}
	return nil
}

// jobMeta is the engine's part of a manifest.
type jobMeta struct {
	Layout       int      `json:"layout"`
	Participants []string `json:"participants"`
	// Kinds says what each participant is (partSource, partSink, ...);
	// absent in checkpoints of an earlier weir (legacyKind).
	Kinds map[string]string `json:"kinds,omitempty"`
	// Shape describes the state's parts (layout 4 on; nil before).
	Shape *Shape `json:"shape,omitempty"`
}

// manifest is what b's checkpoint is made of: its manifest (without its
// files' entries, which the store makes) and its files.
func (c *coordinator) manifest(b *CheckpointBarrier) (checkpoint.Manifest, []checkpoint.Input) {
	e := c.e
	in := make([]checkpoint.Input, len(b.files))
	for i, f := range b.files {
		in[i] = checkpoint.Input{Name: f.Name, Data: f.Data, Parts: f.parts, Path: f.Path, Object: f.Object}
	}
	m := checkpoint.Manifest{
		ID: b.ID, Kind: b.Kind, Job: e.cfg.Name, Fingerprint: e.cfg.Checkpoint.Fingerprint,
		Parallelism: 0, Meta: e.meta(e.cfg.Checkpoint.Shape),
	}
	return m, in
}

// meta is the engine's part of a manifest of this run, whose state has
// the given shape.
func (e *Engine) meta(shape *Shape) json.RawMessage {
	meta := jobMeta{Layout: layoutVersion, Shape: shape, Kinds: map[string]string{}}
	for _, p := range e.parts {
		meta.Participants = append(meta.Participants, p.name)
		meta.Kinds[p.name] = p.kind
	}
	metaJSON, _ := json.Marshal(meta)
	return metaJSON
}

func (c *coordinator) write(b *CheckpointBarrier, m checkpoint.Manifest, in []checkpoint.Input) (string, int64, error) {
	e := c.e
	copied := e.store.Copied
	path, err := e.store.SaveFiles(m, in)
	// The bytes written: the files, and the shared objects copied.
	size := e.store.Copied - copied
	for _, f := range b.files {
		size += int64(len(f.Data))
		for _, part := range f.parts {
			size += int64(len(part))
		}
	}
	return path, size, err
}

// finalCheckpoint records that the input ended: every sink pre-commits what
// remains, the checkpoint is written, the sinks commit. The stages have all
// finished, so the sinks are called from this goroutine.
func (e *Engine) finalCheckpoint() {
	for attempt := 0; ; attempt++ {
		b := &CheckpointBarrier{ID: e.nextID, Kind: checkpoint.Final, c: e.coord, pres: map[*Participant]preCommit{}, started: time.Now()}
		e.nextID++
		if attempt == 0 {
			for _, p := range e.parts {
				if p.final == nil {
					continue
				}
				pre, n, err := p.final(e.sinkCtx, b.ID)
				if err != nil {
					if e.stopAsked.Load() && e.sinkCtx.Err() != nil {
						return // a stop cut it short
					}
					e.Fail(err)
					return
				}
				b.pres[p] = preCommit{id: b.ID, items: n, data: pre}
			}
		}
		if ok, rec := e.Finishing(); ok {
			b.files = append(b.files, File{Name: finalRecordName, Data: rec})
		} else if f := e.cfg.Checkpoint.FinalRecord; f != nil {
			b.files = append(b.files, File{Name: finalRecordName, Data: f()})
		}
		e.coord.started(b)
		reply := make(chan savepointResult, 1)
		b.reply = reply
		e.coord.complete(b)
		r := <-reply
		if r.err != nil && e.stopAsked.Load() && e.sinkCtx.Err() != nil {
			return // a stop cut it short
		}
		if r.err == nil || e.Err() != nil || attempt >= e.cfg.Checkpoint.TolerableFailures {
			if r.err != nil && e.Err() == nil {
				e.Fail(&CheckpointError{ID: b.ID, Msg: "could not record the end of the job (the next run resumes from the last good checkpoint)", Err: r.err})
			}
			return
		}
	}
}

// encodeRecord encodes a sink's commit record, its file in a checkpoint:
// its committed item count, the pre-commits not known to be committed
// (oldest first), and the sink's mark of what it has committed.
func encodeRecord(list []preCommit, committed int64, mark []byte) []byte {
	return bytes.Join(recordParts(list, committed, mark), nil)
}

// recordParts is encodeRecord's bytes in pieces: the pre-commits' data are
// pieces of their own, not copied (they are kept until committed anyway,
// and may be most of a job's memory while a sink is down).
func recordParts(list []preCommit, committed int64, mark []byte) [][]byte {
	parts := make([][]byte, 0, 2*len(list)+1)
	b := enc.AppendVarint(nil, committed)
	b = enc.AppendUvarint(b, uint64(len(list)))
	for _, pc := range list {
		b = enc.AppendUvarint(b, pc.id)
		b = enc.AppendVarint(b, pc.items)
		b = enc.AppendUvarint(b, uint64(len(pc.data)))
		parts = append(parts, b, pc.data)
		b = nil
	}
	b = enc.AppendBool(b, mark != nil)
	if mark != nil {
		b = enc.AppendBytes(b, mark)
	}
	return append(parts, b)
}

// decodeRecord decodes a commit record of the given layout (2: no mark).
func decodeRecord(data []byte, layout int) (list []preCommit, committed int64, mark []byte, err error) {
	d := enc.NewDecoder(data)
	committed = d.Varint()
	n := d.Items(1 << 20)
	for range n {
		pc := preCommit{id: d.Uvarint(), items: d.Varint()}
		pc.data = d.Bytes()
		list = append(list, pc)
	}
	if layout >= 3 && d.Bool() {
		mark = d.Bytes()
		if mark == nil {
			mark = []byte{}
		}
	}
	if d.Err() != nil {
		return nil, 0, nil, d.Err()
	}
	return list, committed, mark, nil
}

// CheckpointError is a checkpoint that could not be written or committed.
type CheckpointError struct {
	ID  uint64
	Msg string
	Err error
}

func (e *CheckpointError) Error() string { return e.Msg }
func (e *CheckpointError) Unwrap() error { return e.Err }

// openCheckpoints opens the store and finds the checkpoint to resume from.
func (e *Engine) openCheckpoints() error {
	ck := e.cfg.Checkpoint
	fs := ck.FS
	if fs == nil {
		fs = checkpoint.OSFS
	}
	store, err := checkpoint.Open(fs, ck.Dir, ck.Keep)
	if err != nil {
		return &SetupError{Field: "checkpoint.dir", Msg: fmt.Sprintf("cannot open the checkpoint directory %s: %s", ck.Dir, errAbout(ck.Dir, err)), Err: err}
	}
	e.store = store
	var c *checkpoint.Checkpoint
	if ck.Fresh {
		// Started afresh on purpose: what the store holds is left behind,
		// kept but never restored again.
		n := store.Len()
		if err := store.Abandon(0); err != nil {
			store.Close()
			return &SetupError{Field: "checkpoint.dir", Msg: fmt.Sprintf("cannot record in %s that its checkpoints are left behind: %s", ck.Dir, errAbout(ck.Dir, err)), Err: err}
		}
		if n > 0 {
			e.log(fmt.Sprintf("starting %s afresh: the %d checkpoints and savepoints of %s are left behind (kept, never restored); every output gets every result again", e.cfg.Name, n, ck.Dir))
		}
		e.nextID = store.NextID()
		return nil
	}
	if ck.From != "" {
		if c, err = checkpoint.Load(fs, ck.From); err != nil {
			store.Close()
			return &SetupError{Msg: "cannot restore: " + err.Error(), Err: err}
		}
		if base, gone := store.Abandoned(c.Manifest.ID); gone {
			store.Close()
			lb := &LeftBehindError{Checkpoint: ck.From, Base: base}
			return &SetupError{Msg: lb.Error(), Err: lb}
		}
	} else {
		var bad []string
		c = store.Latest(func(s string) {
			bad = append(bad, s)
			e.log(s)
		})
		if c == nil && len(bad) > 0 {
			store.Close()
			return &SetupError{Msg: fmt.Sprintf("the checkpoint directory %s holds %d checkpoints and none is complete and intact; weir will not start over by itself (that would write every result again): to start from the beginning, move %s away", ck.Dir, len(bad), ck.Dir)}
		}
	}
	if final, finishing := finalRun(c); final && finishing {
		// The newest checkpoint or the one named (From), it holds no
		// position to read on from, only what that run committed.
		e.log(fmt.Sprintf("the last run of %s reached the end of its input but stopped before its output was committed (%s): committing it", e.cfg.Name, c.Path))
		e.finishing = true
	} else if final {
		// Run again from the beginning, if every sink can take back what
		// that run wrote (RerunRefusal).
		e.rerun, c = c.Path, nil
	}
	if c != nil {
		r, err := CheckRestore(c, ck)
		if err != nil {
			store.Close()
			return err
		}
		// Before any output is taken back to c: the checkpoints newer than
		// c stop being ones to fall back to.
		if err := store.Abandon(c.Manifest.ID); err != nil {
			store.Close()
			return &SetupError{Field: "checkpoint.dir", Msg: fmt.Sprintf("cannot record in %s that the checkpoints after %s are left behind: %s", ck.Dir, c.Path, errAbout(ck.Dir, err)), Err: err}
		}
		e.resumed, e.resumedLayout, e.restore = c, r.Layout, r
	}
	e.nextID = store.NextID()
	return nil
}

func (e *Engine) resumedFiles() []File { return checkpointFiles(e.resumed) }

// checkpointFiles are the files of a loaded checkpoint, in the order it
// lists them.
func checkpointFiles(c *checkpoint.Checkpoint) []File {
	var out []File
	for _, f := range c.Manifest.Files {
		out = append(out, File{Name: f.Name, Data: c.Files[f.Name], Path: c.Paths[f.Name]})
	}
	return out
}

// LeftBehindError refuses to restore a checkpoint a restore from an older
// one left behind (checkpoint.Store.Abandon): the outputs were taken back
// to that one, so they no longer hold what it describes. Base is the
// checkpoint that restore resumed from, 0 for a start afresh. A front door
// names its own way of restoring a given checkpoint (Say).
type LeftBehindError struct {
	Checkpoint string
	Base       uint64
}

// Error is the refusal in the engine's words.
func (e *LeftBehindError) Error() string { return e.Say("Checkpointing.From") }

// Say is the refusal in one line, from the words of the front door for
// restoring a given checkpoint.
func (e *LeftBehindError) Say(from string) string {
	if e.Base == 0 {
		return fmt.Sprintf("cannot restore %s: the job was started afresh after it was taken, and its outputs written again, so they no longer hold what it describes (restoring it would write results twice, or leave a hole). Resume without %s (from the newest checkpoint since), or restore one taken since", e.Checkpoint, from)
	}
	return fmt.Sprintf("cannot restore %s: a run resumed from the older checkpoint %d after it was taken, and took the outputs back to that one, so they no longer hold what it describes (restoring it would write results twice, or leave a hole). Resume without %s (from the newest checkpoint since), restore one taken since, or move the checkpoint directory and the outputs away to start over", e.Checkpoint, e.Base, from)
}

// RerunError refuses to run again from its beginning a job whose last run
// finished, because some of its sinks cannot take back what that run wrote:
// a topic, a webhook, a function would get every result a second time. A
// front door names the way to run it again on purpose
// (Checkpointing.Fresh).
type RerunError struct {
	// Job is the job's name; Checkpoint the checkpoint that records that
	// its last run finished.
	Job, Checkpoint string
	// Sinks are the sinks that cannot take back their output, by name.
	Sinks []string
}

func (e *RerunError) Error() string {
	return fmt.Sprintf("the last run of %s finished (%s): running it again from the beginning would write every result a second time to %s, which cannot take back what %s", e.Job, e.Checkpoint, strings.Join(e.Sinks, ", "), map[bool]string{true: "it holds", false: "they hold"}[len(e.Sinks) == 1])
}

// SetupError is a job that cannot start: a checkpoint directory that cannot
// be used, a checkpoint that cannot be restored, a sink that cannot keep the
// job's promise. Field names the job-file field concerned, when there is one.
type SetupError struct {
	Field string
	Msg   string
	Err   error
}

func (e *SetupError) Error() string { return e.Msg }
func (e *SetupError) Unwrap() error { return e.Err }

// errText is err for a log line: whole, the path of a file it names
// included (a disk that is full is a disk somewhere).
func errText(err error) string { return err.Error() }

// errAbout is err in a message that names path already: the path is not
// said twice ("cannot open DIR: not a directory"). An error about another
// file keeps its path.
func errAbout(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && filepath.Clean(pe.Path) == filepath.Clean(path) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Checkpoints describes the last checkpoint this run wrote, with the counts
// of checkpoints taken and failed (the zero CheckpointInfo without
// checkpoints). It may be called during the run and after it.
func (e *Engine) Checkpoints() CheckpointInfo {
	if e.coord == nil {
		return CheckpointInfo{}
	}
	e.coord.mu.Lock()
	defer e.coord.mu.Unlock()
	return e.coord.last
}

// materialize puts the restored files of p whose names start with
// p.FileName(prefix) into a new temporary directory, under the rest of their
// names, and returns it ("" if there are none): a Pebble checkpoint to open.
// Shared objects are hard-linked where the file system allows, else copied.
func (e *Engine) materialize(p *Participant, prefix string) (string, error) {
	return materializeFiles(e.cfg.Checkpoint.FS, p.restored, p.FileName(prefix))
}

// materializeFiles puts the files whose names start with prefix into a new
// temporary directory, as materialize does.
func materializeFiles(fs checkpoint.FS, files []File, prefix string) (string, error) {
	dir := ""
	for _, f := range files {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			continue
		}
		if name != filepath.Base(name) || name == "" || name == "." || name == ".." {
			return "", fmt.Errorf("%s is not a file name", f.Name)
		}
		if dir == "" {
			d, err := vfs.MkdirScratch("", "weir-restore-")
			if err != nil {
				return "", err
			}
			dir = d
		}
		to := filepath.Join(dir, name)
		if f.Path == "" {
			if err := os.WriteFile(to, f.Data, 0o644); err != nil {
				removeDir(dir)
				return "", err
			}
			continue
		}
		if realFS(fs) {
			if os.Link(f.Path, to) == nil {
				continue
			}
		}
		if err := copyOut(fs, f.Path, to); err != nil {
			removeDir(dir)
			return "", err
		}
	}
	return dir, nil
}

// realFS says the checkpoint store's file system is the real one (nil is).
func realFS(fs checkpoint.FS) bool { return fs == nil || vfs.OnDisk(fs) }

// openStored opens a file of the checkpoint store's file system to read:
// on the real one as it is, else read whole.
func openStored(fs checkpoint.FS, path string) (io.ReadCloser, error) {
	if realFS(fs) {
		return os.Open(path)
	}
	b, err := fs.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// copyOut copies a file of the checkpoint store's file system to the real
// one.
func copyOut(fs checkpoint.FS, from, to string) error {
	if realFS(fs) {
		src, err := os.Open(from)
		if err != nil {
			return err
		}
		defer src.Close()
		dst, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(dst, src); err != nil {
			dst.Close()
			return err
		}
		return dst.Close()
	}
	b, err := fs.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// recordRecommitted writes a checkpoint that is the restored one with every
// sink's pending pre-commits committed (they were, by the OnStart
// functions), before any sink starts. A run that crashes from now on resumes
// from it and has nothing to commit again: committing a Kafka transaction
// again after a newer start fenced its producer cannot succeed, nor tell a
// committed transaction from one aborted by its timeout.
func (e *Engine) recordRecommitted() error {
	r := e.resumed
	meta := metaOf(r)
	var in []checkpoint.Input
	for _, f := range r.Manifest.Files {
		switch {
		case meta.kindOf(f.Name) == partSink:
			// Every sink of this run gets its record below; a sink the
			// job no longer has loses its own.
		case f.Object != "":
			in = append(in, checkpoint.Input{Name: f.Name, Path: r.Paths[f.Name], Object: f.Object})
		case f.Lazy:
			// A savepoint's own copy of a table file: a shared object of
			// this store from now on, named by its contents.
			in = append(in, checkpoint.Input{Name: f.Name, Path: r.Paths[f.Name], Object: "sha256-" + f.SHA256})
		default:
			in = append(in, checkpoint.Input{Name: f.Name, Data: r.Files[f.Name]})
		}
	}
	for _, p := range e.parts {
		if p.commit != nil {
			in = append(in, checkpoint.Input{Name: p.name, Data: encodeRecord(nil, p.committed.Load(), p.mark)})
		}
	}
	e.store.Adopt(r.Manifest.Files)
	m := r.Manifest
	m.ID, m.Created, m.Files = e.nextID, "", nil
	if m.Kind != checkpoint.Final {
		// The record of the end of the input stays one: nothing after it
		// is to be read.
		m.Kind = checkpoint.Periodic
	}
	// The state is still the restored checkpoint's: so is its shape.
	var shape *Shape
	if e.restore != nil {
		shape = e.restore.Old
	}
	m.Meta = e.meta(shape)
	e.nextID++
	path, err := e.store.SaveFiles(m, in)
	if err != nil {
		return &CheckpointError{ID: m.ID, Msg: fmt.Sprintf("cannot record that the restored checkpoint's output is committed (checkpoint %d): %s", m.ID, errText(err)), Err: err}
	}
	e.store.Prune()
	e.log(fmt.Sprintf("committed what %s left pending; recorded in %s", r.Path, path))
	return nil
}
