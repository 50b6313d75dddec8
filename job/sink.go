package job

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/window"
)

type pane = window.Pane[string, []outVal]
type lateEvent = window.LateEvent[string, record]

// format writes panes, too-late events and rejected lines as JSON lines. Each
// output has a format of its own: they are used from different goroutines.
type format struct {
	j     *Job
	times timeCache
}

func newFormat(j *Job) *format { return &format{j: j} }

// havingFilter passes on the panes for which the having expression holds. An
// expression that fails on a pane (it compiled, but the pane's values make
// it fail) does not stop the job: the pane is written unfiltered, the
// failure is counted and the first few are logged with the pane they were
// about.
type havingFilter struct {
	j      *Job
	h      *havingExpr
	next   engine.Consumer[pane]
	log    func(string)
	errors atomic.Int64
}

func (f *havingFilter) Push(p pane) {
	keep, err := f.h.keep(f.j.Aggregates, &p, keyValue(p.Key))
	if err != nil {
		if n := f.errors.Add(1); n <= 3 {
			f.log(fmt.Sprintf("%s: having %q failed on the pane of key %s, window %s, revision %d (%s); the pane is written unfiltered",
				f.j.File, f.j.Having, p.Key, p.Window, p.Revision, err))
		}
		keep = true
	}
	if keep {
		f.next.Push(p)
	}
}

func (f *havingFilter) Signal(s engine.Signal) { f.next.Signal(s) }

// keyValue is the key as the having expression sees it: the string itself,
// or the number's text.
func keyValue(k string) string {
	if len(k) > 0 && k[0] == '"' {
		var s string
		if json.Unmarshal([]byte(k), &s) == nil {
			return s
		}
	}
	return k
}

func (f *format) appendKey(b []byte, key string) []byte {
	b = append(b, `"key":`...)
	if f.j.Key == nil {
		return append(b, "null"...)
	}
	return append(b, key...)
}

func (f *format) appendWindow(b []byte, w window.Window) []byte {
	if w.IsGlobal() {
		return b
	}
	b = append(b, `,"window_start":`...)
	b = f.times.append(b, w.Start)
	b = append(b, `,"window_end":`...)
	return f.times.append(b, w.End)
}

func (f *format) appendPane(b []byte, p pane) []byte {
	b = append(b, '{')
	b = f.appendKey(b, p.Key)
	b = f.appendWindow(b, p.Window)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(p.Revision), 10)
	b = append(b, `,"timing":"`...)
	b = append(b, p.Timing.String()...)
	b = append(b, `","final":`...)
	b = appendBool(b, p.Final)
	b = append(b, `,"retract":`...)
	b = appendBool(b, p.Retract)
	b = append(b, `,"watermark":`...)
	b = f.times.append(b, p.Watermark)
	b = append(b, `,"emitted_at":`...)
	b = f.times.append(b, p.EmittedAt)
	for k, a := range f.j.Aggregates {
		b = append(b, ',', '"')
		b = append(b, a.Name...)
		b = append(b, '"', ':')
		b = appendOutVal(b, p.Value[k])
	}
	return append(b, '}', '\n')
}

func (f *format) appendLate(b []byte, l lateEvent) []byte {
	b = append(b, `{"reason":"too_late",`...)
	b = f.appendKey(b, l.Key)
	b = f.appendWindow(b, l.Window)
	b = append(b, `,"watermark":`...)
	b = appendTime(b, l.Watermark)
	b = append(b, `,"event_time":`...)
	b = appendTime(b, l.Timestamp)
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, l.Value.line, 10)
	b = append(b, `,"event":`...)
	b = append(b, l.Value.raw...)
	return append(b, '}', '\n')
}

// appendRejected formats a rejected line.
func appendRejected(b []byte, r engine.RejectedRecord) []byte {
	return appendQuarantine(b, r.Record.Offset, r.Reason, r.Detail, r.Record.Value)
}

// appendQuarantine formats a rejected line.
func appendQuarantine(b []byte, line int64, reason, detail string, raw []byte) []byte {
	b = append(b, `{"reason":"`...)
	b = append(b, reason...)
	b = append(b, `","line":`...)
	b = strconv.AppendInt(b, line, 10)
	if detail != "" {
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, []byte(detail))
	}
	b = append(b, `,"raw":`...)
	b = appendJSONString(b, raw)
	return append(b, '}', '\n')
}
