// Package expression is weir's expression language, compiled once and
// evaluated without allocating: the where of a job file, which keeps the
// events for which it holds, its derived fields (fields: {name:
// expression}), which an event gains before its time, key, id and
// aggregates are read, and its having, which keeps the panes for which it
// holds. Its syntax is expr-lang's: names (for a JSON object, fields by
// name: payment.amount for a nested one, tags[0] for an element), numbers,
// strings, true, false and nil; == != < <= > >=; and or not (&& || !); + -
// * / % **; ?? (the right side when the left is missing or null); a ? b :
// c; in [...]; contains, startsWith, endsWith, matches (a constant regular
// expression); s[i:j] (of a string's bytes); and the functions lower,
// upper, trim, len, abs, floor, ceil, round, int, float, string, number and
// millis (a time, RFC 3339 or epoch milliseconds, as epoch milliseconds).
//
// An expression is compiled ahead into functions over what it reads: a
// JSON object (Compile: an event's fields, numbers read as float64 and
// strings in place), or an Env, names its reader declares with their kinds
// and sets for each evaluation in a Vars (Env.Compile: a pane's aggregates,
// key, revision, timing and final). One compiler serves both: only the
// reading of a name, and the rules of numbers (see Env), differ. Evaluating
// one allocates nothing in the steady state. Over a JSON object, an
// expression fails, at compile time, on what it cannot do (an unknown
// function, a field of an expression that is not a field), and, on an
// event, on what the event makes impossible (a field that is missing where
// it is needed, a number compared with a string, a division by zero): the
// event is then set aside with the expression and the reason, never
// silently kept or dropped. Over an Env, whose kinds are known ahead, an
// expression is checked when it is compiled, and fails on values only in
// what they make impossible (a remainder by zero, int of a string that is
// no number).
//
// What belongs here is the language: its values, its compilation and its
// evaluation, over any environment. Where an expression applies, what it
// reads (which names an Env declares, and their values), and what becomes
// of an event or a pane it fails on, is its reader's (package job).
package expression

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/valyala/fastjson"
	"github.com/weirstream/weir/mtime"
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
	// Int is a whole number of an Env (an int64, in Value.Int): a name
	// declared an Int, and an integer constant of an expression compiled
	// over an Env. Two Ints add, subtract, multiply, take a remainder and
	// negate as Go's int64s do, wrapping; an Int meets a Number, and
	// divides, as a float64. A JSON object's numbers are all Numbers.
	Int
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
	case Int:
		return "an integer"
	}
	return "?"
}

// Value is the value of an expression: its kind, and the field that holds
// it. A String's bytes are valid until the program's next evaluation, and
// are not to be modified.
type Value struct {
	Kind Kind
	Bool bool
	Num  float64
	Str  []byte
	Int  int64
}

// float is a number's value as a float64 (an Int converted).
func (v Value) float() float64 {
	if v.Kind == Int {
		return float64(v.Int)
	}
	return v.Num
}

// numeric says whether v is a Number or an Int.
func (v Value) numeric() bool { return v.Kind == Number || v.Kind == Int }

// Program is a compiled expression over a JSON object. A Program evaluates
// one object at a time: a goroutine that evaluates one needs its own
// (Clone).
type Program struct {
	src    string
	root   node
	fields []string
	m      state
}

// state is what the nodes of an expression read while it is evaluated:
// the JSON object or the Env's values, and the strings the evaluation makes.
type state struct {
	obj  *fastjson.Value
	vars []Value
	buf  []byte
	env  bool // over an Env: its numbers' rules are expr's (see Env)
}

// node is a compiled node of the expression.
type node func(m *state) (Value, error)

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
	c := &compiler{fields: &p.fields}
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
	c.m = state{}
	return &c
}

// Eval evaluates the expression on obj, a JSON object.
func (p *Program) Eval(obj *fastjson.Value) (Value, error) {
	p.m.buf, p.m.obj = p.m.buf[:0], obj
	v, err := p.root(&p.m)
	p.m.obj = nil
	if err != nil {
		return Value{}, err
	}
	return v, nil
}

