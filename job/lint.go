package job

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/expression"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/source"
)

// DefaultSample is how many lines of the input weir lint reads, and after
// how many weir run says what they show.
const DefaultSample = 1000

// AllQuarantinedLines is how many lines a job reads before it stops when
// every one of them was quarantined (unless told otherwise): a job whose
// key or time field is misspelt rejects its whole input.
const AllQuarantinedLines = 10_000

// Finding is one thing the first lines of the input show to be wrong with
// the job: a field it names that never occurs, an aggregate whose field is
// never a number.
type Finding struct {
	Field string // the job file's field: key, aggregates.spent
	Msg   string
}

// String is the finding as a log line says it: "key: ...".
func (f Finding) String() string { return f.Field + ": " + f.Msg }

// Sample is what the first lines of a job's input show: which of the
// fields the job names occur, which aggregates' fields are numbers, and
// how many lines would be quarantined, and why.
type Sample struct {
	// Lines counts the lines sampled: events and rejected lines (blank
	// lines and watermark-only lines are not counted, as in the summary).
	Lines int64
	// Quarantined counts the lines the job rejects, by reason.
	Quarantined map[string]int64
	// Source says where the lines came from, or why there are none.
	Source string

	live   bool             // the first lines of a run, not lint's sample: say so
	ended  bool             // the run's input ended: these are all its lines
	kafka  bool             // records of a topic: no line numbers
	first  map[string]int64 // the line of each reason's first rejection
	fields []*sampledField
	names  map[string]bool // every field path that occurs (to depth 3)
	p      fastjson.Parser
	// derive computes the job's derived fields (fields:) into each line
	// before its fields are looked for, as a run does; arena holds them.
	derive []jobfile.DerivedField
	arena  fastjson.Arena
	// schema holds the fields of the records' schema, by path, with
	// their JSON types, when the source is checked against its schema
	// rather than sampled (a topic of a format that knows its fields).
	schema     map[string]string
	schemaFrom string // what the schema is
	// keys are the first distinct keys of the events sampled (at most
	// maxSampleKeys): what weir lint looks up in a lookup's table.
	keys []string
}

// maxSampleKeys is how many keys a sample keeps.
const maxSampleKeys = 64

// key keeps the key of an event sampled.
func (s *Sample) key(d *engine.Decoded[string, record]) {
	if d.Kind == engine.Event && len(s.keys) < maxSampleKeys && !slices.Contains(s.keys, d.Key) {
		s.keys = append(s.keys, strings.Clone(d.Key))
	}
}

// sampledField is a field the job names, and how often it occurred.
type sampledField struct {
	setting string // the job file's field that names it
	what    string // for an aggregate: sum(amount)
	path    jobfile.Path
	numeric bool // an aggregate that needs a number
	present int64
	number  int64
	other   map[string]int64 // what it was when not a number, by JSON type
}

func newSample(j *jobfile.Job) *Sample {
	s := &Sample{Quarantined: map[string]int64{}, first: map[string]int64{}, names: map[string]bool{}, kafka: j.Kafka != nil}
	for _, f := range j.Fields {
		s.derive = append(s.derive, jobfile.DerivedField{Name: f.Name, Expr: f.Expr.Clone()})
	}
	add := func(setting string, p jobfile.Path) {
		if p != nil {
			s.fields = append(s.fields, &sampledField{setting: setting, path: p})
		}
	}
	if !j.RecordTime {
		add("time.field", j.TimeField)
	}
	add("time.arrival_field", j.ArrivalField)
	add("time.sent_field", j.SentField)
	add("time.partition_field", j.PartitionField)
	for _, k := range j.KeyFields() {
		add("key", k)
	}
	add("id", j.ID)
	add("watermark.from_field", j.WMField)
	// A condition that reads a field a record lacks does not hold for
	// it: a misspelt field would make no record a deletion, silently.
	if j.Deletion != nil {
		for _, f := range j.Deletion.Fields() {
			add("deletion", jobfile.ParsePath(f))
		}
	}
	for _, a := range j.Aggregates {
		if a.Kind == jobfile.AggCount {
			continue
		}
		f := &sampledField{setting: "aggregates." + a.Name, what: aggText(a), path: a.Field, other: map[string]int64{}}
		f.numeric = a.Kind == jobfile.AggSum || a.Kind == jobfile.AggMin || a.Kind == jobfile.AggMax || a.Kind == jobfile.AggAvg ||
			a.Kind == jobfile.AggPercentile || a.Kind == jobfile.AggMedian || a.Kind == jobfile.AggHistogram
		s.fields = append(s.fields, f)
	}
	return s
}

