// Package kafkatest runs weir jobs that read and write Kafka topics of a
// broker in the test process (kfake), as processes: killed with SIGKILL at
// seeded points of a million-event stream, with idle and returning
// partitions, a broker that goes away and comes back, and kcat on both ends.
// It holds tests only; they run the weir command that TestMain builds.
package kafkatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

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
	clitest.WriteCrashInput(t, in, 1_000_000)
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
	if out, err := exec.Command(clitest.Bin, "run", "--quiet", filepath.Join(ref, "job.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := map[string][]string{}
	for _, f := range []string{"results", "late", "quarantine"} {
		b, _ := os.ReadFile(filepath.Join(ref, f+".jsonl"))
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			want[f] = append(want[f], clitest.WithoutEmittedAt(l))
		}
	}
	// The window of the last event fires only at the end of the file.
	last := want["results"][len(want["results"])-1]
	want["results"] = want["results"][:len(want["results"])-1]
	if !strings.Contains(last, `"key":"c0"`) || len(want["late"]) < 100 || len(want["quarantine"]) < 100 {
		t.Fatalf("the reference is not what the test needs: %d panes, %d late, %d rejected, last %s", len(want["results"]), len(want["late"]), len(want["quarantine"]), last)
	}

	b := clitest.StartBroker(t, "orders:1", "alerts:1", "late:1", "quarantine:1")
	b.ProduceLines("orders", 0, lines)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(kafkaJob, b.Addr)), 0o644)
	r := rand.New(rand.NewPCG(16, 16))
	for i := 0; i < 10; i++ {
		cmd := clitest.StartRun(t, dir, "job.yaml")
		time.Sleep(time.Duration(300+r.IntN(1500)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	cmd, stderr := clitest.Start(t, dir, "run", "job.yaml")
	// The stream does not end: wait until the output is complete (20 s on a
	// quiet machine; minutes when it is busy).
	deadline := time.Now().Add(5 * time.Minute)
	var got []string
	for time.Now().Before(deadline) {
		got = b.Committed("alerts")
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
			got[i] = clitest.WithoutEmittedAt(got[i])
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
	check("late", b.Committed("late"))
	check("quarantine", b.Committed("quarantine"))
	if t.Failed() {
		t.Logf("the last run said:\n%s", stderr.String())
	}
}

// Partitions that differ: one flows, one goes quiet (idle after idle: 2s),
// one never has a record (it never holds the watermark), and the quiet one
// comes back with older records, late or too late by the rules.
func TestKafkaIdlePartitions(t *testing.T) {
	b := clitest.StartBroker(t, "orders:3", "alerts:1", "late:1")
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
`, b.Addr)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	ev := func(k string, ts int64) []byte { return []byte(fmt.Sprintf(`{"k":%q,"ts":%d}`, k, ts)) }
	const t0 = 1_780_000_000_000
	cmd, stderr := clitest.Start(t, dir, "run", "job.yaml")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	// Partition 1 has an event in [0, 10s); partition 0 moves on to 25 s;
	// partition 2 never has one. Only once partition 1 is idle does the
	// watermark pass 10 s.
	b.ProduceLines("orders", 1, [][]byte{ev("b", t0+1000)})
	b.ProduceLines("orders", 0, [][]byte{ev("a", t0+2000), ev("a", t0+12_000), ev("a", t0+25_000)})
	waitFor := func(topic string, n int) []string {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if got := b.Committed(topic); len(got) >= n {
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
	b.ProduceLines("orders", 1, [][]byte{ev("b", t0+3000), ev("b", t0-40_000)})
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
	b := clitest.StartBroker(t, "orders:1", "alerts:1")
	dir := t.TempDir()
	port := clitest.FreePort(t)
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
http: 127.0.0.1:%[2]d
`, b.Addr, port)
	ready := func(code int, prefix string) {
		t.Helper()
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
		for deadline := time.Now().Add(time.Minute); ; {
			c, body := -1, ""
			if resp, err := http.Get(url); err == nil {
				bb, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				c, body = resp.StatusCode, string(bb)
			}
			if c == code && strings.HasPrefix(body, prefix) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz: %d %q, want %d %q", c, body, code, prefix)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	const t0 = 1_780_000_000_000
	batch := func(from, to int) [][]byte {
		var out [][]byte
		for i := from; i < to; i++ {
			out = append(out, []byte(fmt.Sprintf(`{"k":"k%d","ts":%d}`, i%3, t0+int64(i)*1000)))
		}
		return out
	}
	b.ProduceLines("orders", 0, batch(0, 10))
	cmd, stderr := clitest.Start(t, dir, "run", "job.yaml")
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wait := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if len(b.Committed("alerts")) >= n {
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
	ready(200, "ready\n")
	b.C.Close()
	// The source cannot read and the checkpoints cannot commit: not ready.
	ready(503, "not ready: ")
	time.Sleep(3 * time.Second)
	select {
	case err := <-exited:
		t.Fatalf("the job exited while the broker was away: %v\n%s", err, stderr.String())
	default:
	}
	b.Start("orders:1", "alerts:1")
	b.ProduceLines("orders", 0, batch(10, 20))
	wait(19)
	ready(200, "ready\n")
	cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	got := b.Committed("alerts")
	seen := map[string]bool{}
	for _, g := range got {
		k := clitest.WithoutEmittedAt(g)
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
	b := clitest.StartBroker(t, "orders:1", "alerts:1")
	dir := t.TempDir()
	const t0 = 1_780_000_000_000
	var in bytes.Buffer
	for i := range 30 {
		fmt.Fprintf(&in, `{"card":"c%d","ts":%d}`+"\n", i%2, t0+int64(i)*4000)
	}
	prod := exec.Command(kcat, "-b", b.Addr, "-P", "-t", "orders")
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
`, b.Addr)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	cmd := clitest.StartRun(t, dir, "job.yaml")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	var lines []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command(kcat, "-b", b.Addr, "-C", "-t", "alerts", "-e", "-q", "-X", "isolation.level=read_committed", "-f", "%k %s\n").Output()
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

// A recorded job with an exactly-once Kafka output, run to its end, then
// run again by the same command (a scheduler's retry, habit): the second
// run is refused before it reads or writes anything, with one line naming
// the output and --fresh, and a read_committed consumer sees every pane
// once. --fresh runs it again on purpose: the topic then holds every pane
// twice, as the flag says, and a run after that is refused again.
func TestKafkaRerunOfFinishedJob(t *testing.T) {
	b := clitest.StartBroker(t, "alerts:2")
	dir := t.TempDir()
	const t0 = 1_780_000_000_000
	var in strings.Builder
	for i := range 500 {
		fmt.Fprintf(&in, `{"card":"c%d","ts":%d}`+"\n", i%50, t0+int64(i)*1000)
	}
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in.String()), 0o644)
	job := fmt.Sprintf(`name: rerun
source: {file: input.jsonl}
time: {field: ts}
key: card
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
aggregates: {n: count}
output: [{kafka: {brokers: [%[1]s], topic: alerts}}, results.jsonl]
checkpoint: {dir: ckpt, interval: 1s}
`, b.Addr)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	if code, _, stderr := clitest.Run(t, dir, "run", "job.yaml"); code != 0 {
		t.Fatalf("the first run: exit %d\n%s", code, stderr)
	}
	first := b.Committed("alerts")
	results, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if n := strings.Count(string(results), "\n"); len(first) != n || n < 400 {
		t.Fatalf("the first run: %d panes in the topic, %d in the file", len(first), n)
	}
	code, _, stderr := clitest.Run(t, dir, "run", "job.yaml")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 2 || strings.Count(stderr, "ERROR") != 1 || !strings.Contains(last, "ERROR") || !strings.Contains(last, "the last run of this job finished") ||
		!strings.Contains(last, "output[0] (kafka topic alerts)") || !strings.Contains(last, "weir run --fresh") {
		t.Fatalf("the second run: exit %d, want 2 and one line naming the output and --fresh:\n%s", code, stderr)
	}
	if got := b.Committed("alerts"); len(got) != len(first) {
		t.Fatalf("after the refused run the topic holds %d panes, the first run wrote %d", len(got), len(first))
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "results.jsonl")); !bytes.Equal(now, results) {
		t.Fatal("the refused run changed results.jsonl")
	}
	code, _, stderr = clitest.Run(t, dir, "run", "--fresh", "job.yaml")
	if code != 0 || !strings.Contains(stderr, "left behind (kept, never restored)") {
		t.Fatalf("the run with --fresh: exit %d\n%s", code, stderr)
	}
	if got := b.Committed("alerts"); len(got) != 2*len(first) {
		t.Fatalf("after --fresh the topic holds %d panes, want twice the %d of the first run", len(got), len(first))
	}
	// The file is written anew (the panes' processing times are this
	// run's).
	norm := func(b []byte) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			out = append(out, clitest.WithoutEmittedAt(l))
		}
		return out
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "results.jsonl")); !slices.Equal(norm(now), norm(results)) {
		t.Fatal("the run with --fresh wrote results.jsonl differently")
	}
	if code, _, stderr := clitest.Run(t, dir, "run", "job.yaml"); code != 2 {
		t.Fatalf("a run after --fresh: exit %d, want the refusal again\n%s", code, stderr)
	}
}