// Holds evaluates a condition: true only for the bool true. Any other
// value is an error, saying what it is.
func (p *Program) Holds(obj *fastjson.Value) (bool, error) {
	return holds(p.Eval(obj))
}

func holds(v Value, err error) (bool, error) {
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
	case Int:
		jv = arena.NewNumberString(strconv.FormatInt(v.Int, 10))
	}
	obj.Set(name, jv)
}

// compiler compiles a tree.
type compiler struct {
	fields *[]string // over a JSON object: the fields read
	env    *Env      // over an Env
	// conf is an Env's checker configuration: with it, a side of and or
	// or that expr-lang folds to the value that decides them decides
	// them (logic).
	conf *conf.Config
}

func (c *compiler) field(name string) {
	for _, f := range *c.fields {
		if f == name {
			return
		}
	}
	*c.fields = append(*c.fields, name)
}

func (c *compiler) compile(n ast.Node) (node, error) {
	switch n := n.(type) {
	case *ast.NilNode:
		return constant(Value{Kind: Null}), nil
	case *ast.BoolNode:
		return constant(Value{Kind: Bool, Bool: n.Value}), nil
	case *ast.IntegerNode:
		if c.env != nil {
			return constant(Value{Kind: Int, Int: int64(n.Value)}), nil
		}
		return constant(Value{Kind: Number, Num: float64(n.Value)}), nil
	case *ast.FloatNode:
		return constant(Value{Kind: Number, Num: n.Value}), nil
	case *ast.StringNode:
		return constant(Value{Kind: String, Str: []byte(n.Value)}), nil
	case *ast.IdentifierNode, *ast.MemberNode, *ast.ChainNode:
		if c.env != nil {
			return c.ident(n)
		}
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
		return func(m *state) (Value, error) {
			v, err := cond(m)
			if err != nil {
				return v, err
			}
			if v.Kind != Bool {
				return v, fmt.Errorf("the condition of ? : is %s, not true or false", v.Kind)
			}
			if v.Bool {
				return a(m)
			}
			return b(m)
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

// folds reports whether expr-lang's optimizer folds n to a bool, and
// which: only over an Env, whose checker configuration it needs. n is
// parsed again from its text, so that the tree compiled is not changed.
func (c *compiler) folds(n ast.Node) (value, ok bool) {
	if c.conf == nil {
		return false, false
	}
	t, err := checker.ParseCheck(n.String(), c.conf)
	if err != nil {
		return false, false
	}
	if err := optimizer.Optimize(&t.Node, c.conf); err != nil {
		return false, false
	}
	b, ok := t.Node.(*ast.BoolNode)
	if !ok {
		return false, false
	}
	return b.Value, true
}

func constant(v Value) node {
	return func(*state) (Value, error) { return v, nil }
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
	return func(m *state) (Value, error) {
		v := m.obj
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
		return func(m *state) (Value, error) {
			v, err := x(m)
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
		return func(m *state) (Value, error) {
			v, err := x(m)
			if err != nil {
				return v, err
			}
			if !v.numeric() {
				return v, fmt.Errorf("%s of %s", n.Operator, v.Kind)
			}
			switch {
			case neg && v.Kind == Int:
				v.Int = -v.Int
			case neg:
				v.Num = -v.Num
			}
			return v, nil
		}, nil
	}
	return nil, fmt.Errorf("unknown operator %s", n.Operator)
}

func (c *compiler) binary(n *ast.BinaryNode) (node, error) {
	switch n.Operator {
	case "and", "&&", "or", "||":
		return c.logic(n)
	}
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
		return func(m *state) (Value, error) {
			v, err := l(m)
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
		return func(m *state) (Value, error) {
			v, err := l(m)
			if err != nil {
				return v, err
			}
			for _, e := range set {
				w, err := e(m)
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
	case "??":
		return func(m *state) (Value, error) {
			a, err := l(m)
			var miss *missingError
			if errors.As(err, &miss) || err == nil && a.Kind == Null {
				return r(m)
			}
			return a, err
		}, nil
	}
	// A constant right side (ms > 100, timing == "LATE") is read as a
	// value, not called.
	var rv Value
	if k, ok := c.literal(n.Right); ok {
		rv, r = k, nil
	}
	switch op {
	case "==", "!=":
		ne := op == "!="
		return func(m *state) (Value, error) {
			a, b, err := operands(m, l, r, rv)
			if err != nil {
				return Value{}, err
			}
			return Value{Kind: Bool, Bool: equal(a, b) != ne}, nil
		}, nil
	case "<", "<=", ">", ">=":
		lt, eq, gt := op[0] == '<', len(op) == 2, op[0] == '>'
		return func(m *state) (Value, error) {
			a, b, err := operands(m, l, r, rv)
			if err != nil {
				return Value{}, err
			}
			c, err := order(op, a, b)
			if err != nil {
				return Value{}, err
			}
			return Value{Kind: Bool, Bool: c == -1 && lt || c == 0 && eq || c == 1 && gt}, nil
		}, nil
	}
	return func(m *state) (Value, error) {
		a, b, err := operands(m, l, r, rv)
		if err != nil {
			return Value{}, err
		}
		return apply(m, op, a, b)
	}, nil
}

// literal is the value of a constant node.
func (c *compiler) literal(n ast.Node) (Value, bool) {
	switch n.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode:
		k, err := c.compile(n)
		if err != nil {
			return Value{}, false
		}
		v, err := k(nil)
		return v, err == nil
	}
	return Value{}, false
}

// operands evaluates a binary operator's sides, left first: r, or rv when
// r is nil.
func operands(m *state, l, r node, rv Value) (a, b Value, err error) {
	if a, err = l(m); err != nil {
		return a, b, err
	}
	if r == nil {
		return a, rv, nil
	}
	b, err = r(m)
	return a, b, err
}

// unordered is order's answer for NaN, which is neither before, after nor
// equal to a number.
const unordered = 2

// order compares two numbers or two strings: -1, 0, 1, or unordered.
func order(op string, a, b Value) (int, error) {
	switch {
	case a.Kind == Int && b.Kind == Int:
		return cmp.Compare(a.Int, b.Int), nil
	case a.numeric() && b.numeric():
		x, y := a.float(), b.float()
		switch {
		case x < y:
			return -1, nil
		case x > y:
			return 1, nil
		case x == y:
			return 0, nil
		}
		return unordered, nil
	case a.Kind == String && b.Kind == String:
		return bytes.Compare(a.Str, b.Str), nil
	}
	return 0, fmt.Errorf("%s %s %s cannot be compared", a.Kind, op, b.Kind)
}

// logic compiles a and b, or a or b, and a chain of one of them (a and b
// and c ...) as one node, which evaluates its sides from the left until one
// decides (false and ..., true or ...).
func (c *compiler) logic(n *ast.BinaryNode) (node, error) {
	op := n.Operator
	and := op == "and" || op == "&&"
	var sides []ast.Node
	x := ast.Node(n)
	for {
		b, ok := x.(*ast.BinaryNode)
		if !ok || b.Operator != op {
			break
		}
		sides, x = append(sides, b.Right), b.Left
	}
	sides = append(sides, x)
	slices.Reverse(sides)
	// As expr-lang folds constants: a side that folds to the value that
	// decides the chain (false and, true or) decides it, whatever the
	// other sides would give, an error included.
	for _, side := range sides {
		if b, ok := c.folds(side); ok && b != and {
			return constant(Value{Kind: Bool, Bool: b}), nil
		}
	}
	nodes := make([]node, len(sides))
	for i, side := range sides {
		var err error
		if nodes[i], err = c.compile(side); err != nil {
			return nil, err
		}
	}
	return func(m *state) (Value, error) {
		var v Value
		for _, side := range nodes {
			var err error
			if v, err = side(m); err != nil {
				return v, err
			}
			if v.Kind != Bool {
				return v, fmt.Errorf("%s of %s", op, v.Kind)
			}
			if v.Bool != and {
				return v, nil
			}
		}
		return v, nil
	}, nil
}

// equal says whether two values are the same: of one kind and one value.
func equal(a, b Value) bool {
	if a.Kind != b.Kind || a.Kind == Int {
		if a.numeric() && b.numeric() {
			if a.Kind == Int && b.Kind == Int {
				return a.Int == b.Int
			}
			return a.float() == b.float()
		}
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

// apply applies a binary operator other than a comparison to two values.
func apply(m *state, op string, a, b Value) (Value, error) {
	switch op {
	case "+":
		if a.Kind == String && b.Kind == String {
			start := len(m.buf)
			m.buf = append(append(m.buf, a.Str...), b.Str...)
			return Value{Kind: String, Str: m.buf[start:len(m.buf):len(m.buf)]}, nil
		}
		fallthrough
	case "-", "*", "/", "%", "**", "^":
		if !a.numeric() || !b.numeric() {
			return Value{}, fmt.Errorf("%s %s %s", a.Kind, op, b.Kind)
		}
		if a.Kind == Int && b.Kind == Int {
			if v, ok := intArith(op, a.Int, b.Int); ok {
				return v, nil
			}
		}
		x, y := a.float(), b.float()
		var z float64
		switch op {
		case "+":
			z = x + y
		case "-":
			z = x - y
		case "*":
			z = x * y
		case "/":
			if y == 0 && !m.env {
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

// intArith is a binary operator on two Ints that gives an Int, as Go's
// int64 does (wrapping): + - * and %, which fails by zero. ok is false for
// another operator.
func intArith(op string, x, y int64) (v Value, ok bool) {
	v.Kind = Int
	switch op {
	case "+":
		v.Int = x + y
	case "-":
		v.Int = x - y
	case "*":
		v.Int = x * y
	case "%":
		if y == 0 {
			return Value{}, false
		}
		v.Int = x % y
	default:
		return Value{}, false
	}
	return v, true
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
	bound := func(m *state, b node, def int) (int, error) {
		if b == nil {
			return def, nil
		}
		v, err := b(m)
		if err != nil {
			return 0, err
		}
		if v.Kind == Int {
			return int(v.Int), nil
		}
		if v.Kind != Number || v.Num != math.Trunc(v.Num) {
			return 0, fmt.Errorf("a slice's bound is %s, not a whole number", v.Kind)
		}
		return int(v.Num), nil
	}
	return func(m *state) (Value, error) {
		v, err := s(m)
		if err != nil {
			return v, err
		}
		if v.Kind != String {
			return v, fmt.Errorf("a slice of %s", v.Kind)
		}
		i, err := bound(m, from, 0)
		if err != nil {
			return v, err
		}
		j, err := bound(m, to, len(v.Str))
		if err != nil {
			return v, err
		}
		if m.env { // as expr's: a negative bound counts from the end
			if i < 0 {
				i += len(v.Str)
			}
			if j < 0 {
				j += len(v.Str)
			}
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
	want := map[string]int{"lower": 1, "upper": 1, "trim": 1, "len": 1, "abs": 1, "floor": 1, "ceil": 1, "round": 1, "int": 1, "float": 1, "string": 1, "number": 1, "millis": 1}
	n, ok := want[name]
	if !ok {
		return nil, fmt.Errorf("unknown function %s (lower, upper, trim, len, abs, floor, ceil, round, int, float, string, number and millis are known)", name)
	}
	if len(args) != n {
		return nil, fmt.Errorf("%s takes %d argument, in %s", name, n, text)
	}
	x, err := c.compile(args[0])
	if err != nil {
		return nil, err
	}
	return func(m *state) (Value, error) {
		v, err := x(m)
		if err != nil {
			return v, err
		}
		return builtin(m, name, v)
	}, nil
}

// builtin applies a function to a value.
func builtin(m *state, name string, v Value) (Value, error) {
	switch name {
	case "lower", "upper", "trim":
		if v.Kind != String {
			return v, fmt.Errorf("%s of %s", name, v.Kind)
		}
		start := len(m.buf)
		switch name {
		case "lower":
			m.buf = appendMapped(m.buf, v.Str, 'A', 'Z', 'a'-'A')
		case "upper":
			m.buf = appendMapped(m.buf, v.Str, 'a', 'z', 'A'-'a')
		default:
			return Value{Kind: String, Str: bytes.TrimSpace(v.Str)}, nil
		}
		return Value{Kind: String, Str: m.buf[start:len(m.buf):len(m.buf)]}, nil
	case "len":
		if v.Kind != String {
			return v, fmt.Errorf("len of %s", v.Kind)
		}
		if m.env { // as expr's: an integer, of characters
			return Value{Kind: Int, Int: int64(utf8.RuneCount(v.Str))}, nil
		}
		return Value{Kind: Number, Num: float64(len(v.Str))}, nil
	case "abs", "floor", "ceil", "round", "int", "float":
		if m.env {
			return envNumber(name, v)
		}
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
		start := len(m.buf)
		switch v.Kind {
		case String:
			return v, nil
		case Number:
			m.buf = strconv.AppendFloat(m.buf, v.Num, 'g', -1, 64)
		case Int:
			m.buf = strconv.AppendInt(m.buf, v.Int, 10)
		case Bool:
			m.buf = strconv.AppendBool(m.buf, v.Bool)
		default:
			m.buf = append(m.buf, "null"...)
		}
		return Value{Kind: String, Str: m.buf[start:len(m.buf):len(m.buf)]}, nil
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
	case "millis":
		// A time as weir reads a time field: an RFC 3339 text, or epoch
		// milliseconds (a number, or its text).
		var t mtime.Time
		switch v.Kind {
		case Number:
			t = mtime.Time(v.Num)
		case Int:
			t = mtime.Time(v.Int)
		case String:
			s := bytes.TrimSpace(v.Str)
			var err error
			if t, err = mtime.Parse(s); err != nil {
				ms, nerr := strconv.ParseInt(string(s), 10, 64)
				if nerr != nil {
					return Value{}, fmt.Errorf("millis of %q: not a time (RFC 3339, or epoch milliseconds)", v.Str)
				}
				t = mtime.Time(ms)
			}
		default:
			return v, fmt.Errorf("millis of %s", v.Kind)
		}
		if m.env {
			return Value{Kind: Int, Int: int64(t)}, nil
		}
		return Value{Kind: Number, Num: float64(t)}, nil
	}
	return v, fmt.Errorf("unknown function %s", name)
}

// envNumber is one of the functions of numbers over an Env, which keep an
// Int whole where expr's do (abs, int), make a Number of it where they do
// (floor, ceil, round, float), and read a string's number (int, float).
func envNumber(name string, v Value) (Value, error) {
	if v.Kind == String && (name == "int" || name == "float") {
		if name == "int" {
			i, err := strconv.Atoi(string(v.Str))
			if err != nil {
				return Value{}, fmt.Errorf("int of %q: not a whole number", v.Str)
			}
			return Value{Kind: Int, Int: int64(i)}, nil
		}
		f, err := strconv.ParseFloat(string(v.Str), 64)
		if err != nil {
			return Value{}, fmt.Errorf("float of %q: not a number", v.Str)
		}
		return Value{Kind: Number, Num: f}, nil
	}
	if !v.numeric() {
		return v, fmt.Errorf("%s of %s", name, v.Kind)
	}
	switch {
	case name == "abs": // as expr's: -0 stays -0
		if v.Kind == Int && v.Int < 0 {
			v.Int = -v.Int
		} else if v.Num < 0 {
			v.Num = -v.Num
		}
		return v, nil
	case name == "int":
		if v.Kind == Number {
			return Value{Kind: Int, Int: int64(int(v.Num))}, nil
		}
		return v, nil
	}
	x := v.float()
	switch name {
	case "floor":
		x = math.Floor(x)
	case "ceil":
		x = math.Ceil(x)
	case "round":
		x = math.Round(x)
	}
	return Value{Kind: Number, Num: x}, nil
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
