package examples

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/internal/clitest"
	"github.com/weirstream/weir/internal/mqtttest"
)

// emittedAt is the processing time a live job writes in each result: the
// wall clock, which differs from run to run; the live recipes' expected
// outputs leave it out.
var emittedAt = regexp.MustCompile(`"(emitted_at|set_aside_at)":"[^"]*",`)

// withoutEmittedAt is b without emittedAt's fields.
func withoutEmittedAt(b []byte) []byte { return emittedAt.ReplaceAll(b, nil) }

// startWeir starts weir with args in root, as the page shows it, with env
// added to the test's environment; it is killed when the test ends.
func (r *recipe) startWeir(t *testing.T, root string, env []string, args ...string) (*exec.Cmd, *clitest.Buffer) {
	t.Helper()
	r.commands = append(r.commands, "go run ./cmd/weir "+strings.Join(args, " "))
	cmd := exec.Command(clitest.Bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	stderr := &clitest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stderr
}

// stopAt waits until the live job's output file holds n lines, stops the
// job, and returns the file (without emittedAt), by its name, as the
// recipe's output; the file is taken out of out/.
func stopAt(t *testing.T, cmd *exec.Cmd, stderr *clitest.Buffer, out string, n int) map[string][]byte {
	t.Helper()
	waitLines(t, out, n, stderr)
	stop(t, cmd, stderr)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(out)
	return map[string][]byte{filepath.Base(out): withoutEmittedAt(b)}
}

// stop stops a live job as Ctrl-C does and waits for its end, which must
// be a clean one.
func stop(t *testing.T, cmd *exec.Cmd, stderr *clitest.Buffer) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the job, stopped: %v\n%s", err, stderr)
	}
}

// waitLines waits until the file holds n lines, for at most a minute.
func waitLines(t *testing.T, path string, n int, stderr *clitest.Buffer) []byte {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= n {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d lines after a minute, not %d:\n%s\nthe job's log:\n%s", path, bytes.Count(b, []byte("\n")), n, b, stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lines is a file's lines.
func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// followLog runs the followed log: the log, copied to where the job
// follows it, is read; then the lines of more.log are appended to it while
// the job runs, and it is stopped once it has written their minute.
func followLog(t *testing.T, r *recipe, root string) map[string][]byte {
	dir := r.dir(root)
	log := filepath.Join(dir, "out", "access.log")
	r.commands = append(r.commands, "cp examples/follow-log/access.log examples/follow-log/out/access.log")
	copyFile(t, filepath.Join(dir, "access.log"), log)
	cmd, stderr := r.startWeir(t, root, nil, "run", "examples/follow-log/job.yaml")
	out := filepath.Join(dir, "out", "status.jsonl")
	waitLines(t, out, 6, stderr)
	more, err := os.ReadFile(filepath.Join(dir, "more.log"))
	if err != nil {
		t.Fatal(err)
	}
	r.commands = append(r.commands, "cat examples/follow-log/more.log >> examples/follow-log/out/access.log")
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(more)
	f.Close()
	got := stopAt(t, cmd, stderr, out, 8)
	os.Remove(log) // the input, not an output
	return got
}

// copyFile copies the file from to the file to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// kafkaExactlyOnce runs the Kafka recipe on a broker of the test's own:
// the clicks produced to the clicks topic, the job run until the
// page-counts topic holds its results, then stopped.
func kafkaExactlyOnce(t *testing.T, r *recipe, root string) map[string][]byte {
	b := clitest.StartBroker(t, "clicks:1", "page-counts:1", "clicks-late:1")
	b.ProduceLines("clicks", 0, lines(t, filepath.Join(r.dir(root), "clicks.jsonl")))
	cmd, stderr := r.startWeir(t, root, []string{"WEIR_KAFKA=" + b.Addr}, "run", "examples/kafka-exactly-once/job.yaml")
	got := b.WaitCommitted("page-counts", 4, time.Minute)
	stop(t, cmd, stderr)
	if len(got) != 4 {
		t.Fatalf("page-counts holds %d records, not 4:\n%s\n%s", len(got), strings.Join(got, "\n"), stderr)
	}
	return map[string][]byte{"page-counts.jsonl": withoutEmittedAt([]byte(strings.Join(b.Committed("page-counts"), "\n") + "\n"))}
}

// webhookAlerts runs the webhook recipe against a receiver of the test's
// own, which records each request.
func webhookAlerts(t *testing.T, r *recipe, root string) map[string][]byte {
	var mu sync.Mutex
	var got bytes.Buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		fmt.Fprintf(&got, "%s %s %s\n%s\n", req.Method, req.URL.Path, req.Header.Get("Content-Type"), body)
		mu.Unlock()
	}))
	defer srv.Close()
	t.Setenv("ALERTS_WEBHOOK_URL", srv.URL+"/alerts")
	r.weir(t, root, "run", "examples/webhook-alerts/job.yaml")
	mu.Lock()
	defer mu.Unlock()
	return map[string][]byte{"requests.txt": bytes.Clone(got.Bytes())}
}

