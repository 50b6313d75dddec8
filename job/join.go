package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/translate"
)

// A job with a join (jobfile.Join) reads two inputs, each through a head
// of its own (decode, validate, account, as an aggregation's head does),
// into an interval join, whose records go to the outputs and whose
// records too late to join go to the late output. The plan's nodes: the
// two sources, "input" (the left input) and "with" (the right one), the
// join, and the outputs.
const (
	nodeWith = "with"
	nodeJoin = "join"
)

type (
	joined   = engine.Joined[string, record, record]
	joinLate = engine.JoinLate[string, record, record]
)

// joinRun is what a job with a join builds besides the runnable's engine:
// the other input's job and parser, the heads of both inputs, the join,
// and its outputs.
type joinRun struct {
	with         *jobfile.Job
	lp, rlp      *lineParser
	heads        [2]*engine.Head[string, record]
	join         *engine.Join[string, record, record]
	outs         []*engine.SinkNode[plan.Item]
	late         *engine.SinkNode[plan.Item]
	restoredRead [2]int64
	withSrc      *file.Source // the other input, when it is a file
	// What the console shows: the recent records, and the recent
	// records too late (Options.Console), as their outputs have them.
	recent, recLate *console.Recent[plan.Item]
}

// joinPlan is the plan of a job with a join.
func (rn *Runnable) joinPlan() *plan.Graph {
	j := rn.j
	jo := j.Join
	g := &plan.Graph{Name: j.Name}
	var ins []plan.Input
	for i, side := range []*jobfile.Job{j, jo.With} {
		id := plan.ID{Kind: plan.KindSource, Name: []string{nodeInput, nodeWith}[i]}
		g.Add(&plan.Node{ID: id, Label: []string{"source", "join.with"}[i], Op: sourceOp(side), Impl: &joinSourceNode{rn: rn, side: i}})
		ins = append(ins, plan.Input{From: id})
	}
	join := plan.ID{Kind: plan.KindJoin, Name: nodeJoin}
	op := &plan.Join{Lower: jo.Lower, Upper: jo.Upper, Temporal: jo.Temporal, Window: jo.Window, Mode: jo.Kind, Lateness: jo.AllowedLateness, Watermark: j.Watermark,
		Format: joinFormat, Parallelism: j.Parallelism,
		Layout: []plan.Setting{{Field: "key", Value: j.KeyName()}, {Field: "with.key", Value: jo.With.KeyName()}},
		Settings: append(append(expressionSettings(j), prefixed("with.", expressionSettings(jo.With))...),
			translate.ParallelismSetting(j.Parallelism)),
	}
	op.Heads = []string{headName(0), headName(1)}
	if j.ID != nil || jo.With.ID != nil {
		for _, side := range []*jobfile.Job{j, jo.With} {
			var d *plan.Dedup
			if side.ID != nil {
				d = &plan.Dedup{Field: side.ID.String(), Horizon: side.DedupHorizon}
			}
			op.Dedup = append(op.Dedup, d)
		}
	}
	g.Add(&plan.Node{ID: join, Label: "join", Inputs: ins, Op: op, Impl: &joinNode{rn: rn}})
	add := func(o *jobfile.Output, ins []plan.Input, role outputRole) {
		key, former := recordKey(j, o)
		g.Add(&plan.Node{ID: plan.ID{Kind: plan.KindSink, Name: key}, Label: o.Field, Inputs: ins,
			Op: &plan.Sink{Connector: o.Destination().Connector(), Writes: o.Kind(), Former: former}, Impl: &sinkNode{rn: rn, o: o, role: role}})
	}
	for i := range j.Outputs {
		add(&j.Outputs[i], []plan.Input{{From: join}}, roleJoined)
	}
	if j.Late != nil {
		add(j.Late, []plan.Input{{From: join, Port: plan.Late}}, roleJoinLate)
	}
	if j.Rejects != nil {
		add(j.Rejects, []plan.Input{{From: ins[0].From, Port: plan.Rejected}, {From: ins[1].From, Port: plan.Rejected}}, roleRejected)
	}
	return g
}

