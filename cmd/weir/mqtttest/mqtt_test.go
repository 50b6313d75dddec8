// Package mqtttest runs weir jobs that read MQTT topics of a real broker
// (Debian's mosquitto, started by the tests as package internal/mqtttest
// does), as processes: a production line's piece counts through broker
// restarts and kill -9, and settings refused. It holds tests only; they run
// the weir command that TestMain builds.
package mqtttest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/internal/mqtttest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

// startBroker starts a mosquitto of the test's, stopped at its end.
func startBroker(t *testing.T, maxInflight int) *mqtttest.Broker {
	return mqtttest.StartT(t, maxInflight)
}

// productionJob counts a production line's pieces per line and minute,
// de-duplicated by the message's id; %[1]s is the source.
const productionJob = `name: production
source: %[1]s
time: {field: ts}
key: line
id: id
dedup_horizon: 1h
max_future: none
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 1m}
aggregates: {pieces: sum(pieces), messages: count}
output: results.jsonl
`

const t0 = 1_780_000_000_000

// pieceCounts are n messages of piece counts from two lines, in time order
// (a message every 250 ms of event time), then one of each line a day
// later, which close every window before them: each filter is a partition
// with a watermark of its own, and the job's is the lowest.
func pieceCounts(n int) []mqtttest.Message {
	r := rand.New(rand.NewPCG(7, 7))
	var out []mqtttest.Message
	for i := 0; i < n; i++ {
		line := fmt.Sprintf("line%d", 1+r.IntN(2))
		out = append(out, mqtttest.Message{Topic: "factory/" + line + "/count",
			Payload: fmt.Appendf(nil, `{"id":"m%d","line":%q,"pieces":%d,"ts":%d}`, i, line, 1+r.IntN(20), t0+int64(i)*250)})
	}
	for _, line := range []string{"line1", "line2"} {
		out = append(out, mqtttest.Message{Topic: "factory/" + line + "/count", Payload: fmt.Appendf(nil, `{"id":"end-%s","line":%q,"pieces":0,"ts":%d}`, line, line, t0+86_400_000)})
	}
	return out
}

// reference runs the job over msgs from a file, uninterrupted: its panes
// without their emission time, but for the window of the last message.
func reference(t *testing.T, msgs []mqtttest.Message) []string {
	t.Helper()
	dir := t.TempDir()
	var in []byte
	for _, m := range msgs {
		in = append(append(in, m.Payload...), '\n')
	}
	os.WriteFile(filepath.Join(dir, "input.jsonl"), in, 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), fmt.Appendf(nil, productionJob, "{file: input.jsonl}"), 0o644)
	if out, err := exec.Command(clitest.Bin, "run", "--quiet", filepath.Join(dir, "job.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	got := panes(t, filepath.Join(dir, "results.jsonl"))
	if len(got) < 4 {
		t.Fatalf("the reference has %d panes", len(got))
	}
	return got
}

// panes are the panes of a results file without their emission time, but
// for the window a day later (the last message's), sorted.
func panes(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" || strings.Contains(l, `"pieces":0,`) {
			continue
		}
		out = append(out, clitest.WithoutEmittedAt(l))
	}
	slices.Sort(out)
	return out
}

