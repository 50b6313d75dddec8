package linedec

import (
	"fmt"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/mtime"
)

// Each line is classified by the first rule it breaks, in weir run's order:
// a fault of the arrival is reported after the event time's own, and a
// watermark line needs a good arrival.
func TestRead(t *testing.T) {
	const t0 = mtime.Time(1788782400000) // 2026-09-07T12:00:00Z
	r := Rules{Time: []string{"ts"}, Arrival: []string{"arr"}, Watermark: []string{"wm"}, MaxFuture: 3_600_000, Latest: t0 + 10_000, LatestDetail: "too late for the windows"}
	for line, want := range map[string]string{
		`{"ts":1788782400001,"arr":1788782400002}`:        "event 1788782400001 arrived 1788782400002",
		`{"ts":"2026-09-07T12:00:00.001Z","arr":1}`:       "rejected future_event_time  arrived 1",
		`{"ts":1788782400001}`:                            "rejected no_arrival_time  (no arrival)",
		`{"ts":1788782400001,"arr":"soon"}`:               "rejected bad_arrival_time  (no arrival)",
		`{"ts":"x","arr":"soon"}`:                         "rejected bad_event_time  (no arrival)",
		`{"ts":5,"arr":"soon"}`:                           "rejected implausible_event_time  (no arrival)",
		`{"ts":1788782410001,"arr":1788782410001}`:        "rejected implausible_event_time too late for the windows arrived 1788782410001",
		`{"arr":1788782400002}`:                           "rejected no_event_time  arrived 1788782400002",
		`{"wm":1788782400000,"arr":1788782400002}`:        "watermark 1788782400000 arrived 1788782400002",
		`{"wm":"later","arr":1788782400002}`:              "rejected bad_watermark  arrived 1788782400002",
		`{"wm":1788782400000}`:                            "rejected no_arrival_time  (no arrival)",
		`{"wm":1,"ts":1788782400001,"arr":1788782400002}`: "event 1788782400001 arrived 1788782400002",
	} {
		v, err := fastjson.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(&r, v, 7, mtime.MinTime); got != want {
			t.Errorf("%s: %s, want %s", line, got, want)
		}
	}
}

// Without an arrival field a line arrives at the time given; with the
// record's timestamp as event time, the time field is not read, and a
// record without a timestamp has no event time; without a watermark field
// there are no watermark lines.
func TestReadRecordTimeAndNoArrival(t *testing.T) {
	const t0 = mtime.Time(1788782400000)
	r := Rules{RecordTime: true}
	v := fastjson.MustParse(`{"ts":5,"wm":1}`)
	if got, want := read(&r, v, t0+1, t0), "event 1788782400000 arrived 1788782400001"; got != want {
		t.Errorf("record time: %s, want %s", got, want)
	}
	if got, want := read(&r, v, t0+1, mtime.MinTime), "rejected no_event_time  arrived 1788782400001"; got != want {
		t.Errorf("no record timestamp: %s, want %s", got, want)
	}
	r = Rules{Time: []string{"ts"}}
	if got, want := read(&r, fastjson.MustParse(`{"wm":1}`), t0, mtime.MinTime), "rejected no_event_time  arrived 1788782400000"; got != want {
		t.Errorf("no watermark field: %s, want %s", got, want)
	}
}

// read shows what Read makes of v, reading it into a Times that holds
// another line's result, which Read must overwrite whole.
func read(r *Rules, v *fastjson.Value, now, recordTS mtime.Time) string {
	t := Times{Kind: Rejected, Reason: "stale", Detail: "stale", Time: 99, Watermark: 99, Arrival: 99, HasArrival: true}
	var slab []byte
	f := r.JSON(v, &slab)
	r.Read(&t, &f, now, recordTS)
	return show(t)
}

func show(t Times) string {
	arr := "(no arrival)"
	if t.HasArrival {
		arr = fmt.Sprintf("arrived %d", t.Arrival)
	}
	switch t.Kind {
	case Event:
		return fmt.Sprintf("event %d %s", t.Time, arr)
	case Watermark:
		return fmt.Sprintf("watermark %d %s", t.Watermark, arr)
	}
	return fmt.Sprintf("rejected %s %s %s", t.Reason, t.Detail, arr)
}

