// Package group runs a stream job as one instance of a Kafka consumer group:
// the group protocol gives each instance some of the input topic's
// partitions, and each partition is a task, with its own watermark, windows,
// timers and de-duplication ids, so that what comes out does not depend on
// which instance runs it or how many there are.
//
// What belongs here is the distribution: joining the group, the
// instance's threads (each one Kafka client that its tasks share, as Kafka
// Streams' exactly-once v2 does), starting a partition's task on the thread
// with the fewest as it is assigned and stopping it as it is revoked,
// waiting for (or fencing) what the previous owner left open, restoring the
// task's last committed checkpoint from its partition of the changelog
// topic, publishing each checkpoint there in the transaction of its thread
// that holds the task's output, the group's watermark that a task whose
// partition is idle follows (ShareWatermarks), and the instance's status.
// What a task computes does not: a Config's Task function builds it
// (package job from a job file, or a weir.Pipeline with weir.InGroup), and
// the engine runs it. The Kafka clients themselves, and the rules of their
// transactions, are in connector/kafka (Thread).
package group

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/vfs"
)

// Config is one instance of a group job.
type Config struct {
	// Conn reaches the brokers; its Topic is the input topic.
	Conn kafka.Config
	// Group is the consumer group's id, and Changelog the compacted topic
	// of the tasks' checkpoints (one partition per input partition: it is
	// created so, and one of another count is refused).
	Group, Changelog string
	// Repartition, when set, finds the key of an input record's value: the
	// instances copy the input, keyed by it, into RepartitionTopic(Group)
	// (starting at Start), and the tasks read that topic instead.
	Repartition func(value []byte) []byte
	Start       kafka.Start
	// ShareWatermarks, when set, has the tasks share their watermarks
	// through WatermarksTopic(Group), so that a task whose partition is
	// idle follows the group's watermark: the minimum over the tasks whose
	// partitions are not idle (Task.GroupWatermark).
	ShareWatermarks bool
	// Standby, when set, has each instance keep read the changelog of the
	// tasks of the member after it in the group (by member id), so that
	// taking one of them over reads only what the changelog got since
	// (kafka.Standby).
	Standby bool
	// SessionTimeout is the group's session timeout (default 45s).
	SessionTimeout time.Duration
	// Threads is how many threads the instance's tasks share (default: as
	// many as the Go scheduler has cores, GOMAXPROCS): each is one Kafka
	// client (kafka.Thread) that reads the input of its tasks and commits
	// their checkpoints, a transaction at a time.
	Threads int
	// TransactionalID names the threads' transactional producers:
	// TransactionalID-GROUP-TOPIC-ID-tN, ID this instance's own.
	TransactionalID string
	// TransactionTimeout is the brokers' timeout of a thread's
	// transactions.
	TransactionTimeout time.Duration
	// Log takes the instance's log lines ("weir: ..."), each task's with
	// its name after "weir: ".
	Log io.Writer
	// Task builds the run of one partition. An error that starting again
	// cannot mend (a setup the checkpoint refuses) is wrapped in Fatal, or
	// is an *engine.SetupError: it stops the instance.
	Task func(ctx context.Context, t *Task) (Runner, error)
}

// Runner is a task's run, as Config.Task built it.
type Runner interface {
	// Run runs the task until its input ends or ctx is done; then it takes
	// a last checkpoint (a savepoint) before it returns.
	Run(ctx context.Context) error
	// Abort stops the task at once, without a last checkpoint: it resumes
	// from its last committed one.
	Abort(err error)
	// Status reports the running task, waiting at most timeout.
	Status(ctx context.Context, timeout time.Duration) engine.Status
}

// A Runner can also say how many keys it restored (RestoredKeys() int64):
// the instance's status shows it.
type keysRestorer interface{ RestoredKeys() int64 }

