package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/vfs"
	"github.com/weirstream/weir/window"
)

// holdingSink is an exactly-once sink that holds what it is written until
// the barrier, as a file or table output does, and notes the most it held.
type holdingSink struct {
	held       []byte
	mu         sync.Mutex
	out        bytes.Buffer
	most       int
	preCommits int
}

func (s *holdingSink) Open(context.Context, connector.Resume) error { return nil }
func (s *holdingSink) Write(_ context.Context, ps []window.Pane[string, int64]) error {
	for _, p := range ps {
		s.held = fmt.Appendf(s.held, "%s %d %d %s\n", p.Key, p.Window.Start, p.Value, p.Timing)
	}
	s.most = max(s.most, len(s.held))
	return nil
}
func (s *holdingSink) HeldBytes() int64            { return int64(len(s.held)) }
func (s *holdingSink) Flush(context.Context) error { return nil }
func (s *holdingSink) PreCommit(context.Context, uint64) ([]byte, error) {
	pre := s.held
	s.held = nil
	s.preCommits++
	return pre, nil
}
func (s *holdingSink) Commit(_ context.Context, _ uint64, pre []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.Write(pre)
	return nil
}
func (s *holdingSink) Guarantee() connector.Guarantee { return connector.ExactlyOnce }
func (s *holdingSink) Close() error                   { return nil }

// A sink that holds its output until the barrier never holds much more than
// Checkpointing.MaxHeld, however long the interval: a checkpoint is taken
// early each time it fills up, reading waits meanwhile, and the output is
// the same, byte for byte, as with no bound.
func TestHeldOutputBounded(t *testing.T) {
	run := func(maxHeld int64) (*holdingSink, string) {
		var sink holdingSink
		var log syncBuffer
		synctest.Test(t, func(t *testing.T) {
			fs := vfs.NewCrashable()
			fs.MkdirAll("/ckpt")
			cfg := engine.Config{Name: "held", Live: true, Log: &log, Checkpoint: engine.Checkpointing{Dir: "/ckpt", FS: fs, Interval: time.Hour, MaxHeld: maxHeld}}
			e := build(t, cfg, &chunked{n: 50_000}, &sink)
			if err := e.Run(context.Background()); err != nil {
				t.Fatalf("Run: %v\n%s", err, log.String())
			}
		})
		return &sink, log.String()
	}
	free, _ := run(-1)
	const bound = 16 << 10
	held, log := run(bound)
	if free.out.Len() < 800<<10 || free.most != free.out.Len() || free.preCommits != 1 {
		t.Fatalf("with no bound: %d bytes of output, %d held at most, %d pre-commits; want more than 800 KiB, all held, one pre-commit",
			free.out.Len(), free.most, free.preCommits)
	}
	if held.out.String() != free.out.String() {
		t.Errorf("the output differs with a bound (%d bytes, %d without)", held.out.Len(), free.out.Len())
	}
	if held.most > 2*bound || held.preCommits < free.out.Len()/(2*bound) {
		t.Errorf("with a bound of %d: %d held at most, %d pre-commits for %d bytes", bound, held.most, held.preCommits, held.out.Len())
	}
	if !strings.Contains(log, "checkpoint.max_held_output is 16.0 KiB: a checkpoint is taken now, and whenever it fills up again before the interval") {
		t.Errorf("log:\n%s", log)
	}
	t.Logf("%d bytes of output: %d held at most with a bound of %d, in %d pre-commits", held.out.Len(), held.most, bound, held.preCommits)
}
