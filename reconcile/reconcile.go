// Package reconcile corrects a job's upsert table from a retained ledger
// it recomputes the job's windows from the events the ledger
// holds (the original input, the late output, a dead-letter queue),
// de-duplicated, with a perfect watermark, through weir's own engine;
// compares them with the rows the table holds; and publishes, for every
// window whose values differ, a business revision with status reconciled
// and a reason, each conditional on the row it read.
//
// Revisions stay comparable between the stream and the corrections. A
// correction takes the revision of the row it read plus one, and the status
// reconciled. The table's guard orders rows by version, then reconciled or
// not, then revision: within one version of the definitions a reconciled
// row is never replaced by a pane of the stream, however high its revision
// (a stream pane that arrives after the correction is stale by
// construction: the correction already counted everything the ledger
// held). A correction is published only if its row is still as it was read
// (its version, revision and status): a pane of the stream or another
// correction that came between is not overwritten, and the window is
// reported as raced, to be reconciled again.
package reconcile

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
	"github.com/weirstream/weir/vfs"
	"github.com/weirstream/weir/window"
)

// Options say what to reconcile.
type Options struct {
	// Ledger are the files of the retained ledger, JSON lines: events as
	// the job reads them, or records of its late output and quarantine
	// (whose "event" is taken). Events are de-duplicated by the job's id
	// field, or, without one, by their bytes (a late output repeats the
	// input line as read).
	Ledger []string
	// From and To bound the windows to reconcile: those whose start is in
	// [From, To). mtime.MinTime and mtime.MaxTime take every window.
	From, To mtime.Time
	// Reason is said in every correction's reason, before the values that
	// changed.
	Reason string
	// Output is the index, in the job's outputs, of the table to reconcile;
	// -1 takes the first table.
	Output int
	// Now is the clock of updated_at, and the arrival of a ledger line
	// without one, for max_future (mtime.Now when nil).
	Now func() mtime.Time
	// Log, if set, receives what the table sink has to say.
	Log func(string)
	// AllowLower publishes corrections that lower a count the stream
	// published; without it they are refused as LedgerIncomplete (a late
	// event can only add to a count: a lower one means the ledger lacks
	// events).
	AllowLower bool
}

// Outcome is what became of one window.
type Outcome string

// The outcomes of a window.
const (
	// Corrected: the ledger's values differ from the table's (or the table
	// has no row): a reconciled revision was published.
	Corrected Outcome = "corrected"
	// AlreadyRight: the table holds the ledger's values.
	AlreadyRight Outcome = "already_right"
	// NotCorrectable: the table has a row, the ledger no event of its
	// window: the ledger is incomplete there.
	NotCorrectable Outcome = "not_correctable"
	// Raced: the row changed after it was read (a pane of the stream or
	// another correction came first): nothing was written for it.
	Raced Outcome = "raced"
	// LedgerIncomplete: the ledger's values would lower a count the
	// stream published, which more events can never do: the ledger lacks
	// events (the late output alone, say), and nothing was written.
	LedgerIncomplete Outcome = "ledger_incomplete"
)

// Window is one key and window, and what reconciling it found.
type Window struct {
	Key   string     `json:"key,omitempty"`
	Start mtime.Time `json:"-"`
	End   mtime.Time `json:"-"`
	// WindowStart and WindowEnd are Start and End as text.
	WindowStart string  `json:"window_start"`
	WindowEnd   string  `json:"window_end"`
	Outcome     Outcome `json:"outcome"`
	// Base is the revision of the row read (0: none); Revision the
	// correction's.
	Base     int64  `json:"base_revision"`
	Revision int64  `json:"revision,omitempty"`
	Changes  string `json:"changes,omitempty"` // "orders 3 -> 4"
	Note     string `json:"note,omitempty"`
}

// Range counts the outcomes of the windows of one window range (all keys).
type Range struct {
	WindowStart    string `json:"window_start"`
	WindowEnd      string `json:"window_end"`
	Corrected      int    `json:"corrected"`
	AlreadyRight   int    `json:"already_right"`
	NotCorrectable int    `json:"not_correctable"`
	Raced          int    `json:"raced"`
	Incomplete     int    `json:"ledger_incomplete"`
}

