package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/gen"
	"github.com/weirstream/weir/internal/brokerconns"
)

// The scale benchmark: a group job over many partitions, its instances
// real weir run processes (so that kill -9 is real, and each one's memory,
// CPU and connections are its own), the broker in this process, counting
// the connections of each instance as the broker sees them (by the client
// id of each connection's first request).

// Scale* size group-scale-256.
var (
	ScalePartitions = 256
	ScaleInstances  = 4
	ScaleKeys       = 1_000_000
)

func init() {
	for _, standby := range []bool{false, true} {
		name, about := "group-scale-256", "the group job over 256 partitions and 1M keys (hour windows), run by 1 and then 4 weir run processes on this machine's cores: throughput of each, the connections (the broker's view) and memory of each instance, and the time until the partitions run again when an instance is killed (kill -9) and when one joins; events are the keys"
		if standby {
			name, about = name+"-standby", "group-scale-256 with source.kafka.standby: 1: the kill -9's partitions are taken over by the instances that kept their changelog read"
		}
		register(Bench{
			Name: name, Group: "kafka", Explicit: true, About: about,
			Run: func(time.Duration) (int64, map[string]float64, string, error) { return groupScale(standby) },
		})
	}
}

const scaleJob = `name: bench-scale
source: {kafka: {brokers: [%[1]s], topic: orders, group: %[2]s, session_timeout: 6s, client.id: %[3]s%[4]s}}
time: {field: ts}
key: card
max_future: none
watermark: {delay: 2s, interval: 200ms}
window: {tumbling: 1h}
aggregates: {orders: count, spent: sum(amount)}
output: {kafka: {brokers: [%[1]s], topic: alerts, client.id: %[3]s}}
checkpoint: {interval: 2s}
`

// instance is one weir run process of the benchmark.
type instance struct {
	id   string // its client id
	cmd  *exec.Cmd
	errb bytes.Buffer
	done chan struct{}
}

// scale is one run of the benchmark: its broker, the connections the
// broker holds, and the instances.
type scale struct {
	c       *kfake.Cluster
	conns   *brokerconns.Conns
	dir     string
	self    string
	standby bool
	seq     int
	all     []*instance
}

