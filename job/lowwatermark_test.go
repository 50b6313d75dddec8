package job

import (
	"fmt"
	"strings"
	"testing"
)

// What a low watermark (the oldest event time not yet processed) would
// change: nothing, for a partition whose records come in event-time order,
// however far behind it is. Partition "b" is a backlog read 5 minutes
// behind partition "a", in order; weir's watermark, the minimum of the
// partitions' (each its own max event time minus the delay), is held back
// by b's, so none of b's events is late although they arrive minutes
// after a's watermark passed their windows (b is not idle: without
// watermark.idle, a quiet partition holds the watermark back for good). And for a partition whose
// records are out of order, the oldest unread time is not known before
// they are read: a low watermark could only guess it, as the delay does.
func TestBacklogInOrderIsNeverLate(t *testing.T) {
	const t0 = 1_788_000_000_000
	var b strings.Builder
	for i := range 600 {
		ts := int64(t0 + i*1000)
		fmt.Fprintf(&b, `{"p":"a","ts":%d,"at":%d}`+"\n", ts, ts)
		// b's first record comes with a's (a partition of a file is known
		// once it has had a record: a topic's are known from the start),
		// the rest 5 minutes late.
		late := int64(300_000)
		if i == 0 {
			late = 0
		}
		fmt.Fprintf(&b, `{"p":"b","ts":%d,"at":%d}`+"\n", ts, ts+late)
	}
	// Arrival order: a line's place is its arrival.
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	sortByArrival(lines)
	dir, sum := runJobIn(t, `name: backlog
source: {file: input.jsonl}
time: {field: ts, arrival_field: at, partition_field: p}
key: p
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
`, strings.Join(lines, "\n")+"\n", Options{})
	if sum.Accepted != 1200 || sum.LateAccepted != 0 || sum.TooLate != 0 {
		t.Errorf("accepted %d, late %d, too late %d: want all 1200 on time", sum.Accepted, sum.LateAccepted, sum.TooLate)
	}
	finals := finalPanes(t, dir)
	if len(finals) != 20 {
		t.Fatalf("%d final panes, want 20 (10 minutes of 2 partitions): %q", len(finals), finals)
	}
	for _, f := range finals {
		if !strings.HasSuffix(f, " 60") {
			t.Errorf("final pane %s: want 60 events", f)
		}
	}
}

// sortByArrival orders JSON lines by their "at" field, stably.
func sortByArrival(lines []string) {
	at := func(l string) string { return l[strings.Index(l, `"at":`):] }
	for i := 1; i < len(lines); i++ {
		for k := i; k > 0 && at(lines[k]) < at(lines[k-1]); k-- {
			lines[k], lines[k-1] = lines[k-1], lines[k]
		}
	}
}
