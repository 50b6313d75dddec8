package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
)

// taskHooks make a Runnable one task of a consumer-group job.
type taskHooks struct {
	partition int32
	route     *routeCheck
	txn       *kafka.Txn
	publish   func(ctx context.Context, m checkpoint.Manifest, files []checkpoint.Input) error
}

// Group runs a job as one instance of a consumer group (source.kafka.group).
// Kafka's group protocol gives each instance some of the input topic's
// partitions; each partition is a task, with its own watermark, windows,
// timers and de-duplication ids, so that what comes out does not depend on
// which instance runs it or how many there are. A task's checkpoints go to
// its partition of the changelog topic, in the Kafka transaction that holds
// its output and its input position; a task that moves to another instance
// starts there from its last committed checkpoint.
type Group struct {
	j     *Job
	o     Options
	g     *kafka.Group
	rekey *kafka.Rekey
	conn  kafka.Config // the tasks' topic
	tmp   string
	parts []int32

	ctx    context.Context
	mu     sync.Mutex
	tasks  map[int32]*task
	wg     sync.WaitGroup
	failed chan error
}

// task is one partition's run in this instance.
type task struct {
	p      int32
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	state    string // restoring, running, stopping, failed
	rn       *Runnable
	console  *console.Server // the task's console, when the instance serves one
	log      *kafka.Changelog
	route    *routeCheck
	restored TaskRestore
	starts   int
	lastErr  string
}

// NewGroup prepares an instance of the group job j.
func NewGroup(j *Job, o Options) (*Group, error) {
	if !j.Grouped() {
		return nil, errors.New("the job has no source.kafka.group")
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	o.Log = j.secrets.Writer(o.Log)
	return &Group{j: j, o: o, tasks: map[int32]*task{}, failed: make(chan error, 1)}, nil
}

func (gr *Group) logf(format string, args ...any) {
	if gr.o.Log != nil {
		fmt.Fprintf(gr.o.Log, "weir: "+format+"\n", args...)
	}
}

// Run joins the group and runs the tasks of the partitions this instance is
// given until ctx is cancelled: then every task takes a last checkpoint,
// and the instance leaves the group.
func (gr *Group) Run(ctx context.Context) error {
	j := gr.j
	k := j.Kafka
	parts, err := kafka.Partitions(ctx, k.KafkaConn, k.Topic)
	if err != nil {
		return &RuntimeError{Msg: err.Error(), Err: err}
	}
	gr.mu.Lock()
	gr.parts = parts
	gr.mu.Unlock()
	if err := kafka.EnsureChangelog(ctx, k.KafkaConn, k.Changelog, int32(len(parts))); err != nil {
		return &RuntimeError{Msg: err.Error(), Err: err}
	}
	// The tasks read the input, or the repartition topic the instances copy
	// it into, keyed by the job's key.
	conn := k.KafkaConn
	if k.Repartition {
		conn.Topic = RepartitionTopic(j)
		if err := kafka.EnsureTopic(ctx, conn, conn.Topic, int32(len(parts)), nil); err != nil {
			return &RuntimeError{Msg: err.Error(), Err: err}
		}
	}
	gr.mu.Lock()
	gr.conn = conn
	gr.mu.Unlock()
	if gr.tmp, err = os.MkdirTemp("", "weir-tasks-"); err != nil {
		return &RuntimeError{Msg: "cannot create the tasks' directory: " + err.Error(), Err: err}
	}
	defer os.RemoveAll(gr.tmp)
	run, stop := context.WithCancel(context.Background())
	var copied sync.WaitGroup
	defer func() {
		stop()
		copied.Wait()
	}()
	gr.ctx = run
	if k.Repartition {
		rk := &kafka.Rekey{Config: k.KafkaConn, Group: conn.Topic, To: conn.Topic, Start: k.Start,
			Key: jsonKey(j.Key), SessionTimeout: time.Duration(k.SessionTimeout) * time.Millisecond}
		rk.Log = func(s string) { gr.logf("%s", s) }
		gr.mu.Lock()
		gr.rekey = rk
		gr.mu.Unlock()
		copied.Add(1)
		go func() {
			defer copied.Done()
			for run.Err() == nil {
				if err := rk.Run(run); err != nil {
					gr.logf("repartition %s: %v; starting again in 1s", conn.Topic, errText(err))
					select {
					case <-run.Done():
					case <-time.After(time.Second):
					}
				}
			}
		}()
	}
	g := &kafka.Group{Config: conn, Group: k.Group, SessionTimeout: time.Duration(k.SessionTimeout) * time.Millisecond,
		Assigned: func(_ context.Context, ps []int32) {
			gr.logf("group %s: assigned %s", k.Group, partList(conn.Topic, ps))
			for _, p := range ps {
				gr.start(p)
			}
		},
		Revoked: func(_ context.Context, ps []int32) {
			gr.logf("group %s: revoked %s: stopping them at a checkpoint", k.Group, partList(conn.Topic, ps))
			gr.stop(ps)
		},
		Lost: func(_ context.Context, ps []int32) {
			gr.logf("group %s: lost %s (the session expired): stopping them; another instance owns them", k.Group, partList(conn.Topic, ps))
			gr.stop(ps)
		},
	}
	g.Log = func(s string) { gr.logf("%s", s) }
	for _, w := range j.Warnings() {
		gr.logf("warning: %s", w)
	}
	gr.mu.Lock()
	gr.g = g
	gr.mu.Unlock()
	if err := g.Join(); err != nil {
		return &RuntimeError{Msg: err.Error(), Err: err}
	}
	gr.logf("group %s: joined; %d partitions of %s, changelog %s", k.Group, len(parts), conn.Topic, k.Changelog)
	var ferr error
	select {
	case <-ctx.Done():
	case ferr = <-gr.failed:
	}
	gr.stop(gr.owned())
	g.Close()
	stop()
	gr.wg.Wait()
	return ferr
}

func partList(topic string, ps []int32) string {
	var b bytes.Buffer
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s/%d", topic, p)
	}
	return b.String()
}

