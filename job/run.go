package job

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/translate"
	"github.com/weirstream/weir/vfs"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Options are the parts of a run that do not come from the job file.
type Options struct {
	Stdin  io.Reader // for source "-"
	Stdout io.Writer // for outputs "-"
	// Log receives one line per notable event (resuming, a checkpoint that
	// failed, a corrupt checkpoint skipped); nil discards them.
	Log io.Writer
	// Progress, when set, receives a one-line progress report a few times a
	// second (lines/s, watermark, open windows), each ending in "\r".
	Progress io.Writer
	// ProgressEvery, when positive, logs a line of progress at that
	// interval while a live job runs: read, accepted, late, duplicates,
	// quarantined, panes, the watermark and its lag, the source's backlog.
	ProgressEvery time.Duration
	// From restores from this checkpoint or savepoint directory instead of
	// the newest one in the job's checkpoint directory.
	From string
	// NoSavepointOnStop skips the savepoint normally taken when the job is
	// stopped (ctx cancelled).
	NoSavepointOnStop bool
	// FS is the file system checkpoints and output files are written to
	// (tests inject failures and crashes); nil is the real one.
	FS checkpoint.FS

	// Console keeps what the web console shows (recent panes); see
	// Runnable.Console.
	Console bool
	// Force takes existing output files over even when weir has no record
	// of writing them (weir run --force); without it, weir refuses to
	// overwrite or cut back a file it cannot prove it wrote.
	Force bool
	// AcceptChangedInput reads an input file that is not the one the
	// restored checkpoint read (regenerated, replaced) from its start,
	// instead of refusing it (weir run --accept-changed-input); the summary
	// says so.
	AcceptChangedInput bool
	// DropState names the kinds of state (engine.StateWindows,
	// engine.StateDedup) that a restore starts afresh when the checkpoint's
	// cannot carry over into the job as it is now (its window, key, time or
	// id field changed): weir run --drop-state. Positions and the rest
	// carry over; the summary and the acceptance record say what was
	// dropped.
	DropState []string
	// Fresh starts the job from its beginning whatever its checkpoint
	// directory holds (weir run --fresh): its checkpoints are left behind,
	// kept but never restored, and every output gets every result again.
	// It runs again a job whose last run finished and whose outputs cannot
	// take back what that run wrote (a topic), which is otherwise refused.
	Fresh bool
	// AllowAllQuarantined runs a job whose first AllQuarantinedLines lines
	// are all quarantined to its end, instead of stopping it (weir run
	// --allow-all-quarantined).
	AllowAllQuarantined bool
	// Decoders is how many goroutines decode the input's lines (each
	// input's, in a job of two), the source loop's own included; 0 is one
	// per core the Go runtime schedules on (GOMAXPROCS). The lines are
	// still accounted for and windowed one by one in arrival order, so
	// the output does not depend on it. A task of a group job, and a job
	// with a partition field, decode in the source loop alone.
	Decoders int

	// CheckpointAfter, when set, is asked after every batch of the input
	// (numbered from 1) whether to take a checkpoint or a savepoint there:
	// tests put checkpoints, and faults, at known places with it.
	CheckpointAfter func(batch int64) (checkpoint.Kind, bool)

	// savepointEvery and checkpointEvery take a savepoint or a checkpoint
	// after every so many batches of the input; afterBatch is called after
	// every batch (tests).
	savepointEvery, checkpointEvery int64
	afterBatch                      func(batch int64)
	// stopAfter stops the job after that batch, with a savepoint.
	stopAfter int64
	// task, for a task of a consumer-group job: its partition, its
	// transactions and where its checkpoints go.
	task *group.Task
	// decoder is the source's decoder when a group built one for all its
	// tasks (newDecoder).
	decoder plan.Decoder
}

// RuntimeError is a failure while a job runs (as opposed to a bad job
// file): an output that cannot be written, checkpoints that keep failing.
type RuntimeError struct {
	Msg string
	Err error
}

func (e *RuntimeError) Error() string { return e.Msg }
func (e *RuntimeError) Unwrap() error { return e.Err }

// Summary accounts for every line of the input: Read = Accepted + Duplicates
// + TooLate + BeyondDedupHorizon + Filtered + Superseded + RevisionsTooLate
// + Quarantined + InFlight (engine.Accounting). Watermark-only lines and
// blank lines are not events and are counted apart.
type Summary struct {
	Job string `json:"job"`
	// Aggregation names the aggregation of a job of several whose
	// summary this is; Aggregations are the others' summaries, in the
	// summary of the first (every one has the same input's accounting).
	Aggregation  string     `json:"aggregation,omitempty"`
	Aggregations []*Summary `json:"aggregations,omitempty"`
	engine.Accounting
	// InFlight counts the events that had been read, but not yet taken
	// by the windows, when a job stopped at once (a failure, or a stop that
	// could not wait): the next run reads them again from its checkpoint.
	InFlight int64 `json:"in_flight,omitempty"`
	// Refused counts, by output, the panes and too-late events an output
	// refused for a reason of their own (a value it cannot store): not
	// written there, but to dead_letter if the job has one.
	Refused map[string]int64 `json:"refused,omitempty"`
	// Lost counts the records the source skipped knowing they were there
	// (Kafka records deleted before they were read, on_gap: skip): never
	// read, so not in Read.
	Lost              int64            `json:"lost,omitempty"`
	QuarantineReasons map[string]int64 `json:"quarantine_reasons"`
	LateAccepted      int64            `json:"late_accepted"`
	// Revisions counts the events of a versioned job (version_field) that
	// replaced their earlier version in the results: a part of Accepted
	// (or Filtered).
	Revisions int64 `json:"revisions,omitempty"`
	// LateForSomeWindows counts the accepted events too late for some of
	// their windows (a sliding window's earlier ones): each is in the late
	// output too, naming the windows it missed.
	LateForSomeWindows int64 `json:"late_for_some_windows"`
	// TriggerFinished counts the events that came for a window whose
	// composite trigger had finished (in TooLate, or in LateForSomeWindows
	// when other windows took them): each is in the late output with the
	// reason trigger_finished.
	TriggerFinished int64 `json:"trigger_finished,omitempty"`
	PanesFired      int64 `json:"panes_fired"`
	PanesWritten    int64 `json:"panes_written"`
	WindowsFired    int64 `json:"windows_fired"`
	LateWritten     int64 `json:"late_written"`
	WatermarkLines  int64 `json:"watermark_lines"`
	BlankLines      int64 `json:"blank_lines"`
	// Heartbeats counts the sources' heartbeats (heartbeat:): records
	// that advanced their partition's event time, not events, not in Read.
	Heartbeats      int64         `json:"heartbeats,omitempty"`
	HavingErrors    int64         `json:"having_errors,omitempty"`
	TooLateByWindow []WindowDrops `json:"too_late_by_window"`
	Watermark       string        `json:"watermark"`
	// InputRestarted says why the input was read from its start although
	// the job resumed from a checkpoint (--accept-changed-input: the file
	// was not the one the checkpoint read).
	InputRestarted string `json:"input_restarted,omitempty"`
	// OutputsAdded names the outputs added to the job since the checkpoint
	// it resumed from: they hold only the results from there on.
	OutputsAdded []string `json:"outputs_added,omitempty"`
	// RestoreChanges says what the restore did with a checkpoint of the
	// job as it was before a change (an aggregate added, the lateness
	// changed), a line per change; DroppedState what it started afresh,
	// as Options.DropState said.
	RestoreChanges []string `json:"restore_changes,omitempty"`
	DroppedState   []string `json:"dropped_state,omitempty"`
	Interrupted    bool     `json:"interrupted,omitempty"`
	Savepoint      string   `json:"savepoint,omitempty"`
	// Failed is set when the job stopped with an error: the counts of what
	// was written are what reached the outputs.
	Failed bool `json:"failed,omitempty"`
	// Join is what a job with a join made, and the other input's
	// accounting; the summary's own accounting is the job's source's.
	Join *JoinSummary `json:"join,omitempty"`
	// Lookup is what a job with a lookup made.
	Lookup *LookupSummary `json:"lookup,omitempty"`
	// ReadThisRun counts the lines this run read, when it resumed from a
	// checkpoint: Read counts every run's. Not in the summary file, which
	// is the same whatever the restarts.
	ReadThisRun int64 `json:"-"`

	elapsed time.Duration
}

