package expression

import (
	"fmt"
	"testing"

	"github.com/valyala/fastjson"
)

const event = `{"event":"click","ms":120,"price":19.5,"p":{"a":2,"n":null},"tags":["x","y"],"s":"Hello World","ok":true,"z":null}`

// show is a value as the tests write it.
func show(v Value) string {
	switch v.Kind {
	case Bool:
		return fmt.Sprint(v.Bool)
	case Number:
		return fmt.Sprint(v.Num)
	case String:
		return fmt.Sprintf("%q", v.Str)
	}
	return "null"
}

// Every construct of the language, on one event: its value, or why it
// fails on it.
func TestEval(t *testing.T) {
	var pp fastjson.Parser
	obj, err := pp.Parse(event)
	if err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]string{
		`event == "click"`:          "true",
		`event != "click"`:          "false",
		`ms > 100 and p.a == 2`:     "true",
		`ms < 100 or not ok`:        "false",
		`!(ms >= 120) || ms <= 120`: "true",
		`tags[1]`:                   `"y"`,
		`p["a"] + 1`:                "3",
		`price * 2 - 1`:             "38",
		`ms / 8`:                    "15",
		`ms % 50`:                   "20",
		`-ms`:                       "-120",
		`floor(price) + ceil(0.2) + round(2.5) + abs(-1) + int(-2.7)`: "22",
		`lower(s) + "|" + upper(s) + "|" + trim("  a ")`:              `"hello world|HELLO WORLD|a"`,
		`len(s)`:                              "11",
		`s[0:5]`:                              `"Hello"`,
		`s[6:]`:                               `"World"`,
		`string(ms) + string(ok) + string(z)`: `"120truenull"`,
		`number("3.5") + float(1)`:            "4.5",
		`missing ?? "none"`:                   `"none"`,
		`z ?? 7`:                              "7",
		`p.n ?? p.a`:                          "2",
		`x?.y`:                                "null",
		`event in ["view", "click"]`:          "true",
		`ms in [1, 2]`:                        "false",
		`s contains "lo W" and s startsWith "He" and s endsWith "ld"`: "true",
		`s matches "^[A-Z][a-z]+ "`:                                   "true",
		`ok ? "yes" : "no"`:                                           `"yes"`,
		`event == 1`:                                                  "false",
		`z == nil`:                                                    "true",
		`missing`:                                                     "fails: no field missing",
		`p.a.b`:                                                       "fails: no field p.a.b",
		`ms / 0`:                                                      "fails: division by zero",
		`event < 1`:                                                   "fails: a string < a number cannot be compared",
		`event + 1`:                                                   "fails: a string + a number",
		`not ms`:                                                      "fails: not of a number",
		`ms ? 1 : 2`:                                                  "fails: the condition of ? : is a number, not true or false",
		`lower(ms)`:                                                   "fails: lower of a number",
		`number("x")`:                                                 `fails: number of "x": not a number`,
		`millis("2026-09-07T12:00:02.5Z") - millis("2026-09-07T12:00:00Z")`:     "2500",
		`millis("1780000000000") - millis(1779999999000)`:                       "1000",
		`millis("2026-09-07T14:00:00+02:00") == millis("2026-09-07T12:00:00Z")`: "true",
		`millis("yesterday")`: `fails: millis of "yesterday": not a time (RFC 3339, or epoch milliseconds)`,
		`millis(ok)`:          "fails: millis of a bool",
		`tags`:                "fails: tags is array, which an expression does not read",
	} {
		p, err := Compile(src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		v, err := p.Eval(obj)
		got := show(v)
		if err != nil {
			got = "fails: " + err.Error()
		}
		if got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// What cannot be compiled is refused, saying why.
func TestCompileErrors(t *testing.T) {
	for src, want := range map[string]string{
		`foo(1)`:        "unknown function foo (lower, upper, trim, len, abs, floor, ceil, round, int, float, string, number and millis are known)",
		`lower(a, b)`:   "lower takes 1 argument, in lower(a, b)",
		`s matches x`:   "matches takes a constant regular expression",
		`s matches "("`: "matches: error parsing regexp: missing closing ): `(`",
		`x in y`:        "in takes a list of constants: x in [1, 2, 3]",
		`a ==`:          "unexpected token EOF (1:4)",
		`{"a": 1}`:      `{a: 1} is not something a where or a field can say`,
		`lower(s).x`:    "only fields are read with . and [ ]: lower(s).x",
	} {
		_, err := Compile(src)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", src, err, want)
		}
	}
}

// A condition holds for true only; the fields an expression reads are
// known ahead; evaluating allocates nothing.
func TestHoldsFieldsAllocations(t *testing.T) {
	var pp fastjson.Parser
	obj, _ := pp.Parse(event)
	p, err := Compile(`event == "click" and ms > 100 and lower(s) startsWith "hello"`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Holds(obj); !ok || err != nil {
		t.Errorf("Holds = %v, %v", ok, err)
	}
	if f := fmt.Sprint(p.Fields()); f != "[event ms s]" {
		t.Errorf("fields %s", f)
	}
	if n := testing.AllocsPerRun(1000, func() { p.Holds(obj) }); n != 0 {
		t.Errorf("%v allocations an evaluation", n)
	}
	q, _ := Compile(`ms + 1`)
	if _, err := q.Holds(obj); err == nil || err.Error() != "it is a number, not true or false" {
		t.Errorf("Holds of a number: %v", err)
	}
}

// A derived field joins the event as a field of its own, of its kind.
func TestSet(t *testing.T) {
	var pp fastjson.Parser
	obj, _ := pp.Parse(event)
	var arena fastjson.Arena
	for name, src := range map[string]string{"eur": "price * 0.5", "who": `upper(event)`, "big": "ms > 100", "none": "z", "bucket": "floor(ms / 50) * 50"} {
		p, _ := Compile(src)
		v, err := p.Eval(obj)
		if err != nil {
			t.Fatal(err)
		}
		Set(obj, name, v, &arena)
	}
	want := `{"event":"click","ms":120,"price":19.5,"p":{"a":2,"n":null},"tags":["x","y"],"s":"Hello World","ok":true,"z":null,`
	got := obj.String()
	for _, f := range []string{`"eur":9.75`, `"who":"CLICK"`, `"big":true`, `"none":null`, `"bucket":100`} {
		if !contains(got, f) {
			t.Errorf("%s lacks %s", got, f)
		}
	}
	if got[:len(want)] != want {
		t.Errorf("%s", got)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
