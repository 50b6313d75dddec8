package formats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/plan"
)

// orderSchema is an order's JSON Schema, as a registry holds it: a closed
// object (no field it does not name).
const orderSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Order","type":"object",
 "properties":{"order_id":{"type":"string"},"card":{"type":["string","null"]},"user_id":{"type":"string"},
  "amount":{"type":"number","minimum":0},"ts":{"type":"string"}},
 "required":["order_id","amount","ts"],"additionalProperties":false}`

// orderSchemaV2 adds a field, channel: a new version, a new id.
var orderSchemaV2 = strings.Replace(orderSchema, `"ts":{"type":"string"}}`, `"ts":{"type":"string"},"channel":{"type":"string","enum":["web","app"]}}`, 1)

// jsonSchemaDecoderOf is the json_schema decoder of the registry at url.
func jsonSchemaDecoderOf(t *testing.T, reg *plan.Registry) *jsonSchemaDecoder {
	t.Helper()
	cfg, err := parseJSONSchema(plan.Values{}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Describe(); d != "json_schema, schemas from the registry at "+reg.URL {
		t.Errorf("%s", d)
	}
	d, err := cfg.New(plan.Env{}, "orders")
	if err != nil {
		t.Fatal(err)
	}
	return d.(*jsonSchemaDecoder)
}

// A record is its framing and a JSON object its schema validates: handed
// on as the same bytes (a payload written across lines, as one line).
// A wrong magic byte, an id the registry lacks or whose schema is not a
// JSON Schema, a payload that is not one JSON object, and an object the
// schema refuses are bad records, each with its reason and, for the last,
// the validator's first error.
func TestJSONSchemaRegistry(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderSchema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	idAvro, _, _ := reg.RegisterSchema("avro-value", sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`})
	idBroken, _, err := reg.RegisterSchema("broken-value", sr.Schema{Schema: `{"type":"object","properties":{"a":{"type":"nosuchtype"}}}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	// A schema that names a file, which would take any object: no file is
	// read.
	file := filepath.Join(t.TempDir(), "any.json")
	os.WriteFile(file, []byte(`{"type":"object"}`), 0o644)
	idFile, _, err := reg.RegisterSchema("file-value", sr.Schema{Schema: `{"$ref":"file://` + filepath.ToSlash(file) + `"}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	// format is asserted in drafts up to 7, as they say it may be; an
	// annotation only in 2020-12, as it says (its default).
	idDate7, _, err := reg.RegisterSchema("d7-value", sr.Schema{Schema: `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"ts":{"format":"date-time"}}}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	idDate2020, _, err := reg.RegisterSchema("d2020-value", sr.Schema{Schema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"ts":{"format":"date-time"}}}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	// Without $schema: draft 7.
	idDateNone, _, err := reg.RegisterSchema("dnone-value", sr.Schema{Schema: `{"properties":{"ts":{"format":"date-time"}}}`, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	d := jsonSchemaDecoderOf(t, &plan.Registry{URL: reg.URL()})
	const order = `{"order_id":"o1","card":"c1","user_id":"u1","amount":12.5,"ts":"2026-09-01T00:00:00.361Z"}`
	long := strings.Repeat("x", 2000)
	for _, c := range []struct {
		name, want string
		value      []byte
	}{
		{"valid", order, framed(id, []byte(order))},
		{"a null card, big digits kept", `{"order_id":"o2","card":null,"amount":123456789012345678901234567890,"ts":"t"}`,
			framed(id, []byte(`{"order_id":"o2","card":null,"amount":123456789012345678901234567890,"ts":"t"}`))},
		{"across lines", `{"order_id":"o3","amount":1,"ts":"t"}`, framed(id, []byte("{\n  \"order_id\": \"o3\",\r\n  \"amount\": 1,\n  \"ts\": \"t\"\n}\n"))},
		{"spaces about it", `{"order_id":"o4", "amount":2, "ts":"t"}`, framed(id, []byte(` {"order_id":"o4", "amount":2, "ts":"t"}  `))},
		{"bad magic byte", "bad_magic_byte: the first byte is 123, not the framing's 0", []byte(order)},
		{"short", "bad_magic_byte: 3 bytes, shorter than the framing's 5", []byte{0, 0, 1}},
		{"unknown id", "unknown_schema: the registry has no schema of id 4242", framed(4242, []byte(order))},
		{"an Avro schema", fmt.Sprintf("unknown_schema: schema %d is AVRO, not JSON Schema", idAvro), framed(idAvro, []byte(order))},
		{"a schema that does not compile", "unknown_schema", framed(idBroken, []byte(order))},
		{"a schema that would read a file", "unknown_schema", framed(idFile, []byte(order))},
		{"not JSON", "not_decodable: not JSON: invalid character 'o' looking for beginning of object key string", framed(id, []byte(`{order_id:"o1"}`))},
		{"cut short", "not_decodable: not JSON: unexpected EOF", framed(id, []byte(order[:20]))},
		{"two values", "not_decodable: not JSON: 2 bytes after the value", framed(id, []byte(order+" {}"))},
		{"empty", "not_decodable: an empty payload, not JSON", framed(id, nil)},
		{"an array", "not_decodable: the payload is a JSON array, not an object", framed(id, []byte(`[1,2]`))},
		{"a string", "not_decodable: the payload is a JSON string, not an object", framed(id, []byte(`"o1"`))},
		{"amount a string", "not_valid: at '/amount': got string, want number", framed(id, []byte(strings.Replace(order, `12.5`, `"12.5"`, 1)))},
		{"amount below its minimum", "not_valid: at '/amount': minimum: got -1, want 0", framed(id, []byte(strings.Replace(order, `12.5`, `-1`, 1)))},
		{"no ts", "not_valid: at '': missing property 'ts'", framed(id, []byte(`{"order_id":"o1","amount":1}`))},
		{"a field the schema does not have", "not_valid: at '': additional properties 'channel' not allowed", framed(id, []byte(`{"order_id":"o1","amount":1,"ts":"t","channel":"web"}`))},
		{"a date-time, draft 7", `{"ts":"2026-09-01T00:00:00.361Z"}`, framed(idDate7, []byte(`{"ts":"2026-09-01T00:00:00.361Z"}`))},
		{"not a date-time, draft 7", "not_valid: at '/ts': 'yesterday' is not valid date-time: less than 20 characters long", framed(idDate7, []byte(`{"ts":"yesterday"}`))},
		{"not a date-time, no $schema", "not_valid: at '/ts': 'yesterday' is not valid date-time: less than 20 characters long", framed(idDateNone, []byte(`{"ts":"yesterday"}`))},
		{"not a date-time, 2020-12", `{"ts":"yesterday"}`, framed(idDate2020, []byte(`{"ts":"yesterday"}`))},
		{"a long value", "not_valid: at '/card': got number, want null or string", framed(id, []byte(`{"order_id":"o1","card":1`+strings.Repeat("0", 500)+`,"amount":1,"ts":"t"}`))},
		{"a long field name", "not_valid: at '': additional properties '" + long[:maxDetail-len("at '': additional properties '")] + "…", framed(id, []byte(`{"order_id":"o1","amount":1,"ts":"t","`+long+`":1}`))},
	} {
		got, err := d.AppendJSON([]byte("prefix"), c.value)
		var bad *plan.BadRecord
		switch {
		case errors.As(err, &bad):
			if s := bad.Reason + ": " + bad.Detail; s != c.want && bad.Reason != c.want {
				t.Errorf("%s: %s\nwant %s", c.name, s, c.want)
			}
			if string(got) != "prefix" {
				t.Errorf("%s: a bad record appended %q", c.name, got)
			}
		case err != nil || string(got) != "prefix"+c.want:
			t.Errorf("%s: %s %v\nwant %s", c.name, got, err, c.want)
		}
	}
}

// The settings: a registry, without a reader's subject.
func TestJSONSchemaSettings(t *testing.T) {
	for _, c := range []struct {
		reg  *plan.Registry
		want string
	}{
		{nil, "registry: missing"},
		{&plan.Registry{URL: "http://127.0.0.1:1", Subject: "orders-value"}, "leave subject out"},
	} {
		if _, err := parseJSONSchema(plan.Values{}, c.reg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.reg, err, c.want)
		}
	}
	k, ok := plan.LookupFormat("json_schema")
	if !ok || !k.Registry || len(k.Fields) != 0 {
		t.Errorf("%+v %v", k, ok)
	}
}

// The schema evolves: a second version adds a field. Records of either
// id are read, each validated against its own schema (v1's refuses the
// new field, v2's takes it), and the fields both have are the same.
func TestJSONSchemaEvolution(t *testing.T) {
	reg := srfake.New(srfake.WithGlobalCompat(sr.CompatBackward))
	defer reg.Close()
	id1, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderSchema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	id2, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderSchemaV2, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	if id1 == id2 {
		t.Fatalf("one id %d for both versions", id1)
	}
	d := jsonSchemaDecoderOf(t, &plan.Registry{URL: reg.URL()})
	v1 := `{"order_id":"o1","amount":3.25,"ts":"2026-09-01T00:00:00Z"}`
	v2 := `{"order_id":"o1","amount":3.25,"ts":"2026-09-01T00:00:00Z","channel":"app"}`
	for _, c := range []struct {
		id          int
		value, want string
	}{
		{id1, v1, v1},
		{id2, v2, v2},
		{id2, v1, v1}, // channel is optional
		{id1, v2, "not_valid: at '': additional properties 'channel' not allowed"},
		{id2, strings.Replace(v2, `"app"`, `"fax"`, 1), `not_valid: at '/channel': value must be one of 'web', 'app'`},
	} {
		got, err := d.AppendJSON(nil, framed(c.id, []byte(c.value)))
		if err != nil {
			got = []byte(err.Error())
		}
		if string(got) != c.want {
			t.Errorf("id %d, %s: %s\nwant %s", c.id, c.value, got, c.want)
		}
	}
}

// A schema's references, other subjects' versions, are fetched and found
// by their names: relative to the schema, or to its $id.
func TestJSONSchemaReferences(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	if _, _, err := reg.RegisterSchema("money", sr.Schema{Schema: `{"type":"object","properties":{"cents":{"type":"integer"},"currency":{"type":"string","minLength":3}},"required":["cents"]}`, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	ref := []sr.SchemaReference{{Name: "money.json", Subject: "money", Version: 1}}
	idRel, _, err := reg.RegisterSchema("pay-value", sr.Schema{Schema: `{"type":"object","properties":{"id":{"type":"string"},"total":{"$ref":"money.json"}}}`, Type: sr.TypeJSON, References: ref})
	if err != nil {
		t.Fatal(err)
	}
	idAbs, _, err := reg.RegisterSchema("pay2-value", sr.Schema{Schema: `{"$id":"https://example.com/schemas/pay.json","type":"object","properties":{"total":{"$ref":"money.json"}}}`, Type: sr.TypeJSON, References: ref})
	if err != nil {
		t.Fatal(err)
	}
	// A reference whose version the registry then says it lacks.
	if _, _, err := reg.RegisterSchema("money", sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON}); err != nil {
		t.Fatal(err)
	}
	idMissing, _, err := reg.RegisterSchema("pay3-value", sr.Schema{Schema: `{"type":"object","properties":{"total":{"$ref":"money.json"}}}`, Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "money.json", Subject: "money", Version: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/subjects/money/versions/2" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error_code":40402,"message":"Version not found."}`))
			return true
		}
		return false
	})
	d := jsonSchemaDecoderOf(t, &plan.Registry{URL: reg.URL()})
	for _, c := range []struct {
		id          int
		value, want string
	}{
		{idRel, `{"id":"p1","total":{"cents":1999,"currency":"EUR"}}`, `{"id":"p1","total":{"cents":1999,"currency":"EUR"}}`},
		{idRel, `{"id":"p1","total":{"cents":19.5}}`, `not_valid: at '/total/cents': got number, want integer`},
		{idAbs, `{"total":{"currency":"EUR"}}`, `not_valid: at '/total': missing property 'cents'`},
		{idAbs, `{"total":{"cents":1}}`, `{"total":{"cents":1}}`},
		{idMissing, `{"total":{"cents":1}}`, `unknown_schema: the registry has no version 2 of subject money`},
	} {
		got, err := d.AppendJSON(nil, framed(c.id, []byte(c.value)))
		if err != nil {
			got = []byte(err.Error())
		}
		if string(got) != c.want {
			t.Errorf("id %d, %s: %s\nwant %s", c.id, c.value, got, c.want)
		}
	}
}

