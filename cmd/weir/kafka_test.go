package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// broker is a kfake cluster on 127.0.0.1 for weir processes to talk to.
type broker struct {
	t    *testing.T
	c    *kfake.Cluster
	addr string
	port int
	dir  string
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBroker starts a cluster with the topics (name:partitions), keeping
// its data in a directory so that it can be stopped and started again.
func startBroker(t *testing.T, topics ...string) *broker {
	b := &broker{t: t, port: freePort(t), dir: t.TempDir()}
	b.start(topics...)
	t.Cleanup(func() { b.c.Close() })
	return b
}

func (b *broker) start(topics ...string) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(b.port), kfake.DataDir(b.dir), kfake.GroupMinSessionTimeout(time.Second)}
	for _, tp := range topics {
		name, parts, _ := strings.Cut(tp, ":")
		n := 1
		fmt.Sscan(parts, &n)
		opts = append(opts, kfake.SeedTopics(int32(n), name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.c, b.addr = c, c.ListenAddrs()[0]
}

func (b *broker) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(cl.Close)
	return cl
}

// produceLines writes lines to a partition of a topic, in order.
func (b *broker) produceLines(topic string, part int32, lines [][]byte) {
	cl := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	ctx := context.Background()
	errc := make(chan error, 1)
	for _, l := range lines {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: part, Value: l}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.t.Fatal(err)
	}
	select {
	case err := <-errc:
		b.t.Fatal(err)
	default:
	}
}

// committed reads every committed record of a topic that is there now.
func (b *broker) committed(topic string) []string {
	cl := b.client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	var out []string
	idle := 0
	for idle < 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return out
}

// withoutEmittedAt drops the processing time a live run differs in, and
// says where a record was as a file does: the line of a record is its offset
// plus one (the records of one partition are the lines of the file).
func withoutEmittedAt(line string) string {
	var m map[string]any
	if json.Unmarshal([]byte(line), &m) != nil {
		return line
	}
	delete(m, "emitted_at")
	delete(m, "set_aside_at")
	if off, ok := m["offset"].(float64); ok {
		delete(m, "offset")
		delete(m, "partition")
		m["line"] = off + 1
	}
	b, _ := json.Marshal(m)
	return string(b)
}

const kafkaJob = `name: kafka-crash
source: {kafka: {brokers: [%[1]s], topic: orders}}
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
checkpoint: {dir: ckpt, interval: 300ms}
`

