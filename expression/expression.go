// Package expression is weir's language of expressions over an event's
// fields: the where of a job file, which keeps the events for which it
// holds, and its derived fields (fields: {name: expression}), which an
// event gains before its time, key, id and aggregates are read. Its syntax
// is expr-lang's, as a job file's having is: fields by name (payment.amount
// for a nested one, tags[0] for an element), numbers, strings, true, false
// and nil; == != < <= > >=; and or not (&& || !); + - * / %; ?? (the right
// side when the left is missing or null); a ? b : c; in [...]; contains,
// startsWith, endsWith, matches (a constant regular expression); s[i:j] (of
// a string's bytes); and the functions lower, upper, trim, len, abs, floor,
// ceil, round, int, float, string and number.
//
// An expression is compiled once, ahead, into functions over a JSON object
// that read numbers as float64 and strings in place: evaluating one
// allocates nothing in the steady state. It fails, at compile time, on what
// it cannot do (an unknown function, a field of an expression that is not
// a field), and, on an event, on what the event makes impossible (a field
// that is missing where it is needed, a number compared with a string, a
// division by zero): the event is then set aside with the expression and the
// reason, never silently kept or dropped.
//
// What belongs here is the language: its values, its compilation and its
// evaluation. Where an expression applies, and what becomes of an event it
// fails on, is its reader's (package job).
package expression

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/valyala/fastjson"
)

// Kind is the type of a value.
type Kind uint8

// The kinds of values.
const (
	// Null is JSON's null, and a missing field read optionally (a?.b, ??).
	Null Kind = iota
	Bool
	Number
	String
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "a bool"
	case Number:
		return "a number"
	case String:
		return "a string"
	}
	return "?"
}

// Value is the value of an expression: its kind, and the field that holds
// it. A String's bytes are valid until the program's next evaluation.
type Value struct {
	Kind Kind
	Bool bool
	Num  float64
	Str  []byte
}

// Program is a compiled expression. A Program evaluates one object at a
// time: a goroutine that evaluates one needs its own (Clone).
type Program struct {
	src    string
	root   node
	fields []string
	buf    []byte // strings the evaluation makes
}

// node is a compiled node of the expression.
type node func(p *Program, obj *fastjson.Value) (Value, error)

// Error is an expression that cannot be compiled, or that failed on an
// event: the expression, and why.
type Error struct {
	Expr string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// errMissing is the failure of a field that is not there.
type missingError struct{ field string }

func (e *missingError) Error() string { return "no field " + e.field }

// IsMissing reports whether err is the failure of an expression that read
// a field the record does not have.
func IsMissing(err error) bool {
	var miss *missingError
	return errors.As(err, &miss)
}

// Compile compiles the expression src.
func Compile(src string) (*Program, error) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, &Error{Expr: src, Msg: firstLine(err.Error())}
	}
	p := &Program{src: src}
	c := &compiler{p: p}
	root, err := c.compile(tree.Node)
	if err != nil {
		return nil, &Error{Expr: src, Msg: err.Error()}
	}
	p.root = root
	return p, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// String is the expression as written.
func (p *Program) String() string { return p.src }

// Fields are the top-level fields the expression reads, in order, each
// once.
func (p *Program) Fields() []string { return p.fields }

// Clone is a program of the same expression for another goroutine.
func (p *Program) Clone() *Program {
	c := *p
	c.buf = nil
	return &c
}

// Eval evaluates the expression on obj, a JSON object.
func (p *Program) Eval(obj *fastjson.Value) (Value, error) {
	p.buf = p.buf[:0]
	v, err := p.root(p, obj)
	if err != nil {
		return Value{}, err
	}
	return v, nil
}

// Holds evaluates a condition: true only for the bool true. Any other
// value is an error, saying what it is.
func (p *Program) Holds(obj *fastjson.Value) (bool, error) {
	v, err := p.Eval(obj)
	if err != nil {
		return false, err
	}
	if v.Kind != Bool {
		return false, fmt.Errorf("it is %s, not true or false", v.Kind)
	}
	return v.Bool, nil
}