// Each id's schema is fetched and compiled once, however many records and
// goroutines read it; a registry that cannot be reached is asked again
// with backoff, the record of a schema not fetched yet waiting for it
// rather than dropped, while records of a schema fetched go on.
func TestJSONSchemaFetchedOnce(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var down atomic.Bool
	var fetches atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return true
		}
		if strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			fetches.Add(1)
		}
		return false
	})
	id1, _, _ := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderSchema, Type: sr.TypeJSON})
	id2, _, _ := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderSchemaV2, Type: sr.TypeJSON})
	d := jsonSchemaDecoderOf(t, &plan.Registry{URL: reg.URL()})
	d.reg.wait = 50 * time.Millisecond
	rec := func(id, i int) []byte {
		return framed(id, []byte(fmt.Sprintf(`{"order_id":"o%d","amount":%d,"ts":"t"}`, i, i)))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				want := fmt.Sprintf(`{"order_id":"o%d","amount":%d,"ts":"t"}`, i, i)
				if got, err := d.AppendJSON(nil, rec(id1, i)); err != nil || string(got) != want {
					t.Errorf("goroutine %d: %s %v", g, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches of one id", n)
	}
	down.Store(true)
	if _, err := d.AppendJSON(nil, rec(id1, 1)); err != nil {
		t.Fatalf("a fetched schema, the registry down: %v", err)
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
	if r := <-done; r != `{"order_id":"o7","amount":7,"ts":"t"}<nil>` {
		t.Errorf("once the registry is back: %s", r)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d fetches of two ids", n)
	}
}

// A valid record costs what the validator needs of it (the payload
// decoded, validated) and no more: the schema is not compiled again, the
// payload not re-encoded.
func TestJSONSchemaAllocs(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	id, _, _ := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderSchema, Type: sr.TypeJSON})
	d := jsonSchemaDecoderOf(t, &plan.Registry{URL: reg.URL()})
	payload := []byte(`{"order_id":"o1","card":"c1","user_id":"u1","amount":12.5,"ts":"2026-09-01T00:00:00.361Z"}`)
	value := framed(id, payload)
	dst := make([]byte, 0, 1024)
	if _, err := d.AppendJSON(dst, value); err != nil {
		t.Fatal(err)
	}
	s, err := d.byID.get(d.reg, id, d.compile)
	if err != nil {
		t.Fatal(err)
	}
	validator := testing.AllocsPerRun(200, func() {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(payload)))
		if err != nil || s.s.Validate(v) != nil {
			t.Fatal(err)
		}
	})
	got := testing.AllocsPerRun(200, func() {
		if _, err := d.AppendJSON(dst, value); err != nil {
			t.Fatal(err)
		}
	})
	if got > validator {
		t.Errorf("%v allocations a record; the library's own decoding and validation take %v", got, validator)
	}
}