// WindowDrops is the number of too-late events dropped for one window (over
// all keys). An event of a sliding window is counted in every window it was
// too late for.
//
// The summary counts the latest windows with drops one by one (1,024 at
// most per operator instance); the drops of older ones come first, summed,
// with Before the end of the latest of them.
type WindowDrops struct {
	Start   string `json:"window_start,omitempty"`
	End     string `json:"window_end,omitempty"`
	Before  string `json:"before,omitempty"`
	Dropped int64  `json:"dropped"`
}

// TriggerFinishedNote is what a line of counts says after the too late of
// the finished events, those that came for a window whose composite
// trigger had finished: among the too late, or among the accepted events
// too late for some of their windows (partly) when other windows took
// them. Nothing when there are none.
func TriggerFinishedNote(finished, partly int64) string {
	switch {
	case finished == 0:
		return ""
	case partly == 0:
		return fmt.Sprintf(" (%d for windows whose trigger had finished)", finished)
	}
	return fmt.Sprintf(" (%d, of these and of those too late for some of their windows, for windows whose trigger had finished)", finished)
}

// reasonsText is the quarantine's reasons with their counts, in the
// order of their names: "not_json 2, no_time 1".
func reasonsText(reasons map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(reasons)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, reasons[k]))
	}
	return strings.Join(parts, ", ")
}

// Text is the summary for a person, as printed on standard error.
func (s *Summary) Text() string {
	q := ""
	if len(s.QuarantineReasons) > 0 {
		q = " (" + reasonsText(s.QuarantineReasons) + ")"
	}
	rate := ""
	if secs := s.elapsed.Seconds(); secs > 0 && s.ReadThisRun == s.Read {
		rate = fmt.Sprintf(" in %.2fs (%.0f lines/s)", secs, float64(s.Read+s.WatermarkLines)/secs)
	} else if secs > 0 {
		// A run that resumed: what it read itself, and its rate.
		rate = fmt.Sprintf(" (%d of them in this run, which resumed from a checkpoint) in %.2fs (%.0f lines/s)", s.ReadThisRun, secs, float64(s.ReadThisRun)/secs)
	}
	name := s.Job
	if name == "" {
		name = "job"
	}
	if s.Aggregation != "" {
		name += " (" + s.Aggregation + ")"
	}
	beyond := ""
	if s.BeyondDedupHorizon > 0 {
		beyond = fmt.Sprintf(", %d beyond the de-duplication horizon", s.BeyondDedupHorizon)
	}
	inFlight := ""
	if s.InFlight != 0 {
		inFlight = fmt.Sprintf(", %d in flight when it stopped (read again from the last checkpoint)", s.InFlight)
	}
	filtered := ""
	if s.Filtered > 0 {
		filtered = fmt.Sprintf(", %d filtered out by where", s.Filtered)
	}
	partly := ""
	if s.LateForSomeWindows > 0 {
		partly = fmt.Sprintf(", %d too late for some of their windows", s.LateForSomeWindows)
	}
	beyond = TriggerFinishedNote(s.TriggerFinished, s.LateForSomeWindows) + beyond
	if s.Revisions > 0 {
		partly += fmt.Sprintf(", %d revisions replacing an earlier version", s.Revisions)
	}
	if s.Superseded > 0 || s.RevisionsTooLate > 0 {
		beyond += fmt.Sprintf(", %d superseded by a higher version, %d revisions too late", s.Superseded, s.RevisionsTooLate)
	}
	text := fmt.Sprintf("weir: %s: read %d lines%s: %d accepted (%d late within allowed lateness%s), %d duplicates%s, %d too late%s, %d quarantined%s%s\n",
		name, s.Read, rate, s.Accepted, s.LateAccepted, partly, s.Duplicates, filtered, s.TooLate, beyond, s.Quarantined, q, inFlight)
	switch {
	case s.Join != nil:
		text += s.joinText(name)
	case s.Lookup != nil:
		text += s.lookupText(name)
	default:
		written := fmt.Sprintf("%d panes written (%d fired), %d windows fired, %d too-late events written", s.PanesWritten, s.PanesFired, s.WindowsFired, s.LateWritten)
		if s.Failed {
			written = fmt.Sprintf("%d panes and %d too-late events reached the outputs before the failure (%d panes fired)", s.PanesWritten, s.LateWritten, s.PanesFired)
		}
		text += fmt.Sprintf("weir: %s: %s; watermark %s\n", name, written, s.Watermark)
	}
	if s.Heartbeats > 0 {
		text += fmt.Sprintf("weir: %s: %d heartbeats advanced their partitions' event time (not events, not in the lines read)\n", name, s.Heartbeats)
	}
	if s.HavingErrors > 0 {
		text += fmt.Sprintf("weir: %s: the having expression failed on %d panes; they were written unfiltered\n", name, s.HavingErrors)
	}
	if len(s.Refused) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(s.Refused)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Refused[k]))
		}
		text += fmt.Sprintf("weir: %s: refused by an output, for a value it cannot store (not written there; kept in dead_letter, if set): %s\n", name, strings.Join(parts, ", "))
	}
	if s.Lost > 0 {
		text += fmt.Sprintf("weir: %s: %d records were lost: deleted from the input before they were read, and skipped (on_gap: skip)\n", name, s.Lost)
	}
	if s.InputRestarted != "" {
		text += fmt.Sprintf("weir: %s: the input was read from its start: it is not the file the checkpoint read (%s)\n", name, s.InputRestarted)
	}
	if len(s.OutputsAdded) > 0 {
		text += fmt.Sprintf("weir: %s: %s added since the checkpoint: only the results from there on\n", name, strings.Join(s.OutputsAdded, ", "))
	}
	for _, c := range s.RestoreChanges {
		text += fmt.Sprintf("weir: %s: restored into the changed job: %s\n", name, c)
	}
	if len(s.DroppedState) > 0 {
		text += fmt.Sprintf("weir: %s: started afresh, as --drop-state said: %s; the positions and the rest of the state carried over\n", name, strings.Join(s.DroppedState, ", "))
	}
	if s.Interrupted {
		text += fmt.Sprintf("weir: %s: stopped before the end of the input", name)
		if s.Savepoint != "" {
			text += "; savepoint " + s.Savepoint
		}
		text += "\n"
	}
	for _, o := range s.Aggregations {
		text += o.Text()
	}
	return text
}

