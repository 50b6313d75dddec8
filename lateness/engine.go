package lateness

import (
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// key is the engine's key: the start of the event's window. With tumbling
// windows each key has exactly the one window it is named after, so the
// windows, the watermark, the too-late decisions and the firings are those
// of one global key (weir run without a key: a too-late decision depends on
// the window and the watermark only), but the operator finds a window with a
// map lookup instead of a scan of every open window, which matters with
// hours of delay.
type key = mtime.Time

type (
	runner = exec.Runner[key, float64, int64, int64]
	driver = exec.Driver[key, float64]
	winOp  = exec.WindowOp[key, float64, int64, int64]
	output = exec.Out[key, float64, int64]
)

// engine replays the stream through weir's window operator for one
// watermark delay and one allowed lateness: a count per tumbling window,
// inline (Parallelism 0), fed by its own driver with a bounded-out-of-order
// watermark emitted after every event, exactly as weir run with
// watermark.interval 0s. Each event's value is its weight, so that the
// too-late events the operator reports can be summed by weight.
type engine struct {
	delay, lateness mtime.Time
	win             window.Tumbling
	r               *runner
	d               *driver
	op              *winOp

	lateW    float64 // weight of the too-late events
	waits    hist    // on-time panes: emitted at - window end (lateness 0 only)
	atEnd    int64   // windows that fired only because the input ended
	openSum  float64 // open windows after each event, summed
	openPeak int64
	events   int64
	stats    exec.Stats
}

func newEngine(c *config, delay, lateness mtime.Time) *engine {
	e := &engine{delay: delay, lateness: lateness, win: c.window}
	ms := func(t mtime.Time) time.Duration { return time.Duration(t) * time.Millisecond }
	s := window.NewStrategy(c.window).WithLateness(ms(lateness))
	e.r = exec.NewRunner(exec.Config[key, float64, int64, int64]{
		Strategy: s, Agg: aggregate.Count[float64](), Emit: e.emit,
	})
	e.op = e.r.Ops()[0]
	wm := watermark.BoundedOutOfOrderness(ms(delay)).WithInterval(0)
	if c.idle > 0 {
		wm = wm.WithIdleness(ms(c.idle))
	}
	e.d = exec.NewDriver[key](e.r, wm, false)
	return e
}

func (e *engine) emit(outs []output) error {
	for i := range outs {
		o := &outs[i]
		switch o.Kind {
		case exec.OutLate:
			e.lateW += o.Late.Value
		case exec.OutPane:
			p := &o.Pane
			if p.Timing != window.OnTime || p.Retract {
				continue
			}
			if p.Watermark == mtime.MaxTime {
				e.atEnd++
			} else if e.lateness == 0 {
				e.waits.add(int64(p.EmittedAt-p.Window.End), 1)
			}
		}
	}
	return nil
}

// feed replays the records of a batch.
func (e *engine) feed(recs []record) {
	for i := range recs {
		r := &recs[i]
		if r.why != rOK {
			if r.hasArrival {
				e.d.Advance(r.arr)
			}
			continue
		}
		e.d.Advance(r.arr)
		e.d.Event(int(r.part), e.win.Start(r.ts), r.ts, r.w)
		open := e.op.OpenWindows()
		e.openSum += float64(open)
		e.openPeak = max(e.openPeak, open)
		e.events++
	}
}

// end ends the input: every open window fires.
func (e *engine) end() error {
	e.d.End()
	err := e.r.Wait()
	e.stats = e.r.Stats()
	return err
}

// engineGroup is the engines one goroutine runs.
type engineGroup struct {
	engines []*engine
	in      chan *batch
	err     error
	done    chan struct{}
}

func (g *engineGroup) run(p *pool) {
	defer close(g.done)
	for b := range g.in {
		for _, e := range g.engines {
			e.feed(b.recs)
		}
		p.done(b)
	}
	for _, e := range g.engines {
		if err := e.end(); err != nil && g.err == nil {
			g.err = err
		}
	}
}