// mqttInput runs the MQTT recipe on a mosquitto of the test's own: the
// job's persistent session is made first (as its first run would), the
// readings are published, each to its room's topic, and the job, started,
// gets them from its session and is stopped once it has written them.
func mqttInput(t *testing.T, r *recipe, root string) map[string][]byte {
	b := mqtttest.StartT(t, 0)
	if err := b.Subscribe("weir-mqtt-input", "building/+/temperature"); err != nil {
		t.Fatal(err)
	}
	var msgs []mqtttest.Message
	for _, l := range lines(t, filepath.Join(r.dir(root), "readings.jsonl")) {
		room := regexp.MustCompile(`"room":"([^"]*)"`).FindSubmatch(l)[1]
		msgs = append(msgs, mqtttest.Message{Topic: "building/" + string(room) + "/temperature", Payload: l})
	}
	if err := b.Publish(1, msgs...); err != nil {
		t.Fatal(err)
	}
	cmd, stderr := r.startWeir(t, root, []string{"WEIR_MQTT=" + b.Addr}, "run", "examples/mqtt-input/job.yaml")
	out := filepath.Join(r.dir(root), "out", "rooms.jsonl")
	return stopAt(t, cmd, stderr, out, 4)
}

// sensorCountsPostgres runs the PostgreSQL recipe on a database of the
// test's own, and reads the table back with psql as the page does.
func sensorCountsPostgres(t *testing.T, r *recipe, root string) map[string][]byte {
	dsn := clitest.PGDatabase(t)
	t.Setenv("WEIR_POSTGRES_DSN", dsn)
	r.weir(t, root, "run", "examples/sensor-counts-postgres/job.yaml")
	const query = "SELECT sensor, window_start, readings, mean, revision, status FROM sensor_counts ORDER BY sensor, window_start"
	r.commands = append(r.commands, `psql "$WEIR_POSTGRES_DSN" -c "`+query+`"`)
	out, err := exec.Command("psql", dsn, "-c", query).CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	return map[string][]byte{"sensor_counts.txt": out}
}

// avroRegistry runs the Avro recipe on a broker and a schema registry of
// the test's own: reading.avsc registered as readings-value, each line of
// readings.jsonl produced as an Avro record in the registry's framing, the
// job run until it has written their minutes, then stopped.
func avroRegistry(t *testing.T, r *recipe, root string) map[string][]byte {
	schemaText, err := os.ReadFile(filepath.Join(r.dir(root), "reading.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	reg := srfake.NewRegistry()
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	id, _, err := reg.RegisterSchema("readings-value", sr.Schema{Schema: string(schemaText), Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := avro.Parse(string(schemaText))
	if err != nil {
		t.Fatal(err)
	}
	var records [][]byte
	for _, l := range lines(t, filepath.Join(r.dir(root), "readings.jsonl")) {
		var v struct {
			Sensor  string    `json:"sensor"`
			Celsius float64   `json:"celsius"`
			TS      time.Time `json:"ts"`
		}
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		rec := []byte{0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(rec[1:], uint32(id))
		if rec, err = schema.AppendEncode(rec, map[string]any{"sensor": v.Sensor, "celsius": v.Celsius, "ts": v.TS}); err != nil {
			t.Fatal(err)
		}
		records = append(records, rec)
	}
	b := clitest.StartBroker(t, "readings:1")
	b.ProduceLines("readings", 0, records)
	cmd, stderr := r.startWeir(t, root, []string{"WEIR_KAFKA=" + b.Addr, "WEIR_REGISTRY=" + srv.URL}, "run", "examples/avro-registry/job.yaml")
	return stopAt(t, cmd, stderr, filepath.Join(r.dir(root), "out", "means.jsonl"), 4)
}

// consumerGroup runs the consumer-group recipe: the readings produced to
// a topic of two partitions, each sensor's to one (s1 to 0, s2 to 1), and
// two instances of the job, which share them, run until the output topic
// holds their results, then stopped. The topic's records are in the order
// the two tasks committed them: the expected output is sorted.
func consumerGroup(t *testing.T, r *recipe, root string) map[string][]byte {
	b := clitest.StartBroker(t, "readings:2", "sensor-counts:1")
	var part [2][][]byte
	for _, l := range lines(t, filepath.Join(r.dir(root), "readings.jsonl")) {
		p := 0
		if bytes.Contains(l, []byte(`"sensor":"s2"`)) {
			p = 1
		}
		part[p] = append(part[p], l)
	}
	for p, ls := range part {
		b.ProduceLines("readings", int32(p), ls)
	}
	env := []string{"WEIR_KAFKA=" + b.Addr}
	cmd1, stderr1 := r.startWeir(t, root, env, "run", "examples/consumer-group/job.yaml")
	cmd2, stderr2 := r.startWeir(t, root, env, "run", "examples/consumer-group/job.yaml")
	got := b.WaitCommitted("sensor-counts", 4, 2*time.Minute)
	stop(t, cmd1, stderr1)
	stop(t, cmd2, stderr2)
	if len(got) != 4 {
		t.Fatalf("sensor-counts holds %d records, not 4:\n%s\n%s\n%s", len(got), strings.Join(got, "\n"), stderr1, stderr2)
	}
	out := withoutEmittedAt([]byte(strings.Join(b.Committed("sensor-counts"), "\n")))
	ls := strings.Split(string(out), "\n")
	slices.Sort(ls)
	return map[string][]byte{"sensor-counts.jsonl": []byte(strings.Join(ls, "\n") + "\n")}
}
