package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Group is an instance's membership of a consumer group on a topic: the
// group's members share the topic's partitions (the cooperative-sticky
// balancer: a rebalance moves only the partitions that must move), and
// Group says which are this instance's as they come and go. It fetches no
// records itself: each partition's task reads its own (Source.Partitions).
type Group struct {
	Config
	// Group is the consumer group's id.
	Group string
	// SessionTimeout is how long the group waits for a member that stopped
	// heartbeating before it gives its partitions to the others (default
	// 10 s).
	SessionTimeout time.Duration
	// Assigned is called with the partitions newly given to this instance.
	Assigned func(ctx context.Context, parts []int32)
	// Revoked is called with partitions taken from this instance in a
	// rebalance; the rebalance waits for it to return, so it stops their
	// tasks (each takes a last checkpoint) first.
	Revoked func(ctx context.Context, parts []int32)
	// Lost is called with partitions this instance lost without a
	// rebalance (its session expired): another instance may own them
	// already.
	Lost func(ctx context.Context, parts []int32)

	cl   *kgo.Client
	mu   sync.Mutex
	own  []int32
	lost atomic.Uint64
}

// Join joins the group; the callbacks start coming from another goroutine.
func (g *Group) Join() error {
	if g.Group == "" {
		return errors.New("a consumer group needs an id")
	}
	opts, err := g.opts()
	if err != nil {
		return err
	}
	session := g.SessionTimeout
	if session <= 0 {
		session = 10 * time.Second
	}
	each := func(f func(context.Context, []int32), m map[string][]int32, add bool) func(context.Context) {
		parts := slices.Clone(m[g.Topic])
		slices.Sort(parts)
		return func(ctx context.Context) {
			g.mu.Lock()
			if add {
				g.own = append(g.own, parts...)
				slices.Sort(g.own)
				g.own = slices.Compact(g.own)
			} else {
				g.own = slices.DeleteFunc(g.own, func(p int32) bool { return slices.Contains(parts, p) })
			}
			g.mu.Unlock()
			if f != nil && len(parts) > 0 {
				f(ctx, parts)
			}
		}
	}
	opts = append(opts,
		kgo.ConsumerGroup(g.Group), kgo.ConsumeTopics(g.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(session), kgo.HeartbeatInterval(max(session/10, 100*time.Millisecond)),
		kgo.RebalanceTimeout(max(session, time.Minute)),
		kgo.OnPartitionsAssigned(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) { each(g.Assigned, m, true)(ctx) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) { each(g.Revoked, m, false)(ctx) }),
		kgo.OnPartitionsLost(func(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
			g.lost.Add(1)
			each(g.Lost, m, false)(ctx)
		}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	// The member fetches nothing: its partitions' tasks do.
	cl.PauseFetchTopics(g.Topic)
	g.mu.Lock()
	g.cl = cl
	g.mu.Unlock()
	// The group is joined when the client first polls; a polled fetch
	// carries the errors of the group's management (a session timeout the
	// brokers refuse, an authorization missing).
	go func() {
		last := ""
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			fs.EachError(func(_ string, _ int32, err error) {
				if msg := err.Error(); msg != last {
					last = msg
					g.logf("group %s: %v; retrying", g.Group, err)
				}
			})
		}
	}()
	return nil
}

// Member is one member of the group, as the group's coordinator describes
// it.
type Member struct {
	ID         string  `json:"member"`
	Client     string  `json:"client"` // its client id: weir-HOST-PID unless client.id says otherwise
	Host       string  `json:"host"`
	Partitions []int32 `json:"partitions"`
}

// Members describes every member of the group and the partitions of the
// topic assigned to each, in the order of their ids.
func (g *Group) Members(ctx context.Context) ([]Member, error) {
	adm := g.Admin()
	if adm == nil {
		return nil, errors.New("not in the group")
	}
	groups, err := adm.DescribeGroups(ctx, g.Group)
	if err != nil {
		return nil, classify(err)
	}
	d, ok := groups[g.Group]
	if !ok {
		return nil, fmt.Errorf("the group %s is not described", g.Group)
	}
	if d.Err != nil {
		return nil, classify(d.Err)
	}
	var out []Member
	for _, m := range d.Members {
		mem := Member{ID: m.MemberID, Client: m.ClientID, Host: m.ClientHost, Partitions: []int32{}}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				if t.Topic == g.Topic {
					mem.Partitions = append(mem.Partitions, t.Partitions...)
				}
			}
		}
		slices.Sort(mem.Partitions)
		out = append(out, mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Owned is the partitions this instance owns now.
func (g *Group) Owned() []int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.own)
}

// Member is this instance's member id and the group's generation.
func (g *Group) Member() (string, int32) {
	g.mu.Lock()
	cl := g.cl
	g.mu.Unlock()
	if cl == nil {
		return "", 0
	}
	return cl.GroupMetadata()
}

// lostCount is how many times the member lost its partitions without a
// rebalance (its session expired): a thread's transaction begun before
// may hold a task of a partition that another member owns now.
func (g *Group) lostCount() uint64 { return g.lost.Load() }

// session is the group's session timeout.
func (g *Group) session() time.Duration {
	if g.SessionTimeout <= 0 {
		return 10 * time.Second
	}
	return g.SessionTimeout
}

// Admin is the member's client, for metadata and admin requests (nil
// before Join).
func (g *Group) Admin() *kadm.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cl == nil {
		return nil
	}
	return kadm.NewClient(g.cl)
}

// Close leaves the group (after Revoked for what this instance still
// owns).
func (g *Group) Close() {
	g.mu.Lock()
	cl := g.cl
	g.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}
