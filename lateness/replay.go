package lateness

import (
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// key is the operator's key: the start of the event's window. With tumbling
// windows each key has exactly the one window it is named after, so the
// windows, the watermark, the too-late decisions and the firings are those
// of one global key (weir run without a key: a too-late decision depends on
// the window and the watermark only), but the operator finds a window with a
// map lookup instead of a scan of every open window, which matters with
// hours of delay.
type key = mtime.Time

// replay replays the stream through weir's window operator (an
// engine.Operator, the core of every window stage of weir run) for one
// watermark delay and one allowed lateness: a count per tumbling window,
// with a bounded-out-of-order watermark emitted after every event, exactly
// as weir run with watermark.interval 0s. Each event's value is its weight,
// so that the too-late events the operator reports can be summed by weight.
type replay struct {
	delay, lateness mtime.Time
	idle            mtime.Time
	win             window.Tumbling
	op              *engine.Operator[key, float64, int64, int64]

	lateW    float64 // weight of the too-late events
	waits    hist    // on-time panes: emitted at - window end (lateness 0 only)
	waitSum  float64 // their sum
	atEnd    int64   // windows that fired only because the input ended
	openSum  float64 // open windows after each event, summed
	openPeak int64
	events   int64
	stats    engine.WindowStats

	spans   []timeSpan // the periods compared (lateness 0 only)
	periods periodTally
}

func newReplay(c *config, delay, lateness mtime.Time) (*replay, error) {
	e := &replay{delay: delay, lateness: lateness, idle: c.idle, win: c.window}
	if lateness == 0 && len(c.periods) > 0 {
		e.spans, e.periods = c.periods, newPeriodTally(len(c.periods))
	}
	ms := func(t mtime.Time) time.Duration { return time.Duration(t) * time.Millisecond }
	wm := watermark.BoundedOutOfOrderness(ms(delay)).WithInterval(0)
	if c.idle > 0 {
		wm = wm.WithIdleness(ms(c.idle))
	}
	op, err := engine.NewOperator(engine.OperatorConfig[key, float64, int64, int64]{
		Strategy:  window.NewStrategy(c.window).WithLateness(ms(lateness)),
		Watermark: wm,
		Agg:       aggregate.Count[float64](),
		Pane:      e.pane,
		Late:      e.late,
	})
	e.op = op
	return e, err
}

// late counts an event too late for all of its windows (weir run's
// too_late); one too late for some of them only was counted in the others.
func (e *replay) late(l *window.LateEvent[key, float64]) {
	if l.Reason == "" {
		e.lateW += l.Value
		for i, s := range e.spans {
			if s.has(l.Timestamp) {
				e.periods.lateN[i]++
				e.periods.lateW[i] += l.Value
			}
		}
	}
}

func (e *replay) pane(p *window.Pane[key, int64]) {
	if p.Timing != window.OnTime || p.Retract {
		return
	}
	if p.Watermark == mtime.MaxTime {
		e.atEnd++
	} else if e.lateness == 0 {
		e.waits.add(int64(p.EmittedAt-p.Window.End), 1)
		e.waitSum += float64(p.EmittedAt - p.Window.End)
		for i, s := range e.spans {
			if s.has(p.Window.Start) {
				e.periods.waits[i].add(int64(p.EmittedAt-p.Window.End), 1)
			}
		}
	}
}

// feed replays the records of a batch.
func (e *replay) feed(recs []record) {
	for i := range recs {
		r := &recs[i]
		if r.why != rOK {
			if r.hasArrival {
				e.op.Advance(r.arr)
			}
			continue
		}
		e.op.Advance(r.arr)
		e.op.Event(int(r.part), e.win.Start(r.ts), r.ts, r.w)
		open := e.op.OpenWindows()
		e.openSum += float64(open)
		e.openPeak = max(e.openPeak, open)
		e.events++
	}
}

// end ends the input: every open window fires.
func (e *replay) end() error {
	err := e.op.End()
	e.stats = e.op.Stats()
	return err
}

// replayGroup is the replays one goroutine runs.
type replayGroup struct {
	engines []*replay
	in      chan *batch
	err     error
	done    chan struct{}
}

func (g *replayGroup) run(p *pool) {
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
