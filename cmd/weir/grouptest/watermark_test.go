//go:build unix

package grouptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/clitest"
)

// A quiet partition's windows close as in one job: with watermark.idle, a
// task whose partition has had nothing for idle follows the group's
// watermark (the minimum over the tasks that are not idle, shared through
// the group's watermarks topic), so that its last window fires once the
// other partition moves on, and an event that comes afterwards for it is
// too late, as in a job that reads both partitions. Two instances, a
// partition each (or both in one: the rule is the same).
func TestGroupQuietPartitionFollowsTheGroup(t *testing.T) {
	const t0 = 1780000020000 // a minute's start
	card := func(p int32) string {
		for i := 0; ; i++ {
			if c := fmt.Sprintf("card%d", i); murmur2Partition([]byte(c), 2) == p {
				return c
			}
		}
	}
	busy, quiet := card(0), card(1)
	event := func(id, card string, ts int64) []byte {
		return fmt.Appendf(nil, `{"id":%q,"card":%q,"amount":2,"ts":%d}`, id, card, ts)
	}
	dir := t.TempDir()
	b := clitest.StartBroker(t, "orders:2", "alerts:1", "late:1", "quarantine:1")
	job := strings.Replace(fmt.Sprintf(groupJob, b.Addr, ""), "watermark: {delay: 1s, interval: 0s}", "watermark: {delay: 1s, interval: 200ms, idle: 1s}", 1)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	inst := startInstances(t, dir, 2)

	b.ProduceKeyed("orders", 1, [][]byte{event("q1", quiet, t0+10_000)}, [][]byte{[]byte(quiet)})
	var lines, keys [][]byte
	for m := range int64(6) {
		lines, keys = append(lines, event(fmt.Sprintf("b%d", m), busy, t0+m*60_000+5_000)), append(keys, []byte(busy))
	}
	b.ProduceKeyed("orders", 0, lines, keys)

	// The busy partition's watermark is t0+5m+4s: its windows up to t0+5m
	// fire, and the quiet partition's window of t0 with them.
	pane := func(l string) string {
		v := []byte(l)
		return fmt.Sprintf("%s %s orders=%d %s", fastjson.GetString(v, "key"), fastjson.GetString(v, "window_start"),
			fastjson.GetInt(v, "orders"), fastjson.GetString(v, "timing"))
	}
	var want []string
	for m := range int64(5) {
		want = append(want, fmt.Sprintf("%s %s orders=1 ON_TIME", busy, time.UnixMilli(t0+m*60_000).UTC().Format("2006-01-02T15:04:05.000Z")))
	}
	want = append(want, fmt.Sprintf("%s %s orders=1 ON_TIME", quiet, time.UnixMilli(t0).UTC().Format("2006-01-02T15:04:05.000Z")))
	slices.Sort(want)
	var got []string
	for _, l := range b.WaitCommitted("alerts", len(want), 2*time.Minute) {
		got = append(got, pane(l))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("panes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// An event of the quiet partition's closed window is too late now.
	b.ProduceKeyed("orders", 1, [][]byte{event("q2", quiet, t0+30_000)}, [][]byte{[]byte(quiet)})
	late := b.WaitCommitted("late", 1, time.Minute)
	if len(late) != 1 || !strings.HasPrefix(late[0], "p1 ") || fastjson.GetString([]byte(late[0][3:]), "event", "id") != "q2" ||
		fastjson.GetString([]byte(late[0][3:]), "reason") != "too_late" {
		t.Fatalf("too-late events: %q; want the quiet partition's second event", late)
	}
	// Each task published its watermark there.
	seen := map[int]bool{}
	for _, l := range b.Committed("fraud-watermarks") {
		seen[fastjson.GetInt([]byte(l), "partition")] = true
	}
	if !seen[0] || !seen[1] {
		t.Errorf("the watermarks topic has records of partitions %v; want 0 and 1", seen)
	}
	// Sharing the watermarks takes no client of its own.
	checkClients(t, b, inst.addrs)
	cmd := exec.Command(clitest.Bin, "status", "--http", inst.addrs[0], "job.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "(the minimum over the tasks not idle, shared in fraud-watermarks): idle tasks follow it") {
		t.Errorf("weir status: %v\n%s\nwant the group's watermark", err, out)
	}
	for _, c := range inst.cmds {
		c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range inst.cmds {
		c.Wait()
	}
}
