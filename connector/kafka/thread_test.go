package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A thread's transaction that does not end (its commit held up) keeps a
// task's checkpoint undecided: Settle waits for it, and Abort makes the
// thread's producer again, which aborts it: the checkpoint fails, nothing
// of it is visible, and the thread commits the next one.
func TestThreadAbortsATransactionThatDoesNotEnd(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(2, "log"), kfake.SeedTopics(1, "alerts"))
	ctx := context.Background()
	th := startThread(t, c, "weir-test-t0")
	// The first commit is held until the test lets it go.
	release := make(chan struct{})
	held := make(chan struct{})
	first := true
	c.ControlKey(int16(kmsg.EndTxn), func(r kmsg.Request) (kmsg.Response, error, bool) {
		if req := r.(*kmsg.EndTxnRequest); first && req.TransactionalID == "weir-test-t0" && req.Commit {
			first = false
			close(held)
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false // then handled as usual
	})
	txn := th.Txn("orders", 1)
	rec := func(v string) []*kgo.Record {
		return []*kgo.Record{{Topic: "alerts", Value: []byte(v)}, {Topic: "log", Partition: 1, Key: []byte("m"), Value: []byte(v)}}
	}
	done := make(chan error, 1)
	go func() { done <- txn.Publish(ctx, 1, rec("one"), -1) }()
	<-held
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := th.Settle(sctx, "orders", 1)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Settle with the commit held: %v; want it to wait", err)
	}
	if err := th.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err == nil {
		t.Fatal("the checkpoint whose transaction was aborted committed")
	}
	if err := th.Settle(ctx, "orders", 1); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "alerts"); len(got) != 0 {
		t.Fatalf("visible: %q", got)
	}
	// The thread goes on with its new producer.
	next := th.Txn("orders", 1)
	if err := next.Publish(ctx, 2, rec("two"), -1); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "alerts"); len(got) != 1 || got[0] != "two" {
		t.Fatalf("visible: %q; want two", got)
	}
}