// Runnable is a job turned into an engine, ready to run.
type Runnable struct {
	j      *jobfile.Job
	o      Options
	e      *engine.Engine
	head   *engine.Head[string, record]
	win    *engine.Window[string, record, acc, []outVal]
	out    *engine.SinkNode[pane]
	outs   []*engine.SinkNode[pane]    // every results output, in order
	late   *engine.SinkNode[plan.Item] // the late output's, its events formatted
	having *havingFilter
	db     *state.DB
	tmp    string // a temporary state directory to remove at the end
	// ids keeps the ids of a join's second input (join.with.id) on the
	// Pebble backend, in idsTmp: the first input's are in db, under the
	// same keys.
	ids     *state.DB
	idsTmp  string
	accept  *acceptanceTracker         // panes written, for the acceptance record
	recent  *console.Recent[pane]      // panes, for the console
	recLate *console.Recent[lateEvent] // too-late events, for the console
	warn    []string
	fileSrc *file.Source // the input, when it is a file
	// What the nodes of the plan share as they are built: the line
	// decoder, the de-duplication ids, and what a restore into a changed
	// job reads the windows and the tables' rows with.
	lp              *lineParser
	dd              state.Dedup
	restoreCodec    *codec
	partial, former []string
	// restoredRead is what the runs before this one read (the restored
	// checkpoint's count).
	restoredRead int64
	ended        bool // the summary and acceptance record are written
	// restored says what the restore did with a changed job's checkpoint
	// (Summary.RestoreChanges), dropped what it started afresh.
	restored, dropped []string
	// In a job of several aggregations, the runnable of the first builds
	// the engine and the source and runs them; siblings are the others,
	// each with its head, windows and outputs, and first is theirs.
	siblings []*Runnable
	first    *Runnable
	// jn is what a job with a join builds (jobfile.Join): it has no
	// aggregation.
	jn *joinRun
	// lk is what a job with a lookup builds (jobfile.Lookup): it has no
	// aggregation.
	lk *lookupRun
}

// aggregations are the runnables of the job's aggregations: rn, then its
// siblings.
func (rn *Runnable) aggregations() []*Runnable {
	return append([]*Runnable{rn}, rn.siblings...)
}

// newRunnable is the runnable of j and of each of its sibling
// aggregations.
func newRunnable(j *jobfile.Job, o Options) *Runnable {
	rn := &Runnable{j: j, o: o}
	for _, sj := range j.Siblings {
		rn.siblings = append(rn.siblings, &Runnable{j: sj, o: o, first: rn})
	}
	return rn
}

// Build turns a validated job into an engine: its source, its head (the line
// decoder, de-duplication, the watermark), its window stage and its sinks.
// With checkpoints it finds the checkpoint to resume from. Nothing runs and
// nothing is written yet.
func Build(j *jobfile.Job, o Options) (*Runnable, error) {
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	o.Log, o.Progress = j.Secrets().Writer(o.Log), j.Secrets().Writer(o.Progress)
	rn := newRunnable(j, o)
	build := rn.build
	switch {
	case j.Join != nil:
		build = rn.buildJoin
	case j.Lookup != nil:
		build = rn.buildLookup
	}
	if err := build(); err != nil {
		if rn.e != nil {
			rn.e.Discard()
		}
		if rn.lk != nil && rn.lk.table != nil {
			rn.lk.table.Close()
		}
		for _, a := range rn.aggregations() {
			a.closeState()
		}
		return nil, j.RedactError(err)
	}
	return rn, nil
}

// Engine is the job's engine: run it with Run, control it with Control.
func (rn *Runnable) Engine() *engine.Engine { return rn.e }

// Warnings are what the job said at start about its settings.
func (rn *Runnable) Warnings() []string { return rn.warn }

