//go:build unix

// Package grouptest runs weir jobs of a consumer group as several weir
// processes against a broker in the test process (kfake): instances killed,
// stopped, paused past their session and joining, input repartitioned or
// misrouted, a stop without a broker. It holds tests only; they run the weir
// command that TestMain builds.
package grouptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

// groupJob is a job of a consumer group; %[1]s is the broker, %[2]s the
// source's extra settings.
const groupJob = `name: group-crash
source: {kafka: {brokers: [%[1]s], topic: orders, group: fraud, session_timeout: 2s%[2]s}}
time: {field: ts}
key: card
id: id
dedup_horizon: 10m
max_future: none
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 1m}
allowed_lateness: 2m
aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}
output: {kafka: {brokers: [%[1]s], topic: alerts}}
late_output: {kafka: {brokers: [%[1]s], topic: late}}
quarantine: {kafka: {brokers: [%[1]s], topic: quarantine}}
checkpoint: {interval: 300ms}
`

// murmur2Partition is the partition Kafka's default partitioner gives key.
func murmur2Partition(key []byte, n int) int32 {
	p := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	return int32(p.Partition(&kgo.Record{Key: key}, n))
}

// partitionLines splits lines by the partition of their card, as a producer
// keyed by card would (a line without one goes by its index), and ends each
// partition with an event a day later that closes its windows, as the end
// of a file would. It returns the lines and keys of each partition, and the
// closing events' cards.
func partitionLines(lines [][]byte, n int) (parts [][][]byte, keys [][][]byte, closers map[string]bool) {
	parts, keys, closers = make([][][]byte, n), make([][][]byte, n), map[string]bool{}
	for i, l := range lines {
		card := fastjson.GetBytes(l, "card")
		p := int32(i % n)
		if card != nil {
			p = murmur2Partition(card, n)
		}
		parts[p], keys[p] = append(parts[p], l), append(keys[p], card)
	}
	for p := range n {
		for i := 0; ; i++ {
			card := fmt.Sprintf("end%d", i)
			if int(murmur2Partition([]byte(card), n)) == p {
				closers[card] = true
				parts[p] = append(parts[p], fmt.Appendf(nil, `{"id":"end%d","card":%q,"amount":1,"ts":1780100000000}`, p, card))
				keys[p] = append(keys[p], []byte(card))
				break
			}
		}
	}
	return parts, keys, closers
}

// groupReferenceOf runs the job once per partition from a file of the
// partition's records: each partition is a task with its own watermark, so
// this is what the group must write, whatever instance runs which task.
func groupReferenceOf(t *testing.T, dir, groupJob string, parts [][][]byte, closers map[string]bool) map[string][]string {
	t.Helper()
	want := map[string][]string{}
	for p, lines := range parts {
		ref := filepath.Join(dir, fmt.Sprintf("ref%d", p))
		os.Mkdir(ref, 0o755)
		os.WriteFile(filepath.Join(ref, "input.jsonl"), append(bytes.Join(lines, []byte("\n")), '\n'), 0o644)
		job := strings.NewReplacer(
			"source: {kafka: {brokers: [%[1]s], topic: orders, group: fraud, session_timeout: 2s%[2]s}}", "source: {file: input.jsonl}",
			"output: {kafka: {brokers: [%[1]s], topic: alerts}}", "output: results.jsonl",
			"late_output: {kafka: {brokers: [%[1]s], topic: late}}", "late_output: late.jsonl",
			"quarantine: {kafka: {brokers: [%[1]s], topic: quarantine}}", "quarantine: quarantine.jsonl",
			"checkpoint: {interval: 300ms}\n", "").Replace(groupJob)
		os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(job), 0o644)
		if out, err := exec.Command(clitest.Bin, "run", "--quiet", filepath.Join(ref, "job.yaml")).CombinedOutput(); err != nil {
			t.Fatalf("reference run of partition %d: %v\n%s", p, err, out)
		}
		for _, f := range []string{"results", "late", "quarantine"} {
			b, _ := os.ReadFile(filepath.Join(ref, f+".jsonl"))
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if l == "" {
					continue
				}
				// The closing events' windows fire only at the end of a
				// file; the stream does not end.
				if f == "results" && closers[fastjson.GetString([]byte(l), "key")] {
					continue
				}
				want[f] = append(want[f], withPartition(l, p))
			}
		}
	}
	return want
}

