package weir

import (
	"fmt"
	"strings"
)

// PartOption configures a source, an aggregation or a sink of a pipeline.
type PartOption func(*partConfig)

type partConfig struct {
	name string
	set  bool
}

// Named names a source (From, FromSeq, FromSlice), an aggregation
// (Aggregate, Process), a join, a keyed process function (KeyedProcess) or
// a sink (Sink) in checkpoints, logs and errors;
// Read and SinkTo take their names as an argument. A restore finds a part's
// state (a source's position, an aggregation's windows, a sink's pending
// commits) by its name, so a name must be unique among the pipeline's parts
// of its kind and stay the same from run to run: parts can then be added
// ahead of it. A part without a name is checkpointed by its position among
// those of its kind (source-0, stage-1, sink-1, as weir always did), and a
// pipeline with checkpoints warns about it when it starts.
func Named(name string) PartOption {
	return func(c *partConfig) { c.name, c.set = name, true }
}

func partOptions(opts []PartOption) partConfig {
	var c partConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// part registers the name of a part of the kind ("source", "aggregation",
// "sink"): the name it was given, or positional when it has none. Two parts
// of one kind with one name are an error of the pipeline.
func (p *Pipeline) part(kind string, c partConfig, positional string) string {
	name := positional
	switch {
	case c.set && c.name == "":
		p.fail("%s %s: Named needs a name that is not empty", kind, positional)
	case c.set:
		name = c.name
	default:
		p.unnamed = append(p.unnamed, positional)
	}
	return p.register(kind, name)
}

// register records the name of a part of the kind.
func (p *Pipeline) register(kind, name string) string {
	if p.names == nil {
		p.names = map[string]bool{}
	}
	if key := kind + "\x00" + name; p.names[key] {
		p.fail("two %ss are named %q: a restore finds each one's state by its name", kind, name)
	} else {
		p.names[key] = true
	}
	return name
}

// warnUnnamed is the start-up warning of a checkpointed pipeline with parts
// that have no name.
func (p *Pipeline) warnUnnamed() string {
	if len(p.unnamed) == 0 {
		return ""
	}
	return fmt.Sprintf("warning: %s %s no name and %s checkpointed by position: a source, an aggregation or a sink added ahead of one would restore another's state into it; name each with weir.Named",
		strings.Join(p.unnamed, ", "), plural(len(p.unnamed), "has", "have"), plural(len(p.unnamed), "is", "are"))
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}
