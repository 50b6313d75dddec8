// Package lateness measures how late a recorded stream really is, before
// anyone chooses a watermark. It is the library behind `weir lateness`.
//
// One habit keeps a watermark honest: before you raise its delay, measure
// the travel time of your events. The report's Table 1 replays a recorded
// stream, in the order it arrived, through one-minute windows and shows, for
// each watermark delay, how many events arrive after their window has
// already given its result, and how long each result waits. Analyze
// does the same for any recorded stream, in one pass and in constant memory,
// and says what the numbers mean.
//
// # What the report says
//
// Every event has two times: when it happened (event time) and when it
// reached the server (arrival, processing time). The report of Analyze has
// four parts.
//
//  1. Travel time: arrival minus event time, as percentiles and in
//     buckets (under 2 s, 2 s to 5 min, 5 min to 1 h, 1 to 6 h, 6 h or more),
//     for all events and grouped by any field (Options.By). A stream whose
//     late events are phones coming out of a tunnel shows a gap: almost
//     nothing between a few seconds and a few minutes, then a long tail.
//  2. Out of order: the share of events that arrive after an event that
//     happened later (normal network jitter does that, a few hundred
//     milliseconds at a time).
//  3. Table 1: for each watermark delay, the share of events that are too
//     late (their window had already fired when they arrived, so weir run
//     drops them or sends them to late_output), and how long results wait
//     after their window ends: at least, median, 99th percentile. With it,
//     the state each delay costs: the windows held open (per key), on
//     average and at most.
//  4. A recommendation: the smallest delay that keeps too-late events under
//     a target (0.1% by default) without results waiting longer than a limit
//     (1 h by default), and what allowed lateness would add for it. When no
//     delay gets there in time, the report says so plainly: late events need
//     a side output and a batch correction, because, as the seed puts it, no
//     fraud alert can wait six hours.
//
// # The same rules as weir run
//
// Table 1 is not a formula: each delay is replayed through weir's own window
// operator (engine.Operator, what every window stage of weir run is built
// on), with tumbling windows, a watermark of max event
// time - delay - 1 ms emitted after every event (watermark.interval 0s) and
// no allowed lateness, reading the lines with weir run's rules (RFC 3339 or
// epoch-millisecond times, event times before 2000 rejected, lines without an
// arrival time rejected; rejected lines never move the watermark). So its
// too-late counts are exactly what weir run reports as too_late for a job
// with the same window and delay. Alongside, each event's margin (how far the
// watermark had passed the end of its window when it arrived) gives the
// too-late share of any delay at all, which the finer search of the
// recommendation uses; tests check that the two agree.
//
// # Periods, state and idleness
//
// Options.Periods compares spans of event time (the week before a drop and
// the week of it): the travel times are grouped by period as by a --by field
// (a grouping named "period", in the order given), and Report.Periods splits
// Table 1 by period out of the same replays: a too-late event counts in the
// period of its event time, a result's wait in the period its window starts
// in, so the watermark is the whole stream's, as in weir run.
//
// For a job (FromJob, Options.EstimateState), Report.State estimates its
// state: the distinct values of its key in the sample, times the windows
// open at most with the recommended delay, times BytesPerKeyWindow (what
// weir bench's state-per-key measures for the memory backend), an upper
// bound; and the memory_budget to set for it, or the Pebble backend past
// PebbleAbove.
//
// With a partition field, Report.Idle gives each partition's quiet gaps
// (arrival minus the partition's arrival before, in the file's order) and
// replays the stream a second time, with the recommended delay, once with
// no idleness and once with each candidate idle timeout (Options.Idles, or
// derived from the gaps): the too-late events each adds against the mean
// and longest wait of a result, and the shortest timeout that adds at most
// the target share.
//
// # Weights
//
// A sample often stands for more events than it holds: a Parquet sample
// may keep every late event but only some on-time ones, and its column
// sample_weight says how many real events each row stands for. Every share
// in the report is then a sum of weights, not a count of rows (Options.Weight;
// a field named sample_weight is used by default: a CSV or Parquet column, or
// in JSON lines on every line that has it, a line without it weighing 1; a
// line whose weight is not a non-negative number is rejected as bad_weight).
// Too-late counts stay counts of rows, as weir run counts them, next to their
// weight.
//
// # Late, or lost?
//
// Another question of recorded events: thousands of
// orders had no order_completed event: were those events late (kept on
// phones in tunnels, sent hours later) or lost (never sent)? A late event
// arrives in the end; a lost one never does. AnalyzeLedger joins the stream
// to a ledger of what must have happened (the orders of the order database)
// by an id field (LedgerOptions.Match), and measures for every entry the time
// from the entry to the first arrival of an event with its id. For each group
// (Options.By, read from the entry, else from its event) it reports the share
// of the entries whose event had arrived within each wait (DefaultWaits,
// 1 min to 24 h), the share that never arrived (no event with the id at all),
// the duplicates and the events that match no entry (counted apart, in no
// share). When the share arrived goes flat (FlatShare of the arrivals in)
// at a wait shorter than the longest and stays below 100%, the report says
// so: the missing events are not late, they are lost.
// Entries made less than the longest wait before the last arrival are
// counted apart, since their events may still come; when they are a tenth
// of the missing, the report asks for more data instead. The events are
// read with the rules of Table 1 and streamed; the ledger is held in memory
// (its ids, and a time and two group numbers per entry).
//
// # Inputs
//
// JSON lines, CSV with a header row, and Parquet (read a row group and only
// the needed columns at a time; timestamps as TIMESTAMP or DATE columns,
// RFC 3339 strings, epoch milliseconds, or legacy INT96), for the events and
// for a ledger alike. Analyze reads its input once and never holds it in
// memory: travel times go into log-linear histograms (exact below 256 ms,
// within 0.8% above), and the only state that grows is the engine's open
// windows, bounded by the longest delay plus lateness.
package lateness
