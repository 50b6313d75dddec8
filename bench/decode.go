package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/avro"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// decodeEvents is how many orders each decode benchmark reads.
const decodeEvents = 1_000_000

// The decode group: the same orders as records of a topic in each format
// weir reads (JSON, Avro with a schema file, Protobuf with a .proto file),
// decoded as a run's head decodes them (the format, then the job's time,
// key, id and the values its aggregates read), one record after the other
// on one core. What a format costs beside JSON is the ratio of two rows.
func init() {
	for _, f := range []struct{ name, about string }{
		{"json", "JSON objects, one a record"},
		{"avro", "Avro binary records of one schema (format: avro, schema: orders.avsc)"},
		{"protobuf", "Protobuf messages of one .proto (format: protobuf, schema: orders.proto, message: bench.Order)"},
	} {
		register(Bench{
			Name: "decode-" + f.name, Group: "decode",
			About: fmt.Sprintf("decode 1M orders of a topic as the fraud job's head does: %s", f.about),
			Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
				return decodeSetup(f.name)
			},
		})
	}
}

// Each format's settings in the benchmark's job, and its schema file.
var decodeFormats = map[string]struct{ source, file, schema string }{
	"json": {},
	"avro": {", format: avro, schema: orders.avsc", "orders.avsc", `{"type":"record","name":"Order","namespace":"bench","fields":[
{"name":"id","type":"string"},{"name":"card","type":"string"},{"name":"amount","type":"double"},{"name":"ts","type":"long"}]}`},
	"protobuf": {", format: protobuf, schema: orders.proto, message: bench.Order", "orders.proto", `syntax = "proto3";
package bench;
message Order { string id = 1; string card = 2; double amount = 3; int64 ts = 4; }
`},
}

// decodeJob is the fraud job's reading of the orders: their time, key and
// id, and the amount its sum reads.
const decodeJob = `name: decode
source: {kafka: {brokers: [127.0.0.1:9], topic: orders}%s}
time: {field: ts}
key: card
id: id
max_future: none
window: {tumbling: 1m}
aggregates: {orders: count, spent: sum(amount)}
output: out.jsonl
`

// decodeSetup makes the records of format and the job's decoder, outside
// the measured time, and returns the decoding of every record.
func decodeSetup(format string) (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
	f := decodeFormats[format]
	dir, err := os.MkdirTemp("", "weir-bench-decode-")
	if err != nil {
		return nil, nil, err
	}
	teardown := func() { os.RemoveAll(dir) }
	if f.file != "" {
		if err := os.WriteFile(filepath.Join(dir, f.file), []byte(f.schema), 0o600); err != nil {
			teardown()
			return nil, nil, err
		}
	}
	j, err := jobfile.Parse(fmt.Appendf(nil, decodeJob, f.source), filepath.Join(dir, "job.yaml"), dir)
	if err != nil {
		teardown()
		return nil, nil, err
	}
	dec, err := job.NewDecoder(j)
	if err != nil {
		teardown()
		return nil, nil, err
	}
	var schema *avro.Schema
	if format == "avro" {
		if schema, err = avro.Parse(f.schema); err != nil {
			teardown()
			return nil, nil, err
		}
	}
	rs := make([]connector.Record, decodeEvents)
	const t0 = 1_788_782_400_000
	for i := range rs {
		id, card := fmt.Sprintf("e%d", i), fmt.Sprintf("c%d", i%100_000)
		amount, ts := float64(i%30000)/100, int64(t0+i/10)
		var v []byte
		switch format {
		case "json":
			v = fmt.Appendf(nil, `{"id":%q,"card":%q,"amount":%v,"ts":%d}`, id, card, amount, ts)
		case "avro":
			if v, err = schema.Encode(map[string]any{"id": id, "card": card, "amount": amount, "ts": ts}); err != nil {
				teardown()
				return nil, nil, err
			}
		case "protobuf":
			v = protowire.AppendTag(v, 1, protowire.BytesType)
			v = protowire.AppendString(v, id)
			v = protowire.AppendTag(v, 2, protowire.BytesType)
			v = protowire.AppendString(v, card)
			v = protowire.AppendTag(v, 3, protowire.Fixed64Type)
			v = protowire.AppendFixed64(v, math.Float64bits(amount))
			v = protowire.AppendTag(v, 4, protowire.VarintType)
			v = protowire.AppendVarint(v, uint64(ts))
		}
		rs[i] = connector.Record{Value: v, Offset: int64(i), Arrival: mtime.Time(ts), Timestamp: mtime.Time(ts)}
	}
	run := func(time.Duration) (int64, map[string]float64, string, error) {
		var events int64
		for i := range rs {
			if dec.Decode(&rs[i]) {
				events++
			}
		}
		if events != int64(len(rs)) {
			return events, nil, "", fmt.Errorf("decode-%s: %d of %d orders decoded as events", format, events, len(rs))
		}
		return events, nil, "", nil
	}
	return run, teardown, nil
}