// withPartition is withoutEmittedAt, with the partition a record of a file
// run came from (the topic's partition, in the Kafka run).
func withPartition(line string, p int) string {
	v, err := fastjson.Parse(line)
	if err != nil || v.Get("line") == nil {
		return clitest.WithoutEmittedAt(line)
	}
	return fmt.Sprintf("p%d ", p) + clitest.WithoutEmittedAt(line)
}

// sameRecords checks that got holds want's records, each exactly once.
func sameRecords(t *testing.T, name string, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	dups := 0
	for _, g := range got {
		if seen[g]++; seen[g] == 2 {
			dups++
		}
	}
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if dups > 0 || !slices.Equal(g, w) {
		missing, extra := 0, 0
		for _, x := range w {
			if seen[x] == 0 {
				missing++
				if missing <= 3 {
					t.Logf("%s: missing %s", name, x)
				}
			}
		}
		ws := map[string]bool{}
		for _, x := range w {
			ws[x] = true
		}
		for _, x := range g {
			if !ws[x] {
				extra++
				if extra <= 3 {
					t.Logf("%s: unexpected %s", name, x)
				}
			}
		}
		t.Errorf("%s: %d records (%d more than once, %d missing, %d not expected); want the %d of the per-partition file runs", name, len(got), dups, missing, extra, len(w))
	}
}

// Three instances of a group job share a 6-partition topic of 1M events with
// late events, duplicates and bad lines; one is killed with SIGKILL in the
// middle, a fourth joins later. A read_committed consumer sees every pane,
// too-late event and rejected line exactly once, as the job run once per
// partition from a file writes them.
func TestGroupKillNineAndJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1M-event stream through a consumer group")
	}
	groupCase(t, groupJob, 1_000_000, 6, syscall.SIGKILL)
}

// The kill -9 case with 64 partitions on three instances (a fourth joins
// after the kill): each instance runs about 21 tasks, and every record is
// still written exactly once, the group's offsets at every partition's end.
func TestGroupKillNineSixtyFourPartitions(t *testing.T) {
	groupCase(t, groupJob, 120_000, 64, syscall.SIGKILL)
}

// The same with 60,000 events over 64 partitions: the second of two
// instances is stopped (SIGTERM: its tasks take a savepoint, and it leaves
// the group), a third joins.
func TestGroupStopAndJoin(t *testing.T) {
	groupCase(t, groupJob, 60_000, 64, syscall.SIGTERM)
}

// The same with each task's state in a Pebble database of its own, its
// checkpoints (Pebble's table files among them) in the changelog: the
// tasks that move restore their keys from it.
func TestGroupStopAndJoinPebble(t *testing.T) {
	groupCase(t, groupJob+"state: {backend: pebble, memory_budget: 64MiB}\n", 60_000, 4, syscall.SIGTERM)
}

// The kill -9 case with standby replicas: each instance keeps the
// changelog of the next member's tasks read, and the instance that takes
// a killed one's task over as its standby reads only what came since;
// every record is still written exactly once.
func TestGroupKillNineWithStandby(t *testing.T) {
	inst := groupCaseWith(t, groupJob, ", standby: 1", 200_000, 6, syscall.SIGKILL)
	all := ""
	for _, l := range inst.logs {
		all += l.String()
	}
	if !regexp.MustCompile(`restored checkpoint \d+ from fraud-changelog \(\d+ records, \d+ bytes, after \d+ read as its standby\)`).MatchString(all) {
		t.Errorf("no task was taken over by its standby")
	}
}

// A zombie: the second of two instances is paused (SIGSTOP) past its session
// timeout while it writes, the other takes its 32 partitions over, and it is
// resumed: the group's coordinator refuses the offsets of its transactions
// (it is no longer a member), or the instance that took a partition over
// fenced the producer of the transaction it left open there, so none of
// what it wrote becomes visible, and the output is still every record
// exactly once.
func TestGroupZombie(t *testing.T) {
	groupCase(t, groupJob, 300_000, 64, syscall.SIGSTOP)
}

