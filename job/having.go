package job

import (
	"fmt"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/weirstream/weir/window"
)

// havingExpr is a compiled `having` expression (expr-lang/expr). It sees every
// aggregate by name (a number, NaN when the pane has none; first and last
// are their values when they are numbers, NaN otherwise; a histogram or a
// top it refuses to read), and the pane's
// key, revision, timing ("EARLY", "ON_TIME", "LATE") and final flag.
//
// Most expressions are evaluated directly (see direct), without expr's
// machine, and allocate nothing. The others run on expr's machine, with an
// environment that is a struct made for the job's aggregates (a field per
// aggregate, named by an expr tag), set in place for each pane, so that
// evaluating a pane builds no map. They still allocate: expr's machine
// reads a field as an interface, which boxes a float (one allocation for
// each aggregate the expression reads).
type havingExpr struct {
	prog *vm.Program
	vm   vm.VM
	env  any           // a pointer to the struct
	val  reflect.Value // the struct

	direct direct // nil: the expression runs on expr's machine
	denv   directEnv
}

// Fields of the environment after the aggregates'.
const (
	envKey = iota
	envRevision
	envTiming
	envFinal
	envFixed
)

// compileHaving checks an expression against the result fields it may use.
func compileHaving(h string, aggs []Aggregate) (*havingExpr, error) {
	var fields []reflect.StructField
	for i, a := range aggs {
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("A%d", i), Type: reflect.TypeFor[float64](), Tag: reflect.StructTag(`expr:"` + a.Name + `"`)})
	}
	fields = append(fields,
		reflect.StructField{Name: "Key", Type: reflect.TypeFor[string](), Tag: `expr:"key"`},
		reflect.StructField{Name: "Revision", Type: reflect.TypeFor[int](), Tag: `expr:"revision"`},
		reflect.StructField{Name: "Timing", Type: reflect.TypeFor[string](), Tag: `expr:"timing"`},
		reflect.StructField{Name: "Final", Type: reflect.TypeFor[bool](), Tag: `expr:"final"`},
	)
	ptr := reflect.New(reflect.StructOf(fields))
	prog, err := expr.Compile(h, expr.Env(ptr.Interface()), expr.AsBool())
	if err != nil {
		return nil, err
	}
	// A histogram's object and a top's array are no numbers: an
	// expression over them would see NaN, always.
	var names usedNames
	node := prog.Node()
	ast.Walk(&node, &names)
	for _, a := range aggs {
		if (a.Kind == AggHistogram || a.Kind == AggTop) && names[a.Name] {
			return nil, notNumber(fmt.Sprintf("%s is %s, a JSON value: having compares numbers (counts, sums, percentiles, first and last of numbers), not %ss", a.Name, a, map[AggKind]string{AggHistogram: "histogram", AggTop: "top"}[a.Kind]))
		}
	}
	he := &havingExpr{prog: prog, env: ptr.Interface(), val: ptr.Elem(), direct: compileDirect(prog.Node(), aggs)}
	he.denv.aggs = make([]float64, len(aggs))
	return he, nil
}

// notNumber is the error of a having expression that reads an aggregate
// that is no number.
type notNumber string

func (e notNumber) Error() string { return string(e) }

// usedNames are the names an expression reads.
type usedNames map[string]bool

func (u *usedNames) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok {
		if *u == nil {
			*u = usedNames{}
		}
		(*u)[id.Value] = true
	}
}

// keep evaluates the expression for a pane. A retraction is judged by the
// values it withdraws, so it is written exactly when the pane it withdraws
// was.
func (h *havingExpr) keep(aggs []Aggregate, p *window.Pane[string, []outVal], key string) (bool, error) {
	if h.direct != nil {
		e := &h.denv
		for k := range aggs {
			e.aggs[k] = p.Value[k].number()
		}
		e.key, e.revision, e.timing, e.final = key, int64(p.Revision), p.Timing.String(), p.Final
		return h.direct(e), nil
	}
	n := len(aggs)
	for k := range aggs {
		h.val.Field(k).SetFloat(p.Value[k].number())
	}
	h.val.Field(n + envKey).SetString(key)
	h.val.Field(n + envRevision).SetInt(int64(p.Revision))
	h.val.Field(n + envTiming).SetString(p.Timing.String())
	h.val.Field(n + envFinal).SetBool(p.Final)
	out, err := h.vm.Run(h.prog, h.env)
	if err != nil {
		return false, err
	}
	b, _ := out.(bool)
	return b, nil
}