// Task is one partition's run on this instance, as Config.Task builds it.
type Task struct {
	// Partition is the task's partition of Topic, which has Partitions.
	Partition, Partitions int32
	// Topic is what the task reads: the input topic, or the repartition
	// topic (then from its start).
	Topic string
	// Dir holds the task's last committed checkpoint, read back from the
	// changelog, when Restored: the task checkpoints into it and resumes
	// from it. FS is Dir's file system: its contents are rebuilt from the
	// changelog whenever the task starts, so nothing in it is synced.
	Dir      string
	FS       checkpoint.FS
	Restored bool
	// Txn is the task's part of its thread's transactions: its Kafka
	// source reads through it and its Kafka sinks write through it
	// (kafka.Source's and kafka.Sink's Txn), so that one transaction holds
	// a checkpoint's output, its state and its input position, whose
	// offset becomes the group's committed offset, for Kafka's lag tools.
	Txn *kafka.Txn
	// Log takes the task's log lines, with its name after "weir: ".
	Log io.Writer
	// StopWait is how long the task's last checkpoint has to commit when
	// it stops: the instance stops it at once after that.
	StopWait time.Duration
	// Route checks that the task's events belong to its partition.
	Route *Route
	// GroupWatermark, with Config.ShareWatermarks, is given the task's
	// watermark and whether its partition is idle, as often as the task
	// likes (its source's reports), and returns the group's watermark
	// (mtime.MinTime: none yet), which the task's watermark follows while
	// its partition is idle (engine.HeadConfig.GroupWatermark). Nil
	// without ShareWatermarks.
	// A job file's task and a weir.Pipeline with weir.InGroup use it.
	GroupWatermark func(own mtime.Time, idle bool) mtime.Time

	log *kafka.Changelog
}

// Publish adds the checkpoint m to the task's partition of the changelog,
// in the transaction that commits it: the engine's
// Checkpointing.Publish. A task checkpoints with it, and only with the
// sinks' commits (no tolerable failures): a checkpoint that fails leaves
// its output in a transaction no changelog joins, which is aborted.
func (t *Task) Publish(ctx context.Context, m checkpoint.Manifest, files []checkpoint.Input) error {
	recs, err := t.log.Records(m, files, t.Txn.Committed())
	if err != nil {
		return err
	}
	// The input's offset, which the thread's transaction commits as the
	// group's: in the checkpoint's position of the task's Kafka source.
	offset := int64(-1)
	for _, f := range engine.SourceFiles(m, files) {
		if off, ok := kafka.PositionOffset(f.Data, t.Partition); ok {
			offset = off
		}
	}
	return t.Txn.Publish(ctx, m.ID, recs, offset)
}

// RepartitionTopic is the topic a group with Repartition copies its input
// into: GROUP-repartition.
func RepartitionTopic(group string) string { return group + "-repartition" }

// StopBudget is how long, at least, an instance waits for a task to take
// its last checkpoint when it stops (or gives its partition away) before it
// stops it at once: the session timeout, if longer.
const StopBudget = 10 * time.Second

// DefaultSessionTimeout is the group's session timeout when the Config
// gives none.
const DefaultSessionTimeout = 45 * time.Second

// Fatal marks a task's error that starting it again cannot mend: it stops
// the instance.
func Fatal(err error) error { return &fatal{err} }

type fatal struct{ err error }

func (e *fatal) Error() string { return e.err.Error() }
func (e *fatal) Unwrap() error { return e.err }

// taskError is a task's error that stopped the instance, named by the
// task's partition.
type taskError struct {
	msg string
	err error
}

func (e *taskError) Error() string { return e.msg }
func (e *taskError) Unwrap() error { return e.err }

// Instance is one instance of a group job.
type Instance struct {
	c     Config
	g     *kafka.Group
	rekey *kafka.Rekey
	conn  kafka.Config // the tasks' topic
	tmp   string
	parts []int32
	wms   *shared // with ShareWatermarks
	sb    *kafka.Standby
	// threads are the instance's threads, and ids their transactional
	// ids; hosted says how many tasks each hosts.
	threads []*kafka.Thread
	ids     []string
	hosted  []int

	ctx    context.Context
	mu     sync.Mutex
	tasks  map[int32]*task
	wg     sync.WaitGroup
	failed chan error
}

