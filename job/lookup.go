package job

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/translate"
)

// A job with a lookup (jobfile.Lookup) reads its source through a head
// (decode, validate, account, de-duplicate, as an aggregation's head does)
// into a pass (no windows), whose records are looked up in the table by
// their key, in order (engine.Lookup): each record with its row goes to
// the outputs, each whose lookup kept failing to the dead letters, and
// each the head set aside (beyond the de-duplication horizon) to the late
// output. The plan's nodes: the source, the lookup and the outputs.
const nodeLookup = "lookup"

type (
	passed     = engine.Passed[string, record]
	looked     = engine.Looked[string, passed, []byte]
	lookFailed = engine.LookupFailed[string, passed]
)

// lookupRun is what a job with a lookup builds besides the runnable's
// engine.
type lookupRun struct {
	lp     *lineParser
	head   *engine.Head[string, record]
	pass   *engine.Pass[string, record]
	stage  *engine.Lookup[string, passed, []byte]
	table  *table.Lookup[string, []byte]
	counts *lookupCounts
	outs   []*engine.SinkNode[plan.Item]
	dead   *engine.SinkNode[plan.Item]
	late   *engine.SinkNode[plan.Item]
	// restoredRead is what the runs before this one read.
	restoredRead int64
	// What the console shows: the recent records, and those set aside.
	recent, recLate *console.Recent[plan.Item]
}

// lookupPlan is the plan of a job with a lookup.
func (rn *Runnable) lookupPlan() *plan.Graph {
	j := rn.j
	lk := j.Lookup
	g := &plan.Graph{Name: j.Name}
	src := plan.ID{Kind: plan.KindSource, Name: nodeInput}
	g.Add(&plan.Node{ID: src, Label: "source", Op: sourceOp(j), Impl: &lookupSourceNode{rn: rn}})
	node := plan.ID{Kind: plan.KindLookup, Name: nodeLookup}
	g.Add(&plan.Node{ID: node, Label: "lookup", Inputs: []plan.Input{{From: src}}, Op: &plan.Lookup{Table: lk.What(), Cache: lookupCacheText(lk)},
		Impl: &lookupNode{rn: rn}})
	add := func(o *jobfile.Output, in plan.Input, role outputRole) {
		key, former := recordKey(j, o)
		g.Add(&plan.Node{ID: plan.ID{Kind: plan.KindSink, Name: key}, Label: o.Field, Inputs: []plan.Input{in},
			Op: &plan.Sink{Connector: o.Destination().Connector(), Writes: o.Kind(), Former: former}, Impl: &sinkNode{rn: rn, o: o, role: role}})
	}
	for i := range j.Outputs {
		add(&j.Outputs[i], plan.Input{From: node}, roleLooked)
	}
	if j.Late != nil {
		add(j.Late, plan.Input{From: node, Port: plan.Late}, roleLookupAside)
	}
	if j.DeadLetter != nil {
		add(j.DeadLetter, plan.Input{From: node, Port: plan.Rejected}, roleLookupFailed)
	}
	if j.Rejects != nil {
		add(j.Rejects, plan.Input{From: src, Port: plan.Rejected}, roleRejected)
	}
	return g
}

// lookupCacheText is a lookup's cache as the plan says it.
func lookupCacheText(lk *jobfile.Lookup) string {
	if lk.CacheSize == 0 {
		return "none"
	}
	s := fmt.Sprintf("%d rows", lk.CacheSize)
	if lk.CacheTTL > 0 {
		s += " for " + mtime.FormatDuration(lk.CacheTTL)
	}
	return s
}

// lookupNode builds the lookup: the pass the source's head feeds, the
// table, the stage, and where its records, its dead letters and the
// records set aside go.
type lookupNode struct{ rn *Runnable }

