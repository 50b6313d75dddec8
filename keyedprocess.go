package weir

import (
	"fmt"
	"reflect"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/process"
	"github.com/weirstream/weir/translate"
)

// KeyedProcess runs a keyed process function (package process) on a keyed
// stream: f.Element sees each element with its key's state, f.Timer each
// timer the function set, and both emit to the stream returned and to
// side outputs (SideOutput). It is Flink's KeyedProcessFunction: what no
// window, aggregate or join covers (a rule over a key's history, a timeout
// of one's own, a state machine per key).
//
// The stage's watermark is its input's (the stream's strategy, over its
// partitions); event-time timers fire as it passes them, before it goes
// on to the stream returned, and processing-time timers as processing
// time does (with Live, the wall clock's). Every element is passed to the
// function, behind the watermark or not. With StateOnDisk the states and
// timers are kept in a state database, the keys used last at hand in
// memory. With Checkpoints they are kept in checkpoints, by key group, and
// restored at any parallelism, from either backend into either; the key's
// type and each state's are the stage's layout: a restore that changes
// one is refused (unless DropState("process")), one that adds or removes a
// state carries the others over.
//
// The input is a stream of the source loop (read from sources, through
// Map, Filter, FlatMap, Union or a join), not the output of an
// aggregation; the stage runs in the source loop, and its streams are the
// loop's. The same input in the same order gives the same output. Named
// names the stage.
func KeyedProcess[K comparable, T, O any](in Keyed[K, T], f process.Func[K, T, O], opts ...PartOption) Stream[O] {
	p := in.t.s.p
	p.stages++
	name := p.part("process", partOptions(opts), fmt.Sprintf("process-%d", p.stages))
	out := &engine.Stream[O]{}
	node := plan.ID{Kind: plan.KindProcess, Name: "process:" + name}
	main := Stream[O]{p: p, n: out, from: plan.Input{From: node}}
	impl := &processNode[K, T, O]{name: name, f: f, in: in, out: out, at: later[T](in.t.s.n), sides: map[string]any{}, disk: p.o.disk}
	switch {
	case f.Element == nil:
		p.fail("process %s: the function has no Element", name)
		return main
	case in.t.s.origin != 0:
		p.fail("process %s: its input is the output of an aggregation; a keyed process function takes a stream read from sources", name)
		return main
	case in.t.id != nil:
		p.fail("process %s: its input is Deduplicated, which a keyed process function does not do", name)
		return main
	}
	op := &plan.Process{Watermark: in.t.wm, Format: stateFormat, Parallelism: p.o.parallelism,
		Layout:   []plan.Setting{{Field: "key", Value: reflect.TypeFor[K]().String()}},
		Settings: []plan.Setting{translate.ParallelismSetting(p.o.parallelism)}}
	types := []reflect.Type{reflect.TypeFor[K]()}
	for _, s := range f.State {
		if s == nil {
			p.fail("process %s: a state is nil", name)
			return main
		}
		op.States = append(op.States, s.Name()+": "+s.Type().String())
		op.Layout = append(op.Layout, plan.Setting{Field: "state." + s.Name(), Value: s.Type().String()})
		types = append(types, s.Type())
	}
	for _, s := range f.Sides {
		if s == nil {
			p.fail("process %s: a side output is nil", name)
			return main
		}
		op.Sides = append(op.Sides, s.Name())
	}
	if how := p.encoded(); how != "" {
		for _, t := range types {
			if why := checkpointable(t); why != "" {
				p.fail("process %s: the type %s cannot be %s: %s", name, t, how, why)
				return main
			}
		}
	}
	p.add(&plan.Node{ID: node, Label: "process " + name, Inputs: []plan.Input{in.t.s.from}, Op: op, Impl: impl})
	return main
}

// SideOutput is the stream of the side output tag of the keyed process
// function whose main output is main (the stream KeyedProcess returned);
// tag is one of the function's Sides. Every side output a function lists
// is taken: one that goes nowhere is an error of the pipeline.
func SideOutput[O, V any](main Stream[O], tag *process.Output[V]) Stream[V] {
	p := main.p
	out := &engine.Stream[V]{}
	s := Stream[V]{p: p, n: out, from: plan.Input{From: main.from.From, Port: plan.Side, Tag: tag.Name()}}
	var sd sider
	if n := p.g.Node(main.from.From); n != nil && main.from.Port == plan.Main {
		sd, _ = n.Impl.(sider)
	}
	if sd == nil {
		p.fail("SideOutput %q: the stream is not a keyed process function's output (KeyedProcess)", tag.Name())
		return s
	}
	if err := sd.side(tag.Name(), out.Push, out.Signal); err != nil {
		p.fail("SideOutput %q: %v", tag.Name(), err)
		return s
	}
	return s
}

// sider is a keyed process node, which takes the consumers of its side
// outputs.
type sider interface {
	side(name string, push any, signal func(engine.Signal)) error
}

// processNode is the implementation of a keyed process function's node.
type processNode[K comparable, T, O any] struct {
	name    string
	f       process.Func[K, T, O]
	in      Keyed[K, T]
	out     *engine.Stream[O]
	at      *lazy[T]
	sides   map[string]any
	signals []func(engine.Signal)
	disk    *onDisk
}

func (n *processNode[K, T, O]) side(name string, push any, signal func(engine.Signal)) error {
	listed := false
	for _, s := range n.f.Sides {
		listed = listed || s != nil && s.Name() == name
	}
	switch {
	case !listed:
		return fmt.Errorf("not one of the side outputs of process %s (Func.Sides)", n.name)
	case n.sides[name] != nil:
		return fmt.Errorf("taken twice from process %s: take it once and use the stream as often as needed", n.name)
	}
	n.sides[name] = push
	n.signals = append(n.signals, signal)
	return nil
}

func (n *processNode[K, T, O]) Build(c *translate.Ctx) error {
	e := c.Engine()
	op := c.Node().Op.(*plan.Process)
	for _, s := range n.f.Sides {
		if n.sides[s.Name()] == nil {
			return fmt.Errorf("weir: process %s: its side output %q goes nowhere: take it with weir.SideOutput", n.name, s.Name())
		}
	}
	cfg := engine.ProcessConfig[K, T, O]{Name: c.Participant(), Func: n.f, Watermark: op.Watermark,
		Parallelism: op.Parallelism, Hash: stableHash[K](e.Checkpointed()),
		Out: n.out, Sides: n.sides, SideSignals: n.signals}
	if e.Checkpointed() || n.disk != nil {
		cfg.Key = process.JSONKeys[K]{}
	}
	if n.disk != nil {
		db, err := n.disk.open(e, "process "+n.name)
		if err != nil {
			return err
		}
		cfg.State = db
	}
	s, err := engine.NewProcess(e, cfg)
	if err != nil {
		return fmt.Errorf("weir: process %s: %w", n.name, err)
	}
	n.at.c = &processInput[K, T, O]{key: n.in.key, ts: n.in.t.ts, part: n.in.t.part, s: s}
	return nil
}

// processInput feeds a keyed process stage from its input stream.
type processInput[K comparable, T, O any] struct {
	key  func(T) K
	ts   func(T) mtime.Time
	part func(T) int
	s    *engine.Process[K, T, O]
}

func (in *processInput[K, T, O]) Push(v T) {
	part := 0
	if in.part != nil {
		part = in.part(v)
	}
	in.s.Element(part, in.key(v), in.ts(v), v)
}

func (in *processInput[K, T, O]) Signal(sg engine.Signal) { in.s.Signal(sg) }
