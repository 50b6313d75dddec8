package jobfile

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Join is a job's join (join:). An interval join, as Flink's
// intervalJoin: a record of the job's source (the left input) at time a
// and a record of the other input (With, the right input) at time b, with
// the same key, join when b is within [a+Lower, a+Upper], both bounds
// included. A temporal join (Temporal), as Flink SQL's event-time
// temporal join: the other input is a versioned table, each record its
// key's row from its own time on (With.Deletion says which end it), and a
// record joins the version valid at its time. A window join (Window), as
// Flink's: the records of one key in one tumbling window join. The job
// writes the joined records to its outputs instead of windows' panes.
type Join struct {
	// With is the right input as a job of its own: its source and format,
	// time, key, derived fields and where; its watermark and max_future
	// are the job's.
	With *Job
	// Lower and Upper bound the right record's time, from the left
	// record's (join.between); Lower may be negative. Zero in a temporal
	// or a window join.
	Lower, Upper mtime.Time
	// Temporal makes it a temporal join (join.temporal).
	Temporal bool
	// Window, when above 0, makes it a window join (join.window): the
	// records of one key in one tumbling window of this size join.
	Window mtime.Time
	// Kind is inner (the pairs), left_outer (the pairs, and each left
	// record that joined nothing once its interval has passed) or anti
	// (only those).
	Kind string
	// AllowedLateness lets records come that far behind the combined
	// watermark and still join.
	AllowedLateness mtime.Time
}

// The kinds of join.
const (
	JoinInner     = "inner"
	JoinLeftOuter = "left_outer"
	JoinAnti      = "anti"
)

// WindowOf is the start of the window join's tumbling window that holds
// ts (Window above 0).
func (jo *Join) WindowOf(ts mtime.Time) mtime.Time {
	return window.Tumbling{Size: jo.Window}.Start(ts)
}

// JoinWithFields are the fields of a join's other input (join.with): its
// own source, time, key, id, derived fields and where. The watermark,
// max_future and dedup_horizon are the job's, for both inputs.
var JoinWithFields = []string{"source", "time", "key", "id", "fields", "where"}

// notInJoin are the fields a job with a join does not take, with why.
var notInJoin = []struct{ field, why string }{
	{"aggregations", "a job joins or aggregates, not both yet: a join writes the records it joins"},
	{"window", "a join writes the records it joins, not windows' panes: a window join's window is join.window"},
	{"trigger", "a join writes each record it joins once, when it joins, or, unmatched, when its interval has passed"},
	{"allowed_lateness", "a join's lateness is join.allowed_lateness"},
	{"mode", "a join writes each record it joins once: there is nothing to revise"},
	{"aggregates", "a join writes the records it joins, not aggregates"},
	{"having", "a join writes the records it joins; keep records with where, on either input"},
	{"late_for_some_windows", "a join has no windows"},
	{"version_field", "a join does not revise records"},
	{"heartbeat", "a join's inputs have no heartbeats yet"},
	{"acceptance", "the acceptance record is an aggregation's"},
	{"dead_letter", "a join's outputs refuse nothing they could hand on yet"},
}

