package job

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
)

// Options are the parts of a run that do not come from the job file.
type Options struct {
	Stdin  io.Reader // for source "-"
	Stdout io.Writer // for outputs "-"
	// Log receives one line per notable event (resuming, a checkpoint that
	// failed, a corrupt checkpoint skipped); nil discards them.
	Log io.Writer
	// Progress, when set, receives a one-line progress report a few times a
	// second (lines/s, watermark, open windows), each ending in "\r".
	Progress io.Writer
	// From restores from this checkpoint or savepoint directory instead of
	// the newest one in the job's checkpoint directory.
	From string
	// NoSavepointOnStop skips the savepoint normally taken when ctx is
	// cancelled (SIGTERM, Ctrl-C).
	NoSavepointOnStop bool
	// Savepoints asks the running job for a savepoint; the path written is
	// sent back on the channel received (or "" if it failed).
	Savepoints <-chan chan string
	// FS is the file system checkpoints are written to (tests inject
	// failures); nil is the real one.
	FS checkpoint.FS

	// savepointEvery takes a savepoint after every so many lines (tests).
	savepointEvery int64
}

// RuntimeError is a failure while a job runs (as opposed to a bad job
// file): an output that cannot be written, checkpoints that keep failing.
type RuntimeError struct{ Msg string }

func (e *RuntimeError) Error() string { return e.Msg }

// Summary accounts for every line of the input: Read = Accepted + Duplicates
// + TooLate + Quarantined. Watermark-only lines and blank lines are not
// events and are counted apart.
type Summary struct {
	Job               string           `json:"job"`
	Read              int64            `json:"read"`
	Accepted          int64            `json:"accepted"`
	Duplicates        int64            `json:"duplicates"`
	TooLate           int64            `json:"too_late"`
	Quarantined       int64            `json:"quarantined"`
	QuarantineReasons map[string]int64 `json:"quarantine_reasons"`
	LateAccepted      int64            `json:"late_accepted"`
	PanesFired        int64            `json:"panes_fired"`
	PanesWritten      int64            `json:"panes_written"`
	WindowsFired      int64            `json:"windows_fired"`
	LateWritten       int64            `json:"late_written"`
	WatermarkLines    int64            `json:"watermark_lines"`
	BlankLines        int64            `json:"blank_lines"`
	TooLateByWindow   []WindowDrops    `json:"too_late_by_window"`
	Watermark         string           `json:"watermark"`
	Interrupted       bool             `json:"interrupted,omitempty"`
	Savepoint         string           `json:"savepoint,omitempty"`

	elapsed time.Duration
}

// WindowDrops is the number of too-late events dropped for one window (over
// all keys). An event of a sliding window is counted in every window it was
// too late for.
type WindowDrops struct {
	Start   string `json:"window_start,omitempty"`
	End     string `json:"window_end,omitempty"`
	Dropped int64  `json:"dropped"`
}

// Text is the summary for a person, as printed on standard error.
func (s *Summary) Text() string {
	q := ""
	if len(s.QuarantineReasons) > 0 {
		keys := make([]string, 0, len(s.QuarantineReasons))
		for k := range s.QuarantineReasons {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q = " ("
		for i, k := range keys {
			if i > 0 {
				q += ", "
			}
			q += fmt.Sprintf("%s %d", k, s.QuarantineReasons[k])
		}
		q += ")"
	}
	rate := ""
	if secs := s.elapsed.Seconds(); secs > 0 {
		rate = fmt.Sprintf(" in %.2fs (%.0f lines/s)", secs, float64(s.Read+s.WatermarkLines)/secs)
	}
	name := s.Job
	if name == "" {
		name = "job"
	}
	text := fmt.Sprintf("weir: %s: read %d lines%s: %d accepted (%d late within allowed lateness), %d duplicates, %d too late, %d quarantined%s\n"+
		"weir: %s: %d panes written (%d fired), %d windows fired, %d too-late events written; watermark %s\n",
		name, s.Read, rate, s.Accepted, s.LateAccepted, s.Duplicates, s.TooLate, s.Quarantined, q,
		name, s.PanesWritten, s.PanesFired, s.WindowsFired, s.LateWritten, s.Watermark)
	if s.Interrupted {
		text += fmt.Sprintf("weir: %s: stopped before the end of the input", name)
		if s.Savepoint != "" {
			text += "; savepoint " + s.Savepoint
		}
		text += "\n"
	}
	return text
}

type outputs struct {
	files []*os.File
	bufs  []*bufio.Writer
}

func (o *outputs) open(path string, stdout io.Writer) (io.Writer, error) {
	if path == "" {
		return nil, nil
	}
	if path == "-" {
		w := bufio.NewWriterSize(stdout, 64<<10)
		o.bufs = append(o.bufs, w)
		return w, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("cannot write %s: %s", path, errText(err))}
	}
	o.files = append(o.files, f)
	w := bufio.NewWriterSize(f, 256<<10)
	o.bufs = append(o.bufs, w)
	return w, nil
}

