package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/internal/jsontree"
	"github.com/weirstream/weir/plan"
)

// A record's logical types, unions, nested records, maps and arrays become
// the JSON the line rules read: timestamp-millis as epoch milliseconds,
// finer ones in RFC 3339 with all their digits, a decimal with its scale.
func TestAvroJSON(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[
 {"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"maybe","type":["null",{"type":"bytes","logicalType":"decimal","precision":9,"scale":3}]},
 {"name":"none","type":["null","string"]},
 {"name":"meta","type":{"type":"record","name":"M","fields":[{"name":"k","type":"string"},{"name":"n","type":"int"}]}},
 {"name":"tags","type":{"type":"map","values":"float"}},
 {"name":"list","type":{"type":"array","items":"boolean"}},
 {"name":"raw","type":"bytes"},
 {"name":"color","type":{"type":"enum","name":"C","symbols":["RED","BLUE"]}}]}`
	s := avro.MustParse(schema)
	ts := time.Date(2026, 9, 1, 12, 0, 1, 123456000, time.UTC)
	b, err := s.Encode(map[string]any{"ms": ts, "us": ts, "day": ts, "price": big.NewRat(1250, 100), "maybe": big.NewRat(-5, 1000), "none": nil,
		"meta": map[string]any{"k": "x\"y", "n": 7}, "tags": map[string]any{"b": float32(2.5), "a": float32(0.1)}, "list": []any{true, false},
		"raw": []byte{0, 255}, "color": "BLUE"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "r.avsc"), []byte(schema), 0o644)
	cfg, err := parseAvro(plan.Values{"schema": filepath.Join(dir, "r.avsc")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cfg.New(plan.Env{}, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.AppendJSON(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ms":1788264001123,"us":"2026-09-01T12:00:01.123456Z","day":"2026-09-01T00:00:00Z","price":12.50,"maybe":-0.005,"none":null,` +
		`"meta":{"k":"x\"y","n":7},"tags":{"a":0.1,"b":2.5},"list":[true,false],"raw":"AP8=","color":"BLUE"}`
	var v any
	if _, err := s.Decode(b, &v); err != nil {
		t.Fatal(err)
	}
	// Straight from the binary, and from the library's values (as a
	// record that needs resolving is): the same JSON, but for the order
	// of a map's keys.
	lib := appendAvroJSON(nil, v, s.Root().ExpandReferences())
	if !sameJSON(t, got, []byte(want)) || !sameJSON(t, lib, []byte(want)) {
		t.Errorf("got  %s\nlib  %s\nwant %s", got, lib, want)
	}
	var bad *plan.BadRecord
	if _, err := d.AppendJSON(nil, b[:len(b)-2]); !errors.As(err, &bad) || bad.Reason != ReasonNotDecodable {
		t.Errorf("cut short: %v", err)
	}
	if _, err := d.AppendJSON(nil, append(b, 0)); !errors.As(err, &bad) || bad.Reason != ReasonNotDecodable {
		t.Errorf("a byte more: %v", err)
	}
}

// sameJSON says a and b are the same JSON, numbers as written.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	for _, c := range []struct {
		in  []byte
		out *any
	}{{a, &x}, {b, &y}} {
		d := json.NewDecoder(bytes.NewReader(c.in))
		d.UseNumber()
		if err := d.Decode(c.out); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
	}
	return reflect.DeepEqual(x, y)
}

// The registry's framing: a magic byte 0 and a 4-byte big-endian id.
func TestFrame(t *testing.T) {
	if id, p, err := frame([]byte{0, 0, 1, 0, 2, 9}); err != nil || id != 65538 || len(p) != 1 {
		t.Errorf("%d %v %v", id, p, err)
	}
	for _, b := range [][]byte{{1, 0, 0, 0, 1}, {0, 0, 0}, []byte(`{"a":1}`)} {
		var bad *plan.BadRecord
		if _, _, err := frame(b); !errors.As(err, &bad) || bad.Reason != ReasonBadMagicByte {
			t.Errorf("%q: %v", b, err)
		}
	}
}

