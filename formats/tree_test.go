package formats

import (
	"encoding/binary"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/avro"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/jsontree"
)

// mutated is the payload of the i-th case of a test over payloads: base as
// it is, cut, or with a byte changed; with other, also base followed by
// other, or other by base (for Protobuf, two messages merged).
func mutated(rng *rand.Rand, i int, base, other []byte) []byte {
	b := slices.Clone(base)
	cases := 3
	if other != nil {
		cases = 4
	}
	switch i % cases {
	case 1:
		b = b[:rng.IntN(len(b))]
	case 2:
		b[rng.IntN(len(b))] = byte(rng.IntN(256))
	case 3:
		b = slices.Concat(b, other)
		if i%8 == 3 {
			b = slices.Concat(other, base)
		}
	}
	return b
}

// sameTree fails unless the tree v is what parsing text makes, and the
// tree counted text's length.
func sameTree(t *testing.T, payload []byte, tr *jsontree.Tree, v *fastjson.Value, text []byte) {
	t.Helper()
	var p fastjson.Parser
	want, err := p.ParseBytes(text)
	if err != nil {
		t.Fatalf("%x: the text is not JSON: %v\n%s", payload, err, text)
	}
	if got, w := v.MarshalTo(nil), want.MarshalTo(nil); string(got) != string(w) {
		t.Fatalf("%x:\ntree %s\ntext %s", payload, got, w)
	}
	if tr.Len() != len(text) {
		t.Fatalf("%x: the tree counted %d bytes of text, the text has %d: %s", payload, tr.Len(), len(text), text)
	}
}

// An Avro record built in a tree is the object its text parses into, and
// the tree counts the text's length; a record is built exactly when its
// text is written, and skipped to its end exactly then. The payloads are a record of every kind of value
// (strings with escapes and not UTF-8, a map, an array of nulls), cut or
// with bytes changed.
func TestAvroTreeIsTheTextParsed(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"id","type":"string"},{"name":"n","type":["null","long","double"]},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"d","type":{"type":"fixed","name":"F","size":4,"logicalType":"decimal","precision":8,"scale":2}},
 {"name":"a","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"x","type":"int"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}}},
 {"name":"ok","type":"boolean"},{"name":"f","type":"float"},{"name":"raw","type":"bytes"},{"name":"m","type":{"type":"map","values":"long"}},
 {"name":"nulls","type":{"type":"array","items":"null"}},{"name":"again","type":"I"},{"name":"q","type":"string"},{"name":"u","type":"string"},
 {"name":"g","type":"double"}]}`)
	node := s.Root().ExpandReferences()
	tc := newTranscoder(node)
	base, err := s.Encode(map[string]any{"id": "card_1", "n": int64(-3), "ts": time.UnixMilli(1788264001123), "us": time.UnixMicro(1788264001123456),
		"d": big.NewRat(-12345, 100), "a": []any{map[string]any{"x": 1, "e": "B"}, map[string]any{"x": -70000, "e": "A"}}, "ok": true,
		"f": float32(1.5), "raw": []byte{0, 255}, "m": map[string]any{"k": int64(1)}, "nulls": []any{nil, nil},
		"again": map[string]any{"x": 2, "e": "A"}, "q": "say \"hi\"\n", "u": "Köln\u2028", "g": 1.5e300})
	if err != nil {
		t.Fatal(err)
	}
	var tr jsontree.Tree
	rng := rand.New(rand.NewPCG(5, 6))
	built := 0
	for i := range 30000 {
		b := mutated(rng, i, base, nil)
		tr.Reset()
		v, rest, ok := tc.tree(&tr, b, tc.troot, 0)
		if ok && len(rest) > 0 {
			ok = false
		}
		text, err := tc.appendJSON(nil, b)
		if ok != (err == nil) {
			t.Fatalf("%x: built %v, text %v", b, ok, err)
		}
		// Where a record ends, as a container file's raw rows are cut.
		if rest, err := tc.skip(b, tc.root, 0); (err == nil && len(rest) == 0) != ok {
			t.Fatalf("%x: skipped to %d bytes before the end (%v), built %v", b, len(rest), err, ok)
		}
		if ok {
			sameTree(t, b, &tr, v, text)
			built++
			// The key a decoder looks up ahead is the record's (its bytes:
			// the text has U+FFFD for bytes that are not UTF-8).
			for _, name := range []string{"id", "q"} {
				if s, found := tc.stringField(b, name); !found || utf8.Valid(s) && string(s) != string(v.GetStringBytes(name)) {
					t.Fatalf("%x: field %s found as %q (%v), built as %q", b, name, s, found, v.GetStringBytes(name))
				}
			}
		}
	}
	if built < 10000 {
		t.Errorf("%d of 30000 built", built)
	}
}

// A Protobuf record built in a tree is the object its text parses into
// (the same payloads as TestProtoWireAgreesWithLibrary's), and is built
// exactly when the direct path writes its text.
func TestProtoTreeIsTheTextParsed(t *testing.T) {
	for _, c := range []struct{ message, base, other string }{
		{"shop.Line", `sku: "s-1" i32: -7 i64: -9007199254740993 u32: 4000000000 u64: 18446744073709551615 s32: -3 s64: -4
