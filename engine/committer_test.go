package engine_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/vfs"
)

// ackingLines is a source that acknowledges what it read only once a
// checkpoint holds it (connector.Committer), and whose origin lets it hold
// at most window records unacknowledged.
type ackingLines struct {
	lines
	window int
	mu     sync.Mutex
	acked  []int // the positions told committed, in order
}

func (s *ackingLines) Committed(pos []byte) {
	n, err := strconv.Atoi(string(pos))
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acked = append(s.acked, n)
}

func (s *ackingLines) Waiting() bool {
	s.mu.Lock()
	acked := 0
	if len(s.acked) > 0 {
		acked = s.acked[len(s.acked)-1]
	}
	s.mu.Unlock()
	s.lines.mu.Lock()
	defer s.lines.mu.Unlock()
	return s.next-acked >= s.window
}

func (s *ackingLines) Acked() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.acked...)
}

// A source that acknowledges what checkpoints hold is told each position
// once its checkpoint is durable, in order; one that waits for a
// checkpoint gets it at once, however long the interval.
func TestCommitterToldWhatCheckpointsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := vfs.NewCrashable()
		fs.MkdirAll("/ckpt")
		var log syncBuffer
		src := &ackingLines{lines: lines{more: make(chan struct{}, 1)}, window: 3}
		cfg := engine.Config{Name: "acks", Live: true, Log: &log, Checkpoint: engine.Checkpointing{Dir: "/ckpt", FS: fs, Interval: time.Hour, Delivery: connector.AtLeastOnce, DeliverySet: true}}
		e := build(t, cfg, src, &memSink{})
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		base := mtime.Now()
		src.add(fmt.Sprintf("a %d", base), fmt.Sprintf("a %d", base+1))
		time.Sleep(time.Second)
		synctest.Wait()
		if got := src.Acked(); len(got) != 0 {
			t.Fatalf("acknowledged %v with two records held and the window 3", got)
		}
		src.add(fmt.Sprintf("b %d", base+2))
		time.Sleep(time.Second)
		synctest.Wait()
		if got := src.Acked(); len(got) != 1 || got[0] != 3 {
			t.Fatalf("acknowledged %v once the window was full; want [3]\n%s", got, log.String())
		}
		src.add(fmt.Sprintf("c %d", base+3))
		time.Sleep(time.Second)
		synctest.Wait()
		if _, err := e.Control().Savepoint(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := src.Acked(); len(got) != 2 || got[1] != 4 {
			t.Fatalf("acknowledged %v after a savepoint; want [3 4]", got)
		}
		e.Control().Stop(context.Background(), true)
		<-done
	})
}
