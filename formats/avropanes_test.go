package formats

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
)

var paneShape = plan.PaneShape{Job: "fraud-alerts", Keys: []string{"card", "merchant"}, Windowed: true, Aggregates: []plan.AggregateShape{
	{Name: "orders", Type: plan.Integer}, {Name: "spent", Type: plan.Number}, {Name: "mean", Type: plan.Number},
	{Name: "biggest", Type: plan.Number}, {Name: "first_id", Type: plan.JSONText}, {Name: "none", Type: plan.Number},
}}

// A pane written by AvroPanes reads back, through a library that did not
// write it (twmb/avro, with the schema as registered), as the pane it was:
// every field in its place, each aggregate in its union's branch.
func TestAvroPanesRoundTrip(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	a, err := NewAvroPanes(paneShape, &plan.Registry{URL: reg.URL()}, "alerts", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := &plan.PaneFields{Keys: []any{"c1", "m9"}, Start: 1_788_000_000_000, End: 1_788_000_060_000, Revision: 2, Timing: "LATE",
		Final: true, Mode: "retracting", Version: 3, Watermark: 1_788_000_061_000, Emitted: 1_788_000_062_500,
		Names:   []string{"orders", "spent", "mean", "biggest", "first_id", "none"},
		Values:  []any{int64(5), "110.70", 22.14, int64(-31), plan.RawJSON(`"o-1"`), nil},
		Partial: []string{"mean"}}
	key, value := a.Record(p)

	keySubject, valueSubject := a.Subjects()
	if keySubject != "alerts-key" || valueSubject != "alerts-value" {
		t.Fatalf("subjects %s, %s", keySubject, valueSubject)
	}
	decode := func(subject string, rec []byte) map[string]any {
		t.Helper()
		ss, ok := reg.GetSchema(subject, 1)
		if !ok {
			t.Fatalf("%s has no version 1", subject)
		}
		if rec[0] != 0 || int(rec[1])<<24|int(rec[2])<<16|int(rec[3])<<8|int(rec[4]) != ss.ID {
			t.Fatalf("%s: framing % x, schema id %d", subject, rec[:5], ss.ID)
		}
		s, err := avro.Parse(ss.Schema.Schema)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		rest, err := s.Decode(rec[5:], &m)
		if err != nil || len(rest) != 0 {
			t.Fatalf("%s: %v, %d bytes left", subject, err, len(rest))
		}
		return m
	}
	start, end := time.UnixMilli(1_788_000_000_000).UTC(), time.UnixMilli(1_788_000_060_000).UTC()
	if got, want := decode("alerts-key", key), map[string]any{"card": "c1", "merchant": "m9", "window_start": start, "window_end": end}; !reflect.DeepEqual(got, want) {
		t.Errorf("key %v, want %v", got, want)
	}
	want := map[string]any{"card": "c1", "merchant": "m9", "window_start": start, "window_end": end,
		"revision": int64(2), "timing": "LATE", "final": true, "retract": false, "status": "closed", "mode": "retracting", "version": int64(3),
		"watermark": time.UnixMilli(1_788_000_061_000).UTC(), "emitted_at": time.UnixMilli(1_788_000_062_500).UTC(),
		"orders": int64(5), "spent": "110.70", "mean": 22.14, "biggest": int64(-31), "first_id": `"o-1"`, "none": nil,
		"partial": []any{"mean"}}
	got := decode("alerts-value", value)
	for k, v := range want {
		if g := got[k]; !reflect.DeepEqual(g, v) {
			t.Errorf("%s: %#v, want %#v", k, g, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d fields, want %d: %v", len(got), len(want), got)
	}
	// Every field a job may add or drop has a default: the aggregates
	// null, partial []; and mode, which a weir before wrote none of, "".
	_, vs := a.Schemas()
	var schema struct{ Fields []map[string]json.RawMessage }
	if err := json.Unmarshal([]byte(vs), &schema); err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, f := range schema.Fields {
		if d, ok := f["default"]; ok {
			var name string
			json.Unmarshal(f["name"], &name)
			defaults[name] = string(d)
		}
	}
	if want := map[string]string{"orders": "null", "spent": "null", "mean": "null", "biggest": "null", "first_id": "null", "none": "null", "partial": "[]", "mode": `""`}; !reflect.DeepEqual(defaults, want) {
		t.Errorf("defaults %v, want %v", defaults, want)
	}
}

// A job that adds an aggregate registers a new version of its subject,
// which a registry that checks backward compatibility takes (the new
// field is a union with null, null by default): the new schema reads the
// records of the old one.
func TestAvroPanesEvolution(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	t.Cleanup(reg.Close)
	v1 := plan.PaneShape{Job: "j", Keys: []string{"key"}, Windowed: true, Aggregates: []plan.AggregateShape{{Name: "n", Type: plan.Integer}}}
	v2 := v1
	v2.Aggregates = append(v2.Aggregates, plan.AggregateShape{Name: "sum", Type: plan.Number})
	var ids []int
	var schemas []string
	for _, s := range []plan.PaneShape{v1, v2, v1} {
		a, err := NewAvroPanes(s, &plan.Registry{URL: reg.URL()}, "t", TopicRecordName, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Register(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, vs := a.Subjects()
		if vs != "t-weir.j.Pane" {
			t.Fatalf("subject %s", vs)
		}
		ids = append(ids, a.valID)
		_, v := a.Schemas()
		schemas = append(schemas, v)
	}
	if ids[0] == ids[1] || ids[2] != ids[0] {
		t.Errorf("ids %v: want a new id for the second schema, the first's again for the first", ids)
	}
	if _, ok := reg.GetSchema("t-weir.j.Pane", 2); !ok {
		t.Error("no version 2")
	}
	// The new schema reads a record of the old one: the new field is null.
	w, r := avro.MustParse(schemas[0]), avro.MustParse(schemas[1])
	res, err := avro.Resolve(w, r)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := NewAvroPanes(v1, &plan.Registry{URL: reg.URL()}, "t", "", nil)
	_, rec := a.Record(&plan.PaneFields{Keys: []any{"k"}, Values: []any{int64(7)}})
	var m map[string]any
	if _, err := res.Decode(rec[5:], &m); err != nil {
		t.Fatal(err)
	}
	if m["n"] != int64(7) || m["sum"] != nil || len(m) != 15 {
		t.Errorf("the old record through the new schema: %v", m)
	}
}

// A registry that refuses a schema (an evolution its compatibility rule
// forbids) is a permanent error, in one line naming the subject and the
// rule; one that fails with a 5xx, a transient one.
func TestAvroPanesRefused(t *testing.T) {
	reg := srfake.New()
	t.Cleanup(reg.Close)
	status := http.StatusConflict
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/subjects/alerts-value/versions"):
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(status)
			w.Write([]byte(`{"error_code":` + map[int]string{409: "409", 500: "50001", 401: "401"}[status] + `,"message":"Schema being registered is incompatible with an earlier schema for subject \"alerts-value\", details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'n' at path '/fields/1' in the new schema has no default value and is missing in the old schema'}]"}`))
		case r.Method == http.MethodGet && r.URL.Path == "/config/alerts-value":
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.Write([]byte(`{"compatibilityLevel":"FULL_TRANSITIVE"}`))
		default:
			reg.Handler().ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	a, err := NewAvroPanes(plan.PaneShape{Job: "j"}, &plan.Registry{URL: srv.URL}, "alerts", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Register(context.Background())
	want := "schema registry " + srv.URL + ` refuses the schema of subject alerts-value (compatibility FULL_TRANSITIVE): Schema being registered is incompatible with an earlier schema for subject "alerts-value", details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'n' at path '/fields/1' in the new schema has no default value and is missing in the old schema'}]`
	if err == nil || err.Error() != want || connector.Retryable(err) {
		t.Errorf("refused: %v (retryable %v), want\n%s", err, connector.Retryable(err), want)
	}
	status = http.StatusInternalServerError
	if err := a.Register(context.Background()); err == nil || !connector.Retryable(err) {
		t.Errorf("a failing registry: %v, want a retryable error", err)
	}
	status = http.StatusUnauthorized
	if err := a.Register(context.Background()); err == nil || connector.Retryable(err) || !strings.HasSuffix(err.Error(), "(HTTP 401)") {
		t.Errorf("an unauthorized client: %v, want a permanent error saying HTTP 401", err)
	}
	// The key's subject was registered by the first try already.
	if _, ok := reg.GetSchema("alerts-key", 1); !ok {
		t.Error("the key's schema is not registered")
	}
}

// Names that an Avro field cannot have are refused before anything is
// registered.
func TestAvroPanesNames(t *testing.T) {
	for _, n := range []string{"", "9lives", "p-95", "a.b"} {
		_, err := NewAvroPanes(plan.PaneShape{Aggregates: []plan.AggregateShape{{Name: n}}}, &plan.Registry{URL: "http://127.0.0.1:1"}, "t", "", nil)
		if err == nil {
			t.Errorf("%q: no error", n)
		}
	}
	if s := avroIdent("fraud-alerts.v2"); s != "fraud_alerts_v2" {
		t.Errorf("avroIdent: %s", s)
	}
	if s := avroIdent("2026"); s != "_2026" {
		t.Errorf("avroIdent: %s", s)
	}
}

// An Avro schema's fields as the line rules read them: a union with null
// as its one other branch, a nested record's fields by path (to three
// levels), logical types as their JSON (timestamp-millis epoch
// milliseconds, a decimal a number), a union of several types of no one type.
func TestAvroFields(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"O","fields":[
{"name":"id","type":"string"},{"name":"n","type":["null","long"]},{"name":"either","type":["null","long","string"]},
{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
{"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
{"name":"tags","type":{"type":"array","items":"string"}},
{"name":"a","type":{"type":"record","name":"A","fields":[{"name":"ok","type":"boolean"},
 {"name":"b","type":{"type":"record","name":"B","fields":[{"name":"c","type":{"type":"record","name":"C","fields":[{"name":"d","type":"int"}]}}]}}]}}]}`)
	got := map[string]string{}
	avroFields(got, "", s.Root().ExpandReferences(), fieldDepth)
	want := map[string]string{"id": "string", "n": "number", "either": "", "ts": "number", "price": "number", "tags": "array",
		"a": "object", "a.ok": "bool", "a.b": "object", "a.b.c": "object"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields\n got %v\nwant %v", got, want)
	}
}