// Console is the job's web console, metrics and status (built with
// Options.Console).
func (rn *Runnable) Console() *console.Server {
	j := rn.j
	info := console.JobInfo{Name: j.Name, File: j.File, Text: j.Text(), Warnings: j.ShownAll(rn.warn)}
	add := func(name, value string) {
		info.Settings = append(info.Settings, console.Setting{Name: name, Value: j.Shown(value)})
	}
	if lk := j.Lookup; lk != nil {
		add("lookup", fmt.Sprintf("%s, by %s in %s, cache %s", lk.Kind, j.KeyName(), lk.What(), lookupCacheText(lk)))
		add("watermark", describeWatermark(j))
	} else if jo := j.Join; jo != nil {
		// In the plan's words (weir plan's).
		interval := (&plan.Join{Lower: jo.Lower, Upper: jo.Upper, Temporal: jo.Temporal, Window: jo.Window}).Interval()
		add("join", fmt.Sprintf("%s, %s by %s, %s", jo.Kind, jo.With.InputName(), jo.With.KeyName(), interval))
		add("watermark", describeWatermark(j))
		add("allowed lateness", mtime.FormatDuration(jo.AllowedLateness))
	} else {
		add("window", j.Window.Assigner.String())
		add("watermark", describeWatermark(j))
		add("trigger", j.Window.Trigger.Describe())
		add("allowed lateness", mtime.FormatDuration(j.Window.AllowedLateness))
		add("mode", j.Window.Mode.String())
	}
	for _, o := range j.AllOutputs() {
		add(o.Field, o.Kind())
	}
	if j.Checkpoint.Dir != "" {
		add("checkpoints", fmt.Sprintf("every %s in %s", mtime.FormatDuration(j.Checkpoint.Interval), j.Checkpoint.Dir))
	}
	srv := &console.Server{Control: rn.e.Control(), Job: info, Panes: rn.recent, Late: rn.recLate, Redact: j.RedactJSON, Access: ConsoleAccess(j)}
	if jr := rn.jn; jr != nil {
		// A join's recent records, and its records too late.
		srv.Panes, srv.Late = jr.recent, jr.recLate
	}
	if lr := rn.lk; lr != nil {
		// A lookup's recent records, and those set aside.
		srv.Panes, srv.Late = lr.recent, lr.recLate
	}
	return srv
}

// describeWatermark is the job's watermark, as the plan says it.
func describeWatermark(j *jobfile.Job) string {
	from := ""
	if j.Watermark.Kind == watermark.Scripted {
		from = j.WMField.String()
	}
	return plan.DescribeWatermark(j.Watermark, from)
}

func (rn *Runnable) logf(format string, args ...any) { rn.e.Logf(format, args...) }

func (rn *Runnable) build() error {
	j, o := rn.j, rn.o
	rn.warn = j.Warnings()
	dec, err := rn.sourceDecoder()
	if err != nil {
		return err
	}
	for _, a := range rn.aggregations() {
		a.lp = newLineParser(a.j)
		a.lp.useDecoder(dec)
		if a.j.Acceptance != "" {
			a.accept = newAcceptanceTracker()
		}
	}
	if o.task != nil && j.Key != nil {
		rn.lp.route = o.task.Route
		rn.lp.route.Log = func(s string) { rn.logf("%s", s) }
	}
	if o.Console {
		rn.consoleTaps()
	}
	if err := rn.translate(); err != nil {
		return err
	}
	e := rn.e
	for _, a := range rn.aggregations() {
		a.out = a.outs[0]
	}
	rn.fileModes(e)
	rn.reportStateBytes()
	if r := e.Restore(); r != nil {
		var howItRuns []string
		rn.restored, howItRuns = restoreNotes(r)
		for _, c := range howItRuns {
			rn.logf("restored into the changed job: %s", c)
		}
		for _, name := range r.Dropped {
			for _, a := range rn.aggregations() {
				switch id := aggregationID(a.j); name {
				case translate.Participant(id):
					a.dropped = append(a.dropped, fmt.Sprintf("the open windows of %d keys", a.win.DroppedKeys()))
				case translate.HeadName(id):
					a.dropped = append(a.dropped, "the de-duplication ids")
				}
			}
		}
	}
	if c := e.Resumed(); c != nil && o.task == nil { // a task says where it restored from itself
		rn.logf("resuming from %s (line %d, %d instances, now %d)", c.Path, file.Line(e.RestoredPosition(nodeInput)), rn.win.RestoredInstances(), j.Parallelism)
	}
	return nil
}

// translate builds the engine of the job's plan (rn.e, through Opened),
// wording what the translator refuses in the job file's terms.
func (rn *Runnable) translate() error {
	j := rn.j
	tc := translate.Config{Engine: rn.engineConfig(), Fingerprint: fingerprint(j), Task: rn.o.task, Opened: rn.opened}
	if _, err := translate.Build(rn.plan(), tc); err != nil {
		var je *jobfile.Error
		var re *RuntimeError
		if errors.As(err, &je) || errors.As(err, &re) {
			return err
		}
		if rerr := rerunRefusal(j, err); rerr != err {
			return rerr
		}
		return setupError(j, err)
	}
	return nil
}

// rerunRefusal words the engine's refusal to run a finished job again
// (engine.RerunError) in the job file's terms: its outputs, and the flag
// that runs it again on purpose. Any other error is returned as it is.
func rerunRefusal(j *jobfile.Job, err error) error {
	var re *engine.RerunError
	if !errors.As(err, &re) {
		return err
	}
	var outs []string
	for _, name := range re.Sinks {
		what := name
		for _, o := range j.EveryOutput() {
			if o.Field == name {
				what = fmt.Sprintf("%s (%s)", name, o.Kind())
			}
		}
		outs = append(outs, what)
	}
	list := strings.Join(outs, ", ")
	return &jobfile.Error{File: j.File, Msg: fmt.Sprintf("the last run of this job finished (%s): running it again would write every result a second time to %s, which cannot take back what it holds; nothing was run. To run it again on purpose: weir run --fresh (the checkpoints are left behind, kept; %s gets every result again)", re.Checkpoint, list, list)}
}

// opened is what the job does once its engine is open and before its
// nodes are built: a job starting afresh claims its outputs (only files weir
// wrote are replaced), it says its warnings, and a restore into a changed
// job reads the checkpoint's aggregates with a codec of their own.
func (rn *Runnable) opened(e *engine.Engine) error {
	o := rn.o
	for _, a := range rn.aggregations() {
		a.e = e
	}
	if e.Resumed() == nil {
		if err := claimOutputs(rn.j, o.FS, o.Force); err != nil {
			return err
		}
	}
	for _, w := range rn.warn {
		if o.task == nil { // a group's instance says them once for its tasks
			rn.logf("warning: %s", w)
		}
	}
	if r := e.Restore(); r != nil {
		for _, a := range rn.aggregations() {
			part := translate.Participant(aggregationID(a.j))
			a.former = formerValues(a.j, r, part)
			a.restoreCodec, a.partial = restoreCodec(a.j, r, part)
		}
	}
	return nil
}

