package job

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

// The orders' Avro schema, as a registry would hold it: ts a
// timestamp-millis, card a nullable string.
const ordersV1 = `{"type":"record","name":"Order","namespace":"steep","fields":[
 {"name":"order_id","type":"string"},
 {"name":"card","type":["null","string"],"default":null},
 {"name":"user_id","type":"string"},
 {"name":"amount","type":"double"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

// ordersV2 adds a field with a default: a compatible evolution.
var ordersV2 = strings.Replace(ordersV1, `{"name":"amount"`, `{"name":"channel","type":"string","default":"web"},{"name":"amount"`, 1)

// fraudOrders are the first n orders of the fraud example, as JSON lines,
// and a last order an hour later that closes every window before it.
func fraudOrders(t testing.TB, n int) []string {
	t.Helper()
	f, err := os.Open("../examples/fraud/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < n {
		out = append(out, sc.Text())
	}
	var last map[string]any
	json.Unmarshal([]byte(out[len(out)-1]), &last)
	ts, _ := mtime.Parse([]byte(last["ts"].(string)))
	out = append(out, fmt.Sprintf(`{"order_id":"o-last","card":"card-last","user_id":"u","amount":1,"ts":"%s"}`, ts+3600_000))
	return out
}

// orderValue is an order line as the Avro schema's record.
func orderValue(t testing.TB, line string, v2 bool) map[string]any {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		t.Fatal(err)
	}
	ts, err := mtime.Parse([]byte(o["ts"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string]any{"order_id": o["order_id"], "card": o["card"], "user_id": o["user_id"], "amount": o["amount"], "ts": time.UnixMilli(int64(ts)).UTC()}
	if v2 {
		rec["channel"] = "app"
	}
	return rec
}

// framed is a record in the registry's framing.
func framed(id int, payload []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, payload...)
}

const avroFraudJob = `name: fraud
source: %s
time: {field: ts}
key: card
id: order_id
watermark: {delay: 2s, interval: 0s}
window: {tumbling: 1m}
aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
checkpoint: {dir: ckpt, interval: 1h}
`

// withLate is want (outputs) with one more too-late event: a record of
// the order of value (an order id as its text) sent again among the
// orders, before the one at pos.
func withLate(t testing.TB, want, orders []string, pos int, value []byte) []string {
	t.Helper()
	id := ""
	for _, o := range orders {
		var m struct {
			OrderID string `json:"order_id"`
		}
		json.Unmarshal([]byte(o), &m)
		if bytes.Contains(value, []byte(m.OrderID)) && len(m.OrderID) > len(id) {
			id = m.OrderID
		}
	}
	at := len(want)
	for i, w := range want {
		id, ok := strings.CutPrefix(w, "late ")
		if ok && slices.IndexFunc(orders, func(o string) bool { return strings.Contains(o, `"order_id":"`+id+`"`) }) >= pos {
			at = i
			break
		}
	}
	return slices.Insert(slices.Clone(want), at, "late "+id)
}

// outputs are the panes of the fraud job's run in dir (panes), then its
// too-late events, each as "late ORDER_ID": a too-late event is written as
// the object its record reads as, whatever its format.
func outputs(t testing.TB, dir string) []string {
	t.Helper()
	out := panes(t, filepath.Join(dir, "results.jsonl"))
	b, err := os.ReadFile(filepath.Join(dir, "late.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Event struct {
				OrderID string `json:"order_id"`
			} `json:"event"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.Event.OrderID == "" {
			t.Fatalf("a too-late event that is not an order (%v): %s", err, l)
		}
		out = append(out, "late "+m.Event.OrderID)
	}
	return out
}

// panes are a results file's panes, without the time each was written
// and without the last order's.
func panes(t testing.TB, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["key"] == "card-last" {
			continue
		}
		delete(m, "emitted_at")
		c, _ := json.Marshal(m)
		out = append(out, string(c))
	}
	return out
}

