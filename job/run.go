package job

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
	"github.com/weirstream/weir/watermark"
)

// Options are the parts of a run that do not come from the job file.
type Options struct {
	Stdin  io.Reader // for source "-"
	Stdout io.Writer // for outputs "-"
	// Progress, when set, receives a one-line progress report a few times a
	// second (lines/s, watermark, open windows), each ending in "\r".
	Progress io.Writer
}

// RuntimeError is a failure while a job runs (as opposed to a bad job
// file): an output that cannot be written, an expression that fails.
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
	return fmt.Sprintf("weir: %s: read %d lines%s: %d accepted (%d late within allowed lateness), %d duplicates, %d too late, %d quarantined%s\n"+
		"weir: %s: %d panes written (%d fired), %d windows fired, %d too-late events written; watermark %s\n",
		name, s.Read, rate, s.Accepted, s.LateAccepted, s.Duplicates, s.TooLate, s.Quarantined, q,
		name, s.PanesWritten, s.PanesFired, s.WindowsFired, s.LateWritten, s.Watermark)
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

// Run executes the job until its input ends (or ctx is cancelled) and
// returns the summary, which it also writes to the summary file if the job
// names one.
func Run(ctx context.Context, j *Job, o Options) (*Summary, error) {
	start := time.Now()
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	var future []mtime.Time
	if j.Watermark.Kind == watermark.Perfect {
		var err error
		if future, err = perfectWatermarks(j); err != nil {
			return nil, err
		}
	}
	in := o.Stdin
	if j.Input != "-" {
		f, err := os.Open(j.Input)
		if err != nil {
			return nil, &RuntimeError{Msg: fmt.Sprintf("cannot read %s: %s", j.Input, errText(err))}
		}
		defer f.Close()
		in = f
	}
	var outs outputs
	var err error
	s := &sink{j: j}
	if s.out, err = outs.open(j.Output, o.Stdout); err != nil {
		return nil, err
	}
	if s.late, err = outs.open(j.LateOutput, o.Stdout); err != nil {
		outs.close()
		return nil, err
	}
	quar, err := outs.open(j.Quarantine, o.Stdout)
	if err != nil {
		outs.close()
		return nil, err
	}
	if j.Having != "" {
		if s.having, err = compileHaving(j.Having, j.Aggregates); err != nil {
			outs.close()
			return nil, err
		}
	}

	lp := newLineParser(j)
	r := exec.NewRunner(exec.Config[string, record, []slot, []outVal]{
		Strategy:    j.Window,
		Agg:         lp.agg,
		Parallelism: j.Parallelism,
		Hash:        hashString,
		Emit:        s.emit,
	})
	d := exec.NewDriver[string, record](r, j.Watermark, j.Window.Trigger.UsesProcessingTime())
	var dd *dedup
	if j.ID != nil {
		dd = newDedup(j.DedupHorizon)
	}
	sum := &Summary{Job: j.Name, QuarantineReasons: map[string]int64{}}
	live := j.ArrivalField == nil

	var progress *progressReporter
	if o.Progress != nil {
		progress = startProgress(o.Progress, r)
	}

	batches := readLines(in)
	var tick <-chan time.Time
	if live {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	var qbuf []byte
	var readErr error
	interrupted := false
loop:
	for {
		var b *lineBatch
		select {
		case <-ctx.Done():
			interrupted = true
			break loop
		case <-tick:
			d.Advance(mtime.Now())
			r.Flush()
			continue
		case b = <-batches:
		}
		if b == nil {
			break
		}
		if b.err != nil {
			readErr = b.err
			break
		}
		for _, ln := range b.lines {
			if isBlank(ln.Text) {
				sum.BlankLines++
				if future != nil {
					d.SetWatermark(perfectAt(future, ln.No))
				}
				continue
			}
			now := mtime.MinTime
			if live {
				now = mtime.Now()
			}
			p := lp.parse(ln.Text, now)
			if p.hasArrival {
				d.Advance(p.arrival)
			}
			switch {
			case p.reason != "":
				sum.Read++
				sum.Quarantined++
				sum.QuarantineReasons[p.reason]++
				if quar != nil {
					qbuf = appendQuarantine(qbuf[:0], ln.No, p.reason, p.detail, ln.Text)
					if _, err := quar.Write(qbuf); err != nil {
						readErr = &RuntimeError{Msg: "cannot write the quarantine: " + err.Error()}
						break loop
					}
				}
			case p.wmOnly:
				sum.WatermarkLines++
				d.SetWatermark(p.wm)
			case dd != nil && dd.seen(p.id, p.ts):
				sum.Read++
				sum.Duplicates++
				d.Observe(p.part, p.ts)
			default:
				sum.Read++
				p.rec.line = ln.No
				d.Event(p.part, p.key, p.ts, p.rec)
			}
			if future != nil {
				d.SetWatermark(perfectAt(future, ln.No))
			}
			if dd != nil {
				dd.expire(d.Watermark())
			}
			if progress != nil {
				progress.lines.Add(1)
			}
		}
		if live {
			r.Flush()
		}
		if err := r.Err(); err != nil {
			break
		}
	}
	if interrupted {
		sum.Interrupted = true
		r.Stop()
	} else {
		d.End()
	}
	runErr := r.Wait()
	if progress != nil {
		progress.stop()
	}
	closeErr := outs.close()
	st := r.Stats()
	sum.Accepted, sum.TooLate, sum.LateAccepted = st.Accepted, st.TooLate, st.LateAccepted
	sum.PanesFired, sum.WindowsFired = st.Panes, st.Fired
	sum.PanesWritten, sum.LateWritten = s.written, s.lateWritten
	sum.TooLateByWindow = dropsByWindow(st)
	sum.Watermark = d.Watermark().String()
	if d.Watermark() == mtime.MinTime {
		sum.Watermark = "none"
	}
	sum.elapsed = time.Since(start)
	for _, e := range []error{readErr, runErr, closeErr} {
		if e != nil {
			return sum, e
		}
	}
	if j.Summary != "" {
		if err := writeSummary(j.Summary, sum, o.Stdout); err != nil {
			return sum, err
		}
	}
	return sum, nil
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
// lands in the same key group.
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
// stream is not held back.
func readLines(in io.Reader) <-chan *lineBatch {
	ch := make(chan *lineBatch, 4)
	go func() {
		defer close(ch)
		lines := source.NewLines(in, 0, 0, 0)
		b := &lineBatch{}
		for {
			ln, ok := lines.Next()
			if !ok {
				break
			}
			b.lines = append(b.lines, ln)
			if len(b.lines) >= 1024 || !lines.Buffered() {
				ch <- b
				b = &lineBatch{lines: make([]source.Line, 0, 1024)}
			}
		}
		if len(b.lines) > 0 {
			ch <- b
		}
		if err := lines.Err(); err != nil {
			ch <- &lineBatch{err: &RuntimeError{Msg: "reading the input: " + err.Error()}}
		}
	}()
	return ch
}
