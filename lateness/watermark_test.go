package lateness

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
)

// With the job file of a scripted watermark (watermark.from_field), a line
// with the watermark field and no event time is a watermark line, as weir
// run reads it: not an event, and not rejected as no_event_time.
func TestWatermarkLinesOfAJob(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	lines := `{"ts":"2026-09-07T12:00:01Z","arrival":"2026-09-07T12:00:02Z"}
{"wm":"2026-09-07T12:00:00Z","arrival":"2026-09-07T12:00:02Z"}
{"ts":"2026-09-07T12:00:03Z","arrival":"2026-09-07T12:00:04Z"}
{"arrival":"2026-09-07T12:00:05Z"}
{"wm":"2026-09-07T12:01:00Z","arrival":"2026-09-07T12:01:01Z"}
{"ts":"2026-09-07T12:01:02Z","arrival":"2026-09-07T12:01:03Z"}
{"wm":"yesterday","arrival":"2026-09-07T12:01:04Z"}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := "source: {file: in.jsonl}\ntime: {field: ts, arrival_field: arrival}\nwatermark: {from_field: wm}\n" +
		"window: {tumbling: 1m}\naggregates: {n: count}\noutput: out.jsonl\n"
	j, err := jobfile.Parse([]byte(yaml), filepath.Join(dir, "job.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := FromJob(Options{}, j)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(in, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != 5 || r.Events != 3 || r.Rejected != 2 || r.WatermarkLines != 2 ||
		len(r.RejectReasons) != 2 || r.RejectReasons[job.ReasonNoEventTime] != 1 || r.RejectReasons[job.ReasonBadWatermark] != 1 {
		t.Errorf("%d lines, %d events, %d rejected %v, %d watermark lines; want 5, 3, 2 (no_event_time 1, bad_watermark 1), 2",
			r.Lines, r.Events, r.Rejected, r.RejectReasons, r.WatermarkLines)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := "5 lines: 3 events, 2 rejected (bad_watermark 1, no_event_time 1), and 2 watermark lines\n"
	if got := strings.SplitAfter(text.String(), "\n")[1]; got != want {
		t.Errorf("the report's second line is %q, want %q", got, want)
	}
	// weir run reads the same lines the same way.
	sum, err := job.Run(context.Background(), j, job.Options{Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if sum.WatermarkLines != r.WatermarkLines || sum.Quarantined != r.Rejected ||
		sum.QuarantineReasons[job.ReasonNoEventTime] != 1 || sum.QuarantineReasons[job.ReasonBadWatermark] != 1 {
		t.Errorf("weir run: %d watermark lines, %d quarantined %v; weir lateness: %d, %d %v",
			sum.WatermarkLines, sum.Quarantined, sum.QuarantineReasons, r.WatermarkLines, r.Rejected, r.RejectReasons)
	}
}