// The zombie again with one thread an instance, so that each transaction
// of the paused instance holds the checkpoints of all its tasks (8 of 16
// partitions): none of them becomes visible.
func TestGroupZombieOneThread(t *testing.T) {
	inst := groupCaseWith(t, groupJob, ", threads: 1", 100_000, 16, syscall.SIGSTOP)
	// Resumed, it tried to commit (a checkpoint, or its tasks' last as they
	// stopped), and was refused.
	if log := inst.logs[1].String(); !regexp.MustCompile(`committing the group's offsets in the transaction \(member [^)]+\): (UNKNOWN_MEMBER_ID|ILLEGAL_GENERATION)|PRODUCER_FENCED|INVALID_PRODUCER_EPOCH`).MatchString(log) {
		t.Errorf("the paused instance was not refused a commit:\n%s", log)
	}
}

func groupCase(t *testing.T, groupJob string, events, nparts int, sig syscall.Signal) {
	groupCaseWith(t, groupJob, "", events, nparts, sig)
}

// groupCaseWith is groupCase with extra settings of the Kafka source
// (", standby: 1"), which the per-partition file runs have not.
func groupCaseWith(t *testing.T, groupJob, extra string, events, nparts int, sig syscall.Signal) *instances {
	dir := t.TempDir()
	in := filepath.Join(dir, "input.jsonl")
	clitest.WriteCrashInput(t, in, events)
	data, _ := os.ReadFile(in)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	parts, keys, closers := partitionLines(lines, nparts)
	want := groupReferenceOf(t, dir, groupJob, parts, closers)
	if len(want["late"]) < events/10000 || len(want["quarantine"]) < events/10000 {
		t.Fatalf("the reference is not what the test needs: %d panes, %d late, %d rejected", len(want["results"]), len(want["late"]), len(want["quarantine"]))
	}

	// The instances' temporary directories, to see what they leave.
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o700)
	t.Setenv("TMPDIR", tmp)

	b := clitest.StartBroker(t, fmt.Sprintf("orders:%d", nparts), "alerts:3", "late:1", "quarantine:1")
	// The first half of every partition, then the instances.
	for p := range nparts {
		h := len(parts[p]) / 2
		b.ProduceKeyed("orders", int32(p), parts[p][:h], keys[p][:h])
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(groupJob, b.Addr, extra)), 0o644)
	inst := startInstances(t, dir, 2)
	if sig == syscall.SIGKILL {
		inst.start()
	}
	// Stop one once output flows, then give the rest of the input and
	// another instance.
	if got := b.WaitCommitted("alerts", len(want["results"])/10, 3*time.Minute); len(got) < len(want["results"])/10 {
		t.Fatalf("no output after 3 minutes: %d panes", len(got))
	}
	checkClients(t, b, inst.addrs[:2])
	inst.cmds[1].Process.Signal(sig)
	zombie := sig == syscall.SIGSTOP
	if zombie {
		// Past the session timeout (2 s): the group moves its partitions.
		time.Sleep(8 * time.Second)
	} else {
		inst.cmds[1].Wait()
	}
	for p := range nparts {
		h := len(parts[p]) / 2
		b.ProduceKeyed("orders", int32(p), parts[p][h:], keys[p][h:])
	}
	if zombie {
		inst.cmds[1].Process.Signal(syscall.SIGCONT)
	} else {
		time.Sleep(2 * time.Second)
		inst.start()
	}
	got := b.WaitCommitted("alerts", len(want["results"]), 5*time.Minute)
	// The live instances own every partition between them, each once, as
	// their status says.
	var live []string
	for i, a := range inst.addrs {
		if i != 1 || zombie {
			live = append(live, a)
		}
	}
	checkOwnership(t, dir, live, nparts)
	checkClients(t, b, live)
	// The group's committed offsets follow the checkpoints: Kafka's tools
	// show the group caught up, every partition read to its end.
	var wantOffsets []string
	for p := range nparts {
		wantOffsets = append(wantOffsets, fmt.Sprintf("orders/%d %d", p, len(parts[p])))
	}
	offsets := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if offsets = b.GroupOffsets("fraud"); offsets == strings.Join(wantOffsets, ", ") {
			break
		}
	}
	if offsets != strings.Join(wantOffsets, ", ") {
		t.Errorf("the group's committed offsets: %s; want %s", offsets, strings.Join(wantOffsets, ", "))
	}
	for i, c := range inst.cmds {
		if i != 1 || zombie {
			c.Process.Signal(syscall.SIGTERM)
		}
	}
	for i, c := range inst.cmds {
		if i != 1 || zombie {
			c.Wait()
		}
	}
	// What the killed instance left in its temporary directory went
	// when the next one started; the others removed their own. (The
	// user's directory of console addresses stays: one file per job file.)
	es, _ := os.ReadDir(tmp)
	var left []string
	for _, e := range es {
		if e.Name() != fmt.Sprintf("weir-%d", os.Getuid()) {
			left = append(left, e.Name())
		}
	}
	if len(left) > 0 {
		t.Errorf("the stopped instances left %v in their temporary directory", left)
	}
	if zombie && !strings.Contains(inst.logs[1].String(), "lost") {
		t.Errorf("the paused instance did not learn that it lost its partitions")
	}
	sameRecords(t, "results", got, want["results"])
	sameRecords(t, "late", b.CommittedRecords("late"), want["late"])
	sameRecords(t, "quarantine", b.CommittedRecords("quarantine"), want["quarantine"])
	all := ""
	for _, l := range inst.logs {
		all += l.String()
	}
	if !strings.Contains(all, "restored checkpoint") {
		t.Errorf("no task was restored from its changelog")
	}
	if strings.Contains(all, "not keyed by the job's key") {
		t.Errorf("an input keyed by card was taken for one that is not")
	}
	// Every record is accounted for: at each stop of a partition's task,
	// what it read is accepted, a duplicate, too late, quarantined or in
	// flight (a stop that could not wait for its savepoint, read again by
	// the next owner: never a negative count); and some stop of each
	// partition read all of it with nothing in flight.
	stops := regexp.MustCompile(`orders/(\d+): stopped at watermark \S+: read (\d+): (\d+) accepted, (\d+) duplicates, (\d+) too late, (\d+) beyond the dedup horizon, (\d+) quarantined, (\d+) in flight`)
	read := make([]int, nparts)
	balanced := make([]bool, nparts)
	for _, m := range stops.FindAllStringSubmatch(all, -1) {
		var n [8]int
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+1])
		}
		if n[2]+n[3]+n[4]+n[5]+n[6]+n[7] != n[1] || n[7] < 0 {
			t.Errorf("%s: the counts do not add up to what was read", m[0])
		}
		read[n[0]] = max(read[n[0]], n[1])
		if n[7] == 0 && n[1] == len(parts[n[0]]) {
			balanced[n[0]] = true
		}
	}
	for p := range nparts {
		if !balanced[p] {
			t.Errorf("no stop of partition %d's task accounted for all its %d records with nothing in flight", p, len(parts[p]))
		}
	}
	for p := range nparts {
		if read[p] != len(parts[p]) {
			t.Errorf("the task of partition %d read %d records at most; the partition holds %d", p, read[p], len(parts[p]))
		}
	}
	return inst
}