// join reads join: the other input, the interval, the kind and the
// lateness. The job's own source, time, key, fields, where and watermark
// are read already.
func (p *parser) join(root *node, j *Job) error {
	const example = "join: {with: {source: payments.jsonl, time: {field: ts}, key: order_id}, between: [0s, 10m], kind: anti}"
	for _, f := range notInJoin {
		if n := root.get(f.field); n != nil {
			return root.errf(n, f.field, "not in a job with join: %s", f.why)
		}
	}
	jn, err := root.sub("join")
	if err != nil {
		return err
	}
	if err := jn.strict(joinShape.names()...); err != nil {
		return err
	}
	with, err := jn.sub("with")
	if err != nil {
		return err
	}
	if with == nil {
		return jn.errf(nil, "join.with", "missing: the other input, its source, time and key, e.g. %s", example)
	}
	if err := with.strict(append(slices.Clip(JoinWithFields), "deletion")...); err != nil {
		return err
	}
	// The other input as a job file of its own: its fields, and the
	// job's watermark.
	own := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: with.n.Line, Column: with.n.Column}
	own.Content = append(own.Content, with.n.Content...)
	if w := root.get("watermark"); w != nil {
		own.Content = append(own.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "watermark"}, w)
	}
	r := &Job{File: p.file, Name: j.Name, Parallelism: 1, lines: map[string]int{}}
	sub := &node{file: root.file, n: own}
	for _, read := range []func(*node, *Job) error{p.source, p.sourceFormat, p.fields, p.time, p.key, p.id, p.watermark, p.where} {
		if err := read(sub, r); err != nil {
			if e, ok := err.(*Error); ok && !strings.HasPrefix(e.Field, "watermark") {
				e.Field = "join.with." + e.Field
			}
			return err
		}
	}
	r.MaxFuture, r.DedupHorizon = j.MaxFuture, j.DedupHorizon
	if j.ID == nil && r.ID == nil {
		if n := root.get("dedup_horizon"); n != nil {
			return root.errf(n, "dedup_horizon", "needs id (or join.with.id): the field that identifies an event")
		}
	}
	if r.Kafka != nil && r.Kafka.Group != "" || j.Kafka != nil && j.Kafka.Group != "" {
		return jn.errf(nil, "join", "a join reads both its inputs in one job: not in a consumer group yet")
	}
	if !j.Keyed() {
		return root.errf(nil, "key", "missing: a join matches records by key, e.g. key: order_id (and join.with.key)")
	}
	if !r.Keyed() {
		return with.errf(nil, "join.with.key", "missing: a join matches records by key, e.g. key: order_id")
	}
	if len(j.KeyFields()) != len(r.KeyFields()) {
		return with.errf(with.get("key"), "join.with.key", "has %d fields and the job's key %s has %d: the keys of the two inputs are compared as they are",
			len(r.KeyFields()), j.KeyName(), len(j.KeyFields()))
	}
	if j.Watermark.Kind != watermark.Bounded {
		return root.errf(root.get("watermark"), "watermark", "a join's watermark is bounded (delay, interval, idle): perfect and from_field read one input")
	}
	if (j.ArrivalField == nil) != (r.ArrivalField == nil) {
		return with.errf(with.get("time"), "join.with.time.arrival_field", "give both inputs an arrival_field (a replay, in the records' processing time) or neither (the clock's)")
	}
	if j.PartitionField != nil || r.PartitionField != nil {
		return root.errf(nil, "time.partition_field", "not in a job with join yet: each input's partitions are its source's")
	}
	if err := p.between(jn, &j.Join, r); err != nil {
		return err
	}
	if r.Deletion, err = condition(with, "deletion", "record", `op == "d"`); err != nil {
		if e, ok := err.(*Error); ok {
			e.Field = "join.with.deletion"
		}
		return err
	}
	if r.Deletion != nil && !j.Join.Temporal {
		return with.errf(with.get("deletion"), "join.with.deletion", "only a temporal join's table has deletions (join.temporal: true)")
	}
	return nil
}

// between reads the rest of join: its interval, kind and lateness.
func (p *parser) between(jn *node, dst **Join, with *Job) error {
	jo := &Join{With: with, Kind: JoinInner}
	var err error
	if jo.Temporal, err = jn.boolean("temporal"); err != nil {
		return err
	}
	if jo.Window, err = p.joinWindow(jn); err != nil {
		return err
	}
	b := jn.get("between")
	switch {
	case jo.Temporal && jo.Window > 0:
		return jn.errf(jn.get("window"), "join.window", "a temporal join joins the version valid at a record's time, not the records of a window: leave window out, or temporal")
	case jo.Temporal && b != nil:
		return jn.errf(b, "join.between", "a temporal join joins the version valid at a record's time, not the records within an interval: leave between out, or temporal")
	case jo.Window > 0 && b != nil:
		return jn.errf(b, "join.between", "a window join joins the records of one window, not those within an interval: leave between out, or window")
	case b == nil && !jo.Temporal && jo.Window == 0:
		return jn.errf(nil, "join.between", "missing: the interval of the other input's time from this input's, e.g. between: [0s, 10m] (a payment within 10 minutes after its order); or window: {tumbling: 1m}, to join the records of one window; or temporal: true, to join the version of a table valid at a record's time")
	case jo.Temporal || jo.Window > 0:
		return p.joinKind(jn, dst, jo)
	}
	if b.Kind != yaml.SequenceNode || len(b.Content) != 2 {
		return jn.errf(b, "join.between", "expected [from, to], two durations such as [-5m, 10m]")
	}
	for i, dst := range []*mtime.Time{&jo.Lower, &jo.Upper} {
		v := b.Content[i]
		s, neg := strings.CutPrefix(v.Value, "-")
		d, err := mtime.ParseDuration(s)
		if v.Kind != yaml.ScalarNode || err != nil {
			return jn.errf(v, "join.between", "expected a duration such as 0s, -5m or 10m, got %q", v.Value)
		}
		if neg {
			d = -d
		}
		*dst = d
	}
	if jo.Lower > jo.Upper {
		return jn.errf(b, "join.between", "from %s is after to %s: no record could join", b.Content[0].Value, b.Content[1].Value)
	}
	return p.joinKind(jn, dst, jo)
}

