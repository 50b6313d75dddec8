package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
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

// Brokers that cannot say which producer holds a transaction open
// (ListTransactions came with Kafka 3.0): the next owner cannot fence it,
// says so once, and waits until the brokers time it out.
func TestWaitStableWithoutFencing(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(2, "log"), kfake.MaxVersions(kversion.V2_8_0()))
	ctx := context.Background()
	var log []string
	th := &Thread{Config: Config{Brokers: c.ListenAddrs(), Log: func(s string) { log = append(log, s) }},
		TransactionalID: "weir-test-t0", Group: &Group{Group: "g"}, Manual: []string{"log"}}
	if err := th.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	cl := client(t, c, kgo.TransactionalID("weir-test-dead"), kgo.TransactionTimeout(2*time.Second), kgo.RecordPartitioner(manualPartitioner{"log"}))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "log", Partition: 1, Key: []byte("m"), Value: []byte("{}")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := th.WaitStable(wctx, "log", 1, func(string) bool { return false }); err != nil {
		t.Fatalf("WaitStable: %v", err)
	}
	said := 0
	for _, l := range log {
		if strings.Contains(l, "cannot be fenced") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("said it cannot fence %d times; want once: %q", said, log)
	}
}
