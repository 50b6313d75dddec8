package job

import (
	"cmp"

	"github.com/expr-lang/expr/ast"
)

// direct is a `having` expression evaluated without expr's machine: a tree
// of functions over the pane's values compiled from the checked
// expression, for the expressions most jobs write (comparisons of
// aggregates, the revision, the timing and the key with constants and each
// other, arithmetic, and, or, not). expr's machine holds every value it
// reads as an interface, which boxes a float (an allocation for each
// aggregate an expression reads, for every pane); these functions pass
// numbers as numbers.
//
// It computes exactly what expr does: an integer stays an integer (the
// revision, an integer constant) until it meets a float, "/" gives a float,
// an integer and a float compare as floats, and NaN compares as Go's
// floats do. An expression with anything else (a function, a member, a
// string operator, "%" or "**", which can fail or round otherwise) is left
// to expr: compileDirect returns nil.
type direct func(*directEnv) bool

// directEnv is what a direct expression reads: the pane's fields.
type directEnv struct {
	aggs     []float64 // by the job's aggregates' order
	key      string
	revision int64
	timing   string
	final    bool
}

// term is a compiled node: one of its functions, by kind.
type term struct {
	kind termKind
	i    func(*directEnv) int64
	f    func(*directEnv) float64
	b    func(*directEnv) bool
	s    func(*directEnv) string
}

type termKind uint8

const (
	tInt termKind = iota + 1
	tFloat
	tBool
	tString
)

// float is t's value as a float (an integer converted, as expr does when
// it meets a float).
func (t term) float() func(*directEnv) float64 {
	if t.kind == tFloat {
		return t.f
	}
	i := t.i
	return func(e *directEnv) float64 { return float64(i(e)) }
}

func (t term) numeric() bool { return t.kind == tInt || t.kind == tFloat }

// compileDirect compiles the checked expression n (expr's program's tree)
// over the aggregates aggs, or returns nil when it has a node it does not
// handle.
func compileDirect(n ast.Node, aggs []Aggregate) direct {
	t, ok := directTerm(n, aggs)
	if !ok || t.kind != tBool {
		return nil
	}
	return t.b
}

func directTerm(n ast.Node, aggs []Aggregate) (term, bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return directIdent(n.Value, aggs)
	case *ast.IntegerNode:
		v := int64(n.Value)
		return term{kind: tInt, i: func(*directEnv) int64 { return v }}, true
	case *ast.FloatNode:
		v := n.Value
		return term{kind: tFloat, f: func(*directEnv) float64 { return v }}, true
	case *ast.BoolNode:
		v := n.Value
		return term{kind: tBool, b: func(*directEnv) bool { return v }}, true
	case *ast.StringNode:
		v := n.Value
		return term{kind: tString, s: func(*directEnv) string { return v }}, true
	case *ast.ConstantNode:
		switch v := n.Value.(type) {
		case int:
			return directTerm(&ast.IntegerNode{Value: v}, aggs)
		case float64:
			return directTerm(&ast.FloatNode{Value: v}, aggs)
		case bool:
			return directTerm(&ast.BoolNode{Value: v}, aggs)
		case string:
			return directTerm(&ast.StringNode{Value: v}, aggs)
		}
	case *ast.UnaryNode:
		x, ok := directTerm(n.Node, aggs)
		if !ok {
			return term{}, false
		}
		return directUnary(n.Operator, x)
	case *ast.BinaryNode:
		l, ok := directTerm(n.Left, aggs)
		if !ok {
			return term{}, false
		}
		r, ok := directTerm(n.Right, aggs)
		if !ok {
			return term{}, false
		}
		return directBinary(n.Operator, l, r)
	}
	return term{}, false
}

func directIdent(name string, aggs []Aggregate) (term, bool) {
	for k, a := range aggs {
		if a.Name == name {
			return term{kind: tFloat, f: func(e *directEnv) float64 { return e.aggs[k] }}, true
		}
	}
	switch name {
	case "key":
		return term{kind: tString, s: func(e *directEnv) string { return e.key }}, true
	case "revision":
		return term{kind: tInt, i: func(e *directEnv) int64 { return e.revision }}, true
	case "timing":
		return term{kind: tString, s: func(e *directEnv) string { return e.timing }}, true
	case "final":
		return term{kind: tBool, b: func(e *directEnv) bool { return e.final }}, true
	}
	return term{}, false
}