// headName is the name of the head of a join's input side (0 the job's
// source, 1 join.with) in checkpoints.
func headName(side int) string {
	if side == 0 {
		return "head"
	}
	return "head:" + nodeWith
}

// prefixed is settings with their fields prefixed.
func prefixed(prefix string, settings []plan.Setting) []plan.Setting {
	for i := range settings {
		settings[i].Field = prefix + settings[i].Field
	}
	return settings
}

// joinFormat is the format of a join's state the codec writes (joinCodec).
const joinFormat = 1

// joinNode builds the join: its state, restored at any parallelism, and
// where its records and its too-late records go.
type joinNode struct{ rn *Runnable }

func (n *joinNode) Build(c *translate.Ctx) error {
	rn := n.rn
	j, jr, e := rn.j, rn.jn, c.Engine()
	jo := j.Join
	spec := engine.JoinSpec{Lower: jo.Lower, Upper: jo.Upper, Lateness: jo.AllowedLateness, Temporal: jo.Temporal, Window: jo.Window}
	switch jo.Kind {
	case jobfile.JoinLeftOuter:
		spec.Mode = engine.JoinLeftOuter
	case jobfile.JoinAnti:
		spec.Mode = engine.JoinAnti
	}
	var err error
	cfg := engine.JoinConfig[string, record, record]{Name: c.Participant(), Spec: spec, Watermark: j.Watermark,
		Parallelism: j.Parallelism, Hash: hashString, Codec: joinCodec{}}
	if jo.Temporal {
		cfg.Codec = joinCodec{deletions: true}
		cfg.Deletes = func(r record) bool { return r.deleted }
	}
	if j.State.Backend == "pebble" {
		if err := rn.openState(nil); err != nil {
			return err
		}
		cfg.State = rn.db
	}
	jr.join, err = engine.NewJoin(e, cfg)
	if err != nil {
		return &RuntimeError{Msg: err.Error(), Err: err}
	}
	for _, o := range c.Consumers(plan.Main) {
		jr.join.Out.Subscribe(o.(engine.Consumer[joined]))
	}
	for _, l := range c.Consumers(plan.Late) {
		jr.join.Late.Subscribe(l.(engine.Consumer[joinLate]))
	}
	if jr.recent != nil {
		f := newFormat(j, nil)
		jr.join.Out.Subscribe(formatted[joined]{engine.Func[plan.Item]{OnPush: jr.recent.Add}, f.joinedItem})
		jr.join.Late.Subscribe(formatted[joinLate]{engine.Func[plan.Item]{OnPush: jr.recLate.Add}, f.joinLateItem})
	}
	return nil
}

// consoleTaps makes what the console shows of a join: the recent records
// and records too late, formatted as their outputs write them (each in
// memory of its own: formatted).
func (jr *joinRun) consoleTaps() {
	jr.recent, jr.recLate = recentItems(), recentItems()
}

// joinSourceNode builds one input of a job with a join: its source, read
// through a head of its own into its side of the join.
type joinSourceNode struct {
	rn   *Runnable
	side int // 0 the job's source (left), 1 join.with (right)
}

func (s *joinSourceNode) Build(c *translate.Ctx) error {
	rn, jr := s.rn, s.rn.jn
	in := []*jobfile.Job{rn.j, jr.with}[s.side]
	lp := []*lineParser{jr.lp, jr.rlp}[s.side]
	var quarantine engine.Consumer[engine.RejectedRecord]
	for _, q := range c.Consumers(plan.Rejected) {
		quarantine = q.(engine.Consumer[engine.RejectedRecord])
		if s.side == 1 {
			// The quarantine takes the source loop's signals from the
			// left input's head: once.
			quarantine = engine.Func[engine.RejectedRecord]{OnPush: quarantine.Push}
		}
	}
	target := jr.join.LeftTarget()
	if s.side == 1 {
		target = jr.join.RightTarget()
	}
	name := headName(s.side)
	// A join's keys are mostly each record's own (an order's id): a
	// table of the keys seen last would miss, and cost more than the
	// string it saves.
	lp.keys.off = true
	hc := engine.HeadConfig[string, record]{Name: name, Window: target,
		Quarantine: quarantine, Input: []string{"source", "join.with"}[s.side], Second: s.side == 1}
	if db := []*state.DB{rn.db, rn.ids}[s.side]; in.ID != nil && db != nil {
		// On the Pebble backend: the first input's ids in the join's
		// database, the second's in their own (openState).
		hc.Dedup = db.Dedup(in.DedupHorizon)
	}
	h, err := rn.recordSource(c, in, lp, hc)
	if err != nil {
		return err
	}
	jr.heads[s.side] = h
	jr.restoredRead[s.side] = h.Counts().Read
	return nil
}