func (o *outputs) close() error {
	var first error
	for _, b := range o.bufs {
		if err := b.Flush(); err != nil && first == nil {
			first = err
		}
	}
	for _, f := range o.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// jobRun is one execution of a job.
type jobRun struct {
	j   *Job
	o   Options
	lp  *lineParser
	s   *sink
	r   *exec.Runner[string, record, []slot, []outVal]
	d   *exec.Driver[string, record]
	dd  dedupStore
	db  *state.DB // the Pebble backend, if chosen
	sum *Summary

	quar   io.Writer   // the quarantine, or its pending buffer
	qpend  *pendingBuf // checkpointed runs
	outs   outputs     // runs without checkpoints
	future []mtime.Time

	// position after the last line taken
	offset, line int64

	// checkpoints
	store  *checkpoint.Store
	com    *committer
	w      *ckptWriter
	nextID uint64
	resume *resumeState
}

func (r *jobRun) logf(format string, args ...any) {
	if r.o.Log != nil {
		fmt.Fprintf(r.o.Log, "weir: "+format+"\n", args...)
	}
}

// Run executes the job until its input ends (or ctx is cancelled) and
// returns the summary, which it also writes to the summary file if the job
// names one.
//
// With checkpoints configured, Run first resumes from the newest complete
// checkpoint (or Options.From), and output reaches the files only when the
// checkpoint that covers it is complete; when ctx is cancelled it takes a
// savepoint and returns without error.
func Run(ctx context.Context, j *Job, o Options) (*Summary, error) {
	start := time.Now()
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.FS == nil {
		o.FS = checkpoint.OSFS
	}
	r := &jobRun{j: j, o: o, sum: &Summary{Job: j.Name, QuarantineReasons: map[string]int64{}}}
	if err := r.setup(); err != nil {
		r.abort()
		return nil, err
	}
	in, err := r.openInput()
	if err != nil {
		r.abort()
		return nil, err
	}
	defer in.Close()
	var progress *progressReporter
	if o.Progress != nil {
		progress = startProgress(o.Progress, r.r)
	}
	loopErr, interrupted := r.loop(ctx, in, progress)
	err = r.finish(loopErr, interrupted)
	if progress != nil {
		progress.stop()
	}
	r.sum.elapsed = time.Since(start)
	if err != nil {
		return r.sum, err
	}
	if j.Summary != "" {
		if err := writeSummary(j.Summary, r.sum, o.Stdout); err != nil {
			return r.sum, err
		}
	}
	return r.sum, nil
}

// setup builds the stages, and with checkpoints finds where to resume.
func (r *jobRun) setup() error {
	j, o := r.j, r.o
	if j.Watermark.Kind == watermark.Perfect {
		var err error
		if r.future, err = perfectWatermarks(j); err != nil {
			return err
		}
	}
	r.lp = newLineParser(j)
	r.s = &sink{j: j, run: r}
	if j.Having != "" {
		var err error
		if r.s.having, err = compileHaving(j.Having, j.Aggregates); err != nil {
			return err
		}
	}
	cfg := exec.Config[string, record, []slot, []outVal]{
		Strategy: j.Window, Parallelism: j.Parallelism,
		NewAgg: func() aggregate.Func[record, []slot, []outVal] {
			return &aggs{list: r.lp.agg.list, field: r.lp.agg.field}
		},
		Hash: hashString, Codec: codec{}, Emit: r.s.emit,
	}
	if j.State.Backend == "pebble" {
		if err := r.openState(); err != nil {
			return err
		}
		cfg.State = r.db
	}
	if j.ID != nil {
		if r.db != nil {
			r.dd = newDiskDedup(r.db.DB, j.DedupHorizon)
		} else {
			r.dd = newDedup(j.DedupHorizon)
		}
	}
	if j.Checkpoint.Dir != "" {
		if err := r.openCheckpoints(); err != nil {
			return err
		}
		if r.resume != nil {
			cfg.Restore, cfg.Step = r.resume.ops, r.resume.meta.Step
		}
		r.s.out, r.s.late, r.qpend = &pendingBuf{}, &pendingBuf{}, &pendingBuf{}
		r.quar = r.qpend
	} else {
		var err error
		if r.s.out, err = r.outs.open(j.Output, o.Stdout); err != nil {
			return err
		}
		if r.s.late, err = r.outs.open(j.LateOutput, o.Stdout); err != nil {
			return err
		}
		if r.quar, err = r.outs.open(j.Quarantine, o.Stdout); err != nil {
			return err
		}
	}
	r.r = exec.NewRunner(cfg)
	if err := r.r.Err(); err != nil {
		return &RuntimeError{Msg: "cannot restore the checkpoint: " + err.Error()}
	}
	r.d = exec.NewDriver[string, record](r.r, j.Watermark, j.Window.Trigger.UsesProcessingTime())
	if r.resume != nil {
		if err := r.restoreSourceState(r.resume.ckpt.Files["source"]); err != nil {
			return &RuntimeError{Msg: fmt.Sprintf("cannot restore %s: %v", r.resume.ckpt.Path, err)}
		}
		r.s.written, r.s.lateWritten = r.resume.meta.Written, r.resume.meta.LateW
		r.offset, r.line = r.resume.meta.Offset, r.resume.meta.Line
	}
	if r.store != nil {
		last := ""
		if r.resume != nil {
			last = r.resume.ckpt.Path
		}
		r.w = newCkptWriter(j, r.store, r.com, func(s string) { r.logf("%s", s) }, last)
	}
	return nil
}

// openState opens the Pebble backend, in state.dir or a temporary directory,
// and holds the Go heap to the memory budget with a soft limit.
func (r *jobRun) openState() error {
	dir := r.j.State.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "weir-state-")
		if err != nil {
			return &RuntimeError{Msg: "cannot create a state directory: " + err.Error()}
		}
		dir = tmp
	}
	db, err := state.Open(dir, r.j.State.MemoryBudget)
	if err != nil {
		return &RuntimeError{Msg: fmt.Sprintf("cannot open the state database in %s: %v", dir, err)}
	}
	r.db = db
	debug.SetMemoryLimit(db.Budget() + 64<<20)
	// Keys come and go: keep only a few at hand.
	r.lp.internCap = 1 << 16
	return nil
}

