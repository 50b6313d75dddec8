package job

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/window"
)

type pane = window.Pane[string, []outVal]
type lateEvent = window.LateEvent[string, record]

// format writes panes, too-late events and rejected lines as JSON lines. Each
// output has a format of its own: they are used from different goroutines.
type format struct {
	j     *jobfile.Job
	times timeCache
	// dec is the source's format's decoder (nil: JSON lines), which writes
	// the JSON text of an event kept as its record (record.encoded); buf
	// holds that text.
	dec plan.Decoder
	buf []byte
	// with is the format of the records of a join's other input (where
	// they were read), in a job with a join.
	with *format
}

func newFormat(j *jobfile.Job, dec plan.Decoder) *format {
	f := &format{j: j, dec: dec}
	if j.Join != nil {
		f.with = &format{j: j.Join.With}
	}
	return f
}

// havingFilter passes on the panes for which the having expression holds. An
// expression that fails on a pane (it compiled, but the pane's values make
// it fail) does not stop the job: the pane is written unfiltered, the
// failure is counted and the first few are logged with the pane they were
// about.
type havingFilter struct {
	j      *jobfile.Job
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
	if !f.j.Keyed() {
		return append(b, "null"...)
	}
	b = append(b, key...)
	if f.j.KeyParts != nil {
		// A composite key's fields, each its own field too.
		for i, v := range splitKey(key) {
			b = append(b, ',')
			b = text.AppendJSONString(b, []byte(f.j.KeyParts[i].String()))
			b = append(b, ':')
			b = append(b, v...)
		}
	}
	return b
}

// splitKey is a composite key's values, each as canonical JSON: the
// elements of its array (which hold no array or object, so that a comma
// outside a string ends one).
func splitKey(key string) []string {
	var out []string
	if len(key) < 2 {
		return nil
	}
	body := key[1 : len(key)-1]
	start, inString := 0, false
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case c == ',' && !inString:
			out = append(out, body[start:i])
			start = i + 1
		}
	}
	return append(out, body[start:])
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
	b = append(b, window.Status(p.Final, p.Retract)...)
	b = append(b, `","mode":"`...)
	b = append(b, f.j.Window.Mode.String()...)
	b = append(b, `","version":`...)
	b = strconv.AppendInt(b, f.j.Version, 10)
	b = append(b, `,"watermark":`...)
	b = f.times.append(b, p.Watermark)
	b = append(b, `,"emitted_at":`...)
	b = f.times.append(b, p.EmittedAt)
	partial := false
	for k, a := range f.j.Aggregates {
		b = append(b, ',', '"')
		b = append(b, a.Name...)
		b = append(b, '"', ':')
		b = appendOutVal(b, p.Value[k])
		partial = partial || p.Value[k].partial
	}
	if partial {
		// Aggregates added to the job after the window opened: their
		// values cover only what came since.
		b = append(b, `,"partial":[`...)
		n := 0
		for k, a := range f.j.Aggregates {
			if p.Value[k].partial {
				if n > 0 {
					b = append(b, ',')
				}
				b = text.AppendJSONString(b, []byte(a.Name))
				n++
			}
		}
		b = append(b, ']')
	}
	return append(b, '}', '\n')
}

// paneRecord is a pane as a Kafka record: keyed by its key and window, so
// that a compacted topic keeps each window's latest revision; the value is
// the pane's JSON.
func (f *format) paneRecord(p pane) (key, value []byte) {
	// Room for a usual pane, so that its line grows once at most.
	v := f.appendPane(make([]byte, 0, 256+24*len(p.Value)), p)
	return f.paneKey(p), v[:len(v)-1]
}

// paneKey is a pane's key as a Kafka record's: [key, window_start,
// window_end] (the global window's without its window).
func (f *format) paneKey(p pane) (key []byte) {
	key = make([]byte, 0, len(p.Key)+56) // [key,"start","end"]
	key = append(key, '[')
	if !f.j.Keyed() {
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
	return append(key, ']')
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
	if l.Reason == window.ReasonLateForSomeWindows {
		// Accepted into its other windows: the ones it missed.
		b = append(b, `,"windows_missed":[`...)
		for i, w := range window.MissedWindows(f.j.Window.Assigner, &l, nil) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"window_start":`...)
			b = f.times.append(b, w.Start)
			b = append(b, `,"window_end":`...)
			b = f.times.append(b, w.End)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"watermark":`...)
	b = appendTime(b, l.Watermark)
	b = append(b, `,"event_time":`...)
	b = appendTime(b, l.Timestamp)
	b = f.appendPosition(b, l.Value.part, l.Value.line)
	b = append(b, `,"set_aside_at":`...)
	b = appendTime(b, l.At)
	raw, ok := f.json(l.Value.raw, l.Value.encoded)
	b = f.appendRecord(b, "event", raw, nil, ok)
	return append(b, '}', '\n')
}

// appendRecord appends a record as read, under name: a too-late event's
// JSON as it is (object), a rejected line as a JSON string. It is exact and
// bounded, so that a dead-letter record is valid JSON, says what was read,
// and always fits its output: bytes that are not UTF-8 go as base64
// (name_base64), and a record longer than dead_letter_max_bytes keeps its
// first bytes, with its whole length (name_bytes) and the SHA-256 of all of
// it (name_sha256). cut, when the source itself cut the record, gives those.
func (f *format) appendRecord(b []byte, name string, data []byte, cut *connector.Cut, object bool) []byte {
	limit := f.j.DeadLetterLimit()
	whole := int64(len(data))
	if cut != nil {
		whole = cut.Length
	}
	keep := data
	if int64(len(keep)) > limit {
		keep = keep[:limit]
		// Not in the middle of a character.
		for i := 0; i < utf8.UTFMax && len(keep) > 0 && !utf8.RuneStart(data[len(keep)]); i++ {
			keep = keep[:len(keep)-1]
		}
	}
	short := int64(len(keep)) < whole
	var ok bool
	if object {
		ok = !short && text.ValidJSON(keep)
	} else {
		ok = utf8.Valid(keep)
	}
	switch {
	case ok:
		// (An event weir accepted may hold what it did not read, such as
		// a string escape JSON does not have.)
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		if object {
			b = append(b, keep...)
		} else {
			b = text.AppendJSONString(b, keep)
		}
	default:
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, `_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, keep)
		b = append(b, '"')
	}
	if short {
		sum := sha256.Sum256(data)
		if cut != nil {
			sum = cut.SHA256
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, `_bytes":`...)
		b = strconv.AppendInt(b, whole, 10)
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, `_sha256":"`...)
		b = hex.AppendEncode(b, sum[:])
		b = append(b, '"')
	}
	return b
}

// appendPosition says where in the input a record was: its line in a file,
// its partition and offset in a topic.
func (f *format) appendPosition(b []byte, part int32, off int64) []byte {
	if f.j.Kafka != nil {
		if f.j.Task > 0 { // a task reads one partition: index 0
			part = f.j.Task - 1
		}
		b = append(b, `,"partition":`...)
		b = text.AppendJSONString(b, []byte(f.j.Kafka.Topic+"/"+strconv.Itoa(int(part))))
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
		b = text.AppendJSONString(b, []byte(r.Detail))
	}
	b = append(b, `,"set_aside_at":`...)
	b = appendTime(b, r.At)
	if r.Arrival != mtime.MinTime {
		b = append(b, `,"arrival":`...)
		b = appendTime(b, r.Arrival)
	}
	b = f.appendRecord(b, "raw", r.Record.Value, r.Record.Cut, false)
	return append(b, '}', '\n')
}