// engineConfig is the engine's configuration: checkpoints, and what the
// options ask of them.
func (rn *Runnable) engineConfig() engine.Config {
	j, o := rn.j, rn.o
	ecfg := engine.Config{Name: j.Name, Live: j.ArrivalField == nil, Log: o.Log, NoSavepointOnStop: o.NoSavepointOnStop}
	if sp, cp := o.savepointEvery, o.checkpointEvery; sp > 0 || cp > 0 || o.afterBatch != nil || o.CheckpointAfter != nil {
		ecfg.CheckpointAfter = func(b int64) (checkpoint.Kind, bool) {
			if o.afterBatch != nil {
				o.afterBatch(b)
			}
			if o.CheckpointAfter != nil {
				return o.CheckpointAfter(b)
			}
			switch {
			case sp > 0 && b%sp == 0:
				return checkpoint.Savepoint, true
			case cp > 0 && b%cp == 0:
				return checkpoint.Periodic, true
			}
			return "", false
		}
	}
	if n := o.stopAfter; n > 0 {
		ecfg.StopAfter = func(b int64) bool { return b == n }
		// A test's stop at a batch waits for its savepoint however slow the
		// machine (the race detector, a loaded CI): a savepoint given up
		// after a second of grace would make the test depend on the clock.
		ecfg.StopGrace = 10 * time.Minute
	}
	if j.Checkpoint.Dir != "" {
		ecfg.Checkpoint = engine.Checkpointing{
			Dir: j.Checkpoint.Dir, Interval: time.Duration(j.Checkpoint.Interval) * time.Millisecond,
			Keep: j.Checkpoint.Keep, KeepSavepoints: j.Checkpoint.KeepSavepoints, TolerableFailures: j.Checkpoint.TolerableFailures,
			MaxHeld:   j.Checkpoint.MaxHeld,
			DropState: o.DropState, From: o.From, FS: o.FS,
			Fresh: o.Fresh,
		}
		// The record of the end of the input keeps the run's summary: a
		// run that resumes only to commit that record's output reports it.
		ecfg.Checkpoint.FinalRecord = func() []byte {
			sum := rn.summary
			switch {
			case rn.jn != nil:
				sum = rn.joinSummary
			case rn.lk != nil:
				sum = rn.lookupSummary
			}
			b, _ := json.Marshal(sum(nil))
			return b
		}
		// What a job writes when it ends is written before the end is
		// recorded: a run that dies in between leaves it to the next.
		ecfg.Checkpoint.OnEnd = func() error {
			rn.ended = true
			if rn.jn != nil || rn.lk != nil {
				return rn.writeRecordsEnd(rn.finalRecordsSummary(nil))
			}
			return rn.writeEnds(context.Background(), rn.finalSummary(nil))
		}
	}
	return ecfg
}

// reportStateBytes puts what the state takes in the status.
func (rn *Runnable) reportStateBytes() {
	e := rn.e
	if rn.db != nil {
		// Every aggregation's database (one each in a job of several), and
		// a join's second input's ids'.
		var dbs []*state.DB
		for _, a := range rn.aggregations() {
			dbs = append(dbs, a.db)
		}
		if rn.ids != nil {
			dbs = append(dbs, rn.ids)
		}
		e.OnStatus(func(s *engine.Status) {
			s.StateBytes = 0
			for _, db := range dbs {
				s.StateBytes += int64(db.Metrics().DiskSpaceUsage()) + db.CacheBudget()
			}
		})
	} else {
		// The memory backend: the Go heap's live objects, an upper bound,
		// read without stopping the world (runtime.ReadMemStats would, at
		// every scrape).
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		e.OnStatus(func(s *engine.Status) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				s.StateBytes = int64(sample[0].Value.Uint64())
			}
		})
	}
}

// writer is how the items of an output's role (panes, too-late events,
// rejected records, dead letters) are written, whatever the output's kind.
type writer[T any] struct {
	line   file.Encoder[T]               // a line of a file or of standard output
	record kafka.Encoder[T]              // a topic's record
	item   func(b []byte, v T) plan.Item // an item for a registered kind's sink
	id     func(T) uint64                // the identity a topic's records carry
}

// outputSink makes the sink of an output: a file (exactly once at each
// checkpoint, when the job has checkpoints), standard output, a Kafka
// topic (a transaction per checkpoint, or at least once) or a registered
// kind's. A table's is the results' own (newTableSink).
func outputSink[T any](rn *Runnable, o *jobfile.Output, c writer[T]) (*engine.SinkNode[T], error) {
	var s connector.Sink[T]
	var opts []engine.SinkOption
	switch k := o.Destination().(type) {
	case *jobfile.CustomOutput:
		return customSink(rn, o, c.item)
	case *jobfile.KafkaOutput:
		encode := c.record
		var register func(context.Context) error
		log := func(s string) { rn.logf("%s", s) }
		switch k.Format {
		case "avro", "protobuf":
			// The pane's fields, typed, as the registry's format has them.
			var pf interface {
				Record(*plan.PaneFields) (key, value []byte)
				Register(context.Context) error
			}
			var err error
			if k.Format == "avro" {
				pf, err = formats.NewAvroPanes(rn.j.PaneShape(), k.Registry, k.Topic, k.Subjects, log)
			} else {
				pf, err = formats.NewProtobufPanes(rn.j.PaneShape(), k.Registry, k.Topic, k.Subjects, log)
			}
			if err != nil {
				return nil, &RuntimeError{Msg: fmt.Sprintf("%s: %s: %v", rn.j.File, o.Field, err), Err: err}
			}
			var buf []byte
			encode = func(v T) (key, value []byte) {
				it := c.item(buf[:0], v)
				buf = it.JSON[:0]
				return pf.Record(it.Pane)
			}
			register = pf.Register
		case "json_schema":
			js, err := formats.NewJSONSchemaPanes(rn.j.PaneShape(), k.Registry, k.Topic, k.Subjects, log)
			if err != nil {
				return nil, &RuntimeError{Msg: fmt.Sprintf("%s: %s: %v", rn.j.File, o.Field, err), Err: err}
			}
			encode = func(v T) (key, value []byte) { return js.Record(c.record(v)) }
			register = js.Register
		}
		ks := &kafka.Sink[T]{Config: k.KafkaConn, Delivery: k.Delivery, Encode: encode, Identify: c.id,
			TransactionTimeout: time.Duration(k.TransactionTimeout) * time.Millisecond,
			TransactionalID:    transactionalID(rn.j, o.Field), Create: k.Create}
		// The results' topic gets revised panes, keyed by key and window.
		ks.Revisions = o.Role() == "results" && len(rn.j.Revisions()) > 0
		ks.Log = func(s string) { rn.logf("%s", s) }
		if rn.o.task != nil {
			ks.Txn = rn.o.task.Txn
		}
		ks.Prepare = register
		s = ks
		opts = append(opts, engine.Accept(k.Delivery))
	case jobfile.StdoutDestination:
		s = &file.Writer[T]{W: rn.o.Stdout, Encode: c.line}
	case jobfile.FileDestination:
		s = &file.Sink[T]{Path: string(k), Encode: c.line, ExactlyOnce: rn.e.Checkpointed(), FS: rn.o.FS, Force: rn.o.Force}
	default:
		// The job file refuses it (a table holds results only).
		return nil, &RuntimeError{Msg: fmt.Sprintf("%s: %s: %s cannot be written here", rn.j.File, o.Field, k.Writes())}
	}
	opts = append(opts, recordName(rn.j, o))
	n, err := engine.NewSink(rn.e, o.Field, s, opts...)
	if err != nil {
		return nil, setupError(rn.j, err)
	}
	return n, nil
}