// schemaSample is the sample of a topic whose format knows its records'
// fields: no record is read; the fields the job names are checked against
// the schema's (the registry's latest of the subject, or the schema file).
// A schema that cannot be had is said, and checks nothing.
func schemaSample(j *jobfile.Job, s *Sample, fl plan.FieldLister) (*Sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	fields, from, err := fl.Fields(ctx, j.Kafka.Topic)
	if err != nil {
		s.Source = fmt.Sprintf("none: the records' schema cannot be read (%v); weir run says what the first records show", err)
		return s, nil
	}
	s.schema, s.schemaFrom, s.Source = fields, from, "none: the job's fields checked against "+from
	return s, nil
}

// schemaFindings are the problems the records' schema shows: a field the
// job names that the schema lacks (a derived field is the job's own), an
// aggregate that needs a number over a field the schema says is not one.
func (s *Sample) schemaFindings() []Finding {
	known := make([]string, 0, len(s.schema))
	for n := range s.schema {
		known = append(known, n)
	}
	sort.Strings(known)
	derived := map[string]bool{}
	for _, f := range s.derive {
		derived[f.Name] = true
	}
	var out []Finding
	for _, f := range s.fields {
		if derived[f.path[0]] {
			continue
		}
		lead := ""
		if f.what != "" {
			lead = f.what + ": "
		}
		p := f.path.String()
		t, ok := s.schema[p]
		switch {
		case !ok && s.underUnlisted(f.path):
			// Under a map, or deeper than the fields listed: not checked.
		case !ok:
			msg := fmt.Sprintf("%sthe field %q is not in %s", lead, p, s.schemaFrom)
			if sug := text.Suggest(p, known); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			}
			out = append(out, Finding{f.setting, msg})
		case f.numeric && t != "" && t != "number":
			out = append(out, Finding{f.setting, fmt.Sprintf("%s%q is a %s in %s, never a number: such records are quarantined as bad_value",
				lead, p, t, s.schemaFrom)})
		}
	}
	return out
}

// underUnlisted reports whether the path is under an object of the schema
// whose fields it does not list (a map, or a record deeper than the
// levels listed), where any field may be.
func (s *Sample) underUnlisted(p jobfile.Path) bool {
	for i := len(p) - 1; i > 0; i-- {
		prefix := p[:i].String()
		if t, ok := s.schema[prefix]; ok {
			if t != "object" {
				return false
			}
			for name := range s.schema {
				if strings.HasPrefix(name, prefix+".") {
					return false
				}
			}
			return true
		}
	}
	return false
}

// aggText is an aggregate as a job file writes it.
func aggText(a jobfile.Aggregate) string { return a.String() }

// observe takes one line of the input with what the job made of it.
func (s *Sample) observe(raw []byte, kind engine.DecodedKind, reason string, line int64) {
	switch kind {
	case engine.Blank, engine.WatermarkOnly, engine.Heartbeat:
		if kind != engine.Blank {
			s.seen(raw) // the watermark field occurs
		}
		return
	case engine.Rejected:
		if s.Quarantined[reason]++; s.Quarantined[reason] == 1 {
			s.first[reason] = line
		}
	}
	s.Lines++
	s.seen(raw)
}

// seen counts the fields of the job that a line has, and notes every field
// it has.
func (s *Sample) seen(raw []byte) {
	v, err := s.p.ParseBytes(raw)
	if err != nil || v.Type() != fastjson.TypeObject {
		return
	}
	// The derived fields join the line as they do in a run (one that
	// fails is a quarantined line, which the run's reasons count).
	s.arena.Reset()
	for _, f := range s.derive {
		if val, err := f.Expr.Eval(v); err == nil {
			expression.Set(v, f.Name, val, &s.arena)
		}
	}
	if len(s.names) < 10_000 {
		notePaths(s.names, "", v, 3)
	}
	for _, f := range s.fields {
		fv := source.Get(v, f.path)
		if fv == nil || fv.Type() == fastjson.TypeNull {
			continue
		}
		f.present++
		if fv.Type() == fastjson.TypeNumber {
			f.number++
		} else if f.other != nil {
			f.other[fv.Type().String()]++
		}
	}
}

func notePaths(names map[string]bool, prefix string, v *fastjson.Value, depth int) {
	o, err := v.Object()
	if err != nil || depth == 0 {
		return
	}
	o.Visit(func(k []byte, c *fastjson.Value) {
		p := string(k)
		if prefix != "" {
			p = prefix + "." + p
		}
		names[p] = true
		notePaths(names, p, c, depth-1)
	})
}

