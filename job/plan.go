package job

import (
	"context"
	"fmt"
	"runtime"
	"strconv"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/translate"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// The nodes of a job file's plan, by their names: the one source, and of
// a job of one aggregation, its windows and, with having, the filter of
// its panes. A job of several names each aggregation's nodes by the
// aggregation (aggregationID).
const (
	nodeInput  = "input"
	nodeWindow = "window"
	nodeHaving = "having"
)

// aggregationID is the plan node of j's aggregation: "window" in a job of
// one (as its checkpoints have always named it), the aggregation's name in
// a job of several, so that a savepoint restores each by its name.
func aggregationID(j *jobfile.Job) plan.ID {
	if j.Several() {
		return plan.ID{Kind: plan.KindAggregation, Name: j.Aggregation}
	}
	return plan.ID{Kind: plan.KindAggregation, Name: nodeWindow}
}

// Plan is the plan the job file compiles to: what weir plan prints, and
// what Build hands the translator.
func Plan(j *jobfile.Job) *plan.Graph { return newRunnable(j, Options{}).plan() }

// plan compiles the job into a plan whose nodes the runnable builds: its
// source, each aggregation with its having and its outputs, each a sink of
// the port it writes (results, late events, rejected lines, dead letters).
func (rn *Runnable) plan() *plan.Graph {
	j := rn.j
	switch {
	case j.Join != nil:
		return rn.joinPlan()
	case j.Lookup != nil:
		return rn.lookupPlan()
	}
	g := &plan.Graph{Name: j.Name}
	src := plan.ID{Kind: plan.KindSource, Name: nodeInput}
	g.Add(&plan.Node{ID: src, Label: "source", Op: sourceOp(j), Impl: &sourceNode{rn: rn}})
	var refusing []plan.Input
	add := func(a *Runnable, o *jobfile.Output, in plan.Input, role outputRole) {
		key, former := recordKey(j, o)
		id := plan.ID{Kind: plan.KindSink, Name: key}
		g.Add(&plan.Node{ID: id, Label: o.Field, Inputs: []plan.Input{in}, Op: &plan.Sink{Connector: o.Destination().Connector(), Writes: o.Kind(), Former: former},
			Impl: &sinkNode{rn: a, o: o, role: role}})
		if role == roleResults || role == roleLate {
			refusing = append(refusing, plan.Input{From: id, Port: plan.Refused})
		}
	}
	for _, a := range rn.aggregations() {
		win, results := a.planAggregation(g, src)
		for i := range a.j.Outputs {
			add(a, &a.j.Outputs[i], results, roleResults)
		}
		if a.j.Late != nil {
			add(a, a.j.Late, plan.Input{From: win, Port: plan.Late}, roleLate)
		}
	}
	if j.Rejects != nil {
		add(rn, j.Rejects, plan.Input{From: src, Port: plan.Rejected}, roleRejected)
	}
	if j.DeadLetter != nil {
		add(rn, j.DeadLetter, plan.Input{}, roleDead)
		g.Nodes[len(g.Nodes)-1].Inputs = refusing
	}
	return g
}

// planAggregation adds the runnable's aggregation to g, fed by src: its
// windows and its having. It returns the windows' node and where the
// results come from.
func (rn *Runnable) planAggregation(g *plan.Graph, src plan.ID) (plan.ID, plan.Input) {
	j := rn.j
	win := aggregationID(j)
	label := "window"
	if j.Several() {
		label = "aggregation " + j.Aggregation
	}
	agg := &plan.Aggregation{Strategy: j.Window, Watermark: j.Watermark, Format: codecFormat, Parallelism: j.Parallelism,
		Layout: timeLayout(j, plan.Setting{Field: "key", Value: orNone(j.KeyName())}),
		Settings: append(expressionSettings(j), []plan.Setting{
			{Field: "having", Value: orNone(j.Having)},
			translate.ParallelismSetting(j.Parallelism),
			{Field: fieldBackend, Value: j.State.Backend},
			{Field: "version", Value: strconv.FormatInt(j.Version, 10)},
		}...),
		// A group's task follows the group's watermark while its
		// partition is idle (when the group shares them).
		Follows: true,
	}
	if j.Watermark.Kind == watermark.Scripted {
		agg.WatermarkFrom = j.WMField.String()
	}
	if j.ID != nil {
		agg.Dedup = &plan.Dedup{Field: j.ID.String(), Horizon: j.DedupHorizon, Version: j.VersionField.String()}
	}
	for _, a := range j.Aggregates {
		agg.Values = append(agg.Values, plan.Setting{Field: aggPrefix + a.Name, Value: a.String()})
	}
	g.Add(&plan.Node{ID: win, Label: label, Inputs: []plan.Input{{From: src}}, Op: agg, Impl: &windowNode{rn: rn}})
	results := plan.Input{From: win}
	if j.Having != "" {
		h := plan.ID{Kind: plan.KindTransform, Name: nodeHaving}
		if j.Several() {
			h.Name += ":" + j.Aggregation
		}
		g.Add(&plan.Node{ID: h, Label: "having", Inputs: []plan.Input{results}, Op: &plan.Transform{Does: "having " + j.Having}, Impl: &havingNode{rn: rn}})
		results = plan.Input{From: h}
	}
	return win, results
}

// expressionSettings are the job's where and derived fields, as a restore
// reports their changes (none when it has neither: a job before them
// describes the same).
func expressionSettings(j *jobfile.Job) []plan.Setting {
	var out []plan.Setting
	if j.Ingestion {
		out = append(out, plan.Setting{Field: "time", Value: ingestionTime})
	}
	for _, f := range j.Fields {
		out = append(out, plan.Setting{Field: "fields." + f.Name, Value: f.Expr.String()})
	}
	if j.Where != nil {
		out = append(out, plan.Setting{Field: "where", Value: j.Where.String()})
	}
	if j.Heartbeat != nil {
		out = append(out, plan.Setting{Field: "heartbeat", Value: j.Heartbeat.String()})
	}
	if j.Deletion != nil {
		out = append(out, plan.Setting{Field: "deletion", Value: j.Deletion.String()})
	}
	return out
}

// sourceOp is what the plan says of the source of j: what it reads, and
// in which format.
func sourceOp(j *jobfile.Job) *plan.Source {
	connector, reads, _ := sourceNames(j)
	read := &plan.Source{Connector: connector, Reads: reads, Format: "json"}
	if j.Format != nil {
		read.Format = j.Format.Config.Describe()
	}
	return read
}

// sourceNames name the job's source, read in one place: connector is its
// kind as a plan shows it (file, stdin, kafka or a registered kind's),
// reads what it reads as the plan says it, head the name the head gives
// its records' source (a path, a topic, a registered kind's Reads).
func sourceNames(j *jobfile.Job) (connector, reads, head string) {
	switch {
	case j.Kafka != nil:
		return "kafka", "kafka topic " + j.Kafka.Topic, j.Kafka.Topic
	case j.Custom != nil:
		return j.Custom.Kind, j.InputName(), j.Custom.Config.Reads()
	case j.Input == "-":
		return "stdin", j.InputName(), j.Input
	}
	return "file", j.InputName(), j.Input
}

// outputRole is what an output of a job file writes.
type outputRole uint8

const (
	roleResults outputRole = iota
	roleLate
	roleRejected
	roleDead
	roleJoined       // a join's records
	roleJoinLate     // the records too late for a join
	roleLooked       // a lookup's records with their rows
	roleLookupFailed // a lookup's dead letters
	roleLookupAside  // the records set aside before a lookup
)

// sourceNode builds the job's source: the file, standard input or the
// Kafka topic, read through the head (decode, validate, account,
// de-duplicate) into the window stage.
type sourceNode struct{ rn *Runnable }

func (s *sourceNode) Build(c *translate.Ctx) error {
	rn := s.rn
	j, e := rn.j, c.Engine()
	var quarantine engine.Consumer[engine.RejectedRecord]
	for _, q := range c.Consumers(plan.Rejected) {
		quarantine = q.(engine.Consumer[engine.RejectedRecord])
	}
	_, _, srcName := sourceNames(j)
	var heads []engine.RecordHandler
	for i, a := range rn.aggregations() {
		agg := c.Plan().Node(aggregationID(a.j))
		hcfg := engine.HeadConfig[string, record]{Name: translate.HeadName(agg.ID), Source: srcName, Decoder: a.decoder(a.lp), Window: a.win, Dedup: a.dd,
			GroupWatermark: c.GroupWatermark(agg)}
		if i == 0 {
			// The aggregations read the same records: one quarantines
			// them, the others count them.
			hcfg.Quarantine = quarantine
		}
		if a.j.Several() {
			hcfg.Aggregation, hcfg.Beside = a.j.Aggregation, i > 0
		}
		if a.j.VersionField != nil {
			hcfg.Versions = a.lp.versions()
		}
		hcfg.Decoders = rn.decoders()
		a.lp.decodeOn(hcfg.Decoders)
		if j.Watermark.Kind == watermark.Perfect {
			// By the events of this aggregation: its key and its where
			// say which lines are.
			future, err := perfectWatermarks(a.j)
			if err != nil {
				return err
			}
			hcfg.WatermarkAfter = func(line int64) mtime.Time { return perfectAt(future, line) }
		}
		var err error
		if a.head, err = engine.NewHead(e, hcfg); err != nil {
			return &RuntimeError{Msg: err.Error(), Err: err}
		}
		a.restoredRead = a.head.Counts().Read // what earlier runs read
		heads = append(heads, a.head)
	}
	src, err := rn.sourceOf(j, rn.lp.format)
	if err != nil {
		return err
	}
	if err := e.AddSource(c.Node().ID.Name, src, engine.Fan(heads...)); err != nil {
		return err
	}
	for _, a := range rn.aggregations() {
		e.OnSignal(a.head)
	}
	return nil
}

// sourceOf is the source of the input in (the job's, or its join's other
// input): its file, standard input, its topic or a registered kind's
// source. dec is its records' decoder: a file of a format whose rows it
// decodes is read as its records' bytes.
func (rn *Runnable) sourceOf(in *jobfile.Job, dec plan.Decoder) (connector.Source, error) {
	o := rn.o
	switch {
	case in.Kafka != nil:
		ks := &kafka.Source{Config: in.Kafka.KafkaConn, Start: in.Kafka.Start, SkipGaps: in.Kafka.SkipGaps}
		ks.Log = func(s string) { rn.logf("%s", s) }
		if o.task != nil {
			ks.Txn = o.task.Txn
		}
		return ks, nil
	case in.Custom != nil:
		field := "source"
		if in != rn.j {
			field = "join.with.source"
		}
		cs, err := in.Custom.Config.New(rn.kindEnv(field))
		if err != nil {
			return nil, &RuntimeError{Msg: fmt.Sprintf("%s: %s: %v", rn.j.File, field, err), Err: err}
		}
		return cs, nil
	case in.Input == "-":
		return &file.Reader{Name: "standard input", R: o.Stdin}, nil
	case in.Format != nil && in.Format.File() != nil:
		return &formats.FileSource{Path: in.Input, Format: in.Format.File(), Decoder: dec}, nil
	}
	fs := &file.Source{Path: in.Input, Follow: in.Follow, AcceptChanged: o.AcceptChangedInput, Log: func(s string) { rn.logf("%s", s) }}
	if in == rn.j {
		rn.fileSrc = fs
	} else if rn.jn != nil {
		rn.jn.withSrc = fs
	}
	return fs, nil
}

// windowNode builds the job's window stage: its state backend, its
// de-duplication ids (which the head keeps), and the stage itself, whose
// panes go to the having or to the results' outputs, and whose too-late
// events to the late output.
type windowNode struct{ rn *Runnable }

func (w *windowNode) Build(c *translate.Ctx) error {
	rn := w.rn
	j, e, lp := rn.j, c.Engine(), rn.lp
	wcfg := engine.WindowConfig[string, record, acc, []outVal]{
		Name: c.Participant(), Strategy: j.Window, Watermark: j.Watermark, Parallelism: j.Parallelism,
		NewAgg: func() aggregate.Func[record, acc, []outVal] {
			return newAggs(lp.agg.list, lp.agg.field)
		},
		Hash: hashString, Codec: newCodec(j),
	}
	if rn.restoreCodec != nil {
		wcfg.RestoreCodec = *rn.restoreCodec
	}
	if j.State.Backend == "pebble" {
		if err := rn.openState(lp); err != nil {
			return err
		}
		wcfg.State = rn.db
	}
	if j.ID != nil {
		if rn.db != nil {
			rn.dd = rn.db.Dedup(j.DedupHorizon)
		} else {
			rn.dd = state.NewMemoryDedup(j.DedupHorizon)
		}
	}
	var err error
	if rn.win, err = engine.NewWindow(e, wcfg); err != nil {
		return &RuntimeError{Msg: err.Error(), Err: err}
	}
	if j.Having == "" {
		rn.win.Panes.Subscribe(rn.results(c.Consumers(plan.Main)))
	} else {
		for _, h := range c.Consumers(plan.Main) {
			rn.win.Panes.Subscribe(h.(engine.Consumer[pane]))
		}
	}
	for _, l := range c.Consumers(plan.Late) {
		rn.win.Late.Subscribe(partlyLate(l.(engine.Consumer[lateEvent]), j.WritePartlyLate))
	}
	if rn.recLate != nil {
		rn.win.Late.Subscribe(partlyLate(engine.Func[lateEvent]{OnPush: rn.recLate.Add}, j.WritePartlyLate))
	}
	c.SetInput(rn.win)
	return nil
}

// partlyLate is c, passed the events accepted into some of their windows
// and too late for the others only if write: they are counted either way.
func partlyLate(c engine.Consumer[lateEvent], write bool) engine.Consumer[lateEvent] {
	if write {
		return c
	}
	return engine.Func[lateEvent]{
		OnPush: func(l lateEvent) {
			if !window.PartlyTaken(l.Reason) {
				c.Push(l)
			}
		},
		OnSignal: c.Signal,
	}
}

// results is where the panes the outputs get go: to the outputs given, to
// the acceptance record's tally, and to the console's recent panes.
func (rn *Runnable) results(outputs []any) engine.Consumer[pane] {
	fan := &engine.Stream[pane]{}
	for _, o := range outputs {
		fan.Subscribe(o.(engine.Consumer[pane]))
	}
	if rn.accept != nil {
		fan.Subscribe(rn.accept)
	}
	if rn.recent != nil {
		fan.Subscribe(engine.Func[pane]{OnPush: rn.recent.Add}) // what the outputs get: after having
	}
	return fan
}

// havingNode builds the filter of the panes by the having expression.
type havingNode struct{ rn *Runnable }

func (h *havingNode) Build(c *translate.Ctx) error {
	rn := h.rn
	expr, err := compileHaving(rn.j.Having, rn.j.Aggregates)
	if err != nil {
		return err
	}
	rn.having = &havingFilter{j: rn.j, h: expr, next: rn.results(c.Consumers(plan.Main)), log: func(s string) { rn.logf("%s", s) }}
	c.SetInput(rn.having)
	return nil
}

// sinkNode builds one output: its connector's sink, in the engine under
// its record name, handing what it refuses to the dead letters.
type sinkNode struct {
	rn   *Runnable
	o    *jobfile.Output
	role outputRole
}

func (s *sinkNode) Build(c *translate.Ctx) error {
	rn, j, o, e := s.rn, s.rn.j, s.o, c.Engine()
	var dead *deadLetters
	for _, d := range c.Consumers(plan.Refused) {
		dead = d.(*deadLetters)
	}
	f := newFormat(j, rn.formatDecoder())
	switch s.role {
	case roleResults:
		var n *engine.SinkNode[pane]
		var err error
		if _, ok := o.Destination().(*jobfile.TableOutput); ok {
			// A table upserts each pane's fields, not its line.
			ts := newTableSink(j, o, e.Checkpointed(), rn.partial, rn.former, func(s string) { rn.logf("%s", s) })
			if n, err = engine.NewSink[pane](e, o.Field, ts, recordName(j, o)); err != nil {
				return setupError(j, err)
			}
		} else if n, err = outputSink(rn, o, writer[pane]{f.appendPane, f.paneRecord, f.paneItem, paneID}); err != nil {
			return err
		}
		rn.outs = append(rn.outs, n)
		if dead != nil {
			dead.addPanes(n, newFormat(j, rn.formatDecoder()))
		}
		c.SetInput(n)
	default:
		// The other roles' items are formatted as they come, and written
		// by one kind of sink.
		n, err := outputSink(rn, o, itemWriter)
		if err != nil {
			return err
		}
		switch s.role {
		case roleLate:
			rn.late = n
			if dead != nil {
				dead.addLate(n)
			}
			c.SetInput(formatted[lateEvent]{n, f.lateItem})
		case roleRejected:
			c.SetInput(formatted[engine.RejectedRecord]{n, f.rejectedItem})
		case roleJoined:
			rn.jn.outs = append(rn.jn.outs, n)
			c.SetInput(formatted[joined]{n, f.joinedItem})
		case roleJoinLate:
			rn.jn.late = n
			c.SetInput(formatted[joinLate]{n, f.joinLateItem})
		case roleDead:
			c.SetInput(newDeadLetters(formatted[deadRecord]{n, f.deadItem}))
		case roleLooked:
			rn.lk.outs = append(rn.lk.outs, n)
			c.SetInput(formatted[looked]{n, f.lookedItem})
		case roleLookupFailed:
			rn.lk.dead = n
			c.SetInput(formatted[lookFailed]{n, f.lookFailedItem})
		case roleLookupAside:
			rn.lk.late = n
			c.SetInput(formatted[passed]{n, f.asideItem})
		}
	}
	return nil
}

// itemWriter writes items formatted where they were made (formatted):
// every role's but the results', whose outputs format the panes as they
// write them (off the windows' goroutine), so that the sinks of the others
// are of one kind.
var itemWriter = writer[plan.Item]{
	line:   func(b []byte, it plan.Item) []byte { return append(append(b, it.JSON...), '\n') },
	record: func(it plan.Item) (key, value []byte) { return it.Key, it.JSON },
	item:   func(_ []byte, it plan.Item) plan.Item { return it },
	id:     func(it plan.Item) uint64 { return it.ID },
}

// formatted formats each item of T as its role has it (item), in memory of
// its own, and hands it on to an itemWriter's sink.
type formatted[T any] struct {
	next engine.Consumer[plan.Item]
	item func(b []byte, v T) plan.Item
}

func (f formatted[T]) Push(v T)               { f.next.Push(f.item(nil, v)) }
func (f formatted[T]) Signal(s engine.Signal) { f.next.Signal(s) }

// consoleTaps makes what the console shows of the recent panes and
// too-late events: a copy of each (its values in the slot's own memory),
// formatted when the console asks.
func (rn *Runnable) consoleTaps() {
	j := rn.j
	pf, lf := newFormat(j, rn.formatDecoder()), newFormat(j, rn.formatDecoder())
	rn.recent = console.NewRecent(50, func(dst *pane, src pane) {
		vals := append(dst.Value[:0], src.Value...)
		*dst = src
		dst.Value = vals
	}, func(b []byte, p *pane) []byte {
		b = pf.appendPane(b, *p)
		return b[:len(b)-1]
	})
	rn.recLate = console.NewRecent(50, func(dst *lateEvent, src lateEvent) {
		raw := append(dst.Value.raw[:0], src.Value.raw...)
		*dst = src
		dst.Value.raw, dst.Value.vals = raw, nil
	}, func(b []byte, l *lateEvent) []byte {
		b = lf.appendLate(b, *l)
		return b[:len(b)-1]
	})
}

// fileModes gives the job's output files its file_mode once the sinks have
// opened (and created) them: until then they are their owner's alone.
func (rn *Runnable) fileModes(e *engine.Engine) {
	j := rn.j
	if j.FileMode == 0 || rn.o.FS != nil {
		return
	}
	e.OnStart(func(context.Context) error {
		for _, out := range j.EveryOutput() {
			if out.File != "" && out.File != "-" {
				if err := setFileMode(out.File, j.FileMode); err != nil {
					return &RuntimeError{Msg: fmt.Sprintf("%s: file_mode: %s", out.Field, err), Err: err}
				}
			}
		}
		return nil
	})
}

// decoders is how many goroutines decode an input's records (Options.Decoders).
func (rn *Runnable) decoders() int {
	switch {
	case rn.o.task != nil:
		return 1 // the group's tasks run beside each other
	case rn.o.Decoders > 0:
		return rn.o.Decoders
	}
	return runtime.GOMAXPROCS(0)
}