// recordSource reads the input in of a job that writes records (a join's
// input, a lookup's source) through a head of hc's, into its target: its
// events keep their text (keepRaw), decoded on the job's decoders, and
// its ids, when it has some, are kept for the job's dedup_horizon, in
// hc's Dedup or else in memory.
func (rn *Runnable) recordSource(c *translate.Ctx, in *jobfile.Job, lp *lineParser, hc engine.HeadConfig[string, record]) (*engine.Head[string, record], error) {
	e := c.Engine()
	_, _, hc.Source = sourceNames(in)
	hc.Decoder, hc.Decoders = keepRaw{lp}, rn.decoders()
	lp.decodeOn(hc.Decoders)
	if in.ID != nil && hc.Dedup == nil {
		hc.Dedup = state.NewMemoryDedup(in.DedupHorizon)
	}
	h, err := engine.NewHead(e, hc)
	if err != nil {
		return nil, &RuntimeError{Msg: err.Error(), Err: err}
	}
	src, err := rn.sourceOf(in, lp.format)
	if err != nil {
		return nil, err
	}
	if err := e.AddSource(c.Node().ID.Name, src, h); err != nil {
		return nil, err
	}
	e.OnSignal(h)
	return h, nil
}

// keepRaw is a decoder whose events keep their text: a join holds them
// past the batch they were read in, whose memory the source reuses.
type keepRaw struct{ *lineParser }

// Fork implements engine.ForkingDecoder: a fork of the parser, whose
// events keep their text too.
func (k keepRaw) Fork() engine.Decoder[string, record] {
	f, _ := k.lineParser.Fork().(*lineParser)
	if f == nil {
		return nil
	}
	return keepRaw{f}
}

func (k keepRaw) Decode(r *connector.Record, d *engine.Decoded[string, record]) {
	k.lineParser.Decode(r, d)
	if d.Kind == engine.Event {
		// Its JSON text: what the join writes and keeps.
		raw, err := k.recordText(d.Value)
		if err != nil {
			d.Kind, d.Reason, d.Detail = engine.Rejected, ReasonNotDecodable, err.Error()
			return
		}
		d.Value.raw, d.Value.vals, d.Value.encoded = bytes.Clone(raw), nil, false
	}
}

// joinCodec keeps a join's records in checkpoints: each its line (or
// offset), partition, event time and text, and, in a temporal join's
// (deletions), whether it is a deletion (a temporal join's state is its
// own: a restore never reads an interval join's as one, or the reverse).
type joinCodec struct{ deletions bool }

func (joinCodec) AppendKey(b []byte, k string) []byte   { return enc.AppendString(b, k) }
func (joinCodec) ReadKey(d *enc.Decoder) string         { return d.String() }
func (c joinCodec) AppendAcc(b []byte, r record) []byte { return c.appendRecord(b, r) }
func (c joinCodec) ReadAcc(d *enc.Decoder) record       { return c.readRecord(d) }
func (c joinCodec) AppendOut(b []byte, r record) []byte { return c.appendRecord(b, r) }
func (c joinCodec) ReadOut(d *enc.Decoder) record       { return c.readRecord(d) }

func (c joinCodec) appendRecord(b []byte, r record) []byte {
	b = enc.AppendVarint(b, r.line)
	b = enc.AppendVarint(b, int64(r.part))
	b = enc.AppendVarint(b, int64(r.ts))
	b = enc.AppendBytes(b, r.raw)
	if c.deletions {
		b = enc.AppendBool(b, r.deleted)
	}
	return b
}