// openCheckpoints opens the store, picks the checkpoint to resume from, and
// opens the output files accordingly.
func (r *jobRun) openCheckpoints() error {
	j := r.j
	store, err := checkpoint.Open(r.o.FS, j.Checkpoint.Dir, j.Checkpoint.Keep)
	if err != nil {
		return &RuntimeError{Msg: fmt.Sprintf("cannot open the checkpoint directory %s: %s", j.Checkpoint.Dir, errText(err))}
	}
	r.store = store
	var c *checkpoint.Checkpoint
	if r.o.From != "" {
		if c, err = checkpoint.Load(r.o.FS, r.o.From); err != nil {
			return &RuntimeError{Msg: "cannot restore: " + err.Error()}
		}
	} else {
		c = store.Latest(func(s string) { r.logf("%s", s) })
		if c != nil && c.Manifest.Kind == checkpoint.Final {
			r.logf("the last run of %s finished (%s); starting from the beginning", j.Name, c.Path)
			c = nil
		}
	}
	if c != nil {
		if c.Manifest.Fingerprint != fingerprint(j) {
			return &RuntimeError{Msg: fmt.Sprintf("%s was taken by a job that computes something else (other window, trigger, aggregates or fields); move it away to start afresh", c.Path)}
		}
		if r.resume, err = loadResume(c); err != nil {
			return &RuntimeError{Msg: err.Error()}
		}
		r.logf("resuming from %s (line %d, %d instances, now %d)", c.Path, r.resume.meta.Line, c.Manifest.Parallelism, j.Parallelism)
	}
	r.nextID = store.NextID()
	r.com, err = openCommitter([numOutputs]string{j.Output, j.LateOutput, j.Quarantine}, r.resume, func(s string) { r.logf("%s", s) })
	if err != nil {
		return err
	}
	writePID(j.Checkpoint.Dir)
	return nil
}