// Set puts v into obj as its field name, made in arena (a JSON object's
// field, as the event had it).
func Set(obj *fastjson.Value, name string, v Value, arena *fastjson.Arena) {
	var jv *fastjson.Value
	switch v.Kind {
	case Null:
		jv = arena.NewNull()
	case Bool:
		if v.Bool {
			jv = arena.NewTrue()
		} else {
			jv = arena.NewFalse()
		}
	case Number:
		if v.Num == math.Trunc(v.Num) && math.Abs(v.Num) < 1<<53 {
			jv = arena.NewNumberInt(int(v.Num))
		} else {
			jv = arena.NewNumberFloat64(v.Num)
		}
	case String:
		jv = arena.NewStringBytes(v.Str)
	}
	obj.Set(name, jv)
}

// compiler compiles a tree.
type compiler struct {
	p *Program
}

func (c *compiler) field(name string) {
	for _, f := range c.p.fields {
		if f == name {
			return
		}
	}
	c.p.fields = append(c.p.fields, name)
}

func (c *compiler) compile(n ast.Node) (node, error) {
	switch n := n.(type) {
	case *ast.NilNode:
		return constant(Value{Kind: Null}), nil
	case *ast.BoolNode:
		return constant(Value{Kind: Bool, Bool: n.Value}), nil
	case *ast.IntegerNode:
		return constant(Value{Kind: Number, Num: float64(n.Value)}), nil
	case *ast.FloatNode:
		return constant(Value{Kind: Number, Num: n.Value}), nil
	case *ast.StringNode:
		return constant(Value{Kind: String, Str: []byte(n.Value)}), nil
	case *ast.IdentifierNode, *ast.MemberNode, *ast.ChainNode:
		path, optional, ok := fieldPath(n)
		if !ok {
			return nil, fmt.Errorf("only fields are read with . and [ ]: %s", n.String())
		}
		c.field(path[0].name)
		return fieldNode(path, optional), nil
	case *ast.UnaryNode:
		return c.unary(n)
	case *ast.BinaryNode:
		return c.binary(n)
	case *ast.ConditionalNode:
		cond, err := c.compile(n.Cond)
		if err != nil {
			return nil, err
		}
		a, err := c.compile(n.Exp1)
		if err != nil {
			return nil, err
		}
		b, err := c.compile(n.Exp2)
		if err != nil {
			return nil, err
		}
		return func(p *Program, obj *fastjson.Value) (Value, error) {
			v, err := cond(p, obj)
			if err != nil {
				return v, err
			}
			if v.Kind != Bool {
				return v, fmt.Errorf("the condition of ? : is %s, not true or false", v.Kind)
			}
			if v.Bool {
				return a(p, obj)
			}
			return b(p, obj)
		}, nil
	case *ast.SliceNode:
		return c.slice(n)
	case *ast.BuiltinNode:
		return c.call(n.Name, n.Arguments, n.String())
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok {
			return nil, fmt.Errorf("unknown function %s", n.Callee.String())
		}
		return c.call(id.Value, n.Arguments, n.String())
	}
	return nil, fmt.Errorf("%s is not something a where or a field can say", n.String())
}

func constant(v Value) node {
	return func(*Program, *fastjson.Value) (Value, error) { return v, nil }
}

// step is one step of a field's path: a name, or an element's index.
type step struct {
	name  string
	index int
	elem  bool
}

// fieldPath is the path of a field read, and whether it is read optionally
// (?.): a missing field is then null, not a failure.
func fieldPath(n ast.Node) ([]step, bool, bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return []step{{name: n.Value}}, false, true
	case *ast.ChainNode:
		path, _, ok := fieldPath(n.Node)
		return path, true, ok
	case *ast.MemberNode:
		path, opt, ok := fieldPath(n.Node)
		if !ok || n.Method {
			return nil, false, false
		}
		switch prop := n.Property.(type) {
		case *ast.StringNode:
			return append(path, step{name: prop.Value}), opt || n.Optional, true
		case *ast.IntegerNode:
			return append(path, step{index: prop.Value, elem: true}), opt || n.Optional, true
		}
	}
	return nil, false, false
}

func pathString(path []step) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case s.elem:
			fmt.Fprintf(&b, "[%d]", s.index)
		case i > 0:
			b.WriteString("." + s.name)
		default:
			b.WriteString(s.name)
		}
	}
	return b.String()
}

// fieldNode reads a field: missing, it fails (or is null, optionally).
func fieldNode(path []step, optional bool) node {
	name := pathString(path)
	return func(p *Program, obj *fastjson.Value) (Value, error) {
		v := obj
		for _, s := range path {
			if s.elem {
				if v.Type() != fastjson.TypeArray {
					v = nil
				} else {
					v = v.Get(strconv.Itoa(s.index))
				}
			} else {
				v = v.Get(s.name)
			}
			if v == nil {
				if optional {
					return Value{Kind: Null}, nil
				}
				return Value{}, &missingError{field: name}
			}
		}
		return jsonValue(v, name)
	}
}

