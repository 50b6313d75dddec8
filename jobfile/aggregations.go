package jobfile

import (
	"iter"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AggregationFields are the fields each aggregation of a job of several
// has of its own (aggregations: {NAME: {...}}): its key, the events it
// keeps (where, which the job may give for all instead: eitherFields), its
// windows and how they fire, its aggregates, and where its panes and
// too-late events go. The job's other fields (its source, time, id,
// derived fields, watermark, quarantine, dead letter, checkpoints, state,
// console) are the aggregations' in common: the source is read, validated
// and checkpointed once for all of them.
var AggregationFields = []string{"key", "where", "window", "trigger", "allowed_lateness", "mode", "aggregates", "having",
	"output", "late_output", "late_for_some_windows", "summary", "acceptance"}

// eitherFields are the AggregationFields a job of several may give at the
// top, for every aggregation, or in an aggregation, for it: not both.
var eitherFields = []string{"where"}

var aggregationName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Aggregations are the job's aggregations: the job itself, then its
// siblings in a job of several (aggregations:). Each is a whole Job, with
// the fields of the job file in common and its own AggregationFields.
func (j *Job) Aggregations() []*Job { return append([]*Job{j}, j.Siblings...) }

// Several reports whether the job has several aggregations (aggregations:
// in the job file, even with one entry).
func (j *Job) Several() bool { return j.Aggregation != "" }

// EveryOutput yields every output of the job once, with the aggregation
// whose it is: each aggregation's results and late output, and the
// quarantine and dead letter, which the aggregations of a job of several
// share (each has a copy), with the first.
func (j *Job) EveryOutput() iter.Seq2[*Job, *Output] {
	return func(yield func(*Job, *Output) bool) {
		for i, a := range j.Aggregations() {
			for _, o := range a.AllOutputs() {
				if (i == 0 || o.perAggregation()) && !yield(a, o) {
					return
				}
			}
		}
	}
}

// perAggregation says whether the output is one of an aggregation's own
// (its results or its late output), not the job's.
func (o *Output) perAggregation() bool {
	r := o.Role()
	return r == "results" || r == "late_output"
}

// aggregations reads a job of several aggregations: each entry of
// aggregations is read as a job file of its own (the common fields with
// the entry's), so that every rule of a one-aggregation job holds in it,
// and a mistake names its field under aggregations.NAME. The first is the
// job returned, the others its Siblings.
func (p *parser) aggregations(root *node, v *yaml.Node) (*Job, error) {
	const example = "aggregations: {per_card: {key: card, window: {tumbling: 1m}, aggregates: {orders: count}, output: cards.jsonl}}"
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return nil, root.errf(v, "aggregations", "expected a mapping of aggregations by name, e.g. %s", example)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, m := v.Content[i], v.Content[i+1]
		field := "aggregations." + k.Value
		if !aggregationName.MatchString(k.Value) {
			return nil, root.errf(k, field, "expected a name of letters, digits and _ (not first a digit)")
		}
		if m.Kind != yaml.MappingNode {
			return nil, root.errf(m, field, "expected the aggregation's fields (%s)", strings.Join(AggregationFields, ", "))
		}
		sub := &node{file: root.file, path: field, n: m}
		if err := sub.strict(AggregationFields...); err != nil {
			return nil, err
		}
	}
	for _, f := range AggregationFields {
		if n := root.get(f); n != nil && !slices.Contains(eitherFields, f) {
			return nil, root.errf(n, f, "a job with aggregations gives each its own %s: move it under aggregations.NAME", f)
		}
	}
	var jobs []*Job
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, m := v.Content[i], v.Content[i+1]
		name := k.Value
		field := "aggregations." + name
		sub := &node{file: root.file, path: field, n: m}
		for _, f := range eitherFields {
			if n := sub.get(f); n != nil && root.get(f) != nil {
				return nil, root.errf(n, field+"."+f, "the job gives %s for every aggregation (line %d): give it there or in each aggregation, not both", f, root.get(f).Line)
			}
		}
		// The job file as this aggregation sees it: the common fields,
		// then its own.
		own := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: m.Line, Column: m.Column}
		for i := 0; i+1 < len(root.n.Content); i += 2 {
			if root.n.Content[i].Value != "aggregations" {
				own.Content = append(own.Content, root.n.Content[i], root.n.Content[i+1])
			}
		}
		own.Content = append(own.Content, m.Content...)
		j, err := p.job(&node{file: root.file, n: own})
		if err != nil {
			return nil, underAggregation(err, &Job{Aggregation: name})
		}
		j.Aggregation = name
		for _, o := range j.AllOutputs() {
			if o.perAggregation() {
				o.Field = field + "." + o.Field
			}
		}
		if j.Grouped() {
			return nil, root.errf(v, "aggregations", "a job in a consumer group has one aggregation: its task moves with its partition's state")
		}
		jobs = append(jobs, j)
	}
	first := jobs[0]
	first.Siblings = jobs[1:]
	// Each aggregation's places are distinct (p.job); so must be those of
	// different aggregations.
	if err := p.distinct(first); err != nil {
		return nil, err
	}
	return first, nil
}

// underAggregation names a mistake in the aggregation j's own fields under
// aggregations.NAME; one in the common fields keeps its name.
func underAggregation(err error, j *Job) error {
	if e, ok := err.(*Error); ok {
		e.Field = j.FieldName(e.Field)
	}
	return err
}

// Alone is the job's aggregation of that name as a job of one, for what
// reads one aggregation at a time (weir reconcile); name "" is the first
// whose outputs include a table, or the first. nil when there is none of
// that name.
func (j *Job) Alone(name string) *Job {
	all := j.Aggregations()
	pick := func(a *Job) *Job {
		c := *a
		c.Aggregation, c.Siblings = "", nil
		return &c
	}
	for _, a := range all {
		if name == "" {
			for _, o := range a.Outputs {
				if o.Table != nil {
					return pick(a)
				}
			}
		} else if a.Aggregation == name {
			return pick(a)
		}
	}
	if name == "" {
		return pick(all[0])
	}
	return nil
}

// FieldName is the name messages give the field f of j (a dotted path, as
// errors name fields): aggregations.NAME.f for one of an aggregation's own
// fields in a job of several (AggregationFields), f otherwise.
func (j *Job) FieldName(f string) string {
	if !j.Several() {
		return f
	}
	top := f
	if i := strings.IndexAny(top, ".["); i >= 0 {
		top = top[:i]
	}
	if !slices.Contains(AggregationFields, top) {
		return f
	}
	return "aggregations." + j.Aggregation + "." + f
}