// The fraud-like job from a topic to topics, killed with SIGKILL at 10
// seeded points and restarted each time: a read_committed consumer sees every
// pane exactly once, with the values of a run from a file of the same
// records, and every too-late event and rejected line exactly once.
func TestKafkaKillNineExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1M-event stream through Kafka")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "input.jsonl")
	writeCrashInput(t, in, 1_000_000)
	data, _ := os.ReadFile(in)
	// A last event a day later closes every window, as the end of a file
	// would.
	data = append(data, `{"id":"end","card":"c0","amount":1,"ts":1780100000000,"arrival":1780100000000}`+"\n"...)
	os.WriteFile(in, data, 0o644)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))

	// The reference: the same records from a file.
	ref := filepath.Join(dir, "ref")
	os.Mkdir(ref, 0o755)
	fileJob := strings.NewReplacer(
		"source: {kafka: {brokers: [%[1]s], topic: orders}}", "source: {file: ../input.jsonl}",
		"output: {kafka: {brokers: [%[1]s], topic: alerts}}", "output: results.jsonl",
		"late_output: {kafka: {brokers: [%[1]s], topic: late}}", "late_output: late.jsonl",
		"quarantine: {kafka: {brokers: [%[1]s], topic: quarantine}}", "quarantine: quarantine.jsonl",
		"checkpoint: {dir: ckpt, interval: 300ms}\n", "").Replace(kafkaJob)
	os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(fileJob), 0o644)
	if out, err := exec.Command(weirBin, "run", "--quiet", filepath.Join(ref, "job.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := map[string][]string{}
	for _, f := range []string{"results", "late", "quarantine"} {
		b, _ := os.ReadFile(filepath.Join(ref, f+".jsonl"))
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			want[f] = append(want[f], withoutEmittedAt(l))
		}
	}
	// The window of the last event fires only at the end of the file.
	last := want["results"][len(want["results"])-1]
	want["results"] = want["results"][:len(want["results"])-1]
	if !strings.Contains(last, `"key":"c0"`) || len(want["late"]) < 100 || len(want["quarantine"]) < 100 {
		t.Fatalf("the reference is not what the test needs: %d panes, %d late, %d rejected, last %s", len(want["results"]), len(want["late"]), len(want["quarantine"]), last)
	}

	b := startBroker(t, "orders:1", "alerts:1", "late:1", "quarantine:1")
	b.produceLines("orders", 0, lines)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(kafkaJob, b.addr)), 0o644)
	r := rand.New(rand.NewPCG(16, 16))
	for i := 0; i < 10; i++ {
		cmd := weirRun(t, dir, "job.yaml")
		time.Sleep(time.Duration(300+r.IntN(1500)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	cmd, stderr := startWeir(t, dir, "run", "job.yaml")
	// The stream does not end: wait until the output is complete (20 s on a
	// quiet machine; minutes when it is busy).
	deadline := time.Now().Add(5 * time.Minute)
	var got []string
	for time.Now().Before(deadline) {
		got = b.committed("alerts")
		if len(got) >= len(want["results"]) {
			break
		}
		time.Sleep(time.Second)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if !strings.Contains(stderr.String(), "resuming from") {
		t.Errorf("the last run did not resume from a checkpoint:\n%s", stderr.String())
	}
	check := func(name string, got []string) {
		t.Helper()
		for i := range got {
			got[i] = withoutEmittedAt(got[i])
		}
		seen := map[string]int{}
		for _, g := range got {
			seen[g]++
		}
		dups := 0
		for _, n := range seen {
			if n > 1 {
				dups++
			}
		}
		w := slices.Clone(want[name])
		slices.Sort(w)
		slices.Sort(got)
		if dups > 0 || !slices.Equal(got, w) {
			t.Errorf("%s: %d records, %d of them more than once; want the %d of the file run", name, len(got), dups, len(w))
		}
	}
	check("results", got)
	check("late", b.committed("late"))
	check("quarantine", b.committed("quarantine"))
	if t.Failed() {
		t.Logf("the last run said:\n%s", stderr.String())
	}
}

// Partitions that differ: one flows, one goes quiet (idle after idle: 2s),
// one never has a record (it never holds the watermark), and the quiet one
// comes back with older records, late or too late by the rules.
func TestKafkaIdlePartitions(t *testing.T) {
	b := startBroker(t, "orders:3", "alerts:1", "late:1")
	dir := t.TempDir()
	job := fmt.Sprintf(`name: idle
source: {kafka: {brokers: [%[1]s], topic: orders}}
time: {field: ts}
key: k
max_future: none
watermark: {delay: 0s, interval: 100ms, idle: 2s}
window: {tumbling: 10s}
allowed_lateness: 30s
aggregates: {n: count}
output: {kafka: {brokers: [%[1]s], topic: alerts, delivery: at_least_once}}
late_output: {kafka: {brokers: [%[1]s], topic: late, delivery: at_least_once}}
`, b.addr)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	ev := func(k string, ts int64) []byte { return []byte(fmt.Sprintf(`{"k":%q,"ts":%d}`, k, ts)) }
	const t0 = 1_780_000_000_000
	cmd, stderr := startWeir(t, dir, "run", "job.yaml")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	// Partition 1 has an event in [0, 10s); partition 0 moves on to 25 s;
	// partition 2 never has one. Only once partition 1 is idle does the
	// watermark pass 10 s.
	b.produceLines("orders", 1, [][]byte{ev("b", t0+1000)})
	b.produceLines("orders", 0, [][]byte{ev("a", t0+2000), ev("a", t0+12_000), ev("a", t0+25_000)})
	waitFor := func(topic string, n int) []string {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if got := b.committed(topic); len(got) >= n {
				return got
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%s: fewer than %d records after 30 s\n%s", topic, n, stderr.String())
		return nil
	}
	got := waitFor("alerts", 3)
	for _, w := range []string{`"key":"b","window_start":"2026-05-28T20:26:40.000Z"`, `"key":"a","window_start":"2026-05-28T20:26:40.000Z"`,
		`"key":"a","window_start":"2026-05-28T20:26:50.000Z"`} {
		if !strings.Contains(strings.Join(got, "\n"), w) {
			t.Errorf("no pane %s in\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != 3 {
		t.Errorf("%d panes before partition 1 comes back:\n%s", len(got), strings.Join(got, "\n"))
	}
	// Partition 1 comes back with an event of [0, 10s), late but within the
	// allowed lateness (W is 24.999 s), and one of [-40s, -30s), too late.
	b.produceLines("orders", 1, [][]byte{ev("b", t0+3000), ev("b", t0-40_000)})
	got = waitFor("alerts", 4)
	if !strings.Contains(got[len(got)-1], `"key":"b"`) || !strings.Contains(got[len(got)-1], `"timing":"LATE"`) || !strings.Contains(got[len(got)-1], `"n":2`) {
		t.Errorf("the late event's pane: %s", got[len(got)-1])
	}
	late := waitFor("late", 1)
	if !strings.Contains(late[0], `"reason":"too_late"`) || !strings.Contains(late[0], `"partition":"orders/1","offset":2`) {
		t.Errorf("late: %v", late)
	}
}

// The broker goes away for a while (stopped and started again on its
// port): the job waits, says so, loses nothing and goes on.
func TestKafkaBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for reconnects")
	}
	b := startBroker(t, "orders:1", "alerts:1")
	dir := t.TempDir()
	job := fmt.Sprintf(`name: restart
source: {kafka: {brokers: [%[1]s], topic: orders}}
time: {field: ts}
key: k
max_future: none
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1s}
aggregates: {n: count}
output: {kafka: {brokers: [%[1]s], topic: alerts}}
checkpoint: {dir: ckpt, interval: 200ms}
`, b.addr)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	const t0 = 1_780_000_000_000
	batch := func(from, to int) [][]byte {
		var out [][]byte
		for i := from; i < to; i++ {
			out = append(out, []byte(fmt.Sprintf(`{"k":"k%d","ts":%d}`, i%3, t0+int64(i)*1000)))
		}
		return out
	}
	b.produceLines("orders", 0, batch(0, 10))
	cmd, stderr := startWeir(t, dir, "run", "job.yaml")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wait := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if len(b.committed("alerts")) >= n {
				return
			}
			select {
			case err := <-exited:
				t.Fatalf("the job exited: %v\n%s", err, stderr.String())
			case <-time.After(200 * time.Millisecond):
			}
		}
		t.Fatalf("fewer than %d panes after a minute\n%s", n, stderr.String())
	}
	wait(9)
	b.c.Close()
	time.Sleep(3 * time.Second)
	select {
	case err := <-exited:
		t.Fatalf("the job exited while the broker was away: %v\n%s", err, stderr.String())
	default:
	}
	b.start("orders:1", "alerts:1")
	b.produceLines("orders", 0, batch(10, 20))
	wait(19)
	cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	got := b.committed("alerts")
	seen := map[string]bool{}
	for _, g := range got {
		k := withoutEmittedAt(g)
		if seen[k] {
			t.Errorf("a pane twice: %s", g)
		}
		seen[k] = true
	}
	if len(got) != 19 {
		t.Errorf("%d panes, want 19", len(got))
	}
	if !strings.Contains(stderr.String(), "retrying") {
		t.Errorf("the log does not say it is retrying:\n%s", stderr.String())
	}
}

// A real Kafka client on both ends: kcat produces the input and reads the
// output with read_committed.
func TestKafkaWithKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (Debian's kcat package; .ci/run installs it)")
	}
	b := startBroker(t, "orders:1", "alerts:1")
	dir := t.TempDir()
	const t0 = 1_780_000_000_000
	var in bytes.Buffer
	for i := range 30 {
		fmt.Fprintf(&in, `{"card":"c%d","ts":%d}`+"\n", i%2, t0+int64(i)*4000)
	}
	prod := exec.Command(kcat, "-b", b.addr, "-P", "-t", "orders")
	prod.Stdin = &in
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	job := fmt.Sprintf(`name: kcat
source: {kafka: {brokers: [%[1]s], topic: orders}}
time: {field: ts}
key: card
max_future: none
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count}
output: {kafka: {brokers: [%[1]s], topic: alerts, delivery: exactly_once}}
checkpoint: {dir: ckpt, interval: 200ms}
`, b.addr)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	cmd := weirRun(t, dir, "job.yaml")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	var lines []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command(kcat, "-b", b.addr, "-C", "-t", "alerts", "-e", "-q", "-X", "isolation.level=read_committed", "-f", "%k %s\n").Output()
		if err != nil {
			t.Fatalf("kcat -C: %v", err)
		}
		lines = nil
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		if len(lines) >= 4 {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	// 30 events 4 s apart from 20:26:40: the windows of 20:26 (c0 3, c1 2)
	// and 20:27 (c0 7, c1 8) have fired; 20:28 is still open.
	var got []string
	for _, l := range lines {
		key, value, _ := strings.Cut(l, " ")
		var p struct {
			N int `json:"n"`
		}
		json.Unmarshal([]byte(value), &p)
		got = append(got, fmt.Sprintf("%s %d", key, p.N))
	}
	slices.Sort(got)
	want := []string{
		`["c0","2026-05-28T20:26:00.000Z","2026-05-28T20:27:00.000Z"] 3`,
		`["c0","2026-05-28T20:27:00.000Z","2026-05-28T20:28:00.000Z"] 7`,
		`["c1","2026-05-28T20:26:00.000Z","2026-05-28T20:27:00.000Z"] 2`,
		`["c1","2026-05-28T20:27:00.000Z","2026-05-28T20:28:00.000Z"] 8`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("kcat read:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The development broker's orders are keyed by their own card: the
// consumer-group example relies on it to keep each card's windows in one
// task. A key read from the parser's buffer after the next line was parsed
// named another order's card.
func TestKafkaOrdersKeyedByCard(t *testing.T) {
	b := startBroker(t, "orders:3")
	var log bytes.Buffer
	want := produceOrders(context.Background(), b.addr, 3000, 1e9, &log)
	if want < 2900 {
		t.Fatalf("%d orders produced: %s", want, log.String())
	}
	cl := b.client(kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(100*time.Millisecond))
	deadline := time.Now().Add(30 * time.Second)
	n, wrong := 0, 0
	for n < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			n++
			var o struct{ Card string }
			if err := json.Unmarshal(r.Value, &o); err != nil || o.Card != string(r.Key) {
				wrong++
			}
		})
	}
	if n != want || wrong != 0 {
		t.Errorf("%d of %d orders read, %d of them keyed by another card", n, want, wrong)
	}
}