// jsonValue is a JSON value as an expression's.
func jsonValue(v *fastjson.Value, name string) (Value, error) {
	switch v.Type() {
	case fastjson.TypeNull:
		return Value{Kind: Null}, nil
	case fastjson.TypeTrue:
		return Value{Kind: Bool, Bool: true}, nil
	case fastjson.TypeFalse:
		return Value{Kind: Bool}, nil
	case fastjson.TypeNumber:
		return Value{Kind: Number, Num: v.GetFloat64()}, nil
	case fastjson.TypeString:
		return Value{Kind: String, Str: v.GetStringBytes()}, nil
	}
	return Value{}, fmt.Errorf("%s is %s, which an expression does not read", name, v.Type())
}

func (c *compiler) unary(n *ast.UnaryNode) (node, error) {
	x, err := c.compile(n.Node)
	if err != nil {
		return nil, err
	}
	switch n.Operator {
	case "not", "!":
		return func(p *Program, obj *fastjson.Value) (Value, error) {
			v, err := x(p, obj)
			if err != nil {
				return v, err
			}
			if v.Kind != Bool {
				return v, fmt.Errorf("not of %s", v.Kind)
			}
			return Value{Kind: Bool, Bool: !v.Bool}, nil
		}, nil
	case "-", "+":
		neg := n.Operator == "-"
		return func(p *Program, obj *fastjson.Value) (Value, error) {
			v, err := x(p, obj)
			if err != nil {
				return v, err
			}
			if v.Kind != Number {
				return v, fmt.Errorf("%s of %s", n.Operator, v.Kind)
			}
			if neg {
				v.Num = -v.Num
			}
			return v, nil
		}, nil
	}
	return nil, fmt.Errorf("unknown operator %s", n.Operator)
}

func (c *compiler) binary(n *ast.BinaryNode) (node, error) {
	l, err := c.compile(n.Left)
	if err != nil {
		return nil, err
	}
	if n.Operator == "matches" {
		s, ok := n.Right.(*ast.StringNode)
		if !ok {
			return nil, errors.New("matches takes a constant regular expression")
		}
		re, err := regexp.Compile(s.Value)
		if err != nil {
			return nil, fmt.Errorf("matches: %v", err)
		}
		return func(p *Program, obj *fastjson.Value) (Value, error) {
			v, err := l(p, obj)
			if err != nil {
				return v, err
			}
			if v.Kind != String {
				return v, fmt.Errorf("matches of %s", v.Kind)
			}
			return Value{Kind: Bool, Bool: re.Match(v.Str)}, nil
		}, nil
	}
	if n.Operator == "in" {
		arr, ok := n.Right.(*ast.ArrayNode)
		if !ok {
			return nil, errors.New("in takes a list of constants: x in [1, 2, 3]")
		}
		var set []node
		for _, e := range arr.Nodes {
			en, err := c.compile(e)
			if err != nil {
				return nil, err
			}
			set = append(set, en)
		}
		return func(p *Program, obj *fastjson.Value) (Value, error) {
			v, err := l(p, obj)
			if err != nil {
				return v, err
			}
			for _, e := range set {
				w, err := e(p, obj)
				if err != nil {
					return w, err
				}
				if equal(v, w) {
					return Value{Kind: Bool, Bool: true}, nil
				}
			}
			return Value{Kind: Bool}, nil
		}, nil
	}
	r, err := c.compile(n.Right)
	if err != nil {
		return nil, err
	}
	op := n.Operator
	switch op {
	case "and", "&&", "or", "||":
		and := op == "and" || op == "&&"
		return func(p *Program, obj *fastjson.Value) (Value, error) {
			a, err := l(p, obj)
			if err != nil {
				return a, err
			}
			if a.Kind != Bool {
				return a, fmt.Errorf("%s of %s", op, a.Kind)
			}
			if a.Bool != and {
				return a, nil // false and ..., true or ...
			}
			b, err := r(p, obj)
			if err != nil {
				return b, err
			}
			if b.Kind != Bool {
				return b, fmt.Errorf("%s of %s", op, b.Kind)
			}
			return b, nil
		}, nil
	case "??":
		return func(p *Program, obj *fastjson.Value) (Value, error) {
			a, err := l(p, obj)
			var miss *missingError
			if errors.As(err, &miss) || err == nil && a.Kind == Null {
				return r(p, obj)
			}
			return a, err
		}, nil
	}
	return func(p *Program, obj *fastjson.Value) (Value, error) {
		a, err := l(p, obj)
		if err != nil {
			return a, err
		}
		b, err := r(p, obj)
		if err != nil {
			return b, err
		}
		return apply(p, op, a, b)
	}, nil
}