// Findings are the problems the sample shows: a field the job names that
// occurs in no line, an aggregate whose field is never a number, every
// line quarantined.
func (s *Sample) Findings() []Finding {
	if s.schema != nil {
		return s.schemaFindings()
	}
	if s.Lines == 0 {
		return nil
	}
	known := make([]string, 0, len(s.names))
	for n := range s.names {
		known = append(known, n)
	}
	sort.Strings(known)
	var out []Finding
	for _, f := range s.fields {
		lead := ""
		if f.what != "" {
			lead = f.what + ": "
		}
		switch {
		case f.present == 0:
			msg := fmt.Sprintf("%sthe field %q occurs in none of %s", lead, f.path.String(), s.which())
			if sug := text.Suggest(f.path.String(), known); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			}
			out = append(out, Finding{f.setting, msg})
		case f.numeric && f.number == 0:
			var kinds []string
			for k, n := range f.other {
				kinds = append(kinds, fmt.Sprintf("%s in %d", k, n))
			}
			sort.Strings(kinds)
			out = append(out, Finding{f.setting, fmt.Sprintf("%s%q is never a number in %s (%s): such lines are quarantined as bad_value",
				lead, f.path.String(), s.which(), strings.Join(kinds, ", "))})
		}
	}
	if q := s.quarantined(); q == s.Lines {
		out = append(out, Finding{"", fmt.Sprintf("every one of %s would be quarantined: %s", s.which(), s.reasons())})
	}
	return out
}

// which names the lines sampled: "the 1000 lines sampled", or in a run
// "the first 1000 lines".
func (s *Sample) which() string {
	if s.ended {
		return "the " + s.lines(s.Lines) + " read"
	}
	if s.live {
		return "the first " + s.lines(s.Lines)
	}
	return "the " + s.lines(s.Lines) + " sampled"
}

func (s *Sample) lines(n int64) string {
	unit := "line"
	if s.kafka {
		unit = "record"
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s", n, unit)
}

func (s *Sample) quarantined() int64 {
	var n int64
	for _, c := range s.Quarantined {
		n += c
	}
	return n
}

// reasons are the quarantine's reasons, the commonest first, each with the
// line of its first occurrence: "no_key 1000 (the first at line 1)".
func (s *Sample) reasons() string {
	type rc struct {
		r string
		n int64
	}
	var list []rc
	for r, n := range s.Quarantined {
		list = append(list, rc{r, n})
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].n != list[b].n {
			return list[a].n > list[b].n
		}
		return list[a].r < list[b].r
	})
	var parts []string
	for _, x := range list {
		if s.kafka {
			parts = append(parts, fmt.Sprintf("%s %d", x.r, x.n))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d (the first at line %d)", x.r, x.n, s.first[x.r]))
		}
	}
	return strings.Join(parts, ", ")
}

// Report is the sample as weir lint prints it: what was read, the share of
// lines quarantined by reason, then each finding.
func (s *Sample) Report() string {
	var b strings.Builder
	if s.Lines == 0 {
		fmt.Fprintf(&b, "sample: %s\n", s.Source)
		return b.String()
	}
	fmt.Fprintf(&b, "sample: the first %s of %s\n", s.lines(s.Lines), s.Source)
	if q := s.quarantined(); q > 0 {
		fmt.Fprintf(&b, "quarantined: %.2f%% of the lines sampled: %s\n", 100*float64(q)/float64(s.Lines), s.reasons())
	} else {
		b.WriteString("quarantined: none of the lines sampled\n")
	}
	return b.String()
}