// repartitionCase writes a crash input of events lines, without its bad
// lines (a copy keyed by the job key needs the key), and the results the
// group must write: those of the job run once per partition of the copy,
// with a watermark delay long enough that the copy's order does not
// matter.
func repartitionCase(t *testing.T, events, nparts int) (dir string, lines [][]byte, parts [][][]byte, job string, want []string) {
	t.Helper()
	dir = t.TempDir()
	in := filepath.Join(dir, "input.jsonl")
	clitest.WriteCrashInput(t, in, events)
	data, _ := os.ReadFile(in)
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if fastjson.ValidateBytes(l) == nil {
			lines = append(lines, l)
		}
	}
	parts, _, closers := partitionLines(lines, nparts)
	job = strings.NewReplacer("watermark: {delay: 1s, interval: 0s}", "watermark: {delay: 1h, interval: 0s}", "dedup_horizon: 10m", "dedup_horizon: 2h").Replace(groupJob)
	return dir, lines, parts, job, groupReferenceOf(t, dir, job, parts, closers)["results"]
}

// Partitions added to the input of a group that repartitions are read too:
// the copying picks them up within MetadataRefresh, and every record is
// copied once, into the same tasks (the repartition topic keeps its count).
func TestGroupRepartitionPartitionsAdded(t *testing.T) {
	const nparts = 3
	dir, lines, parts, job, want := repartitionCase(t, 30_000, nparts)

	b := clitest.StartBroker(t, fmt.Sprintf("clicks:%d", nparts), "alerts:3", "late:1", "quarantine:1")
	produce := func(from, to, n int) {
		for p := range n {
			var ls, ks [][]byte
			for i := from + p; i < to; i += n {
				ls, ks = append(ls, lines[i]), append(ks, fastjson.GetBytes(lines[i], "id"))
			}
			b.ProduceKeyed("clicks", int32(p), ls, ks)
		}
	}
	half := len(lines) / 2
	produce(0, half, nparts)
	text := strings.Replace(fmt.Sprintf(job, b.Addr, ", repartition: true"), "topic: orders", "topic: clicks", 1)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(text), 0o644)
	inst := startInstances(t, dir, 2)
	if got := b.WaitCommitted("fraud-repartition", half, 3*time.Minute); len(got) != half {
		t.Fatalf("the repartition topic holds %d records; want the %d of the input's first half, each once", len(got), half)
	}
	// Two more partitions, and the second half spread over all five.
	cl := b.Client()
	if _, err := kadm.NewClient(cl).CreatePartitions(context.Background(), 2, "clicks"); err != nil {
		t.Fatal(err)
	}
	produce(half, len(lines), nparts+2)
	if got := b.WaitCommitted("fraud-repartition", len(lines), 3*time.Minute); len(got) != len(lines) {
		t.Fatalf("the repartition topic holds %d records; want the %d of the input, each once", len(got), len(lines))
	}
	// An instance that starts now, with five input partitions, runs the
	// three tasks of the repartition topic like the others.
	inst.cmds[1].Process.Signal(syscall.SIGTERM)
	inst.cmds[1].Wait()
	inst.start()
	for p := range nparts {
		last := parts[p][len(parts[p])-1]
		b.ProduceKeyed("clicks", int32(p), [][]byte{last}, [][]byte{fastjson.GetBytes(last, "id")})
	}
	got := b.WaitCommitted("alerts", len(want), 3*time.Minute)
	checkClients(t, b, []string{inst.addrs[0], inst.addrs[2]})
	for i, c := range inst.cmds {
		if i != 1 {
			c.Process.Signal(syscall.SIGTERM)
		}
	}
	for i, c := range inst.cmds {
		if i != 1 {
			c.Wait()
		}
	}
	sameRecords(t, "results", got, want)
}

