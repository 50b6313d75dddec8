package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/watermark"
)

// Group runs a job as one instance of a consumer group (source.kafka.group),
// on package group: each partition of the input topic is a task, a Runnable
// of the job reading that partition alone, with its checkpoints in its
// partition of the changelog topic. Group translates the job file into a
// group.Config; the distribution itself is package group's.
type Group struct {
	j *jobfile.Job
	o Options
	g *group.Instance
}

// NewGroup prepares an instance of the group job j.
func NewGroup(j *jobfile.Job, o Options) (*Group, error) {
	if !j.Grouped() {
		return nil, errors.New("the job has no source.kafka.group")
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	o.Log = j.Secrets().Writer(o.Log)
	// One decoder (and one registry client, one cache of schemas) for all
	// the instance's tasks.
	dec, err := newDecoder(j, func(s string) {
		if o.Log != nil {
			fmt.Fprintln(o.Log, j.Redact(s))
		}
	})
	if err != nil {
		return nil, err
	}
	o.decoder = dec
	gr := &Group{j: j, o: o}
	k := j.Kafka
	timeout := jobfile.DefaultGroupTransactionTimeout
	for _, out := range j.AllOutputs() {
		if out.Kafka != nil {
			timeout = max(timeout, out.Kafka.TransactionTimeout)
		}
	}
	c := group.Config{Conn: k.KafkaConn, Group: k.Group, Changelog: k.Changelog, Start: k.Start,
		SessionTimeout:     time.Duration(k.SessionTimeout) * time.Millisecond,
		TransactionalID:    "weir-" + j.DisplayName(),
		TransactionTimeout: time.Duration(timeout) * time.Millisecond,
		Log:                o.Log, Task: gr.task}
	if k.Repartition {
		c.Repartition = jsonKey(j.Key)
	}
	// With an idle timeout, a task whose partition is idle follows the
	// group's watermark, as an idle partition of one job follows the
	// others'.
	c.ShareWatermarks = j.Watermark.Kind == watermark.Bounded && j.Watermark.Idle > 0
	c.Standby = k.Standby > 0
	c.Threads = k.Threads
	g, err := group.New(c)
	if err != nil {
		return nil, err
	}
	gr.g = g
	return gr, nil
}

// Run joins the group and runs the tasks of the partitions this instance is
// given until ctx is cancelled: then every task takes a last checkpoint,
// and the instance leaves the group.
func (gr *Group) Run(ctx context.Context) error {
	if gr.o.Log != nil {
		for _, w := range gr.j.Warnings() {
			fmt.Fprintf(gr.o.Log, "weir: warning: %s\n", w)
		}
	}
	if err := gr.g.Run(ctx); err != nil {
		return &RuntimeError{Msg: text.ErrorText(err), Err: err}
	}
	return nil
}

// task builds the Runnable of one partition's task.
func (gr *Group) task(_ context.Context, t *group.Task) (group.Runner, error) {
	j, k := gr.j, gr.j.Kafka
	tj, tk := *j, *k
	// Its checkpoints, their publication to the changelog and what a
	// failed one does are the translator's (translate.Config.Task).
	tj.Checkpoint.Dir, tj.Parallelism, tj.HTTP, tj.Task = t.Dir, 1, "", t.Partition+1
	if k.Repartition {
		tk.Topic, tk.Start = t.Topic, kafka.Start{}
	}
	tj.Kafka = &tk
	o := gr.o
	o.Log = t.Log
	o.Progress, o.From = nil, ""
	o.task = t
	rn, err := Build(&tj, o)
	if err != nil {
		return nil, err
	}
	gt := &groupTask{rn: rn, t: t}
	if o.Console {
		gt.srv = rn.Console()
		gt.srv.Started, gt.srv.CheckpointInterval = time.Now(), time.Duration(j.Checkpoint.Interval)*time.Millisecond
	}
	return gt, nil
}

// groupTask is a Runnable as a task of the group.
type groupTask struct {
	rn  *Runnable
	t   *group.Task
	srv *console.Server // the task's console, when the instance serves one
}

func (g *groupTask) Run(ctx context.Context) error {
	sum, err := g.rn.Run(ctx)
	if sum != nil && err == nil {
		// What the task did, as its checkpoints counted it (across the
		// instances that ran it).
		// A stop that could not wait for its savepoint leaves records in
		// flight: read, not yet counted, and read again by the next run.
		versions := ""
		if sum.Superseded > 0 || sum.RevisionsTooLate > 0 {
			versions = fmt.Sprintf(", %d superseded, %d revisions too late", sum.Superseded, sum.RevisionsTooLate)
		}
		filtered := ""
		if sum.Filtered > 0 {
			filtered = fmt.Sprintf(", %d filtered out by where", sum.Filtered)
		}
		g.rn.logf("stopped at watermark %s: read %d: %d accepted, %d duplicates%s, %d too late%s, %d beyond the dedup horizon%s, %d quarantined, %d in flight; %d panes written",
			sum.Watermark, sum.Read, sum.Accepted, sum.Duplicates, filtered, sum.TooLate, TriggerFinishedNote(sum.TriggerFinished, sum.LateForSomeWindows),
			sum.BeyondDedupHorizon, versions, sum.Quarantined, sum.InFlight, sum.PanesWritten)
	}
	return err
}

func (g *groupTask) Abort(err error) { g.rn.e.Abort(err) }

func (g *groupTask) Status(ctx context.Context, timeout time.Duration) engine.Status {
	return g.rn.e.Control().Status(ctx, timeout)
}

// RestoredKeys is how many keys the task's windows restored.
func (g *groupTask) RestoredKeys() int64 { return g.rn.win.RestoredKeys() }

// Console is the task's console, when the instance serves one.
func (g *groupTask) Console() *console.Server { return g.srv }

// RepartitionTopic is the topic a group job with source.kafka.repartition
// copies its input into: GROUP-repartition.
func RepartitionTopic(j *jobfile.Job) string { return group.RepartitionTopic(j.Kafka.Group) }

// jsonKey returns the key the job's decoder finds at path in a JSON value,
// as a producer keyed by it would write it: a string's bytes, or another
// scalar's canonical text; nil when the value has none.
func jsonKey(path jobfile.Path) func([]byte) []byte {
	var p fastjson.Parser
	return func(value []byte) []byte {
		v, err := p.ParseBytes(value)
		if err != nil {
			return nil
		}
		switch v = get(v, path); {
		case v == nil:
			return nil
		case v.Type() == fastjson.TypeString:
			return bytes.Clone(v.GetStringBytes())
		case v.Type() == fastjson.TypeObject || v.Type() == fastjson.TypeArray:
			return nil
		}
		return linedec.AppendCanonicalJSON(nil, v)
	}
}

// GroupStatus is what an instance of a group job says of itself.
type GroupStatus = group.GroupStatus

// TaskStatus is one task of an instance.
type TaskStatus = group.TaskStatus

// TaskRestore is what a task read back from its changelog.
type TaskRestore = group.TaskRestore

// StopBudget is how long, at least, a group instance waits for a task to
// take its last checkpoint when it stops (or gives its partition away)
// before it stops it at once: the session timeout, if longer.
const StopBudget = group.StopBudget

// Console serves the instance's status and metrics.
func (gr *Group) Console() *console.GroupServer {
	j := gr.j
	info := console.JobInfo{Name: j.Name, File: j.File, Text: j.Text(), Warnings: j.ShownAll(j.Warnings())}
	task := func(p int32) *console.Server {
		if t, ok := gr.g.Running(p).(*groupTask); ok {
			return t.Console()
		}
		return nil
	}
	return &console.GroupServer{Job: info, Status: gr.g.Status, Task: task, Redact: j.RedactJSON, Access: ConsoleAccess(j),
		CheckpointInterval: time.Duration(j.Checkpoint.Interval) * time.Millisecond}
}

// Status reports the instance's membership and its tasks.
func (gr *Group) Status(ctx context.Context) GroupStatus { return gr.g.Status(ctx) }
