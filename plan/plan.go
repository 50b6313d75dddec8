// Package plan is a job as data: the dataflow graph that both front doors
// build (a job file compiles to one, a weir.Pipeline builds one) and that
// one translator (package translate) turns into running stages. A plan is
// a directed acyclic graph of typed nodes: sources, record transforms,
// windowed aggregations and sinks; one node may feed several (fan-out), and
// a node may take several inputs (fan-in).
//
// Every node has a typed identity (ID: its kind and the name its front door
// gave it), which is what checkpoints find its state by: never a display
// text, never a prefix of a string. Every node describes its own state
// (Parts), so that the restore shape, the fingerprint and the names of the
// parts in checkpoints follow from the plan by one rule, whichever front
// door made it.
//
// What belongs here is the description of a job and its validation: the
// graph, its nodes, the rules of their identities and of their parts, and
// the registries of the kinds of sources, sinks and formats a job file
// names (Register). Running a plan is package translate's; reading a job
// file, package job's; the runtime, package engine's. A node's typed
// implementation (Node.Impl) is the front door's: the plan carries it,
// and only the translator looks inside.
package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Kind is what a node is.
type Kind uint8

// The kinds of nodes.
const (
	// KindSource reads records from a connector, decodes and validates
	// them, and may de-duplicate them.
	KindSource Kind = iota + 1
	// KindTransform changes a stream element by element: a filter, a
	// map, derived fields.
	KindTransform
	// KindAggregation windows a keyed stream by event time and aggregates
	// each window: panes, and the events too late for all their windows.
	KindAggregation
	// KindSink writes a stream: with a two-phase commit at checkpoints.
	KindSink
	// KindJoin joins two keyed streams by event time (an interval join):
	// its output, and the records too late for it.
	KindJoin
	// KindProcess runs a keyed process function: code with state per key
	// and timers of its own; its output, and its side outputs by name.
	KindProcess
	// KindLookup looks each record's key up in a table as it passes (a
	// lookup join): its records with their rows, and the records whose
	// lookup kept failing.
	KindLookup
)