func (c joinCodec) readRecord(d *enc.Decoder) record {
	var r record
	r.line, r.part, r.ts = d.Varint(), int32(d.Varint()), mtime.Time(d.Varint())
	r.raw = bytes.Clone(d.Bytes())
	if c.deletions {
		r.deleted = d.Bool()
	}
	return r
}

// buildJoin builds a job with a join.
func (rn *Runnable) buildJoin() error {
	j := rn.j
	rn.warn = j.Warnings()
	rn.jn = &joinRun{with: j.Join.With, lp: newLineParser(j), rlp: newLineParser(j.Join.With)}
	if rn.o.Console {
		rn.jn.consoleTaps()
	}
	for _, p := range []struct {
		lp *lineParser
		j  *jobfile.Job
	}{{rn.jn.lp, j}, {rn.jn.rlp, j.Join.With}} {
		dec, err := newDecoder(p.j, func(s string) { rn.logf("%s", j.Redact(s)) })
		if err != nil {
			return err
		}
		p.lp.useDecoder(dec)
	}
	if err := rn.translate(); err != nil {
		return err
	}
	rn.fileModes(rn.e)
	if c := rn.e.Resumed(); c != nil {
		rn.logf("resuming from %s (%s of %s, %s of %s)", c.Path, resumedAt(rn.e, nodeInput), j.InputName(),
			resumedAt(rn.e, nodeWith), j.Join.With.InputName())
	}
	return nil
}

// runRecords runs a built job with a join or a lookup: a job that writes
// records, not panes.
func (rn *Runnable) runRecords(ctx context.Context) (*Summary, error) {
	start := time.Now()
	stopLog := func() {}
	if rn.o.ProgressEvery > 0 && rn.e.Live() {
		stopLog = rn.logProgress(rn.o.ProgressEvery)
	}
	if rn.db != nil {
		stop := rn.watchState()
		defer stop()
	}
	err := rn.e.Run(ctx)
	stopLog()
	if cerr := rn.closeState(); cerr != nil && err == nil {
		err = &RuntimeError{Msg: "closing the state database: " + cerr.Error(), Err: cerr}
	}
	if rn.lk != nil {
		// The lookups ended with the run.
		if cerr := rn.lk.table.Close(); cerr != nil {
			rn.logf("%s: lookup: %v", rn.j.File, cerr)
		}
	}
	sum := rn.finalRecordsSummary(err)
	if err = sum.settle(err, start); err != nil {
		if serr := rn.writeRecordsEnd(sum); serr != nil {
			rn.logf("%v", serr)
		}
		return sum, err
	}
	if rn.ended && !sum.Interrupted {
		return sum, nil // written when the end was committed
	}
	return sum, rn.writeRecordsEnd(sum)
}

// writeRecordsEnd writes what a job with a join or a lookup writes when
// it ends (or fails): its summary.
func (rn *Runnable) writeRecordsEnd(sum *Summary) error {
	if rn.j.Summary == "" {
		return nil
	}
	return writeSummary(rn.j, rn.j.Summary, sum, rn.o.Stdout, rn.o.Force)
}

// finalRecordsSummary is the run's summary of a job with a join or a
// lookup; for a run that only committed the output of the last one, which
// had reached the end of its inputs, that run's summary with what is
// committed now.
func (rn *Runnable) finalRecordsSummary(err error) *Summary {
	if rn.lk != nil {
		sum := rn.lookupSummary(err)
		if ok, rec := rn.e.Finishing(); ok && err == nil {
			var last Summary
			if json.Unmarshal(rec, &last) == nil && last.Lookup != nil {
				last.Lookup.Written, last.Lookup.FailedWritten, last.LateWritten = sum.Lookup.Written, sum.Lookup.FailedWritten, sum.LateWritten
				last.Lookup.Table = sum.Lookup.Table // not in the record: the log says it
				return &last
			}
		}
		return sum
	}
	sum := rn.joinSummary(err)
	if ok, rec := rn.e.Finishing(); ok && err == nil {
		var last Summary
		if json.Unmarshal(rec, &last) == nil && last.Join != nil {
			last.Join.Written, last.LateWritten = sum.Join.Written, sum.LateWritten
			return &last
		}
	}
	return sum
}

