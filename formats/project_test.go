package formats

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/jsontree"
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/source"
)

// sameFields reads the fields at paths of the record b without its object
// (into out) and fails unless what it reads is what its object v (nil: it
// does not build) holds: the record read so only when its object builds,
// each value of the type, text, integer, float and instant the object's
// has, a time field's instant maybe without its text. It reports whether
// the record was read.
func sameFields(t *testing.T, proj linedec.Projection, b []byte, v *fastjson.Value, paths [][]string, out []source.Value) bool {
	t.Helper()
	var slab []byte
	ok := proj.Read(b, out, &slab, 16<<20)
	if ok && v == nil {
		t.Fatalf("%x: read without its object, which does not build", b)
	}
	if !ok {
		return false
	}
	var want []byte
	for k, p := range paths {
		var w source.Value
		if p != nil {
			w = source.ValueOf(source.Get(v, p), &want)
		}
		g := out[k]
		gi, gok := g.Int64()
		wi, wok := w.Int64()
		gt, gtok := source.TimeOf(&g)
		wt, wtok := source.TimeOf(&w)
		instant := k < linedec.NumFields && g.IsTime && g.Text == nil
		if g.Type != w.Type || !instant && !bytes.Equal(g.Text, w.Text) || gi != wi || gok != wok || g.Type == source.Number && g.Float() != w.Float() ||
			gt != wt || gtok != wtok {
			t.Fatalf("%x: %v: read %v %q, the object holds %v %q", b, p, g.Type, g.Text, w.Type, w.Text)
		}
	}
	return true
}

// An Avro record's fields read without its object are what its object
// holds, for every kind of path (a top-level field, one in a nested
// record, through a union, into a map or an array, one the schema lacks);
// a record is read so only when its object is built, and a record a path
// into a map or an array names is left to the object.
func TestAvroProjectionIsTheObject(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"id","type":"string"},{"name":"n","type":["null","long","double"]},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"d","type":{"type":"fixed","name":"F","size":4,"logicalType":"decimal","precision":8,"scale":2}},
 {"name":"a","type":{"type":"array","items":{"type":"record","name":"I","fields":[{"name":"x","type":"int"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}}},
 {"name":"ok","type":"boolean"},{"name":"f","type":"float"},{"name":"raw","type":"bytes"},{"name":"m","type":{"type":"map","values":"long"}},
 {"name":"again","type":"I"},{"name":"q","type":"string"},{"name":"u","type":"string"},
 {"name":"g","type":"double"},{"name":"opt","type":["null","I"]}]}`)
	node := s.Root().ExpandReferences()
	tc := newTranscoder(node)
	record := func(change map[string]any) []byte {
		r := map[string]any{"id": "card_1", "n": int64(-3), "ts": time.UnixMilli(1788264001123), "us": time.UnixMicro(1788264001123456),
			"d": big.NewRat(-12345, 100), "a": []any{map[string]any{"x": 1, "e": "B"}, map[string]any{"x": -70000, "e": "A"}}, "ok": true,
			"f": float32(1.5), "raw": []byte{0, 255}, "m": map[string]any{"k": int64(1)},
			"again": map[string]any{"x": 2, "e": "A"}, "q": "say \"hi\"\n", "u": "Köln\u2028", "g": 1.5e300, "opt": map[string]any{"x": 5, "e": "B"}}
		for k, v := range change {
			r[k] = v
		}
		b, err := s.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bases := [][]byte{record(nil), record(map[string]any{"g": math.Inf(-1), "n": nil, "opt": nil, "ok": false}),
		record(map[string]any{"g": math.NaN(), "n": 2.5, "f": float32(math.NaN()), "id": "\xff"}), record(map[string]any{"g": 12.0, "n": int64(math.MinInt64), "id": ""})}
	all := [][]string{{"id"}, {"n"}, {"ts"}, {"us"}, {"d"}, {"a"}, {"ok"}, {"f"}, {"raw"}, {"m"}, {"again"}, {"again", "x"}, {"again", "e"},
		{"q"}, {"u"}, {"g"}, {"opt", "x"}, {"opt"}, {"missing"}, {"id", "deeper"}, nil, {"again", "missing"}}
	sets := [][][]string{all, {{"id"}, {"ts"}, {"g"}, {"ts"}, {"again", "x"}, {"id"}, {"again", "x"}}, {{"opt", "e"}, {"n"}}, {{"m", "k"}}, {{"a", "0", "x"}}}
	rng := rand.New(rand.NewPCG(9, 10))
	for si, paths := range sets {
		proj := (&ocfDecoder{t: tc}).Project(paths)
		var tr jsontree.Tree
		out := make([]source.Value, len(paths))
		read := 0
		for i := range 20000 {
			b := mutated(rng, i/len(bases), bases[i%len(bases)], nil)
			tr.Reset()
			v := tc.build(&tr, b)
			if sameFields(t, proj, b, v, paths, out) {
				read++
			}
		}
		if si >= 3 && read != 0 {
			t.Errorf("set %d: %d records read without their objects, with a path into a map or an array", si, read)
		} else if si < 3 && read < 5000 {
			t.Errorf("set %d: %d of 20000 records read without their objects", si, read)
		}
	}
}

// A Protobuf record's fields read without its object are what its object
// holds (the payloads of TestProtoTreeIsTheTextParsed), and a record is
// read so only when its object is built.
func TestProtoProjectionIsTheObject(t *testing.T) {
	m := protoDecoderOf(t, "shop.Line", nil).(*protoDecoder)
	base := protocEncode(t, "shop.Line", `sku: "s-1" i32: -7 i64: -9007199254740993 u32: 4000000000 u64: 18446744073709551615 s32: -3 s64: -4
