package job

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// perfectWatermarks reads a recorded file ahead: future[n] is the smallest
// event time of a valid event after line n (MaxTime if none), so that after
// line n the perfect watermark is future[n]-1 ms.
func perfectWatermarks(j *Job) ([]mtime.Time, error) {
	f, err := os.Open(j.Input)
	if err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("cannot read %s: %s", j.Input, errText(err))}
	}
	defer f.Close()
	lp := newLineParser(j)
	lines := source.NewLines(f, 0, 0, 0)
	ts := []mtime.Time{mtime.MaxTime} // ts[n]: event time of line n
	for {
		ln, ok := lines.Next()
		if !ok {
			break
		}
		t := mtime.MaxTime
		if !isBlank(ln.Text) {
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

// dedup remembers event ids for a horizon of event time: an id seen with event
// time t is a duplicate until the watermark reaches t + horizon.
type dedup struct {
	horizon mtime.Time
	ids     map[string]struct{}
	exp     expHeap
}

type idExp struct {
	at mtime.Time
	id string
}

func newDedup(horizon mtime.Time) *dedup {
	return &dedup{horizon: horizon, ids: map[string]struct{}{}}
}

// seen reports whether id was seen within the horizon, and remembers it if
// not. (Expired ids are gone already: expire runs after every line.)
func (d *dedup) seen(id []byte, ts, _ mtime.Time) bool {
	if _, ok := d.ids[string(id)]; ok {
		return true
	}
	s := string(id)
	d.ids[s] = struct{}{}
	d.exp.push(idExp{ts.Add(d.horizon), s})
	return false
}

// expire forgets the ids whose horizon the watermark w has reached.
func (d *dedup) expire(w mtime.Time) {
	for len(d.exp) > 0 && d.exp[0].at <= w {
		delete(d.ids, d.exp.pop().id)
	}
}

type expHeap []idExp

func (h *expHeap) push(e idExp) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].at <= a[i].at {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *expHeap) pop() idExp {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = idExp{}
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].at < a[m].at {
			m = l
		}
		if r < n && a[r].at < a[m].at {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// progressReporter draws a one-line progress report while a job runs.
type progressReporter struct {
	lines atomic.Int64
	done  chan struct{}
	wg    sync.WaitGroup
}

type progressSource interface {
	Progress() (mtime.Time, int64)
}

func startProgress(w io.Writer, src progressSource) *progressReporter {
	p := &progressReporter{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-p.done:
				fmt.Fprintf(w, "\r\033[K")
				return
			case <-t.C:
				n := p.lines.Load()
				wm, open := src.Progress()
				wms := "none"
				if wm > mtime.MinTime {
					wms = wm.String()
				}
				rate := float64(n) / time.Since(start).Seconds()
				fmt.Fprintf(w, "\r\033[Klines %d  %.0f/s  watermark %s  open windows %d", n, rate, wms, open)
			}
		}
	}()
	return p
}

func (p *progressReporter) stop() {
	close(p.done)
	p.wg.Wait()
}

// RequestSavepoint asks the process running j (found by the weir.pid file in
// its checkpoint directory) for a savepoint with SIGUSR1, and waits until a
// new savepoint is complete. It returns the savepoint's directory.
func RequestSavepoint(j *Job, timeout time.Duration) (string, error) {
	pidText, err := os.ReadFile(filepath.Join(j.Checkpoint.Dir, "weir.pid"))
	if err != nil {
		return "", &RuntimeError{Msg: fmt.Sprintf("no job is running with checkpoint directory %s (no weir.pid)", j.Checkpoint.Dir)}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		return "", &RuntimeError{Msg: "weir.pid is not a process id"}
	}
	before := newestSavepoint(j.Checkpoint.Dir)
	p, err := os.FindProcess(pid)
	if err == nil {
		err = p.Signal(syscall.SIGUSR1)
	}
	if err != nil {
		return "", &RuntimeError{Msg: fmt.Sprintf("cannot signal the job (pid %d): %v", pid, err)}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if sp := newestSavepoint(j.Checkpoint.Dir); sp != before {
			if _, err := checkpoint.Load(checkpoint.OSFS, sp); err == nil {
				return sp, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", &RuntimeError{Msg: fmt.Sprintf("no savepoint appeared within %s", timeout)}
}

func newestSavepoint(dir string) string {
	entries, _ := os.ReadDir(filepath.Join(dir, "savepoints"))
	newest := ""
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "sp-") && e.Name() > filepath.Base(newest) {
			newest = filepath.Join(dir, "savepoints", e.Name())
		}
	}
	return newest
}
