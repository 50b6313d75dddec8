package job

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
	"github.com/weirstream/weir/watermark"
)

// perfectWatermarks reads a recorded file ahead: future[n] is the smallest
// event time of a valid event after line n (MaxTime if none), so that after
// line n the perfect watermark is future[n]-1 ms.
func perfectWatermarks(j *jobfile.Job) ([]mtime.Time, error) {
	f, err := os.Open(j.Input)
	if err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("cannot read %s: %s", j.Input, text.ErrorText(err))}
	}
	defer f.Close()
	lp := newLineParser(j)
	lines := source.NewLines(f, 0, 0, 0)
	lines.SetMaxLine(maxLine)
	ts := []mtime.Time{mtime.MaxTime} // ts[n]: event time of line n
	for {
		ln, ok := lines.Next()
		if !ok {
			break
		}
		t := mtime.MaxTime
		if !isBlank(ln.Text) && ln.Cut == nil {
			if p := lp.parse(ln.Text, mtime.Now()); p.reason == "" && !p.wmOnly {
				t = p.ts
			}
		}
		ts = append(ts, t)
	}
	if err := lines.Err(); err != nil {
		return nil, &RuntimeError{Msg: "reading the input: " + err.Error()}
	}
	future := make([]mtime.Time, len(ts))
	m := mtime.MaxTime
	for n := len(ts) - 1; n >= 0; n-- {
		future[n] = m
		m = min(m, ts[n])
	}
	return future, nil
}

func perfectAt(future []mtime.Time, line int64) mtime.Time {
	if line >= int64(len(future)) || future[line] == mtime.MaxTime {
		return mtime.MaxTime
	}
	return future[line] - 1
}

// progressReporter draws a one-line progress report while a job runs.
type progressReporter struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// startProgress reports what the running job says of itself, a few times
// a second: the lines read (this run's, after a resume), the rate, and for
// a file of known size the share read and the time left at this run's
// rate.
func (rn *Runnable) startProgress() *progressReporter {
	w, ctl := rn.o.Progress, rn.e.Control()
	var size int64 = -1
	if j := rn.j; j.InputIsFile() && !j.Follow {
		if st, err := os.Stat(j.Input); err == nil {
			size = st.Size()
		}
	}
	base := rn.restoredRead
	p := &progressReporter{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		var read0 int64 = -1 // the bytes read at the first report, and when
		var first time.Time
		for {
			select {
			case <-p.done:
				fmt.Fprintf(w, "\r\033[K")
				return
			case <-t.C:
				st := ctl.Status(context.Background(), 200*time.Millisecond)
				read := int64(-1)
				if size >= 0 {
					backlog, _ := inputBacklog(st)
					read = size - backlog
				}
				if read0 < 0 {
					read0, first = read, time.Now()
				}
				fmt.Fprintf(w, "\r\033[K%s", progressLine(st, base, size, read, read0, time.Since(start), time.Since(first)))
			}
		}
	}()
	return p
}

// inputBacklog is what the job's input has waiting (records, or bytes for
// a file), and whether any of its partitions can tell.
func inputBacklog(st engine.Status) (n int64, known bool) {
	for _, src := range st.Sources {
		for _, p := range src.Partitions {
			if p.Backlog >= 0 {
				n += p.Backlog
				known = true
			}
		}
	}
	return n, known
}

