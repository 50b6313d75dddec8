package job

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weirstream/weir/window"
)

// havingGen writes random `having` expressions of the kinds a direct
// expression handles.
type havingGen struct{ r *rand.Rand }

func (g havingGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g havingGen) boolean(depth int) string {
	if depth <= 0 {
		return g.pick("final", "true", "false", `timing == "LATE"`, `key != "c9"`, "orders >= 5")
	}
	switch g.r.IntN(7) {
	case 0:
		return g.pick("not ", "!") + "(" + g.boolean(depth-1) + ")"
	case 1, 2:
		return "(" + g.boolean(depth-1) + " " + g.pick("and", "&&", "or", "||", "==", "!=") + " " + g.boolean(depth-1) + ")"
	case 3:
		return g.pick("key", "timing", `"ON_TIME"`, `"c1"`) + " " + g.pick("==", "!=") + " " + g.pick("key", "timing", `"EARLY"`, `"c1"`, `""`)
	}
	return g.number(depth-1) + " " + g.pick("==", "!=", "<", "<=", ">", ">=") + " " + g.number(depth-1)
}

func (g havingGen) number(depth int) string {
	if depth <= 0 || g.r.IntN(3) == 0 {
		return g.pick("orders", "spent", "avg", "revision", "0", "1", "5", "-3", "4.5", "0.1", "1e300", "9007199254740993", "9223372036854775807")
	}
	switch g.r.IntN(4) {
	case 0:
		return g.pick("-", "+") + "(" + g.number(depth-1) + ")"
	}
	return "(" + g.number(depth-1) + " " + g.pick("+", "-", "*", "/") + " " + g.number(depth-1) + ")"
}

var havingValues = []outVal{
	{kind: vNull}, // NaN
	{kind: vInt, i: 0}, {kind: vInt, i: 5}, {kind: vInt, i: -3}, {kind: vInt, i: 1 << 53},
	{kind: vFloat, f: 4.5}, {kind: vFloat, f: math.Inf(1)}, {kind: vFloat, f: math.Inf(-1)}, {kind: vFloat, f: math.Copysign(0, -1)},
	{kind: vFloat, f: 1e300}, {kind: vDec, i: 1255, scale: 1}, {kind: vDec, i: 1, scale: 1},
}

// A direct expression gives what expr's machine gives, for random
// expressions over random panes (NaN, infinities, negative zero, integers
// beyond a float's precision, overflowing products), and allocates
// nothing.
func TestHavingDirectAgreesWithExpr(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	g := havingGen{r}
	aggs := []Aggregate{{Name: "orders", Kind: AggCount}, {Name: "spent", Kind: AggSum}, {Name: "avg", Kind: AggAvg}}
	timings := []window.Timing{window.Early, window.OnTime, window.Late}
	for n := range 3000 {
		src := g.boolean(1 + r.IntN(4))
		h, err := compileHaving(src, aggs)
		if err != nil {
			// expr refused it (a constant folded into an error, say):
			// nothing is evaluated either way.
			continue
		}
		if h.direct == nil {
			t.Fatalf("expression %d, %s: not direct", n, src)
		}
		onMachine := *h
		onMachine.direct = nil
		for range 8 {
			p := pane{Key: `"c1"`, Revision: r.IntN(4), Timing: timings[r.IntN(3)], Final: r.IntN(2) == 0,
				Value: []outVal{havingValues[r.IntN(len(havingValues))], havingValues[r.IntN(len(havingValues))], havingValues[r.IntN(len(havingValues))]}}
			key := g.pick("c1", "c9")
			got, gerr := h.keep(aggs, &p, key)
			want, werr := onMachine.keep(aggs, &p, key)
			if got != want || (gerr != nil) != (werr != nil) {
				t.Fatalf("expression %d, %s, pane %v key %s: direct %v (%v), expr %v (%v)", n, src, fmtValues(p.Value), key, got, gerr, want, werr)
			}
		}
	}
}

func fmtValues(vs []outVal) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%v ", v.number())
	}
	return b.String()
}

// What a direct expression does not handle runs on expr's machine, with
// the same answers.
func TestHavingOutsideDirectRunsOnExpr(t *testing.T) {
	aggs := []Aggregate{{Name: "orders", Kind: AggCount}}
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
		h, err := compileHaving(c.src, aggs)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if h.direct != nil {
			t.Errorf("%s: direct, want expr's machine", c.src)
		}
		p := pane{Revision: 1, Timing: window.OnTime, Value: []outVal{{kind: vInt, i: 5}}}
		if got, err := h.keep(aggs, &p, "c1"); got != c.want || err != nil {
			t.Errorf("%s: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}

// FuzzHaving checks any expression expr accepts: when it is evaluated
// directly, it gives what expr's machine gives on the same pane.
func FuzzHaving(f *testing.F) {
	for _, s := range []string{
		"orders >= 5", `orders >= 5 && spent > 10.5 && key != "c9"`, "not final or revision > 1",
		"spent / orders > 2.5", "-(orders) * 3 == revision - 9223372036854775807", `timing == "LATE" == final`,
		"revision % 2 == 1", "orders > 4 ? final : true", "1 / 0 > orders", "orders != orders",
	} {
		f.Add(s, 5.0, 12.5, 1, uint8(1), false)
	}
	aggs := []Aggregate{{Name: "orders", Kind: AggCount}, {Name: "spent", Kind: AggSum}}
	timings := []window.Timing{window.Early, window.OnTime, window.Late}
	f.Fuzz(func(t *testing.T, src string, a, b float64, rev int, timing uint8, final bool) {
		h, err := compileHaving(src, aggs)
		if err != nil || h.direct == nil {
			return
		}
		onMachine := *h
		onMachine.direct = nil
		p := pane{Revision: rev, Timing: timings[int(timing)%3], Final: final, Value: []outVal{{kind: vFloat, f: a}, {kind: vFloat, f: b}}}
		got, gerr := h.keep(aggs, &p, "c1")
		want, werr := onMachine.keep(aggs, &p, "c1")
		if got != want || (gerr != nil) != (werr != nil) {
			t.Fatalf("%s on %v %v revision %d: direct %v (%v), expr %v (%v)", src, a, b, rev, got, gerr, want, werr)
		}
	})
}