// Report is the outcome of a reconciliation.
type Report struct {
	Job   string `json:"job"`
	Table string `json:"table"`
	// The ledger: lines read, events kept, duplicates dropped, lines that
	// are not events (not JSON, no event time), and the event-time span.
	LedgerFiles      []string `json:"ledger_files"`
	LedgerLines      int64    `json:"ledger_lines"`
	LedgerEvents     int64    `json:"ledger_events"`
	LedgerDuplicates int64    `json:"ledger_duplicates"`
	LedgerUnreadable int64    `json:"ledger_unreadable"`
	// Unreadable counts the lines that are not events, by why: not_json,
	// no_id, and the reasons weir run quarantines a line for by its times
	// (no_event_time, implausible_event_time, future_event_time, ...):
	// the ledger is validated by the job's own rules.
	Unreadable     map[string]int64 `json:"ledger_unreadable_reasons,omitempty"`
	LedgerFirst    string           `json:"ledger_first_event_time,omitempty"`
	LedgerLast     string           `json:"ledger_last_event_time,omitempty"`
	Windows        []Window         `json:"windows"`
	Ranges         []Range          `json:"ranges"`
	Corrected      int              `json:"corrected"`
	AlreadyRight   int              `json:"already_right"`
	NotCorrectable int              `json:"not_correctable"`
	Raced          int              `json:"raced"`
	Incomplete     int              `json:"ledger_incomplete"`
	// Applied is false for a plan not applied (a dry run).
	Applied bool `json:"applied"`
}

// Plan is a reconciliation read and computed, not yet published.
type Plan struct {
	rep   *Report
	sink  *table.Sink
	fixes []table.Correction
	idx   []int // the window of each fix in rep.Windows
}

// Report is what the plan found; before Apply, Corrected counts the
// corrections it would publish.
func (p *Plan) Report() *Report { return p.rep }

// Close releases the table.
func (p *Plan) Close() error { return p.sink.Close() }

// Run prepares and applies a reconciliation.
func Run(ctx context.Context, j *jobfile.Job, o Options) (*Report, error) {
	p, err := Prepare(ctx, j, o)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Apply(ctx)
}

// Apply publishes the plan's corrections, each conditional on the row it
// read; the windows whose row changed since are reported Raced.
func (p *Plan) Apply(ctx context.Context) (*Report, error) {
	r := p.rep
	if len(p.fixes) > 0 {
		applied, err := p.sink.Correct(ctx, p.fixes)
		if err != nil {
			return nil, err
		}
		for i, ok := range applied {
			if !ok {
				w := &r.Windows[p.idx[i]]
				w.Outcome, w.Revision = Raced, 0
				w.Note = "the row changed after it was read; reconcile again"
			}
		}
	}
	r.Applied = true
	r.count()
	return r, nil
}

// tableOutput finds the output to reconcile.
func tableOutput(j *jobfile.Job, i int) (*jobfile.Output, error) {
	if i >= 0 {
		if i >= len(j.Outputs) || j.Outputs[i].Table == nil {
			return nil, fmt.Errorf("output[%d] of %s is not a table", i, j.File)
		}
		return &j.Outputs[i], nil
	}
	for k := range j.Outputs {
		if j.Outputs[k].Table != nil {
			return &j.Outputs[k], nil
		}
	}
	return nil, fmt.Errorf("%s writes to no table (sqlite or postgres): there is nothing to reconcile", j.File)
}