func (r *jobRun) openInput() (io.ReadCloser, error) {
	if r.j.Input == "-" {
		return io.NopCloser(r.o.Stdin), nil
	}
	f, err := os.Open(r.j.Input)
	if err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("cannot read %s: %s", r.j.Input, errText(err))}
	}
	if r.offset > 0 {
		if _, err := f.Seek(r.offset, io.SeekStart); err != nil {
			f.Close()
			return nil, &RuntimeError{Msg: fmt.Sprintf("cannot seek %s: %s", r.j.Input, errText(err))}
		}
	}
	return f, nil
}

// abort releases what setup opened when it fails.
func (r *jobRun) abort() {
	r.outs.close()
	if r.db != nil {
		r.db.Close()
	}
	if r.com != nil {
		r.com.close()
	}
	if r.store != nil {
		removePID(r.j.Checkpoint.Dir)
	}
}

func (r *jobRun) loop(ctx context.Context, in io.Reader, progress *progressReporter) (error, bool) {
	stop := make(chan struct{})
	defer close(stop)
	batches := readLines(in, r.offset, r.line, stop)
	live := r.j.ArrivalField == nil
	var tick, ckptTick <-chan time.Time
	if live {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	if r.w != nil {
		t := time.NewTicker(time.Duration(r.j.Checkpoint.Interval) * time.Millisecond)
		defer t.Stop()
		ckptTick = t.C
	}
	var qbuf []byte
	for {
		var b *lineBatch
		select {
		case <-ctx.Done():
			return nil, true
		case <-tick:
			r.d.Advance(mtime.Now())
			r.r.Flush()
			continue
		case <-ckptTick:
			r.barrier(checkpoint.Periodic, nil)
			continue
		case done := <-r.o.Savepoints:
			if r.w == nil {
				done <- ""
				continue
			}
			r.barrier(checkpoint.Savepoint, done)
			continue
		case b = <-batches:
		}
		if b == nil {
			return nil, false
		}
		if b.err != nil {
			return b.err, false
		}
		for _, ln := range b.lines {
			r.offset, r.line = ln.End, ln.No
			if isBlank(ln.Text) {
				r.sum.BlankLines++
				if r.future != nil {
					r.d.SetWatermark(perfectAt(r.future, ln.No))
				}
				continue
			}
			now := mtime.MinTime
			if live {
				now = mtime.Now()
			}
			p := r.lp.parse(ln.Text, now)
			if p.hasArrival {
				r.d.Advance(p.arrival)
			}
			switch {
			case p.reason != "":
				r.sum.Read++
				r.sum.Quarantined++
				r.sum.QuarantineReasons[p.reason]++
				if r.quar != nil {
					qbuf = appendQuarantine(qbuf[:0], ln.No, p.reason, p.detail, ln.Text)
					if _, err := r.quar.Write(qbuf); err != nil {
						return &RuntimeError{Msg: "cannot write the quarantine: " + err.Error()}, false
					}
				}
			case p.wmOnly:
				r.sum.WatermarkLines++
				r.d.SetWatermark(p.wm)
			case r.dd != nil && r.dd.seen(p.id, p.ts, r.d.Watermark()):
				r.sum.Read++
				r.sum.Duplicates++
				r.d.Observe(p.part, p.ts)
			default:
				r.sum.Read++
				p.rec.line = ln.No
				r.d.Event(p.part, p.key, p.ts, p.rec)
			}
			if r.future != nil {
				r.d.SetWatermark(perfectAt(r.future, ln.No))
			}
			if r.dd != nil {
				r.dd.expire(r.d.Watermark())
			}
			if n := r.o.savepointEvery; n > 0 && ln.No%n == 0 && r.w != nil {
				r.barrier(checkpoint.Savepoint, nil)
			}
		}
		if progress != nil {
			progress.lines.Add(int64(len(b.lines)))
		}
		if live {
			r.r.Flush()
		}
		if err := r.r.Err(); err != nil {
			return nil, false
		}
		if r.w != nil {
			if err := r.w.err(); err != nil {
				return err, false
			}
		}
	}
}

// barrierTag travels with a barrier through the instances to the sink.
type barrierTag struct {
	id         uint64
	kind       checkpoint.Kind
	meta       ckptMeta
	source     []byte
	quarantine []byte
	done       chan string
}

// barrier starts a checkpoint at the current position of the input.
func (r *jobRun) barrier(kind checkpoint.Kind, done chan string) {
	tag := &barrierTag{
		id: r.nextID, kind: kind, done: done,
		meta:       ckptMeta{Offset: r.offset, Line: r.line, Step: r.r.Step()},
		source:     r.appendSourceState(nil),
		quarantine: r.qpend.take(),
	}
	r.nextID++
	r.r.Barrier(tag)
}

// onBarrier is called by the sink when every instance has passed a barrier.
func (r *jobRun) onBarrier(tag *barrierTag, ops [][]byte, err error) {
	tag.meta.Written, tag.meta.LateW = r.s.written, r.s.lateWritten
	r.w.reqs <- &ckptRequest{
		id: tag.id, kind: tag.kind, meta: tag.meta, source: tag.source, ops: ops, err: err,
		pending: [numOutputs][]byte{r.s.out.(*pendingBuf).take(), r.s.late.(*pendingBuf).take(), tag.quarantine},
		done:    tag.done,
	}
}

// finish ends the input (or stops at a savepoint), waits for the stages and
// fills in the summary.
func (r *jobRun) finish(loopErr error, interrupted bool) error {
	j := r.j
	r.sum.Interrupted = interrupted
	var savepoint chan string
	switch {
	case loopErr != nil:
		r.r.Stop()
	case interrupted && r.w != nil && !r.o.NoSavepointOnStop:
		savepoint = make(chan string, 1)
		r.barrier(checkpoint.Savepoint, savepoint)
		r.r.Stop()
	case interrupted:
		r.r.Stop()
	default:
		r.d.End()
	}
	runErr := r.r.Wait()
	if r.dd != nil && runErr == nil {
		runErr = r.dd.err()
	}
	var closeErr error
	if r.w != nil {
		if !interrupted && loopErr == nil && runErr == nil {
			// The input ended: commit the rest, and record that the job
			// finished so that the next run starts afresh.
			r.w.reqs <- &ckptRequest{
				id: r.nextID, kind: checkpoint.Final,
				meta:    ckptMeta{Offset: r.offset, Line: r.line, Step: r.r.Step(), Written: r.s.written, LateW: r.s.lateWritten},
				pending: [numOutputs][]byte{r.s.out.(*pendingBuf).take(), r.s.late.(*pendingBuf).take(), r.qpend.take()},
			}
		}
		closeErr = r.w.close()
		if err := r.com.close(); err != nil && closeErr == nil {
			closeErr = err
		}
		removePID(j.Checkpoint.Dir)
		if savepoint != nil {
			if r.sum.Savepoint = <-savepoint; r.sum.Savepoint == "" && closeErr == nil {
				closeErr = &RuntimeError{Msg: "the savepoint could not be written"}
			}
		}
	} else if err := r.outs.close(); err != nil {
		closeErr = &RuntimeError{Msg: "cannot write the output: " + err.Error()}
	}
	if r.db != nil {
		if err := r.db.Close(); err != nil && closeErr == nil {
			closeErr = &RuntimeError{Msg: "closing the state database: " + err.Error()}
		}
	}
	st := r.r.Stats()
	s := r.sum
	s.Accepted, s.TooLate, s.LateAccepted = st.Accepted, st.TooLate, st.LateAccepted
	s.PanesFired, s.WindowsFired = st.Panes, st.Fired
	s.PanesWritten, s.LateWritten = r.s.written, r.s.lateWritten
	s.TooLateByWindow = dropsByWindow(st)
	s.Watermark = r.d.Watermark().String()
	if r.d.Watermark() == mtime.MinTime {
		s.Watermark = "none"
	}
	for _, e := range []error{loopErr, runErr, closeErr} {
		if e != nil {
			return e
		}
	}
	return nil
}

func writePID(dir string) {
	_ = os.WriteFile(filepath.Join(dir, "weir.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

func removePID(dir string) {
	p := filepath.Join(dir, "weir.pid")
	if b, err := os.ReadFile(p); err == nil && string(b) == strconv.Itoa(os.Getpid())+"\n" {
		os.Remove(p)
	}
}

func writeSummary(path string, sum *Summary, stdout io.Writer) error {
	data, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if path == "-" {
		_, err = stdout.Write(data)
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return &RuntimeError{Msg: fmt.Sprintf("cannot write the summary %s: %s", path, errText(err))}
	}
	return nil
}

func dropsByWindow(st exec.Stats) []WindowDrops {
	out := make([]WindowDrops, 0, len(st.Dropped))
	type kv struct {
		start, end mtime.Time
		n          int64
		global     bool
	}
	var list []kv
	for w, n := range st.Dropped {
		list = append(list, kv{w.Start, w.End, n, w.IsGlobal()})
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].start != list[b].start {
			return list[a].start < list[b].start
		}
		return list[a].end < list[b].end
	})
	for _, e := range list {
		wd := WindowDrops{Dropped: e.n}
		if !e.global {
			wd.Start, wd.End = e.start.String(), e.end.String()
		}
		out = append(out, wd)
	}
	return out
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// hashString is FNV-1a: stable across runs and machines, so a key always
// lands in the same key group and a checkpoint restores anywhere.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

type lineBatch struct {
	lines []source.Line
	err   error
}

// readLines reads in its own goroutine and hands over batches of lines; a
// batch goes as soon as the reader would wait for more input, so a live
// stream is not held back. offset and line say where in its input r starts;
// closing stop ends the goroutine.
func readLines(in io.Reader, offset, line int64, stop <-chan struct{}) <-chan *lineBatch {
	ch := make(chan *lineBatch, 4)
	go func() {
		defer close(ch)
		send := func(b *lineBatch) bool {
			select {
			case ch <- b:
				return true
			case <-stop:
				return false
			}
		}
		lines := source.NewLines(in, 0, offset, line)
		b := &lineBatch{}
		for {
			ln, ok := lines.Next()
			if !ok {
				break
			}
			b.lines = append(b.lines, ln)
			if len(b.lines) >= 1024 || !lines.Buffered() {
				if !send(b) {
					return
				}
				b = &lineBatch{lines: make([]source.Line, 0, 1024)}
			}
		}
		if len(b.lines) > 0 && !send(b) {
			return
		}
		if err := lines.Err(); err != nil {
			send(&lineBatch{err: &RuntimeError{Msg: "reading the input: " + err.Error()}})
		}
	}()
	return ch
}
