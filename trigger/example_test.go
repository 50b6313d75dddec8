package trigger_test

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/trigger"
)

// A pane every 100 events or a minute after a pane's first event, whichever
// comes first, again and again: the job file's trigger: {repeatedly:
// {after_first: [{count: 100}, {processing_time: 1m}]}}. Give it to a
// window with window.Strategy.WithTrigger.
func ExampleOf() {
	t := trigger.Of(trigger.Repeatedly(trigger.AfterFirst(trigger.AfterCount(100), trigger.AfterProcessingTime(time.Minute))))
	fmt.Println(t)
	fmt.Println(t.Describe())
	// One late pane a minute after the first late event, none when the
	// window closes with nothing new.
	late := trigger.Of(trigger.PastEndOfWindow().WithLateFirings(trigger.AfterProcessingTime(time.Minute))).ClosingIfChanged()
	fmt.Println(late.Describe())
	// Output:
	// Of(Repeatedly(AfterFirst(AfterCount(100), AfterProcessingTime(1m0s))))
	// repeatedly once, at the first of (after 100 events; 1m0s of processing time after the first event of a pane)
	// at the watermark; late, each time: 1m0s of processing time after the first event of a pane; closing: only if an event came since the last pane
}
