package lateness

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/weirstream/weir/mtime"
)

// pqRow is a row of a sample like the seed's: each row stands for
// sample_weight real events.
type pqRow struct {
	EventID      string    `parquet:"event_id"`
	EventTime    time.Time `parquet:"event_time,timestamp(millisecond)"`
	IngestTime   time.Time `parquet:"ingest_time,timestamp(microsecond)"`
	TsText       string    `parquet:"ts_text"`
	ArrMS        int64     `parquet:"arr_ms"`
	Platform     *string   `parquet:"platform,optional"`
	SampleWeight float64   `parquet:"sample_weight"`
}

func writeParquet(t *testing.T, rows []pqRow) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sample.parquet")
	// Two rows per row group, so that reading crosses row groups.
	if err := parquet.WriteFile(p, rows, parquet.MaxRowsPerRowGroup(2)); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParquetWeights(t *testing.T) {
	ios, web := "iOS", "web"
	row := func(id string, ts, arr mtime.Time, plat *string, w float64) pqRow {
		return pqRow{EventID: id, EventTime: ts.Time(), IngestTime: arr.Time(), TsText: ts.String(), ArrMS: int64(arr), Platform: plat, SampleWeight: w}
	}
	// In arrival order. B fires the window [0:00, 1:00) with no delay and
	// with 2 s; C, which stands for 8 events, comes a minute late.
	path := writeParquet(t, []pqRow{
		row("A", at(0, 10, 0), at(0, 11, 0), &ios, 1),
		row("B", at(1, 10, 0), at(1, 11, 0), &web, 1),
		row("C", at(0, 20, 0), at(1, 20, 0), &ios, 8),
		row("D", at(1, 30, 0), at(1, 31, 0), nil, 2),
	})
	delays := []time.Duration{0, 2 * time.Second, 5 * time.Minute}
	check := func(name string, r *Report, weighted bool) {
		t.Helper()
		// Unweighted: 1 of 4 rows too late, out of order and 2 s to 5 min
		// on the way. Weighted: C is 8 of 12 events.
		want := 100.0 / 4
		if weighted {
			want = 100.0 * 8 / 12
		}
		if r.Format != FormatParquet || r.Events != 4 || r.Rejected != 0 {
			t.Errorf("%s: %+v", name, r)
		}
		if weighted != (r.WeightField == "sample_weight") || weighted != (r.Weight == 12) {
			t.Errorf("%s: weight field %q, weight %v", name, r.WeightField, r.Weight)
		}
		for i, late := range []bool{true, true, false} {
			d := r.Delays[i]
			if d.TooLate != map[bool]int64{true: 1}[late] {
				t.Errorf("%s, delay %s: %d rows too late", name, d.Label, d.TooLate)
			}
			if w := map[bool]float64{true: want}[late]; !approx(d.TooLatePercent, w) {
				t.Errorf("%s, delay %s: %v%% too late, want %v%%", name, d.Label, d.TooLatePercent, w)
			}
		}
		if !approx(r.Travel.Buckets[1].Percent, want) || !approx(r.Travel.Buckets[0].Percent, 100-want) || !approx(r.OutOfOrder.Percent, want) {
			t.Errorf("%s: buckets %+v, out of order %+v", name, r.Travel.Buckets, r.OutOfOrder)
		}
		g := r.By[0].Groups
		if len(g) != 3 || g[0].Value != "iOS" || g[0].Events != 2 {
			t.Errorf("%s: groups %+v", name, g)
		}
		if weighted && (g[0].Weight != 9 || !approx(g[0].OutOfOrderPercent, 100.0*8/9) || g[1].Value != "(none)" || g[1].Weight != 2) {
			t.Errorf("%s: groups %+v", name, g)
		}
	}
	// TIMESTAMP columns (milliseconds and microseconds); the weight column
	// is found by its name.
	r, err := Analyze(path, Options{TimeField: "event_time", ArrivalField: "ingest_time", By: []string{"platform"}, Delays: delays})
	if err != nil {
		t.Fatal(err)
	}
	check("timestamps", r, true)
	// An RFC 3339 string and epoch milliseconds; the weight named.
	r, err = Analyze(path, Options{TimeField: "ts_text", ArrivalField: "arr_ms", Weight: "sample_weight", By: []string{"platform"}, Delays: delays})
	if err != nil {
		t.Fatal(err)
	}
	check("text and ms", r, true)
	// Rows, not weights.
	r, err = Analyze(path, Options{TimeField: "event_time", ArrivalField: "ingest_time", NoWeight: true, By: []string{"platform"}, Delays: delays})
	if err != nil {
		t.Fatal(err)
	}
	check("unweighted", r, false)

	// A column that is not there, a weight that is not a number.
	for _, o := range []Options{
		{TimeField: "event_time"},
		{TimeField: "event_time", ArrivalField: "ingest_time", Weight: "platform"},
		{TimeField: "platform", ArrivalField: "ingest_time", By: []string{"nothing"}},
	} {
		if _, err := Analyze(path, o); !IsUsage(err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := Analyze(writeFile(t, "x.parquet", "not parquet"), Options{}); !IsUsage(err) || !strings.Contains(err.Error(), "not a Parquet file") {
		t.Errorf("not parquet: %v", err)
	}
}

func approx(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A Parquet sample's key is read as a column, after the --by fields: with
// --by platform and the key event_id, 3 keys (A, B and D) and the groups of
// platform as without a key.
func TestParquetKeyAfterBy(t *testing.T) {
	ios := "iOS"
	row := func(id string, ts, arr mtime.Time, plat *string) pqRow {
		return pqRow{EventID: id, EventTime: ts.Time(), IngestTime: arr.Time(), TsText: ts.String(), ArrMS: int64(arr), Platform: plat, SampleWeight: 1}
	}
	path := writeParquet(t, []pqRow{
		row("A", at(0, 10, 0), at(0, 11, 0), &ios),
		row("B", at(1, 10, 0), at(1, 11, 0), nil),
		row("A", at(0, 20, 0), at(1, 20, 0), &ios),
		row("D", at(1, 30, 0), at(1, 31, 0), &ios),
	})
	r, err := Analyze(path, Options{TimeField: "event_time", ArrivalField: "ingest_time", By: []string{"platform"},
		Delays: []time.Duration{0}, EstimateState: true, Key: []string{"event_id"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.State == nil || r.State.Keys != 3 || len(r.By) != 1 || len(r.By[0].Groups) != 2 || r.By[0].Groups[0].Value != "iOS" || r.By[0].Groups[0].Events != 3 {
		t.Errorf("state %+v, by %+v; want 3 keys, iOS 3 events and (none) 1", r.State, r.By)
	}
}

// sentRow is a row with a send time, for TestSentTimeInEveryFormat.
type sentRow struct {
	TS      int64  `parquet:"ts"`
	Arrival int64  `parquet:"arrival"`
	Sent    *int64 `parquet:"sent,optional"`
}

// The send time corrects an event time the same way in JSON lines, CSV and
// Parquet (weir run's rule, package linedec): a device 10 minutes behind
// is no longer 10 minutes late, and a line without a send time is rejected
// as no_sent_time.
func TestSentTimeInEveryFormat(t *testing.T) {
	type ev struct {
		ts, arr, sent mtime.Time
		hasSent       bool
	}
	evs := []ev{
		{at(0, 10, 0), at(0, 10, 300), at(0, 10, 200), true},                   // a good clock: 100 ms on the way
		{at(0, 10, 0) - 600_000, at(0, 20, 500), at(0, 20, 0) - 600_000, true}, // 10 min behind: held 10 s, 500 ms on the way
		{at(0, 30, 0), at(0, 30, 900), 0, false},                               // no send time
	}
	var js, cs strings.Builder
	cs.WriteString("ts,arrival,sent\n")
	var pq []sentRow
	for _, e := range evs {
		row := sentRow{TS: int64(e.ts), Arrival: int64(e.arr)}
		if e.hasSent {
			s := int64(e.sent)
			row.Sent = &s
			js.WriteString(`{"ts":` + strconvI(e.ts) + `,"arrival":` + strconvI(e.arr) + `,"sent":` + strconvI(e.sent) + "}\n")
			cs.WriteString(strconvI(e.ts) + "," + strconvI(e.arr) + "," + strconvI(e.sent) + "\n")
		} else {
			js.WriteString(`{"ts":` + strconvI(e.ts) + `,"arrival":` + strconvI(e.arr) + "}\n")
			cs.WriteString(strconvI(e.ts) + "," + strconvI(e.arr) + ",\n")
		}
		pq = append(pq, row)
	}
	p := filepath.Join(t.TempDir(), "sent.parquet")
	if err := parquet.WriteFile(p, pq); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{writeFile(t, "sent.jsonl", js.String()), writeFile(t, "sent.csv", cs.String()), p} {
		r, err := Analyze(in, Options{SentField: "sent", Delays: []time.Duration{0}, Lateness: []time.Duration{}})
		if err != nil {
			t.Fatal(err)
		}
		// Corrected, the slow clock's event was held 10 s on the device and
		// 500 ms on the way.
		if r.Events != 2 || r.Rejected != 1 || r.RejectReasons["no_sent_time"] != 1 || r.Travel.MaxMS != 10_000 {
			t.Errorf("%s: %d events, %d rejected %v, longest travel %d ms; want 2, 1 no_sent_time, 10000",
				filepath.Ext(in), r.Events, r.Rejected, r.RejectReasons, r.Travel.MaxMS)
		}
	}
	// Without the correction the slow clock's event is 10 minutes on the way.
	r, err := Analyze(writeFile(t, "plain.jsonl", js.String()), Options{Delays: []time.Duration{0}, Lateness: []time.Duration{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Events != 3 || r.Travel.MaxMS != 610_500 {
		t.Errorf("uncorrected: %d events, longest travel %d ms; want 3, 610500", r.Events, r.Travel.MaxMS)
	}
}

func strconvI(t mtime.Time) string { return strconv.FormatInt(int64(t), 10) }
