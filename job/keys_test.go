package job

import (
	"fmt"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/internal/linedec"
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
			want := string(linedec.AppendCanonical(nil, v))
			got, ok := tab.intern(v)
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
		if k, ok := tab.intern(v); ok {
			t.Errorf("%q interned as %q", text, k)
		}
	}
	v, _ := p.Parse(`"c7"`)
	a, _ := tab.intern(v)
	if n := testing.AllocsPerRun(100, func() { b, _ := tab.intern(v); a = b }); n != 0 || a != `"c7"` {
		t.Errorf("%v allocations for a key seen before", n)
	}
}
