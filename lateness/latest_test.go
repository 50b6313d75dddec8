package lateness

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --latest N lists the N events that travelled longest, the latest first,
// each with its line (blank and rejected lines counted, as weir run numbers
// them), its partition and its times; of two that travelled as long, the
// earlier line. The same stream as CSV names each row's line.
func TestLatestEvents(t *testing.T) {
	in := strings.Join([]string{
		jsonLine(at(0, 10, 0), at(0, 10, 500), `,"p":"a"`), // 1: 500 ms
		`not json`, // 2
		jsonLine(at(0, 5, 0), at(0, 20, 0), `,"p":"b"`), // 3: 15 s
		``, // 4
		jsonLine(at(0, 0, 0), at(6, 0, 0), `,"p":"a"`),   // 5: 6 min
		jsonLine(at(0, 21, 0), at(0, 36, 0), `,"p":"a"`), // 6: 15 s, after line 3
		jsonLine(at(0, 37, 0), at(0, 37, 1), `,"p":"b"`), // 7: 1 ms
	}, "\n") + "\n"
	want := []string{
		"5 a 2026-01-01T00:00:00.000Z 2026-01-01T00:06:00.000Z 360000",
		"3 b 2026-01-01T00:00:05.000Z 2026-01-01T00:00:20.000Z 15000",
		"6 a 2026-01-01T00:00:21.000Z 2026-01-01T00:00:36.000Z 15000",
	}
	show := func(r *Report) []string {
		var got []string
		for _, e := range r.Latest {
			got = append(got, fmt.Sprintf("%d %s %s %s %d", e.Line, e.Partition, e.EventTime, e.Arrival, e.TravelMS))
		}
		return got
	}
	o := Options{PartitionField: "p", Latest: 3, Delays: []time.Duration{0}}
	r, err := Analyze(writeFile(t, "in.jsonl", in), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := show(r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("latest:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "The 3 latest events:") || !strings.Contains(text.String(), "5             a  2026-01-01T00:00:00.000Z  2026-01-01T00:06:00.000Z  6 min 00 s") {
		t.Errorf("text:\n%s", text.String())
	}

	// CSV: the header is line 1.
	csvText := "ts,arrival,p\n" + strings.Join([]string{
		at(0, 10, 0).String() + "," + at(0, 10, 500).String() + ",a",
		at(0, 5, 0).String() + "," + at(0, 20, 0).String() + ",b",
		at(0, 0, 0).String() + "," + at(6, 0, 0).String() + ",a",
	}, "\n") + "\n"
	r, err = Analyze(filepath.Join(writeFile(t, "in.csv", csvText)), Options{PartitionField: "p", Latest: 2, Delays: []time.Duration{0}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(show(r), "\n"), "4 a 2026-01-01T00:00:00.000Z 2026-01-01T00:06:00.000Z 360000\n3 b 2026-01-01T00:00:05.000Z 2026-01-01T00:00:20.000Z 15000"; got != want {
		t.Errorf("csv latest:\n%s\nwant:\n%s", got, want)
	}

	// Without --latest, none.
	r, err = Analyze(writeFile(t, "in.jsonl", in), Options{Delays: []time.Duration{0}})
	if err != nil || r.Latest != nil {
		t.Errorf("without Latest: %v %v", r.Latest, err)
	}
}
