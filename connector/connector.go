// Package connector is the seam between weir's engine and the outside world:
// the Source interface that reads records from partitions, and the Sink
// interface that writes results with a two-phase commit. Files and standard
// input and output (package connector/file) are the first implementations;
// a source or sink of your own plugs into a job the same way.
//
// The contracts follow Flink's Source/SplitReader and TwoPhaseCommittingSink,
// and franz-go's transactional session:
//
//   - A Source reads batches of raw records. Each batch carries the source's
//     position after its last record; a checkpoint stores it, and a restore
//     opens the source at it, so that every record is read into the state
//     exactly once.
//   - A Sink writes batches of results. At a checkpoint barrier it
//     pre-commits what it wrote since the last one and returns what the
//     checkpoint must keep; once the checkpoint is durable the engine commits
//     it. A commit may be run again after a crash, so it must be idempotent.
//
// Errors say what failed and wrap their cause; Retryable is the one place
// that decides whether an operation may be tried again.
package connector

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// Record is one record read from a source: its bytes, and where and when it
// arrived.
//
// The bytes stay valid for as long as the engine holds the record (a too-late
// event written to the side output minutes later still shows its line): a
// source hands out memory it does not reuse.
type Record struct {
	// Value is the record itself: a line without its line ending, a Kafka
	// record's value.
	Value []byte
	// Key is the record's key where the source has one (Kafka), else nil.
	Key []byte
	// Timestamp is the source's own timestamp of the record (Kafka's record
	// timestamp), or mtime.MinTime.
	Timestamp mtime.Time
	// Arrival is the processing time at which the record arrived, when the
	// source knows it (a Kafka topic with LogAppendTime); mtime.MinTime lets
	// the engine stamp it with its clock when it takes the batch.
	Arrival mtime.Time
	// Partition is the index of the record's partition in Batch.Partitions.
	Partition int
	// Offset is the record's place in its partition: the line number
	// (1-based) of a file, the offset of a Kafka record.
	Offset int64
	// Cut, for a record longer than its source holds, says so: Value is its
	// first bytes only, and the record is rejected (line_too_long).
	Cut *Cut
}

// Cut describes a record cut to its first bytes: its whole length and the
// SHA-256 of all of it.
type Cut = source.Cut

// Partition is one partition of a source: a unit with an order of its own
// and, by default, a watermark of its own.
type Partition struct {
	// Name identifies the partition in logs, metrics and status: a file's
	// path, "orders/3" for a Kafka partition.
	Name string
}

// Batch is what one Read hands over.
type Batch struct {
	// Records in the order the source read them; Read appends to it.
	Records []Record
	// Position is the source's position after the last record of the batch,
	// in the source's own encoding: what a checkpoint stores and what Open is
	// given back on restore. Read sets it.
	Position []byte
	// Partitions lists every partition of the source, indexed by
	// Record.Partition. Read sets it when the list changed since the batch
	// before (the first batch always), and leaves it nil otherwise.
	Partitions []Partition
	// Lost counts the records the source skipped since the batch before,
	// knowing they were there: a Kafka partition whose retention deleted
	// records before they were read, where the job says to go on. They are
	// never read, and the job's accounting counts them as lost.
	Lost int64
}

// Reset empties b for reuse, keeping the capacity of its records.
func (b *Batch) Reset() {
	clear(b.Records)
	b.Records = b.Records[:0]
	b.Position = nil
	b.Partitions = nil
	b.Lost = 0
}

// Source reads records from one or more partitions.
//
// The engine calls Open once, then Read from one goroutine of its own until
// it returns an error, then Close. Read blocks until there is at least one
// record or until the source has something to say (its partitions changed);
// a live source may block for as long as no record comes, and the engine's
// clock goes on meanwhile. Read must return promptly when ctx is done.
type Source interface {
	// Open prepares reading from a position that an earlier Read returned
	// in Batch.Position (restored from a checkpoint), or from the source's
	// configured start when position is nil. A source that cannot go back to
	// a position (standard input) returns an error for a non-nil one. An
	// Open that fails with a retryable error (Retryable: a broker down or
	// restarting) is called again with backoff until it succeeds or the job
	// stops, so a failed Open must leave nothing open behind it.
	Open(ctx context.Context, position []byte) error
	// Read fills b (empty on entry) with the next records. At the end of a
	// bounded source it returns io.EOF, with or without records in b; when
	// ctx is done it returns ctx.Err(). Any other error ends the job: a
	// source whose connection drops while reading waits for it and
	// reconnects itself, in Read, as the Kafka and MQTT sources do.
	Read(ctx context.Context, b *Batch) error
	// Close releases the source. It may be called while a Read is blocked
	// (the engine cancels that Read's ctx first).
	Close() error
}