// JoinSummary is what a job with a join made: the other input's
// accounting (the summary's own is the job's source's), and the records
// the join made and wrote.
type JoinSummary struct {
	Kind string `json:"kind"`
	// Temporal: a temporal join (join.temporal); Window, a window
	// join's size (join.window).
	Temporal bool   `json:"temporal,omitempty"`
	Window   string `json:"window,omitempty"`
	// With accounts for every line of the other input (join.with), as the
	// summary does for the job's source: accepted into the join, filtered
	// out by its where, too late for the join, or quarantined.
	With                  engine.Accounting `json:"with"`
	WithQuarantineReasons map[string]int64  `json:"with_quarantine_reasons"`
	WithBlankLines        int64             `json:"with_blank_lines"`
	// Pairs are the records joined; Unmatched the records of the job's
	// source that joined nothing (written by left_outer and anti, counted
	// in every kind); Written what reached each output.
	Pairs     int64 `json:"pairs"`
	Unmatched int64 `json:"unmatched"`
	Written   int64 `json:"written"`
	// WithInputRestarted says why the other input was read from its start
	// although a checkpoint had read part of it (Summary.InputRestarted).
	WithInputRestarted string `json:"with_input_restarted,omitempty"`
}

// MarshalJSON writes a job with a join's summary with the fields that
// say something of a join (a window's counts say nothing there), and any
// other summary as it is.
func (s *Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	if s.Join == nil && s.Lookup == nil {
		return json.Marshal((*plain)(s))
	}
	return json.Marshal(struct {
		Job string `json:"job"`
		engine.Accounting
		QuarantineReasons map[string]int64 `json:"quarantine_reasons"`
		BlankLines        int64            `json:"blank_lines"`
		Lost              int64            `json:"lost,omitempty"`
		Join              *JoinSummary     `json:"join,omitempty"`
		Lookup            *LookupSummary   `json:"lookup,omitempty"`
		LateWritten       int64            `json:"late_written"`
		Watermark         string           `json:"watermark"`
		OutputsAdded      []string         `json:"outputs_added,omitempty"`
		InputRestarted    string           `json:"input_restarted,omitempty"`
		Interrupted       bool             `json:"interrupted,omitempty"`
		Savepoint         string           `json:"savepoint,omitempty"`
		Failed            bool             `json:"failed,omitempty"`
	}{s.Job, s.Accounting, s.QuarantineReasons, s.BlankLines, s.Lost, s.Join, s.Lookup, s.LateWritten, s.Watermark,
		s.OutputsAdded, s.InputRestarted, s.Interrupted, s.Savepoint, s.Failed})
}

// joinSummary is the summary of a job with a join: its source's
// accounting, the other input's, and what the join made.
func (rn *Runnable) joinSummary(err error) *Summary {
	jr := rn.jn
	st := jr.join.Stats()
	side := func(i int) engine.Counts {
		c := jr.heads[i].Counts()
		c.TooLate = []int64{st.LateLeft, st.LateRight}[i]
		c.Accepted = c.Read - c.Quarantined - c.Filtered - c.TooLate - c.Duplicates - c.BeyondDedupHorizon
		return c
	}
	l, r := side(0), side(1)
	s := &Summary{Job: rn.j.Name, Accounting: l.Accounting, QuarantineReasons: l.QuarantineReasons, BlankLines: l.BlankLines, Lost: l.Lost + r.Lost,
		Join: &JoinSummary{Kind: rn.j.Join.Kind, Temporal: rn.j.Join.Temporal, Window: windowSize(rn.j.Join.Window), With: r.Accounting, WithQuarantineReasons: r.QuarantineReasons, WithBlankLines: r.BlankLines,
			Pairs: st.Pairs, Unmatched: st.Unmatched}}
	s.ReadThisRun = s.Read - jr.restoredRead[0]
	if len(jr.outs) > 0 {
		s.Join.Written = jr.outs[0].Written()
	}
	if jr.late != nil {
		s.LateWritten = jr.late.Written()
	}
	s.OutputsAdded = rn.e.AddedSinks()
	if rn.fileSrc != nil {
		s.InputRestarted = rn.fileSrc.Restarted
	}
	if jr.withSrc != nil {
		s.Join.WithInputRestarted = jr.withSrc.Restarted
	}
	s.Watermark = watermarkText(jr.join.Watermark())
	return s
}

