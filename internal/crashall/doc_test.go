// Package crashall holds the crash-everything test of weir's promise,
// "nothing lost, nothing doubled", whatever the outputs and however the job
// stops.
//
// Each schedule is made from one seed: a random job (window kind, allowed
// lateness, accumulation mode, de-duplication, a second aggregation of the
// same read, or, instead of windows, an inner, left outer or anti interval,
// window or temporal join of the recorded input with a second recorded
// file, the temporal one's with deletions, or a lookup of each event's key
// in an SQLite table), its state in memory or in the Pebble backend with a
// budget that makes keys leave the cache, a random combination of
// outputs in one job (JSON-lines files, Kafka topics, SQLite and PostgreSQL
// tables; too-late events and rejected lines on files or topics; the input
// topic and the results' topic in JSON or in Avro through an in-process
// schema registry), and a random fault plan: runs killed with SIGKILL at any write, sync or rename
// of a checkpoint or an output file, or between two batches; two kills
// within one checkpoint interval; a corrupt newest checkpoint; a restore
// from an older savepoint; the broker restarted while the job runs or while
// it is stopped; the database's connections cut; retention deleting the
// input up to the committed offset; the input or an output file replaced
// while the job is stopped (the restore must refuse it with its documented
// one-line error, and go on once the file is back). Each run is a child
// process: the test binary itself, running the job in-process (TestMain).
//
// The invariant: once the last run has finished, every output holds what
// an uninterrupted run of the same job writes to outputs of the same kinds,
// byte for byte (a topic's committed records, a table's rows), and the
// accounting is the uninterrupted run's.
//
// go test ./internal/crashall runs 100 schedules (20 with -short);
// -schedules N runs N, -seed S only the schedule S. A failure prints its
// seed and the command that replays it.
package crashall
