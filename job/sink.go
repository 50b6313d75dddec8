package job

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
// or the number's text. A key without escapes is cut out of its JSON text.
func keyValue(k string) string {
	if len(k) >= 2 && k[0] == '"' {
		if !strings.ContainsRune(k, '\\') {
			return k[1 : len(k)-1]
		}
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
	b = append(b, `,"status":"`...)
	b = append(b, paneStatus(&p)...)
	b = append(b, `","version":`...)
	b = strconv.AppendInt(b, f.j.Version, 10)
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

// paneRecord is a pane as a Kafka record: keyed by its key and window, so
// that a compacted topic keeps each window's latest revision; the value is
// the pane's JSON.
func (f *format) paneRecord(p pane) (key, value []byte) {
	key = append(key, '[')
	if f.j.Key == nil {
		key = append(key, "null"...)
	} else {
		key = append(key, p.Key...)
	}
	if !p.Window.IsGlobal() {
		key = append(key, ',')
		key = appendTime(key, p.Window.Start)
		key = append(key, ',')
		key = appendTime(key, p.Window.End)
	}
	key = append(key, ']')
	v := f.appendPane(nil, p)
	return key, v[:len(v)-1]
}

// The identities of output records: what a record is, whenever it was
// computed (FNV-1a, stable from run to run and machine to machine). A Kafka
// output carries them, so that a job restored from an older checkpoint
// recognises the records a later checkpoint had committed.
type identity uint64

func newIdentity() identity { return 14695981039346656037 }

func (h identity) bytes(b []byte) identity {
	for _, c := range b {
		h ^= identity(c)
		h *= 1099511628211
	}
	return h
}

func (h identity) string(s string) identity {
	for i := 0; i < len(s); i++ {
		h ^= identity(s[i])
		h *= 1099511628211
	}
	return h.int(int64(len(s)))
}

func (h identity) int(v int64) identity {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	return h.bytes(b[:])
}

// paneID is a pane's identity: its key, window, revision, and whether it
// withdraws that revision.
func paneID(p pane) uint64 {
	h := newIdentity().string(p.Key).int(int64(p.Window.Start)).int(int64(p.Window.End)).int(int64(p.Revision))
	if p.Retract {
		h = h.int(1)
	}
	return uint64(h)
}

// lateID is a too-late event's identity: where it was read, and why it is
// set aside.
func lateID(l lateEvent) uint64 {
	return uint64(newIdentity().string(l.Reason).int(int64(l.Value.part)).int(l.Value.line))
}

// rejectedID is a rejected line's identity: where it was read.
func rejectedID(r engine.RejectedRecord) uint64 {
	return uint64(newIdentity().string(r.Source).int(int64(r.Record.Partition)).int(r.Record.Offset))
}

// lateRecord is a too-late event as a Kafka record, keyed by its key.
func (f *format) lateRecord(l lateEvent) (key, value []byte) {
	if f.j.Key != nil {
		key = []byte(l.Key)
	}
	v := f.appendLate(nil, l)
	return key, v[:len(v)-1]
}

// rejectedRecord is a rejected line as a Kafka record.
func (f *format) rejectedRecord(r engine.RejectedRecord) (key, value []byte) {
	v := f.appendRejected(nil, r)
	return nil, v[:len(v)-1]
}

func (f *format) appendLate(b []byte, l lateEvent) []byte {
	if l.Reason != "" {
		b = append(b, `{"reason":"`...)
		b = append(b, l.Reason...)
		b = append(b, `",`...)
	} else {
		b = append(b, `{"reason":"too_late",`...)
	}
	b = f.appendKey(b, l.Key)
	b = f.appendWindow(b, l.Window)
	b = append(b, `,"watermark":`...)
	b = appendTime(b, l.Watermark)
	b = append(b, `,"event_time":`...)
	b = appendTime(b, l.Timestamp)
	b = f.appendPosition(b, l.Value.part, l.Value.line)
	b = append(b, `,"event":`...)
	b = append(b, l.Value.raw...)
	return append(b, '}', '\n')
}

// appendPosition says where in the input a record was: its line in a file,
// its partition and offset in a topic.
func (f *format) appendPosition(b []byte, part int32, off int64) []byte {
	if f.j.Kafka != nil {
		if f.j.task > 0 { // a task reads one partition: index 0
			part = f.j.task - 1
		}
		b = append(b, `,"partition":`...)
		b = appendJSONString(b, []byte(f.j.Kafka.Topic+"/"+strconv.Itoa(int(part))))
		b = append(b, `,"offset":`...)
		return strconv.AppendInt(b, off, 10)
	}
	b = append(b, `,"line":`...)
	return strconv.AppendInt(b, off, 10)
}

// appendRejected formats a rejected line.
func (f *format) appendRejected(b []byte, r engine.RejectedRecord) []byte {
	b = append(b, `{"reason":"`...)
	b = append(b, r.Reason...)
	b = append(b, '"')
	b = f.appendPosition(b, int32(r.Record.Partition), r.Record.Offset)
	if r.Detail != "" {
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, []byte(r.Detail))
	}
	b = append(b, `,"raw":`...)
	b = appendJSONString(b, r.Record.Value)
	return append(b, '}', '\n')
}