// progressLine is the progress report of a status: the lines read, this
// run's share of them after a resume (base lines were read before), the
// rate, and with the input's size (size >= 0) the share of its bytes read
// and the time left, at the rate of this run since its first report (read0
// bytes read then, since ago); elapsed is the run's time.
func progressLine(st engine.Status, base, size, read, read0 int64, elapsed, since time.Duration) string {
	n := st.Counts.Read + st.Counts.WatermarkLines + st.Counts.BlankLines + st.Counts.Heartbeats
	var b strings.Builder
	fmt.Fprintf(&b, "lines %d", n)
	if base > 0 {
		fmt.Fprintf(&b, " (%d this run)", st.Counts.Read-base)
	}
	secs := elapsed.Seconds()
	if secs > 0 {
		fmt.Fprintf(&b, "  %.0f/s", float64(st.Counts.Read-base)/secs)
	}
	if size > 0 && read >= 0 {
		fmt.Fprintf(&b, "  %.1f%%", 100*float64(read)/float64(size))
		if done := read - read0; done > 0 && since > 0 && read < size {
			left := time.Duration(float64(size-read) / (float64(done) / since.Seconds()) * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %s", left.Round(time.Second))
		}
	}
	wms := "none"
	if st.Watermark > mtime.MinTime {
		wms = st.Watermark.String()
	}
	fmt.Fprintf(&b, "  watermark %s  open windows %d", wms, st.OpenWindows)
	return b.String()
}

// logProgress logs a line of progress every d while the job runs (what a
// live job does when no terminal shows the progress line, so that its log
// says it is alive before its first pane), and returns what stops it.
func (rn *Runnable) logProgress(d time.Duration) (stop func()) {
	ctl := rn.e.Control()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		prev := int64(-1)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				st := ctl.Status(context.Background(), time.Second)
				rn.logf("%s", progressLogLine(st, prev, d))
				prev = st.Counts.Read
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// firstPanes says when a live job's first panes can come: a window's pane
// at the watermark comes once the watermark passes the window's end, so
// nothing is written before the first window closes (or an early firing
// comes), however long that takes on the clock.
func firstPanes(j *jobfile.Job) string {
	var b strings.Builder
	b.WriteString("the first panes: ")
	t := j.Window.Trigger
	if t.HasEarly() {
		b.WriteString("early ones as the trigger fires them (" + t.Describe() + "); ")
	}
	fmt.Fprintf(&b, "a window's pane at the watermark once the watermark passes its end (window %s", j.Window.Assigner)
	switch j.Watermark.Kind {
	case watermark.Bounded:
		fmt.Fprintf(&b, "; the watermark is the greatest event time read minus %s", mtime.FormatDuration(j.Watermark.Delay))
		if j.Watermark.Quiet > 0 {
			fmt.Fprintf(&b, ", or the clock minus %s once the stream is quiet that long", mtime.FormatDuration(j.Watermark.Quiet))
		}
		b.WriteString("): the first window closes when an event that much past its end is read")
	default:
		fmt.Fprintf(&b, "; watermark %s)", describeWatermark(j))
	}
	return b.String()
}

// progressLogLine is a live job's line of progress: what it read (and
// since the line before, which read prev records; -1 for the first line,
// every d), how each record was counted, the panes fired, the watermark
// and how far it is behind the clock, the records waiting in the source,
// and why reading is paused, if it is.
func progressLogLine(st engine.Status, prev int64, d time.Duration) string {
	c := st.Counts
	var b strings.Builder
	fmt.Fprintf(&b, "progress: read %d", c.Read)
	if prev >= 0 {
		fmt.Fprintf(&b, " (%+d in %s)", c.Read-prev, d)
	}
	fmt.Fprintf(&b, ": %d accepted (%d late within the allowed lateness), %d too late, %d duplicates, %d quarantined", c.Accepted, c.LateAccepted, c.TooLate+c.BeyondDedupHorizon, c.Duplicates, c.Quarantined)
	if c.Filtered > 0 {
		fmt.Fprintf(&b, ", %d filtered", c.Filtered)
	}
	if c.Revisions > 0 || c.Superseded > 0 || c.RevisionsTooLate > 0 {
		fmt.Fprintf(&b, ", %d revisions, %d superseded, %d revisions too late", c.Revisions, c.Superseded, c.RevisionsTooLate)
	}
	if len(st.Joins) > 0 {
		// A join: its other inputs, and what it made and holds.
		for _, in := range st.Inputs[min(1, len(st.Inputs)):] {
			fmt.Fprintf(&b, "; %s read %d: %d accepted, %d too late, %d quarantined", in.Name, in.Counts.Read, in.Counts.Accepted, in.Counts.TooLate+in.Counts.BeyondDedupHorizon, in.Counts.Quarantined)
			if in.Counts.Duplicates > 0 {
				fmt.Fprintf(&b, ", %d duplicates", in.Counts.Duplicates)
			}
		}
		for _, jn := range st.Joins {
			fmt.Fprintf(&b, "; %d pairs, %d unmatched; %d records held", jn.Pairs, jn.Unmatched, jn.Left+jn.Right)
		}
	} else {
		fmt.Fprintf(&b, "; %d panes fired; windows open: %d", c.PanesFired, st.OpenWindows)
	}
	if st.Watermark > mtime.MinTime {
		fmt.Fprintf(&b, "; watermark %s", st.Watermark)
		if st.WatermarkGap >= 0 && st.Live {
			fmt.Fprintf(&b, ", %s behind the clock", time.Duration(st.WatermarkGap)*time.Millisecond)
		}
	} else {
		b.WriteString("; no watermark yet: no window can close, and no record be written unmatched, before the first event")
	}
	if backlog, known := inputBacklog(st); known {
		fmt.Fprintf(&b, "; %d waiting in the source", backlog)
	}
	if st.Backpressure != "" {
		fmt.Fprintf(&b, "; reading paused: %s", st.Backpressure)
	}
	if st.Stale {
		b.WriteString(" (the source loop did not answer in time: its last report)")
	}
	return b.String()
}

func (p *progressReporter) stop() {
	close(p.done)
	p.wg.Wait()
}

// ConsoleAccess is who may use job j's console (http.token,
// http.allowed_hosts).
func ConsoleAccess(j *jobfile.Job) console.Access {
	return console.Access{Token: j.HTTPToken, AllowedHosts: j.HTTPHosts}
}
