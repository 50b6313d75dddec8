package job

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
)

// A partition with no events holds the watermark back until its source's
// heartbeats say how far its event time has come: with heartbeat: the
// records for which it holds advance their partition's time, are counted
// apart, and are never windowed, keyed or checked for an id. Without it,
// the same lines are events (of a null card), and the watermark waits for
// partition b's next event.
func TestHeartbeatsAdvanceAQuietPartition(t *testing.T) {
	const job = `
source: {file: input.jsonl}
time: {field: ts, partition_field: p}
key: card
id: order_id
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count}
output: out.jsonl
`
	input := lines(
		`{"p":"a","ts":"2026-09-01T00:00:10Z","card":"c1","order_id":"o1"}`,
		`{"p":"b","ts":"2026-09-01T00:00:20Z","card":"c2","order_id":"o2"}`,
		`{"p":"a","ts":"2026-09-01T00:01:30Z","card":"c1","order_id":"o3"}`,
		`{"p":"b","ts":"2026-09-01T00:01:05Z","type":"heartbeat"}`,
		`{"p":"a","ts":"2026-09-01T00:01:40Z","card":"c1","order_id":"o4"}`,
	)
	// The first window closes at the heartbeat (both partitions past
	// 00:01:00), before o4: its pane's watermark says when.
	dir, sum := runJob(t, job+"heartbeat: type == \"heartbeat\"\n", input)
	got := strings.Split(strings.TrimSpace(read(t, dir, "out.jsonl")), "\n")
	if len(got) != 3 || !strings.Contains(got[0], `"key":"c1","window_start":"2026-09-01T00:00:00.000Z"`) || !strings.Contains(got[0], `"watermark":"2026-09-01T00:01:04.999Z"`) ||
		!strings.Contains(got[1], `"key":"c2"`) || !strings.Contains(got[1], `"watermark":"2026-09-01T00:01:04.999Z"`) {
		t.Errorf("with heartbeats:\n%s", strings.Join(got, "\n"))
	}
	if sum.Read != 4 || sum.Accepted != 4 || sum.Heartbeats != 1 || sum.Quarantined != 0 || !sum.Balanced() {
		t.Errorf("with heartbeats: %+v", sum)
	}
	// Without: the heartbeat is an event without an id, quarantined, and
	// the first window closes at the end of the input.
	dir, sum = runJob(t, job, input)
	got = strings.Split(strings.TrimSpace(read(t, dir, "out.jsonl")), "\n")
	if len(got) != 3 || !strings.Contains(got[0], `"watermark":"9999-12-31T23:59:59.999Z"`) {
		t.Errorf("without heartbeats:\n%s", strings.Join(got, "\n"))
	}
	if sum.Read != 5 || sum.Heartbeats != 0 || sum.Quarantined != 1 {
		t.Errorf("without heartbeats: %+v", sum)
	}
}

// A heartbeat needs a bounded watermark, and an expression.
func TestHeartbeatRefusals(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"heartbeat: \"\"\n", `heartbeat: expected an expression over the record's fields, such as type == "heartbeat"`},
		{"heartbeat: \"type ==\"\n", `heartbeat: expression "type ==" does not compile`},
		{"watermark: {perfect: true}\nheartbeat: type == \"hb\"\n", `heartbeat: a heartbeat advances a partition's event time, which only a bounded watermark (delay) follows`},
	} {
		_, err := jobfile.Parse([]byte("name: n\nsource: {file: in.jsonl}\ntime: {field: ts}\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: out.jsonl\n"+c.extra), "job.yaml", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %s", c.extra, err, c.want)
		}
	}
}
