package engine_test

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// An Operator replays arrivals one call at a time: here taps counted per
// 10-second window with a watermark 2 s behind the latest tap, emitted after
// every tap, and the output of each call printed as it comes.
func ExampleOperator() {
	s := func(n int) mtime.Time { return mtime.Time(n) * 1000 }
	op, err := engine.NewOperator(engine.OperatorConfig[string, struct{}, int64, int64]{
		Strategy:  window.NewStrategy(window.TumblingWindows(10 * time.Second)),
		Watermark: watermark.BoundedOutOfOrderness(2 * time.Second).WithInterval(0),
		Agg:       aggregate.Count[struct{}](),
		Pane: func(p *window.Pane[string, int64]) {
			fmt.Printf("  pane [%ds, %ds) %s: %d\n", p.Window.Start/1000, p.Window.End/1000, p.Key, p.Value)
		},
		Late: func(l *window.LateEvent[string, struct{}]) {
			fmt.Printf("  too late: %s at %ds\n", l.Key, l.Timestamp/1000)
		},
		Emitted: func(w, now mtime.Time) {
			fmt.Printf("  watermark %.3fs\n", float64(w)/1000)
		},
	})
	if err != nil {
		panic(err)
	}
	for _, tap := range []struct{ arrival, event int }{{1, 1}, {4, 3}, {12, 12}, {13, 5}} {
		fmt.Printf("tap at %ds, arriving at %ds\n", tap.event, tap.arrival)
		op.Advance(s(tap.arrival))
		op.Event(0, "phone", s(tap.event), struct{}{})
	}
	fmt.Println("end")
	if err := op.End(); err != nil {
		panic(err)
	}
	st := op.Stats()
	fmt.Printf("accepted %d, too late %d, open windows %d\n", st.Accepted, st.TooLate, op.OpenWindows())
	// Output:
	// tap at 1s, arriving at 1s
	//   watermark -1.001s
	// tap at 3s, arriving at 4s
	//   watermark 0.999s
	// tap at 12s, arriving at 12s
	//   pane [0s, 10s) phone: 2
	//   watermark 9.999s
	// tap at 5s, arriving at 13s
	//   too late: phone at 5s
	// end
	//   pane [10s, 20s) phone: 1
	// accepted 3, too late 1, open windows 0
}