// Check says why the job cannot be reconciled as o asks, before anything is
// read: it writes to no table, or deltas; no ledger is named, or a file of
// it does not exist.
func Check(j *jobfile.Job, o Options) error {
	if _, err := tableOutput(j, o.Output); err != nil {
		return err
	}
	if j.Window.Mode == window.Discarding {
		return fmt.Errorf("%s: mode discarding writes deltas, and a table of deltas has no row per window to correct", j.File)
	}
	if j.Ingestion && j.ArrivalField == nil {
		return fmt.Errorf("%s: time.ingestion counts events by when weir read them, which no ledger holds: give time.arrival_field, or reconcile the job that reads the events' own time", j.File)
	}
	if j.SentField != nil {
		return fmt.Errorf("%s: time.sent_field corrects each event time by its arrival, which a recount in event time does not replay: weir reconcile cannot recount this job yet", j.File)
	}
	if len(o.Ledger) == 0 {
		return errors.New("no ledger: name the files that hold every event (the input, the late output, a dead-letter queue)")
	}
	for _, f := range o.Ledger {
		if st, err := os.Stat(f); err != nil {
			return fmt.Errorf("--ledger %s: %v", f, errors.Unwrap(err))
		} else if st.IsDir() {
			return fmt.Errorf("--ledger %s: a directory, not a file of events", f)
		}
	}
	return nil
}

// Prepare reads the ledger, recomputes the job's windows from it, reads the
// table and plans a correction for every window that differs.
func Prepare(ctx context.Context, j *jobfile.Job, o Options) (*Plan, error) {
	if err := Check(j, o); err != nil {
		return nil, err
	}
	out, _ := tableOutput(j, o.Output)
	if o.Now == nil {
		o.Now = mtime.Now
	}
	dir, err := vfs.MkdirScratch("", "weir-reconcile-")
	if err != nil {
		return nil, err
	}
	defer vfs.RemoveScratch(dir)
	rep := &Report{Job: j.Name, Table: out.Table.Table, LedgerFiles: o.Ledger}
	ledger := filepath.Join(dir, "ledger.jsonl")
	if err := writeLedger(j, o.Ledger, ledger, o.Now(), rep); err != nil {
		return nil, err
	}
	all, err := recompute(ctx, j, ledger, filepath.Join(dir, "all.jsonl"), false)
	if err != nil {
		return nil, err
	}
	kept := all
	if j.Having != "" {
		if kept, err = recompute(ctx, j, ledger, filepath.Join(dir, "kept.jsonl"), true); err != nil {
			return nil, err
		}
	}
	sink := job.TableSink(j, out, o.Log)
	if err := sink.Open(ctx, connector.Resume{}); err != nil {
		return nil, err
	}
	rows, err := sink.Read(ctx, o.From, o.To)
	if err != nil {
		sink.Close()
		return nil, err
	}
	p := &Plan{rep: rep, sink: sink}
	p.plan(j, o, all, kept, rows)
	rep.count()
	return p, nil
}

// wkey identifies a key's window.
type wkey struct {
	key        string
	start, end mtime.Time
}

// keyText is a key as a report says it and windows are matched by: the
// text of its column, or of a composite key's columns a JSON array of them.
func keyText(cols []string) string {
	switch len(cols) {
	case 0:
		return ""
	case 1:
		return cols[0]
	}
	b, _ := json.Marshal(cols)
	return string(b)
}

// keyParts are the column texts of a keyText.
func keyParts(k string, j *jobfile.Job) []string {
	switch {
	case !j.Keyed():
		return nil
	case j.KeyParts == nil:
		return []string{k}
	}
	var cols []string
	json.Unmarshal([]byte(k), &cols)
	return cols
}

// result is a window's final values, recomputed: each aggregate's JSON
// text ("null" for none).
type result struct {
	vals []string
}

