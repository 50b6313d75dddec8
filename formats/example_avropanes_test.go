package formats_test

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/plan"
)

// A Go program writes its panes as Avro in a schema registry's framing as
// a job file's format: avro output does: the schemas derived from the
// panes' shape, registered before the first record (kafka.Sink's Prepare),
// each pane's fields given to Record for its key and value.
func ExampleAvroPanes() {
	reg := srfake.New() // a registry in the process, as in tests
	defer reg.Close()
	shape := plan.PaneShape{Job: "fraud", Keys: []string{"card"}, Windowed: true,
		Aggregates: []plan.AggregateShape{{Name: "orders", Type: plan.Integer}, {Name: "spent", Type: plan.Number}}}
	avro, err := formats.NewAvroPanes(shape, &plan.Registry{URL: reg.URL()}, "alerts", formats.TopicName, nil)
	if err != nil {
		panic(err)
	}
	// With a Kafka sink: &kafka.Sink[T]{..., Prepare: avro.Register,
	// Encode: func(v T) ([]byte, []byte) { return avro.Record(fieldsOf(v)) }}.
	if err := avro.Register(context.Background()); err != nil {
		panic(err)
	}
	key, value := avro.Record(&plan.PaneFields{Keys: []any{"card_7"}, Start: 60_000, End: 120_000, Revision: 1, Timing: "ON_TIME",
		Final: true, Mode: "accumulating", Version: 1, Watermark: 122_000, Emitted: 122_500, Values: []any{int64(5), 110.7}})
	keySubject, valueSubject := avro.Subjects()
	fmt.Println(keySubject, valueSubject)
	fmt.Printf("key % x\n", key)
	fmt.Printf("value of %d bytes, schema id %d\n", len(value), int(value[4]))
	// Output:
	// alerts-key alerts-value
	// key 00 00 00 00 01 0c 63 61 72 64 5f 37 c0 a9 07 80 d3 0e
	// value of 68 bytes, schema id 2
}
