package job

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/window"
)

// A having reads each aggregate as a number: NaN when the pane has none,
// a decimal's value, first and last as their values when they are numbers
// and NaN otherwise; and the pane's key, revision, timing and final.
func TestHavingReadsThePane(t *testing.T) {
	aggs := []jobfile.Aggregate{{Name: "n", Kind: jobfile.AggCount}, {Name: "s", Kind: jobfile.AggSum}, {Name: "f", Kind: jobfile.AggFirst}, {Name: "l", Kind: jobfile.AggLast}}
	p := pane{Key: `"c1"`, Revision: 2, Timing: window.Late, Final: true,
		Value: []outVal{{kind: vNull}, {kind: vDec, i: 1255, scale: 1}, {kind: vJSON, js: `-2.5`}, {kind: vJSON, js: `"x"`}}}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{"n != n", true},
		{"n >= 0 or n < 0", false},
		{"s == 125.5", true},
		{"f == -2.5", true},
		{"l != l", true},
		{`key == "c1" and revision == 2 and timing == "LATE" and final`, true},
		{"revision / 4 == 0.5 and revision % 2 == 0", true},
	} {
		h, err := compileHaving(c.src, aggs)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got, err := h.keep(aggs, &p, keyValue(p.Key)); got != c.want || err != nil {
			t.Errorf("%s: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
	h, _ := compileHaving("revision % (revision - 2) == 0", aggs)
	if got, err := h.keep(aggs, &p, "c1"); got || err == nil || err.Error() != "% of numbers that are not whole, or by zero" {
		t.Errorf("a remainder by zero: %v, %v", got, err)
	}
	for _, a := range []jobfile.Aggregate{{Name: "h", Kind: jobfile.AggHistogram}, {Name: "h", Kind: jobfile.AggTop}} {
		if _, err := compileHaving("h > 1", []jobfile.Aggregate{a}); err == nil {
			t.Errorf("%v read by having", a.Kind)
		}
		if _, err := compileHaving("final", []jobfile.Aggregate{a}); err != nil {
			t.Errorf("%v not read: %v", a.Kind, err)
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

// BenchmarkHaving judges a pane by an expression of comparisons, and by
// one with a remainder and a function.
func BenchmarkHaving(b *testing.B) {
	aggs := []jobfile.Aggregate{{Name: "orders", Kind: jobfile.AggCount}, {Name: "spent", Kind: jobfile.AggSum}}
	p := pane{Key: `"c1"`, Revision: 1, Timing: window.OnTime, Value: []outVal{{kind: vInt, i: 7}, {kind: vDec, i: 1255, scale: 1}}}
	for name, src := range map[string]string{
		"Comparisons":       `orders >= 5 && spent > 10.5 && key != "c9" && timing == "ON_TIME" && !final && revision < 3`,
		"RemainderFunction": `revision % 2 == 1 and abs(spent - orders) > 5`,
	} {
		b.Run(name, func(b *testing.B) {
			h, err := compileHaving(src, aggs)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				h.keep(aggs, &p, "c1")
			}
		})
	}
}
