package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// A lone member of a group is given every partition of the topic.
func TestGroupAssignsEveryPartition(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "in"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan []int32, 10)
	g := &Group{Config: Config{Brokers: c.ListenAddrs(), Topic: "in"}, Group: "g", SessionTimeout: 2 * time.Second,
		Assigned: func(_ context.Context, p []int32) { got <- p }}
	g.Log = func(s string) { t.Log(s) }
	if err := g.Join(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	select {
	case p := <-got:
		if !slices.Equal(p, []int32{0, 1, 2, 3}) {
			t.Fatalf("assigned %v, want [0 1 2 3]", p)
		}
		if own := g.Owned(); !slices.Equal(own, p) {
			t.Fatalf("Owned() = %v, want %v", own, p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no assignment")
	}
}
