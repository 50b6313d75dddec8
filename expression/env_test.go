package expression

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// pane is an Env as a having declares it: three aggregates, the key, the
// revision, the timing and final.
type pane struct {
	env                          Env
	orders, spent, avg           Var
	key, revision, timing, final Var
	vars                         *Vars
}

func newPane() *pane {
	p := &pane{}
	p.orders = p.env.Declare("orders", Number)
	p.spent = p.env.Declare("spent", Number)
	p.avg = p.env.Declare("avg", Number)
	p.key = p.env.Declare("key", String)
	p.revision = p.env.Declare("revision", Int)
	p.timing = p.env.Declare("timing", String)
	p.final = p.env.Declare("final", Bool)
	p.vars = p.env.Vars()
	return p
}

// set sets the pane's values, and those of e, expr-lang's environment of
// the same names, when e is not nil.
func (p *pane) set(orders, spent, avg float64, key string, revision int, timing string, final bool, e *exprEnv) {
	p.vars.SetNumber(p.orders, orders)
	p.vars.SetNumber(p.spent, spent)
	p.vars.SetNumber(p.avg, avg)
	p.vars.SetString(p.key, key)
	p.vars.SetInt(p.revision, int64(revision))
	p.vars.SetString(p.timing, timing)
	p.vars.SetBool(p.final, final)
	if e != nil {
		*e = exprEnv{orders, spent, avg, key, revision, timing, final}
	}
}

// exprEnv is the pane as expr-lang's machine reads it.
type exprEnv struct {
	Orders   float64 `expr:"orders"`
	Spent    float64 `expr:"spent"`
	Avg      float64 `expr:"avg"`
	Key      string  `expr:"key"`
	Revision int     `expr:"revision"`
	Timing   string  `expr:"timing"`
	Final    bool    `expr:"final"`
}

// showEnv is a value as the tests write it, with its kind.
func showEnv(v Value) string {
	switch v.Kind {
	case Int:
		return fmt.Sprintf("int %d", v.Int)
	case Number:
		return fmt.Sprintf("number %v", v.Num)
	}
	return show(v)
}

// Every kind of name, integers and floats, NaN, and what fails on a pane's
// values, over an Env.
func TestEnvEval(t *testing.T) {
	p := newPane()
	p.set(7, 12.5, math.NaN(), "c1", 2, "ON_TIME", false, nil)
	for _, c := range []struct{ src, want string }{
		{`orders`, "number 7"},
		{`revision`, "int 2"},
		{`key`, `"c1"`},
		{`final`, "false"},
		{`orders >= 5 && spent > 10.5 && key != "c9" && timing == "ON_TIME" && !final && revision < 3`, "true"},
		{`revision + 1`, "int 3"},
		{`revision * 2 - 5`, "int -1"},
		{`-revision`, "int -2"},
		{`revision % 2`, "int 0"},
		{`revision / 4`, "number 0.5"},
		{`revision ** 2`, "number 4"},
		{`orders + revision`, "number 9"},
		{`revision == 2.0`, "true"},
		{`revision in [1, 2]`, "true"},
		{`orders in [7, 8]`, "true"},
		{`9223372036854775807 + revision`, "int -9223372036854775807"},
		{`9007199254740993 + 0 == 9007199254740992`, "false"},
		{`9007199254740993 + 0.0 == 9007199254740992`, "true"},
		{`avg`, "number NaN"},
		{`avg == avg`, "false"},
		{`avg != avg`, "true"},
		{`avg < 1 or avg >= 1`, "false"},
		{`spent / 0`, "number +Inf"},
		{`-spent / 0`, "number -Inf"},
		{`0 / 0 == 0 / 0`, "false"},
		{`abs(-revision)`, "int 2"},
		{`abs(-spent)`, "number 12.5"},
		{`floor(spent) + ceil(spent) + round(spent)`, "number 38"},
		{`floor(revision)`, "number 2"},
		{`int(spent)`, "int 12"},
		{`int("42")`, "int 42"},
		{`float("4.5")`, "number 4.5"},
		{`float(revision)`, "number 2"},
		{`string(revision) + string(spent) + string(final)`, `"212.5false"`},
		{`len(key)`, "int 2"},
		{`len("é")`, "int 1"},
		{`key[0:1]`, `"c"`},
		{`timing[-4:]`, `"TIME"`},
		{`upper(key) + lower(timing)`, `"C1on_time"`},
		{`key startsWith "c" and key endsWith "1" and timing contains "_"`, "true"},
		{`timing matches "^ON"`, "true"},
		{`timing in ["LATE", "ON_TIME"]`, "true"},
		{`final ? 1 : orders`, "number 7"},
		{`key ?? "none"`, `"c1"`},
		{`key == nil`, "false"},
		{`revision % 0`, "fails: % of numbers that are not whole, or by zero"},
		{`int(key)`, `fails: int of "c1": not a whole number`},
		{`float(timing)`, `fails: float of "ON_TIME": not a number`},
	} {
		prog, err := p.env.Compile(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		v, err := prog.Eval(p.vars)
		got := showEnv(v)
		if err != nil {
			got = "fails: " + err.Error()
		}
		if got != c.want {
			t.Errorf("%s = %s, want %s", c.src, got, c.want)
		}
	}
}

// What an Env's expression cannot be is refused when it is compiled, with
// its place, as expr-lang says it; what the language has not is refused as
// over a JSON object.
func TestEnvCompileErrors(t *testing.T) {
	p := newPane()
	for _, c := range []struct {
		src       string
		condition bool
		want      string
	}{
		{`n >=`, true, "unexpected token EOF (1:4)\n | n >=\n | ...^"},
		{`n > 1`, true, "unknown name n (1:1)\n | n > 1\n | ^"},
		{`key > 1`, false, "invalid operation: > (mismatched types string and int) (1:5)\n | key > 1\n | ....^"},
		{`orders % 2 == 1`, true, "invalid operation: % (mismatched types float64 and int) (1:8)\n | orders % 2 == 1\n | .......^"},
		{`orders and final`, true, "invalid operation: and (mismatched types float64 and bool) (1:8)\n | orders and final\n | .......^"},
		{`orders + 1`, true, "expected bool, but got float64"},
		{`orders + 1`, false, ""},
		{`5 % 0 == revision`, true, "integer divide by zero (1:3)\n | 5 % 0 == revision\n | ..^"},
		{`max(orders, 1) > 2`, true, "unknown function max (lower, upper, trim, len, abs, floor, ceil, round, int, float, string, number and millis are known)"},
		{`timing matches key`, true, "matches takes a constant regular expression"},
	} {
		var err error
		if c.condition {
			_, err = p.env.CompileCondition(c.src)
		} else {
			_, err = p.env.Compile(c.src)
		}
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.src, got, c.want)
		}
	}
}