// recordName names an output's commit record in checkpoints by what the
// output is (its role and where it writes), not by its place in the job
// file, so that reordering the outputs, or making one output a list, keeps
// each record with its output. Checkpoints of an older weir named it by
// the field.
func recordName(j *jobfile.Job, o *jobfile.Output) engine.SinkOption {
	key, former := recordKey(j, o)
	return engine.RecordName(key, former...)
}

// recordKey is the name of an output's commit record (recordName), and
// the names checkpoints of an older weir gave it.
func recordKey(j *jobfile.Job, o *jobfile.Output) (key string, former []string) {
	role := o.Role()
	// Relative to the job file's directory, however the job file and the
	// output were named (a job run as /srv/job.yaml, then as job.yaml).
	// Checkpoints of an earlier weir named the output relative to the job
	// file's directory as given, when they could (dir).
	base, _ := filepath.Abs(filepath.Dir(j.File))
	rel := func(dir bool) func(string) string {
		return func(p string) string {
			if dir {
				if r, err := filepath.Rel(filepath.Dir(j.File), p); err == nil && filepath.IsLocal(r) {
					return filepath.ToSlash(r)
				}
				return p
			}
			abs, _ := filepath.Abs(p)
			if r, err := filepath.Rel(base, abs); err == nil && filepath.IsLocal(r) {
				return filepath.ToSlash(r)
			}
			return p
		}
	}
	target := func(dir bool) string { return o.Destination().Target(rel(dir)) }
	// A checkpoint's files are named by their records: no slashes.
	key = url.PathEscape(role + ":" + target(false))
	former = []string{o.Field}
	if o.Field == "output[0]" {
		former = append(former, "output")
	}
	if k := url.PathEscape(role + ":" + target(true)); k != key {
		former = append(former, k)
	}
	return key, former
}

// transactionalID is the prefix of a Kafka sink's transactional ids: the
// job's name (or its file's), the output's field, and the instance: stable
// from run to run, different between jobs and outputs.
func transactionalID(j *jobfile.Job, field string) string {
	return fmt.Sprintf("weir-%s-%s-i0", j.DisplayName(), field)
}

// setupError turns an engine's refusal into a job error naming its field,
// in the words of weir run.
func setupError(j *jobfile.Job, err error) error {
	var se *engine.SetupError
	if errors.As(err, &se) && se.Field != "" {
		msg := se.Msg
		var re *engine.RestoreRefusedError
		if errors.As(err, &re) {
			msg = re.Say(DropFlag)
		}
		return &RuntimeError{Msg: fmt.Sprintf("%s: %s: %s", j.File, se.Field, strings.TrimPrefix(msg, se.Field+": ")), Err: err}
	}
	var lb *engine.LeftBehindError
	if errors.As(err, &lb) {
		return &RuntimeError{Msg: lb.Say("--from"), Err: err}
	}
	return &RuntimeError{Msg: err.Error(), Err: err}
}

// DropFlag is how weir run drops a kind of state deliberately on a
// restore (engine.DropWords): --drop-state=KIND.
func DropFlag(kind string) string { return "--drop-state=" + kind }

// openState opens the Pebble backend, in state.dir or a temporary directory,
// and holds the Go heap to the memory budget with a soft limit.
func (rn *Runnable) openState(lp *lineParser) error {
	dir, budget := rn.j.State.Dir, rn.j.State.MemoryBudget
	n := int64(1)
	ids := rn.jn != nil && rn.jn.with.ID != nil
	if ids {
		// A join whose second input has ids keeps them in a database of
		// their own, beside the join's, each within half the budget.
		n = 2
		budget /= n
	}
	if rn.j.Several() {
		// Each aggregation has a database of its own, in a directory of
		// its own, within its share of the budget.
		first := rn
		if rn.first != nil {
			first = rn.first
		}
		n = int64(len(first.aggregations()))
		budget /= n
	}
	var db *state.DB
	var err error
	if dir == "" || rn.o.task != nil || rn.j.Several() || ids {
		// A group's tasks each have a database of their own, in state.dir
		// if the job names one: the changelog is their state's durable
		// copy, the database its working one.
		db, rn.tmp, err = state.OpenScratch(dir, budget)
	} else if db, err = state.Open(dir, budget); err != nil {
		err = fmt.Errorf("cannot open the state database in %s: %w", dir, err)
	}
	if err == nil && ids {
		if rn.ids, rn.idsTmp, err = state.OpenScratch(dir, budget); err != nil {
			db.Close()
			vfs.RemoveScratch(rn.tmp)
			rn.tmp = ""
		}
	}
	if err != nil {
		return &RuntimeError{Msg: err.Error(), Err: err}
	}
	rn.db = db
	if rn.o.task == nil && rn.first == nil {
		// The process's heap held to the budget; a group's instance runs
		// a database per task, each within the budget, and sets no limit.
		debug.SetMemoryLimit(n*db.HeapLimit() - (n-1)*state.HeapHeadroom)
	}
	if lp != nil {
		// Keys come and go: keep only a few at hand.
		lp.keys.max = 1 << 16
	}
	return nil
}

