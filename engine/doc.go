// Package engine is weir's runtime above the window operators: the one that
// both front doors build, the job file (package job) and the Go API (package
// weir). It owns the flow
//
//	sources → decode and validate → de-duplicate → watermarks → window operators → sinks
//
// and what makes it durable and live: the checkpoint coordinator (barriers
// through the stages, pre-commit of every sink at its barrier, commit after
// the checkpoint is durable), the live clock (processing-time timers fire at
// their time whether or not input arrives), and the control handle
// (savepoint now, status, stop).
//
// # Threads
//
// The engine's own goroutine is the source loop: it takes batches from the
// sources (each read in a goroutine of its own), hands every record to the
// source's handler, advances processing time, and starts checkpoints between
// batches. A window stage (Window) runs its operator instances in goroutines
// of their own and delivers its panes, late events and signals, in order,
// from one merging goroutine. Elements and signals flow down a tree of
// Consumers: each consumer is called from one goroutine at a time, its
// upstream's, so a stage fed by another stage is driven entirely by that
// stage's output (a chained aggregation is race-free). The coordinator
// writes checkpoints and commits sinks in a goroutine of its own.
//
// # Checkpoints
//
// A checkpoint is a barrier injected between two batches. Every participant
// (a source's position, a head's counters and de-duplication ids, a stage's
// clocks and operator state, a sink's pre-commit) acknowledges it when the
// barrier reaches it, in stream order; when all have, the coordinator writes
// the checkpoint atomically (package checkpoint) and then commits every sink.
// A failed checkpoint keeps its sinks' pre-commits for the next one; after
// more failures in a row than tolerated the job stops, with the last good
// checkpoint intact.
//
// Everything that depends on time is driven by explicit calls (an event, a
// watermark advance, a processing-time advance); the engine reads the wall
// clock only in a live job, once per batch and at each tick, so that a replay
// and a test produce exactly the same results as a live run with the same
// arrivals. Tests of live behaviour run the engine inside testing/synctest.
//
// # What belongs here
//
// The run of one job on one machine: its flow, its checkpoints, its clocks,
// its status, and its accounting (Accounting, the one ledger of every
// record read, which the status, weir run's summary and its acceptance
// record embed), and Operator, the window operator with its clocks that
// every window stage is built on and that a deterministic replay (weir
// lateness, the console's simulator, weirtest's harness) drives by itself.
// The operators' internals are internal/exec's, the state
// backends package state's, the storage of checkpoints package
// checkpoint's. What a job computes belongs to its front door (package job
// or package weir), and spreading one job over machines to package group,
// which runs an engine per partition.
package engine
