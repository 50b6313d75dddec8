package text

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// valid is what ValidJSON stands for.
func valid(b []byte) bool { return utf8.Valid(b) && json.Valid(b) }

var validCases = []string{
	``, ` `, `{}`, ` {} `, `[]`, `[ ]`, `{"a":1}`, `{"a" : [1, 2.5, -0.1e+3, 1E2, true, false, null, "x"]}`,
	`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":1}}`, `{"a":1}x`,
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.e3`, `1e`, `1e+`, `+1`, `1.5e-07`, `-12.34E56`, `00`, `-01`, `0x10`,
	`"`, `""`, `"\"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"\'"`,
	"\"a\tb\"", "\"a\x01b\"", "\"a\x7fb\"", `"é"`, "\"\xe9\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xef\xbf\xbd\"",
	`true`, `tru`, `truee`, `false`, `nul`, `null `, "\t\r\n[\t1\r,\n2 ]\n", "[1]\x00", "\xef\xbb\xbf{}", `NaN`, `Infinity`,
	`{"a":{"b":{"c":[[[]]]}}}`, `[[[]]`, `[]]`, `{"a":1,"a":2}`, `"\uD800"`, `{"":""}`, "{\"a\":1}\n",
}

func TestValidJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := ValidJSON([]byte(c)), valid([]byte(c)); got != want {
			t.Errorf("ValidJSON(%q) = %v, want %v", c, got, want)
		}
	}
}

// Nesting as deep as encoding/json's limit is valid, one more is not.
func TestValidJSONDepth(t *testing.T) {
	for _, n := range []int{maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closing := map[string]string{"[": "]", `{"a":`: "}"}[open]
			b := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(closing, n))
			if got, want := ValidJSON(b), valid(b); got != want {
				t.Errorf("depth %d of %s: ValidJSON = %v, want %v", n, open, got, want)
			}
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), valid(b); got != want {
			t.Errorf("ValidJSON(%q) = %v, want %v", b, got, want)
		}
	})
}

var record = []byte(`{"order_id":"o123456","ts":1780000012345,"arrival":1780000012400,"amount":123.45,"card":"c-9876","note":"café"}`)

func BenchmarkValidJSON(b *testing.B) {
	b.SetBytes(int64(len(record)))
	for b.Loop() {
		if !ValidJSON(record) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkValidStd(b *testing.B) {
	b.SetBytes(int64(len(record)))
	for b.Loop() {
		if !valid(record) {
			b.Fatal("invalid")
		}
	}
}