func (n *lookupNode) Build(c *translate.Ctx) error {
	rn, e := n.rn, c.Engine()
	j, lr := rn.j, rn.lk
	lk := j.Lookup
	lr.pass = engine.NewPass[string, record](j.Watermark)
	var err error
	if lr.table, err = openLookup(j); err != nil {
		return err
	}
	lr.stage = engine.NewLookup(e, engine.LookupConfig[string, passed, []byte]{Name: nodeLookup, Table: keyValues{lr.table},
		Key: func(p passed) string { return p.Key }, CacheSize: lk.CacheSize, CacheTTL: lk.CacheTTL, Batch: lk.Batch, InFlight: lk.InFlight,
		Attempts: lk.Attempts, Backoff: time.Duration(lk.Backoff) * time.Millisecond})
	lr.pass.Out.Subscribe(lr.stage)
	cs := &lookupCounts{inner: lk.Kind == jobfile.JoinInner}
	if cs.p, err = e.Participant(nodeLookup); err != nil {
		return err
	}
	if data := cs.p.File(""); data != nil {
		d := enc.NewDecoder(data)
		cs.found.Store(d.Varint())
		cs.missing.Store(d.Varint())
		cs.failed.Store(d.Varint())
		if d.Err() != nil {
			return fmt.Errorf("cannot restore %s: %s is corrupt", e.Resumed().Path, cs.p.FileName(""))
		}
	}
	lr.counts = cs
	for _, o := range c.Consumers(plan.Main) {
		cs.outs = append(cs.outs, o.(engine.Consumer[looked]))
	}
	for _, o := range c.Consumers(plan.Rejected) {
		cs.fails = append(cs.fails, o.(engine.Consumer[lookFailed]))
	}
	for _, o := range c.Consumers(plan.Late) {
		lr.pass.SetAside.Subscribe(o.(engine.Consumer[passed]))
	}
	if lr.recent != nil {
		f := newFormat(j, nil)
		cs.outs = append(cs.outs, formatted[looked]{engine.Func[plan.Item]{OnPush: lr.recent.Add}, f.lookedItem})
		lr.pass.SetAside.Subscribe(formatted[passed]{engine.Func[plan.Item]{OnPush: lr.recLate.Add}, f.asideItem})
	}
	lr.stage.Out().Subscribe(cs)
	lr.stage.Failed().Subscribe(failedCounts{cs})
	return nil
}

// openLookup opens the table of the job's lookup (its connections are
// made at the first query).
func openLookup(j *jobfile.Job) (*table.Lookup[string, []byte], error) {
	lk := j.Lookup
	scan := rowScanner(lk.KeyColumn)
	if lk.Driver == "postgres" {
		t, err := table.PostgresLookup(lk.DSN, lk.Query, scan)
		if err != nil {
			return nil, &RuntimeError{Msg: fmt.Sprintf("%s: lookup: %v", j.File, err), Err: err}
		}
		return t, nil
	}
	// A database that is not there is a mistake of the job, not a lookup
	// to try again.
	if _, err := os.Stat(lk.Path); err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("%s: lookup.sqlite.path: %v", j.File, err), Err: err}
	}
	t, err := table.SQLiteLookup(lk.Path, lk.Query, scan)
	if err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("%s: lookup: %v", j.File, err), Err: err}
	}
	return t, nil
}

// CheckLookup looks the keys of the sample s of the job's input up in its
// lookup's table, once, as weir lint does: how many of how many have a
// row, or why the query failed.
func CheckLookup(ctx context.Context, j *jobfile.Job, s *Sample) (found, asked int, err error) {
	if j.Lookup == nil || len(s.keys) == 0 {
		return 0, 0, nil
	}
	t, err := openLookup(j)
	if err != nil {
		return 0, len(s.keys), err
	}
	defer t.Close()
	rows, err := keyValues{t}.Lookup(ctx, s.keys)
	return len(rows), len(s.keys), err
}

// lookupCounts counts a lookup's records by outcome (found, not found,
// failed), keeps the counts in checkpoints, and hands the records on: an
// inner lookup's only when found.
type lookupCounts struct {
	p                      *engine.Participant
	inner                  bool
	outs                   []engine.Consumer[looked]
	fails                  []engine.Consumer[lookFailed]
	found, missing, failed atomic.Int64
}

func (c *lookupCounts) Push(l looked) {
	if !l.Found {
		c.missing.Add(1)
		if c.inner {
			return
		}
	} else {
		c.found.Add(1)
	}
	for _, o := range c.outs {
		o.Push(l)
	}
}