// SampleInput reads the first n lines of the job's input file and says
// what they show. A Kafka topic and standard input are not sampled (weir
// run says what their first lines show).
func SampleInput(j *jobfile.Job, n int) (*Sample, error) {
	s := newSample(j)
	switch {
	case j.Kafka != nil:
		if fl, ok := j.Format.FieldLister(); ok {
			return schemaSample(j, s, fl)
		}
		s.Source = "none: the input is a Kafka topic (weir run says what its first records show)"
		return s, nil
	case j.Custom != nil:
		s.Source = "none: the input is " + j.Custom.Config.Reads() + " (weir run says what its first records show)"
		return s, nil
	case j.Input == "-":
		s.Source = "none: the input is standard input (weir run says what its first lines show)"
		return s, nil
	case j.Format != nil && j.Format.File() != nil:
		return sampleRows(j, s, n)
	}
	f, err := os.Open(j.Input)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s.Source = j.InputName()
	lp := newLineParser(j)
	ls := source.NewLines(f, 1<<20, 0, 0)
	now := mtime.Now()
	var d engine.Decoded[string, record]
	for s.Lines < int64(n) {
		l, ok := ls.Next()
		if !ok {
			break
		}
		r := connector.Record{Value: l.Text, Offset: l.No, Arrival: now, Timestamp: mtime.MinTime}
		d = engine.Decoded[string, record]{}
		lp.Decode(&r, &d)
		s.observe(l.Text, d.Kind, d.Reason, l.No)
		s.key(&d)
	}
	if err := ls.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// lineWatch is a job's decoder while its first lines come: after
// DefaultSample lines (or at the end of a shorter input) it says what they
// show; it stops a job whose first AllQuarantinedLines lines were all
// quarantined, and fails one that quarantined every line of its input
// (started afresh), unless allowAll.
type lineWatch struct {
	*lineParser
	s        *Sample
	log      func(string)
	fail     func(error)
	allowAll bool
	resumed  bool // the job resumed: its earlier lines were read by another run
	said     bool // the sample's findings were said
	done     bool // nothing more to watch
}

// Decode implements engine.Decoder.
func (w *lineWatch) Decode(r *connector.Record, d *engine.Decoded[string, record]) {
	w.lineParser.decode(r, d)
	w.Settle(r, d)
}

// Settle implements engine.ForkingDecoder: the line's routing, and the
// sample of the first lines, in arrival order.
func (w *lineWatch) Settle(r *connector.Record, d *engine.Decoded[string, record]) {
	w.lineParser.Settle(r, d)
	if w.done {
		return
	}
	raw := r.Value
	if w.format != nil && d.Kind == engine.Event {
		// The record's JSON, which the format made of it.
		if text, err := w.recordText(d.Value); err == nil {
			raw = text
		}
	}
	w.s.observe(raw, d.Kind, d.Reason, r.Offset)
	if w.s.Lines == DefaultSample {
		w.flush()
	}
	q := w.s.quarantined()
	switch {
	case q < w.s.Lines && w.said:
		w.done = true // an event came: the job is not rejecting everything
	case q == w.s.Lines && w.s.Lines == AllQuarantinedLines:
		w.done = true
		if !w.allowAll {
			w.fail(w.allQuarantined("the job stops"))
		}
	}
}

// allQuarantined is the error of a job whose lines were all quarantined,
// with what the sample shows.
func (w *lineWatch) allQuarantined(what string) error {
	msg := fmt.Sprintf("every one of %s was quarantined: %s", w.s.which(), w.s.reasons())
	for _, f := range w.s.Findings() {
		if f.Field != "" {
			msg += "; " + f.String()
		}
	}
	return &RuntimeError{Msg: msg + "; " + what + " (weir run --allow-all-quarantined runs it all the same)"}
}

// end is the end of the input: what a short input showed is said, and a
// job that quarantined every line of its input fails.
func (w *lineWatch) end() {
	w.flush()
	if w.done || w.resumed || w.allowAll || w.s.Lines == 0 || w.s.quarantined() < w.s.Lines {
		return
	}
	w.done, w.s.ended = true, true
	w.fail(w.allQuarantined("the job failed"))
}

// flush says what the lines so far show, once.
func (w *lineWatch) flush() {
	if w.said || w.s.Lines == 0 {
		return
	}
	w.said = true
	for _, f := range w.s.Findings() {
		if f.Field == "" {
			continue // all quarantined: said when the job stops, or as the summary shows
		}
		w.log("warning: " + f.String())
	}
	if q := w.s.quarantined(); w.s.Lines >= 100 && 10*q >= w.s.Lines && q < w.s.Lines {
		w.log(fmt.Sprintf("warning: %.0f%% of %s were quarantined: %s", 100*float64(q)/float64(w.s.Lines), w.s.which(), w.s.reasons()))
	}
}

// decoder is the job's line decoder, watched during its first lines
// (lineWatch); a task of a group job is not watched.
func (rn *Runnable) decoder(lp *lineParser) engine.Decoder[string, record] {
	if rn.o.task != nil {
		return lp
	}
	w := &lineWatch{lineParser: lp, s: newSample(rn.j), allowAll: rn.o.AllowAllQuarantined, fail: rn.e.Fail,
		resumed: rn.e.Resumed() != nil, log: func(s string) { rn.logf("%s", s) }}
	w.s.live = true
	// An input shorter than the sample: said at its end, before the summary.
	rn.e.OnSignal(engine.Func[struct{}]{OnPush: func(struct{}) {}, OnSignal: func(s engine.Signal) {
		if s.Kind == engine.End {
			w.end()
		}
	}})
	return w
}

// In is f as weir lint prints it for job j: "job.yaml:7: key: ...", with
// the line of the field in the file (file names it).
func (f Finding) In(j *jobfile.Job, file string) string {
	e := &jobfile.Error{File: file, Line: j.LineOf(f.Field), Field: f.Field, Msg: f.Msg}
	return j.Redact(e.Error())
}
