package job

import (
	"fmt"
	"slices"

	"github.com/weirstream/weir/expression"
	"github.com/weirstream/weir/window"
)

// havingExpr is a compiled `having` expression: package expression's
// language over an environment of the pane. It sees every aggregate by name
// (a number, NaN when the pane has none; first and last are their values
// when they are numbers, NaN otherwise; a histogram or a top it refuses to
// read), and the pane's key, revision (an integer), timing ("EARLY",
// "ON_TIME", "LATE") and final flag. Evaluating a pane sets these values in
// place and allocates nothing.
type havingExpr struct {
	prog *expression.EnvProgram
	vars *expression.Vars

	aggs                         []expression.Var // by the job's aggregates' order
	key, revision, timing, final expression.Var
}

// compileHaving checks an expression against the result fields it may use.
func compileHaving(h string, aggs []Aggregate) (*havingExpr, error) {
	var env expression.Env
	he := &havingExpr{}
	for _, a := range aggs {
		he.aggs = append(he.aggs, env.Declare(a.Name, expression.Number))
	}
	he.key = env.Declare("key", expression.String)
	he.revision = env.Declare("revision", expression.Int)
	he.timing = env.Declare("timing", expression.String)
	he.final = env.Declare("final", expression.Bool)
	prog, err := env.CompileCondition(h)
	if err != nil {
		return nil, err
	}
	// A histogram's object and a top's array are no numbers: an
	// expression over them would see NaN, always.
	for _, a := range aggs {
		if (a.Kind == AggHistogram || a.Kind == AggTop) && slices.Contains(prog.Names(), a.Name) {
			return nil, notNumber(fmt.Sprintf("%s is %s, a JSON value: having compares numbers (counts, sums, percentiles, first and last of numbers), not %ss", a.Name, a, map[AggKind]string{AggHistogram: "histogram", AggTop: "top"}[a.Kind]))
		}
	}
	he.prog, he.vars = prog, env.Vars()
	return he, nil
}

// notNumber is the error of a having expression that reads an aggregate
// that is no number.
type notNumber string

func (e notNumber) Error() string { return string(e) }

// keep evaluates the expression for a pane: it keeps the pane when the
// expression is true (compiled as a condition, it is a bool; any other
// value would be false, as on expr's machine). A retraction is judged by the values it
// withdraws, so it is written exactly when the pane it withdraws was.
func (h *havingExpr) keep(aggs []Aggregate, p *window.Pane[string, []outVal], key string) (bool, error) {
	v := h.vars
	for k := range aggs {
		v.SetNumber(h.aggs[k], p.Value[k].number())
	}
	v.SetString(h.key, key)
	v.SetInt(h.revision, int64(p.Revision))
	v.SetString(h.timing, p.Timing.String())
	v.SetBool(h.final, p.Final)
	r, err := h.prog.Eval(v)
	return r.Kind == expression.Bool && r.Bool, err
}