// joinText is the summary's lines of what a join made.
func (s *Summary) joinText(name string) string {
	js := s.Join
	w := js.With
	q := ""
	if w.Quarantined > 0 {
		q = " (" + reasonsText(js.WithQuarantineReasons) + ")"
	}
	filtered := ""
	if w.Filtered > 0 {
		filtered = fmt.Sprintf(", %d filtered out by where", w.Filtered)
	}
	if w.Duplicates > 0 || w.BeyondDedupHorizon > 0 {
		// join.with.id: its duplicates, and the records too old for their
		// ids to be checked.
		filtered += fmt.Sprintf(", %d duplicates", w.Duplicates)
		if w.BeyondDedupHorizon > 0 {
			filtered += fmt.Sprintf(", %d beyond the de-duplication horizon", w.BeyondDedupHorizon)
		}
	}
	text := fmt.Sprintf("weir: %s: join.with: read %d lines: %d accepted%s, %d too late, %d quarantined%s\n", name, w.Read, w.Accepted, filtered, w.TooLate, w.Quarantined, q)
	if js.WithInputRestarted != "" {
		text += fmt.Sprintf("weir: %s: join.with: the input was read from its start: it is not the file the checkpoint read (%s)\n", name, js.WithInputRestarted)
	}
	written := fmt.Sprintf("%d records written, %d too-late records written", js.Written, s.LateWritten)
	if s.Failed {
		written = fmt.Sprintf("%d records and %d too-late records reached the outputs before the failure", js.Written, s.LateWritten)
	}
	kind := js.Kind
	switch {
	case js.Temporal:
		kind += " temporal"
	case js.Window != "":
		kind += " window"
	}
	return text + fmt.Sprintf("weir: %s: %s join: %d pairs, %d unmatched; %s; watermark %s\n", name, kind, js.Pairs, js.Unmatched, written, s.Watermark)
}