// task is one partition's run in this instance.
type task struct {
	p      int32
	thread int // its thread's index
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	state    string // restoring, running, stopping, failed
	rn       Runner
	log      *kafka.Changelog
	route    *Route
	restored TaskRestore
	starts   int
	lastErr  string
}

// New prepares an instance; Run runs it.
func New(c Config) (*Instance, error) {
	if c.Group == "" || c.Changelog == "" || c.Conn.Topic == "" {
		return nil, errors.New("group: a group needs a topic, a group id and a changelog topic")
	}
	if c.Task == nil {
		return nil, errors.New("group: a group needs a Task function")
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.Threads <= 0 {
		c.Threads = runtime.GOMAXPROCS(0)
	}
	return &Instance{c: c, tasks: map[int32]*task{}, failed: make(chan error, 1)}, nil
}

func (gr *Instance) logf(format string, args ...any) {
	if gr.c.Log != nil {
		fmt.Fprintf(gr.c.Log, "weir: "+format+"\n", args...)
	}
}

// Run joins the group and runs the tasks of the partitions this instance is
// given until ctx is cancelled: then every task takes a last checkpoint,
// and the instance leaves the group. It returns the error of a task that
// starting again cannot mend, or of the group itself.
func (gr *Instance) Run(ctx context.Context) error {
	c := gr.c
	// The tasks read the input, or the repartition topic the instances copy
	// it into, keyed by the job's key.
	conn := c.Conn
	if c.Repartition != nil {
		conn.Topic = RepartitionTopic(c.Group)
	}
	// The instance's clients, each with goroutines that stop before it is
	// closed: the member, whose generation fences the threads'
	// transactions, and the threads, one client each, which the tasks
	// share and through which the instance asks what it asks the brokers.
	bctx, stopBackground := context.WithCancel(context.Background())
	var background sync.WaitGroup
	var closers []func()
	defer func() {
		stopBackground()
		background.Wait()
		for _, c := range slices.Backward(closers) {
			c()
		}
	}()
	goBackground := func(f func(context.Context)) {
		background.Add(1)
		go func() {
			defer background.Done()
			f(bctx)
		}()
	}
	g := &kafka.Group{Config: conn, Group: c.Group, SessionTimeout: c.SessionTimeout}
	g.Config.ClientID = clientID(c.Conn.ClientID, "group")
	instance := instanceID()
	for i := range c.Threads {
		tc := c.Conn
		tc.ClientID = clientID(c.Conn.ClientID, fmt.Sprintf("t%d", i))
		th := &kafka.Thread{Config: tc, TransactionalID: fmt.Sprintf("%s-%s-%s-%s-t%d", c.TransactionalID, c.Group, conn.Topic, instance, i),
			TransactionTimeout: c.TransactionTimeout, Group: g, Manual: []string{c.Changelog, WatermarksTopic(c.Group)}}
		th.Log = func(s string) { gr.logf("%s", s) }
		if err := th.Start(ctx); err != nil {
			return err
		}
		closers = append(closers, th.Close)
		gr.mu.Lock()
		gr.threads, gr.ids, gr.hosted = append(gr.threads, th), append(gr.ids, th.TransactionalID), append(gr.hosted, 0)
		gr.mu.Unlock()
	}
	adm := gr.threads[0].Admin()
	parts, err := kafka.PartitionsWith(ctx, adm, c.Conn.Topic)
	if err != nil {
		return err
	}
	if c.Repartition != nil {
		// The tasks are the partitions of the topic the instances copy the
		// input into: created with the input's count, it keeps it when
		// partitions are added to the input.
		n, err := kafka.CreateTopicWith(ctx, adm, conn.Topic, int32(len(parts)), nil)
		if err != nil {
			return err
		}
		parts = make([]int32, n)
		for i := range parts {
			parts[i] = int32(i)
		}
	}
	switch n, err := kafka.CreateChangelogWith(ctx, adm, c.Changelog, int32(len(parts))); {
	case err != nil:
		return err
	case int(n) < len(parts) && c.Repartition == nil:
		return grownInput(c.Conn.Topic, "when the group started (its changelog "+c.Changelog+" has as many)", int(n))
	case int(n) != len(parts):
		return connector.Permanent(fmt.Errorf("the changelog %s has %d partitions; the job needs %d, one a partition of %s (delete it, or name another)", c.Changelog, n, len(parts), conn.Topic))
	}
	gr.mu.Lock()
	gr.parts = parts
	gr.mu.Unlock()
	gr.mu.Lock()
	gr.conn = conn
	gr.mu.Unlock()
	if c.ShareWatermarks {
		wc := c.Conn
		wc.Topic = WatermarksTopic(c.Group)
		wms := newShared(int32(len(parts)))
		w := &kafka.Watermarks{Config: wc, Thread: gr.threads[0]}
		if err := w.Open(ctx, wms.heard); err != nil {
			return err
		}
		closers = append(closers, w.Close)
		for _, th := range gr.threads {
			th.Extra = func(ps []int32) []*kgo.Record { return w.Records(wms.of(ps)) }
		}
		gr.mu.Lock()
		gr.wms = wms
		gr.mu.Unlock()
		gr.logf("group %s: a task whose partition is idle follows the group's watermark (the tasks share theirs in %s)", c.Group, wc.Topic)
	}
	if c.Standby {
		sb := &kafka.Standby{Thread: gr.threads[len(gr.threads)-1], Topic: c.Changelog}
		closers = append(closers, sb.Close)
		gr.mu.Lock()
		gr.sb = sb
		gr.mu.Unlock()
		goBackground(func(ctx context.Context) { gr.keepStandbys(ctx, sb) })
	}
	if gr.tmp, err = vfs.MkdirScratch("", "weir-tasks-"); err != nil {
		return fmt.Errorf("cannot create the tasks' directory: %w", err)
	}
	defer vfs.RemoveScratch(gr.tmp)
	run, stop := context.WithCancel(context.Background())
	var copied sync.WaitGroup
	defer func() {
		stop()
		copied.Wait()
	}()
	gr.ctx = run
	if c.Repartition != nil {
		rc := c.Conn
		rc.ClientID = clientID(c.Conn.ClientID, "repartition")
		rk := &kafka.Rekey{Config: rc, Group: conn.Topic, To: conn.Topic, Start: c.Start,
			Key: c.Repartition, SessionTimeout: c.SessionTimeout}
		rk.Log = func(s string) { gr.logf("%s", s) }
		gr.mu.Lock()
		gr.rekey = rk
		gr.mu.Unlock()
		copied.Add(1)
		go func() {
			defer copied.Done()
			for run.Err() == nil {
				if err := rk.Run(run); err != nil {
					gr.logf("repartition %s: %v; starting again in 1s", conn.Topic, text.ErrorText(err))
					select {
					case <-run.Done():
					case <-time.After(time.Second):
					}
				}
			}
		}()
	}
	g.Assigned = func(_ context.Context, ps []int32) {
		gr.logf("group %s: assigned %s", c.Group, partList(conn.Topic, ps))
		for _, p := range ps {
			gr.start(p)
		}
	}
	g.Revoked = func(_ context.Context, ps []int32) {
		gr.logf("group %s: revoked %s: stopping them at a checkpoint", c.Group, partList(conn.Topic, ps))
		gr.stop(ps)
		// This instance stays a member: its transactions would still
		// commit (the coordinator checks the member, not what it owns). A
		// partition goes to another only once none of them can commit
		// a checkpoint of its task.
		gr.settle(ps)
	}
	g.Lost = func(_ context.Context, ps []int32) {
		gr.logf("group %s: lost %s (the session expired): stopping them; another instance owns them", c.Group, partList(conn.Topic, ps))
		gr.stop(ps)
	}
	g.Log = func(s string) { gr.logf("%s", s) }
	gr.mu.Lock()
	gr.g = g
	gr.mu.Unlock()
	if err := g.Join(); err != nil {
		return err
	}
	gr.logf("group %s: joined; %d partitions of %s, changelog %s", c.Group, len(parts), conn.Topic, c.Changelog)
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

func (gr *Instance) owned() []int32 {
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
func (gr *Instance) start(p int32) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if _, ok := gr.tasks[p]; ok {
		return
	}
	ctx, cancel := context.WithCancel(gr.ctx)
	// The thread that hosts the fewest tasks hosts it.
	th := 0
	for i, n := range gr.hosted {
		if n < gr.hosted[th] {
			th = i
		}
	}
	gr.hosted[th]++
	t := &task{p: p, thread: th, cancel: cancel, done: make(chan struct{}), state: "restoring"}
	gr.tasks[p] = t
	gr.wg.Add(1)
	go func() {
		defer gr.wg.Done()
		defer close(t.done)
		gr.runTask(ctx, t)
		if gr.wms != nil {
			gr.wms.drop(p)
		}
		gr.mu.Lock()
		gr.hosted[t.thread]--
		gr.mu.Unlock()
	}()
}

// stopBudget is how long a stopping task has for its last checkpoint.
func (gr *Instance) stopBudget() time.Duration { return max(gr.c.SessionTimeout, StopBudget) }

// stop stops the tasks of ps and waits for them: each takes a savepoint,
// committed with its output, unless another instance fenced it already.
func (gr *Instance) stop(ps []int32) {
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
	budget := gr.stopBudget()
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
				rn.Abort(errors.New("the stop took too long"))
			}
		}
		for _, t := range wait {
			<-t.done
		}
		wait = nil
	}
}

