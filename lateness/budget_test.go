package lateness

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// BytesPerDedupID bounds what an id costs the memory de-duplication beyond
// its bytes, at the size where its map has just grown (the most an id).
func TestBytesPerDedupID(t *testing.T) {
	const n = 1_000_000
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := state.NewMemoryDedup(mtime.Millis(time.Hour))
	id := []byte("o000000000")
	for i := range n {
		copy(id[1:], fmt.Sprintf("%09d", i))
		d.Seen(id, mtime.Time(i), 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n - float64(len(id))
	if d.Len() != n || per > BytesPerDedupID || per < BytesPerDedupID/2 {
		t.Errorf("%d ids: %.1f bytes an id beyond its own, BytesPerDedupID is %d", d.Len(), per, BytesPerDedupID)
	}
	runtime.KeepAlive(d)
}

// The most events within a span of each other, by whole buckets of event
// time: an upper bound of the ids a de-duplication holds.
func TestIDTallyPeak(t *testing.T) {
	tl := newIDTally(mtime.Millis(10 * time.Second)) // buckets of 1 s
	for _, ts := range []mtime.Time{-1500, 0, 999, 1000, 5000, 5001, 5002, 20_000, 31_000, 31_500} {
		tl.add(ts, 3)
	}
	// Buckets: -2 holds 1 (-1500), 0 holds 2, 1 holds 1, 5 holds 3, 20 holds
	// 1, 31 holds 2.
	for _, c := range []struct {
		span mtime.Time
		want int64
	}{
		{0, 3},       // bucket 5 alone
		{1000, 3},    // buckets 0..1, or 4..5
		{4000, 4},    // buckets 1..5, or -3..1
		{6000, 6},    // buckets -1..5
		{30_000, 8},  // buckets -10..20
		{60_000, 10}, // all
	} {
		if got := tl.peak(c.span); got != c.want {
			t.Errorf("peak(%d) = %d, want %d", c.span, got, c.want)
		}
	}
	if tl.count != 10 || tl.bytes != 30 {
		t.Errorf("%d ids of %d bytes", tl.count, tl.bytes)
	}
}

// weir lateness --job adds a job's de-duplication ids to the state it
// estimates: the events within the horizon plus the delay of each other,
// at BytesPerDedupID and their ids' length each.
func TestStateEstimateWithDedup(t *testing.T) {
	var b strings.Builder
	// 600 events, one a second of event time, each on time; ids of 8 bytes.
	for i := range 600 {
		ts := mtime.Time(1_788_000_000_000 + int64(i)*1000)
		fmt.Fprintf(&b, `{"id":"e%07d","k":"a","ts":"%s","arrival":"%s"}`+"\n", i, ts, ts+100)
	}
	in := writeFile(t, "in.jsonl", b.String())
	r, err := Analyze(in, Options{Delays: []time.Duration{0}, Lateness: []time.Duration{}, EstimateState: true, Key: []string{"k"},
		ID: "id", DedupHorizon: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := r.State
	// Buckets of 1 s: a span of 60 s reaches 60 buckets back, 61 events.
	if s == nil || s.DedupHorizonMS != 60000 || s.DedupIDsPeak != 61 || s.BytesPerDedupID != BytesPerDedupID+8 ||
		s.DedupBytes != 61*(BytesPerDedupID+8) || s.Bytes != s.Keys*s.OpenWindowsPeak*BytesPerKeyWindow+s.DedupBytes {
		t.Fatalf("state %+v", s)
	}
	if !strings.Contains(s.Text, "; and 61 de-duplication ids at most (the events within 1 min, the horizon plus the delay, of each other) x 82 bytes an id = 4.9 KiB; in all") {
		t.Errorf("text %q", s.Text)
	}
	// Without the id, none of it.
	r, err = Analyze(in, Options{Delays: []time.Duration{0}, Lateness: []time.Duration{}, EstimateState: true, Key: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.State.DedupIDsPeak != 0 || strings.Contains(r.State.Text, "de-duplication") {
		t.Errorf("without an id: %+v", r.State)
	}
}