// appendJoined formats a joined record: its key, its time (the later of
// the two records', the left one's when unmatched), whether it matched,
// and each record with where it was read and its event time.
func (f *format) appendJoined(b []byte, o joined) []byte {
	b = append(b, '{')
	b = f.appendKey(b, o.Key)
	b = append(b, `,"time":`...)
	b = appendTime(b, o.Time)
	if size := f.j.Join.Window; size > 0 {
		// A window join's record says which window joined it.
		start := f.j.Join.WindowOf(o.LeftTime)
		b = append(b, `,"window_start":`...)
		b = appendTime(b, start)
		b = append(b, `,"window_end":`...)
		b = appendTime(b, start+size)
	}
	b = append(b, `,"matched":`...)
	b = strconv.AppendBool(b, o.Matched)
	b = append(b, `,"left":`...)
	b = f.appendSide(b, o.Left)
	b = append(b, `,"right":`...)
	if o.Matched {
		b = f.with.appendSide(b, o.Right)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"watermark":`...)
	b = appendWatermark(b, o.Watermark)
	return append(b, '}', '\n')
}

// appendWatermark appends the watermark, null before the first.
func appendWatermark(b []byte, w mtime.Time) []byte {
	if w == mtime.MinTime {
		return append(b, "null"...)
	}
	return appendTime(b, w)
}

// appendSide formats one record of a join: where it was read, its event
// time and its text.
func (f *format) appendSide(b []byte, r record) []byte {
	b = append(b, `{"event_time":`...)
	b = appendTime(b, r.ts)
	b = f.appendPosition(b, r.part, r.line)
	b = f.appendRecord(b, "event", r.raw, nil, true)
	return append(b, '}')
}

// appendJoinLate formats a record too late for the join.
func (f *format) appendJoinLate(b []byte, l joinLate) []byte {
	b = append(b, `{"reason":"`...)
	b = append(b, l.Reason...)
	b = append(b, `","side":"`...)
	b = append(b, l.Side...)
	b = append(b, `",`...)
	b = f.appendKey(b, l.Key)
	b = append(b, `,"watermark":`...)
	b = appendWatermark(b, l.Watermark)
	r, sf := l.Left, f
	if l.Side == "right" {
		r, sf = l.Right, f.with
	}
	return sf.appendAsideTail(b, l.Timestamp, r, l.At)
}

// appendAsideTail ends a record set aside (too late for a join, beside a
// lookup, or whose lookup failed): its event time, where it was read,
// when it was set aside and its text.
func (f *format) appendAsideTail(b []byte, ts mtime.Time, r record, at mtime.Time) []byte {
	b = append(b, `,"event_time":`...)
	b = appendTime(b, ts)
	b = f.appendPosition(b, r.part, r.line)
	b = append(b, `,"set_aside_at":`...)
	b = appendTime(b, at)
	b = f.appendRecord(b, "event", r.raw, nil, true)
	return append(b, '}', '\n')
}

// joinedItem is a joined record as its outputs write it, keyed by its
// key.
func (f *format) joinedItem(b []byte, o joined) plan.Item {
	// Room for it all at once, its key too: the item keeps its memory.
	b = slices.Grow(b, itemRoom+3*len(o.Key)+len(o.Left.raw)+len(o.Right.raw))
	return keyedItem(plan.Joined, f.appendJoined(b, o), o.Key, joinedID(o))
}

// windowSize is a window join's size as its summary says it, "" for
// another join.
func windowSize(size mtime.Time) string {
	if size <= 0 {
		return ""
	}
	return mtime.FormatDuration(size)
}

// itemRoom is the room a joined or too-late record takes besides its key
// and its records' text (times, positions and field names), with some to
// spare.
const itemRoom = 320

// keyedItem is the item of line (as a format appended it, its newline
// last) under key, written after the line in its buffer's spare room: one
// allocation for both, where the buffer was grown for them (each took
// one).
func keyedItem(kind plan.ItemKind, line []byte, key string, id uint64) plan.Item {
	n := len(line)
	b := append(line, key...)
	return plan.Item{Kind: kind, JSON: b[: n-1 : n-1], Key: b[n:len(b):len(b)], ID: id}
}

// joinLateItem is a record too late for the join as its output writes
// it, keyed by its key.
func (f *format) joinLateItem(b []byte, l joinLate) plan.Item {
	b = slices.Grow(b, itemRoom+3*len(l.Key)+len(l.Left.raw)+len(l.Right.raw))
	return keyedItem(plan.LateEvent, f.appendJoinLate(b, l), l.Key, joinLateID(l))
}

// joinedID is a joined record's identity: the records it is made of.
func joinedID(o joined) uint64 {
	h := newIdentity().string(o.Key).int(int64(o.Left.part)).int(o.Left.line)
	if o.Matched {
		h = h.int(int64(o.Right.part)).int(o.Right.line)
	}
	return uint64(h)
}

// joinLateID is a too-late record's identity: its side and where it was
// read.
func joinLateID(l joinLate) uint64 {
	r := l.Left
	if l.Side == "right" {
		r = l.Right
	}
	return uint64(newIdentity().string(l.Side).int(int64(r.part)).int(r.line))
}

// resumedAt says where a restored input goes on: after a line, and after
// the records of the next lines its checkpoint's run had handed over.
func resumedAt(e *engine.Engine, input string) string {
	at := fmt.Sprintf("line %d", file.Line(e.RestoredPosition(input)))
	if n := e.RestoredSkip(input); n > 0 {
		at += fmt.Sprintf(" and %d records after it", n)
	}
	return at
}