// jsonPanes runs the fraud job on the orders as a JSON-lines file.
func jsonPanes(t testing.TB, orders []string) []string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "orders.jsonl"), []byte(strings.Join(orders, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(avroFraudJob, "orders.jsonl")), 0o644)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), j, Options{}); err != nil {
		t.Fatal(err)
	}
	return outputs(t, dir)
}

// The fraud job on an Avro topic framed by a schema registry writes
// exactly the panes of the same job over the same orders as JSON lines,
// though the schema evolves in the middle of the stream (a field added
// with a default); records with a wrong magic byte, an unknown schema id,
// a payload that does not decode or a field of a type the reader's schema
// cannot take are quarantined with their reason, partition and offset,
// and the job goes on.
func TestAvroTopicWithRegistry(t *testing.T) {
	orders := fraudOrders(t, 800)
	want := jsonPanes(t, orders)

	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	id1, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersV1})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := avro.MustParse(ordersV1), avro.MustParse(ordersV2)
	addr := broker(t, "orders")
	var values [][]byte
	id2 := 0
	for i, line := range orders {
		s, id, v2 := s1, id1, false
		if i >= len(orders)/2 {
			if id2 == 0 {
				if id2, _, err = reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersV2}); err != nil {
					t.Fatal(err)
				}
			}
			s, id, v2 = s2, id2, true
		}
		b, err := s.Encode(orderValue(t, line, v2))
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, framed(id, b))
	}
	values = badRecords(values)
	// A writer whose amount is a string, in a subject of its own: the
	// reader's schema (orders-value's) cannot read it.
	idStr, _, err := reg.RegisterSchema("other-value", sr.Schema{Schema: strings.Replace(ordersV1, `"type":"double"`, `"type":"string"`, 1)})
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := avro.MustParse(strings.Replace(ordersV1, `"type":"double"`, `"type":"string"`, 1)).Encode(map[string]any{
		"order_id": "o-wrong", "card": "c", "user_id": "u", "amount": "12", "ts": time.UnixMilli(1788220800000)})
	if err != nil {
		t.Fatal(err)
	}
	values = slices.Insert(values, 400, framed(idStr, wrong))
	checkRegistryRun(t, "avro", addr, reg.URL(), values, want, map[string]int64{"bad_magic_byte": 1, "unknown_schema": 1, "not_decodable": 2})
}

// checkRegistryRun produces the records to the topic orders at addr, runs
// the fraud job on them, of the format with the registry at url, and
// checks its panes and what it quarantined; it returns the quarantine.
func checkRegistryRun(t *testing.T, format, addr, url string, values [][]byte, want []string, reasons map[string]int64) string {
	t.Helper()
	produce(t, addr, values)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(avroFraudJob,
		fmt.Sprintf("{kafka: {brokers: [%s], topic: orders}, format: %s, registry: {url: %q}}", addr, format, url))), 0o644)
	log, sum, err := runLive(t, dir, int64(len(values)))
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	got := outputs(t, dir)
	if !slices.Equal(got, want) || len(got) < 100 {
		t.Errorf("%d panes from %s, %d from JSON lines; first difference:\n%s", len(got), format, len(want), firstDiff(got, want))
	}
	var n int64
	for r, c := range reasons {
		n += c
		if sum.QuarantineReasons[r] != c {
			t.Errorf("quarantined %v, want %v", sum.QuarantineReasons, reasons)
			break
		}
	}
	if sum.Quarantined != n {
		t.Errorf("%d quarantined, want %d", sum.Quarantined, n)
	}
	q, _ := os.ReadFile(filepath.Join(dir, "quarantine.jsonl"))
	wantQ := []string{`"reason":"unknown_schema"`, `"reason":"bad_magic_byte"`, `"partition":"orders/0"`, `"offset":101`}
	if format != "json_schema" {
		// Binary payloads; JSON framed by small ids is text.
		wantQ = append(wantQ, `_base64":"`)
	}
	for _, want := range wantQ {
		if !strings.Contains(string(q), want) {
			t.Errorf("the quarantine lacks %s:\n%s", want, q)
		}
	}
	return string(q)
}

