// Package gen writes deterministic, realistic JSON-lines streams for trying
// weir out, for tests and for benchmarks. These shapes are available:
//
//   - [Steep]: the app events of Steep, the tea shop of the book's chapter 14
//     ("Real Time Is Hard"), in arrival order. Its figures come from the
//     chapter's "Two clocks" section and Table 1: 99.1% of the lines arrive
//     within 2 seconds of their event time; 0.9% arrive between 5 minutes and
//     about 6 hours late (phones offline in a tunnel or an elevator: only iOS
//     and Android, web is never late), almost nothing arrives in between;
//     network jitter reorders the stream so that 12.1% of all lines arrive
//     after a line that happened later; about 0.1% of the lines are a second
//     delivery of an earlier event.
//   - [Orders]: the server-side orders topic of the chapter's fraud job. It is
//     never late (arrival is 0 to 50 ms after the event time), most cards pay
//     rarely, and a few stolen cards an hour pay 5 to 30 times within a
//     minute or two.
//   - [Ledger] and [LedgerEvents]: the question "late, or lost?". The
//     ledger is Steep's order database, one line per order; the events are
//     the order_completed events its app sent for those orders, in arrival
//     order, by the same options: never sent for 1% of the iOS orders and 4%
//     of the Android ones (none on the web), 5 minutes to 6 hours late for
//     1.1% of the phones' others, and a day of later orders the ledger does
//     not hold. weir lateness --ledger joins them.
//   - [NexmarkJSON] and the in-process generator [Nexmark]: the persons,
//     auctions and bids of the Nexmark benchmark, following the rules of the
//     reference generator (github.com/nexmark/nexmark): proportions
//     1:3:46, hot auctions, sellers and bidders, id ranges starting at 1000,
//     prices between 1 and 1,000,000 dollars spread evenly on a log scale,
//     and so on.
//
// Every generator is deterministic: the same [Options] give byte-identical
// output (a PCG generator seeded from Options.Seed; no wall clock, no map
// order). They are fast (a million lines of Steep or Orders in about half a
// second, of Nexmark in about a second) and their memory stays bounded
// whatever the number of events: Steep generates in event-time order and
// holds back, in a heap keyed by arrival, only the lines that have not
// arrived yet (mostly the late ones, at most 6 hours of them), and so does
// LedgerEvents. Options.Events counts lines, second deliveries included,
// except for Ledger and LedgerEvents, where it counts the orders of the
// ledger (LedgerEvents writes about twice as many lines).
//
// # Timestamps
//
// Every line carries its event time in "ts" as RFC 3339 UTC with milliseconds
// (2026-09-07T12:00:01.000Z); Steep, Orders and LedgerEvents also carry the
// processing time at the server in "arrival", and their lines are written in
// arrival order. Ledger lines carry the time the order was placed in "ts",
// in time order. Nexmark lines are written in event-time order, as the
// reference generator produces them.
//
// # Density and reordering
//
// Steep's real stream had about 0.7 events a second, and its jitter of a few
// hundred milliseconds gave 12.1% of out-of-order lines. How many lines a
// given jitter reorders grows with the density of the stream, so Steep scales
// its jitter with the mean gap between events (Options.Events over
// Options.Days): the share stays within half a point of 12.1% from about
// 70,000 to 10 million events a day (at the default million a day the mean
// jitter is about 20 milliseconds). Sparser streams keep the jitter at its cap
// of a few hundred milliseconds, so that lines still arrive within 2 seconds,
// and are reordered a little less.
package gen
