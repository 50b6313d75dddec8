package job

import (
	"fmt"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/source"
)

// The key table gives every key its canonical text, one string per key,
// through growing and clearing, and refuses strings that are not UTF-8.
func TestKeyTable(t *testing.T) {
	tab := newKeyTable(3000)
	var p fastjson.Parser
	texts := []string{`"c1"`, `"\u0063\u0031"`, `1`, `1.0`, `"1"`, `true`, `"a\"b"`, `"tab\t"`, `"a long key, longer than a slot"`, `"é"`, `12345678901`}
	for i := range 5000 {
		texts = append(texts, fmt.Sprintf(`"k%d"`, i), fmt.Sprint(i*7))
	}
	seen := map[string]string{}
	for round := range 2 {
		for _, text := range texts {
			v, err := p.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			want := string(linedec.AppendCanonicalJSON(nil, v))
			got, ok := tab.intern(val(v))
			if !ok || got != want {
				t.Fatalf("round %d: %s: %q %v, want %q", round, text, got, ok, want)
			}
			if round == 0 {
				seen[text] = got
			}
		}
	}
	if tab.n > tab.max || 2*tab.n > len(tab.slots) {
		t.Errorf("%d keys in %d slots (max %d)", tab.n, len(tab.slots), tab.max)
	}
	for _, text := range []string{"\"\xff\"", "\"a long key that is not \xfe valid\""} {
		v, err := p.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := tab.intern(val(v)); ok {
			t.Errorf("%q interned as %q", text, k)
		}
	}
	v, _ := p.Parse(`"c7"`)
	kv := val(v)
	a, _ := tab.intern(kv)
	if n := testing.AllocsPerRun(100, func() { b, _ := tab.intern(kv); a = b }); n != 0 || a != `"c7"` {
		t.Errorf("%v allocations for a key seen before", n)
	}
}

// A table that is off (a join's) gives each key the canonical text the
// table would, as a string of its own, and refuses what it refuses.
func TestKeyTableOff(t *testing.T) {
	tab := newKeyTable(3000)
	tab.off = true
	var p fastjson.Parser
	for _, text := range []string{`"c1"`, `"\u0063\u0031"`, `1`, `1.0`, `"1"`, `true`, `"a\"b"`, `"tab\t"`, `"a long key, longer than a slot"`, `"é"`, `12345678901`} {
		v, err := p.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		want := string(linedec.AppendCanonicalJSON(nil, v))
		if got, ok := tab.intern(val(v)); !ok || got != want {
			t.Errorf("%s: %q %v, want %q", text, got, ok, want)
		}
		tab.prefetch([]byte(text))
	}
	v, _ := p.Parse("\"\xff\"")
	if k, ok := tab.intern(val(v)); ok {
		t.Errorf("invalid UTF-8 interned as %q", k)
	}
	if tab.n != 0 {
		t.Errorf("%d keys held", tab.n)
	}
}

// keyAhead finds what the key table will be asked for in the lines it can
// read without parsing, and nothing in the others; prefetching it finds
// the slot intern uses (the key interned, its slot is the one asked for).
func TestKeyAhead(t *testing.T) {
	needle := []byte(`"card"`)
	for _, c := range []struct {
		line, want string
		ok         bool
	}{
		{`{"event_id":"e1","card":"c12","amount":3}`, "c12", true},
		{`{"card" : "c-with-a-long-name"}`, "c-with-a-long-name", true},
		{`{"type":"card","card":"c7"}`, "c7", true}, // the name as a value first
		{`{"card":12}`, "", false},                  // a number: parsed, not guessed
		{`{"card":"c\"1"}`, "", false},              // an escape
		{`{"card":"c1`, "", false},                  // cut off
		{`{"other":1}`, "", false},
	} {
		got, ok := keyAhead([]byte(c.line), needle)
		if string(got) != c.want || ok != c.ok {
			t.Errorf("%s: %q %v, want %q %v", c.line, got, ok, c.want, c.ok)
		}
	}
	for _, key := range []string{"c12", "c-with-a-long-name"} {
		tab := newKeyTable(100)
		var p fastjson.Parser
		v, _ := p.Parse(`"` + key + `"`)
		k, _ := tab.intern(val(v))
		if s := tab.slots[tab.home([]byte(key))]; s.key != k {
			t.Errorf("%s: the slot prefetch asks for holds %q, not the key", key, s.key)
		}
		tab.prefetch([]byte(key))
	}
}

// The decoders' key tables take an eighth of the memory budget in all,
// however many goroutines decode: a table per core (and the source loop's)
// would otherwise hold 2^20 keys each, 64 MiB on every core.
func TestKeyTablesShareTheBudget(t *testing.T) {
	for _, c := range []struct {
		budget         int64
		decoders, want int
	}{
		{0, 1, 1 << 20},         // 512 MiB / 8 / 64 B
		{0, 2, 1 << 19},         //
		{64 << 20, 4, 1 << 15},  // 64 MiB / 8 / 4 / 64 B
		{16 << 20, 64, 1 << 14}, // at least 2^14
		{1 << 40, 1, 1 << 20},   // at most 2^20
		{256 << 20, 3, 174762},  // 32 MiB / 3 / 64 B
		{512 << 20, 0, 1 << 20}, // no decoders: one table
	} {
		if got := keyTableKeys(c.budget, c.decoders); got != c.want {
			t.Errorf("keyTableKeys(%d, %d) = %d, want %d", c.budget, c.decoders, got, c.want)
		}
	}
	j, err := jobfile.Parse([]byte("name: k\nsource: {file: in.jsonl}\ntime: {field: ts}\nkey: card\nwindow: {tumbling: 1m}\naggregates: {n: count}\noutput: out.jsonl\nstate: {memory_budget: 64MiB}\n"), "k.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lp := newLineParser(j)
	lp.decodeOn(3) // three forks and the source loop's own decoder
	want := keyTableKeys(64<<20, 4)
	if lp.keys.max != want || lp.Fork().(*lineParser).keys.max != want {
		t.Errorf("key tables of %d and %d keys, want %d each", lp.keys.max, lp.Fork().(*lineParser).keys.max, want)
	}
}

// val is the JSON value v as the line rules read it.
func val(v *fastjson.Value) *source.Value {
	var slab []byte
	x := source.ValueOf(v, &slab)
	return &x
}
