package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/vfs"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// lines is a source of "key event-time arrival" records held in memory; it
// blocks at its end while more may come (live), or ends there.
type lines struct {
	mu      sync.Mutex
	recs    []string
	next    int
	bounded bool
	more    chan struct{}
}

func (s *lines) add(r ...string) {
	s.mu.Lock()
	s.recs = append(s.recs, r...)
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *lines) Open(ctx context.Context, pos []byte) error {
	if len(pos) > 0 {
		s.next, _ = strconv.Atoi(string(pos))
	}
	return nil
}

func (s *lines) Read(ctx context.Context, b *connector.Batch) error {
	for {
		s.mu.Lock()
		if s.next == 0 && b.Partitions == nil {
			b.Partitions = []connector.Partition{{Name: "mem"}}
		}
		for s.next < len(s.recs) {
			b.Records = append(b.Records, connector.Record{Value: []byte(s.recs[s.next]), Offset: int64(s.next + 1), Arrival: mtime.MinTime})
			s.next++
		}
		b.Position = []byte(strconv.Itoa(s.next))
		n, bounded := len(b.Records), s.bounded
		s.mu.Unlock()
		if n > 0 {
			return nil
		}
		if bounded {
			return io.EOF
		}
		select {
		case <-s.more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *lines) Close() error { return nil }

type decoder struct{}

func (decoder) Decode(r *connector.Record, d *engine.Decoded[string, int]) {
	f := strings.Fields(string(r.Value))
	if len(f) < 2 {
		d.Kind, d.Reason = engine.Rejected, "bad"
		return
	}
	ts, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		d.Kind, d.Reason = engine.Rejected, "bad_time"
		return
	}
	if len(f) > 2 {
		at, _ := strconv.ParseInt(f[2], 10, 64)
		d.Arrival = mtime.Time(at)
	}
	d.Kind, d.Key, d.Time, d.Value = engine.Event, f[0], mtime.Time(ts), 1
}

// blockingSink is a sink that never finishes a write until its context is
// cancelled: a database that hangs.
type blockingSink struct{ started chan struct{} }

func (s *blockingSink) Open(context.Context, connector.Resume) error { return nil }
func (s *blockingSink) Write(ctx context.Context, _ []window.Pane[string, int64]) error {
	close(s.started)
	<-ctx.Done()
	return ctx.Err()
}
func (s *blockingSink) Flush(context.Context) error                       { return nil }
func (s *blockingSink) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }
func (s *blockingSink) Commit(context.Context, uint64, []byte) error      { return nil }
func (s *blockingSink) Guarantee() connector.Guarantee                    { return connector.AtLeastOnce }
func (s *blockingSink) Close() error                                      { return nil }