// Signal passes a signal on; at a barrier it acknowledges the counts: the
// stage sends every record before the barrier, to either output, first.
func (c *lookupCounts) Signal(s engine.Signal) {
	if s.Kind == engine.Barrier {
		var b []byte
		for _, n := range []int64{c.found.Load(), c.missing.Load(), c.failed.Load()} {
			b = enc.AppendVarint(b, n)
		}
		s.Barrier.Ack(c.p, engine.File{Name: c.p.FileName(""), Data: b})
	}
	for _, o := range c.outs {
		o.Signal(s)
	}
}

// failedCounts is lookupCounts taking the stage's dead letters.
type failedCounts struct{ c *lookupCounts }

func (f failedCounts) Push(l lookFailed) {
	f.c.failed.Add(1)
	for _, o := range f.c.fails {
		o.Push(l)
	}
}

func (f failedCounts) Signal(s engine.Signal) {
	for _, o := range f.c.fails {
		o.Signal(s)
	}
}

// keyValues looks keys up by their values: a key is its canonical JSON
// text (a string's in quotes), the table is asked for its value (the
// string itself, a number's text), and a row's key column, as text, finds
// the key back.
type keyValues struct {
	t connector.Lookup[string, []byte]
}

func (k keyValues) Lookup(ctx context.Context, keys []string) (map[string][]byte, error) {
	vals := make([]string, len(keys))
	of := make(map[string]string, len(keys))
	for i, key := range keys {
		vals[i] = key
		if len(key) > 0 && key[0] == '"' {
			var s string
			if json.Unmarshal([]byte(key), &s) == nil {
				vals[i] = s
			}
		}
		of[vals[i]] = key
	}
	rows, err := k.t.Lookup(ctx, vals)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(rows))
	for v, row := range rows {
		if key, ok := of[v]; ok {
			out[key] = row
		}
	}
	return out, nil
}

// rowScanner reads a row of a lookup's query: its key (the column named
// keyColumn, else the first), as text, and the row as a JSON object of its
// columns.
func rowScanner(keyColumn string) func(*sql.Rows) (string, []byte, error) {
	return func(rows *sql.Rows) (string, []byte, error) {
		cols, err := rows.ColumnTypes()
		if err != nil {
			return "", nil, err
		}
		ki := 0
		if keyColumn != "" {
			ki = slices.IndexFunc(cols, func(c *sql.ColumnType) bool { return c.Name() == keyColumn })
			if ki < 0 {
				return "", nil, fmt.Errorf("the query's rows have no column %q (lookup.key_column)", keyColumn)
			}
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", nil, err
		}
		b := []byte{'{'}
		for i, c := range cols {
			if i > 0 {
				b = append(b, ',')
			}
			b = text.AppendJSONString(b, []byte(c.Name()))
			b = append(b, ':')
			b = appendColumn(b, vals[i], c.DatabaseTypeName())
		}
		b = append(b, '}')
		return columnText(vals[ki]), b, nil
	}
}

// columnText is a key column's value as text: a string as it is, a
// number's digits.
func columnText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// appendColumn appends a column's value as JSON: NULL as null, numbers
// and booleans as they are, a decimal (NUMERIC) as its number, a JSON
// column (JSON, JSONB) as its value, bytes that are not text in base64, a
// time in RFC 3339, anything else as a string.
func appendColumn(b []byte, v any, dbType string) []byte {
	if dbType == "JSON" || dbType == "JSONB" {
		var raw []byte
		switch v := v.(type) {
		case string:
			raw = []byte(v)
		case []byte:
			raw = v
		}
		if raw != nil && json.Valid(raw) {
			return append(b, raw...)
		}
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return text.AppendJSONString(b, []byte(strconv.FormatFloat(v, 'g', -1, 64)))
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(b, v)
	case time.Time:
		return text.AppendJSONString(b, []byte(v.Format(time.RFC3339Nano)))
	case []byte:
		if !utf8.Valid(v) {
			return text.AppendJSONString(b, []byte(base64.StdEncoding.EncodeToString(v)))
		}
		return text.AppendJSONString(b, v)
	case string:
		if (dbType == "NUMERIC" || dbType == "DECIMAL") && json.Valid([]byte(v)) {
			return append(b, v...)
		}
		return text.AppendJSONString(b, []byte(v))
	}
	return text.AppendJSONString(b, []byte(fmt.Sprint(v)))
}

