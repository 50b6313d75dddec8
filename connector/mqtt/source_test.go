package mqtt_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/mqtt"
	"github.com/weirstream/weir/internal/mqtttest"
	"github.com/weirstream/weir/plan"
)

// syncLog takes the source's log lines, from its goroutines.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s + "\n")
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startBroker(t *testing.T) *mqtttest.Broker { return mqtttest.StartT(t, 0) }

func open(t *testing.T, b *mqtttest.Broker, pos []byte, logs *syncLog) *mqtt.Source {
	t.Helper()
	cfg, err := mqtt.Parse(plan.Values{"broker": b.Addr, "topics": []string{"t/#"}, "client_id": "src-test", "max_backoff": 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	src, err := cfg.New(plan.Env{Checkpointed: true, Log: logs.add})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	return src.(*mqtt.Source)
}

// read reads n records, failing after 30 s.
func read(t *testing.T, src *mqtt.Source, n int) ([]string, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	var pos []byte
	for len(out) < n {
		var b connector.Batch
		if err := src.Read(ctx, &b); err != nil {
			t.Fatalf("read %d of %d records: %v", len(out), n, err)
		}
		for _, r := range b.Records {
			out = append(out, string(r.Value))
		}
		if b.Position != nil {
			pos = b.Position
		}
	}
	return out, pos
}

func publish(t *testing.T, b *mqtttest.Broker, from, to int) {
	t.Helper()
	var msgs []mqtttest.Message
	for i := from; i < to; i++ {
		msgs = append(msgs, mqtttest.Message{Topic: "t/x", Payload: fmt.Appendf(nil, "m%d", i)})
	}
	if err := b.Publish(1, msgs...); err != nil {
		t.Fatal(err)
	}
}

// What a source read and no durable checkpoint holds is sent again to the
// next run; what one holds is not.
func TestAcknowledgedOnlyOnceCommitted(t *testing.T) {
	b := startBroker(t)
	if err := b.Subscribe("src-test", "t/#"); err != nil {
		t.Fatal(err)
	}
	publish(t, b, 0, 5)
	var logs syncLog
	src := open(t, b, nil, &logs)
	got, _ := read(t, src, 5)
	src.Close()
	if strings.Join(got, " ") != "m0 m1 m2 m3 m4" {
		t.Fatalf("first run read %v", got)
	}

	// Never committed: all of it comes again, and is committed now.
	src = open(t, b, nil, &logs)
	got, pos := read(t, src, 5)
	if strings.Join(got, " ") != "m0 m1 m2 m3 m4" {
		t.Fatalf("second run read %v", got)
	}
	src.Committed(pos)
	src.Close()

	// The next run reads only what came since, its counts carried on.
	publish(t, b, 5, 7)
	src = open(t, b, pos, &logs)
	defer src.Close()
	// The acknowledgements sent just before a disconnect may not all
	// reach the broker (paho writes them, or not, before it closes the
	// connection): those it sends again are of what was read, never new.
	got, pos = read(t, src, 2)
	for !slices.Contains(got, "m6") {
		more, _ := read(t, src, 1)
		got = append(got, more...)
	}
	if i := slices.Index(got, "m5"); i < 0 || got[len(got)-1] != "m6" || slices.ContainsFunc(got[:i], func(m string) bool { return m >= "m5" }) {
		t.Fatalf("third run read %v; want m5 m6 after some of m0 to m4 again", got)
	}
	if r := src.Report(); len(r) != 1 || r[0].Name != "t/#" || r[0].Err != "" {
		t.Errorf("report %+v", r)
	}
	if strings.Contains(logs.String(), "cannot") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

// A broker that goes away is reported on every partition and tried again;
// once back, the source reads on.
func TestBrokerAway(t *testing.T) {
	b := startBroker(t)
	var logs syncLog
	src := open(t, b, nil, &logs)
	defer src.Close()
	read0 := func() {
		var bt connector.Batch
		src.Read(context.Background(), &bt) // the partitions
	}
	read0()
	waitReport := func(what string, ok func(connector.PartitionReport) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok(src.Report()[0]) {
			if time.Now().After(deadline) {
				t.Fatalf("no report %s within 30 s: %+v", what, src.Report())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitReport("connected", func(r connector.PartitionReport) bool { return r.Err == "" && r.CaughtUp })
	b.Stop()
	waitReport("of the lost connection", func(r connector.PartitionReport) bool { return strings.Contains(r.Err, "connection lost") })
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	waitReport("connected again", func(r connector.PartitionReport) bool { return r.Err == "" && r.CaughtUp })
	publish(t, b, 0, 1)
	if got, _ := read(t, src, 1); got[0] != "m0" {
		t.Errorf("read %v", got)
	}
	if !strings.Contains(logs.String(), "connection lost") || !strings.Contains(logs.String(), "connected again") {
		t.Errorf("logs:\n%s", logs.String())
	}
}
