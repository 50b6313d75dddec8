package group

import (
	"context"
	"slices"
	"time"

	"github.com/weirstream/weir/connector/kafka"
)

// standbyEvery is how often an instance with Standby looks at the group's
// members to know which tasks it keeps warm.
const standbyEvery = 2 * time.Second

// standbyOf is the partitions the member me keeps warm: each partition's
// standby is the member after its owner in the order of their ids (a
// ring), as long as that is not the owner itself, so that every task has
// one standby once the group has two members.
func standbyOf(members []kafka.Member, me string) []int32 {
	var out []int32
	for i, m := range members {
		next := members[(i+1)%len(members)]
		if next.ID == me && m.ID != me {
			out = append(out, m.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

// assigned reports whether a member has partition p.
func assigned(members []kafka.Member, p int32) bool {
	for _, m := range members {
		if slices.Contains(m.Partitions, p) {
			return true
		}
	}
	return false
}

// keepStandbys keeps the partitions this instance is the standby of read,
// until ctx is done.
func (gr *Instance) keepStandbys(ctx context.Context, sb *kafka.Standby) {
	t := time.NewTicker(standbyEvery)
	defer t.Stop()
	for {
		gr.mu.Lock()
		g := gr.g
		gr.mu.Unlock()
		if g != nil {
			mctx, cancel := context.WithTimeout(ctx, standbyEvery)
			ms, err := g.Members(mctx)
			cancel()
			if me, _ := g.Member(); err == nil && me != "" {
				// Not a partition this instance runs: the group's view may
				// lag behind the assignment.
				owned := gr.owned()
				parts := slices.DeleteFunc(standbyOf(ms, me), func(p int32) bool { return slices.Contains(owned, p) })
				// A partition no member has (its owner left, the group
				// is between assignments) stays kept: this instance may
				// be the one it goes to.
				for _, p := range sb.Kept() {
					if !assigned(ms, p) && !slices.Contains(parts, p) {
						parts = append(parts, p)
					}
				}
				sb.Keep(parts)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