type memSink struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (s *memSink) Open(context.Context, connector.Resume) error { return nil }
func (s *memSink) Write(_ context.Context, ps []window.Pane[string, int64]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		fmt.Fprintf(&s.out, "%s %d %d %s\n", p.Key, p.Window.Start, p.Value, p.Timing)
	}
	return nil
}
func (s *memSink) Flush(context.Context) error                       { return nil }
func (s *memSink) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }
func (s *memSink) Commit(context.Context, uint64, []byte) error      { return nil }
func (s *memSink) Guarantee() connector.Guarantee                    { return connector.AtLeastOnce }
func (s *memSink) Close() error                                      { return nil }
func (s *memSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

type countCodec struct{}

func (countCodec) AppendKey(b []byte, k string) []byte { return enc.AppendString(b, k) }
func (countCodec) ReadKey(d *enc.Decoder) string       { return d.String() }
func (countCodec) AppendAcc(b []byte, a int64) []byte  { return enc.AppendVarint(b, a) }
func (countCodec) ReadAcc(d *enc.Decoder) int64        { return d.Varint() }
func (countCodec) AppendOut(b []byte, o int64) []byte  { return enc.AppendVarint(b, o) }
func (countCodec) ReadOut(d *enc.Decoder) int64        { return d.Varint() }

// countWindow adds a window stage that counts per key in tumbling windows
// of a second, on parallelism instances.
func countWindow(t *testing.T, e *engine.Engine, parallelism int) *engine.Window[string, int, int64, int64] {
	t.Helper()
	w, err := engine.NewWindow(e, engine.WindowConfig[string, int, int64, int64]{
		Name: "window", Strategy: window.NewStrategy(window.TumblingWindows(time.Second)),
		Watermark: watermark.BoundedOutOfOrderness(0), Agg: aggregate.Count[int](), Parallelism: parallelism,
		Hash: func(s string) uint64 { return uint64(len(s)) }, Codec: countCodec{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// build makes a live keyed job: source → head → tumbling count → sink.
func build(t *testing.T, cfg engine.Config, src connector.Source, sink connector.Sink[window.Pane[string, int64]]) *engine.Engine {
	t.Helper()
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := countWindow(t, e, 2)
	n, err := engine.NewSink(e, "output", sink)
	if err != nil {
		t.Fatal(err)
	}
	w.Panes.Subscribe(n)
	h, err := engine.NewHead(e, engine.HeadConfig[string, int]{Name: "head", Decoder: decoder{}, Window: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AddSource("mem", src, h); err != nil {
		t.Fatal(err)
	}
	e.OnSignal(h)
	return e
}

// A stop takes effect within the grace period even when a sink hangs: the
// stage is aborted, the sink's call returns with its context cancelled.
func TestStopWithAHangingSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lines{more: make(chan struct{}, 1)}
		sink := &blockingSink{started: make(chan struct{})}
		var log bytes.Buffer
		e := build(t, engine.Config{Name: "hang", Live: true, Log: &log}, src, sink)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		base := mtime.Now()
		src.add(fmt.Sprintf("a %d", base), fmt.Sprintf("a %d", base+5000))
		<-sink.started
		start := time.Now()
		if _, err := e.Control().Stop(context.Background(), false); !errors.Is(err, context.Canceled) && err != nil {
			t.Logf("stop: %v", err)
		}
		err := <-done
		if waited := time.Since(start); waited > 1100*time.Millisecond {
			t.Errorf("the stop took %s", waited)
		}
		if err == nil || !errors.Is(err, engine.ErrStopped) && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		if !strings.Contains(log.String(), "did not reach a consistent point within 1s of the stop") {
			t.Errorf("log: %s", log.String())
		}
	})
}

// Status reports the partitions, the counts and the sinks of a running job;
// a live job's panes come out with no further input.
func TestStatusOfALiveJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lines{more: make(chan struct{}, 1)}
		sink := &memSink{}
		e := build(t, engine.Config{Name: "live", Live: true}, src, sink)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		base := mtime.Now()
		src.add(fmt.Sprintf("a %d", base+10), fmt.Sprintf("b %d", base+20), "garbage", fmt.Sprintf("a %d", base+1500))
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		st := e.Control().Status(context.Background(), time.Second)
		if st.Counts.Read != 4 || st.Counts.Quarantined != 1 || st.Counts.QuarantineReasons["bad"] != 1 {
			t.Errorf("counts %+v", st.Counts)
		}
		if len(st.Partitions) != 1 || st.Partitions[0].Name != "mem" || st.Partitions[0].MaxEventTime != base+1500 || st.Watermark != base+1499 {
			t.Errorf("partitions %+v, watermark %s", st.Partitions, st.Watermark)
		}
		want := fmt.Sprintf("a %d 1 ON_TIME\nb %d 1 ON_TIME\n", base-base%1000, base-base%1000)
		if got := sink.String(); got != want {
			t.Errorf("panes %q, want %q", got, want)
		}
		if len(st.Sinks) != 1 || st.Sinks[0].Written != 2 {
			t.Errorf("sinks %+v", st.Sinks)
		}
		e.Control().Stop(context.Background(), true)
		<-done
	})
}

// failingSink fails its third write.
type failingSink struct {
	memSink
	n int
}

func (s *failingSink) Write(ctx context.Context, ps []window.Pane[string, int64]) error {
	if s.n++; s.n == 3 {
		return errors.New("the disk is gone")
	}
	return s.memSink.Write(ctx, ps)
}

// A sink that fails stops the job with its error, at once: nothing waits for
// a savepoint that cannot come.
func TestFailingSinkStopsTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lines{more: make(chan struct{}, 1)}
		e := build(t, engine.Config{Name: "fail", Live: true, Checkpoint: engine.Checkpointing{Dir: t.TempDir(), Interval: 50 * time.Millisecond, Keep: 2, Delivery: connector.AtLeastOnce, DeliverySet: true}}, src, &failingSink{})
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		base := mtime.Now()
		for i := range 5 {
			src.add(fmt.Sprintf("k%d %d", i, base+mtime.Time(i)*1000))
			time.Sleep(1100 * time.Millisecond)
		}
		err := <-done
		var ce *connector.Error
		if !errors.As(err, &ce) || ce.Connector != "output" || ce.Op != "write" || !strings.Contains(err.Error(), "the disk is gone") {
			t.Errorf("Run: %v", err)
		}
	})
}

