// Package job runs weir's job files: it compiles a job file, as package
// jobfile reads and checks it, to a plan (Plan) and runs it (Build, Run),
// alone or as the tasks of a consumer group (NewGroup).
//
// What belongs here is the lowering of a job file: the plan it compiles
// to, with the typed implementations of its nodes (the decoder of its
// lines, whose time rules are internal/linedec's; the window's aggregates
// and codec; the formats and sinks of what it writes), and what a run of it
// writes besides (its summary and acceptance record, weir lint's sample).
// The rest does not: the grammar is package jobfile's; package translate
// builds the plan on the engine, which runs it; package group distributes a
// group job's partitions (a Group is a group.Config whose tasks are
// Runnables); the connectors read and write.
package job
