package jobfile

import (
	"fmt"
	"slices"

	"github.com/weirstream/weir/expression"
)

// Having is a compiled `having` expression: package expression's language
// over an environment of the pane. It sees every aggregate by name (a
// number, NaN when the pane has none; first and last are their values when
// they are numbers, NaN otherwise; a histogram or a top it refuses to
// read), and the pane's key, revision (an integer), timing ("EARLY",
// "ON_TIME", "LATE") and final flag. Whoever evaluates it sets these Vars
// in place, which allocates nothing.
type Having struct {
	Prog *expression.EnvProgram
	Vars *expression.Vars

	// Aggs are the aggregates' variables, in the job's order.
	Aggs                         []expression.Var
	Key, Revision, Timing, Final expression.Var
}

// CompileHaving checks an expression against the result fields it may use.
func CompileHaving(h string, aggs []Aggregate) (*Having, error) {
	var env expression.Env
	he := &Having{}
	for _, a := range aggs {
		he.Aggs = append(he.Aggs, env.Declare(a.Name, expression.Number))
	}
	he.Key = env.Declare("key", expression.String)
	he.Revision = env.Declare("revision", expression.Int)
	he.Timing = env.Declare("timing", expression.String)
	he.Final = env.Declare("final", expression.Bool)
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
	he.Prog, he.Vars = prog, env.Vars()
	return he, nil
}

// notNumber is the error of a having expression that reads an aggregate
// that is no number.
type notNumber string

func (e notNumber) Error() string { return string(e) }