// downSink is a sink whose every write fails as a database that is down
// does: a retryable error.
type downSink struct{ memSink }

func (s *downSink) Write(context.Context, []window.Pane[string, int64]) error {
	return connector.Transient(errors.New("connection refused"))
}

// A stop takes effect after the input has ended too: the job is writing its
// last panes to a sink that is down, and retries; cancelling Run's context
// stops it (the next run resumes from the last checkpoint) instead of
// retrying for ever.
func TestStopAfterTheEndOfInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lines{more: make(chan struct{}, 1), bounded: true}
		src.add("a 1000", "b 2000", "a 9000")
		var log syncBuffer
		e := build(t, engine.Config{Name: "down", Log: &log}, src, &downSink{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		for !strings.Contains(log.String(), "retrying in") {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, engine.ErrStopped) {
				t.Errorf("Run: %v\n%s", err, log.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("the job did not stop a minute after its context was cancelled:\n%s", log.String())
		}
	})
}

// lateSink is a sink whose database is not up for its first opens.
type lateSink struct {
	memSink
	fails int
}

func (s *lateSink) Open(context.Context, connector.Resume) error {
	if s.fails > 0 {
		s.fails--
		return connector.Transient(errors.New("connection refused"))
	}
	return nil
}

// A sink whose database is down when the job starts is waited for, as its
// writes are: its Open is retried with backoff.
func TestSinkOpenRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lines{more: make(chan struct{}, 1), bounded: true}
		src.add("a 1000", "a 9000")
		var log syncBuffer
		sink := &lateSink{fails: 3}
		e := build(t, engine.Config{Name: "late", Log: &log}, src, sink)
		if err := e.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v\n%s", err, log.String())
		}
		if !strings.Contains(log.String(), "output open: connection refused; retrying in") || !strings.Contains(log.String(), "output open: succeeded after 3 retries") || sink.String() == "" {
			t.Errorf("log:\n%s\noutput: %q", log.String(), sink.String())
		}
	})
}

// lateSource is a source whose broker is not up for its first opens.
type lateSource struct {
	lines
	fails int
}

func (s *lateSource) Open(ctx context.Context, pos []byte) error {
	if s.fails > 0 {
		s.fails--
		return connector.Transient(errors.New("unable to dial: connection refused"))
	}
	return s.lines.Open(ctx, pos)
}

// A source whose broker is down or restarting when the job starts is
// waited for, as a sink's database is: its Open is retried with backoff
// rather than failing the job; what no retry mends still fails it at once.
func TestSourceOpenRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lateSource{lines: lines{more: make(chan struct{}, 1), bounded: true}, fails: 3}
		src.add("a 1000", "a 9000")
		var log syncBuffer
		sink := &memSink{}
		e := build(t, engine.Config{Name: "late", Log: &log}, src, sink)
		if err := e.Run(context.Background()); err != nil {
			t.Fatalf("Run: %v\n%s", err, log.String())
		}
		if !strings.Contains(log.String(), "mem open: unable to dial: connection refused; retrying in") || !strings.Contains(log.String(), "mem open: succeeded after 3 retries") || sink.String() == "" {
			t.Errorf("log:\n%s\noutput: %q", log.String(), sink.String())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		src := &permanentSource{}
		var log syncBuffer
		e := build(t, engine.Config{Name: "gone", Log: &log}, src, &memSink{})
		err := e.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "topic orders does not exist") || src.opens != 1 {
			t.Errorf("Run: %v after %d opens\n%s", err, src.opens, log.String())
		}
	})
}