// checkClients checks the broker's view of the Kafka clients of each
// instance (the client ids of its open connections): its group member,
// one client per thread (and, repartitioning, its copying's), so never
// more than two clients a thread, whatever the partitions it runs.
func checkClients(t *testing.T, b *clitest.Broker, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		var r console.GroupReply
		if code, body := httpGet("http://" + a + "/api/status"); code != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Errorf("%s/api/status: %d %s", a, code, body)
			continue
		}
		prefix := ""
		for _, m := range r.Group.Members {
			if m.ID == r.Group.Member {
				prefix = strings.TrimSuffix(m.Client, "group")
			}
		}
		if prefix == "" || !strings.HasPrefix(prefix, "weir-") {
			t.Errorf("%s: no member of the group is this instance: %+v", a, r.Group.Members)
			continue
		}
		want := []string{prefix + "group"}
		for i := range r.Group.Threads {
			want = append(want, fmt.Sprintf("%st%d", prefix, i))
		}
		if r.Group.Repartition != nil {
			want = append(want, prefix+"repartition")
		}
		// Every client of the process, whatever its id says after the
		// process's name; a client holds at most five connections to a
		// broker (franz-go's kinds of requests).
		got := b.Clients(strings.TrimSuffix(prefix, "-"))
		conns := b.Connections(strings.TrimSuffix(prefix, "-"))
		extra := slices.DeleteFunc(slices.Clone(got), func(id string) bool { return slices.Contains(want, id) })
		if len(extra) > 0 || !slices.Contains(got, prefix+"group") || len(got) > 2*len(r.Group.Threads) || len(r.Group.Threads) == 0 ||
			conns > 5*len(want) {
			t.Errorf("%s: the broker sees the clients %q (%d connections) of an instance of %d threads running %d tasks; want some of %q, at most two a thread",
				a, got, conns, len(r.Group.Threads), len(r.Group.Tasks), want)
		}
	}
}

