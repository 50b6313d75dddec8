package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
)

// A commit that failed leaves its checkpoint uncommitted: the producer
// that would take the next-but-one checkpoint is not used again until a
// later checkpoint has really committed (a restore from the checkpoint
// before must still find its transaction as it was).
func TestSinkFailedCommitCountsForNothing(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(1, "alerts"))
	ctx := context.Background()
	s := strSink(c)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Write(ctx, []string{"p1"})
	pre1, _ := s.PreCommit(ctx, 1)
	if err := s.Commit(ctx, 1, pre1); err != nil {
		t.Fatal(err)
	}
	s.Write(ctx, []string{"p2"})
	pre2, _ := s.PreCommit(ctx, 2)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Commit(stopped, 2, pre2); err == nil {
		t.Fatal("a commit with a cancelled context succeeded")
	}
	s.Write(ctx, []string{"p3"})
	// Checkpoint 3's pre-commit would move on to the producer of
	// checkpoint 1: it must wait for checkpoint 2's commit.
	wait, cancelWait := context.WithTimeout(ctx, 2*time.Second)
	defer cancelWait()
	if _, err := s.PreCommit(wait, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("checkpoint 3 was pre-committed while checkpoint 2 was not committed (err %v)", err)
	}
	if err := s.Commit(ctx, 2, pre2); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "alerts"); strings.Join(got, " ") != "p1 p2" {
		t.Errorf("committed: %v", got)
	}
}

// A record of a transaction that failed to be produced cannot be mended by
// trying again: whatever the broker's error, the sink's next calls fail
// with an error that is not retried, so that the job stops and starts again
// from its last checkpoint instead of retrying for ever.
func TestSinkLostRecordIsPermanent(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(1, "alerts"))
	ctx := context.Background()
	s := strSink(c)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.promise(&kgo.Record{Topic: "alerts"}, kerr.NotEnoughReplicas)
	err := s.Write(ctx, []string{"p1"})
	if err == nil || connector.Retryable(err) || !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("Write after a lost record: %v (retryable %v)", err, connector.Retryable(err))
	}
}