// lookupSourceNode builds the source of a job with a lookup, read through
// its head into the pass.
type lookupSourceNode struct{ rn *Runnable }

func (s *lookupSourceNode) Build(c *translate.Ctx) error {
	rn, lr := s.rn, s.rn.lk
	var quarantine engine.Consumer[engine.RejectedRecord]
	for _, q := range c.Consumers(plan.Rejected) {
		quarantine = q.(engine.Consumer[engine.RejectedRecord])
	}
	h, err := rn.recordSource(c, rn.j, lr.lp, engine.HeadConfig[string, record]{Name: "head", Window: lr.pass, Quarantine: quarantine})
	if err != nil {
		return err
	}
	lr.head = h
	lr.restoredRead = h.Counts().Read
	// What the runs before passed on: what they read and did not set
	// apart (a checkpoint has nothing in flight).
	lr.pass.SetAccepted(h.Counts().InFlight())
	return nil
}

// buildLookup builds a job with a lookup.
func (rn *Runnable) buildLookup() error {
	j := rn.j
	rn.warn = j.Warnings()
	rn.lk = &lookupRun{lp: newLineParser(j)}
	if rn.o.Console {
		rn.lk.recent, rn.lk.recLate = recentItems(), recentItems()
	}
	dec, err := newDecoder(j, func(s string) { rn.logf("%s", j.Redact(s)) })
	if err != nil {
		return err
	}
	rn.lk.lp.useDecoder(dec)
	if err := rn.translate(); err != nil {
		return err
	}
	rn.fileModes(rn.e)
	return nil
}

// recentItems is what the console keeps of a job's recent records.
func recentItems() *console.Recent[plan.Item] {
	return console.NewRecent(50, func(dst *plan.Item, src plan.Item) { *dst = src }, func(b []byte, it *plan.Item) []byte {
		return append(b, it.JSON...)
	})
}

// lookupSummary is the summary of a job with a lookup: its source's
// accounting and what the lookup made.
func (rn *Runnable) lookupSummary(err error) *Summary {
	lr := rn.lk
	c := lr.head.Counts()
	c.Accepted = c.Read - c.Quarantined - c.Filtered - c.Duplicates - c.BeyondDedupHorizon
	st := lr.stage.Stats()
	s := &Summary{Job: rn.j.Name, Accounting: c.Accounting, QuarantineReasons: c.QuarantineReasons, BlankLines: c.BlankLines, Lost: c.Lost,
		Lookup: &LookupSummary{Kind: rn.j.Lookup.Kind, Table: rn.j.Lookup.What(), Found: lr.counts.found.Load(), NotFound: lr.counts.missing.Load(),
			Failed: lr.counts.failed.Load(), Calls: st.Calls, Retries: st.Retries, CacheHits: st.CacheHits}}
	s.ReadThisRun = s.Read - lr.restoredRead
	if len(lr.outs) > 0 {
		s.Lookup.Written = lr.outs[0].Written()
	}
	if lr.dead != nil {
		s.Lookup.FailedWritten = lr.dead.Written()
	}
	if lr.late != nil {
		s.LateWritten = lr.late.Written()
	}
	s.OutputsAdded = rn.e.AddedSinks()
	if rn.fileSrc != nil {
		s.InputRestarted = rn.fileSrc.Restarted
	}
	s.Watermark = watermarkText(lr.pass.Watermark())
	return s
}

// LookupSummary is what a job with a lookup made: its records by what
// their lookup found, and what reached the outputs.
type LookupSummary struct {
	Kind string `json:"kind"`
	// Table is what the lookup reads (in the log, not in the summary
	// file: its path is the machine's).
	Table string `json:"-"`
	// Found are the records whose key had a row; NotFound those whose key
	// had none (written by left_outer, not by inner); Failed those whose
	// lookup kept failing (to the dead letters). Each record accepted is
	// one of them once its lookup is done.
	Found    int64 `json:"found"`
	NotFound int64 `json:"not_found"`
	Failed   int64 `json:"failed"`
	// Written is what reached each output; FailedWritten what reached
	// the dead letters.
	Written       int64 `json:"written"`
	FailedWritten int64 `json:"failed_written"`
	// Calls are this run's queries of the table, Retries the queries
	// tried again, CacheHits the records whose row the cache had: in the
	// log and the status, not in the summary file, which is the same
	// whatever the restarts.
	Calls     int64 `json:"-"`
	Retries   int64 `json:"-"`
	CacheHits int64 `json:"-"`
}