// checkOwnership waits until the instances' /api/status shows every one of
// n partitions owned by exactly one of them, then checks what weir status
// prints for the first.
func checkOwnership(t *testing.T, jobDir string, addrs []string, n int) {
	t.Helper()
	var owned [][]int32
	var members []group.GroupMember
	topic := ""
	deadline := time.Now().Add(time.Minute)
	for {
		owned, members = owned[:0], nil
		count := map[int32]int{}
		byMember := map[string][]int32{}
		for i, a := range addrs {
			var r console.GroupReply
			resp, err := http.Get("http://" + a + "/api/status")
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
			}
			if err != nil && time.Now().After(deadline) {
				t.Fatalf("%s: %v", a, err)
			}
			owned = append(owned, r.Group.Owned)
			byMember[r.Group.Member] = r.Group.Owned
			for _, p := range r.Group.Owned {
				count[p]++
			}
			if i == 0 {
				members, topic = r.Group.Members, r.Group.Topic
			}
		}
		ok := len(count) == n
		for _, c := range count {
			ok = ok && c == 1
		}
		// The group's description, as the first instance reports it,
		// agrees: one member per instance, each with what it owns.
		ok = ok && len(members) == len(addrs)
		for _, m := range members {
			own, found := byMember[m.ID]
			ok = ok && found && slices.Equal(own, m.Partitions) && strings.HasPrefix(m.Client, "weir-")
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instances own %v, and the group says %+v; want each of the %d partitions once", owned, members, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd := exec.Command(clitest.Bin, "status", "--http", addrs[0], "job.yaml")
	cmd.Dir = jobDir
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("owns %d of the %d partitions of %s", len(owned[0]), n, topic)
	if err != nil || !strings.Contains(string(out), want) || strings.Count(string(out), "\n"+topic+"/") != len(owned[0]) ||
		strings.Count(string(out), "\n  weir-") != len(addrs) || strings.Count(string(out), "<- this one") != 1 {
		t.Errorf("weir status: %v\n%s\nwant a line that %s, a line per partition and one per instance", err, out, want)
	}
}

// Repartitioning: the input is keyed by the event's id, not by the job's
// key (card), and spread round-robin; with source.kafka.repartition the
// instances first copy it into a topic keyed by card, and the panes are
// those of a correctly keyed input (the job run once per partition of the
// input keyed by card). The watermark trails by an hour, so no event is late
// however the copying interleaves the partitions; the windows close when
// the stream's last events come, once everything is copied.
func TestGroupRepartition(t *testing.T) {
	const nparts = 64
	dir, lines, parts, job, want := repartitionCase(t, 60_000, nparts)

	b := clitest.StartBroker(t, fmt.Sprintf("clicks:%d", nparts), "alerts:3", "late:1", "quarantine:1")
	ids := make([][]byte, len(lines))
	for i, l := range lines {
		ids[i] = fastjson.GetBytes(l, "id")
	}
	for p := range nparts {
		var ls, ks [][]byte
		for i := p; i < len(lines); i += nparts {
			ls, ks = append(ls, lines[i]), append(ks, ids[i])
		}
		b.ProduceKeyed("clicks", int32(p), ls, ks)
	}
	text := strings.Replace(fmt.Sprintf(job, b.Addr, ", repartition: true"), "topic: orders", "topic: clicks", 1)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(text), 0o644)
	inst := startInstances(t, dir, 3)
	if got := b.WaitCommitted("fraud-repartition", len(lines), 3*time.Minute); len(got) != len(lines) {
		t.Fatalf("the repartition topic holds %d records; want the %d of the input, each once", len(got), len(lines))
	}
	checkClients(t, b, inst.addrs)
	// The last events, which close the windows.
	for p := range nparts {
		last := parts[p][len(parts[p])-1]
		b.ProduceKeyed("clicks", int32(p), [][]byte{last}, [][]byte{fastjson.GetBytes(last, "id")})
	}
	got := b.WaitCommitted("alerts", len(want), 3*time.Minute)
	for _, c := range inst.cmds {
		c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range inst.cmds {
		c.Wait()
	}
	sameRecords(t, "results", got, want)
	if n := len(b.Committed("late")); n != 0 {
		t.Errorf("%d too-late events; want none", n)
	}
}

// An input not keyed by the job's key, without repartition: a task sees
// events whose keys belong to other partitions, says so once, and counts
// them in its status.
func TestGroupMisroutedInput(t *testing.T) {
	const nparts = 64
	b := clitest.StartBroker(t, fmt.Sprintf("clicks:%d", nparts), "alerts:3", "late:1", "quarantine:1")
	var lines, ids [][]byte
	for i := range 3000 {
		lines = append(lines, fmt.Appendf(nil, `{"id":"e%d","card":"c%d","amount":1,"ts":%d}`, i, i%50, 1780000000000+int64(i)*10))
		ids = append(ids, fmt.Appendf(nil, "e%d", i))
	}
	b.ProduceKeyed("clicks", 0, lines, ids) // every card in partition 0
	dir := t.TempDir()
	text := strings.Replace(fmt.Sprintf(groupJob, b.Addr, ""), "topic: orders", "topic: clicks", 1)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(text), 0o644)
	inst := startInstances(t, dir, 3)
	checkOwnership(t, dir, inst.addrs, nparts)
	// The instance that runs partition 0's task.
	owner := -1
	deadline := time.Now().Add(time.Minute)
	for {
		var mis int64
		for i, addr := range inst.addrs {
			var r console.GroupReply
			if resp, err := http.Get("http://" + addr + "/api/status"); err == nil {
				json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
			}
			for _, tk := range r.Group.Tasks {
				if tk.Partition != 0 && tk.Misrouted != 0 {
					t.Fatalf("partition %d holds no event, yet %d were misrouted", tk.Partition, tk.Misrouted)
				}
				if tk.Partition == 0 {
					owner = i
				}
				mis += tk.Misrouted
			}
		}
		// The 3000 events, one in 64 sampled, of which those whose card
		// murmur2 puts elsewhere than partition 0 (nearly all).
		if mis > 10 && owner >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no misrouted event in the status (partition 0 on instance %d)", owner)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd, stderr, addr := inst.cmds[owner], inst.logs[owner], inst.addrs[owner]
	// The instance serves what a single job serves: /healthz, /readyz, a
	// page of its tasks, each task's console and the job's metrics.
	base := "http://" + addr
	for deadline := time.Now().Add(time.Minute); ; {
		if code, body := httpGet(base + "/readyz"); code == 200 && body == "ready\n" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := httpGet(base + "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	checkClients(t, b, inst.addrs)
	if code, page := httpGet(base + "/"); code != 200 || !strings.Contains(page, "assets/group.js") {
		t.Errorf("/: %d %.100s", code, page)
	}
	var task console.StatusReply
	if code, body := httpGet(base + "/task/0/api/status"); code != 200 || json.Unmarshal([]byte(body), &task) != nil ||
		task.Status.State != "running" || len(task.Status.Partitions) != 1 || task.Status.Partitions[0].Name != "clicks/0" || task.Status.Counts.Read != 3000 {
		t.Errorf("/task/0/api/status: %d %s", code, body)
	}
	if code, page := httpGet(base + "/task/0/"); code != 200 || !strings.Contains(page, "assets/console.js") {
		t.Errorf("/task/0/: %d %.100s", code, page)
	}
	_, metrics := httpGet(base + "/metrics")
	_ = cmd
	for _, want := range []string{`weir_up{job_name="group-crash"} 1`, `weir_records_total{job_name="group-crash",outcome="accepted",task="clicks/0"} 3000`} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, c := range inst.cmds {
		c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range inst.cmds {
		c.Wait()
	}
	if n := strings.Count(stderr.String(), "the input is not keyed by the job's key"); n != 1 {
		t.Errorf("the warning came %d times; want once\n%s", n, stderr)
	}
}

// An instance told to stop while the brokers are gone cannot commit its
// tasks' last checkpoints: it stops them at once after its stop budget,
// saying so, and exits; the partitions resume from their last committed
// checkpoints.
func TestGroupStopWithoutBroker(t *testing.T) {
	b := clitest.StartBroker(t, "orders:2", "alerts:3", "late:1", "quarantine:1")
	var lines, keys [][]byte
	for i := range 2000 {
		card := fmt.Sprintf("c%d", i%20)
		lines = append(lines, fmt.Appendf(nil, `{"id":"e%d","card":%q,"amount":1,"ts":%d}`, i, card, 1780000000000+int64(i)*100))
		keys = append(keys, []byte(card))
	}
	parts, pkeys := make([][][]byte, 2), make([][][]byte, 2)
	for i, l := range lines {
		p := murmur2Partition(keys[i], 2)
		parts[p], pkeys[p] = append(parts[p], l), append(pkeys[p], keys[i])
	}
	for p := range 2 {
		b.ProduceKeyed("orders", int32(p), parts[p], pkeys[p])
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(groupJob, b.Addr, "")), 0o644)
	inst := startInstances(t, dir, 1)
	cmd, stderr := inst.cmds[0], inst.logs[0]
	checkOwnership(t, dir, inst.addrs, 2)
	b.WaitCommitted("alerts", 1, time.Minute)
	b.C.Close()
	// Without its brokers the instance is alive, and not ready.
	for deadline := time.Now().Add(time.Minute); ; {
		code, body := httpGet("http://" + inst.addrs[0] + "/readyz")
		if code == 503 && strings.HasPrefix(body, "not ready: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz without brokers: %d %q", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := httpGet("http://" + inst.addrs[0] + "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz without brokers: %d %q", code, body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("weir exited with %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("weir did not exit 2 minutes after SIGTERM without a broker:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "no last checkpoint within 10s: stopping at once") {
		t.Errorf("weir did not say it stopped its tasks at once:\n%s", stderr)
	}
}

// httpGet is the status and body of a GET, or -1 when nothing answers.
func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// instances are weir run processes of the job file job.yaml in a directory,
// each serving its status on a port of its own. They are killed when the
// test ends, and what they said is shown when it failed (or with -v).
type instances struct {
	t     *testing.T
	dir   string
	cmds  []*exec.Cmd
	logs  []*clitest.Buffer
	addrs []string
}

func startInstances(t *testing.T, dir string, n int) *instances {
	in := &instances{t: t, dir: dir}
	t.Cleanup(func() {
		for i, c := range in.cmds {
			if c.ProcessState == nil {
				c.Process.Kill()
				c.Wait()
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("instance %d said:\n%s", i, in.logs[i])
			}
		}
	})
	for range n {
		in.start()
	}
	return in
}

// start starts one more instance.
func (in *instances) start() {
	addr := fmt.Sprintf("127.0.0.1:%d", clitest.FreePort(in.t))
	cmd, stderr := clitest.Start(in.t, in.dir, "run", "--quiet", "--http", addr, "job.yaml")
	in.cmds, in.logs, in.addrs = append(in.cmds, cmd), append(in.logs, stderr), append(in.addrs, addr)
}