func (p *Plan) plan(j *jobfile.Job, o Options, all, kept map[wkey]result, rows []table.Stored) {
	rep := p.rep
	stored := map[wkey]*table.Stored{}
	var ids []wkey
	for i := range rows {
		r := &rows[i]
		k := wkey{start: r.WindowStart, end: r.WindowEnd}
		k.key = keyText(r.Key)
		stored[k] = r
		ids = append(ids, k)
	}
	for k := range all {
		if k.start >= o.From && k.start < o.To {
			if _, ok := stored[k]; !ok {
				ids = append(ids, k)
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end), strings.Compare(a.key, b.key)) < 0
	})
	reason := o.Reason
	if reason == "" {
		reason = "reconciled from the ledger"
	}
	for _, k := range ids {
		w := Window{Key: k.key, Start: k.start, End: k.end, WindowStart: k.start.String(), WindowEnd: k.end.String()}
		st := stored[k]
		live := st != nil && st.Status != "retracted"
		if st != nil {
			w.Base = st.Revision
		}
		res, inLedger := all[k]
		_, passes := kept[k]
		switch {
		case !inLedger && live:
			w.Outcome, w.Note = NotCorrectable, "the ledger has no event of this window"
		case !inLedger:
			continue // a tombstone the ledger agrees with
		case !live && !passes:
			w.Outcome, w.Note = AlreadyRight, "no row, as having says"
		default:
			changes := diff(j, st, live, res)
			if changes == "" && st.Version == j.Version {
				w.Outcome = AlreadyRight
				break
			}
			if changes == "" {
				changes = fmt.Sprintf("version %d -> %d", st.Version, j.Version)
			}
			if !passes {
				changes += "; no longer passes having"
			}
			if lower := lowered(j, st, live, res); lower != "" && !o.AllowLower {
				w.Outcome, w.Changes = LedgerIncomplete, changes
				w.Note = "the ledger would lower " + lower + ", which no late event can: it lacks events (--allow-lower publishes it anyway)"
				break
			}
			w.Outcome, w.Changes = Corrected, changes
			w.Revision = w.Base + 1
			c := table.Correction{Base: st, WindowStart: k.start, WindowEnd: k.end, Revision: w.Revision,
				Version: j.Version, Timing: "LATE", Reason: reason + " (" + changes + ")", At: o.Now()}
			if st != nil {
				c.Timing = st.Timing
			}
			for _, v := range keyParts(k.key, j) {
				c.Key = append(c.Key, v)
			}
			for i, a := range j.Aggregates {
				c.Values = append(c.Values, sqlValue(a, res.vals[i]))
			}
			p.fixes = append(p.fixes, c)
			p.idx = append(p.idx, len(rep.Windows))
		}
		rep.Windows = append(rep.Windows, w)
	}
}

// diff says which values of the row differ from the ledger's: "orders 3 ->
// 4, spent 30 -> 41.5"; every value is new for a window without a row.
func diff(j *jobfile.Job, st *table.Stored, live bool, res result) string {
	var parts []string
	for i, a := range j.Aggregates {
		want := res.vals[i]
		if !live {
			parts = append(parts, fmt.Sprintf("%s %s", a.Name, want))
			continue
		}
		have := st.Values[i]
		if sameValue(a, have, want) {
			continue
		}
		shown := "null"
		if have.Valid {
			shown = have.String
		}
		parts = append(parts, fmt.Sprintf("%s %s -> %s", a.Name, shown, want))
	}
	if !live && len(parts) > 0 {
		return "new row: " + strings.Join(parts, ", ")
	}
	return strings.Join(parts, ", ")
}

// lowered names the counts the recomputed values would lower ("orders 3 ->
// 1"), or "": a count only grows as events come.
func lowered(j *jobfile.Job, st *table.Stored, live bool, res result) string {
	if !live {
		return ""
	}
	var parts []string
	for i, a := range j.Aggregates {
		switch a.Kind {
		case jobfile.AggCount, jobfile.AggCountField, jobfile.AggCountDistinct:
		default:
			continue
		}
		have := st.Values[i]
		h, err1 := strconv.ParseFloat(have.String, 64)
		w, err2 := strconv.ParseFloat(res.vals[i], 64)
		if have.Valid && err1 == nil && err2 == nil && w < h {
			parts = append(parts, fmt.Sprintf("%s %s -> %s", a.Name, have.String, res.vals[i]))
		}
	}
	return strings.Join(parts, ", ")
}