// Recorded is a Source of a recording: a bounded input whose records come
// in one order every time it is read, from any position it returned (a
// file read to its end, not followed). The engine reads several recorded
// sources of one job in one order of their records (engine.Paced), so
// that a join of two files gives the same output on every run.
type Recorded interface {
	Recorded() bool
}

// Reporter is a Source that can say, per partition, whether it is caught up
// and how much is waiting: the difference between a partition that is quiet
// and one that is behind. Report may be called from any goroutine, while Read
// runs.
type Reporter interface {
	Report() []PartitionReport
}

// Committer is a Source that acknowledges what it read to where it read
// it from, and may do so only once a checkpoint holds the records' effects:
// a queue or an MQTT session, which cannot be rewound to a position, and
// sends again, after a crash, only what was not acknowledged.
//
// The engine calls Committed once a checkpoint (or savepoint) that holds
// position is durable: position is what the source returned in a
// Batch.Position (or was opened at), the last the engine had delivered
// when the checkpoint began; every record up to it may be acknowledged.
// Positions come in the order of the checkpoints, from a goroutine of the
// engine's (not Read's), possibly while Read runs. A job that takes no
// checkpoints never calls it: such a source acknowledges on its own.
//
// Waiting reports whether the source holds as many unacknowledged records as
// its origin lets it (a broker's window of messages in flight), so that it
// reads nothing more until a checkpoint: the engine then takes one at once,
// if none is under way, instead of at its next interval. It is called from
// the engine's loop, after each batch it delivers and after each checkpoint.
type Committer interface {
	Committed(position []byte)
	Waiting() bool
}

// PartitionReport is what a source knows of one partition's reading.
type PartitionReport struct {
	// Partition is the index in Batch.Partitions; Name its name.
	Partition int    `json:"partition"`
	Name      string `json:"name"`
	// Backlog is how many records (or, for a file, bytes) are waiting to be
	// read; -1 when the source cannot tell.
	Backlog int64 `json:"backlog"`
	// CaughtUp is true when the source has read everything there was when it
	// last looked.
	CaughtUp bool `json:"caught_up"`
	// Err is the last error reaching the partition's data (a lost
	// connection), or empty while reading works.
	Err string `json:"error,omitempty"`
}

// Guarantee is what a sink promises about its output when the job restarts
// after a failure.
type Guarantee uint8

const (
	// AtLeastOnce: after a restart, output since the last checkpoint may be
	// written again (standard output, a function).
	AtLeastOnce Guarantee = iota
	// Idempotent: output may be written again, but writing it again changes
	// nothing (an upsert keyed by key, window and revision).
	Idempotent
	// ExactlyOnce: each output becomes visible exactly once, when the
	// checkpoint that covers it is complete (a transaction per checkpoint).
	ExactlyOnce
)

// String is at_least_once, idempotent or exactly_once, as job files name
// them.
func (g Guarantee) String() string {
	switch g {
	case AtLeastOnce:
		return "at_least_once"
	case Idempotent:
		return "idempotent"
	case ExactlyOnce:
		return "exactly_once"
	}
	return fmt.Sprintf("Guarantee(%d)", uint8(g))
}

// Satisfies reports whether a sink with guarantee g keeps the promise want.
// Idempotent output keeps an exactly-once promise: a repeat changes nothing.
func (g Guarantee) Satisfies(want Guarantee) bool {
	if want == AtLeastOnce {
		return true
	}
	return g == Idempotent || g == ExactlyOnce
}

// Resume is how a sink is opened: afresh (the zero Resume), or resuming from
// a checkpoint. It is the sink's part of the engine's commit record, which
// every checkpoint holds: the pre-commits not known to be committed, and the
// sink's own mark of what it had committed.
type Resume struct {
	// From is the id of the checkpoint or savepoint the job resumes from;
	// 0 when the sink starts afresh (no checkpoint, or one taken before the
	// sink was part of the job).
	From uint64
	// Pending are the restored checkpoint's pre-commits that may not have
	// been committed, oldest first. The engine commits each of them right
	// after Open (Commit is idempotent), so Open only checks that it can,
	// and aborts whatever else of a previous run is still in flight.
	Pending []PreCommit
	// Mark is what the sink's Mark returned after its last commit before
	// the restored checkpoint was taken (nil if it never said): what it
	// knows it had committed, such as a file's identity and length.
	Mark []byte
}

