package main

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/group"
)

// weir status lists a group's instances with the one asked first and the
// others by name, whatever order the coordinator says them in.
func TestGroupTextInstancesInOrder(t *testing.T) {
	members := []group.GroupMember{
		{ID: "m-c", Client: "weir-c-group", Host: "/127.0.0.1:3", Partitions: []int32{3}},
		{ID: "m-a", Client: "weir-a-group", Host: "/127.0.0.1:1", Partitions: []int32{0}},
		{ID: "m-b", Client: "weir-b-group", Host: "/127.0.0.1:2", Partitions: []int32{1, 2}},
	}
	want := `the group's instances:
  weir-b-group on 127.0.0.1:2: orders/1, orders/2  <- this one
  weir-a-group on 127.0.0.1:1: orders/0
  weir-c-group on 127.0.0.1:3: orders/3
`
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}} {
		g := group.GroupStatus{Group: "g", Member: "m-b", Topic: "orders", Partitions: 4, Owned: []int32{1, 2}}
		for _, i := range order {
			g.Members = append(g.Members, members[i])
		}
		got := groupText(g)
		if i := strings.Index(got, "the group's instances:\n"); i < 0 || !strings.HasPrefix(got[i:], want) {
			t.Errorf("members in the order %v:\n%s\nwant\n%s", order, got, want)
		}
	}
}