// permanentSource is a source whose topic does not exist.
type permanentSource struct {
	lines
	opens int
}

func (s *permanentSource) Open(context.Context, []byte) error {
	s.opens++
	return connector.Permanent(errors.New("topic orders does not exist"))
}

// chunked is a bounded source of n records, ten a batch every 10 ms, that
// counts its reads.
type chunked struct {
	n, next int
	reads   atomic.Int64
}

func (s *chunked) Open(ctx context.Context, pos []byte) error {
	if len(pos) > 0 {
		s.next, _ = strconv.Atoi(string(pos))
	}
	return nil
}

func (s *chunked) Read(ctx context.Context, b *connector.Batch) error {
	s.reads.Add(1)
	time.Sleep(10 * time.Millisecond) // records come in time
	if s.next == 0 && b.Partitions == nil {
		b.Partitions = []connector.Partition{{Name: "mem"}}
	}
	for i := 0; i < 10 && s.next < s.n; i++ {
		b.Records = append(b.Records, connector.Record{Value: []byte(fmt.Sprintf("k%d %d", s.next%7, 1_780_000_000_000+s.next*100)), Offset: int64(s.next + 1), Arrival: mtime.MinTime})
		s.next++
	}
	b.Position = []byte(strconv.Itoa(s.next))
	if s.next >= s.n {
		return io.EOF
	}
	return nil
}

func (s *chunked) Close() error { return nil }

// flakySink is an exactly-once sink whose commits fail, as a database that
// is down does, while down is set.
type flakySink struct {
	memSink
	down atomic.Bool
}

func (s *flakySink) Commit(context.Context, uint64, []byte) error {
	if s.down.Load() {
		return connector.Transient(errors.New("connection refused"))
	}
	return nil
}
func (s *flakySink) Guarantee() connector.Guarantee { return connector.ExactlyOnce }

// While a sink cannot commit, nothing more is read (backpressure): what
// waits for the commit stays as it is, however long the outage; the status
// says why. Once the commits go through, the job goes on and ends.
func TestBackpressureWhileCommitsStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &chunked{n: 5000}
		sink := &flakySink{}
		sink.down.Store(true)
		var log syncBuffer
		fs := vfs.NewCrashable() // checkpoints in memory
		fs.MkdirAll("/ckpt")
		cfg := engine.Config{Name: "bp", Log: &log, Checkpoint: engine.Checkpointing{Dir: "/ckpt", FS: fs, Interval: 20 * time.Millisecond, TolerableFailures: 1000}}
		e := build(t, cfg, src, sink)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		for !strings.Contains(log.String(), "reading is paused until it can") {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		paused := src.reads.Load()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := src.reads.Load(); n != paused || paused >= 500 {
			t.Errorf("reads while the sink was down: %d after a minute, %d ten minutes later", paused, n)
		}
		if st := e.Control().Status(context.Background(), time.Second); !strings.Contains(st.Backpressure, "output cannot commit (connection refused): reading is paused") {
			t.Errorf("status: %q", st.Backpressure)
		}
		sink.down.Store(false)
		if err := <-done; err != nil {
			t.Fatalf("Run: %v\n%s", err, log.String())
		}
		if src.next != 5000 || !strings.Contains(log.String(), "the commits go through again: reading goes on") {
			t.Errorf("read %d of 5000\n%s", src.next, log.String())
		}
	})
}

// stuckSink's Write does not return, whatever its context, until release is
// closed: a write to a full disk that hangs in the kernel.
type stuckSink struct {
	blockingSink
	release chan struct{}
}

func (s *stuckSink) Write(ctx context.Context, _ []window.Pane[string, int64]) error {
	close(s.started)
	<-s.release
	return nil
}

