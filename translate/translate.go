// Package translate turns a plan (package plan) into a running job on the
// engine: the one translator of both front doors, a job file's and a Go
// program's. It derives from the plan what the engine keeps of the job (the
// restore shape, the names of the parts of its state in checkpoints, the
// fingerprint of a checkpoint of an earlier layout), opens the engine, and
// builds every node with its front door's typed implementation (Node.Impl),
// consumers before what feeds them, so that each node hands what it makes
// to inputs that exist. A consumer-group task is wired here too (Task):
// its checkpoints, its transactions, the group's watermark.
//
// What a node computes is its front door's: the translator never looks
// inside an element. What the engine does with the stages is the
// engine's.
package translate

import (
	"fmt"
	"strconv"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// Impl is what a node's implementation (Node.Impl) does: build the node's
// stage in the job, with what Ctx gives it. Every kind of node implements
// it; a source, an aggregation and a sink take part in checkpoints under
// the participant names Ctx gives them.
type Impl interface {
	Build(c *Ctx) error
}

// Claimer is an Impl of a sink that checks, before anything is built, that
// the output a job starting afresh replaces is its to replace (a file weir
// wrote).
type Claimer interface {
	Claim() error
}

// Config is how to run a plan: the engine's settings, save those the plan
// decides (the restore shape and the fingerprint).
type Config struct {
	Engine engine.Config
	// Fingerprint identifies what the job computes for a checkpoint of a
	// weir before layout 4, which recorded only that: the front door's
	// digest of its job, as it was then.
	Fingerprint string
	// Task, when set, runs the plan as the task of a consumer group's
	// partition: its checkpoints go to the task's directory and are
	// published to its changelog, a checkpoint that fails stops it, and
	// the aggregations that follow the group's watermark follow it.
	Task *group.Task
	// Opened, when set, is called once the engine is open (it knows the
	// checkpoint the job resumes from, if any) and before any node is
	// built: the front door checks what it must then (the files a job
	// starting afresh replaces) and reads the restore.
	Opened func(e *engine.Engine) error
}

// Job is a plan turned into an engine, built and ready to run.
type Job struct {
	Engine *engine.Engine
	Plan   *plan.Graph

	outs map[plan.Input]any // what each node's ports feed
	ins  map[plan.ID]any    // each node's input
}

// Ctx is what a node's implementation builds its stage with.
type Ctx struct {
	j    *Job
	node *plan.Node
	task *group.Task
}

// Engine is the job's engine.
func (c *Ctx) Engine() *engine.Engine { return c.j.Engine }

// Node is the node being built.
func (c *Ctx) Node() *plan.Node { return c.node }

// Task is the group's task the job runs as, or nil.
func (c *Ctx) Task() *group.Task { return c.task }

// Participant is the name of the node's state in checkpoints (see
// Participant).
func (c *Ctx) Participant() string { return Participant(c.node.ID) }

// Reached are the inputs of the nodes of kind k that the node being built
// feeds from its main port, directly or through transforms, in the order
// of the plan: a source hands its partitions' reports to the aggregations
// it feeds (their heads).
func (c *Ctx) Reached(k plan.Kind) []any {
	var out []any
	seen := map[plan.ID]bool{}
	var walk func(id plan.ID)
	walk = func(id plan.ID) {
		for _, n := range c.j.Plan.Consumers(id, plan.Main) {
			if seen[n.ID] {
				continue
			}
			seen[n.ID] = true
			switch n.ID.Kind {
			case k:
				if in, ok := c.j.ins[n.ID]; ok {
					out = append(out, in)
				}
			case plan.KindTransform:
				walk(n.ID)
			}
		}
	}
	walk(c.node.ID)
	return out
}

// Plan is the plan being built.
func (c *Ctx) Plan() *plan.Graph { return c.j.Plan }

// Consumers are the inputs of the nodes that take the port of the node
// being built, in the order of the plan: what each one's implementation
// gave SetInput, built already. The node hands what it makes on that port
// to each.
func (c *Ctx) Consumers(port plan.Port) []any {
	var out []any
	for _, n := range c.j.Plan.Consumers(c.node.ID, port) {
		if in, ok := c.j.ins[n.ID]; ok {
			out = append(out, in)
		}
	}
	return out
}

// SetInput says what the nodes that feed this one hand their output to: a
// typed consumer (an engine.Consumer, an engine.Target of a window
// stage), whose type the feeding node's implementation knows.
func (c *Ctx) SetInput(in any) { c.j.ins[c.node.ID] = in }

// GroupWatermark is what the head of the aggregation node shares its
// watermark with (engine.HeadConfig.GroupWatermark): the group's watermark,
// which it follows while its task's partition is idle, when it runs as a
// group's task that shares watermarks and its node says it follows
// (plan.Aggregation.Follows); nil otherwise.
func (c *Ctx) GroupWatermark(node *plan.Node) func(own mtime.Time, idle bool) mtime.Time {
	agg, ok := node.Op.(*plan.Aggregation)
	if c.task == nil || !ok || !agg.Follows {
		return nil
	}
	return c.task.GroupWatermark
}

// Build validates the plan, opens the engine with the plan's shape (which
// finds the checkpoint to resume from and refuses one that cannot carry
// over), and builds every node, consumers first. Nothing runs and nothing
// is written yet: a job whose last run finished and that would write again
// to an output that cannot take it back is refused here
// (engine.RerunError).
func Build(g *plan.Graph, cfg Config) (*Job, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	ec := cfg.Engine
	if ec.Checkpoint.Dir != "" {
		ec.Checkpoint.Shape = Shape(g)
		ec.Checkpoint.Fingerprint = cfg.Fingerprint
	}
	if t := cfg.Task; t != nil {
		ec.Checkpoint.Dir = t.Dir
		ec.Checkpoint.Publish = t.Publish
		ec.Checkpoint.TolerableFailures = 0
		ec.StopWait = t.StopWait
		if ec.Checkpoint.FS == nil {
			ec.Checkpoint.FS = t.FS
		}
	}
	e, err := engine.New(ec)
	if err != nil {
		return nil, err
	}
	j := &Job{Engine: e, Plan: g, ins: map[plan.ID]any{}}
	if cfg.Opened != nil {
		if err := cfg.Opened(e); err != nil {
			e.Discard()
			return nil, err
		}
	}
	if e.Resumed() == nil {
		// Starting afresh replaces the outputs: only those weir wrote.
		for _, n := range g.Nodes {
			if cl, ok := n.Impl.(Claimer); ok {
				if err := cl.Claim(); err != nil {
					e.Discard()
					return nil, err
				}
			}
		}
	}
	for _, n := range buildOrder(g) {
		impl, ok := n.Impl.(Impl)
		if !ok {
			e.Discard()
			return nil, &plan.Error{Node: n.ID, Msg: fmt.Sprintf("its implementation (%T) cannot be built", n.Impl)}
		}
		if err := impl.Build(&Ctx{j: j, node: n, task: cfg.Task}); err != nil {
			e.Discard()
			return nil, err
		}
	}
	if err := e.RerunRefusal(); err != nil {
		e.Discard()
		return nil, err
	}
	return j, nil
}

// buildOrder is the order the nodes are built in: each after every node
// that takes one of its ports as an input (so that it hands its output to
// inputs that exist), and otherwise in the order of the plan (so that the
// engine meets the sinks in the order the front door gave them). The
// plan is valid: every input comes before the node that takes it, so
// every node comes.
func buildOrder(g *plan.Graph) []*plan.Node {
	built := map[plan.ID]bool{}
	consumers := map[plan.ID][]plan.ID{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			consumers[in.From] = append(consumers[in.From], n.ID)
		}
	}
	var out []*plan.Node
	for len(out) < len(g.Nodes) {
		for _, n := range g.Nodes {
			if built[n.ID] {
				continue
			}
			ready := true
			for _, c := range consumers[n.ID] {
				ready = ready && built[c]
			}
			if ready {
				built[n.ID] = true
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// Participant is the name of the state of the node id in checkpoints: a
// source's position is "source:NAME", a sink's commit record "sink:NAME",
// an aggregation's windows its name. It is the one rule of the names of
// parts, for every front door.
func Participant(id plan.ID) string {
	switch id.Kind {
	case plan.KindSource:
		return engine.SourcePart(id.Name)
	case plan.KindSink:
		return engine.SinkPart(id.Name)
	}
	return id.Name
}

// HeadName is the name of the state of an aggregation's head in
// checkpoints (the accounting of its input, its partitions and its
// de-duplication ids): "head" for the aggregation "window" (a job file's,
// as its checkpoints have always named it), "head:NAME" for the others.
func HeadName(agg plan.ID) string {
	if agg.Name == "window" {
		return "head"
	}
	return "head:" + agg.Name
}

// dedupPart is the restore shape's part of a head's de-duplication ids.
func dedupPart(head, label string, d *plan.Dedup) engine.Part {
	p := engine.Part{Name: head, Label: label, Kind: engine.StateDedup,
		Layout:   []engine.Setting{{Field: "id", Value: d.Field}},
		Settings: []engine.Setting{{Field: engine.SettingHorizon, Value: mtime.FormatDuration(d.Horizon)}}}
	if d.Version != "" {
		// Only when set: the shape of a job without versions is what it
		// was before them.
		p.Settings = append(p.Settings, engine.Setting{Field: "version_field", Value: d.Version})
	}
	return p
}

// Shape is the restore shape of a plan: a part for every node that holds
// state, in the order of the plan, described by the one rule of each
// kind.
func Shape(g *plan.Graph) *engine.Shape {
	s := &engine.Shape{}
	for _, n := range g.Nodes {
		switch op := n.Op.(type) {
		case *plan.Source:
			p := engine.Part{Name: Participant(n.ID), Label: n.Label, Kind: engine.StatePosition}
			if op.Reads != "" {
				p.Settings = []engine.Setting{{Field: "source", Value: op.Reads}}
			}
			s.Parts = append(s.Parts, p)
		case *plan.Aggregation:
			if d := op.Dedup; d != nil {
				label := "de-duplication"
				if HeadName(n.ID) != "head" {
					// One of several aggregations: whose.
					label += " of " + n.Label
				}
				s.Parts = append(s.Parts, dedupPart(HeadName(n.ID), label, d))
			}
			p := engine.Part{Name: Participant(n.ID), Label: n.Label, Kind: engine.StateWindows, Format: op.Format,
				Layout: append([]engine.Setting{{Field: "window", Value: plan.DescribeAssigner(op.Strategy.Assigner)}}, settings(op.Layout)...),
				Values: settings(op.Values),
				Mode:   op.Strategy.Mode.String(),
				Settings: append([]engine.Setting{
					{Field: "watermark", Value: plan.DescribeWatermark(op.Watermark, op.WatermarkFrom)},
					{Field: engine.SettingLateness, Value: mtime.FormatDuration(op.Strategy.AllowedLateness)},
					{Field: engine.SettingTrigger, Value: op.Strategy.Trigger.String()},
				}, settings(op.Settings)...),
			}
			s.Parts = append(s.Parts, p)
		case *plan.Join:
			for i, d := range op.Dedup {
				if d != nil && i < len(n.Inputs) && i < len(op.Heads) {
					// The first input's id is the job's own; another's is
					// named by its input's label (join.with.id).
					label := g.Node(n.Inputs[i].From).Label
					p := dedupPart(op.Heads[i], "de-duplication of "+label, d)
					if i > 0 {
						p.Layout[0].Field = label + ".id"
					}
					s.Parts = append(s.Parts, p)
				}
			}
			// A temporal join's buffers hold versions, a window join's
			// records by window, not records within an interval: a change
			// of kind is refused. A
			// checkpoint of before the kinds was an interval join's.
			kind, set := "interval", []engine.Setting{{Field: "interval", Value: op.Interval()}}
			switch {
			case op.Temporal:
				kind, set = "temporal", nil
			case op.Window > 0:
				// Its buffers are by window: another size starts them
				// afresh.
				kind, set = "window "+mtime.FormatDuration(op.Window), nil
			}
			layout := append([]engine.Setting{{Field: "join", Value: kind, Absent: "interval"}}, settings(op.Layout)...)
			s.Parts = append(s.Parts, engine.Part{Name: Participant(n.ID), Label: n.Label, Kind: engine.StateJoin, Format: op.Format,
				Layout: layout,
				Settings: append(append(set,
					engine.Setting{Field: "mode", Value: op.Mode},
					engine.Setting{Field: "watermark", Value: plan.DescribeWatermark(op.Watermark, "")},
					engine.Setting{Field: engine.SettingLateness, Value: mtime.FormatDuration(op.Lateness)},
				), settings(op.Settings)...),
			})
		case *plan.Process:
			s.Parts = append(s.Parts, engine.Part{Name: Participant(n.ID), Label: n.Label, Kind: engine.StateProcess, Format: op.Format,
				Layout: settings(op.Layout),
				Settings: append([]engine.Setting{
					{Field: "watermark", Value: plan.DescribeWatermark(op.Watermark, "")},
				}, settings(op.Settings)...),
			})
		case *plan.Sink:
			p := engine.Part{Name: Participant(n.ID), Label: n.Label, Kind: engine.StateCommits}
			if op.Writes != "" {
				p.Settings = []engine.Setting{{Field: n.Label, Value: op.Writes}}
			}
			s.Parts = append(s.Parts, p)
		}
	}
	return s
}

func settings(list []plan.Setting) []engine.Setting {
	out := make([]engine.Setting, len(list))
	for i, s := range list {
		out[i] = engine.Setting{Field: s.Field, Value: s.Value}
	}
	return out
}

// ParallelismSetting is the setting of an aggregation's parallelism, as a
// restore reports its change.
func ParallelismSetting(n int) plan.Setting {
	return plan.Setting{Field: "parallelism", Value: strconv.Itoa(n)}
}
