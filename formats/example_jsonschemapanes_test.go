package formats_test

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/plan"
)

// A Go program writing panes as JSON in a schema registry's framing: the
// schemas derived from the panes' shape, registered, and each record the
// JSON key and value behind the id of its schema.
func ExampleJSONSchemaPanes() {
	reg := srfake.New() // a registry in the process, as in tests
	defer reg.Close()
	shape := plan.PaneShape{Job: "fraud", Keys: []string{"key"}, Windowed: true,
		Aggregates: []plan.AggregateShape{{Name: "orders", Type: plan.Integer}}}
	js, err := formats.NewJSONSchemaPanes(shape, &plan.Registry{URL: reg.URL()}, "alerts", formats.TopicName, nil)
	if err != nil {
		panic(err)
	}
	// With a Kafka sink: &kafka.Sink[T]{..., Prepare: js.Register,
	// Encode: func(v T) ([]byte, []byte) { return js.Record(keyOf(v), jsonOf(v)) }}.
	if err := js.Register(context.Background()); err != nil {
		panic(err)
	}
	key, value := js.Record([]byte(`["card_7","2026-12-05T10:01:00.000Z","2026-12-05T10:02:00.000Z"]`),
		[]byte(`{"key":"card_7","window_start":"2026-12-05T10:01:00.000Z","window_end":"2026-12-05T10:02:00.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2026-12-05T10:02:01.999Z","emitted_at":"2026-12-05T10:02:02.100Z","orders":5}`))
	_, valueSubject := js.Subjects()
	fmt.Println(valueSubject)
	fmt.Printf("key: % x, then %s\n", key[:5], key[5:])
	fmt.Printf("value: schema id %d, then %s...\n", int(value[4]), value[5:21])
	// Output:
	// alerts-value
	// key: 00 00 00 00 01, then ["card_7","2026-12-05T10:01:00.000Z","2026-12-05T10:02:00.000Z"]
	// value: schema id 2, then {"key":"card_7",...
}
