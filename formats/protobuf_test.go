package formats

import (
	"bytes"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/weirstream/weir/plan"
)

// protocEncode is the text-format message in testdata/NAME.txtpb encoded
// by protoc (Debian's protobuf-compiler), the reference implementation.
func protocEncode(t *testing.T, message, txt string) []byte {
	t.Helper()
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Fatal("no protoc: apt-get install protobuf-compiler")
	}
	cmd := exec.Command(protoc, "--encode="+message, "-I", "testdata", "-I", "/usr/include", "shop.proto")
	cmd.Stdin = strings.NewReader(txt)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc: %v\n%s", err, stderr.Bytes())
	}
	return out
}

func protoDecoderOf(t *testing.T, message string, reg *plan.Registry) plan.Decoder {
	t.Helper()
	v := plan.Values{}
	if reg == nil {
		v["schema"], v["message"] = "testdata/shop.proto", message
	}
	cfg, err := parseProtobuf(v, reg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := cfg.New(plan.Env{}, "orders")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// orderJSON is testdata/order.txtpb as weir writes it: the .proto's names
// and order, 64-bit integers with all their digits, the enum's name, bytes
// in base64, the Timestamp in RFC 3339, the oneof's field set alone, an
// unset message or proto3 optional null, a scalar at its zero written.
const orderJSON = `{"order_id":"o1","big":9007199254740993,"ubig":18446744073709551615,"small":-5,"amount":12.5,"ratio":0.1,"paid":true,` +
	`"raw":"AP8=","channel":"APP","ts":"2026-09-01T12:00:01.123Z","ship_to":{"city":"Köln \"x\"","zip":50667},"tags":["a","b"],` +
	`"counts":{"a":1,"z":2},"card":"card_1","coupon":null,"limit":-9223372036854775808,"took":"1.500s","more":[{"city":"Bonn","zip":0}],` +
	`"zero":0,"none":null,"by_id":{"-2":"m2","10":"ten"}}`

// A message encoded by protoc, from a .proto compiled by weir at start,
// is the exact JSON above.
func TestProtobufJSON(t *testing.T) {
	txt, err := os.ReadFile("testdata/order.txtpb")
	if err != nil {
		t.Fatal(err)
	}
	b := protocEncode(t, "shop.Order", string(txt))
	d := protoDecoderOf(t, "shop.Order", nil)
	got, err := d.AppendJSON(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != orderJSON {
		t.Errorf("got  %s\nwant %s", got, orderJSON)
	}
	// Nothing set: every field at its zero or null, and the oneof absent.
	got, err = d.AppendJSON([]byte("x"), nil)
	const empty = `x{"order_id":"","big":0,"ubig":0,"small":0,"amount":0,"ratio":0,"paid":false,"raw":"","channel":"WEB","ts":null,"ship_to":null,` +
		`"tags":[],"counts":{},"coupon":null,"limit":null,"took":null,"more":[],"zero":0,"none":null,"by_id":{}}`
	if err != nil || string(got) != empty {
		t.Errorf("empty: %s %v\nwant %s", got, err, empty)
	}
	// A nested message by its full name.
	got, err = protoDecoderOf(t, "shop.Order.Address", nil).AppendJSON(nil, protocEncode(t, "shop.Order.Address", `zip: 75001`))
	if err != nil || string(got) != `{"city":"","zip":75001}` {
		t.Errorf("a nested message: %s %v", got, err)
	}
	for _, cut := range [][]byte{b[:len(b)-3], append(bytes.Clone(b), 0xff), {0x0a, 0x05, 'a'}} {
		var bad *plan.BadRecord
		if _, err := d.AppendJSON(nil, cut); !errors.As(err, &bad) || bad.Reason != ReasonNotDecodable {
			t.Errorf("%x: %v", cut, err)
		}
	}
	// A timestamp out of its range does not decode.
	var bad *plan.BadRecord
	if _, err := d.AppendJSON(nil, protocEncode(t, "shop.Order", `ts { seconds: 1 nanos: -1 }`)); !errors.As(err, &bad) || bad.Reason != ReasonNotDecodable {
		t.Errorf("a bad timestamp: %v", err)
	}
}

// A .proto or a message the job cannot use is refused at start, naming
// the messages the file has.
func TestProtobufSettings(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.proto"), []byte(`syntax = "proto3"; message A { strin x = 1; }`), 0o644)
	for _, c := range []struct {
		v    plan.Values
		reg  *plan.Registry
		want string
	}{
		{plan.Values{"schema": "testdata/shop.proto", "message": "shop.Ordr"}, nil, "no message shop.Ordr in shop.proto; it has shop.Order, shop.Order.Address, shop.Refund"},
		{plan.Values{"schema": "testdata/shop.proto"}, nil, "message: missing"},
		{plan.Values{"message": "shop.Order"}, nil, "schema: missing"},
		{plan.Values{"schema": filepath.Join(dir, "bad.proto"), "message": "A"}, nil, "does not compile"},
		{plan.Values{"schema": "testdata/none.proto", "message": "A"}, nil, "no such file"},
		{plan.Values{"schema": "testdata/shop.proto"}, &plan.Registry{URL: "http://127.0.0.1:1"}, "leave schema out"},
		{plan.Values{}, &plan.Registry{URL: "http://127.0.0.1:1", Subject: "orders-value"}, "leave subject out"},
	} {
		if _, err := parseProtobuf(c.v, c.reg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.v, err, c.want)
		}
	}
	// A message by its name in the file's package.
	cfg, err := parseProtobuf(plan.Values{"schema": "testdata/shop.proto", "message": "Refund"}, nil)
	if err != nil || cfg.Describe() != "protobuf, message shop.Refund of testdata/shop.proto" {
		t.Errorf("%v %v", cfg, err)
	}
}

// With a registry: Confluent's framing, the message chosen by the
// record's indexes (zig-zag varints), the schema a .proto's text or a
// FileDescriptorProto in base64, with references fetched by subject and
// version; a wrong magic byte, an unknown id, indexes the schema has no
// message at and a payload that does not parse are bad records.
func TestProtobufRegistry(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	shop, err := os.ReadFile("testdata/shop.proto")
	if err != nil {
		t.Fatal(err)
	}
	idText, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: string(shop), Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	// shop.proto's descriptor, as some clients register a schema: in
	// base64, without the fields' JSON names (as generated code keeps it).
	d0 := protoDecoderOf(t, "shop.Order", nil).(*protoDecoder)
	fdp := protodesc.ToFileDescriptorProto(d0.fixed.md.ParentFile())
	var noJSONNames func(ms []*descriptorpb.DescriptorProto)
	noJSONNames = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.Field {
				f.JsonName = nil
			}
			noJSONNames(m.NestedType)
		}
	}
	noJSONNames(fdp.MessageType)
	raw, _ := proto.Marshal(fdp)
	idB64, _, err := reg.RegisterSchema("b64-value", sr.Schema{Schema: base64.StdEncoding.EncodeToString(raw), Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	// A schema importing another by a reference.
	if _, _, err := reg.RegisterSchema("common.proto", sr.Schema{Schema: `syntax = "proto3"; package common; message Money { int64 cents = 1; string currency = 2; }`, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	idRef, _, err := reg.RegisterSchema("pay-value", sr.Schema{
		Schema:     `syntax = "proto3"; package pay; import "common.proto"; message Payment { string id = 1; common.Money total = 2; }`,
		Type:       sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "common.proto", Subject: "common.proto", Version: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	idAvro, _, _ := reg.RegisterSchema("avro-value", sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`})

	d := protoDecoderOf(t, "", &plan.Registry{URL: reg.URL()})
	txt, _ := os.ReadFile("testdata/order.txtpb")
	order := protocEncode(t, "shop.Order", string(txt))
	refund := protocEncode(t, "shop.Refund", `order_id: "o9" cents: 4200000000`)
	address := protocEncode(t, "shop.Order.Address", `city: "Paris"`)
	rec := func(id int, idx []byte, payload []byte) []byte {
		return append(framed(id, idx), payload...)
	}
	for _, c := range []struct {
		name  string
		value []byte
		want  string
	}{
		{"the first message, index 0", rec(idText, []byte{0}, order), orderJSON},
		{"the first message, indexes [0] in full", rec(idText, []byte{2, 0}, order), orderJSON},
		{"a base64 descriptor", rec(idB64, []byte{0}, order), orderJSON},
		{"the second message, [1]", rec(idText, []byte{2, 2}, refund), `{"order_id":"o9","cents":4200000000}`},
		{"a nested message, [0, 2] (after the map entries)", rec(idText, []byte{4, 0, 4}, address), `{"city":"Paris","zip":0}`},
		{"a reference", rec(idRef, []byte{0}, protocEncodeRef(t)), `{"id":"p1","total":{"cents":1999,"currency":"EUR"}}`},
		{"bad magic byte", append([]byte{1}, rec(idText, []byte{0}, order)[1:]...), "bad_magic_byte"},
		{"unknown id", rec(4242, []byte{0}, order), "unknown_schema"},
		{"index out of range", rec(idText, []byte{2, 6}, refund), "unknown_schema"},
		{"nested index out of range", rec(idText, []byte{4, 0, 6}, refund), "unknown_schema"},
		{"indexes that do not decode", rec(idText, []byte{0x80}, nil), "not_decodable"},
		{"more indexes than bytes", rec(idText, []byte{0x7e, 1}, nil), "not_decodable"},
		{"a payload that does not parse", rec(idText, []byte{0}, order[:len(order)-2]), "not_decodable"},
		{"an Avro schema", rec(idAvro, []byte{0}, order), "unknown_schema"},
	} {
		got, err := d.AppendJSON(nil, c.value)
		var bad *plan.BadRecord
		switch {
		case errors.As(err, &bad):
			if bad.Reason != c.want {
				t.Errorf("%s: %v, want %s", c.name, err, c.want)
			}
		case err != nil || string(got) != c.want:
			t.Errorf("%s: %s %v\nwant %s", c.name, got, err, c.want)
		}
	}
}

// protocEncodeRef is a pay.Payment, encoded by protoc from the
// registry's two files.
func protocEncodeRef(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "common.proto"), []byte(`syntax = "proto3"; package common; message Money { int64 cents = 1; string currency = 2; }`), 0o644)
	os.WriteFile(filepath.Join(dir, "pay.proto"), []byte(`syntax = "proto3"; package pay; import "common.proto"; message Payment { string id = 1; common.Money total = 2; }`), 0o644)
	cmd := exec.Command("protoc", "--encode=pay.Payment", "-I", dir, "pay.proto")
	cmd.Stdin = strings.NewReader(`id: "p1" total { cents: 1999 currency: "EUR" }`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc: %v", err)
	}
	return out
}

// Straight from the wire and through the library's dynamic message, a
// payload (valid, cut, with bytes changed, or two of them one after the
// other, which merges them) is the same JSON, or the direct path leaves it
// to the library.
func TestProtoWireAgreesWithLibrary(t *testing.T) {
	d := protoDecoderOf(t, "shop.Line", nil).(*protoDecoder)
	m := d.fixed
	base := protocEncode(t, "shop.Line", `sku: "s-1" i32: -7 i64: -9007199254740993 u32: 4000000000 u64: 18446744073709551615 s32: -3 s64: -4
f32: 7 f64: 8 sf32: -9 sf64: -10 fl: 1.5 db: 0.1 ok: true raw: "\001\002" channel: APP packed: [1, -2, 300] names: "x" names: "y\"z"
stops { city: "A" zip: 1 } stops { city: "B" } b { city: "C" } maybe: 0 at { seconds: 1788264001 nanos: 5 } note { value: "n" }
home { zip: 2 } channels: [APP, WEB] ratios: [0.5, 2] attrs { key: "z" value: -1 } attrs { key: "a" value: 2 } attrs { key: "z" value: 3 }
by_num { key: 5 value { city: "F" } } by_num { key: -5 } by_num { value { zip: 1 } } flags { key: true value: "t" } flags { key: false value: "f" }
chans { key: 18446744073709551615 value: APP } chans { key: 1 }`)
	other := protocEncode(t, "shop.Line", `a: "won" home { city: "H" } packed: 5 sku: "s-2" channels: APP attrs { key: "a" value: 9 } by_num { key: 5 }`)
	lib := func(b []byte) ([]byte, error) {
		msg := m.typ.New()
		if err := protoUnmarshal.Unmarshal(b, msg.Interface()); err != nil {
			return nil, err
		}
		return appendProtoMessage(nil, msg, 0)
	}
	direct := func(b []byte) ([]byte, error) {
		return m.plan.appendWire(nil, b, &wireState{}, 0)
	}
	if got, err := direct(base); err != nil {
		t.Fatalf("the direct path leaves a plain record to the library: %v", err)
	} else if want, _ := lib(base); string(got) != string(want) {
		t.Fatalf("direct %s\nlibrary %s", got, want)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	agreed := 0
	for i := range 30000 {
		b := mutated(rng, i, base, other)
		got, derr := direct(b)
		if derr != nil {
			if derr != errSlow {
				t.Fatalf("%x: %v", b, derr)
			}
			continue
		}
		want, lerr := lib(b)
		if lerr != nil || string(got) != string(want) {
			t.Fatalf("%x:\ndirect  %s\nlibrary %s %v", b, got, want, lerr)
		}
		agreed++
	}
	if agreed < 10000 {
		t.Errorf("the direct path wrote %d of 30000", agreed)
	}
}

// A Timestamp is written as appendTime writes its time, from year 1 to
// 9999, to the nanosecond.
func TestAppendRFC3339(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var st wireState // its second kept from one to the next
	for i := range 100000 {
		sec := rng.Int64N(253402300799+62135596800+1) - 62135596800
		nanos := rng.Int64N(1e9)
		switch i % 4 {
		case 0:
			nanos = 0
		case 1:
			nanos -= nanos % 1e6
		case 2:
			sec = []int64{-62135596800, 253402300799, 0, -1, 951782400}[i%5]
		}
		got := appendRFC3339(nil, sec, nanos)
		want := appendTime(nil, time.Unix(sec, nanos))
		if string(got) != string(want) {
			t.Fatalf("%d %d: %s, want %s", sec, nanos, got, want)
		}
		if got := st.appendRFC3339(nil, sec, nanos); string(got) != string(want) {
			t.Fatalf("%d %d, after the second %d: %s, want %s", sec, nanos, st.sec, got, want)
		}
	}
}