// produce produces the values, in order, to the topic orders at addr.
func produce(t *testing.T, addr string, values [][]byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range values {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// badRecords inserts after records 100, 200 and 300 one whose first byte is
// not the framing's, one of an id the registry does not have, and one
// whose payload is cut short.
func badRecords(values [][]byte) [][]byte {
	var out [][]byte
	for i, v := range values {
		out = append(out, v)
		switch i {
		case 100:
			out = append(out, []byte(`{"order_id":"o-json","card":"c","ts":1788220800000}`))
		case 200:
			out = append(out, framed(9999, v[5:]))
		case 300:
			out = append(out, v[:len(v)-3])
		}
	}
	return out
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("#%d\n got %s\nwant %s", i, a[i], b[i])
		}
	}
	return "(one is a prefix of the other)"
}

// BenchmarkDecodeAvro reads the lines of BenchmarkDecode as Avro records
// framed by a registry (their schema fetched once): what a record costs
// beyond its JSON line, turned into one first.
func BenchmarkDecodeAvro(b *testing.B) {
	j, lines := avroOrders(b)
	benchDecode(b, j, lines)
}

// avroOrders are a registry's fraud job (with extra lines of YAML) and 1000
// orders of its topic.
func avroOrders(tb testing.TB, extra ...string) (*jobfile.Job, [][]byte) {
	tb.Helper()
	const schema = `{"type":"record","name":"E","fields":[{"name":"event_id","type":"string"},{"name":"card","type":"string"},
{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"arrival","type":{"type":"long","logicalType":"timestamp-millis"}},
{"name":"amount","type":"double"},{"name":"user","type":"string"}]}`
	reg := srfake.New()
	tb.Cleanup(reg.Close)
	id, _, err := reg.RegisterSchema("e-value", sr.Schema{Schema: schema})
	if err != nil {
		tb.Fatal(err)
	}
	s := avro.MustParse(schema)
	job := strings.Replace(fraudJob, "source: {file: input.jsonl}", fmt.Sprintf("source: {kafka: {brokers: [127.0.0.1:1], topic: e}, format: avro, registry: {url: %q}}", reg.URL()), 1)
	job += strings.Join(extra, "\n")
	j, err := jobfile.Parse([]byte(job), "job.yaml", "/d")
	if err != nil {
		tb.Fatal(err)
	}
	lines := make([][]byte, 1000)
	for i := range lines {
		v, err := s.Encode(map[string]any{"event_id": fmt.Sprintf("e%d", i), "card": fmt.Sprintf("c%d", i%100), "ts": time.UnixMilli(1788782400000 + int64(i)),
			"arrival": time.UnixMilli(1788782400000 + int64(i)), "amount": float64(i%300) + float64(i%100)/100, "user": fmt.Sprintf("u%d", i%7)})
		if err != nil {
			tb.Fatal(err)
		}
		lines[i] = framed(id, v)
	}
	return j, lines
}

// python is Debian's Python 3, where Debian's python3-confluent-kafka and
// python3-avro are.
func python(t *testing.T) string {
	t.Helper()
	return pythonWith(t, "confluent_kafka.avro, avro.datafile, requests", "python3-confluent-kafka, python3-avro and python3-requests")
}

// pythonWith is Debian's Python 3 (or the PATH's) that imports the modules
// imports; without one the test fails, naming the Debian packages that
// hold them.
func pythonWith(t *testing.T, imports, packages string) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import "+imports).Run() == nil {
			return p
		}
	}
	t.Fatalf("no python3 with %s (apt-get install them)", packages)
	return ""
}

