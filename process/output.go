package process

import (
	"fmt"
	"reflect"
)

// Output is a side output of a keyed process function (Flink's OutputTag):
// a second stream of elements of type V, by name, beside the function's
// main output. A function lists its side outputs in Func.Sides; a pipeline
// takes one as a stream with weir.SideOutput, a test with
// weirtest.ProcessHarness's Side. As a State, it describes: it may be
// declared once and used by every run of the function.
type Output[V any] struct{ name string }

// NewOutput returns a side output named name.
func NewOutput[V any](name string) *Output[V] { return &Output[V]{name: name} }

// Name is the side output's name.
func (o *Output[V]) Name() string { return o.name }

// Type is the type of its elements.
func (o *Output[V]) Type() reflect.Type { return reflect.TypeFor[V]() }

// Emit sends v to the side output, from a call of a function that lists
// it; it panics elsewhere.
func (o *Output[V]) Emit(s Scope, v V) {
	c := s.scope()
	if !c.active {
		panic(fmt.Sprintf("process: side output %q used outside a call of the function", o.name))
	}
	for i, x := range c.sides {
		if x == Side(o) {
			c.pushes[i].(func(V))(v)
			return
		}
	}
	panic(fmt.Sprintf("process: side output %q is not one of this function's (Func.Sides)", o.name))
}

// accepts says push is what the side output's elements can go to.
func (o *Output[V]) accepts(push any) bool {
	_, ok := push.(func(V))
	return ok
}

func (o *Output[V]) collect(f func(any)) any { return func(v V) { f(v) } }

// Side is a side output of any type: an *Output.
type Side interface {
	// Name is the side output's name, unique among the function's.
	Name() string
	// Type is the type of its elements.
	Type() reflect.Type

	accepts(push any) bool
	collect(f func(any)) any
}

// Collect is a consumer of the side output s (a func(V), for Config.Sides)
// that passes each element to f as an any: how a runner that does not
// know V takes it (weirtest's harness).
func Collect(s Side, f func(any)) any { return s.collect(f) }