func groupScale(standby bool) (int64, map[string]float64, string, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, nil, "", err
	}
	dir, err := os.MkdirTemp("", "weir-scale-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	cc := &brokerconns.Conns{}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(ScalePartitions), "orders"), kfake.SeedTopics(1, "alerts"),
		kfake.GroupMinSessionTimeout(time.Second), kfake.ListenFn(cc.Listen))
	if err != nil {
		return 0, nil, "", err
	}
	defer c.Close()
	s := &scale{c: c, conns: cc, dir: dir, self: self, standby: standby}
	defer s.killAll()
	keys := 0
	if err := produce(c, func() ([]byte, []byte, bool) {
		if keys == ScaleKeys {
			return nil, nil, false
		}
		keys++
		return scaleOrder(keys, ScaleKeys)
	}); err != nil {
		return 0, nil, "", err
	}
	ctx := context.Background()
	figs := map[string]float64{"partitions": float64(ScalePartitions), "instances": float64(ScaleInstances)}

	// One instance reads it all.
	one, err := s.start("single")
	if err != nil {
		return 0, nil, "", err
	}
	t0 := time.Now()
	if err := s.waitCovered(ctx, "single", s.ends(), nil); err != nil {
		return 0, nil, "", err
	}
	wall := time.Since(t0).Seconds()
	figs["one_events_per_sec"] = float64(ScaleKeys) / wall
	figs["one_cpu_s"] = procCPU(one.cmd.Process.Pid)
	figs["one_connections"] = float64(cc.Connections(one.id + "-"))
	figs["one_clients"] = float64(len(cc.Clients(one.id + "-")))
	figs["one_rss_mib"] = float64(procRSS(one.cmd.Process.Pid)) / (1 << 20)
	if err := s.stop(one); err != nil {
		return 0, nil, "", err
	}

	// ScaleInstances read it all again, as a new group.
	var group []*instance
	for range ScaleInstances {
		in, err := s.start("group")
		if err != nil {
			return 0, nil, "", err
		}
		group = append(group, in)
	}
	t0 = time.Now()
	if err := s.waitCovered(ctx, "group", s.ends(), nil); err != nil {
		return 0, nil, "", err
	}
	wall = time.Since(t0).Seconds()
	figs["group_events_per_sec"] = float64(ScaleKeys) / wall
	figs["group_vs_one"] = figs["group_events_per_sec"] / figs["one_events_per_sec"]
	var cpu float64
	var conns, clients, rss []int
	for _, in := range group {
		cpu += procCPU(in.cmd.Process.Pid)
		// Every client of the instance: its id with its role after it.
		conns = append(conns, cc.Connections(in.id+"-"))
		clients = append(clients, len(cc.Clients(in.id+"-")))
		rss = append(rss, procRSS(in.cmd.Process.Pid))
	}
	figs["group_cpu_s"] = cpu
	figs["max_connections"] = float64(slices.Max(conns))
	figs["min_connections"] = float64(slices.Min(conns))
	figs["max_clients"] = float64(slices.Max(clients))
	figs["max_rss_mib"] = float64(slices.Max(rss)) / (1 << 20)
	perInstance := float64(ScalePartitions) / float64(ScaleInstances)
	figs["connections_per_task"] = float64(slices.Max(conns)) / perInstance
	figs["mib_per_task"] = figs["max_rss_mib"] / perInstance

	// A trickle of orders goes on, so that a partition that runs again
	// shows it by committing offsets beyond the end at the kill or join.
	tctx, stopTrickle := context.WithCancel(ctx)
	var trickled sync.WaitGroup
	trickled.Add(1)
	go func() {
		defer trickled.Done()
		s.trickle(tctx)
	}()
	defer func() {
		stopTrickle()
		trickled.Wait()
	}()
	time.Sleep(10 * time.Second) // every instance keeps up with it

	// kill -9 of one instance: its partitions go to the others.
	victim := group[len(group)-1]
	info := c.GroupInfo(s.groupName("group"))
	var moved []int32
	for _, m := range info.Members {
		if m.ClientID == victim.id+"-group" {
			moved = m.Assignment["orders"]
		}
	}
	if len(moved) == 0 {
		return 0, nil, "", fmt.Errorf("the instance %s to kill holds no partition", victim.id)
	}
	for _, in := range group[:len(group)-1] {
		in.errb.Reset()
	}
	t0 = time.Now()
	if err := victim.cmd.Process.Kill(); err != nil {
		return 0, nil, "", err
	}
	<-victim.done
	if err := s.waitCovered(ctx, "group", s.ends(), moved); err != nil {
		return 0, nil, "", err
	}
	figs["kill_resumed_ms"] = float64(time.Since(t0).Milliseconds())
	ms, standbyRead := restoredMillis(group[:len(group)-1])
	if len(ms) > 0 {
		slices.Sort(ms)
		figs["kill_restore_ms_median"] = ms[len(ms)/2]
		figs["kill_restore_ms_max"] = ms[len(ms)-1]
	}
	figs["kill_tasks_moved"] = float64(len(moved))
	if standby {
		figs["kill_standby_records"] = float64(standbyRead)
	}

	// A new instance joins: some partitions move to it.
	t0 = time.Now()
	joined, err := s.start("group")
	if err != nil {
		return 0, nil, "", err
	}
	group = append(group[:len(group)-1], joined)
	var got []int32
	for deadline := time.Now().Add(5 * time.Minute); len(got) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 0, nil, "", errors.New("the joining instance got no partition within 5 minutes")
		}
		if info := c.GroupInfo(s.groupName("group")); info != nil && info.State == "Stable" {
			for _, m := range info.Members {
				if m.ClientID == joined.id+"-group" {
					got = m.Assignment["orders"]
				}
			}
		}
	}
	figs["join_stable_ms"] = float64(time.Since(t0).Milliseconds())
	if err := s.waitCovered(ctx, "group", s.ends(), got); err != nil {
		return 0, nil, "", err
	}
	figs["join_resumed_ms"] = float64(time.Since(t0).Milliseconds())
	figs["join_tasks_moved"] = float64(len(got))
	for _, in := range group {
		if err := s.stop(in); err != nil {
			return 0, nil, "", err
		}
	}
	return int64(ScaleKeys), figs, "", nil
}

// scaleOrder is the i-th of n orders, each of its own card, in the first
// half hour of an hour window.
func scaleOrder(i, n int) (key, value []byte, ok bool) {
	card := fmt.Appendf(nil, "k%07d", i)
	ts := int64(gen.DefaultStart) + int64(i%n)*1_800_000/int64(n)
	return card, fmt.Appendf(nil, `{"card":%q,"amount":%d.25,"ts":%d}`, card, i%500, ts), true
}