// With ingestion time the event time is the arrival: the arrival field's,
// or the time the line is read at; a time field is not read; a line whose
// arrival is missing or bad has no event time either, and is rejected for
// its arrival.
func TestReadIngestionTime(t *testing.T) {
	const t0 = mtime.Time(1788782400000)
	r := Rules{Ingestion: true, Arrival: []string{"at"}}
	for line, want := range map[string]string{
		`{"ts":5,"at":1788782400007}`: "event 1788782400007 arrived 1788782400007",
		`{"ts":5}`:                    "rejected no_arrival_time  (no arrival)",
		`{"ts":5,"at":"soon"}`:        "rejected bad_arrival_time  (no arrival)",
		`{"at":1}`:                    "rejected implausible_event_time  arrived 1",
	} {
		if got := read(&r, fastjson.MustParse(line), t0, mtime.MinTime); got != want {
			t.Errorf("%s: %s, want %s", line, got, want)
		}
	}
	r = Rules{Ingestion: true, Time: []string{"ts"}}
	if got, want := read(&r, fastjson.MustParse(`{"ts":5}`), t0+3, mtime.MinTime), "event 1788782400003 arrived 1788782400003"; got != want {
		t.Errorf("the clock's arrival: %s, want %s", got, want)
	}
}

// With a send time, an event time is corrected for the device's clock: the
// arrival less how long before sending the event happened (a phone 10
// minutes behind sends an event of 11:50:00 at 11:50:05 by its clock, which
// arrives at 12:00:06: it happened at 12:00:01). A line without a valid
// send time is rejected for it, after the event time's own faults; the
// arrival's fault comes after the send time's, as it does after the event
// time's, and leaves the time as read.
func TestReadSentTime(t *testing.T) {
	const t0 = mtime.Time(1788782400000) // 2026-09-07T12:00:00Z
	r := Rules{Time: []string{"ts"}, Arrival: []string{"arr"}, Sent: []string{"sent"}, MaxFuture: 60_000}
	for line, want := range map[string]string{
		`{"ts":"2026-09-07T11:50:00Z","sent":"2026-09-07T11:50:05Z","arr":"2026-09-07T12:00:06Z"}`: "event 1788782401000 arrived 1788782406000",
		`{"ts":1788782400000,"sent":1788782400000,"arr":1788782400500}`:                            "event 1788782400500 arrived 1788782400500",
		// A clock ahead: the event is brought back, and max_future does not reject it.
		`{"ts":"2026-09-07T13:00:00Z","sent":"2026-09-07T13:00:01Z","arr":"2026-09-07T12:00:02Z"}`: "event 1788782401000 arrived 1788782402000",
		`{"ts":1788782400000,"arr":1788782400500}`:                                                 "rejected no_sent_time  arrived 1788782400500",
		`{"ts":1788782400000,"sent":"when?","arr":1788782400500}`:                                  "rejected bad_sent_time  arrived 1788782400500",
		`{"ts":"x","sent":"when?","arr":1788782400500}`:                                            "rejected bad_event_time  arrived 1788782400500",
		`{"ts":1788782400000,"sent":"when?"}`:                                                      "rejected bad_sent_time  (no arrival)",
		`{"ts":1788782400000,"sent":1788782400000,"arr":"soon"}`:                                   "rejected bad_arrival_time  (no arrival)",
		// A send time far behind the event's own makes it a future one.
		`{"ts":1788782400000,"sent":946684800001,"arr":1788782400000}`: "rejected future_event_time  arrived 1788782400000",
	} {
		v, err := fastjson.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(&r, v, 7, mtime.MinTime); got != want {
			t.Errorf("%s: %s, want %s", line, got, want)
		}
	}
	// A record timestamp or ingestion time is not corrected.
	r = Rules{RecordTime: true, Sent: []string{"sent"}}
	if got, want := read(&r, fastjson.MustParse(`{"sent":1}`), t0+5, t0), "event 1788782400000 arrived 1788782400005"; got != want {
		t.Errorf("record time: %s, want %s", got, want)
	}
}