// equal says whether two values are the same: of one kind and one value.
func equal(a, b Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Null:
		return true
	case Bool:
		return a.Bool == b.Bool
	case Number:
		return a.Num == b.Num
	}
	return bytes.Equal(a.Str, b.Str)
}

// apply applies a binary operator to two values.
func apply(p *Program, op string, a, b Value) (Value, error) {
	switch op {
	case "==":
		return Value{Kind: Bool, Bool: equal(a, b)}, nil
	case "!=":
		return Value{Kind: Bool, Bool: !equal(a, b)}, nil
	case "<", "<=", ">", ">=":
		var c int
		switch {
		case a.Kind == Number && b.Kind == Number:
			switch {
			case a.Num < b.Num:
				c = -1
			case a.Num > b.Num:
				c = 1
			case a.Num != b.Num: // NaN
				return Value{Kind: Bool}, nil
			}
		case a.Kind == String && b.Kind == String:
			c = bytes.Compare(a.Str, b.Str)
		default:
			return Value{}, fmt.Errorf("%s %s %s cannot be compared", a.Kind, op, b.Kind)
		}
		return Value{Kind: Bool, Bool: op == "<" && c < 0 || op == "<=" && c <= 0 || op == ">" && c > 0 || op == ">=" && c >= 0}, nil
	case "+":
		if a.Kind == String && b.Kind == String {
			start := len(p.buf)
			p.buf = append(append(p.buf, a.Str...), b.Str...)
			return Value{Kind: String, Str: p.buf[start:len(p.buf):len(p.buf)]}, nil
		}
		fallthrough
	case "-", "*", "/", "%", "**", "^":
		if a.Kind != Number || b.Kind != Number {
			return Value{}, fmt.Errorf("%s %s %s", a.Kind, op, b.Kind)
		}
		x, y := a.Num, b.Num
		var z float64
		switch op {
		case "+":
			z = x + y
		case "-":
			z = x - y
		case "*":
			z = x * y
		case "/":
			if y == 0 {
				return Value{}, errors.New("division by zero")
			}
			z = x / y
		case "%":
			if y == 0 || x != math.Trunc(x) || y != math.Trunc(y) {
				return Value{}, errors.New("% of numbers that are not whole, or by zero")
			}
			z = math.Mod(x, y)
		default:
			z = math.Pow(x, y)
		}
		return Value{Kind: Number, Num: z}, nil
	case "contains", "startsWith", "endsWith":
		if a.Kind != String || b.Kind != String {
			return Value{}, fmt.Errorf("%s of %s and %s", op, a.Kind, b.Kind)
		}
		var ok bool
		switch op {
		case "contains":
			ok = bytes.Contains(a.Str, b.Str)
		case "startsWith":
			ok = bytes.HasPrefix(a.Str, b.Str)
		default:
			ok = bytes.HasSuffix(a.Str, b.Str)
		}
		return Value{Kind: Bool, Bool: ok}, nil
	}
	return Value{}, fmt.Errorf("unknown operator %s", op)
}

// slice compiles s[i:j], of a string's bytes.
func (c *compiler) slice(n *ast.SliceNode) (node, error) {
	s, err := c.compile(n.Node)
	if err != nil {
		return nil, err
	}
	var from, to node
	if n.From != nil {
		if from, err = c.compile(n.From); err != nil {
			return nil, err
		}
	}
	if n.To != nil {
		if to, err = c.compile(n.To); err != nil {
			return nil, err
		}
	}
	bound := func(p *Program, obj *fastjson.Value, b node, def int) (int, error) {
		if b == nil {
			return def, nil
		}
		v, err := b(p, obj)
		if err != nil {
			return 0, err
		}
		if v.Kind != Number || v.Num != math.Trunc(v.Num) {
			return 0, fmt.Errorf("a slice's bound is %s, not a whole number", v.Kind)
		}
		return int(v.Num), nil
	}
	return func(p *Program, obj *fastjson.Value) (Value, error) {
		v, err := s(p, obj)
		if err != nil {
			return v, err
		}
		if v.Kind != String {
			return v, fmt.Errorf("a slice of %s", v.Kind)
		}
		i, err := bound(p, obj, from, 0)
		if err != nil {
			return v, err
		}
		j, err := bound(p, obj, to, len(v.Str))
		if err != nil {
			return v, err
		}
		i, j = max(0, min(i, len(v.Str))), max(0, min(j, len(v.Str)))
		if i > j {
			i = j
		}
		return Value{Kind: String, Str: v.Str[i:j]}, nil
	}, nil
}