// String is the kind as a plan prints it.
func (k Kind) String() string {
	switch k {
	case KindSource:
		return "source"
	case KindTransform:
		return "transform"
	case KindAggregation:
		return "aggregation"
	case KindSink:
		return "sink"
	case KindJoin:
		return "join"
	case KindProcess:
		return "process"
	case KindLookup:
		return "lookup"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ID is a node's identity: its kind and the name its front door gave it
// (a job file's "input" and the record names of its outputs, a Go
// program's Named, or a position among the nodes of its kind). It must be
// unique in the plan and stable from run to run: a restore finds the
// node's state by it.
type ID struct {
	Kind Kind
	Name string
}

// String is the kind and the name: "sink results:file:out.jsonl".
func (id ID) String() string { return id.Kind.String() + " " + id.Name }

// Port names one of a node's outputs.
type Port uint8

// The ports.
const (
	// Main is a node's output: a source's events, a transform's elements,
	// an aggregation's panes.
	Main Port = iota
	// Rejected are a source's records that are not valid events (the
	// quarantine), or a lookup join's whose lookup kept failing (its dead
	// letters).
	Rejected
	// Late are an aggregation's events too late for all their windows
	// (the side output), a join's records too late for it, and the
	// records a lookup's source set aside before it (beyond the
	// de-duplication horizon).
	Late
	// Refused are a sink's items it could not store (the dead letters).
	Refused
	// Side is a keyed process function's side output, the one its
	// input's Tag names.
	Side
)

// String is the port as a plan prints it.
func (p Port) String() string {
	switch p {
	case Main:
		return "out"
	case Rejected:
		return "rejected"
	case Late:
		return "late"
	case Refused:
		return "refused"
	case Side:
		return "side"
	}
	return fmt.Sprintf("Port(%d)", uint8(p))
}

// Input is one input of a node: a port of another node.
type Input struct {
	From ID
	Port Port
	// Tag names the side output, for the port Side.
	Tag string
}

// Node is one node of a plan.
type Node struct {
	ID ID
	// Label is how a person knows the node: "output[1]", "window",
	// `aggregation "per-card"`.
	Label  string
	Inputs []Input
	// Op is what the node is: one of *Source, *Transform, *Aggregation and
	// *Sink, as ID.Kind says.
	Op Op
	// Impl is the front door's typed implementation of the node, which the
	// translator builds the running stage from (package translate says
	// what each kind must implement).
	Impl any
}

// Op is the description of what a node does: *Source, *Transform,
// *Aggregation or *Sink.
type Op interface {
	kind() Kind
}

// Setting is one field of a node and its value, as a restore reports it
// ("window", "tumbling 1m").
type Setting struct {
	Field string
	Value string
}

// Source reads a connector.
type Source struct {
	// Connector is the registered kind of source ("file", "kafka"), or
	// empty for one a Go program gives itself.
	Connector string
	// Reads is what it reads, as a restore reports it ("kafka topic
	// orders", "orders.jsonl").
	Reads string
	// Format is the registered format of its records ("json"), or empty
	// for a Go decode function.
	Format string
}

func (*Source) kind() Kind { return KindSource }

// Dedup is the de-duplication of an aggregation's input: by the field (or
// function) named Field, within Horizon of event time.
type Dedup struct {
	Field   string
	Horizon mtime.Time
	// Version, when set, names what versions the events (a job file's
	// version_field): a higher version revises a lower one.
	Version string
}

// Transform changes the elements of its input.
type Transform struct {
	// Does says what it does, for a person: "filter", "having orders >= 5".
	Does string
}

func (*Transform) kind() Kind { return KindTransform }

// Aggregation windows and aggregates its input.
type Aggregation struct {
	Strategy  window.Strategy
	Watermark watermark.Strategy
	// WatermarkFrom names where a scripted watermark comes from (a job
	// file's field), or is empty.
	WatermarkFrom string
	// Layout is what its state is organised by besides the window (the
	// key, the time field, the aggregate's type): a change is refused on
	// restore, unless the windows are dropped.
	Layout []Setting
	// Values are its aggregates, by name, with their definitions: one
	// added starts from zero in the open windows, one removed is dropped.
	Values []Setting
	// Settings are what else it does that a restore reports when it
	// changes, after the watermark, the allowed lateness and the trigger
	// (the parallelism, the state backend).
	Settings []Setting
	// Format is the version of the encoding of its state by its front
	// door's codec.
	Format int
	// Parallelism is how many operator instances share its keys.
	Parallelism int
	// Follows says it follows the group's watermark while the partition
	// of a group's task is idle (it reads a source directly).
	Follows bool
	// Dedup, when set, drops the events of its input whose identity was
	// seen within its horizon (counted as duplicates).
	Dedup *Dedup
}

func (*Aggregation) kind() Kind { return KindAggregation }

// Sink writes its input.
type Sink struct {
	// Connector is the registered kind of sink ("file", "kafka",
	// "sqlite"), or empty for one a Go program gives itself.
	Connector string
	// Writes is where it writes, as a restore reports it ("kafka topic
	// alerts", "results.jsonl").
	Writes string
	// Former are the names checkpoints of an earlier weir gave its record.
	Former []string
}

func (*Sink) kind() Kind { return KindSink }

// Join is an event-time interval join of its two inputs, the left one
// first: for one key, a left record at time a and a right one at time b
// join when b is in [a+Lower, a+Upper]. A temporal join (Temporal) has no
// interval: a left record joins the right input's version valid at its
// time.
type Join struct {
	Lower, Upper                   mtime.Time
	LowerExclusive, UpperExclusive bool
	Temporal                       bool
	// Window, when above 0, makes it a window join: the records of one
	// key in one tumbling window of this size join.
	Window mtime.Time
	// Mode is "inner", "left_outer" or "anti".
	Mode string
	// Lateness is how long after the watermark a record may still come.
	Lateness  mtime.Time
	Watermark watermark.Strategy
	// Layout is what its state is organised by (the key, the types of
	// both sides): a change is refused on restore, unless the state is
	// dropped.
	Layout []Setting
	// Settings are what else it does that a restore reports when it
	// changes (the parallelism).
	Settings []Setting
	// Format is the version of the encoding of its state by its front
	// door's codec.
	Format int
	// Parallelism is how many parts its state is kept in, by key group.
	Parallelism int
	// Heads name, for each of its inputs (in the order of the node's
	// Inputs), the head that reads it into the join (its accounting and
	// de-duplication), and Dedup that head's de-duplication, or nil.
	Heads []string
	Dedup []*Dedup
}

func (*Join) kind() Kind { return KindJoin }

// Process runs a keyed process function (package process) on a keyed
// stream of the source loop.
type Process struct {
	Watermark watermark.Strategy
	// States are the function's states ("count: int64"), Sides its side
	// outputs, as a person reads them.
	States, Sides []string
	// Layout is what its state is organised by (the key's type, each
	// state's): a change is refused on restore, unless the state is
	// dropped; a state added or removed carries over.
	Layout []Setting
	// Settings are what else it does that a restore reports when it
	// changes (the parallelism).
	Settings []Setting
	// Format is the version of the encoding of its state.
	Format int
	// Parallelism is how many parts its state is kept in, by key group.
	Parallelism int
}

func (*Process) kind() Kind { return KindProcess }

// Lookup looks each record's key up in a table as it passes, at
// processing time, through a cache (a lookup join). It keeps no state in
// checkpoints.
type Lookup struct {
	// Table says what it reads, as a person reads it; Cache the cache's
	// size and time to live ("1000 rows for 1m", or "none").
	Table, Cache string
}

func (*Lookup) kind() Kind { return KindLookup }

// Interval is the join's interval as a person reads it: "[0s, 10m]", an
// exclusive bound with a parenthesis; a temporal join's is "as of the
// record's time".
func (j *Join) Interval() string {
	if j.Temporal {
		return "as of the record's time"
	}
	if j.Window > 0 {
		return "the same tumbling window of " + mtime.FormatDuration(j.Window)
	}
	lo, hi := "[", "]"
	if j.LowerExclusive {
		lo = "("
	}
	if j.UpperExclusive {
		hi = ")"
	}
	return lo + mtime.FormatDuration(j.Lower) + ", " + mtime.FormatDuration(j.Upper) + hi
}

// Graph is a plan: its nodes, each after its inputs.
type Graph struct {
	// Name is the job's name.
	Name  string
	Nodes []*Node
}

// Add adds a node after the nodes it takes its inputs from.
func (g *Graph) Add(n *Node) *Node {
	g.Nodes = append(g.Nodes, n)
	return n
}

// Node is the node of the identity id, or nil.
func (g *Graph) Node(id ID) *Node {
	for _, n := range g.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Consumers are the nodes that take the port of the node id as an input,
// in the order of the graph.
func (g *Graph) Consumers(id ID, port Port) []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in.From == id && in.Port == port {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// Error is a plan that is not valid: the node concerned, and why.
type Error struct {
	Node ID
	Msg  string
}

func (e *Error) Error() string {
	if e.Node.Name == "" && e.Node.Kind == 0 {
		return "plan: " + e.Msg
	}
	return fmt.Sprintf("plan: %s: %s", e.Node, e.Msg)
}

// Validate checks the graph once, with errors that name the node: every
// node has an operation of its kind and an identity of its own, takes its
// inputs from nodes before it and from ports they have, and the graph has a
// source and a sink.
func (g *Graph) Validate() error {
	seen := map[ID]*Node{}
	var errs []error
	sources, sinks := 0, 0
	for _, n := range g.Nodes {
		switch {
		case n.Op == nil:
			errs = append(errs, &Error{n.ID, "has no operation"})
			continue
		case n.Op.kind() != n.ID.Kind:
			errs = append(errs, &Error{n.ID, fmt.Sprintf("is a %s, its operation a %s", n.ID.Kind, n.Op.kind())})
		case n.ID.Name == "":
			errs = append(errs, &Error{n.ID, "has no name"})
		case seen[n.ID] != nil:
			errs = append(errs, &Error{n.ID, "two nodes have this identity: a restore finds each one's state by it"})
		}
		switch n.ID.Kind {
		case KindSource:
			sources++
			if len(n.Inputs) > 0 {
				errs = append(errs, &Error{n.ID, "a source takes no input"})
			}
		case KindSink:
			sinks++
		}
		if n.ID.Kind != KindSource && len(n.Inputs) == 0 {
			errs = append(errs, &Error{n.ID, "has no input"})
		}
		for _, in := range n.Inputs {
			from := seen[in.From]
			switch {
			case from == nil && g.Node(in.From) != nil:
				errs = append(errs, &Error{n.ID, fmt.Sprintf("takes its input from %s, which comes after it", in.From)})
			case from == nil:
				errs = append(errs, &Error{n.ID, fmt.Sprintf("takes its input from %s, which the plan does not have", in.From)})
			case !hasPort(from.ID.Kind, in.Port):
				errs = append(errs, &Error{n.ID, fmt.Sprintf("takes the %s of %s, which has none", in.Port, in.From)})
			}
		}
		seen[n.ID] = n
	}
	if sources == 0 {
		errs = append(errs, &Error{Msg: "no source: the job would read nothing"})
	}
	if sinks == 0 {
		errs = append(errs, &Error{Msg: "no sink: its results would go nowhere"})
	}
	return errors.Join(errs...)
}

// hasPort reports whether a node of kind k has the port p.
func hasPort(k Kind, p Port) bool {
	switch p {
	case Main:
		return k != KindSink
	case Rejected:
		return k == KindSource || k == KindLookup
	case Late:
		return k == KindAggregation || k == KindJoin || k == KindLookup
	case Refused:
		return k == KindSink
	case Side:
		return k == KindProcess
	}
	return false
}

// String is the plan for a person (weir plan): a node a line, each with
// its kind, its name (and the label a person knows it by, when another),
// what it does and where its inputs come from.
func (g *Graph) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan of %s: %d nodes\n", orNone(g.Name), len(g.Nodes))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, n := range g.Nodes {
		name := quoteName(n.ID.Name)
		if n.Label != "" && n.Label != n.ID.Name && !strings.HasPrefix(n.Label, n.ID.Kind.String()) {
			name += " (" + n.Label + ")"
		}
		var from []string
		for _, in := range n.Inputs {
			s := quoteName(in.From.Name)
			switch {
			case in.Port == Side:
				s += " (side " + in.Tag + ")"
			case in.Port != Main:
				s += " (" + in.Port.String() + ")"
			}
			from = append(from, s)
		}
		inputs := ""
		if len(from) > 0 {
			inputs = "<- " + strings.Join(from, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", n.ID.Kind, name, inputs, describe(n))
	}
	tw.Flush()
	return b.String()
}

func quoteName(s string) string {
	if strings.ContainsAny(s, " \t") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "the job"
	}
	return s
}

// describe is what a node does, in a few words.
func describe(n *Node) string {
	switch op := n.Op.(type) {
	case *Source:
		s := op.Reads
		if op.Format != "" {
			s += " as " + op.Format
		}
		return s
	case *Transform:
		return op.Does
	case *Aggregation:
		s := op.Strategy.Assigner.String()
		for _, l := range op.Layout {
			if l.Field == "key" {
				s += " by " + l.Value
			}
		}
		var vals []string
		for _, v := range op.Values {
			vals = append(vals, strings.TrimPrefix(v.Field, AggregatePrefix)+"="+v.Value)
		}
		if len(vals) > 0 {
			s += ": " + strings.Join(vals, ", ")
		}
		if op.Dedup != nil {
			s += fmt.Sprintf("; de-duplicated by %s within %s", op.Dedup.Field, mtime.FormatDuration(op.Dedup.Horizon))
			if op.Dedup.Version != "" {
				s += fmt.Sprintf(", the highest %s winning", op.Dedup.Version)
			}
		}
		s += fmt.Sprintf("; watermark %s; lateness %s; %s", DescribeWatermark(op.Watermark, op.WatermarkFrom), mtime.FormatDuration(op.Strategy.AllowedLateness), op.Strategy.Mode)
		if op.Parallelism > 1 {
			s += fmt.Sprintf("; %d instances", op.Parallelism)
		}
		return s
	case *Join:
		s := op.Mode + " join within " + op.Interval()
		switch {
		case op.Temporal:
			s = op.Mode + " temporal join, " + op.Interval()
		case op.Window > 0:
			s = op.Mode + " window join, " + op.Interval()
		}
		for _, l := range op.Layout {
			if l.Field == "key" {
				s += " by " + l.Value
			}
		}
		for i, d := range op.Dedup {
			if d != nil {
				s += fmt.Sprintf("; %s de-duplicated by %s within %s", []string{"left", "right"}[min(i, 1)], d.Field, mtime.FormatDuration(d.Horizon))
			}
		}
		s += fmt.Sprintf("; watermark %s; lateness %s", DescribeWatermark(op.Watermark, ""), mtime.FormatDuration(op.Lateness))
		if op.Parallelism > 1 {
			s += fmt.Sprintf("; %d instances", op.Parallelism)
		}
		return s
	case *Lookup:
		return "lookup join of " + op.Table + "; cache " + op.Cache
	case *Process:
		s := "keyed process function"
		for _, l := range op.Layout {
			if l.Field == "key" {
				s += " by " + l.Value
			}
		}
		if len(op.States) > 0 {
			s += "; state " + strings.Join(op.States, ", ")
		}
		if len(op.Sides) > 0 {
			s += "; side outputs " + strings.Join(op.Sides, ", ")
		}
		s += "; watermark " + DescribeWatermark(op.Watermark, "")
		if op.Parallelism > 1 {
			s += fmt.Sprintf("; %d instances", op.Parallelism)
		}
		return s
	case *Sink:
		return op.Writes
	}
	return ""
}

// AggregatePrefix begins the field of an aggregate among an aggregation's
// values ("aggregates.spent").
const AggregatePrefix = "aggregates."

// DescribeWatermark is a watermark strategy as the plan, a restore report
// and the console say it: the one wording of both front doors. from names
// where a scripted watermark comes from (a job file's field); empty, it is
// "scripted".
func DescribeWatermark(w watermark.Strategy, from string) string {
	switch w.Kind {
	case watermark.Perfect:
		return "perfect"
	case watermark.Scripted:
		if from != "" {
			return "from the field " + from
		}
		return "scripted"
	}
	s := fmt.Sprintf("delay %s, every %s", mtime.FormatDuration(w.Delay), mtime.FormatDuration(w.Interval))
	if w.Interval == 0 {
		s = fmt.Sprintf("delay %s, after every event", mtime.FormatDuration(w.Delay))
	}
	if w.Idle > 0 {
		s += ", idle after " + mtime.FormatDuration(w.Idle)
	}
	if w.MaxDrift > 0 {
		s += ", max drift " + mtime.FormatDuration(w.MaxDrift)
	}
	if w.Quiet > 0 {
		s += ", the clock's after " + mtime.FormatDuration(w.Quiet) + " quiet"
	}
	return s
}

// DescribeAssigner is a window's kind, size and offset, as a restore
// compares them.
func DescribeAssigner(a window.Assigner) string {
	s := a.String()
	var off mtime.Time
	switch w := a.(type) {
	case window.Tumbling:
		off = w.Offset
	case window.Sliding:
		off = w.Offset
	}
	if off != 0 {
		s += " offset " + mtime.FormatDuration(off)
	}
	return s
}

// Sources are the graph's source nodes, in order.
func (g *Graph) Sources() []*Node { return g.ofKind(KindSource) }

// Sinks are the graph's sink nodes, in order.
func (g *Graph) Sinks() []*Node { return g.ofKind(KindSink) }

// Aggregations are the graph's aggregation nodes, in order.
func (g *Graph) Aggregations() []*Node { return g.ofKind(KindAggregation) }

func (g *Graph) ofKind(k Kind) []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if n.ID.Kind == k {
			out = append(out, n)
		}
	}
	return slices.Clip(out)
}