// Records written by Confluent's own client library (python3-confluent-
// kafka's Avro serializer and registry client, which registers the schemas
// itself) are read by weir with exact results: the fraud job on them writes
// the panes of the JSON lines, through the schema's evolution halfway; the
// bad records among them are quarantined.
func TestAvroFromConfluentClient(t *testing.T) {
	py := python(t)
	orders := fraudOrders(t, 800)
	want := jsonPanes(t, orders)
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1.avsc"), filepath.Join(dir, "v2.avsc")
	os.WriteFile(v1, []byte(ordersV1), 0o644)
	os.WriteFile(v2, []byte(ordersV2), 0o644)
	values := hexRecords(t, exec.Command(py, "testdata/confluent_avro.py", reg.URL(), "orders", v1, v2), orders)
	if len(values) != len(orders) {
		t.Fatalf("%d records for %d orders", len(values), len(orders))
	}
	if ss, ok := reg.GetSchema("orders-value", 2); !ok || !strings.Contains(ss.Schema.Schema, "channel") {
		t.Fatalf("the client did not register the second version: %+v", ss)
	}
	checkRegistryRun(t, "avro", broker(t, "orders"), reg.URL(), badRecords(values), want, map[string]int64{"bad_magic_byte": 1, "unknown_schema": 1, "not_decodable": 1})
}

// hexRecords are the records cmd writes of the orders it reads, one a line
// in hex.
func hexRecords(t *testing.T, cmd *exec.Cmd, orders []string) [][]byte {
	t.Helper()
	cmd.Stdin = strings.NewReader(strings.Join(orders, "\n"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var values [][]byte
	for _, l := range strings.Fields(string(out)) {
		b, err := hex.DecodeString(l)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, b)
	}
	return values
}

// An Avro object container file written by Apache Avro's Python library
// and a CSV file written by Python's csv module, of the same orders, give
// weir run the panes of their JSON lines.
func TestAvroAndCSVFiles(t *testing.T) {
	py := python(t)
	orders := fraudOrders(t, 800)
	want := jsonPanes(t, orders)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "orders.avsc"), []byte(ordersV1), 0o644)
	cmd := exec.Command(py, "testdata/orders_files.py", filepath.Join(dir, "orders.avsc"), filepath.Join(dir, "orders.avro"), filepath.Join(dir, "orders.csv"))
	cmd.Stdin = strings.NewReader(strings.Join(orders, "\n"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, src := range []string{
		"{file: orders.avro, format: avro}",
		"{file: orders.avro, format: avro, schema: orders.avsc}",
		"{file: orders.csv, format: csv}",
		"{file: orders.csv, format: csv, columns: [card:string, amount:number]}",
	} {
		t.Run(src, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(avroFraudJob, src)), 0o644)
			os.RemoveAll(filepath.Join(dir, "ckpt"))
			j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Run(context.Background(), j, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := outputs(t, dir); !slices.Equal(got, want) {
				t.Errorf("%d panes, %d from JSON lines; first difference:\n%s", len(got), len(want), firstDiff(got, want))
			}
			if sum.Read != int64(len(orders)) || sum.Quarantined != 0 {
				t.Errorf("%+v", sum)
			}
		})
	}
}

// The sample of a job's first records reads the fields of what the format
// made of them, not their bytes: no field the job names is said missing.
func TestAvroSampleSeesFields(t *testing.T) {
	reg := srfake.New()
	t.Cleanup(reg.Close)
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: ordersV1})
	if err != nil {
		t.Fatal(err)
	}
	j, err := jobfile.Parse([]byte(fmt.Sprintf(avroFraudJob, fmt.Sprintf("{kafka: {brokers: [127.0.0.1:1], topic: orders}, format: avro, registry: {url: %q}}", reg.URL()))), "job.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &lineWatch{lineParser: runParser(t, j), s: newSample(j), log: func(string) {}}
	s := avro.MustParse(ordersV1)
	for i, line := range fraudOrders(t, 200) {
		b, err := s.Encode(orderValue(t, line, false))
		if err != nil {
			t.Fatal(err)
		}
		var d engine.Decoded[string, record]
		w.Decode(&connector.Record{Value: framed(id, b), Offset: int64(i), Arrival: mtime.Now(), Timestamp: mtime.MinTime}, &d)
	}
	if f := w.s.Findings(); len(f) != 0 {
		t.Errorf("%v", f)
	}
}
