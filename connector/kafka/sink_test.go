package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// Retention that overtakes the reader while it runs is a gap too: an error
// that names the records, or, with SkipGaps, a jump to the first record
// there is, counted in the batch's Lost.
func TestSourceGapWhileReading(t *testing.T) {
	for _, skip := range []bool{false, true} {
		c := cluster(t, kfake.SeedTopics(1, "orders"))
		cl := client(t, c)
		s := &Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders"}, SkipGaps: skip}
		if err := s.Open(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		var b connector.Batch
		if err := s.Read(context.Background(), &b); err != nil { // the partitions
			t.Fatal(err)
		}
		s.Pause([]int{0})
		produce(t, cl, "orders", 0, "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 7})
		if _, err := kadm.NewClient(cl).DeleteRecords(context.Background(), offs); err != nil {
			t.Fatal(err)
		}
		s.Resume([]int{0})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var got []string
		var lost int64
		var err error
		for err == nil && (len(got) == 0 || got[len(got)-1] != "9") {
			b.Reset()
			err = s.Read(ctx, &b)
			lost += b.Lost
			for _, r := range b.Records {
				got = append(got, string(r.Value))
			}
		}
		cancel()
		s.Close()
		// A fetch under way when the partition was paused may have brought
		// the first records; the gap starts after what was read.
		before := 0
		for before < len(got) && got[before] != "7" {
			before++
		}
		gap := fmt.Sprintf("kafka orders/0: records %d to 6 were deleted (retention) before weir read them", before)
		switch {
		case !skip && (err == nil || !strings.Contains(err.Error(), gap)):
			t.Errorf("without skipping: %v, read %v", err, got)
		case skip && (err != nil || strings.Join(got[before:], " ") != "7 8 9" || lost != int64(7-before)):
			t.Errorf("skipping: %v, read %v, lost %d", err, got, lost)
		}
	}
}

// A record larger than the topic takes is refused, never produced (the
// broker's refusal would lose the whole transaction), and the others are
// committed.
func TestSinkRefusesRecordsTooLarge(t *testing.T) {
	c := cluster(t)
	cl := client(t, c)
	max := "5000"
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, map[string]*string{"max.message.bytes": &max}, "alerts"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := strSink(c)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err := s.Write(ctx, []string{"p1", strings.Repeat("x", 6000), "p2"})
	var re *connector.RefusedError
	if !errors.As(err, &re) || len(re.Items) != 1 || re.Items[0].Index != 1 || !strings.Contains(err.Error(), "a record of 6128 bytes, larger than the topic takes (5000)") {
		t.Fatalf("write: %v", err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, pre); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "alerts"); strings.Join(got, " ") != "p1 p2" {
		t.Errorf("committed: %v", got)
	}
}

// A compacted topic refuses records without a key (INVALID_RECORD), which
// would lose the whole transaction: the sink refuses them itself.
func TestSinkRefusesKeylessRecordsOfACompactedTopic(t *testing.T) {
	c := cluster(t)
	cl := client(t, c)
	compact := "compact"
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, map[string]*string{"cleanup.policy": &compact}, "alerts"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := strSink(c)
	s.Encode = func(v string) ([]byte, []byte) {
		if v == "nokey" {
			return nil, []byte(v)
		}
		return []byte("k-" + v), []byte(v)
	}
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err := s.Write(ctx, []string{"p1", "nokey", "p2"})
	var re *connector.RefusedError
	if !errors.As(err, &re) || len(re.Items) != 1 || re.Items[0].Index != 1 || !strings.Contains(err.Error(), "a record without a key, which a compacted topic does not take") {
		t.Fatalf("write: %v", err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, pre); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "alerts"); strings.Join(got, " ") != "p1 p2" {
		t.Errorf("committed: %v", got)
	}
}

// A broker that closes every connection at once (restarting) fails the
// start of a transactional producer with an error that is retried, not
// one that stops the job: the job waits for the broker as it does for one
// that refuses connections.
func TestProducerStartRetriesABrokerClosingConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cfg := Config{Brokers: []string{ln.Addr().String()}, Topic: "alerts"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = cfg.startProducer(ctx, "weir-test-closing", time.Minute)
	if err == nil || !connector.Retryable(err) {
		t.Fatalf("starting a producer on a broker closing connections: %v (retryable %v), want a retryable error", err, connector.Retryable(err))
	}
}

// A topic of revised panes is read as a table: a sink with create makes a
// missing one compacted (and a topic of events, one with the brokers'
// policy); without create, a missing topic is refused with the way out;
// an existing topic of revised panes that is not compacted is warned of.
func TestSinkCreatesCompactedTopicsOfRevisions(t *testing.T) {
	ctx := context.Background()
	c := cluster(t)
	adm := kadm.NewClient(client(t, c))
	policy := func(topic string) string {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cf := range rc.Configs {
			if cf.Key == "cleanup.policy" && cf.Value != nil {
				return *cf.Value
			}
		}
		return ""
	}
	open := func(topic string, create, revisions bool) (string, error) {
		var log strings.Builder
		s := strSink(c)
		s.Topic, s.Create, s.Revisions = topic, create, revisions
		s.Log = func(l string) { log.WriteString(l + "\n") }
		err := s.Open(ctx, connector.Resume{})
		if err == nil {
			s.Close()
		}
		return log.String(), err
	}
	if _, err := open("alerts", false, true); err == nil || err.Error() != "topic alerts does not exist (create: true creates it)" || connector.Retryable(err) {
		t.Errorf("without create: %v", err)
	}
	log, err := open("alerts", true, true)
	if err != nil || log != "kafka alerts: created the topic, compacted: the last revision of each key and window is kept\n" || policy("alerts") != "compact" {
		t.Errorf("created: %v, policy %q, log:\n%s", err, policy("alerts"), log)
	}
	if log, err := open("alerts", true, true); err != nil || log != "" {
		t.Errorf("opened again: %v, log:\n%s", err, log)
	}
	if log, err := open("late", true, false); err != nil || log != "kafka late: created the topic\n" || policy("late") == "compact" {
		t.Errorf("a topic of events: %v, policy %q, log:\n%s", err, policy("late"), log)
	}
	log, err = open("late", true, true)
	if err != nil || !strings.HasPrefix(log, "kafka late: warning: the topic gets a window's panes again as they are revised (keyed by key and window), and it is not compacted") {
		t.Errorf("revisions into a topic not compacted: %v, log:\n%s", err, log)
	}
}