// settle returns once no transaction of the instance's threads can commit
// a checkpoint of the tasks of ps: those under way are decided, within the
// stop budget, or else aborted (the thread's producer is made again, which
// fences them).
func (gr *Instance) settle(ps []int32) {
	gr.mu.Lock()
	threads, topic := slices.Clone(gr.threads), gr.conn.Topic
	gr.mu.Unlock()
	budget := gr.stopBudget()
	for _, th := range threads {
		for _, p := range ps {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			err := th.Settle(ctx, topic, p)
			cancel()
			if err == nil {
				continue
			}
			gr.logf("%s/%d: a transaction of %s holding its task's checkpoint is not decided within %s: aborting it", topic, p, th.TransactionalID, budget)
			ctx, cancel = context.WithTimeout(context.Background(), budget)
			if err := th.Abort(ctx); err == nil {
				err = th.Settle(ctx, topic, p)
			}
			cancel()
		}
	}
}

// grownInput is the refusal of an input that has more partitions than it
// had then: the input's partitions place each key by their count
// (murmur2), so that more of them move keys to other tasks than their
// state's, whose windows and de-duplication would split. Only a group that
// copies its input (Repartition) keeps its tasks' count.
func grownInput(topic, then string, had int) error {
	return fmt.Errorf("%s has more partitions than the %d it had %s: a key's events would go to another task than its state; read it with source.kafka.repartition: true, which copies it keyed into a topic of the group's own and takes added partitions in, or start a new group (a new group id and changelog)", topic, had, then)
}