func (s *scale) groupName(g string) string {
	suffix := ""
	if s.standby {
		suffix = "-standby"
	}
	return "bench-scale-" + g + suffix
}

// start starts an instance of the group g.
func (s *scale) start(g string) (*instance, error) {
	s.seq++
	in := &instance{id: fmt.Sprintf("scale-%d", s.seq), done: make(chan struct{})}
	extra := ""
	if s.standby {
		extra = ", standby: 1"
	}
	path := filepath.Join(s.dir, in.id+".yaml")
	text := fmt.Sprintf(scaleJob, s.c.ListenAddrs()[0], s.groupName(g), in.id, extra)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, err
	}
	in.cmd = exec.Command(s.self, "run", path)
	in.cmd.Dir = s.dir
	in.cmd.Stdout = &in.errb
	in.cmd.Stderr = &in.errb
	if err := in.cmd.Start(); err != nil {
		return nil, err
	}
	s.all = append(s.all, in)
	go func() {
		in.cmd.Wait()
		close(in.done)
	}()
	return in, nil
}

// stop stops an instance as a user does (SIGTERM: a savepoint, then it
// leaves the group).
func (s *scale) stop(in *instance) error {
	in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(2 * time.Minute):
		in.cmd.Process.Kill()
		<-in.done
		return fmt.Errorf("%s did not stop within 2 minutes", in.id)
	}
	if st := in.cmd.ProcessState; !st.Success() {
		return fmt.Errorf("%s: %s: %s", in.id, st, lastLines(in.errb.String(), 5))
	}
	return nil
}

func (s *scale) killAll() {
	for _, in := range s.all {
		select {
		case <-in.done:
		default:
			in.cmd.Process.Kill()
			<-in.done
		}
	}
}

// ends are the orders partitions' end offsets.
func (s *scale) ends() map[int32]int64 {
	out := map[int32]int64{}
	for p := range int32(ScalePartitions) {
		if pi := s.c.PartitionInfo("orders", p); pi != nil {
			out[p] = pi.HighWatermark
		}
	}
	return out
}

// waitCovered waits until the group g has committed, for each of the
// partitions ps (every one when nil), an offset at least that of ends:
// the partition's task has run since, and checkpointed.
func (s *scale) waitCovered(ctx context.Context, g string, ends map[int32]int64, ps []int32) error {
	if ps == nil {
		for p := range ends {
			ps = append(ps, p)
		}
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		info := s.c.GroupInfo(s.groupName(g))
		short := 0
		for _, p := range ps {
			if info == nil || info.Commits["orders"][p].Offset < ends[p] {
				short++
			}
		}
		if short == 0 {
			return nil
		}
		for _, in := range s.all {
			select {
			case <-in.done:
				if in.cmd.ProcessState != nil && !in.cmd.ProcessState.Success() && in.cmd.ProcessState.ExitCode() != -1 {
					return fmt.Errorf("%s stopped: %s: %s", in.id, in.cmd.ProcessState, lastLines(in.errb.String(), 5))
				}
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d partitions not covered within 10 minutes", short, len(ps))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// trickle produces an order every millisecond or so until ctx is done,
// later than every earlier one.
func (s *scale) trickle(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.ListenAddrs()...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return
	}
	defer cl.Close()
	for i := ScaleKeys + 1; ctx.Err() == nil; i++ {
		k, v, _ := scaleOrder(i, ScaleKeys)
		cl.Produce(ctx, &kgo.Record{Topic: "orders", Key: k, Value: v}, nil)
		time.Sleep(time.Millisecond)
	}
}

var restoredLine = regexp.MustCompile(`restored checkpoint \d+ from \S+ \(\d+ records, \d+ bytes(?:, after (\d+) read as its standby)?\) in (\d+) ms`)

// restoredMillis are the restore times the instances logged, and the
// changelog records they had read as standbys.
func restoredMillis(ins []*instance) (ms []float64, standby int64) {
	for _, in := range ins {
		for _, m := range restoredLine.FindAllStringSubmatch(in.errb.String(), -1) {
			v, _ := strconv.ParseFloat(m[2], 64)
			ms = append(ms, v)
			if m[1] != "" {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				standby += n
			}
		}
	}
	return ms, standby
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// procCPU is the user and system time of the process pid so far.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// procRSS is the resident set of the process pid, in bytes.
func procRSS(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb << 10
		}
	}
	return 0
}