func BenchmarkJSONSchema(b *testing.B) {
	reg := srfake.New()
	defer reg.Close()
	id, _, _ := reg.RegisterSchema("orders-value", sr.Schema{Schema: orderSchema, Type: sr.TypeJSON})
	cfg, _ := parseJSONSchema(plan.Values{}, &plan.Registry{URL: reg.URL()})
	d, _ := cfg.New(plan.Env{}, "orders")
	value := framed(id, []byte(`{"order_id":"o1","card":"c1","user_id":"u1","amount":12.5,"ts":"2026-09-01T00:00:00.361Z"}`))
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.AppendJSON(dst, value); err != nil {
			b.Fatal(err)
		}
	}
}

// decodeJSON reads what encoding/json's Decoder with UseNumber reads, to
// the same value, and refuses what it refuses, with its words.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"order_id":"o1","card":null,"amount":12.5,"ts":"2026-09-01T00:00:00.361Z","n":[1,-0,0.5e-3,1E+9,{"a":[]},{}],"ok":true,"no":false}`,
		` {"a" : 1 } `, "{\n\t\"a\":\r\n1}", `{"a":1,"a":2}`, `[1,2]`, `"x"`, `-12`, `true`, `null`, ``, ` `,
		`{"esc":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\ud800x"}`, "{\"bad\":\"\xff\xfe\"}", "{\"ctl\":\"a\x01\"}", `{"u":"\u12"}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":1,}`, `[1,]`, `{,}`, `{"a"}`, `{"a":tru}`,
		`{"a":nul}`, `{"a":1} x`, `{"a":1}{}`, `{'a':1}`, `{"a":"x`, `{"a":"\`, `[[[[[[[[[[]]]]]]]]]]`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"big":123456789012345678901234567890,"neg":-1.5E-300}`, "{\"é\":\"ü\"}", `{"a":NaN}`, `{"a":Infinity}`, "\ufeff{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeJSON(b)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var want any
		stdErr := dec.Decode(&want)
		if stdErr == nil && len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 {
			stdErr = errors.New("bytes after the value")
		}
		switch {
		case (err == nil) != (stdErr == nil):
			t.Fatalf("%q: %v, encoding/json %v", b, err, stdErr)
		case err != nil:
			if err.Error() != stdJSONError(b).Error() {
				t.Fatalf("%q: %v", b, err)
			}
		case !reflect.DeepEqual(got, want):
			t.Fatalf("%q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}

// What a decoder makes of an id's schema is made once, however many
// goroutines first ask for it at the same time; an unknown id is made
// nothing of.
func TestCompiledOncePerID(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	id1, _, _ := reg.RegisterSchema("a-value", sr.Schema{Schema: `{"type":"object"}`, Type: sr.TypeJSON})
	id2, _, _ := reg.RegisterSchema("b-value", sr.Schema{Schema: `{"type":"array"}`, Type: sr.TypeJSON})
	cl, err := newRegistryClient(&plan.Registry{URL: reg.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var c compiled[string]
	var mu sync.Mutex
	builds := map[int]int{}
	build := func(id int, s sr.Schema) string {
		mu.Lock()
		builds[id]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // long enough for the others to ask
		return s.Schema
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			<-start
			id := []int{id1, id2, 4242}[g%3]
			v, err := c.get(cl, id, build)
			want := map[int]string{id1: `{"type":"object"}`, id2: `{"type":"array"}`}[id]
			if id == 4242 && err == nil || id != 4242 && (err != nil || v != want) {
				t.Errorf("id %d: %q %v", id, v, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if builds[id1] != 1 || builds[id2] != 1 || builds[4242] != 0 {
		t.Errorf("built %v", builds)
	}
}
