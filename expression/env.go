package expression

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"unsafe"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
)

// Env is what an expression reads when it is not over a JSON object: names
// that its reader declares, each of a kind, whose values it sets in a Vars
// before each evaluation (a having reads a pane's aggregates, key,
// revision, timing and final this way).
//
// An expression over an Env is checked when it is compiled, as expr-lang
// checks one over an environment of Go values: an unknown name, or an
// operator or function given a kind it does not take (a string compared
// with a number, a remainder of a Number), is refused then, with the place
// in the expression, not met on a value. Its numbers follow expr-lang's
// rules, not a JSON object's: an integer constant, an Int name, and the
// sums, differences, products, remainders and len of Ints are Ints (Go's
// int64, which wrap); an Int meets a Number as a float64; a division's
// result is a float64, and one by zero is an infinity or NaN, as Go's
// (NaN is a value a Number may have: it compares unequal to everything);
// int and float also read a string's number, len counts a string's
// characters, and a slice's negative bound counts from the end. Everything
// else (the operators, the functions, their errors) is a JSON object's
// expression's: lower and upper change ASCII letters only, where expr-lang
// changes every letter, and expr-lang's functions the language has not
// (max, min, ...) are unknown.
//
// An Env is declared once, before its expressions are compiled, and is not
// changed after: expressions compiled over it, and Vars made by it, share
// it.
type Env struct {
	names []string
	kinds []Kind
}

// Var is a name declared in an Env: where its value is in a Vars.
type Var struct {
	i    int
	kind Kind
}

// Declare declares name, of kind k (Number, Int, String or Bool), and
// returns where its value is set. It panics on another kind, or a name
// declared twice: both are mistakes of the program that declares them.
func (e *Env) Declare(name string, k Kind) Var {
	if k != Number && k != Int && k != String && k != Bool {
		panic(fmt.Sprintf("expression: %s declared %s: an Env's names are numbers, integers, strings or bools", name, k))
	}
	for _, n := range e.names {
		if n == name {
			panic("expression: " + name + " declared twice")
		}
	}
	e.names, e.kinds = append(e.names, name), append(e.kinds, k)
	return Var{i: len(e.names) - 1, kind: k}
}

// Vars are the values of an Env's names for an evaluation: set each (a name
// not set is its kind's zero, or the value set last), then evaluate.
// Setting one allocates nothing.
type Vars struct {
	vals []Value
}

// Vars are values for e's names, each its kind's zero.
func (e *Env) Vars() *Vars {
	v := &Vars{vals: make([]Value, len(e.kinds))}
	for i, k := range e.kinds {
		v.vals[i].Kind = k
	}
	return v
}

// SetNumber sets x, a Number, to f (NaN for none).
func (v *Vars) SetNumber(x Var, f float64) {
	x.must(Number)
	v.vals[x.i] = Value{Kind: Number, Num: f}
}

// SetInt sets x, an Int, to i.
func (v *Vars) SetInt(x Var, i int64) {
	x.must(Int)
	v.vals[x.i] = Value{Kind: Int, Int: i}
}

// SetString sets x, a String, to s, which is read in place: it is not
// copied.
func (v *Vars) SetString(x Var, s string) {
	x.must(String)
	v.vals[x.i] = Value{Kind: String, Str: unsafe.Slice(unsafe.StringData(s), len(s))}
}

// SetBool sets x, a Bool, to b.
func (v *Vars) SetBool(x Var, b bool) {
	x.must(Bool)
	v.vals[x.i] = Value{Kind: Bool, Bool: b}
}

func (x Var) must(k Kind) {
	if x.kind != k {
		panic("expression: a name of " + x.kind.String() + " set to " + k.String())
	}
}

// EnvProgram is an expression compiled over an Env. It evaluates one Vars
// at a time: a goroutine that evaluates one needs its own (Clone).
type EnvProgram struct {
	src   string
	root  node
	names []string
	m     state
}

// Compile compiles the expression src over e.
func (e *Env) Compile(src string) (*EnvProgram, error) {
	return e.compile(src, false)
}

// CompileCondition compiles the expression src over e, which must be a
// condition: an expression whose value is not a bool (orders + 1) is
// refused.
func (e *Env) CompileCondition(src string) (*EnvProgram, error) {
	return e.compile(src, true)
}

func (e *Env) compile(src string, condition bool) (*EnvProgram, error) {
	// The checker reads the names' kinds from a struct of Go values, a
	// field for each name, as expr-lang's environments are.
	fields := make([]reflect.StructField, len(e.names))
	for i, name := range e.names {
		t := map[Kind]reflect.Type{Number: reflect.TypeFor[float64](), Int: reflect.TypeFor[int](), String: reflect.TypeFor[string](), Bool: reflect.TypeFor[bool]()}[e.kinds[i]]
		fields[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: t, Tag: reflect.StructTag(`expr:"` + name + `"`)}
	}
	config := conf.New(reflect.New(reflect.StructOf(fields)).Interface())
	if condition {
		config.Expect, config.ExpectAny = reflect.Bool, true
	}
	tree, err := checker.ParseCheck(src, config)
	if err != nil {
		return nil, &Error{Expr: src, Msg: err.Error()}
	}
	// What expr-lang refuses when it folds constants (1 % 0) is refused
	// here too; the tree compiled is the checked one, unfolded.
	if folded, err := checker.ParseCheck(src, config); err == nil {
		if err := optimizer.Optimize(&folded.Node, config); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				err = fe.Bind(folded.Source)
			}
			return nil, &Error{Expr: src, Msg: err.Error()}
		}
	}
	p := &EnvProgram{src: src, m: state{env: true}}
	side := *config
	side.Expect, side.ExpectAny = reflect.Invalid, false
	c := &compiler{fields: &p.names, env: e, conf: &side}
	root, err := c.compile(tree.Node)
	if err != nil {
		return nil, &Error{Expr: src, Msg: err.Error()}
	}
	p.root = root
	return p, nil
}

// ident compiles the read of a name.
func (c *compiler) ident(n ast.Node) (node, error) {
	if id, ok := n.(*ast.IdentifierNode); ok {
		for i, name := range c.env.names {
			if name == id.Value {
				c.field(name)
				return func(m *state) (Value, error) { return m.vars[i], nil }, nil
			}
		}
	}
	return nil, fmt.Errorf("only names are read, not %s", n.String())
}

// String is the expression as written.
func (p *EnvProgram) String() string { return p.src }

// Names are the names the expression reads, in order, each once.
func (p *EnvProgram) Names() []string { return p.names }

// Clone is a program of the same expression for another goroutine.
func (p *EnvProgram) Clone() *EnvProgram {
	c := *p
	c.m = state{env: true}
	return &c
}

// Eval evaluates the expression on v, values of the Env it was compiled
// over.
func (p *EnvProgram) Eval(v *Vars) (Value, error) {
	p.m.buf, p.m.vars = p.m.buf[:0], v.vals
	r, err := p.root(&p.m)
	p.m.vars = nil
	if err != nil {
		return Value{}, err
	}
	return r, nil
}

// Holds evaluates a condition: true only for the bool true. Any other
// value is an error, saying what it is.
func (p *EnvProgram) Holds(v *Vars) (bool, error) {
	return holds(p.Eval(v))
}