// Run executes the job until its input ends (or ctx is cancelled) and
// returns the summary, which it also writes to the summary file if the job
// names one.
//
// With checkpoints, the job resumes from the newest complete checkpoint (or
// Options.From), and output reaches the files only when the checkpoint that
// covers it is complete; when ctx is cancelled it takes a savepoint and
// returns without error.
func Run(ctx context.Context, j *jobfile.Job, o Options) (*Summary, error) {
	rn, err := Build(j, o)
	if err != nil {
		return nil, err
	}
	return rn.Run(ctx)
}

// memoryCheck is how often the memory backend's state is compared with its
// budget (reading one runtime metric costs a microsecond, and stops nothing).
const memoryCheck = 250 * time.Millisecond

// watchMemory compares the memory backend's state with the job's
// memory_budget while it runs, and warns when it passes it (and each time
// it doubles): the memory backend keeps every key in memory and cannot
// spill, so the budget is a threshold to hear of, not a bound (the Pebble
// backend holds to it). It returns how to stop watching, which checks once
// more: a job shorter than memoryCheck is heard of too.
func (rn *Runnable) watchMemory(budget int64) func() {
	done, stopped := make(chan struct{}), make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	next, keys := budget, int64(0)
	check := func() {
		metrics.Read(sample)
		// The most keys the windows held at once, as far as the checks
		// saw (none are left at the end).
		var now int64
		for _, a := range rn.aggregations() {
			now += a.win.LiveStats().Keys
		}
		keys = max(keys, now)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if used := int64(sample[0].Value.Uint64()); used > next {
			rn.logf("warning: the state takes about %d MiB, more than memory_budget (%d MiB), with up to %d keys: the memory backend keeps every key in memory; state: {backend: pebble} holds to the budget", used>>20, budget>>20, keys)
			for next < used {
				next *= 2
			}
		}
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(memoryCheck)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				check()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		check()
	}
}

// watchState stops the job when the state database cannot write (a full
// disk under state.dir): Pebble would hold the job's writes back for ever.
// It returns how to stop watching.
func (rn *Runnable) watchState() func() {
	failed := func(err error) error {
		return &RuntimeError{Msg: err.Error() + engine.StateHint(err, "state.dir"), Err: err}
	}
	stop := rn.e.WatchState(rn.db, failed)
	if rn.ids == nil {
		return stop
	}
	stopIDs := rn.e.WatchState(rn.ids, failed)
	return func() { stop(); stopIDs() }
}

// Run runs the built job; see the function Run.
func (rn *Runnable) Run(ctx context.Context) (*Summary, error) {
	run := rn.run
	if rn.jn != nil || rn.lk != nil {
		run = rn.runRecords
	}
	sum, err := run(ctx)
	return sum, rn.j.RedactError(err)
}

func (rn *Runnable) run(ctx context.Context) (*Summary, error) {
	start := time.Now()
	if b := rn.j.State.MemoryBudget; b > 0 && rn.db == nil {
		stop := rn.watchMemory(b)
		defer stop()
	}
	var progress *progressReporter
	if rn.o.Progress != nil {
		progress = rn.startProgress()
	}
	for _, a := range rn.aggregations() {
		if a.db != nil {
			stop := a.watchState()
			defer stop()
		}
	}
	stopLog := func() {}
	if rn.o.ProgressEvery > 0 && rn.e.Live() {
		rn.logf("%s", firstPanes(rn.j))
		stopLog = rn.logProgress(rn.o.ProgressEvery)
	}
	err := rn.e.Run(ctx)
	stopLog()
	if progress != nil {
		progress.stop()
	}
	for _, a := range rn.aggregations() {
		if cerr := a.closeState(); cerr != nil && err == nil {
			err = &RuntimeError{Msg: "closing the state database: " + cerr.Error(), Err: cerr}
		}
	}
	sum := rn.finalSummary(err)
	if err = sum.settle(err, start); err != nil {
		for i, a := range rn.aggregations() {
			if a.j.Summary != "" {
				// The summary of a failed run says so (failed: true), with
				// what was in flight when it stopped.
				if serr := writeSummary(a.j, a.j.Summary, sum.of(i), rn.o.Stdout, rn.o.Force); serr != nil {
					rn.logf("%v", serr)
				}
			}
		}
		return sum, err
	}
	if rn.ended && !sum.Interrupted {
		return sum, nil // written when the end was committed
	}
	if err := rn.writeEnds(ctx, sum); err != nil {
		return sum, err
	}
	return sum, nil
}

// settle says in the summary how the run that started at start ended,
// with err: stopped with a savepoint (no error), or failed (err, as a
// RuntimeError).
func (s *Summary) settle(err error, start time.Time) error {
	s.elapsed = time.Since(start)
	var stopped *engine.StoppedError
	if errors.As(err, &stopped) {
		s.Interrupted, s.Savepoint = true, stopped.Savepoint
		return nil
	}
	if err == nil {
		return nil
	}
	s.Failed = true
	var re *RuntimeError
	if !errors.As(err, &re) {
		err = &RuntimeError{Msg: err.Error(), Err: err}
	}
	return err
}

// of is the summary of the job's i-th aggregation, itself alone: the
// first's is s without the others'.
func (s *Summary) of(i int) *Summary {
	if i > 0 {
		return s.Aggregations[i-1]
	}
	if len(s.Aggregations) == 0 {
		return s
	}
	own := *s
	own.Aggregations = nil
	return &own
}

// writeEnds writes what each aggregation of the job writes when it ends.
func (rn *Runnable) writeEnds(ctx context.Context, sum *Summary) error {
	for i, a := range rn.aggregations() {
		if err := a.writeEnd(ctx, sum.of(i)); err != nil {
			return err
		}
	}
	return nil
}

// closeState closes the aggregation's or the join's state database, if it
// has one (and the join's ids' database), and removes its temporary
// directory.
func (rn *Runnable) closeState() error {
	var err error
	if rn.db != nil {
		err = rn.db.Close()
	}
	if rn.ids != nil {
		err = errors.Join(err, rn.ids.Close())
	}
	for _, tmp := range []string{rn.tmp, rn.idsTmp} {
		if tmp != "" {
			vfs.RemoveScratch(tmp)
		}
	}
	return err
}

// writeEnd writes what a job writes when it ends: its summary and its
// acceptance record.
func (rn *Runnable) writeEnd(ctx context.Context, sum *Summary) error {
	if rn.j.Summary != "" {
		if err := writeSummary(rn.j, rn.j.Summary, sum, rn.o.Stdout, rn.o.Force); err != nil {
			return err
		}
	}
	if rn.accept != nil {
		if err := writeAcceptance(rn.j.Acceptance, rn.acceptance(ctx, sum), rn.o.Force, rn.j.FileMode, rn.j.Secrets()); err != nil {
			return &RuntimeError{Msg: "writing the acceptance record: " + err.Error(), Err: err}
		}
	}
	return nil
}