func (gr *Group) owned() []int32 {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	var ps []int32
	for p := range gr.tasks {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// start starts the task of partition p, unless it runs.
func (gr *Group) start(p int32) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if _, ok := gr.tasks[p]; ok {
		return
	}
	ctx, cancel := context.WithCancel(gr.ctx)
	t := &task{p: p, cancel: cancel, done: make(chan struct{}), state: "restoring"}
	gr.tasks[p] = t
	gr.wg.Add(1)
	go func() {
		defer gr.wg.Done()
		defer close(t.done)
		gr.runTask(ctx, t)
	}()
}

// stop stops the tasks of ps and waits for them: each takes a savepoint,
// committed with its output, unless another instance fenced it already.
func (gr *Group) stop(ps []int32) {
	var wait []*task
	gr.mu.Lock()
	for _, p := range ps {
		if t, ok := gr.tasks[p]; ok {
			delete(gr.tasks, p)
			t.mu.Lock()
			t.state = "stopping"
			t.mu.Unlock()
			t.cancel()
			wait = append(wait, t)
		}
	}
	gr.mu.Unlock()
	budget := max(time.Duration(gr.j.Kafka.SessionTimeout)*time.Millisecond, StopBudget)
	timeout := time.After(budget)
	for len(wait) > 0 {
		select {
		case <-wait[0].done:
			wait = wait[1:]
			continue
		case <-timeout:
		}
		// The last checkpoints cannot be committed (a broker gone away):
		// the tasks resume from their last committed ones, wherever they
		// go, and what they wrote since is aborted.
		for _, t := range wait {
			gr.logf("%s/%d: no last checkpoint within %s: stopping at once; the partition resumes from its last committed checkpoint", gr.conn.Topic, t.p, budget)
			t.mu.Lock()
			rn := t.rn
			t.mu.Unlock()
			if rn != nil {
				rn.e.Abort(errors.New("the stop took too long"))
			}
		}
		for _, t := range wait {
			<-t.done
		}
		wait = nil
	}
}

// StopBudget is how long, at least, a group instance waits for a task to
// take its last checkpoint when it stops (or gives its partition away)
// before it stops it at once: the session timeout, if longer.
const StopBudget = 10 * time.Second

// runTask runs the task until ctx is done; a task that fails (fenced by
// another instance, a broker gone) starts again from its changelog.
func (gr *Group) runTask(ctx context.Context, t *task) {
	for attempt := 0; ; attempt++ {
		err := gr.runOnce(ctx, t)
		if ctx.Err() != nil {
			return
		}
		var fatal *taskFatal
		if errors.As(err, &fatal) {
			// Starting again would fail the same way: the instance stops.
			err = &RuntimeError{Msg: fmt.Sprintf("%s/%d: %s", gr.conn.Topic, t.p, errText(fatal.err)), Err: fatal.err}
			select {
			case gr.failed <- err:
			default:
			}
			return
		}
		wait := min(time.Second<<min(attempt, 4), 10*time.Second)
		if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
			// Another instance owns the partition now: starting again at
			// once would fence it back. The group says so within its
			// session timeout, and stops this task.
			wait = max(wait, time.Duration(gr.j.Kafka.SessionTimeout)*time.Millisecond)
		}
		t.mu.Lock()
		t.state, t.lastErr = "failed", errText(err)
		t.mu.Unlock()
		gr.logf("%s/%d: %v; starting it again from its changelog in %s", gr.conn.Topic, t.p, errText(err), wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// taskFatal is a task's failure that starting again cannot mend: a job file
// whose checkpoints do not fit (it changed what it computes), a changelog
// that does not read back.
type taskFatal struct{ err error }

func (e *taskFatal) Error() string { return e.err.Error() }

func (gr *Group) runOnce(ctx context.Context, t *task) error {
	j, k := gr.j, gr.j.Kafka
	t0 := time.Now()
	t.mu.Lock()
	t.state, t.rn, t.console = "restoring", nil, nil
	t.starts++
	t.mu.Unlock()
	timeout := DefaultGroupTransactionTimeout
	for _, o := range j.AllOutputs() {
		if o.Kafka != nil {
			timeout = max(timeout, o.Kafka.TransactionTimeout)
		}
	}
	txn := &kafka.Txn{Config: k.KafkaConn, TransactionalID: fmt.Sprintf("weir-%s-%s-%s-p%d", jobName(j), k.Group, k.Topic, t.p),
		TransactionTimeout: time.Duration(timeout) * time.Millisecond, Changelog: k.Changelog, Partition: t.p}
	defer txn.Close()
	// Fence first: once the producers of the task started, the previous
	// owner can commit nothing more, and its changelog is final.
	if err := txn.Start(ctx); err != nil {
		return err
	}
	r, err := kafka.ReadChangelog(ctx, k.KafkaConn, k.Changelog, t.p)
	if err != nil {
		if !connector.Retryable(err) && ctx.Err() == nil {
			return &taskFatal{err}
		}
		return err
	}
	dir := filepath.Join(gr.tmp, strconv.Itoa(int(t.p)))
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	res := TaskRestore{}
	if r != nil {
		st, err := checkpoint.Open(checkpoint.OSFS, dir, j.Checkpoint.Keep)
		if err != nil {
			return err
		}
		_, err = st.SaveFiles(r.Manifest, r.Files)
		st.Close()
		if err != nil {
			return err
		}
		res = TaskRestore{Checkpoint: r.Manifest.ID, Records: r.Records, Bytes: r.Bytes}
	}
	cl := &kafka.Changelog{Topic: k.Changelog, Partition: t.p}
	cl.Restored(r)
	tj, tk := *j, *k
	tj.Checkpoint.Dir, tj.Parallelism, tj.HTTP, tj.task = dir, 1, "", t.p+1
	// A checkpoint that fails stops the task: its output went into a
	// transaction no changelog joins, which must be aborted.
	tj.Checkpoint.TolerableFailures = 0
	if k.Repartition {
		tk.Topic, tk.Start = gr.conn.Topic, kafka.Start{}
	}
	tj.Kafka = &tk
	o := gr.o
	o.Log = &prefixLog{w: gr.o.Log, prefix: fmt.Sprintf("%s/%d: ", tk.Topic, t.p)}
	o.Progress, o.From = nil, ""
	route := &routeCheck{part: t.p, parts: int32(len(gr.parts)), part0: kgo.StickyKeyPartitioner(nil).ForTopic(tk.Topic)}
	// A task's last checkpoint has the group's budget to commit; the group
	// stops it at once after that (stop).
	o.stopWait = max(time.Duration(gr.j.Kafka.SessionTimeout)*time.Millisecond, StopBudget) + 5*time.Second
	o.task = &taskHooks{partition: t.p, route: route, txn: txn, publish: func(ctx context.Context, m checkpoint.Manifest, files []checkpoint.Input) error {
		recs, err := cl.Records(m, files, txn.Committed())
		if err != nil {
			return err
		}
		return txn.Publish(ctx, m.ID, recs)
	}}
	rn, err := Build(&tj, o)
	if err != nil {
		var se *engine.SetupError
		if errors.As(err, &se) {
			return &taskFatal{err}
		}
		return err
	}
	res.Millis = time.Since(t0).Milliseconds()
	if r != nil {
		res.Keys = rn.win.RestoredKeys()
	}
	var srv *console.Server
	if o.Console {
		srv = rn.Console()
		srv.Started, srv.CheckpointInterval = time.Now(), time.Duration(j.Checkpoint.Interval)*time.Millisecond
	}
	t.mu.Lock()
	t.state, t.rn, t.log, t.route, t.restored, t.lastErr, t.console = "running", rn, cl, route, res, "", srv
	t.mu.Unlock()
	if r != nil {
		gr.logf("%s/%d: restored checkpoint %d from %s (%d records, %d bytes) in %d ms", tk.Topic, t.p, res.Checkpoint, k.Changelog, res.Records, res.Bytes, res.Millis)
	}
	sum, err := rn.Run(ctx)
	if sum != nil && err == nil {
		// What the task did, as its checkpoints counted it (across the
		// instances that ran it).
		gr.logf("%s/%d: stopped at watermark %s: read %d: %d accepted, %d duplicates, %d too late, %d beyond the dedup horizon, %d quarantined; %d panes written",
			tk.Topic, t.p, sum.Watermark, sum.Read, sum.Accepted, sum.Duplicates, sum.TooLate, sum.BeyondDedupHorizon, sum.Quarantined, sum.PanesWritten)
	}
	return err
}

// RepartitionTopic is the topic a group job with source.kafka.repartition
// copies its input into: GROUP-repartition.
func RepartitionTopic(j *Job) string { return j.Kafka.Group + "-repartition" }

// jsonKey returns the key the job's decoder finds at path in a JSON value,
// as a producer keyed by it would write it: a string's bytes, or another
// scalar's canonical text; nil when the value has none.
func jsonKey(path Path) func([]byte) []byte {
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
		return appendCanonical(nil, v)
	}
}

// routeCheck watches, in a task, that the events' keys belong to the task's
// partition by Kafka's default partitioner: when they do not, the input is
// not keyed by the job's key, and a key's events are split between tasks
// (each computing windows of its own). It checks one event in 64.
type routeCheck struct {
	part, parts int32
	part0       kgo.TopicPartitioner
	n           int
	misrouted   atomic.Int64
	log         func(string)
	rec         kgo.Record
}

func (c *routeCheck) check(key string, offset int64) {
	if c.n++; c.n&63 != 1 {
		return
	}
	c.rec.Key = []byte(keyValue(key)) // as a producer keyed by it wrote it
	if p := int32(c.part0.Partition(&c.rec, int(c.parts))); p != c.part {
		if c.misrouted.Add(1) == 1 {
			c.log(fmt.Sprintf("warning: the event at offset %d has the key %s, which Kafka's default partitioner (murmur2) puts in partition %d, not %d: the input is not keyed by the job's key, so a key's events are split between tasks and each computes windows of its own; key the input by it, or set source.kafka.repartition: true", offset, key, p, c.part))
		}
	}
}

// prefixLog puts a task's name after "weir: " in each line it writes.
type prefixLog struct {
	w      io.Writer
	prefix string
}

func (l *prefixLog) Write(b []byte) (int, error) {
	if l.w == nil {
		return len(b), nil
	}
	if rest, ok := bytes.CutPrefix(b, []byte("weir: ")); ok {
		_, err := fmt.Fprintf(l.w, "weir: %s%s", l.prefix, rest)
		return len(b), err
	}
	return l.w.Write(b)
}

// GroupStatus is what an instance of a group job says of itself.
type GroupStatus = console.GroupStatus

// TaskStatus is one task of an instance.
type TaskStatus = console.TaskStatus

// TaskRestore is what a task read back from its changelog.
type TaskRestore = console.TaskRestore

// Console serves the instance's status and metrics.
func (gr *Group) Console() *console.GroupServer {
	j := gr.j
	info := console.JobInfo{Name: j.Name, File: j.File, Text: j.Text(), Warnings: j.shownAll(j.Warnings())}
	return &console.GroupServer{Job: info, Status: gr.Status, Task: gr.taskConsole, Redact: j.RedactJSON, Access: j.ConsoleAccess(),
		CheckpointInterval: time.Duration(j.Checkpoint.Interval) * time.Millisecond}
}

// taskConsole is the console of the task of partition p while it runs here.
func (gr *Group) taskConsole(p int32) *console.Server {
	gr.mu.Lock()
	t := gr.tasks[p]
	gr.mu.Unlock()
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != "running" {
		return nil
	}
	return t.console
}

// Status reports the instance's membership and its tasks.
func (gr *Group) Status(ctx context.Context) GroupStatus {
	k := gr.j.Kafka
	gr.mu.Lock()
	g, conn, nparts, rk := gr.g, gr.conn, len(gr.parts), gr.rekey
	gr.mu.Unlock()
	s := GroupStatus{Group: k.Group, Topic: conn.Topic, Changelog: k.Changelog, Partitions: nparts}
	if rk != nil {
		own, n := rk.Owned()
		s.Repartition = &console.RepartitionStatus{From: k.Topic, To: conn.Topic, Owned: own, Copied: n}
	}
	if g != nil {
		s.Member, s.Generation = g.Member()
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ms, err := g.Members(mctx)
		cancel()
		if err != nil {
			s.MembersErr = errText(err)
		}
		for _, m := range ms {
			s.Members = append(s.Members, console.GroupMember(m))
		}
	}
	gr.mu.Lock()
	tasks := make([]*task, 0, len(gr.tasks))
	for _, t := range gr.tasks {
		tasks = append(tasks, t)
	}
	gr.mu.Unlock()
	slices.SortFunc(tasks, func(a, b *task) int { return int(a.p - b.p) })
	for _, t := range tasks {
		t.mu.Lock()
		ts := TaskStatus{Partition: t.p, State: t.state, Starts: t.starts, Restored: t.restored, Err: t.lastErr}
		rn, log, route := t.rn, t.log, t.route
		t.mu.Unlock()
		if log != nil {
			ts.ChangelogWritten, ts.ChangelogReused = log.Written.Load(), log.Reused.Load()
		}
		if route != nil {
			ts.Misrouted = route.misrouted.Load()
		}
		if rn != nil {
			ts.Status = rn.e.Control().Status(ctx, time.Second)
		}
		s.Owned = append(s.Owned, t.p)
		s.Tasks = append(s.Tasks, ts)
	}
	return s
}
