package lateness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// weirRun runs the job engine of weir run over file with tumbling windows
// of one minute, the watermark delay and allowed lateness given, a watermark
// after every event, no key and no id, and returns its summary.
func weirRun(t *testing.T, file string, delay, lateness mtime.Time) *job.Summary {
	return weirRunWith(t, file, delay, lateness, "", "")
}

// weirRunWith is weirRun with more time and watermark settings.
func weirRunWith(t *testing.T, file string, delay, lateness mtime.Time, timeExtra, wmExtra string) *job.Summary {
	t.Helper()
	dir := t.TempDir()
	yaml := fmt.Sprintf("source: {file: %q}\ntime: {field: ts, arrival_field: arrival%s}\n"+
		"watermark: {delay: %s, interval: 0s%s}\nwindow: {tumbling: 1m}\nallowed_lateness: %s\n"+
		"aggregates: {n: count}\noutput: out.jsonl\n",
		file, timeExtra, mtime.FormatDuration(delay), wmExtra, mtime.FormatDuration(lateness))
	j, err := jobfile.Parse([]byte(yaml), filepath.Join(dir, "job.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := job.Run(context.Background(), j, job.Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func steepFile(t *testing.T, events int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "steep.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := gen.Steep(w, gen.Options{Events: events, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSteepTable1 replays a steep stream: Table 1 has the seed's shape, and
// every too-late count is what weir run reports with the same window and
// delay, exactly. The 2-million-event stream of the issue runs without
// -short; a 200,000-event one always runs, and also checks every allowed
// lateness against weir run.
func TestSteepTable1(t *testing.T) {
	sizes := []int{200_000}
	if !testing.Short() {
		sizes = append(sizes, 2_000_000)
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			file := steepFile(t, n)
			start := time.Now()
			r, err := Analyze(file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d events analysed in %v", r.Events, time.Since(start))
			if r.Events != int64(n) || r.Rejected != 0 {
				t.Fatalf("%d events, %d rejected", r.Events, r.Rejected)
			}
			share := map[string]float64{}
			for _, d := range r.Delays {
				share[d.Label] = d.TooLatePercent
				sum := weirRun(t, file, mtime.Time(d.DelayMS), 0)
				if sum.TooLate != d.TooLate || sum.Accepted+sum.TooLate != r.Events {
					t.Errorf("delay %s: weir lateness says %d too late, weir run %d (accepted %d)", d.Label, d.TooLate, sum.TooLate, sum.Accepted)
				}
				if d.marginN != d.TooLate {
					t.Errorf("delay %s: the margins say %d too late, the engine %d", d.Label, d.marginN, d.TooLate)
				}
				for _, l := range d.Lateness {
					if l.marginN != l.TooLate {
						t.Errorf("delay %s, lateness %s: the margins say %d too late, the engine %d", d.Label, l.Label, l.marginN, l.TooLate)
					}
					if n > 200_000 {
						continue
					}
					sum := weirRun(t, file, mtime.Time(d.DelayMS), mtime.Time(l.LatenessMS))
					if sum.TooLate != l.TooLate {
						t.Errorf("delay %s, lateness %s: weir lateness says %d too late, weir run %d", d.Label, l.Label, l.TooLate, sum.TooLate)
					}
				}
				t.Logf("%-6s %5.2f%% too late (%d), waits %v", d.Label, d.TooLatePercent, d.TooLate, *d.WaitMinMS)
			}
			// The seed's shape: a plateau from 2 s to 5 min, then the long
			// tail, which ends before 6 h. (The generator's offline phones
			// come back from 5 min on, and a 5 min delay still catches those
			// back within the minute after, thanks to the window: 0.023
			// points at 2 million events, where the seed lost 0.01.)
			if s2, s5 := share["2 s"], share["5 min"]; s2-s5 > 0.03 || s5 > s2 || s2 < 0.8 {
				t.Errorf("no plateau: %.3f%% at 2 s, %.3f%% at 5 min", s2, s5)
			}
			if share["1 h"] > 0.6*share["5 min"] || share["3 h"] > 0.5*share["1 h"] || share["6 h"] > 0.005 {
				t.Errorf("no long tail: %v", share)
			}
			if p := r.OutOfOrder.Percent; p < 11.5 || p > 12.7 {
				t.Errorf("out of order: %.2f%%", p)
			}
			if b := r.Travel.Buckets; b[0].Percent < 99 || b[1].Percent > 0.01 || b[4].Percent != 0 {
				t.Errorf("buckets %+v", b)
			}
			if rec := r.Recommendation; rec.Met || rec.Delay.Label != "1 h" || rec.Finer == nil || rec.Finer.DelayMS < int64(time.Hour/time.Millisecond) {
				t.Errorf("recommendation %+v", rec)
			}
		})
	}
}

// steepRow is a line of the steep stream, for writing it as CSV and Parquet.
type steepRow struct {
	EventID   string    `parquet:"event_id" json:"event_id"`
	Platform  string    `parquet:"platform,dict" json:"platform"`
	EventName string    `parquet:"event_name,dict" json:"event_name"`
	TS        time.Time `parquet:"ts,timestamp(millisecond)" json:"ts"`
	Arrival   time.Time `parquet:"arrival,timestamp(microsecond)" json:"arrival"`
}

// The same stream as JSON lines, CSV and Parquet gives the same report.
func TestFormatsAgree(t *testing.T) {
	file := steepFile(t, 50_000)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rows []steepRow
	var csvText strings.Builder
	csvText.WriteString("event_id,platform,event_name,ts,arrival\n")
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r steepRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
		fmt.Fprintf(&csvText, "%s,%s,%s,%s,%d\n", r.EventID, r.Platform, r.EventName, mtime.FromTime(r.TS), r.Arrival.UnixMilli())
	}
	dir := t.TempDir()
	csvFile, pqFile := filepath.Join(dir, "steep.csv"), filepath.Join(dir, "steep.parquet")
	if err := os.WriteFile(csvFile, []byte(csvText.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(pqFile, rows, parquet.MaxRowsPerRowGroup(7000), parquet.PageBufferSize(4096)); err != nil {
		t.Fatal(err)
	}
	o := Options{By: []string{"platform", "event_name"}}
	want, err := Analyze(file, o)
	if err != nil {
		t.Fatal(err)
	}
	var wantJSON bytes.Buffer
	want.Input, want.Format = "", ""
	want.WriteJSON(&wantJSON)
	for _, f := range []string{csvFile, pqFile} {
		got, err := Analyze(f, o)
		if err != nil {
			t.Fatal(err)
		}
		var gotJSON bytes.Buffer
		got.Input, got.Format = "", ""
		got.WriteJSON(&gotJSON)
		if gotJSON.String() != wantJSON.String() {
			t.Errorf("%s: the report differs from the JSON lines':\n%s\nwant\n%s", f, gotJSON.String(), wantJSON.String())
		}
	}
}

// With a watermark per partition (here per platform, web being never late),
// and with idleness, the too-late counts are still weir run's.
func TestPartitionsMatchWeirRun(t *testing.T) {
	file := steepFile(t, 100_000)
	for _, idle := range []time.Duration{0, 30 * time.Second} {
		o := Options{PartitionField: "platform", Idle: idle, Lateness: []time.Duration{time.Hour}}
		r, err := Analyze(file, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Recommendation.Finer != nil {
			t.Error("a finer search with partitions")
		}
		wm := ""
		if idle > 0 {
			wm = ", idle: " + idle.String()
		}
		for _, d := range r.Delays {
			sum := weirRunWith(t, file, mtime.Time(d.DelayMS), 0, ", partition_field: platform", wm)
			if sum.TooLate != d.TooLate {
				t.Errorf("idle %v, delay %s: weir lateness says %d too late, weir run %d", idle, d.Label, d.TooLate, sum.TooLate)
			}
			for _, l := range d.Lateness {
				sum := weirRunWith(t, file, mtime.Time(d.DelayMS), mtime.Time(l.LatenessMS), ", partition_field: platform", wm)
				if sum.TooLate != l.TooLate {
					t.Errorf("idle %v, delay %s, lateness %s: weir lateness says %d too late, weir run %d", idle, d.Label, l.Label, l.TooLate, sum.TooLate)
				}
			}
			t.Logf("idle %v, delay %s: %d too late", idle, d.Label, d.TooLate)
		}
	}
}