// lookupText is the summary's line of what a lookup made.
func (s *Summary) lookupText(name string) string {
	ls := s.Lookup
	kept := "written"
	if ls.Kind == jobfile.JoinInner {
		kept = "not written: inner"
	}
	written := fmt.Sprintf("%d records written, %d to the dead letters", ls.Written, ls.FailedWritten)
	if s.Failed {
		written = fmt.Sprintf("%d records and %d dead letters reached the outputs before the failure", ls.Written, ls.FailedWritten)
	}
	return fmt.Sprintf("weir: %s: %s lookup in %s: %d found, %d not found (%s), %d failed; this run %d queries, %d retried, %d records from the cache; %s\n",
		name, ls.Kind, ls.Table, ls.Found, ls.NotFound, kept, ls.Failed, ls.Calls, ls.Retries, ls.CacheHits, written)
}

// appendLooked formats a record with its row: its key, where it was read
// and its event time, whether its key had a row, the row (null without
// one), when the row was read, and the record.
func (f *format) appendLooked(b []byte, l looked) []byte {
	b = append(b, '{')
	b = f.appendKey(b, l.Key)
	b = append(b, `,"event_time":`...)
	b = appendTime(b, l.Value.Time)
	r := l.Value.Value
	b = f.appendPosition(b, r.part, r.line)
	b = append(b, `,"found":`...)
	b = strconv.AppendBool(b, l.Found)
	b = append(b, `,"row":`...)
	if l.Found {
		b = append(b, l.Row...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"read_at":`...)
	b = appendTime(b, l.ReadAt)
	b = f.appendRecord(b, "event", r.raw, nil, true)
	return append(b, '}', '\n')
}

// appendLookFailed formats a record whose lookup kept failing, as the
// dead letters have it.
func (f *format) appendLookFailed(b []byte, l lookFailed) []byte {
	b = append(b, `{"reason":"`...)
	b = append(b, l.Reason...)
	b = append(b, `","error":`...)
	b = text.AppendJSONString(b, []byte(l.Err))
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(l.Attempts), 10)
	b = append(b, ',')
	b = f.appendKey(b, l.Key)
	return f.appendAsideTail(b, l.Value.Time, l.Value.Value, l.At)
}

// appendAside formats a record the head set aside before the lookup.
func (f *format) appendAside(b []byte, p passed) []byte {
	b = append(b, `{"reason":"`...)
	b = append(b, p.Reason...)
	b = append(b, `",`...)
	b = f.appendKey(b, p.Key)
	b = append(b, `,"watermark":`...)
	b = appendWatermark(b, p.Watermark)
	return f.appendAsideTail(b, p.Time, p.Value, p.At)
}

// lookedItem is a record with its row as its outputs write it, keyed by
// its key.
func (f *format) lookedItem(b []byte, l looked) plan.Item {
	b = slices.Grow(b, itemRoom+2*len(l.Key)+len(l.Row)+len(l.Value.Value.raw))
	r := l.Value.Value
	return keyedItem(plan.Joined, f.appendLooked(b, l), l.Key, uint64(newIdentity().string(l.Key).int(int64(r.part)).int(r.line)))
}

// lookFailedItem is a dead letter of the lookup as an item.
func (f *format) lookFailedItem(b []byte, l lookFailed) plan.Item {
	b = slices.Grow(b, itemRoom+len(l.Err)+2*len(l.Key)+len(l.Value.Value.raw))
	r := l.Value.Value
	return keyedItem(plan.DeadLetter, f.appendLookFailed(b, l), l.Key, uint64(newIdentity().string(l.Reason).int(int64(r.part)).int(r.line)))
}

// asideItem is a record set aside before the lookup as an item.
func (f *format) asideItem(b []byte, p passed) plan.Item {
	b = slices.Grow(b, itemRoom+2*len(p.Key)+len(p.Value.raw))
	return keyedItem(plan.LateEvent, f.appendAside(b, p), p.Key, uint64(newIdentity().string(p.Reason).int(int64(p.Value.part)).int(p.Value.line)))
}
