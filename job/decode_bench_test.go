package job

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/window"
)

// BenchmarkDecode reads the lines of the fraud job: it allocates nothing per
// line once its keys are interned.
func BenchmarkDecode(b *testing.B) {
	j, err := jobfile.Parse([]byte(fraudJob), "job.yaml", "/d")
	if err != nil {
		b.Fatal(err)
	}
	lines := make([][]byte, 1000)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"event_id":"e%d","card":"c%d","ts":%d,"arrival":%d,"amount":%d.%02d,"user":"u%d"}`, i, i%100, 1788782400000+i, 1788782400000+i, i%300, i%100, i%7)
	}
	lp := newLineParser(j)
	var d engine.Decoded[string, record]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lp.Decode(&connector.Record{Value: lines[i%len(lines)], Offset: int64(i)}, &d)
	}
}

// BenchmarkDecodeNumberKeys reads the lines of the fraud job with cards that
// are numbers: 16 digits (an int64) and 20 (beyond one).
func BenchmarkDecodeNumberKeys(b *testing.B) {
	j, err := jobfile.Parse([]byte(fraudJob), "job.yaml", "/d")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		card uint64
	}{{"int64", 4000_0000_0000_0000}, {"20_digits", 18446744073709551515}} {
		b.Run(c.name, func(b *testing.B) {
			lines := make([][]byte, 1000)
			for i := range lines {
				lines[i] = fmt.Appendf(nil, `{"event_id":"e%d","card":%d,"ts":%d,"arrival":%d,"amount":%d.%02d,"user":"u%d"}`, i, c.card+uint64(i%100), 1788782400000+i, 1788782400000+i, i%300, i%100, i%7)
			}
			lp := newLineParser(j)
			var d engine.Decoded[string, record]
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lp.Decode(&connector.Record{Value: lines[i%len(lines)], Offset: int64(i)}, &d)
			}
		})
	}
}

// A line whose key, id and partition are numbers is read without
// allocating once its key is interned, as one whose key is a string: a
// number's text is checked in the parser's buffer.
func TestDecodeNumbersAllocatesNothing(t *testing.T) {
	j, err := jobfile.Parse([]byte("name: n\nsource: {file: in.jsonl}\ntime: {field: ts, partition_field: p}\nkey: card\nid: id\n"+
		"window: {tumbling: 1m}\naggregates: {n: count, users: count_distinct(user)}\noutput: out.jsonl\n"), "n.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lp := newLineParser(j)
	line := []byte(`{"id":18446744073709551615,"card":4000000000000001,"p":7,"user":12,"ts":1788782400000}`)
	var d engine.Decoded[string, record]
	lp.Decode(&connector.Record{Value: line, Arrival: 1788782400000}, &d)
	if n := testing.AllocsPerRun(1000, func() { lp.Decode(&connector.Record{Value: line, Arrival: 1788782400000}, &d) }); n != 0 || d.Kind != engine.Event || d.Key != "4000000000000001" {
		t.Errorf("%v allocations a line; kind %v, key %s", n, d.Kind, d.Key)
	}
}

// Judging a pane by a having expression of comparisons, arithmetic and
// logic allocates nothing (it is evaluated directly: expr's machine boxed
// every number and string it read). One that runs on expr's machine
// allocates once per run and for what it reads, never for the pane's other
// fields (a map environment boxed every field of every pane).
func TestHavingAllocations(t *testing.T) {
	aggs := []jobfile.Aggregate{{Name: "orders", Kind: jobfile.AggCount}, {Name: "spent", Kind: jobfile.AggSum}}
	h, err := compileHaving(`orders >= 5 && spent > 10.5 && key != "c9" && timing == "ON_TIME" && !final && revision < 3`, aggs)
	if err != nil {
		t.Fatal(err)
	}
	p := pane{Key: `"c1"`, Revision: 1, Timing: window.OnTime, Value: []outVal{{kind: vInt, i: 7}, {kind: vDec, i: 1255, scale: 1}}}
	var keep bool
	if n := testing.AllocsPerRun(1000, func() { keep, err = h.keep(aggs, &p, keyValue(p.Key)) }); n != 0 || err != nil || !keep {
		t.Errorf("%v allocations per pane, keep %v, err %v", n, keep, err)
	}
	machine, _ := compileHaving(`revision % 2 == 1`, aggs)
	if n := testing.AllocsPerRun(1000, func() { machine.keep(aggs, &p, keyValue(p.Key)) }); n > 1 {
		t.Errorf("%v allocations per pane on expr's machine for an expression that reads only a small integer", n)
	}
	p.Value[0].i = 4
	if keep, _ := h.keep(aggs, &p, keyValue(p.Key)); keep {
		t.Error("orders 4 kept")
	}
}

// benchDecode decodes the records of lines by the job's rules, one by one
// and round, each an event or the benchmark fails: what a record of a
// format costs to become an event.
func benchDecode(b *testing.B, j *jobfile.Job, lines [][]byte) {
	b.Helper()
	lp := runParser(b, j)
	var d engine.Decoded[string, record]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lp.Decode(&connector.Record{Value: lines[i%len(lines)], Offset: int64(i)}, &d)
		if d.Kind != engine.Event {
			b.Fatalf("%v %s %s", d.Kind, d.Reason, d.Detail)
		}
	}
}

// A record of Avro or Protobuf is read without allocating once its key is
// interned, as a JSON line is: its fields read straight from its bytes,
// or, in a job with a where (which reads the record's object), its object
// built from them.
func TestDecodeFormatsAllocatesNothing(t *testing.T) {
	if raceEnabled {
		// The race detector's sync.Pool drops what it is given at random
		// (a Protobuf record's state is pooled): the allocations are
		// counted without it.
		return
	}
	for _, c := range []struct {
		name   string
		orders func(testing.TB, ...string) (*jobfile.Job, [][]byte)
		extra  []string
	}{{"avro", avroOrders, nil}, {"protobuf", protobufOrders, nil},
		{"avro-where", avroOrders, []string{"where: amount >= 0"}}, {"protobuf-where", protobufOrders, []string{"where: amount >= 0"}}} {
		t.Run(c.name, func(t *testing.T) {
			j, lines := c.orders(t, c.extra...)
			lp := runParser(t, j)
			var d engine.Decoded[string, record]
			for i, line := range lines {
				lp.Decode(&connector.Record{Value: line, Offset: int64(i)}, &d)
			}
			i := 0
			if n := testing.AllocsPerRun(1000, func() {
				lp.Decode(&connector.Record{Value: lines[i%len(lines)], Offset: int64(i)}, &d)
				i++
			}); n > 0.01 || d.Kind != engine.Event {
				t.Errorf("%v allocations a record; kind %v %s", n, d.Kind, d.Reason)
			}
		})
	}
}