// sameValue compares a stored value with a recomputed one as numbers (the
// tables keep them as numeric, double or integer columns), or, for an
// aggregate whose value is JSON text (first, last, histogram, top), as the
// text the table holds (job.TableValueText).
func sameValue(a jobfile.Aggregate, have sql.NullString, want string) bool {
	if want == "null" {
		return !have.Valid
	}
	if !have.Valid {
		return false
	}
	if a.JSONValued() {
		return have.String == job.TableValueText(want)
	}
	h, err1 := strconv.ParseFloat(have.String, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	if err1 != nil || err2 != nil {
		return have.String == want
	}
	return h == w
}

// sqlValue is a recomputed value as the table connector takes it: counts as
// integers, the others as exact decimals where they are written so.
func sqlValue(a jobfile.Aggregate, text string) any {
	if text == "null" {
		return nil
	}
	switch a.Kind {
	case jobfile.AggCount, jobfile.AggCountField, jobfile.AggCountDistinct, jobfile.AggApproxDistinct:
		n, _ := strconv.ParseInt(text, 10, 64)
		return n
	case jobfile.AggAvg, jobfile.AggPercentile, jobfile.AggMedian:
		f, _ := strconv.ParseFloat(text, 64)
		return f
	}
	if a.JSONValued() {
		return job.TableValueText(text)
	}
	if d, ok := parseDecimal(text); ok {
		return d
	}
	f, _ := strconv.ParseFloat(text, 64)
	return f
}

// parseDecimal reads a plain decimal such as "-473.5".
func parseDecimal(s string) (table.Decimal, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 18 || strings.ContainsAny(s, "eE") {
		return table.Decimal{}, false
	}
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil {
		return table.Decimal{}, false
	}
	return table.Decimal{Unscaled: n, Scale: int8(len(frac))}, true
}

func (r *Report) count() {
	r.Corrected, r.AlreadyRight, r.NotCorrectable, r.Raced, r.Incomplete = 0, 0, 0, 0, 0
	r.Ranges = r.Ranges[:0]
	for i := range r.Windows {
		w := &r.Windows[i]
		if n := len(r.Ranges); n == 0 || r.Ranges[n-1].WindowStart != w.WindowStart || r.Ranges[n-1].WindowEnd != w.WindowEnd {
			r.Ranges = append(r.Ranges, Range{WindowStart: w.WindowStart, WindowEnd: w.WindowEnd})
		}
		g := &r.Ranges[len(r.Ranges)-1]
		switch w.Outcome {
		case Corrected:
			r.Corrected++
			g.Corrected++
		case AlreadyRight:
			r.AlreadyRight++
			g.AlreadyRight++
		case NotCorrectable:
			r.NotCorrectable++
			g.NotCorrectable++
		case LedgerIncomplete:
			r.Incomplete++
			g.Incomplete++
		case Raced:
			r.Raced++
			g.Raced++
		}
	}
}

// deadLetter reports whether v is a record weir set aside (its late output,
// its quarantine, its dead letters) and returns the event it holds as read,
// or nil when it holds none whole (it was cut, or is not there).
func deadLetter(v *fastjson.Value) ([]byte, bool) {
	if v.Get("reason") == nil {
		return nil, false
	}
	for _, name := range []string{"event", "raw"} {
		if v.Get(name+"_bytes") != nil {
			return nil, true // only its first bytes were kept
		}
		if f := v.Get(name); f != nil {
			if f.Type() == fastjson.TypeObject {
				return f.MarshalTo(nil), true
			}
			if f.Type() == fastjson.TypeString {
				return slices.Clone(f.GetStringBytes()), true
			}
		}
		if f := v.Get(name + "_base64"); f != nil && f.Type() == fastjson.TypeString {
			b, err := base64.StdEncoding.DecodeString(string(f.GetStringBytes()))
			if err != nil {
				return nil, true
			}
			return b, true
		}
	}
	return nil, true
}

// writeLedger merges the ledger's files into one file of events in
// event-time order (stable), de-duplicated: the first entry of an id is
// kept, or, with version_field, the one of the highest version (the first
// of it), as weir run keeps it.
func writeLedger(j *jobfile.Job, files []string, path string, now mtime.Time, rep *Report) error {
	type event struct {
		ts  mtime.Time
		raw []byte
	}
	var evs []event
	seen := map[string]int{} // an id's entry in evs
	var versions []int64     // of each entry, with version_field
	var p fastjson.Parser
	first, last := mtime.MaxTime, mtime.MinTime
	// A ledger line is validated as weir run validates a line, with the
	// job's rules (its arrival field, the latest event time its windows can
	// hold, max_future against the line's arrival, or now without one), and
	// set aside for the same reasons.
	rules := job.LineRules(j)
	var slab []byte // the texts of a line's numbers
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			rep.LedgerLines++
			unreadable := func(why string) {
				rep.LedgerUnreadable++
				if rep.Unreadable == nil {
					rep.Unreadable = map[string]int64{}
				}
				rep.Unreadable[why]++
			}
			v, err := p.ParseBytes(line)
			if err != nil || v.Type() != fastjson.TypeObject {
				unreadable("not_json")
				continue
			}
			raw := line
			if inner, ok := deadLetter(v); ok {
				// A record of the late output or the quarantine: the
				// event it holds.
				if inner == nil {
					unreadable("not_json")
					continue
				}
				if v, err = p.ParseBytes(inner); err != nil || v.Type() != fastjson.TypeObject {
					unreadable("not_json")
					continue
				}
				raw = inner
			}
			var t linedec.Times
			slab = slab[:0]
			tf := rules.JSON(v, &slab)
			rules.Read(&t, &tf, now, mtime.MinTime)
			switch t.Kind {
			case linedec.Watermark:
				continue // not an event
			case linedec.Rejected:
				unreadable(t.Reason)
				continue
			}
			ts := t.Time
			id := string(raw)
			if j.ID != nil {
				// The id as weir run reads it (its identity: 1 and 1.0 are
				// one id, "1" and 1 two), so that what weir run counted as a
				// duplicate is one here too.
				idv := source.ValueOf(source.Get(v, j.ID), &slab)
				if !linedec.IsScalar(&idv) {
					unreadable("no_id")
					continue
				}
				id = string(linedec.AppendIdentity(nil, &idv))
			}
			var version int64
			if j.VersionField != nil {
				var reason string
				if version, reason, _ = job.ReadVersion(source.Get(v, j.VersionField), j.VersionField); reason != "" {
					unreadable(reason)
					continue
				}
			}
			if i, ok := seen[id]; ok {
				rep.LedgerDuplicates++
				if j.VersionField != nil && version > versions[i] {
					evs[i], versions[i] = event{ts, slices.Clone(raw)}, version
					first, last = min(first, ts), max(last, ts)
				}
				continue
			}
			seen[id] = len(evs)
			versions = append(versions, version)
			evs = append(evs, event{ts, slices.Clone(raw)})
			first, last = min(first, ts), max(last, ts)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return fmt.Errorf("ledger %s: %w", name, err)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].ts < evs[j].ts })
	rep.LedgerEvents = int64(len(evs))
	if len(evs) > 0 {
		rep.LedgerFirst, rep.LedgerLast = first.String(), last.String()
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, e := range evs {
		w.Write(e.raw)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// recompute runs the job over the ledger with a perfect watermark, no
// lateness and the default trigger, and returns each window's final
// values; with having, only the windows that pass it.
func recompute(ctx context.Context, j *jobfile.Job, ledger, out string, having bool) (map[wkey]result, error) {
	if _, err := job.Run(ctx, j.Recount(ledger, out, having), job.Options{Log: discard{}}); err != nil {
		return nil, fmt.Errorf("recomputing from the ledger: %w", err)
	}
	return readPanes(j, out)
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// readPanes reads the final values of every window from a results file.
func readPanes(j *jobfile.Job, path string) (map[wkey]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res := map[wkey]result{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, err
		}
		if string(p["retract"]) == "true" {
			continue
		}
		k := wkey{start: mtime.MinTime, end: mtime.MaxTime}
		for _, f := range []struct {
			name string
			dst  *mtime.Time
		}{{"window_start", &k.start}, {"window_end", &k.end}} {
			if raw, ok := p[f.name]; ok {
				var s string
				json.Unmarshal(raw, &s)
				t, err := mtime.Parse([]byte(s))
				if err != nil {
					return nil, err
				}
				*f.dst = t
			}
		}
		// As the table holds it.
		k.key = keyText(job.TableKeyTexts(j, string(p["key"])))
		r := result{}
		for _, a := range j.Aggregates {
			v := string(p[a.Name])
			if v == "" {
				v = "null"
			}
			r.vals = append(r.vals, v)
		}
		res[k] = r // the last pane of a window is its final value
	}
	return res, sc.Err()
}
