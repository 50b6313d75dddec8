package job

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// Output streams of a job, in the order the checkpoint keeps them.
const (
	outResults = iota
	outLate
	outQuarantine
	numOutputs
)

var outputNames = [numOutputs]string{"results", "late", "quarantine"}

// committer owns a checkpointed job's output files. Nothing reaches a file
// before the checkpoint that covers it is complete (Flink's FileSink:
// in-progress output is kept in memory, pending output in the checkpoint,
// committed output in the file).
type committer struct {
	paths     [numOutputs]string
	files     [numOutputs]*os.File
	committed [numOutputs]int64
}

// openCommitter opens the output files. Starting fresh they are emptied;
// resuming they are cut back to what the checkpoint had committed and the
// checkpoint's pending output is committed again.
func openCommitter(paths [numOutputs]string, resume *resumeState, warn func(string)) (*committer, error) {
	c := &committer{paths: paths}
	for i, p := range paths {
		if p == "" {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			c.close()
			return nil, &RuntimeError{Msg: fmt.Sprintf("cannot write %s: %s", p, errText(err))}
		}
		c.files[i] = f
		var base int64
		if resume != nil {
			base = resume.meta.Outputs[i].Committed
		}
		st, err := f.Stat()
		if err != nil {
			c.close()
			return nil, err
		}
		switch {
		case st.Size() > base:
			err = f.Truncate(base)
		case st.Size() < base:
			warn(fmt.Sprintf("%s holds %d bytes, less than the %d the checkpoint committed (restored elsewhere?): appending after them", p, st.Size(), base))
			base = st.Size()
		}
		if err != nil {
			c.close()
			return nil, &RuntimeError{Msg: fmt.Sprintf("cannot truncate %s: %s", p, errText(err))}
		}
		c.committed[i] = base
	}
	if resume != nil {
		if err := c.commit(resume.pending); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// commit appends pending output to the files and syncs them.
func (c *committer) commit(pending [numOutputs][]byte) error {
	for i, f := range c.files {
		if f == nil || len(pending[i]) == 0 {
			continue
		}
		if _, err := f.WriteAt(pending[i], c.committed[i]); err != nil {
			return &RuntimeError{Msg: fmt.Sprintf("cannot write %s: %s", c.paths[i], errText(err))}
		}
		if err := f.Sync(); err != nil {
			return &RuntimeError{Msg: fmt.Sprintf("cannot sync %s: %s", c.paths[i], errText(err))}
		}
		c.committed[i] += int64(len(pending[i]))
	}
	return nil
}

func (c *committer) close() error {
	var first error
	for _, f := range c.files {
		if f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// ckptMeta is the job's part of a manifest.
type ckptMeta struct {
	Offset  int64        `json:"offset"` // input byte offset after the last line taken
	Line    int64        `json:"line"`
	Step    uint64       `json:"step"`
	Outputs []outputMeta `json:"outputs"`
	Written int64        `json:"panes_written"`
	LateW   int64        `json:"late_written"`
}

type outputMeta struct {
	Name      string `json:"name"`
	Path      string `json:"path,omitempty"`
	Committed int64  `json:"committed"` // bytes in the file before this checkpoint's pending output
	Pending   int64  `json:"pending"`
}

// ckptRequest is one checkpoint to write, assembled by the sink when every
// instance has passed the barrier.
type ckptRequest struct {
	id      uint64
	kind    checkpoint.Kind
	meta    ckptMeta
	source  []byte
	ops     [][]byte
	pending [numOutputs][]byte
	err     error       // a snapshot failed: the checkpoint fails
	done    chan string // receives the path (or "" on failure), if not nil
}

// ckptWriter writes checkpoints in order, in its own goroutine, and commits
// the output each one covers once it is durable. A failed checkpoint keeps its
// output pending for the next; after more than tolerable failures in a row the
// job stops, with the last good checkpoint intact.
type ckptWriter struct {
	j        *Job
	store    *checkpoint.Store
	com      *committer
	reqs     chan *ckptRequest
	wg       sync.WaitGroup
	log      func(string)
	failed   atomic.Pointer[error]
	failures int
	carry    [numOutputs][]byte
	lastGood string
}

func newCkptWriter(j *Job, store *checkpoint.Store, com *committer, log func(string), lastGood string) *ckptWriter {
	w := &ckptWriter{j: j, store: store, com: com, reqs: make(chan *ckptRequest, 1), log: log, lastGood: lastGood}
	w.wg.Add(1)
	go w.loop()
	return w
}

func (w *ckptWriter) loop() {
	defer w.wg.Done()
	for req := range w.reqs {
		if w.failed.Load() != nil {
			// The job is stopping: nothing more is written.
			if req.done != nil {
				req.done <- ""
			}
			continue
		}
		path, err := w.write(req)
		if req.done != nil {
			req.done <- path
		}
		if err != nil {
			if e := w.failed.Load(); e == nil {
				w.failed.Store(&err)
			}
		}
	}
}

func (w *ckptWriter) write(req *ckptRequest) (string, error) {
	for i := range req.pending {
		if len(w.carry[i]) > 0 {
			req.pending[i] = append(w.carry[i], req.pending[i]...)
			w.carry[i] = nil
		}
	}
	req.meta.Outputs = make([]outputMeta, numOutputs)
	for i := range req.meta.Outputs {
		req.meta.Outputs[i] = outputMeta{Name: outputNames[i], Path: w.com.paths[i], Committed: w.com.committed[i], Pending: int64(len(req.pending[i]))}
	}
	metaJSON, _ := json.Marshal(req.meta)
	names := []string{"source"}
	files := [][]byte{req.source}
	for i, op := range req.ops {
		names = append(names, fmt.Sprintf("op-%d", i))
		files = append(files, op)
	}
	for i := range req.pending {
		names = append(names, "out-"+outputNames[i])
		files = append(files, req.pending[i])
	}
	m := checkpoint.Manifest{
		ID: req.id, Kind: req.kind, Job: w.j.Name, Fingerprint: fingerprint(w.j),
		Parallelism: len(req.ops), Meta: metaJSON,
	}
	path, err := "", req.err
	if err == nil {
		path, err = w.store.Save(m, names, files)
	}
	if err != nil && req.kind == checkpoint.Final {
		// The input ended and every output is known: commit it anyway. A
		// new run resumes from the last good checkpoint and writes the same.
		w.log(fmt.Sprintf("could not record the end of the job (%s); the output is complete", errText(err)))
		return "", w.com.commit(req.pending)
	}
	if err != nil {
		w.failures++
		w.carry = req.pending
		msg := fmt.Sprintf("%s %d failed: %s (%d in a row, %d tolerated)", req.kind, req.id, errText(err), w.failures, w.j.Checkpoint.TolerableFailures)
		w.log(msg)
		if w.failures > w.j.Checkpoint.TolerableFailures {
			last := w.lastGood
			if last == "" {
				last = "none"
			}
			return "", &RuntimeError{Msg: fmt.Sprintf("checkpoints are failing: %s; the last good checkpoint is %s", msg, last)}
		}
		return "", nil
	}
	w.failures = 0
	w.lastGood = path
	if err := w.com.commit(req.pending); err != nil {
		return path, err
	}
	if req.kind != checkpoint.Savepoint {
		w.store.Prune()
	}
	return path, nil
}

// err is the error that stops the job, if any.
func (w *ckptWriter) err() error {
	if e := w.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// close waits for the writes asked so far.
func (w *ckptWriter) close() error {
	close(w.reqs)
	w.wg.Wait()
	return w.err()
}

// fingerprint identifies what a job computes: a checkpoint restores only
// into a job that computes the same thing (outputs, parallelism and
// checkpoint settings may change).
func fingerprint(j *Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "time=%s key=%s id=%s horizon=%d window=%T%+v lateness=%d trigger=%+v mode=%s wm=%+v/%s",
		j.TimeField, j.Key, j.ID, j.DedupHorizon, j.Window.Assigner, j.Window.Assigner, j.Window.AllowedLateness,
		j.Window.Trigger, j.Window.Mode, j.Watermark, j.WMField)
	for _, a := range j.Aggregates {
		fmt.Fprintf(&b, " %s=%d(%s)", a.Name, a.Kind, a.Field)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// resumeState is what a job restores from a checkpoint.
type resumeState struct {
	ckpt    *checkpoint.Checkpoint
	meta    ckptMeta
	ops     [][]byte
	pending [numOutputs][]byte
}

func loadResume(c *checkpoint.Checkpoint) (*resumeState, error) {
	rs := &resumeState{ckpt: c}
	if err := json.Unmarshal(c.Manifest.Meta, &rs.meta); err != nil || len(rs.meta.Outputs) != numOutputs {
		return nil, fmt.Errorf("checkpoint %s: unreadable job metadata", c.Path)
	}
	for i := 0; i < c.Manifest.Parallelism; i++ {
		b, ok := c.Files[fmt.Sprintf("op-%d", i)]
		if !ok {
			return nil, fmt.Errorf("checkpoint %s: op-%d missing", c.Path, i)
		}
		rs.ops = append(rs.ops, b)
	}
	for i := range rs.pending {
		rs.pending[i] = c.Files["out-"+outputNames[i]]
	}
	return rs, nil
}

// sourceState is the source stage's part of a checkpoint: counters, the
// parser's partitions, the driver's clock and watermark, the de-duplication
// ids.
func (r *jobRun) appendSourceState(b []byte) []byte {
	s := r.sum
	for _, v := range []int64{s.Read, s.Duplicates, s.Quarantined, s.WatermarkLines, s.BlankLines} {
		b = enc.AppendVarint(b, v)
	}
	b = enc.AppendUvarint(b, uint64(len(s.QuarantineReasons)))
	for k, v := range s.QuarantineReasons {
		b = enc.AppendString(b, k)
		b = enc.AppendVarint(b, v)
	}
	b = enc.AppendUvarint(b, uint64(len(r.lp.partKeys)))
	for _, k := range r.lp.partKeys {
		b = enc.AppendString(b, k)
	}
	b = r.d.AppendState(b)
	if r.dd != nil {
		b = enc.AppendBool(b, true)
		b = r.dd.appendState(b)
	} else {
		b = enc.AppendBool(b, false)
	}
	return b
}

func (r *jobRun) restoreSourceState(data []byte) error {
	d := enc.NewDecoder(data)
	s := r.sum
	for _, p := range []*int64{&s.Read, &s.Duplicates, &s.Quarantined, &s.WatermarkLines, &s.BlankLines} {
		*p = d.Varint()
	}
	n := d.Count(1 << 16)
	for range n {
		k := d.String()
		s.QuarantineReasons[k] = d.Varint()
	}
	np := d.Count(1 << 24)
	for range np {
		k := d.String()
		r.lp.parts[k] = len(r.lp.partKeys)
		r.lp.partKeys = append(r.lp.partKeys, k)
	}
	if err := r.d.RestoreState(d); err != nil {
		return err
	}
	if d.Bool() {
		if r.dd == nil {
			return fmt.Errorf("the checkpoint de-duplicates, this job does not")
		}
		r.dd.restoreState(d)
		if err := r.dd.err(); err != nil {
			return err
		}
	}
	if err := d.Err(); err != nil {
		return err
	}
	if d.Len() != 0 {
		return enc.ErrCorrupt
	}
	return nil
}

func (d *dedup) appendState(b []byte) []byte {
	b = enc.AppendUvarint(b, uint64(len(d.exp)))
	for _, e := range d.exp {
		b = enc.AppendVarint(b, int64(e.at))
		b = enc.AppendString(b, e.id)
	}
	return b
}

func (d *dedup) restoreState(dec *enc.Decoder) {
	n := dec.Count(1 << 34)
	for range n {
		at := mtime.Time(dec.Varint())
		id := dec.String()
		d.ids[id] = struct{}{}
		d.exp = append(d.exp, idExp{at, id})
	}
}

var _ io.Writer = (*pendingBuf)(nil)

// pendingBuf is in-progress output: written by the sink, taken at a barrier.
type pendingBuf struct{ b []byte }

func (p *pendingBuf) Write(b []byte) (int, error) {
	p.b = append(p.b, b...)
	return len(b), nil
}

func (p *pendingBuf) take() []byte {
	b := p.b
	p.b = nil
	return b
}