f32: 7 f64: 8 sf32: -9 sf64: -10 fl: 1.5 db: 0.1 ok: true raw: "\001\002" channel: APP packed: [1, -2, 300] names: "x" names: "y\"z"
stops { city: "A" zip: 1 } stops { city: "B" } b { city: "C" } maybe: 0 at { seconds: 1788264001 nanos: 5 } note { value: "n" }
home { zip: 2 } channels: [APP, WEB] ratios: [0.5, 2] attrs { key: "z" value: -1 } attrs { key: "a" value: 2 } attrs { key: "z" value: 3 }
by_num { key: 5 value { city: "F" } } by_num { key: -5 } by_num { value { zip: 1 } } flags { key: true value: "t" } flags { key: false value: "f" }
chans { key: 18446744073709551615 value: APP } chans { key: 1 }`,
			`a: "won" home { city: "H" } packed: 5 sku: "s-2" channels: APP attrs { key: "a" value: 9 } by_num { key: 5 }`},
		{"shop.Refund", `order_id: "o\"1" cents: -250`, `cents: 7`},
	} {
		t.Run(c.message, func(t *testing.T) {
			m := protoDecoderOf(t, c.message, nil).(*protoDecoder).fixed
			base, other := protocEncode(t, c.message, c.base), protocEncode(t, c.message, c.other)
			var tr jsontree.Tree
			rng := rand.New(rand.NewPCG(7, 8))
			built := 0
			for i := range 30000 {
				b := mutated(rng, i, base, other)
				tr.Reset()
				v := m.plan.tree(&tr, b, &wireState{}, 0)
				text, err := m.plan.appendWire(nil, b, &wireState{}, 0)
				if (v != nil) != (err == nil) {
					t.Fatalf("%x: built %v, text %v", b, v != nil, err)
				}
				if v != nil {
					sameTree(t, b, &tr, v, text)
					built++
				}
			}
			if built < 10000 {
				t.Errorf("%d of 30000 built", built)
			}
		})
	}
}

// A record of a few bytes that says its array holds 2^62 nulls is not
// decodable: its JSON text would have no bound.
func TestAvroArrayOfNullsBounded(t *testing.T) {
	tc := newTranscoder(avro.MustParse(`{"type":"record","name":"N","fields":[{"name":"x","type":{"type":"array","items":"null"}}]}`).Root().ExpandReferences())
	for _, c := range []struct {
		count int64
		ok    bool
	}{{maxNulls, true}, {maxNulls + 1, false}, {1 << 62, false}} {
		b := binary.AppendVarint(nil, c.count)
		b = append(b, 0)
		text, err := tc.appendJSON(nil, b)
		if (err == nil) != c.ok {
			t.Errorf("%d nulls: %v", c.count, err)
		}
		var tr jsontree.Tree
		v, _, ok := tc.tree(&tr, b, tc.troot, 0)
		if ok != c.ok {
			t.Errorf("%d nulls: built %v", c.count, ok)
		}
		if ok {
			sameTree(t, b, &tr, v, text)
		}
	}
}

// A recursive schema's records are built as deep as their text is
// written: a list of any length up to and past the depth weir reads.
func TestAvroTreeRecursive(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"tag","type":{"type":"enum","name":"T","symbols":["A","B"]}},
 {"name":"next","type":["null","L"]},{"name":"same","type":["null","T"]}]}`)
	tc := newTranscoder(s.Root().ExpandReferences())
	var list any
	built := 0
	for n := range 40 {
		list = map[string]any{"v": int64(n), "tag": "B", "next": list, "same": "A"}
		b, err := s.Encode(list)
		if err != nil {
			t.Fatal(err)
		}
		var tr jsontree.Tree
		v, rest, ok := tc.tree(&tr, b, tc.troot, 0)
		text, err := tc.appendJSON(nil, b)
		if ok != (err == nil) || ok && len(rest) > 0 {
			t.Fatalf("%d items: built %v (%d bytes left), text %v", n+1, ok, len(rest), err)
		}
		if ok {
			sameTree(t, b, &tr, v, text)
			built++
		}
	}
	if built == 0 || built == 40 {
		t.Errorf("%d of 40 lists built: none is as deep as weir reads", built)
	}
}
