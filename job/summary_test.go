package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// After a resume the summary says what this run read, and at what rate,
// beside what every run read.
func TestSummaryCountsThisRun(t *testing.T) {
	_, _, paths, j := savepointsOfDurable(t)
	sum, err := Run(context.Background(), j, Options{From: paths[len(paths)/2], Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ReadThisRun <= 0 || sum.ReadThisRun >= sum.Read {
		t.Fatalf("read %d, this run %d", sum.Read, sum.ReadThisRun)
	}
	want := fmt.Sprintf("weir: durable: read %d lines (%d of them in this run, which resumed from a checkpoint) in ", sum.Read, sum.ReadThisRun)
	if text := sum.Text(); !strings.HasPrefix(text, want) {
		t.Errorf("summary:\n%s\nwant it to start with\n%s", text, want)
	}
	// A run from the start says nothing of it.
	fresh := &Summary{Job: "x", Accounting: engine.Accounting{Read: 10}, ReadThisRun: 10, elapsed: 2 * time.Second}
	if text := fresh.Text(); !strings.HasPrefix(text, "weir: x: read 10 lines in 2.00s (5 lines/s): ") {
		t.Errorf("summary: %s", text)
	}
}

// The progress line: lines, rate, and for a file of known size the share
// read and the time left.
func TestProgressLine(t *testing.T) {
	st := engine.Status{Watermark: mtime.Time(1_780_000_000_000), OpenWindows: 12, Counts: engine.Counts{Accounting: engine.Accounting{Read: 3000}, WatermarkLines: 10}}
	cases := []struct {
		base, size, read, read0 int64
		want                    string
	}{
		{0, -1, -1, -1, "lines 3010  1500/s  watermark 2026-05-28T20:26:40.000Z  open windows 12"},
		{0, 1000, 250, 50, "lines 3010  1500/s  25.0%  ETA 8s  watermark 2026-05-28T20:26:40.000Z  open windows 12"},
		{2000, 1000, 1000, 50, "lines 3010 (1000 this run)  500/s  100.0%  watermark 2026-05-28T20:26:40.000Z  open windows 12"},
	}
	for _, c := range cases {
		if got := progressLine(st, c.base, c.size, c.read, c.read0, 2*time.Second, 2*time.Second); got != c.want {
			t.Errorf("%+v:\n%s\nwant\n%s", c, got, c.want)
		}
	}
}

// summary.json keeps its fields in this order, whatever the code that
// fills it becomes: readers that diff summaries, or read them by position,
// see the same file. A field added goes where this list says.
func TestSummaryFieldOrder(t *testing.T) {
	s := &Summary{Job: "j", InFlight: 1, Refused: map[string]int64{"output": 1}, Lost: 1,
		QuarantineReasons: map[string]int64{}, HavingErrors: 1, InputRestarted: "x",
		OutputsAdded: []string{"x"}, RestoreChanges: []string{"x"}, DroppedState: []string{"x"},
		Interrupted: true, Savepoint: "x", Failed: true}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.Token() // {
	var keys []string
	for d.More() {
		k, _ := d.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	want := "job read accepted duplicates too_late beyond_dedup_horizon quarantined in_flight refused lost " +
		"quarantine_reasons late_accepted late_for_some_windows panes_fired panes_written windows_fired late_written watermark_lines " +
		"blank_lines having_errors too_late_by_window watermark input_restarted outputs_added restore_changes " +
		"dropped_state interrupted savepoint failed"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("summary.json's fields:\n got %s\nwant %s", got, want)
	}
}