// finalSummary is the run's summary; for a run that only committed the
// output of the last one, which had reached the end of its input, that
// run's summary with what is committed now.
func (rn *Runnable) finalSummary(err error) *Summary {
	sum := rn.summary(err)
	if ok, rec := rn.e.Finishing(); ok && err == nil {
		var last Summary
		if json.Unmarshal(rec, &last) == nil && len(last.Aggregations) == len(rn.siblings) {
			all := append([]*Summary{&last}, last.Aggregations...)
			for i, a := range rn.aggregations() {
				s := all[i]
				s.PanesWritten = a.out.Written()
				if a.late != nil {
					s.LateWritten = a.late.Written()
				}
			}
			return &last
		}
	}
	return sum
}

// summary is the job's summary: its first aggregation's, with the others'
// in it.
func (rn *Runnable) summary(err error) *Summary {
	s := rn.ownSummary(err)
	for _, a := range rn.siblings {
		s.Aggregations = append(s.Aggregations, a.ownSummary(err))
	}
	return s
}

// ownSummary is the summary of the runnable's aggregation.
func (rn *Runnable) ownSummary(err error) *Summary {
	c := rn.head.Counts()
	st := rn.win.Stats()
	s := &Summary{
		Job: rn.j.Name, Aggregation: rn.j.Aggregation, Accounting: c.Accounting,
		QuarantineReasons: c.QuarantineReasons, WatermarkLines: c.WatermarkLines, BlankLines: c.BlankLines, Heartbeats: c.Heartbeats, Lost: c.Lost,
		LateAccepted: st.LateAccepted, PanesFired: st.Panes, WindowsFired: st.Fired,
		PanesWritten: rn.out.Written(), Revisions: c.Revisions,
	}
	// The windows' own counts are final once they have ended; the head's
	// are as of its last status.
	s.Accepted, s.TooLate, s.LateForSomeWindows = st.Accepted, st.TooLate, st.PartlyLate
	s.TriggerFinished = st.TriggerFinished
	s.InFlight = s.Accounting.InFlight()
	s.ReadThisRun = s.Read - rn.restoredRead
	if rn.late != nil {
		s.LateWritten = rn.late.Written()
	}
	if rn.having != nil {
		s.HavingErrors = rn.having.errors.Load()
	}
	s.TooLateByWindow = dropsByWindow(st)
	if rn.first == nil {
		s.OutputsAdded = rn.e.AddedSinks()
	}
	s.RestoreChanges, s.DroppedState = rn.restored, rn.dropped
	s.Refused = rn.refused()
	if rn.fileSrc != nil {
		s.InputRestarted = rn.fileSrc.Restarted
	}
	s.Watermark = watermarkText(rn.win.Watermark())
	return s
}

// watermarkText is a watermark as the summary says it: "none" before the
// first.
func watermarkText(w mtime.Time) string {
	if w == mtime.MinTime {
		return "none"
	}
	return w.String()
}

// writeSummary writes the summary of the job j (its secrets redacted) to
// path.
func writeSummary(j *jobfile.Job, path string, sum *Summary, stdout io.Writer, force bool) error {
	data, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	data = append(j.RedactJSON(data), '\n')
	mode := j.FileMode
	if path == "-" {
		_, err = stdout.Write(data)
		return err
	}
	if err := writeOutputFile(path, data, force, mode); err != nil {
		return &RuntimeError{Msg: fmt.Sprintf("cannot write the summary %s: %s", path, text.ErrorText(err)), Err: err}
	}
	return nil
}

// writeOutputFile writes one of the job's own files (the summary, the
// acceptance record) as file.ReplaceFile does (replacing only a file weir
// wrote, unless force): its owner's alone, or with mode (the job's
// file_mode) when it is set.
func writeOutputFile(path string, data []byte, force bool, mode os.FileMode) error {
	if err := file.ReplaceFile(nil, path, data, force); err != nil {
		return err
	}
	return setFileMode(path, mode)
}

// setFileMode gives a file weir wrote the job's file_mode, if it has one.
func setFileMode(path string, mode os.FileMode) error {
	if mode == 0 {
		return nil
	}
	return os.Chmod(path, mode)
}

func dropsByWindow(st engine.WindowStats) []WindowDrops {
	out := make([]WindowDrops, 0, len(st.Dropped))
	type kv struct {
		start, end mtime.Time
		n          int64
		global     bool
	}
	var list []kv
	for w, n := range st.Dropped {
		list = append(list, kv{w.Start, w.End, n, w.IsGlobal()})
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].start != list[b].start {
			return list[a].start < list[b].start
		}
		return list[a].end < list[b].end
	})
	for _, e := range list {
		wd := WindowDrops{Dropped: e.n}
		switch {
		case engine.IsEarlierWindows(window.Window{Start: e.start, End: e.end}):
			wd.Before = e.end.String()
		case !e.global:
			wd.Start, wd.End = e.start.String(), e.end.String()
		}
		out = append(out, wd)
	}
	return out
}

// hashString is FNV-1a: stable across runs and machines, so a key always
// lands in the same key group and a checkpoint restores anywhere.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// fingerprint identifies what a job computes: a checkpoint restores only
// into a job that computes the same thing (outputs, parallelism and
// checkpoint settings may change).
func fingerprint(j *jobfile.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "time=%s key=%s id=%s horizon=%d window=%T%+v lateness=%d trigger=%+v mode=%s wm=%s/%s",
		j.TimeField, j.Key, j.ID, j.DedupHorizon, j.Window.Assigner, j.Window.Assigner, j.Window.AllowedLateness,
		j.Window.Trigger, j.Window.Mode, j.Watermark.Fingerprint(), j.WMField)
	if j.KeyParts != nil {
		// Only a composite key adds to the text, so that the fingerprints
		// of jobs written before it are unchanged.
		fmt.Fprintf(&b, " keyparts=%s", j.KeyName())
	}
	if j.Ingestion {
		b.WriteString(" ingestion")
	}
	if j.VersionField != nil {
		fmt.Fprintf(&b, " version=%s", j.VersionField)
	}
	for _, a := range j.Aggregates {
		fmt.Fprintf(&b, " %s=%d(%s)", a.Name, a.Kind, a.Field)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}
