package formats_test

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// A Go program writing panes as Protobuf messages in a schema registry's
// framing: the .proto files derived from the panes' shape, registered, and
// each record a message behind the id of its schema and its message index.
func ExampleProtobufPanes() {
	reg := srfake.New() // a registry in the process, as in tests
	defer reg.Close()
	shape := plan.PaneShape{Job: "fraud", Keys: []string{"key"}, Windowed: true,
		Aggregates: []plan.AggregateShape{{Name: "orders", Type: plan.Integer}}}
	pb, err := formats.NewProtobufPanes(shape, &plan.Registry{URL: reg.URL()}, "alerts", formats.TopicName, nil)
	if err != nil {
		panic(err)
	}
	// With a Kafka sink: &kafka.Sink[T]{..., Prepare: pb.Register,
	// Encode: func(v T) ([]byte, []byte) { return pb.Record(fieldsOf(v)) }}.
	if err := pb.Register(context.Background()); err != nil {
		panic(err)
	}
	start := mtime.Time(1_796_464_860_000) // 2026-12-05T10:01:00Z
	key, value := pb.Record(&plan.PaneFields{Keys: []any{"card_7"}, Start: start, End: start + 60_000,
		Revision: 1, Timing: "ON_TIME", Final: true, Mode: "accumulating", Version: 1,
		Watermark: start + 61_999, Emitted: start + 62_100, Names: []string{"orders"}, Values: []any{int64(5)}})
	_, schema := pb.Schemas()
	fmt.Print(schema)
	fmt.Printf("key: % x, then %d bytes\n", key[:6], len(key)-6)
	fmt.Printf("value: schema id %d, message index %d, then %d bytes\n", int(value[4]), value[5], len(value)-6)
	// Output:
	// syntax = "proto3";
	//
	// package weir.fraud;
	//
	// // A window's result, as weir writes it.
	// message Pane {
	//   string key = 1;
	//   int64 window_start = 2; // milliseconds since the epoch, UTC
	//   int64 window_end = 3; // milliseconds since the epoch, UTC
	//   int64 revision = 4;
	//   string timing = 5; // EARLY, ON_TIME or LATE
	//   bool final = 6;
	//   bool retract = 7;
	//   string status = 8; // provisional, closed or retracted
	//   string mode = 9; // accumulating, discarding or retracting: totals or deltas
	//   int64 version = 10;
	//   int64 watermark = 11; // milliseconds since the epoch, UTC
	//   int64 emitted_at = 12; // milliseconds since the epoch, UTC
	//   optional int64 orders = 13;
	//   repeated string partial = 14; // the aggregates whose values cover only part of the window
	// }
	// key: 00 00 00 00 01 00, then 22 bytes
	// value: schema id 2, message index 0, then 75 bytes
}
