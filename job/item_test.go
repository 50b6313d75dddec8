package job

import (
	"bytes"
	"testing"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// A joined record's item holds its line and its key in one allocation
// (each took one), and appending to its line never reaches its key.
func TestJoinedItemOneAllocation(t *testing.T) {
	j, err := jobfile.Parse([]byte("name: unpaid\nsource: {file: orders.jsonl}\ntime: {field: ts}\nkey: order_id\n"+
		"join:\n  with: {source: {file: payments.jsonl}, time: {field: paid_at}, key: order_id}\n  between: [0s, 10m]\n  kind: anti\n"+
		"watermark: {delay: 5s}\noutput: unpaid.jsonl\n"), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	f := newFormat(j, nil)
	o := joined{Key: `"o-1"`, Left: record{line: 3, ts: 1_788_000_000_000, raw: []byte(`{"order_id":"o-1","ts":"2026-08-29T10:40:00Z","amount":12.5}`)},
		LeftTime: 1_788_000_000_000, RightTime: mtime.MinTime, Time: 1_788_000_000_000, Watermark: 1_788_000_600_001}
	it := f.joinedItem(nil, o)
	line := f.appendJoined(nil, o)
	if want := line[:len(line)-1]; !bytes.Equal(it.JSON, want) || string(it.Key) != o.Key || it.Kind != plan.Joined {
		t.Fatalf("item %s under %s (kind %d), want %s under %s", it.JSON, it.Key, it.Kind, want, o.Key)
	}
	_ = append(it.JSON, "more than the key"...)
	if string(it.Key) != o.Key {
		t.Fatalf("the key after an append to the line: %q", it.Key)
	}
	if n := testing.AllocsPerRun(100, func() { f.joinedItem(nil, o) }); n != 1 {
		t.Errorf("%.0f allocations an item, want 1", n)
	}
}