// joinWindow reads join.window: a tumbling window's size, 0 without one.
func (p *parser) joinWindow(jn *node) (mtime.Time, error) {
	w, err := jn.sub("window")
	if err != nil || w == nil {
		return 0, err
	}
	for _, kind := range []string{"sliding", "session", "global", "offset"} {
		if v := w.get(kind); v != nil {
			return 0, w.errf(v, "join.window."+kind, "a job file's window join is tumbling, e.g. window: {tumbling: 1m}; the Go API's weir.WindowJoin takes every kind of window")
		}
	}
	if err := w.strict("tumbling"); err != nil {
		return 0, err
	}
	v := w.get("tumbling")
	if v == nil || isEmpty(v) {
		return 0, w.errf(v, "join.window.tumbling", "missing the window size, e.g. window: {tumbling: 1m}")
	}
	size, err := w.durationOf(v, "join.window.tumbling")
	if err == nil && size <= 0 {
		return 0, w.errf(v, "join.window.tumbling", "expected a size above 0, got %q", v.Value)
	}
	return size, err
}

// joinKind reads the join's kind and lateness.
func (p *parser) joinKind(jn *node, dst **Join, jo *Join) error {
	k, kn, err := jn.str("kind")
	if err != nil {
		return err
	}
	switch k {
	case "":
	case JoinInner, JoinLeftOuter, JoinAnti:
		jo.Kind = k
	default:
		return jn.errf(kn, "join.kind", "expected inner, left_outer or anti, got %q", k)
	}
	if jo.AllowedLateness, _, err = jn.duration("allowed_lateness"); err != nil {
		return err
	}
	*dst = jo
	return nil
}

// checkJoinOutputs refuses an output a join's or a lookup's records
// cannot go to: they are JSON lines, for a file, standard output or a
// Kafka topic.
func (p *parser) checkJoinOutputs(j *Job) error {
	what := "a join's"
	switch {
	case j.Lookup != nil:
		what = "a lookup's"
	case j.Join == nil:
		return nil
	}
	for _, o := range j.AllOutputs() {
		switch {
		case o.Table != nil:
			return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: fmt.Sprintf("a table holds an aggregation's results: give %s output a file or a Kafka topic", what)}
		case o.Custom != nil:
			return &Error{File: p.file, Line: o.Line, Field: o.Field, Msg: fmt.Sprintf("%s records go to a file or a Kafka topic, not yet to %s", what, o.Custom.Kind)}
		case o.Kafka != nil && o.Kafka.Format != "" && o.Kafka.Format != "json":
			return &Error{File: p.file, Line: o.Line, Field: o.Field + ".kafka.format", Msg: what + " records are JSON: leave format out"}
		}
	}
	return nil
}

// inputFile is a file the job reads, with the field that names it.
type inputFile struct{ path, field string }

// inputFiles are the files the job reads: its source's, and its join's
// other input's.
func (j *Job) inputFiles() []inputFile {
	var out []inputFile
	for i, in := range []*Job{j, j.joinWith()} {
		if in != nil && in.Input != "-" && in.Input != "" {
			out = append(out, inputFile{in.Input, []string{"source.file", "join.with.source.file"}[i]})
		}
	}
	return out
}

// is says what the input is, in a refusal of an output that is it.
func (f inputFile) is() string {
	if f.field == "source.file" {
		return "is the input file"
	}
	return "is the input file of join.with"
}

// joinWith is the join's other input, nil without a join.
func (j *Job) joinWith() *Job {
	if j.Join == nil {
		return nil
	}
	return j.Join.With
}