// A job that fails stops within StopWait even when a stage is stuck where
// no abort reaches it: the stage is left behind, and the log says so.
func TestFailureWithAStageThatDoesNotReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lines{more: make(chan struct{}, 1)}
		sink := &stuckSink{blockingSink{started: make(chan struct{})}, make(chan struct{})}
		defer close(sink.release)
		var log bytes.Buffer
		e := build(t, engine.Config{Name: "stuck", Live: true, Log: &log, StopWait: 3 * time.Second}, src, sink)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		base := mtime.Now()
		src.add(fmt.Sprintf("a %d", base), fmt.Sprintf("a %d", base+5000))
		<-sink.started
		start := time.Now()
		e.Abort(errors.New("the state disk is full"))
		err := <-done
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("the job stopped %s after the failure, want StopWait (3s)", waited)
		}
		if err == nil || err.Error() != "the state disk is full" {
			t.Errorf("Run: %v", err)
		}
		if !strings.Contains(log.String(), "a stage did not stop within 3s of being aborted") {
			t.Errorf("log: %s", log.String())
		}
	})
}

// threeQuiet is a source of three partitions that never get a record.
type threeQuiet struct{ said bool }

func (s *threeQuiet) Open(context.Context, []byte) error { return nil }
func (s *threeQuiet) Read(ctx context.Context, b *connector.Batch) error {
	if !s.said {
		s.said = true
		b.Partitions = []connector.Partition{{Name: "orders/0"}, {Name: "orders/1"}, {Name: "orders/2"}}
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}
func (s *threeQuiet) Close() error { return nil }

// The status shows every partition of the source from the start, before
// any has had a record: each inactive, holding nothing back.
func TestStatusShowsPartitionsThatNeverHadARecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := build(t, engine.Config{Name: "quiet", Live: true}, &threeQuiet{}, &memSink{})
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		st := e.Control().Status(context.Background(), time.Second)
		var got []string
		for _, p := range st.Partitions {
			got = append(got, fmt.Sprintf("%s %s %v %v", p.Name, p.Diagnosis, p.Watermark == mtime.MinTime, p.HoldsBack))
		}
		if want := "orders/0 inactive true false,orders/1 inactive true false,orders/2 inactive true false"; strings.Join(got, ",") != want {
			t.Errorf("partitions %q, want %q", strings.Join(got, ","), want)
		}
		e.Control().Stop(context.Background(), true)
		<-done
	})
}

// A job whose input has ended says so: its partitions are finished, not
// active, and its watermark (at the end of time) is behind processing time
// by nothing, never by a negative number.
func TestStatusOfAFinishedJob(t *testing.T) {
	src := &lines{bounded: true, more: make(chan struct{}, 1)}
	src.add("a 1000 2000", "b 61000 62000")
	e := build(t, engine.Config{Name: "done"}, src, &memSink{})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := e.StatusAfterRun()
	if len(st.Partitions) != 1 || st.Partitions[0].Diagnosis != engine.DiagFinished || st.WatermarkGap != 0 || st.Watermark != mtime.MaxTime {
		t.Errorf("partitions %+v, watermark %s, gap %d", st.Partitions, st.Watermark, st.WatermarkGap)
	}
}

// A status asked before the source loop has answered once (a console's
// first sample, taken as the job starts) says the job has no processing
// time and no watermark yet, not 1970-01-01: the console drew its charts'
// time axes from 1970 to now.
func TestStatusBeforeTheLoopAnswers(t *testing.T) {
	e, err := engine.New(engine.Config{Name: "early", Live: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Discard()
	st := e.Control().Status(context.Background(), time.Millisecond)
	if st.ProcessingTime != mtime.MinTime || st.Watermark != mtime.MinTime || st.Job != "early" || !st.Live || !st.Stale {
		t.Fatalf("%+v", st)
	}
}

// A state database's error that says the disk is full gets the hint of
// how to go on, in the front door's words; another gets none.
func TestStateHint(t *testing.T) {
	full := fmt.Errorf("pebble: flush: %w", &os.PathError{Op: "write", Path: "/s/000001.sst", Err: syscall.ENOSPC})
	if got, want := engine.StateHint(full, "state.dir"), " (the disk is full: free room there, or set state.dir on a larger disk; the job resumes from its last checkpoint)"; got != want {
		t.Errorf("StateHint(ENOSPC) = %q, want %q", got, want)
	}
	if got := engine.StateHint(errors.New("pebble: corrupt"), "state.dir"); got != "" {
		t.Errorf("StateHint(another error) = %q, want none", got)
	}
}
