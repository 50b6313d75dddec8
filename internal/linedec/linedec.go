// Package linedec holds the rules by which weir reads the times of an input
// line, in the one order every reader applies them: the arrival time, a
// watermark line, the event time (a field, or the record's own timestamp),
// its correction by the device's send time, its plausibility, the arrival's
// own faults, and max_future. weir run
// (package job) and weir lateness both classify a line with it, so that a
// line is an event, a watermark line or a rejected line, for the same
// reason, in both.
//
// It also holds what makes a value a key, an id or a partition (IsScalar)
// and when two such values are one (AppendIdentity: the value with its JSON
// type, so that "1" and 1 are two partitions in both).
//
// The rules read a record's fields as source.Values: a JSON line's from its
// object, a record of a binary format's straight from its bytes when its
// decoder can (Projector), so that both are read by the same rules.
//
// What a reader does with an event's other fields (values, weights, groups),
// reading the lines themselves and where rejected lines go belong to the
// reader, not here.
package linedec

import (
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// The reasons a line's times reject it, as the quarantine file and the
// summaries name them.
const (
	NoEventTime  = "no_event_time"
	BadEventTime = "bad_event_time"
	Implausible  = "implausible_event_time"
	Future       = "future_event_time"
	NoArrival    = "no_arrival_time"
	BadArrival   = "bad_arrival_time"
	NoSent       = "no_sent_time"
	BadSent      = "bad_sent_time"
	BadWatermark = "bad_watermark"
)

// Rules are the time fields of an input and the limits on its event times.
type Rules struct {
	// Time is the event-time field; unused when RecordTime is set, where
	// the event time is the record's own timestamp (Kafka's).
	Time       []string
	RecordTime bool
	// Ingestion takes the arrival as the event time (ingestion time).
	Ingestion bool
	// Arrival is the arrival-time field; without one a line arrives at the
	// processing time it is read at.
	Arrival []string
	// Sent, when set, is the field of the time the device sent the line,
	// on the device's own clock, as the event time is: the event time is
	// corrected for the device's clock by it, to the arrival less how long
	// before sending the event happened (Time + Arrival - Sent), as
	// analytics pipelines correct a phone whose clock is off. A line
	// without a valid send time is rejected (NoSent, BadSent).
	Sent []string
	// Watermark is the field of a watermark line (watermark.from_field): a
	// line that has it and not the event-time field moves a scripted
	// watermark. Nil: no watermark lines.
	Watermark []string
	// MaxFuture, when positive, rejects an event time more than this far
	// after the line's arrival.
	MaxFuture mtime.Time
	// Latest, when set, is the latest event time accepted (a later one is
	// implausible, with LatestDetail as the detail): the zero value accepts
	// every time.
	Latest       mtime.Time
	LatestDetail string
}

// Kind is what a line is, by its times.
type Kind uint8

const (
	// Event is a line with a valid event time.
	Event Kind = iota
	// Watermark is a line that only moves a scripted watermark.
	Watermark
	// Rejected is a line its times reject (Times.Reason says why).
	Rejected
)

// Times is what Read found in a line.
type Times struct {
	Kind   Kind
	Reason string // why a Rejected line is
	Detail string
	// Arrival is the line's arrival, valid when HasArrival is: a rejected
	// line with one still moves the processing clock.
	Arrival    mtime.Time
	HasArrival bool
	Time       mtime.Time // an Event's event time
	Watermark  mtime.Time // a Watermark line's watermark
	// Sent is the line's send time (Rules.Sent), read with Time; SentFault
	// is NoSent or BadSent when it could not be (Check rejects the line
	// for it).
	Sent      mtime.Time
	SentFault string
}

// Fields are the values of a record's time fields, as the rules read
// them, each at its place (FieldTime, ...): Absent for a field the record
// lacks, or the rules do not name.
type Fields [NumFields]source.Value

// The places of the time fields in Fields.
const (
	FieldTime = iota
	FieldArrival
	FieldSent
	FieldWatermark
	NumFields
)

// Paths are the paths of the time fields the rules read, at their places
// in Fields (nil: none).
func (r *Rules) Paths() [NumFields][]string {
	var p [NumFields][]string
	if !r.RecordTime && !r.Ingestion {
		p[FieldTime] = r.Time
		if p[FieldTime] == nil {
			p[FieldTime] = []string{} // the object itself, which is no time
		}
	}
	p[FieldArrival], p[FieldSent], p[FieldWatermark] = r.Arrival, r.Sent, r.Watermark
	return p
}

// JSON is the Fields of the JSON object v: its numbers' texts are
// appended to *slab.
func (r *Rules) JSON(v *fastjson.Value, slab *[]byte) Fields {
	var f Fields
	paths := r.Paths()
	source.ReadJSON(v, paths[:], f[:], slab)
	return f
}

// Read classifies a record by its times (its fields f), into t (which it
// sets whole). now is the arrival to use without an arrival field;
// recordTS is the record's own timestamp (mtime.MinTime when it has
// none), for RecordTime.
func (r *Rules) Read(t *Times, f *Fields, now, recordTS mtime.Time) {
	*t = Times{Arrival: now, HasArrival: true}
	// Arrival first (a rejected line still moves the processing clock),
	// but its faults are reported after the event time's.
	arrival := ""
	if r.Arrival != nil {
		t.HasArrival = false
		if a := &f[FieldArrival]; a.Type == source.Absent {
			arrival = NoArrival
		} else if at, ok := source.TimeOf(a); !ok {
			arrival = BadArrival
		} else {
			t.Arrival, t.HasArrival = at, true
		}
	}
	tv := &f[FieldTime] // Absent unless the rules read it
	if r.Watermark != nil && tv.Type == source.Absent {
		if w := &f[FieldWatermark]; w.Type != source.Absent {
			if arrival != "" {
				t.reject(arrival, "")
				return
			}
			wm, ok := source.TimeOf(w)
			if !ok {
				t.reject(BadWatermark, "")
				return
			}
			t.Kind, t.Watermark = Watermark, wm
			return
		}
	}
	switch {
	case r.Ingestion:
		// Without a valid arrival there is no event time: the arrival's
		// fault is the line's reason.
		if arrival != "" {
			t.reject(arrival, "")
			return
		}
		t.Time = t.Arrival
	case r.RecordTime:
		if recordTS == mtime.MinTime {
			t.reject(NoEventTime, "")
			return
		}
		t.Time = recordTS
	case tv.Type == source.Absent:
		t.reject(NoEventTime, "")
		return
	default:
		ts, ok := source.TimeOf(tv)
		if !ok {
			t.reject(BadEventTime, "")
			return
		}
		t.Time = ts
		if r.Sent != nil {
			if s := &f[FieldSent]; s.Type == source.Absent {
				t.SentFault = NoSent
			} else if st, ok := source.TimeOf(s); !ok {
				t.SentFault = BadSent
			} else {
				t.Sent = st
			}
		}
	}
	r.Check(t, arrival)
}

// Check applies the rules that follow the event time's reading to t, whose
// Time and Arrival (and with Rules.Sent, Sent or SentFault) are read (by
// Read, or by a reader of CSV or Parquet): the send time's fault and the
// correction by it, plausibility, then the arrival's fault (arrival, ""
// when none), then max_future. It makes t an Event or a Rejected line.
func (r *Rules) Check(t *Times, arrival string) {
	if r.Sent != nil && !r.RecordTime && !r.Ingestion {
		if t.SentFault != "" {
			t.reject(t.SentFault, "")
			return
		}
		if arrival == "" {
			d := t.Arrival - t.Sent
			if (t.Arrival >= t.Sent) != (d >= 0) { // overflowed
				d = mtime.MaxTime
				if t.Arrival < t.Sent {
					d = mtime.MinTime
				}
			}
			t.Time = t.Time.Add(d)
		}
	}
	switch {
	case t.Time < source.PlausibleFrom:
		t.reject(Implausible, "")
	case r.Latest != 0 && t.Time > r.Latest:
		t.reject(Implausible, r.LatestDetail)
	case arrival != "":
		t.reject(arrival, "")
	case r.MaxFuture > 0 && t.Time > t.Arrival.Add(r.MaxFuture):
		t.reject(Future, "")
	default:
		t.Kind = Event
	}
}

func (t *Times) reject(reason, detail string) {
	t.Kind, t.Reason, t.Detail = Rejected, reason, detail
}

// A Projector is a format's decoder (a plan.Decoder) that reads the fields
// the rules name straight from a record's bytes, without its JSON object
// or text: what the object would hold, read for less.
type Projector interface {
	// Project is a reader of the fields at paths (a nil path is left
	// Absent), or nil when the format reads such fields from objects
	// only.
	Project(paths [][]string) Projection
}

// A Projection reads the fields of records; it is safe for concurrent
// use.
type Projection interface {
	// Read reads the fields of the record value into out, one a path as
	// Project was given them, as its JSON object holds them: a field the
	// object would not have, or would have as null, is Absent, an object
	// or an array Other. Numbers' texts are appended to *slab; strings'
	// may be value's bytes. The first NumFields paths are the time
	// fields, in Fields' order, which the rules read as instants only:
	// there, a format's instant (a String with IsTime) may be without its
	// Text, unless the path is named again after them. Not ok: the record
	// is to be read from its object instead, one that does not decode, or
	// whose JSON text could be longer than max bytes (out is then
	// undefined).
	Read(value []byte, out []source.Value, slab *[]byte, max int) (ok bool)
}