// A registry that cannot be reached is asked again with backoff: a record
// of a schema already fetched is read meanwhile, one whose schema is not
// waits for it rather than being dropped; an id the registry answers it
// does not have is unknown_schema. The credentials go to the registry, and
// into no log line.
func TestRegistryDownAndBack(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`
	var down atomic.Bool
	var mu sync.Mutex
	var auth []string
	reg := srfake.New()
	defer reg.Close()
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	id1, _, _ := reg.RegisterSchema("t-value", sr.Schema{Schema: schema})
	id2, _, _ := reg.RegisterSchema("u-value", sr.Schema{Schema: strings.Replace(schema, `"long"`, `"int"`, 1)})
	cfg, err := parseAvro(plan.Values{}, &plan.Registry{URL: reg.URL(), Token: "s3cret-token"})
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var logs []string
	d, err := cfg.New(plan.Env{Log: func(s string) { logMu.Lock(); logs = append(logs, s); logMu.Unlock() }}, "t")
	if err != nil {
		t.Fatal(err)
	}
	d.(*avroDecoder).reg.wait = 50 * time.Millisecond
	rec := func(id int, v any) []byte {
		s := avro.MustParse(schema)
		if id == id2 {
			s = avro.MustParse(strings.Replace(schema, `"long"`, `"int"`, 1))
		}
		b, _ := s.Encode(map[string]any{"a": v})
		return framed(id, b)
	}
	if got, err := d.AppendJSON(nil, rec(id1, 5)); err != nil || string(got) != `{"a":5}` {
		t.Fatalf("%s %v", got, err)
	}
	down.Store(true)
	if got, err := d.AppendJSON(nil, rec(id1, 6)); err != nil || string(got) != `{"a":6}` {
		t.Fatalf("a cached schema, the registry down: %s %v", got, err)
	}
	done := make(chan string)
	go func() {
		got, err := d.AppendJSON(nil, rec(id2, 7))
		done <- fmt.Sprint(string(got), err)
	}()
	select {
	case r := <-done:
		t.Fatalf("read while the registry was down: %s", r)
	case <-time.After(300 * time.Millisecond):
	}
	down.Store(false)
	if r := <-done; r != `{"a":7}<nil>` {
		t.Errorf("once the registry is back: %s", r)
	}
	var bad *plan.BadRecord
	if _, err := d.AppendJSON(nil, rec(4242, 1)); !errors.As(err, &bad) || bad.Reason != ReasonUnknownSchema {
		t.Errorf("unknown id: %v", err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if len(logs) == 0 {
		t.Error("no log line while the registry was down")
	}
	for _, l := range logs {
		if strings.Contains(l, "s3cret") {
			t.Errorf("a log line shows the token: %s", l)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || auth[0] != "Bearer s3cret-token" {
		t.Errorf("authorization %q", auth)
	}
}

func framed(id int, payload []byte) []byte {
	return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, payload...)
}

// Straight from the binary and through the library's values, a payload
// (valid, or cut, or with bytes changed) is the same JSON or refused by
// both.
func TestTranscoderAgreesWithLibrary(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"id","type":"string"},{"name":"n","type":["null","long","double"]},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"d","type":{"type":"fixed","name":"F","size":4,"logicalType":"decimal","precision":8,"scale":2}},
 {"name":"a","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"x","type":"int"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}}},
 {"name":"ok","type":"boolean"},{"name":"f","type":"float"}]}`)
	node := s.Root().ExpandReferences()
	tr := newTranscoder(node)
	base, err := s.Encode(map[string]any{"id": "card_1", "n": int64(-3), "ts": time.UnixMilli(1788264001123), "d": big.NewRat(-12345, 100),
		"a": []any{map[string]any{"x": 1, "e": "B"}, map[string]any{"x": -70000, "e": "A"}}, "ok": true, "f": float32(1.5)})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		b := mutated(rng, i, base, nil)
		direct, derr := tr.appendJSON(nil, b)
		var v any
		rest, lerr := s.Decode(b, &v)
		if lerr == nil && len(rest) > 0 {
			lerr = errors.New("bytes after")
		}
		if (derr == nil) != (lerr == nil) {
			t.Fatalf("%x: direct %v, library %v", b, derr, lerr)
		}
		if derr == nil {
			if lib := appendAvroJSON(nil, v, node); !sameJSON(t, direct, lib) {
				t.Fatalf("%x:\n%s\n%s", b, direct, lib)
			}
		}
	}
}

// A framed record's key is found ahead once its schema was read, and not
// before: finding it never asks the registry.
func TestFramedKeyFoundAhead(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[{"name":"n","type":"long"},{"name":"card","type":"string"}]}`
	reg := srfake.New()
	defer reg.Close()
	var asked atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		asked.Add(1)
		return false
	})
	id, _, _ := reg.RegisterSchema("t-value", sr.Schema{Schema: schema})
	cfg, err := parseAvro(plan.Values{}, &plan.Registry{URL: reg.URL()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := cfg.New(plan.Env{}, "t")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := avro.MustParse(schema).Encode(map[string]any{"n": int64(3), "card": "c7"})
	rec := framed(id, b)
	finder := d.(jsontree.StringFinder)
	if k, ok := finder.String(rec, "card"); ok || asked.Load() != 0 {
		t.Fatalf("found %q before the schema was read, the registry asked %d times", k, asked.Load())
	}
	if _, err := d.AppendJSON(nil, rec); err != nil {
		t.Fatal(err)
	}
	n := asked.Load()
	if k, ok := finder.String(rec, "card"); !ok || string(k) != "c7" || asked.Load() != n {
		t.Fatalf("found %q %v once the schema was read", k, ok)
	}
}