// A program reports the names it reads; a Vars refuses a value of another
// kind than its name's, and an Env a name declared twice or of a kind it
// does not hold.
func TestEnvNamesAndMistakes(t *testing.T) {
	p := newPane()
	prog, err := p.env.CompileCondition(`spent > orders and final and spent < 100`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(prog.Names()); got != "[spent orders final]" {
		t.Errorf("names %s", got)
	}
	if prog.String() != `spent > orders and final and spent < 100` {
		t.Errorf("string %s", prog.String())
	}
	for name, f := range map[string]func(){
		"a number set as a string": func() { p.vars.SetString(p.orders, "7") },
		"an int set as a number":   func() { p.vars.SetNumber(p.revision, 2) },
		"a name declared twice":    func() { p.env.Declare("key", String) },
		"a name declared null":     func() { new(Env).Declare("x", Null) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	// A name not set is its kind's zero.
	var env Env
	n, s := env.Declare("n", Number), env.Declare("s", String)
	_, _ = n, s
	z, _ := env.Compile(`string(n) + s`)
	if v, err := z.Eval(env.Vars()); err != nil || showEnv(v) != `"0"` {
		t.Errorf("zeroes: %s, %v", showEnv(v), err)
	}
}

// A condition holds for true only; a clone evaluates on its own; no
// expression allocates when it is evaluated, whatever it reads and makes.
func TestEnvHoldsCloneAllocations(t *testing.T) {
	p := newPane()
	p.set(7, 12.5, math.NaN(), "c1", 1, "ON_TIME", false, nil)
	for _, src := range []string{
		`orders >= 5 && spent > 10.5 && key != "c9" && timing == "ON_TIME" && !final && revision < 3`,
		`revision % 2 == 1`,
		`orders ** 2 > 20`,
		`timing in ["LATE", "ON_TIME"]`,
		`key startsWith "c"`,
		`abs(orders) > 5 and avg != avg`,
		`orders > 4 ? !final : true`,
		`upper(key) + "/" + lower(timing) + "/" + string(spent) == "C1/on_time/12.5"`,
		`timing matches "^ON_" and len(key[0:1]) == 1 and int(spent) == 12`,
	} {
		prog, err := p.env.CompileCondition(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		c := prog.Clone()
		if ok, err := c.Holds(p.vars); !ok || err != nil {
			t.Errorf("%s holds %v, %v", src, ok, err)
		}
		if n := testing.AllocsPerRun(1000, func() { c.Holds(p.vars) }); n != 0 {
			t.Errorf("%s: %v allocations an evaluation", src, n)
		}
	}
	q, _ := p.env.Compile(`revision + 1`)
	if _, err := q.Holds(p.vars); err == nil || err.Error() != "it is an integer, not true or false" {
		t.Errorf("Holds of an integer: %v", err)
	}
	p.vars.SetNumber(p.orders, 4)
	if prog, _ := p.env.CompileCondition(`orders >= 5`); prog != nil {
		if ok, err := prog.Holds(p.vars); ok || err != nil {
			t.Errorf("orders 4 >= 5: %v, %v", ok, err)
		}
	}
}

// These expressions run on expr-lang's machine before having was compiled
// here; they still give what they gave.
func TestEnvOnceOnExprsMachine(t *testing.T) {
	p := newPane()
	p.set(5, 0, 0, "c1", 1, "ON_TIME", false, nil)
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"revision % 2 == 1", true},
		{"orders ** 2 > 20", true},
		{`timing in ["LATE", "ON_TIME"]`, true},
		{`key startsWith "c"`, true},
		{"abs(orders) > 5", false},
		{"orders > 4 ? final : true", false},
	} {
		prog, err := p.env.CompileCondition(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got, err := prog.Holds(p.vars); got != c.want || err != nil {
			t.Errorf("%s: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}

// exprGen writes random conditions over a pane.
type exprGen struct{ r *rand.Rand }

func (g exprGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g exprGen) boolean(depth int) string {
	if depth <= 0 {
		return g.pick("final", "true", "false", `timing == "LATE"`, `key != "c9"`, "orders >= 5", `key startsWith "c"`, `timing in ["LATE", "EARLY"]`)
	}
	switch g.r.IntN(9) {
	case 0:
		return g.pick("not ", "!") + "(" + g.boolean(depth-1) + ")"
	case 1, 2:
		return "(" + g.boolean(depth-1) + " " + g.pick("and", "&&", "or", "||", "==", "!=") + " " + g.boolean(depth-1) + ")"
	case 3:
		return g.pick("key", "timing", `"ON_TIME"`, `"c1"`) + " " + g.pick("==", "!=", "<", ">=") + " " + g.pick("key", "timing", `"EARLY"`, `"c1"`, `""`)
	case 4:
		return "(" + g.boolean(depth-1) + " ? " + g.boolean(depth-1) + " : " + g.boolean(depth-1) + ")"
	case 5:
		return g.integer(depth-1) + " " + g.pick("==", "!=", "<", "<=", ">", ">=") + " " + g.integer(depth-1)
	}
	return g.number(depth-1) + " " + g.pick("==", "!=", "<", "<=", ">", ">=") + " " + g.number(depth-1)
}

func (g exprGen) number(depth int) string {
	if depth <= 0 || g.r.IntN(3) == 0 {
		return g.pick("orders", "spent", "avg", "revision", "0", "1", "5", "-3", "4.5", "0.1", "1e300", "9007199254740993", "9223372036854775807")
	}
	switch g.r.IntN(6) {
	case 0:
		return g.pick("-", "+") + "(" + g.number(depth-1) + ")"
	case 1:
		return g.pick("abs", "floor", "ceil", "round", "float") + "(" + g.number(depth-1) + ")"
	case 2:
		return g.integer(depth)
	}
	return "(" + g.number(depth-1) + " " + g.pick("+", "-", "*", "/", "**") + " " + g.number(depth-1) + ")"
}

func (g exprGen) integer(depth int) string {
	if depth <= 0 || g.r.IntN(3) == 0 {
		return g.pick("revision", "0", "2", "-7", "len(key)", "9223372036854775807")
	}
	switch g.r.IntN(4) {
	case 0:
		return "-(" + g.integer(depth-1) + ")"
	case 1:
		return g.pick("int", "abs") + "(" + g.number(depth-1) + ")"
	}
	return "(" + g.integer(depth-1) + " " + g.pick("+", "-", "*", "%") + " " + g.integer(depth-1) + ")"
}

var paneNumbers = []float64{math.NaN(), 0, 5, -3, 1 << 53, 4.5, math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e300, 125.5, 0.1}

// sameAsExpr evaluates src over a pane and on expr-lang's machine, and says
// how they differ, if they do.
func sameAsExpr(p *pane, src string, e *exprEnv) string {
	prog, err := expr.Compile(src, expr.Env(exprEnv{}), expr.AsBool())
	mine, merr := p.env.CompileCondition(src)
	if (err != nil) != (merr != nil) {
		return fmt.Sprintf("compiles: expr %v, here %v", err, merr)
	}
	if err != nil {
		if err.Error() != merr.Error() {
			return fmt.Sprintf("refused: expr %q, here %q", err, merr)
		}
		return ""
	}
	want, werr := vm.Run(prog, e)
	got, gerr := mine.Holds(p.vars)
	if w, _ := want.(bool); w != got || (gerr != nil) != (werr != nil) {
		return fmt.Sprintf("here %v (%v), expr %v (%v)", got, gerr, want, werr)
	}
	return ""
}

// An expression over an Env gives what expr-lang's machine gives, for
// random expressions over random panes (NaN, infinities, negative zero,
// integers beyond a float's precision, overflowing products, remainders by
// zero), and refuses what it refuses.
func TestEnvAgreesWithExpr(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	g := exprGen{r}
	p := newPane()
	var e exprEnv
	timings := []string{"EARLY", "ON_TIME", "LATE"}
	for n := range 3000 {
		src := g.boolean(1 + r.IntN(4))
		for range 8 {
			p.set(paneNumbers[r.IntN(len(paneNumbers))], paneNumbers[r.IntN(len(paneNumbers))], paneNumbers[r.IntN(len(paneNumbers))],
				g.pick("c1", "c9"), r.IntN(4), timings[r.IntN(3)], r.IntN(2) == 0, &e)
			if d := sameAsExpr(p, src, &e); d != "" {
				t.Fatalf("expression %d, %s, pane %+v: %s", n, src, e, d)
			}
		}
	}
}

// FuzzEnv checks any expression: it is refused as expr-lang refuses it, or
// it gives what expr's machine gives on the same pane, unless it uses what
// the language has not (a function of expr's it lacks, say), or strings
// beyond ASCII, whose case and length expr-lang reads by characters.
func FuzzEnv(f *testing.F) {
	for _, s := range []string{
		"orders >= 5", `orders >= 5 && spent > 10.5 && key != "c9"`, "not final or revision > 1",
		"spent / orders > 2.5", "-(orders) * 3 == revision - 9223372036854775807", `timing == "LATE" == final`,
		"revision % 2 == 1", "orders > 4 ? final : true", "1 / 0 > orders", "orders != orders",
	} {
		f.Add(s, 5.0, 12.5, 1, uint8(1), false)
	}
	timings := []string{"EARLY", "ON_TIME", "LATE"}
	f.Fuzz(func(t *testing.T, src string, a, b float64, rev int, timing uint8, final bool) {
		p := newPane()
		var e exprEnv
		p.set(a, b, math.NaN(), "c1", rev, timings[int(timing)%3], final, &e)
		d := sameAsExpr(p, src, &e)
		if d == "" || strings.HasPrefix(d, "compiles: expr <nil>") || strings.HasPrefix(d, "refused:") {
			return
		}
		for _, c := range src {
			if c >= 0x80 {
				return
			}
		}
		t.Fatalf("%s on %v %v revision %d: %s", src, a, b, rev, d)
	})
}

// BenchmarkEnv evaluates a having's condition of comparisons over a pane.
func BenchmarkEnv(b *testing.B) {
	p := newPane()
	p.set(7, 12.5, math.NaN(), "c1", 1, "ON_TIME", false, nil)
	prog, err := p.env.CompileCondition(`orders >= 5 && spent > 10.5 && key != "c9" && timing == "ON_TIME" && !final && revision < 3`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		prog.Holds(p.vars)
	}
}

// A side of and that expr-lang folds to false decides it, as expr-lang's
// optimizer has it, whatever the other sides would give: an error (a
// remainder by zero) included (TestEnvAgreesWithExpr found it, seed
// 6731430990368421452); and a side of or folded to true.
func TestEnvFoldedSidesDecide(t *testing.T) {
	p := newPane()
	var e exprEnv
	p.set(125.5, 0, 1e300, "c9", 0, "ON_TIME", true, &e)
	for _, src := range []string{
		`((9223372036854775807 - (revision % revision)) == abs(+(avg)) && "ON_TIME" == "")`,
		`revision % revision == 0 or 1 < 2`,
		`(revision % revision == 0 and orders > 1) and false`,
		`revision % revision == 0 and true`,
	} {
		if d := sameAsExpr(p, src, &e); d != "" {
			t.Errorf("%s: %s", src, d)
		}
	}
}