// Resumed reports whether the sink resumes from a checkpoint.
func (r Resume) Resumed() bool { return r.From != 0 }

// PreCommit is one pre-commit in a commit record: what PreCommit returned
// for a checkpoint.
type PreCommit struct {
	Checkpoint uint64
	Data       []byte
}

// Marker is a Sink that records in every checkpoint what it has committed,
// so that a restore (from the newest checkpoint, an older one, or a
// savepoint) can tell its own output from what it did not write. The engine
// calls Mark after Open and after every commit, from the goroutine that
// commits, keeps the newest mark in each checkpoint, and hands it back in
// Resume.Mark.
type Marker interface {
	Mark() []byte
}

// Sink writes results with a two-phase commit.
//
// The engine calls Open once, then Write, Flush and PreCommit from one
// goroutine, in the order of the stream; Commit comes from another goroutine,
// possibly while Write is writing the output of the next checkpoint: a sink
// that cannot overlap them serializes them itself. Close comes last, after
// every other call has returned.
type Sink[T any] interface {
	// Open prepares the sink: afresh, or resuming from a checkpoint (see
	// Resume). A sink that resumes must never write again what a committed
	// pre-commit of a later checkpoint holds (restoring an older savepoint,
	// or falling back from a corrupt newest checkpoint): it recognises it,
	// or cuts it back to the checkpoint.
	Open(ctx context.Context, r Resume) error
	// Write writes items in order. The slice and the items are not kept
	// after Write returns, unless copied.
	Write(ctx context.Context, items []T) error
	// Flush makes everything written so far visible to readers, for a job
	// without checkpoints; the engine calls it within 100 ms of a write in a
	// live job. An exactly-once sink does nothing until Commit.
	Flush(ctx context.Context) error
	// PreCommit is called at a checkpoint barrier, after every item before
	// the barrier was written: it readies them for commit (flushes, ends the
	// writes of a transaction) and returns what the checkpoint must keep for
	// Commit.
	PreCommit(ctx context.Context, checkpoint uint64) ([]byte, error)
	// Commit makes visible what PreCommit returned pre for checkpoint, once
	// the checkpoint is durable. It may be called again for the same
	// checkpoint after a restart (its first call may or may not have taken
	// effect), so it must be idempotent.
	Commit(ctx context.Context, checkpoint uint64, pre []byte) error
	// Guarantee is what the sink promises.
	Guarantee() Guarantee
	// Close releases the sink; what was written but not pre-committed is
	// dropped (a transaction aborted).
	Close() error
}

// Holder is a Sink that holds what it writes in memory until its next
// PreCommit (an exactly-once file or table, a Kafka sink of a consumer
// group's task): HeldBytes says how much, so that
// the engine takes a checkpoint early when it passes the job's bound
// (engine.Checkpointing.MaxHeld) instead of letting it grow with the
// checkpoint interval. It is called from the goroutine that writes, after
// Write and PreCommit.
type Holder interface {
	HeldBytes() int64
}

// Pauser is a Source that can stop fetching some of its partitions for a
// while (watermark alignment): the indexes are those of Batch.Partitions.
// Records already fetched may still come. It is called from the engine's
// loop, concurrently with Read.
type Pauser interface {
	Pause(partitions []int)
	Resume(partitions []int)
}

// Rewriter is a Sink whose output a run of the job from its beginning
// writes anew, leaving it as the first run left it: a file replaced whole,
// a table whose rows keep their highest revision, standard output (which
// holds nothing). A finished job run again starts from its beginning only
// when every sink is one, or when its front door says to run it again on
// purpose: a topic, a webhook or a function cannot take back what the first
// run wrote, and would get every result twice.
type Rewriter interface {
	// Rewrites reports whether the sink, as configured, is one.
	Rewrites() bool
}

// Starter is a Sink with work to do once the commits of the restored
// checkpoint are done and before the first Write: a transactional sink
// starts its producers there, which aborts what a previous run left open.
type Starter interface {
	Start(ctx context.Context) error
}
