package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/window"
)

// broker is what a transactional sink writes to, across runs: as Kafka does,
// starting a producer bumps its epoch and aborts what it left open, and a
// transaction is committed only by a producer of its epoch.
type broker struct {
	mu        sync.Mutex
	epoch     int
	committed map[string]bool
	txn       int
}

// fencingSink is a transactional sink on a broker. failCommits makes
// commits fail (a run that dies between its checkpoint and the commit).
type fencingSink struct {
	b           *broker
	failCommits bool
	started     bool
}

func (s *fencingSink) Open(context.Context, connector.Resume) error              { return nil }
func (s *fencingSink) Write(context.Context, []window.Pane[string, int64]) error { return nil }
func (s *fencingSink) Flush(context.Context) error                               { return nil }
func (s *fencingSink) PreCommit(context.Context, uint64) ([]byte, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.txn++
	return fmt.Appendf(nil, "%d/%d", s.b.txn, s.b.epoch), nil
}
func (s *fencingSink) Commit(_ context.Context, _ uint64, pre []byte) error {
	if s.failCommits {
		return connector.Permanent(errors.New("the process died"))
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	var txn, epoch int
	fmt.Sscanf(string(pre), "%d/%d", &txn, &epoch)
	if epoch != s.b.epoch {
		return connector.Permanent(fmt.Errorf("transaction %s: PRODUCER_FENCED", pre))
	}
	s.b.committed[string(pre)] = true
	return nil
}
func (s *fencingSink) Start(context.Context) error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.epoch++
	s.started = true
	return nil
}
func (s *fencingSink) Guarantee() connector.Guarantee { return connector.ExactlyOnce }
func (s *fencingSink) Close() error                   { return nil }

// A run resumes, commits what its checkpoint left pending, starts its sink
// (which fences the producer of that commit) and dies before its first
// checkpoint: the next run must not commit the same transaction again, which
// a fenced producer cannot. The restored checkpoint's commit is recorded
// before the sink starts.
func TestRecommittedBeforeTheSinkStarts(t *testing.T) {
	dir := t.TempDir()
	b := &broker{committed: map[string]bool{}}
	run := func(s *fencingSink, recs int, dies bool) (string, error) {
		log := &syncBuffer{}
		src := &lines{more: make(chan struct{}, 1)}
		for i := range recs {
			src.add(fmt.Sprintf("k%d %d", i%3, 1_780_000_000_000+i*400))
		}
		e := build(t, engine.Config{Name: "recommit", Checkpoint: engine.Checkpointing{Dir: dir, Interval: time.Hour, TolerableFailures: 5}, Log: log}, src, s)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		for e.Control().Status(context.Background(), time.Second).Counts.Read < int64(recs) {
			select {
			case err := <-done: // it could not start
				return log.String(), err
			case <-time.After(time.Millisecond):
			}
		}
		// A savepoint (whose commit fails when failCommits, and stays
		// pending in it), unless the run dies first; then a stop without
		// one.
		if !dies {
			e.Control().Savepoint(context.Background())
		}
		e.Control().Stop(context.Background(), true)
		err := <-done
		return log.String(), err
	}
	// 1: the savepoint is written, its commit does not happen.
	if log, _ := run(&fencingSink{b: b, failCommits: true}, 50, false); !strings.Contains(log, "the process died") {
		t.Fatalf("the first run's commit did not fail:\n%s", log)
	}
	// 2: resumes, commits it again, starts (the epoch moves on) and dies.
	s2 := &fencingSink{b: b}
	log2, err := run(s2, 50, true)
	if stopped(err) || !s2.started || len(b.committed) != 1 {
		t.Fatalf("the second run: %v, started %v, %d transactions committed\n%s", err, s2.started, len(b.committed), log2)
	}
	// 3: resumes from what the second run recorded, with nothing to commit.
	s3 := &fencingSink{b: b}
	log3, err := run(s3, 50, false)
	if stopped(err) || !s3.started || strings.Contains(log3, "FENCED") {
		t.Fatalf("the third run: %v, started %v\n%s", err, s3.started, log3)
	}
}

// stopped says whether err is something else than the stop before the end
// of the input that the test asked for.
func stopped(err error) bool {
	return err != nil && !strings.Contains(err.Error(), "stopped before the end of the input")
}

// syncBuffer is a log written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
