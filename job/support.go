package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/weirstream/weir/engine"
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

// startProgress reports what the running job says of itself.
func startProgress(w io.Writer, ctl *engine.Control) *progressReporter {
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
				st := ctl.Status(context.Background(), 200*time.Millisecond)
				n := st.Counts.Read + st.Counts.WatermarkLines + st.Counts.BlankLines
				wms := "none"
				if st.Watermark > mtime.MinTime {
					wms = st.Watermark.String()
				}
				rate := float64(n) / time.Since(start).Seconds()
				fmt.Fprintf(w, "\r\033[Klines %d  %.0f/s  watermark %s  open windows %d", n, rate, wms, st.OpenWindows)
			}
		}
	}()
	return p
}

func (p *progressReporter) stop() {
	close(p.done)
	p.wg.Wait()
}
