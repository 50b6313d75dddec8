// Package group runs a stream job as one instance of a Kafka consumer group:
// the group protocol gives each instance some of the input topic's
// partitions, and each partition is a task, with its own watermark, windows,
// timers and de-duplication ids, so that what comes out does not depend on
// which instance runs it or how many there are.
//
// What belongs here is the distribution: joining the group, starting and
// stopping a partition's task as it is assigned and revoked, fencing the
// previous owner, restoring the task's last committed checkpoint from its
// partition of the changelog topic, publishing each checkpoint there in the
// transaction that holds the task's output, the group's watermark that a
// task whose partition is idle follows (ShareWatermarks), and the
// instance's status. What
// a task computes does not: a Config's Task function builds it (package job
// from a job file, or a weir.Pipeline with weir.InGroup), and the engine
// runs it. The Kafka clients themselves are in connector/kafka.
package group

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
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/console"
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
	// TransactionalID names the tasks' transactional producers: a task's
	// are TransactionalID-GROUP-TOPIC-pN, the same on every instance, so
	// that a new owner fences the old one.
	TransactionalID string
	// TransactionTimeout is the brokers' timeout of a task's transactions.
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

// A Runner can also say how many keys it restored (RestoredKeys() int64)
// and serve a console of its own (Console() *console.Server): the
// instance's status and console show them.
type (
	keysRestorer interface{ RestoredKeys() int64 }
	consoler     interface{ Console() *console.Server }
)

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
	// Txn is the task's transactional producers: each of its Kafka sinks
	// writes through it, so that one transaction per checkpoint holds the
	// task's output, its state and its input position.
	Txn *kafka.Txn
	// Log takes the task's log lines, with its name after "weir: ".
	Log io.Writer
	// StopWait is how long the task's last checkpoint has to commit when
	// it stops: the instance stops it at once after that.
	StopWait time.Duration
	// Route checks that the task's events belong to its partition.
	Route *Route
	// CommitOffsets commits offsets of the task's input as the group's
	// (kafka.Source.Commit: those of each committed checkpoint), so that
	// Kafka's tools show the group's lag as they do any consumer group's.
	// It is nil when the task reads the repartition topic: the group's
	// offsets are those of the input, which the instances copy.
	CommitOffsets func(ctx context.Context, offsets map[int32]int64) error
	// GroupWatermark, with Config.ShareWatermarks, is given the task's
	// watermark and whether its partition is idle, as often as the task
	// likes (its source's reports), and returns the group's watermark
	// (mtime.MinTime: none yet), which the task's watermark follows while
	// its partition is idle (engine.HeadConfig.GroupWatermark). Nil
	// without ShareWatermarks.
	// A job file's task uses it; a weir.Pipeline in a group does not yet.
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
	return t.Txn.Publish(ctx, m.ID, recs)
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
	rn       Runner
	console  *console.Server // the task's console, when it serves one
	log      *kafka.Changelog
	route    *Route
	restored console.TaskRestore
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
	parts, err := kafka.Partitions(ctx, c.Conn, c.Conn.Topic)
	if err != nil {
		return err
	}
	if c.Repartition != nil {
		// The tasks are the partitions of the topic the instances copy the
		// input into: created with the input's count, it keeps it when
		// partitions are added to the input.
		if rp, err := kafka.Partitions(ctx, c.Conn, RepartitionTopic(c.Group)); err == nil {
			parts = rp
		}
	} else if cp, err := kafka.Partitions(ctx, c.Conn, c.Changelog); err == nil && len(cp) < len(parts) {
		return grownInput(c.Conn.Topic, "when the group started (its changelog "+c.Changelog+" has as many)", len(cp))
	}
	gr.mu.Lock()
	gr.parts = parts
	gr.mu.Unlock()
	if err := kafka.EnsureChangelog(ctx, c.Conn, c.Changelog, int32(len(parts))); err != nil {
		return err
	}
	// The tasks read the input, or the repartition topic the instances copy
	// it into, keyed by the job's key.
	conn := c.Conn
	if c.Repartition != nil {
		conn.Topic = RepartitionTopic(c.Group)
		if err := kafka.EnsureTopic(ctx, conn, conn.Topic, int32(len(parts)), nil); err != nil {
			return err
		}
	}
	gr.mu.Lock()
	gr.conn = conn
	gr.mu.Unlock()
	// The instance's own clients beside its tasks', each with goroutines
	// that stop before it is closed.
	bctx, stopBackground := context.WithCancel(context.Background())
	var background sync.WaitGroup
	var closers []func()
	defer func() {
		stopBackground()
		background.Wait()
		for _, c := range closers {
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
	if c.ShareWatermarks {
		wc := c.Conn
		wc.Topic = WatermarksTopic(c.Group)
		w := &kafka.Watermarks{Config: wc}
		if err := w.Open(ctx); err != nil {
			return err
		}
		closers = append(closers, w.Close)
		wms := newShared(int32(len(parts)))
		gr.mu.Lock()
		gr.wms = wms
		gr.mu.Unlock()
		goBackground(func(ctx context.Context) { wms.exchange(ctx, w) })
		gr.logf("group %s: a task whose partition is idle follows the group's watermark (the tasks share theirs in %s)", c.Group, wc.Topic)
	}
	if c.Standby {
		sc := c.Conn
		sc.Topic = c.Changelog
		sb := &kafka.Standby{Config: sc}
		closers = append(closers, sb.Close)
		gr.mu.Lock()
		gr.sb = sb
		gr.mu.Unlock()
		goBackground(func(ctx context.Context) { sb.Poll(ctx) })
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
		rk := &kafka.Rekey{Config: c.Conn, Group: conn.Topic, To: conn.Topic, Start: c.Start,
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
	g := &kafka.Group{Config: conn, Group: c.Group, SessionTimeout: c.SessionTimeout,
		Assigned: func(_ context.Context, ps []int32) {
			gr.logf("group %s: assigned %s", c.Group, partList(conn.Topic, ps))
			for _, p := range ps {
				gr.start(p)
			}
		},
		Revoked: func(_ context.Context, ps []int32) {
			gr.logf("group %s: revoked %s: stopping them at a checkpoint", c.Group, partList(conn.Topic, ps))
			gr.stop(ps)
		},
		Lost: func(_ context.Context, ps []int32) {
			gr.logf("group %s: lost %s (the session expired): stopping them; another instance owns them", c.Group, partList(conn.Topic, ps))
			gr.stop(ps)
		},
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
	t := &task{p: p, cancel: cancel, done: make(chan struct{}), state: "restoring"}
	gr.tasks[p] = t
	gr.wg.Add(1)
	go func() {
		defer gr.wg.Done()
		defer close(t.done)
		gr.runTask(ctx, t)
		if gr.wms != nil {
			gr.wms.drop(p)
		}
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
	t.state, t.rn, t.console = "restoring", nil, nil
	t.starts++
	t.mu.Unlock()
	txn := &kafka.Txn{Config: c.Conn, TransactionalID: fmt.Sprintf("%s-%s-%s-p%d", c.TransactionalID, c.Group, c.Conn.Topic, t.p),
		TransactionTimeout: c.TransactionTimeout, Changelog: c.Changelog, Partition: t.p}
	defer txn.Close()
	// Fence first: once the producers of the task started, the previous
	// owner can commit nothing more, and its changelog is final.
	if err := txn.Start(ctx); err != nil {
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
	r, err := kafka.ReadChangelogFrom(ctx, c.Conn, c.Changelog, warm)
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
	res := console.TaskRestore{}
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
		res = console.TaskRestore{Checkpoint: r.Manifest.ID, Records: r.Records, Bytes: r.Bytes, Standby: r.Warm}
	}
	cl := &kafka.Changelog{Topic: c.Changelog, Partition: t.p}
	cl.Restored(r)
	topic := gr.conn.Topic
	tk := &Task{Partition: t.p, Partitions: int32(len(gr.parts)), Topic: topic, Dir: dir, FS: vfs.Scratch, Restored: r != nil, Txn: txn,
		Log: &prefixLog{w: c.Log, prefix: fmt.Sprintf("%s/%d: ", topic, t.p)},
		// A task's last checkpoint has the group's budget to commit; the
		// group stops it at once after that (stop).
		StopWait: gr.stopBudget() + 5*time.Second,
		log:      cl}
	tk.Route = newRoute(tk)
	if c.Repartition == nil {
		tk.CommitOffsets = func(ctx context.Context, offsets map[int32]int64) error {
			gr.mu.Lock()
			g := gr.g
			gr.mu.Unlock()
			return g.CommitOffsets(ctx, offsets)
		}
	}
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
	var srv *console.Server
	if cs, ok := rn.(consoler); ok {
		srv = cs.Console()
	}
	t.mu.Lock()
	t.state, t.rn, t.log, t.route, t.restored, t.lastErr, t.console = "running", rn, cl, tk.Route, res, "", srv
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

// TaskConsole is the console of the task of partition p while it runs
// here, or nil.
func (gr *Instance) TaskConsole(p int32) *console.Server {
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
func (gr *Instance) Status(ctx context.Context) console.GroupStatus {
	c := gr.c
	gr.mu.Lock()
	g, conn, nparts, rk, wms, sb := gr.g, gr.conn, len(gr.parts), gr.rekey, gr.wms, gr.sb
	gr.mu.Unlock()
	s := console.GroupStatus{Group: c.Group, Topic: conn.Topic, Changelog: c.Changelog, Partitions: nparts}
	if sb != nil {
		s.Standby = sb.Kept()
	}
	if rk != nil {
		own, n := rk.Owned()
		s.Repartition = &console.RepartitionStatus{From: c.Conn.Topic, To: conn.Topic, Owned: own, Copied: n}
	}
	if w := wms; w != nil {
		s.Watermarks = WatermarksTopic(c.Group)
		if f := w.group(); f != mtime.MinTime {
			s.GroupWatermark = &f
		}
	}
	if g != nil {
		s.Member, s.Generation = g.Member()
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ms, err := g.Members(mctx)
		cancel()
		if err != nil {
			s.MembersErr = text.ErrorText(err)
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
		ts := console.TaskStatus{Partition: t.p, State: t.state, Starts: t.starts, Restored: t.restored, Err: t.lastErr}
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
	}
	return s
}
