// Package weir is an event-time stream processor: windowed aggregations over
// late, out-of-order events, with Flink's watermark and lateness rules and
// Beam's early/on-time/late triggers, in an importable Go library (and the
// weir command, which runs the same engine from a YAML job file).
//
// # The model in four questions
//
// What is computed: an aggregate function (package aggregate) over the events
// of one key and one window, or a process function that sees all of them.
//
// Where in event time: windows (package window), half-open [start, end):
// tumbling, sliding, session, global. Every event carries its event time,
// when it happened, as integer milliseconds (package mtime).
//
// When in processing time: the watermark (package watermark) says how far
// event time has progressed: W = max(event time seen) - delay - 1 ms. A window
// fires on time when W >= end - 1 ms. A trigger (package trigger) may add
// early panes before that, and late panes for late events after it; or it
// composes Beam's triggers (trigger.Of: AfterEach, AfterFirst, AfterAll,
// Repeatedly, OrFinally, AfterCount, AfterProcessingTime), and a window
// whose trigger finishes fires no more: its later events are too late. An event
// is late when the watermark has passed its window; it is still added, and
// the window fires again, if it comes within the allowed lateness
// (end - 1 ms + lateness > W), and is too late otherwise: then it goes to the
// late side output, and is counted, never dropped silently. When W reaches
// end - 1 ms + lateness the window's state is deleted and it emits a closing
// pane with Final set.
//
// How panes relate: accumulating (each pane holds the whole window so far),
// discarding (only what came since the last pane), or retracting
// (accumulating, with a retraction of the previous pane before each new one,
// so that a downstream sum stays right).
//
// # A pipeline
//
// A pipeline reads a source, may map and filter, assigns timestamps and a
// watermark, keys, windows and aggregates, and sinks the panes and the late
// events:
//
//	p := weir.NewPipeline()
//	orders := weir.From(p, source)
//	stamped := weir.WithTimestamps(orders, func(o Order) mtime.Time { return o.At },
//		watermark.BoundedOutOfOrderness(2*time.Second))
//	byCard := weir.KeyBy(stamped, func(o Order) string { return o.Card })
//	counts, late := weir.Aggregate(
//		weir.Window(byCard, window.NewStrategy(window.TumblingWindows(time.Minute))),
//		aggregate.Count[Order]())
//	weir.Sink(counts, alert)
//	weir.Sink(late, keepForTheNightlyReport)
//	err := p.Run(ctx)
//
// The same input in the same arrival order gives the same panes in the same
// order, whatever the parallelism. Package weirtest scripts events, watermark
// and processing time for tests.
package weir