// runTask runs the task until ctx is done; a task that fails (fenced by
// another instance, a broker gone) starts again from its changelog.
func (gr *Instance) runTask(ctx context.Context, t *task) {
	for attempt := 0; ; attempt++ {
		err := gr.runOnce(ctx, t)
		if ctx.Err() != nil {
			return
		}
		var ft *fatal
		var se *engine.SetupError
		if errors.As(err, &ft) || errors.As(err, &se) {
			// Starting again would fail the same way: the instance stops.
			if ft != nil {
				err = ft.err
			}
			select {
			case gr.failed <- &taskError{msg: fmt.Sprintf("%s/%d: %s", gr.conn.Topic, t.p, text.ErrorText(err)), err: err}:
			default:
			}
			return
		}
		wait := min(time.Second<<min(attempt, 4), 10*time.Second)
		if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
			// Another instance owns the partition now: starting again at
			// once would fence it back. The group says so within its
			// session timeout, and stops this task.
			wait = max(wait, gr.c.SessionTimeout)
		}
		t.mu.Lock()
		t.state, t.lastErr = "failed", text.ErrorText(err)
		t.mu.Unlock()
		gr.logf("%s/%d: %v; starting it again from its changelog in %s", gr.conn.Topic, t.p, text.ErrorText(err), wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (gr *Instance) runOnce(ctx context.Context, t *task) error {
	c := gr.c
	gr.mu.Lock()
	nparts := len(gr.parts)
	gr.mu.Unlock()
	if int(t.p) >= nparts {
		return Fatal(grownInput(c.Conn.Topic, "when the instance started", nparts))
	}
	t0 := time.Now()
	t.mu.Lock()
	t.state, t.rn = "restoring", nil
	t.starts++
	t.mu.Unlock()
	gr.mu.Lock()
	th, ids, topic := gr.threads[t.thread], gr.ids, gr.conn.Topic
	gr.mu.Unlock()
	// A checkpoint of an earlier run of the task here that a thread's
	// transaction holds is decided first.
	gr.mu.Lock()
	threads := slices.Clone(gr.threads)
	gr.mu.Unlock()
	for _, th := range threads {
		if err := th.Settle(ctx, topic, t.p); err != nil {
			return err
		}
	}
	txn := th.Txn(topic, t.p)
	// Whatever ends the run, a checkpoint of it not in a transaction yet
	// never will be.
	defer txn.Close()
	// What a previous owner left open is decided first (fenced, if it is
	// a dead or partitioned instance's): then the changelog holds all it
	// will of the previous owner.
	if err := th.WaitStable(ctx, c.Changelog, t.p, func(id string) bool { return slices.Contains(ids, id) }); err != nil {
		return err
	}
	// What this instance read as the task's standby, if it was: only what
	// came since is read.
	warm := kafka.NewChangelogReader(t.p)
	if gr.sb != nil {
		if w := gr.sb.Take(t.p); w != nil {
			warm = w
		}
	}
	r, err := th.ReadChangelog(ctx, c.Changelog, warm)
	if err != nil {
		if !connector.Retryable(err) && ctx.Err() == nil {
			return Fatal(err)
		}
		return err
	}
	dir := filepath.Join(gr.tmp, strconv.Itoa(int(t.p)))
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	res := TaskRestore{}
	if r != nil {
		st, err := checkpoint.Open(vfs.Scratch, dir, 0)
		if err != nil {
			return err
		}
		_, err = st.SaveFiles(r.Manifest, r.Files)
		st.Close()
		if err != nil {
			return err
		}
		res = TaskRestore{Checkpoint: r.Manifest.ID, Records: r.Records, Bytes: r.Bytes, Standby: r.Warm}
	}
	cl := &kafka.Changelog{Topic: c.Changelog, Partition: t.p}
	cl.Restored(r)
	tk := &Task{Partition: t.p, Partitions: int32(len(gr.parts)), Topic: topic, Dir: dir, FS: vfs.Scratch, Restored: r != nil, Txn: txn,
		Log: &prefixLog{w: c.Log, prefix: fmt.Sprintf("%s/%d: ", topic, t.p)},
		// A task's last checkpoint has the group's budget to commit; the
		// group stops it at once after that (stop).
		StopWait: gr.stopBudget() + 5*time.Second,
		log:      cl}
	tk.Route = newRoute(tk)
	if w := gr.wms; w != nil {
		p := t.p
		tk.GroupWatermark = func(own mtime.Time, idle bool) mtime.Time { return w.report(p, own, idle) }
	}
	rn, err := c.Task(ctx, tk)
	if err != nil {
		return err
	}
	res.Millis = time.Since(t0).Milliseconds()
	if kr, ok := rn.(keysRestorer); ok && r != nil {
		res.Keys = kr.RestoredKeys()
	}
	t.mu.Lock()
	t.state, t.rn, t.log, t.route, t.restored, t.lastErr = "running", rn, cl, tk.Route, res, ""
	t.mu.Unlock()
	if r != nil {
		warm := ""
		if res.Standby > 0 {
			warm = fmt.Sprintf(", after %d read as its standby", res.Standby)
		}
		gr.logf("%s/%d: restored checkpoint %d from %s (%d records, %d bytes%s) in %d ms", topic, t.p, res.Checkpoint, c.Changelog, res.Records, res.Bytes, warm, res.Millis)
	}
	return rn.Run(ctx)
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

// Running is the run of the task of partition p while it runs here, as
// Config.Task built it, or nil: a front door serves its console.
func (gr *Instance) Running(p int32) Runner {
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
	return t.rn
}

// Status reports the instance's membership and its tasks.
func (gr *Instance) Status(ctx context.Context) GroupStatus {
	c := gr.c
	gr.mu.Lock()
	g, conn, nparts, rk, wms, sb := gr.g, gr.conn, len(gr.parts), gr.rekey, gr.wms, gr.sb
	gr.mu.Unlock()
	s := GroupStatus{Group: c.Group, Topic: conn.Topic, Changelog: c.Changelog, Partitions: nparts}
	if sb != nil {
		s.Standby = sb.Kept()
	}
	gr.mu.Lock()
	threads := slices.Clone(gr.threads)
	gr.mu.Unlock()
	for _, th := range threads {
		ts := ThreadStatus{TransactionalID: th.TransactionalID, Tasks: []int32{}, Unreachable: th.Down()}
		ts.Committed, ts.Aborted, ts.LastErr = th.Stats()
		s.Threads = append(s.Threads, ts)
	}
	if rk != nil {
		own, n := rk.Owned()
		s.Repartition = &RepartitionStatus{From: c.Conn.Topic, To: conn.Topic, Owned: own, Copied: n}
	}
	if w := wms; w != nil {
		s.Watermarks = WatermarksTopic(c.Group)
		if f := w.group(); f != mtime.MinTime {
			s.GroupWatermark = &f
		}
	}
	if g != nil {
		s.Member, s.Generation = g.Member()
		s.Unreachable = g.Down()
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ms, err := g.Members(mctx)
		cancel()
		if err != nil {
			s.MembersErr = text.ErrorText(err)
		}
		for _, m := range ms {
			s.Members = append(s.Members, GroupMember(m))
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
			ts.Status = rn.Status(ctx, time.Second)
		}
		s.Owned = append(s.Owned, t.p)
		s.Tasks = append(s.Tasks, ts)
		if t.thread < len(s.Threads) {
			s.Threads[t.thread].Tasks = append(s.Threads[t.thread].Tasks, t.p)
		}
	}
	return s
}

// instanceID names this instance among the group's in its threads'
// transactional ids: random, so that no two instances share one.
func instanceID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// clientID is the client id of one of the instance's clients: the one
// configured (default weir-HOST-PID) with the client's role after it, as
// Kafka Streams names its threads' clients, so that the brokers' view of
// connections tells the clients apart.
func clientID(configured, role string) string {
	if configured == "" {
		configured = kafka.DefaultClientID()
	}
	return configured + "-" + role
}