// withoutWatermark is panes without the watermark at which each fired.
func withoutWatermark(panes []string) []string {
	out := make([]string, len(panes))
	for i, p := range panes {
		var m map[string]any
		json.Unmarshal([]byte(p), &m)
		delete(m, "watermark")
		b, _ := json.Marshal(m)
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

// waitPanes waits until the job's results hold n panes.
func waitPanes(t *testing.T, path string, n int, stderr *clitest.Buffer) []string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got := panes(t, path)
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mqttSource(b *mqtttest.Broker) string {
	return fmt.Sprintf("{mqtt: {broker: %q, topics: [factory/line1/#, factory/line2/#], client_id: weir-production, max_inflight: 20}}", b.Addr)
}

// A job file reads a broker's topics, a filter a partition, and writes the
// panes of a run from a file of the same messages.
func TestMQTTJobFile(t *testing.T) {
	msgs := pieceCounts(400)
	want := reference(t, msgs)
	b := startBroker(t, 0)
	if err := b.Subscribe("weir-production", "factory/line1/#", "factory/line2/#"); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(1, msgs...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	job := fmt.Sprintf(productionJob, mqttSource(b)) + "checkpoint: {dir: ckpt, interval: 200ms}\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	cmd, stderr := clitest.Start(t, dir, "run", "job.yaml")
	got := waitPanes(t, filepath.Join(dir, "results.jsonl"), len(want), stderr)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if !slices.Equal(got, want) {
		t.Errorf("%d panes, want the %d of the file run:\n%s\nwant:\n%s\nweir said:\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"), stderr.String())
	}
}

// The production line through broker restarts and kill -9: messages
// published with QoS 1 to a persistent session, the broker restarted
// twice while the job reads, weir killed with SIGKILL three times and
// started again from its checkpoint; with de-duplication by id, the
// committed output is the counts of an uninterrupted run.
func TestMQTTRestartsAndKillNine(t *testing.T) {
	msgs := pieceCounts(3000)
	want := reference(t, msgs)
	b := startBroker(t, 20)
	if err := b.Subscribe("weir-production", "factory/line1/#", "factory/line2/#"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	job := fmt.Sprintf(productionJob, mqttSource(b)) + "checkpoint: {dir: ckpt, interval: 300ms}\n"
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	r := rand.New(rand.NewPCG(50, 4))
	parts := [][]mqtttest.Message{msgs[:800], msgs[800:1600], msgs[1600:2400], msgs[2400:]}
	var stderr *clitest.Buffer
	for i, part := range parts {
		if err := b.Publish(1, part...); err != nil {
			t.Fatal(err)
		}
		var cmd *exec.Cmd
		cmd, stderr = clitest.Start(t, dir, "run", "job.yaml")
		time.Sleep(time.Duration(300+r.IntN(700)) * time.Millisecond)
		if i == 1 || i == 2 {
			// The broker goes away while the job reads, and comes back
			// with its sessions and what it queued for them.
			if err := b.Restart(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(200+r.IntN(800)) * time.Millisecond)
		}
		if i == len(parts)-1 {
			got := waitPanes(t, filepath.Join(dir, "results.jsonl"), len(want), stderr)
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			// A pane's watermark says when it fired, which a restart
			// moves (a restored watermark, a batch read at once): the
			// counts are what must not change.
			got, want := withoutWatermark(got), withoutWatermark(want)
			if !slices.Equal(got, want) {
				t.Errorf("%d panes, want the %d of the uninterrupted run:\ngot:\n%s\nwant:\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			break
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	out := stderr.String()
	if !strings.Contains(out, "resuming from") {
		t.Errorf("the last run did not resume from a checkpoint:\n%s", out)
	}
	if t.Failed() {
		t.Logf("the last run said:\n%s", out)
	}
}

// Settings the source refuses stop weir run with exit code 2 and one line
// that names the field.
func TestMQTTSettingsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ src, want string }{
		{`{mqtt: {broker: "tcp://127.0.0.1:1883", topics: [a/#]}}`, "source.mqtt.client_id: missing: a persistent session"},
		{`{mqtt: {broker: "tcp://127.0.0.1:1883", topics: [a/#/b], client_id: x}}`, `source.mqtt.topics: "a/#/b": # matches the rest of a topic`},
		{`{mqtt: {broker: "tcp://127.0.0.1:1883", topics: [a], client_id: x, qos: 2}}`, "source.mqtt.qos: 2 is not supported"},
		{`{mqtt: {broker: "http://127.0.0.1:1883", topics: [a], client_id: x}}`, `source.mqtt.broker: "http://127.0.0.1:1883": expected the scheme tcp`},
		{`{mqtt: {broker: "127.0.0.1:1883", topics: [a], client_id: x, password: p}}`, "source.mqtt.password: given without a username"},
		{`{mqtt: {topics: [a], client_id: x}}`, "source.mqtt.broker: missing"},
		{`{mqtt: {broker: "127.0.0.1:1883", topics: [a], client_id: x, max_inflight: 0}}`, "source.mqtt.max_inflight: expected 1 to 65535, got 0"},
	} {
		os.WriteFile(filepath.Join(dir, "job.yaml"), fmt.Appendf(nil, productionJob, c.src), 0o644)
		code, _, stderr := clitest.Run(t, dir, "run", "job.yaml")
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, said %q; want exit 2 and one line with %q", c.src, code, stderr, c.want)
		}
	}
}