// call compiles a function's call.
func (c *compiler) call(name string, args []ast.Node, text string) (node, error) {
	want := map[string]int{"lower": 1, "upper": 1, "trim": 1, "len": 1, "abs": 1, "floor": 1, "ceil": 1, "round": 1, "int": 1, "float": 1, "string": 1, "number": 1}
	n, ok := want[name]
	if !ok {
		return nil, fmt.Errorf("unknown function %s (lower, upper, trim, len, abs, floor, ceil, round, int, float, string and number are known)", name)
	}
	if len(args) != n {
		return nil, fmt.Errorf("%s takes %d argument, in %s", name, n, text)
	}
	x, err := c.compile(args[0])
	if err != nil {
		return nil, err
	}
	return func(p *Program, obj *fastjson.Value) (Value, error) {
		v, err := x(p, obj)
		if err != nil {
			return v, err
		}
		return builtin(p, name, v)
	}, nil
}

// builtin applies a function to a value.
func builtin(p *Program, name string, v Value) (Value, error) {
	switch name {
	case "lower", "upper", "trim":
		if v.Kind != String {
			return v, fmt.Errorf("%s of %s", name, v.Kind)
		}
		start := len(p.buf)
		switch name {
		case "lower":
			p.buf = appendMapped(p.buf, v.Str, 'A', 'Z', 'a'-'A')
		case "upper":
			p.buf = appendMapped(p.buf, v.Str, 'a', 'z', 'A'-'a')
		default:
			return Value{Kind: String, Str: bytes.TrimSpace(v.Str)}, nil
		}
		return Value{Kind: String, Str: p.buf[start:len(p.buf):len(p.buf)]}, nil
	case "len":
		if v.Kind != String {
			return v, fmt.Errorf("len of %s", v.Kind)
		}
		return Value{Kind: Number, Num: float64(len(v.Str))}, nil
	case "abs", "floor", "ceil", "round", "int", "float":
		if v.Kind != Number {
			return v, fmt.Errorf("%s of %s", name, v.Kind)
		}
		switch name {
		case "abs":
			v.Num = math.Abs(v.Num)
		case "floor":
			v.Num = math.Floor(v.Num)
		case "ceil":
			v.Num = math.Ceil(v.Num)
		case "round":
			v.Num = math.Round(v.Num)
		case "int":
			v.Num = math.Trunc(v.Num)
		}
		return v, nil
	case "string":
		start := len(p.buf)
		switch v.Kind {
		case String:
			return v, nil
		case Number:
			p.buf = strconv.AppendFloat(p.buf, v.Num, 'g', -1, 64)
		case Bool:
			p.buf = strconv.AppendBool(p.buf, v.Bool)
		default:
			p.buf = append(p.buf, "null"...)
		}
		return Value{Kind: String, Str: p.buf[start:len(p.buf):len(p.buf)]}, nil
	case "number":
		switch v.Kind {
		case Number:
			return v, nil
		case String:
			f, err := strconv.ParseFloat(string(bytes.TrimSpace(v.Str)), 64)
			if err != nil {
				return Value{}, fmt.Errorf("number of %q: not a number", v.Str)
			}
			return Value{Kind: Number, Num: f}, nil
		}
		return v, fmt.Errorf("number of %s", v.Kind)
	}
	return v, fmt.Errorf("unknown function %s", name)
}

// appendMapped appends s with the bytes from lo to hi moved by d (ASCII
// case).
func appendMapped(b, s []byte, lo, hi byte, d int) []byte {
	for _, c := range s {
		if c >= lo && c <= hi {
			c = byte(int(c) + d)
		}
		b = append(b, c)
	}
	return b
}
