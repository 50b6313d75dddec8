package job

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/window"
)

type out = exec.Out[string, record, []outVal]

// sink writes panes and too-late events as JSON lines. It runs in the
// runner's sink goroutine; the quarantine is written by the source loop.
type sink struct {
	j      *Job
	run    *jobRun
	out    io.Writer
	late   io.Writer // nil: too-late events are only counted
	having *havingExpr
	buf    []byte

	written     int64 // panes written
	lateWritten int64
	barrier     [][]byte // snapshots of the instances at the current barrier
	barrierErr  error
	times       timeCache
}

func (s *sink) emit(outs []out) error {
	b := s.buf[:0]
	var lb []byte
	flush := func() error {
		if len(b) > 0 {
			if _, err := s.out.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		if len(lb) > 0 && s.late != nil {
			if _, err := s.late.Write(lb); err != nil {
				return err
			}
			lb = lb[:0]
		}
		return nil
	}
	for i := range outs {
		o := &outs[i]
		if o.Kind == exec.OutBarrier {
			// Everything before the barrier belongs to its checkpoint.
			if err := flush(); err != nil {
				return err
			}
			s.barrier = append(s.barrier, o.Barrier.State)
			if o.Barrier.Err != nil && s.barrierErr == nil {
				s.barrierErr = o.Barrier.Err
			}
			if len(s.barrier) == o.Barrier.Of {
				s.run.onBarrier(o.Barrier.Tag.(*barrierTag), s.barrier, s.barrierErr)
				s.barrier, s.barrierErr = nil, nil
			}
			continue
		}
		if o.Kind == exec.OutLate {
			if s.late == nil {
				continue
			}
			lb = s.appendLate(lb, o)
			s.lateWritten++
			continue
		}
		if s.having != nil {
			keep, err := s.having.keep(s.j.Aggregates, &o.Pane, keyValue(o.Pane.Key))
			if err != nil {
				return &RuntimeError{Msg: "having: " + err.Error()}
			}
			if !keep {
				continue
			}
		}
		b = s.appendPane(b, &o.Pane)
		s.written++
		if len(b) > 1<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	err := flush()
	s.buf = b[:0]
	return err
}

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

func (s *sink) appendKey(b []byte, key string) []byte {
	b = append(b, `"key":`...)
	if s.j.Key == nil {
		return append(b, "null"...)
	}
	return append(b, key...)
}

func (s *sink) appendWindow(b []byte, w window.Window) []byte {
	if w.IsGlobal() {
		return b
	}
	b = append(b, `,"window_start":`...)
	b = s.times.append(b, w.Start)
	b = append(b, `,"window_end":`...)
	return s.times.append(b, w.End)
}

func (s *sink) appendPane(b []byte, p *window.Pane[string, []outVal]) []byte {
	b = append(b, '{')
	b = s.appendKey(b, p.Key)
	b = s.appendWindow(b, p.Window)
	b = append(b, `,"revision":`...)
	b = strconv.AppendInt(b, int64(p.Revision), 10)
	b = append(b, `,"timing":"`...)
	b = append(b, p.Timing.String()...)
	b = append(b, `","final":`...)
	b = appendBool(b, p.Final)
	b = append(b, `,"retract":`...)
	b = appendBool(b, p.Retract)
	b = append(b, `,"watermark":`...)
	b = s.times.append(b, p.Watermark)
	b = append(b, `,"emitted_at":`...)
	b = s.times.append(b, p.EmittedAt)
	for k, a := range s.j.Aggregates {
		b = append(b, ',', '"')
		b = append(b, a.Name...)
		b = append(b, '"', ':')
		b = appendOutVal(b, p.Value[k])
	}
	return append(b, '}', '\n')
}

func (s *sink) appendLate(b []byte, o *out) []byte {
	l := &o.Late
	b = append(b, `{"reason":"too_late",`...)
	b = s.appendKey(b, l.Key)
	b = s.appendWindow(b, l.Window)
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