func directUnary(op string, x term) (term, bool) {
	switch {
	case (op == "not" || op == "!") && x.kind == tBool:
		b := x.b
		return term{kind: tBool, b: func(e *directEnv) bool { return !b(e) }}, true
	case op == "+" && x.numeric():
		return x, true
	case op == "-" && x.kind == tInt:
		i := x.i
		return term{kind: tInt, i: func(e *directEnv) int64 { return -i(e) }}, true
	case op == "-" && x.kind == tFloat:
		f := x.f
		return term{kind: tFloat, f: func(e *directEnv) float64 { return -f(e) }}, true
	}
	return term{}, false
}

func directBinary(op string, l, r term) (term, bool) {
	switch {
	case l.kind == tBool && r.kind == tBool:
		lb, rb := l.b, r.b
		switch op {
		case "and", "&&":
			return term{kind: tBool, b: func(e *directEnv) bool { return lb(e) && rb(e) }}, true
		case "or", "||":
			return term{kind: tBool, b: func(e *directEnv) bool { return lb(e) || rb(e) }}, true
		}
		return directEqual(op, lb, rb)
	case l.kind == tString && r.kind == tString:
		return directEqual(op, l.s, r.s)
	case l.kind == tInt && r.kind == tInt:
		if f := arith(op, l.i, r.i); f != nil {
			return term{kind: tInt, i: f}, true
		}
		if op == "/" {
			return directFloat(op, l.float(), r.float())
		}
		li, ri := l.i, r.i
		return directCompare(op, func(e *directEnv) int { return cmp.Compare(li(e), ri(e)) })
	case l.numeric() && r.numeric():
		return directFloat(op, l.float(), r.float())
	}
	return term{}, false
}

// directEqual is "==" or "!=" on two values of one kind.
func directEqual[T comparable](op string, l, r func(*directEnv) T) (term, bool) {
	switch op {
	case "==":
		return term{kind: tBool, b: func(e *directEnv) bool { return l(e) == r(e) }}, true
	case "!=":
		return term{kind: tBool, b: func(e *directEnv) bool { return l(e) != r(e) }}, true
	}
	return term{}, false
}

// arith is "+", "-" or "*" on two numbers of one type (integers wrap, as
// Go's and expr's do), or nil for another operator.
func arith[T int64 | float64](op string, l, r func(*directEnv) T) func(*directEnv) T {
	switch op {
	case "+":
		return func(e *directEnv) T { return l(e) + r(e) }
	case "-":
		return func(e *directEnv) T { return l(e) - r(e) }
	case "*":
		return func(e *directEnv) T { return l(e) * r(e) }
	}
	return nil
}

// directFloat is a binary operator on two floats.
func directFloat(op string, lf, rf func(*directEnv) float64) (term, bool) {
	if f := arith(op, lf, rf); f != nil {
		return term{kind: tFloat, f: f}, true
	}
	if op == "/" {
		return term{kind: tFloat, f: func(e *directEnv) float64 { return lf(e) / rf(e) }}, true
	}
	return directCompare(op, func(e *directEnv) int { return cmpFloat(lf(e), rf(e)) })
}

// cmpNaN is cmpFloat's answer when either side is NaN: every comparison
// with it is false but "!=".
const cmpNaN = 2

// cmpFloat is cmp.Compare with Go's comparisons of NaN (cmp.Compare puts
// NaN before every number; Go, and expr, find it neither before, after nor
// equal).
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	return cmpNaN
}

// directCompare is a comparison operator over compare's answer.
func directCompare(op string, compare func(*directEnv) int) (term, bool) {
	var f func(c int) bool
	switch op {
	case "==":
		f = func(c int) bool { return c == 0 }
	case "!=":
		f = func(c int) bool { return c != 0 }
	case "<":
		f = func(c int) bool { return c == -1 }
	case "<=":
		f = func(c int) bool { return c == -1 || c == 0 }
	case ">":
		f = func(c int) bool { return c == 1 }
	case ">=":
		f = func(c int) bool { return c == 1 || c == 0 }
	default:
		return term{}, false
	}
	return term{kind: tBool, b: func(e *directEnv) bool { return f(compare(e)) }}, true
}