f32: 7 f64: 8 sf32: -9 sf64: -10 fl: 1.5 db: 0.1 ok: true raw: "\001\002" channel: APP packed: [1, -2, 300] names: "x" names: "y\"z"
stops { city: "A" zip: 1 } stops { city: "B" } b { city: "C" } maybe: 0 at { seconds: 1788264001 nanos: 5 } note { value: "n" }
home { zip: 2 } channels: [APP, WEB] ratios: [0.5, 2] attrs { key: "z" value: -1 } attrs { key: "a" value: 2 } attrs { key: "z" value: 3 }
by_num { key: 5 value { city: "F" } } flags { key: true value: "t" } chans { key: 18446744073709551615 value: APP }`)
	other := protocEncode(t, "shop.Line", `a: "won" at { seconds: -5 nanos: 987654321 } home { city: "H" } packed: 5 sku: "s-2" channels: APP attrs { key: "a" value: 9 } by_num { key: 5 }`)
	all := [][]string{{"sku"}, {"i32"}, {"i64"}, {"u32"}, {"u64"}, {"s32"}, {"s64"}, {"f32"}, {"f64"}, {"sf32"}, {"sf64"}, {"fl"}, {"db"},
		{"ok"}, {"raw"}, {"channel"}, {"packed"}, {"stops"}, {"a"}, {"b", "city"}, {"b"}, {"maybe"}, {"at"}, {"at", "seconds"}, {"note"},
		{"home", "city"}, {"home", "zip"}, {"home"}, {"attrs"}, {"missing"}, {"sku", "deeper"}, nil}
	sets := [][][]string{all, {{"sku"}, {"at"}, {"db"}, {"at"}, {"sku"}, {"home", "city"}, {"home", "city"}},
		{{"at"}, nil, nil, nil, {"db"}, {"at"}}, {{"attrs", "z"}}, {{"stops", "0", "city"}}}
	rng := rand.New(rand.NewPCG(11, 12))
	for si, paths := range sets {
		proj := m.Project(paths)
		var tr jsontree.Tree
		out := make([]source.Value, len(paths))
		read := 0
		for i := range 20000 {
			b := mutated(rng, i/2, base, other)
			if i%2 == 1 {
				b = mutated(rng, i/2, other, base)
			}
			tr.Reset()
			v := m.fixed.plan.tree(&tr, b, &wireState{}, 0)
			// The key a decoder looks up ahead is the record's.
			if k, found := m.String(b, "sku"); v != nil && found && string(k) != string(v.GetStringBytes("sku")) {
				t.Fatalf("%x: sku found ahead as %q, read as %q", b, k, v.GetStringBytes("sku"))
			}
			if sameFields(t, proj, b, v, paths, out) {
				read++
			}
		}
		if si >= 3 && read != 0 {
			t.Errorf("set %d: %d records read without their objects, with a path into a map or a list", si, read)
		} else if si < 3 && read < 5000 {
			t.Errorf("set %d: %d of 20000 records read without their objects", si, read)
		}
	}
}
