package group

import (
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// GroupStatus is what an instance of a consumer-group job says of itself:
// its membership, the partitions it owns and the state of each one's task.
type GroupStatus struct {
	Group      string       `json:"group"`
	Member     string       `json:"member"`
	Generation int32        `json:"generation"`
	Topic      string       `json:"topic"`
	Changelog  string       `json:"changelog"`
	Partitions int          `json:"partitions"` // the topic's
	Owned      []int32      `json:"owned"`
	Tasks      []TaskStatus `json:"tasks"`
	// Members are every instance of the group, as the group's coordinator
	// describes it, with their partitions; MembersErr says why they are
	// missing.
	Members    []GroupMember `json:"members"`
	MembersErr string        `json:"members_error,omitempty"`
	// Repartition is the copying of an input not keyed by the job's key
	// into the topic the tasks read, when the job does it.
	Repartition *RepartitionStatus `json:"repartition,omitempty"`
	// Watermarks is the topic where the tasks share their watermarks, when
	// they do (watermark.idle); GroupWatermark is the group's watermark as
	// this instance knows it: the minimum over the tasks that are not idle
	// (nil: none, every task idle or none heard of), which its idle tasks
	// follow.
	Watermarks string `json:"watermarks_topic,omitempty"`
	// Standby is the partitions whose tasks this instance keeps warm
	// (source.kafka.standby): their changelog read, for a takeover.
	Standby        []int32     `json:"standby,omitempty"`
	GroupWatermark *mtime.Time `json:"group_watermark,omitempty"`
	// Threads are the instance's threads: the Kafka clients its tasks
	// share.
	Threads []ThreadStatus `json:"threads"`
	// Unreachable says that the instance's membership cannot reach the
	// brokers.
	Unreachable bool `json:"unreachable,omitempty"`
}

// ThreadStatus is one thread of an instance: one Kafka client that reads
// the input of its tasks and commits their checkpoints.
type ThreadStatus struct {
	TransactionalID string  `json:"transactional_id"`
	Tasks           []int32 `json:"tasks"`
	// Committed and Aborted count its transactions; LastErr is why the
	// last one aborted.
	Committed int64  `json:"transactions_committed"`
	Aborted   int64  `json:"transactions_aborted"`
	LastErr   string `json:"last_error,omitempty"`
	// Unreachable: its client cannot reach the brokers.
	Unreachable bool `json:"unreachable,omitempty"`
}

// GroupMember is one instance of a group job.
type GroupMember struct {
	ID         string  `json:"member"`
	Client     string  `json:"client"`
	Host       string  `json:"host"`
	Partitions []int32 `json:"partitions"`
}

// RepartitionStatus is an instance's share of the copying into the
// repartition topic.
type RepartitionStatus struct {
	From   string  `json:"from"`
	To     string  `json:"to"`
	Owned  []int32 `json:"owned"` // partitions of From this instance copies
	Copied int64   `json:"copied"`
}

// TaskStatus is one task (one partition) of an instance.
type TaskStatus struct {
	Partition int32 `json:"partition"`
	// State is restoring (reading its changelog), running, stopping or
	// failed (it starts again from its changelog).
	State    string      `json:"state"`
	Starts   int         `json:"starts"`
	Restored TaskRestore `json:"restored"`
	Err      string      `json:"error,omitempty"`
	// ChangelogWritten counts the bytes of state the task wrote to its
	// changelog since it started, and ChangelogReused those its
	// checkpoints referred to that were there already (unchanged).
	ChangelogWritten int64 `json:"changelog_written_bytes"`
	// Misrouted counts the sampled events (one in 64) whose key Kafka's
	// default partitioner puts in another partition: the input is not
	// keyed by the job's key.
	Misrouted       int64         `json:"misrouted_sampled,omitempty"`
	ChangelogReused int64         `json:"changelog_reused_bytes"`
	Status          engine.Status `json:"status"`
}

// TaskRestore is what a task read back from its changelog when it started.
type TaskRestore struct {
	Checkpoint uint64 `json:"checkpoint"` // 0: none, the task started afresh
	Records    int64  `json:"records"`    // read when the task started
	Bytes      int64  `json:"bytes"`
	// Standby is the records this instance had read before, as the task's
	// standby (source.kafka.standby).
	Standby int64 `json:"standby_records,omitempty"`
	Keys    int64 `json:"keys"`
	Millis  int64 `json:"ms"`
}
