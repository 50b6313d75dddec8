package job

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/secret"
	"github.com/weirstream/weir/jobfile"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// Acceptance is the acceptance record of a run: what a run (or a
// reconciliation) covered, with which settings, what it produced, how it
// recovered, and whether the tables hold what it wrote. weir run writes it
// when the job file names acceptance: (a .json file, and a .md beside it).
type Acceptance struct {
	Job     string `json:"job"`
	JobFile string `json:"job_file"`
	Version int64  `json:"version"`
	// Scope says what the record covers.
	Scope    string             `json:"scope"`
	Input    AcceptanceInput    `json:"input"`
	Settings AcceptanceSettings `json:"settings"`
	// Accounting is the summary's: every line accepted, a duplicate,
	// filtered out (where), too late, beyond the horizon, superseded, a
	// revision too late or quarantined; Balanced says the sum holds.
	Accounting AcceptanceAccounting `json:"accounting"`
	// Panes counts the panes this run wrote to its outputs, by timing and
	// revision.
	Panes           []PaneCount   `json:"panes_by_timing_and_revision"`
	TooLateByWindow []WindowDrops `json:"too_late_by_window"`
	Recovery        Recovery      `json:"recovery"`
	// Sinks are the table outputs, read back and compared with the last
	// pane this run wrote of each window.
	Sinks []SinkCheck `json:"sink_verification"`
	// Corrections is filled by weir reconcile.
	Corrections any `json:"corrections,omitempty"`
}

// AcceptanceInput is the input ledger's scope.
type AcceptanceInput struct {
	Sources []string `json:"sources"`
	Lines   int64    `json:"lines"`
	Events  int64    `json:"events"`
	// Lost counts the records the source skipped, knowing they were there
	// (deleted from a Kafka topic before they were read, on_gap: skip).
	Lost           int64  `json:"lost,omitempty"`
	FirstEventTime string `json:"first_event_time,omitempty"`
	LastEventTime  string `json:"last_event_time,omitempty"`
}

// AcceptanceSettings are the settings the results depend on.
type AcceptanceSettings struct {
	Window          string `json:"window"`
	Trigger         string `json:"trigger"`
	AllowedLateness string `json:"allowed_lateness"`
	Mode            string `json:"mode"`
	Watermark       string `json:"watermark"`
	IDField         string `json:"id_field,omitempty"`
	DedupHorizon    string `json:"dedup_horizon,omitempty"`
	// VersionField is the job's version_field: the highest version of an
	// id wins within the de-duplication horizon.
	VersionField string `json:"version_field,omitempty"`
	MaxFuture    string `json:"max_future"`
	Aggregates   string `json:"aggregates"`
	Having       string `json:"having,omitempty"`
}

// AcceptanceAccounting is the accounting of every line.
type AcceptanceAccounting struct {
	engine.Accounting
	LateAccepted int64 `json:"late_accepted"`
	// Revisions counts the accepted events that replaced an earlier
	// version (version_field).
	Revisions int64 `json:"revisions,omitempty"`
	// LateForSomeWindows counts accepted events too late for some of
	// their windows.
	LateForSomeWindows int64 `json:"late_for_some_windows"`
	// TriggerFinished counts the events that came for a window whose
	// composite trigger had finished: Summary.TriggerFinished.
	TriggerFinished   int64            `json:"trigger_finished,omitempty"`
	QuarantineReasons map[string]int64 `json:"quarantine_reasons"`
	Balanced          bool             `json:"balanced"`
}

// PaneCount is the number of panes of one timing and revision.
type PaneCount struct {
	Timing   string `json:"timing"`
	Revision int    `json:"revision"`
	Retract  bool   `json:"retract,omitempty"`
	Panes    int64  `json:"panes"`
}

// Recovery is what the run restored and how its checkpoints went.
type Recovery struct {
	Resumed            bool   `json:"resumed"`
	From               string `json:"from,omitempty"`
	Checkpoints        int64  `json:"checkpoints_taken"`
	CheckpointsFailed  int64  `json:"checkpoints_failed"`
	LastCheckpoint     string `json:"last_checkpoint,omitempty"`
	EndedInterrupted   bool   `json:"interrupted,omitempty"`
	EndedWithSavepoint string `json:"savepoint,omitempty"`
	// Changes says what the restore did with a checkpoint of the job as it
	// was before a change, DroppedState what it started afresh
	// (--drop-state): Summary.RestoreChanges and Summary.DroppedState.
	Changes      []string `json:"changes,omitempty"`
	DroppedState []string `json:"dropped_state,omitempty"`
}

// SinkCheck is one table read back after the run.
type SinkCheck struct {
	Output string `json:"output"`
	Table  string `json:"table"`
	// Windows is the number of windows this run wrote; Equal of them the
	// table holds as written; Reconciled hold a correction instead (not
	// compared); Differences lists the others (the first 20).
	Windows     int      `json:"windows"`
	Equal       int      `json:"equal"`
	Reconciled  int      `json:"reconciled"`
	Differ      int      `json:"differ"`
	Differences []string `json:"differences,omitempty"`
	// OtherRows are rows of windows this run did not write (earlier runs').
	OtherRows int    `json:"other_rows"`
	Verdict   string `json:"verdict"`
	Error     string `json:"error,omitempty"`
}

// acceptanceTracker counts the panes that reach the outputs and keeps the
// last of each window, for the record. The window stage's goroutine pushes
// to it; the record reads it once the run is over.
type acceptanceTracker struct {
	counts map[PaneCount]int64
	last   map[string]lastPane
}

type lastPane struct {
	key        string
	start, end mtime.Time
	revision   int64
	retract    bool
	final      bool
	vals       []outVal
}

func newAcceptanceTracker() *acceptanceTracker {
	return &acceptanceTracker{counts: map[PaneCount]int64{}, last: map[string]lastPane{}}
}

func (t *acceptanceTracker) Push(p pane) {
	t.counts[PaneCount{Timing: p.Timing.String(), Revision: int(p.Revision), Retract: p.Retract}]++
	k := TableKeyText(p.Key)
	end := p.Window.End
	if p.Window.IsGlobal() {
		end = mtime.MaxTime
	}
	t.last[windowID(k, p.Window.Start, end)] = lastPane{key: k, start: p.Window.Start, end: end, revision: int64(p.Revision), retract: p.Retract, final: p.Final, vals: slices.Clone(p.Value)}
}

func (t *acceptanceTracker) Signal(engine.Signal) {}

// windowID identifies a key's window among the last panes.
func windowID(key string, start, end mtime.Time) string {
	return key + "\x00" + strconv.FormatInt(int64(start), 10) + "\x00" + strconv.FormatInt(int64(end), 10)
}

// acceptance builds the record of a finished run.
func (rn *Runnable) acceptance(ctx context.Context, sum *Summary) *Acceptance {
	j := rn.j
	a := NewAcceptance(j)
	c := rn.head.Counts()
	a.Scope = "this run of the job"
	if r := rn.e.Resumed(); r != nil {
		a.Scope = "this run, resumed from " + r.Path + ": its counts of panes and its sink verification cover what it wrote after the restore; the accounting covers the whole input"
		a.Recovery.Resumed, a.Recovery.From = true, r.Path
	}
	switch {
	case j.Kafka != nil:
		a.Input.Sources = []string{"kafka topic " + j.Kafka.Topic}
	case j.Custom != nil:
		a.Input.Sources = []string{j.Custom.Config.Reads()}
	default:
		a.Input.Sources = []string{j.Input}
	}
	a.Input.Lines = sum.Read + sum.WatermarkLines + sum.BlankLines + sum.Heartbeats
	a.Input.Events = sum.Read - sum.Quarantined
	a.Input.Lost = sum.Lost
	if c.FirstEventTime <= c.LastEventTime {
		a.Input.FirstEventTime, a.Input.LastEventTime = c.FirstEventTime.String(), c.LastEventTime.String()
	}
	a.Accounting = AcceptanceAccounting{Accounting: sum.Accounting, LateAccepted: sum.LateAccepted, Revisions: sum.Revisions,
		LateForSomeWindows: sum.LateForSomeWindows, TriggerFinished: sum.TriggerFinished, QuarantineReasons: sum.QuarantineReasons, Balanced: sum.Accounting.Balanced()}
	a.TooLateByWindow = sum.TooLateByWindow
	ck := rn.e.Checkpoints()
	a.Recovery.Checkpoints, a.Recovery.CheckpointsFailed, a.Recovery.LastCheckpoint = ck.Total, ck.Failed, ck.Path
	a.Recovery.EndedInterrupted, a.Recovery.EndedWithSavepoint = sum.Interrupted, sum.Savepoint
	a.Recovery.Changes, a.Recovery.DroppedState = sum.RestoreChanges, sum.DroppedState
	t := rn.accept
	for pc, n := range t.counts {
		pc.Panes = n
		a.Panes = append(a.Panes, pc)
	}
	sort.Slice(a.Panes, func(i, j int) bool {
		x, y := a.Panes[i], a.Panes[j]
		if x.Revision != y.Revision {
			return x.Revision < y.Revision
		}
		if x.Timing != y.Timing {
			return x.Timing < y.Timing
		}
		return !x.Retract && y.Retract
	})
	for i := range j.Outputs {
		if o := &j.Outputs[i]; o.Table != nil {
			a.Sinks = append(a.Sinks, rn.verify(ctx, o))
		}
	}
	return a
}

// NewAcceptance is an acceptance record with the job's settings filled in.
func NewAcceptance(j *jobfile.Job) *Acceptance {
	a := &Acceptance{Job: j.Name, JobFile: j.File, Version: j.Version}
	s := &a.Settings
	s.Window, s.Trigger = j.Window.Assigner.String(), j.Window.Trigger.Describe()
	s.AllowedLateness, s.Mode = mtime.FormatDuration(j.Window.AllowedLateness), j.Window.Mode.String()
	s.Watermark = describeWatermark(j)
	if j.ID != nil {
		s.IDField, s.DedupHorizon = j.ID.String(), mtime.FormatDuration(j.DedupHorizon)
	}
	if j.VersionField != nil {
		s.VersionField = j.VersionField.String() + " (the highest version wins)"
	}
	s.MaxFuture = "none"
	if j.MaxFuture > 0 {
		s.MaxFuture = mtime.FormatDuration(j.MaxFuture)
	}
	var aggs []string
	for _, g := range j.Aggregates {
		aggs = append(aggs, g.Name)
	}
	s.Aggregates, s.Having = strings.Join(aggs, ", "), j.Having
	return a
}

// verify reads a table back and compares it with the last pane this run
// wrote of each window.
func (rn *Runnable) verify(ctx context.Context, o *jobfile.Output) SinkCheck {
	j, t := rn.j, rn.accept
	sc := SinkCheck{Output: o.Field, Table: o.Table.Table, Windows: len(t.last)}
	s := TableSink(j, o, nil)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		sc.Error, sc.Verdict = err.Error(), "not verified"
		return sc
	}
	defer s.Close()
	rows, err := s.Read(ctx, mtime.MinTime, mtime.MaxTime)
	if err != nil {
		sc.Error, sc.Verdict = err.Error(), "not verified"
		return sc
	}
	seen := map[string]bool{}
	for _, r := range rows {
		key := ""
		if len(r.Key) > 0 {
			key = r.Key[0]
		}
		id := windowID(key, r.WindowStart, r.WindowEnd)
		p, ok := t.last[id]
		if !ok {
			sc.OtherRows++
			continue
		}
		seen[id] = true
		if r.Status == table.StatusReconciled {
			sc.Reconciled++
			continue
		}
		if why := differs(j, &r, &p); why != "" {
			sc.Differ++
			if len(sc.Differences) < 20 {
				sc.Differences = append(sc.Differences, fmt.Sprintf("%s [%s, %s): %s", key, r.WindowStart, r.WindowEnd, why))
			}
			continue
		}
		sc.Equal++
	}
	// The windows with no row, in a stable order.
	var missing []string
	for id := range t.last {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	sc.Differ += len(missing)
	for _, id := range missing {
		if len(sc.Differences) >= 20 {
			break
		}
		p := t.last[id]
		sc.Differences = append(sc.Differences, fmt.Sprintf("%s [%s, %s): no row", p.key, p.start, p.end))
	}
	sc.Verdict = "rows equal to the final panes"
	if sc.Differ > 0 {
		sc.Verdict = fmt.Sprintf("%d windows differ", sc.Differ)
	}
	return sc
}

// differs says how a row differs from the pane written last of its window.
func differs(j *jobfile.Job, r *table.Stored, p *lastPane) string {
	if r.Revision != p.revision {
		return fmt.Sprintf("revision %d, the last pane %d", r.Revision, p.revision)
	}
	if p.retract != (r.Status == "retracted") {
		return fmt.Sprintf("status %s, the last pane retract=%v", r.Status, p.retract)
	}
	for i, g := range j.Aggregates {
		have, want := r.Values[i], p.vals[i]
		if want.kind == vNull {
			if have.Valid {
				return fmt.Sprintf("%s %s, the last pane null", g.Name, have.String)
			}
			continue
		}
		if want.kind == vJSON {
			if !have.Valid || have.String != TableValueText(want.js) {
				return fmt.Sprintf("%s %s, the last pane %s", g.Name, have.String, TableValueText(want.js))
			}
			continue
		}
		if !have.Valid || !sameNumber(have.String, want) {
			return fmt.Sprintf("%s %s, the last pane %s", g.Name, have.String, string(appendOutVal(nil, want)))
		}
	}
	return ""
}

// sameNumber reports whether have, a value as a table gives it back in
// text, is want: digit for digit for an integer or a decimal, which the
// tables keep exactly ("473.50" is 473.5), within rounding for a float.
func sameNumber(have string, want outVal) bool {
	if want.kind == vInt || want.kind == vDec {
		if d, ok := plainDecimal(have); ok {
			return d == string(appendOutVal(nil, want))
		}
	}
	f, err := strconv.ParseFloat(have, 64)
	w := want.number()
	return err == nil && (f == w || math.Abs(f-w) <= 1e-9*math.Max(math.Abs(f), math.Abs(w)))
}

// plainDecimal is s without the zeros that end its fraction (and without
// the point, if nothing is left after it), when s is a plain decimal such
// as "-473.50".
func plainDecimal(s string) (string, bool) {
	point, digit := false, false
	for _, c := range strings.TrimPrefix(s, "-") {
		switch {
		case c == '.' && !point:
			point = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			return "", false
		}
	}
	if !digit {
		return "", false
	}
	if point {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s, true
}

// WriteAcceptance writes the record as JSON to path and as Markdown beside
// it (path with .md for its extension). Existing files are replaced only if
// weir wrote them (file.ReplaceFile), or with force; new ones are their
// owner's alone.
func WriteAcceptance(path string, a *Acceptance, force bool) error {
	return writeAcceptance(path, a, force, 0, nil)
}

// writeAcceptance is WriteAcceptance with the job's file_mode (0: the
// owner's alone), its secrets redacted.
func writeAcceptance(path string, a *Acceptance, force bool, mode os.FileMode, secrets *secret.Set) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	if err := writeOutputFile(path, append(secrets.RedactJSON(b), '\n'), force, mode); err != nil {
		return err
	}
	return writeOutputFile(jobfile.AcceptanceMarkdown(path), []byte(secrets.Redact(a.Markdown())), force, mode)
}

// acceptanceTitle begins every Markdown record.
const acceptanceTitle = "# Acceptance record: "

// Markdown is the record for a person.
func (a *Acceptance) Markdown() string {
	var b strings.Builder
	name := a.Job
	if name == "" {
		name = a.JobFile
	}
	fmt.Fprintf(&b, "%s%s\n\n", acceptanceTitle, name)
	fmt.Fprintf(&b, "Job file `%s`, metric definitions version %d. Scope: %s.\n\n", a.JobFile, a.Version, a.Scope)
	in := a.Input
	fmt.Fprintf(&b, "## Input ledger\n\n- Sources: %s\n- Lines: %d; events: %d\n", strings.Join(in.Sources, ", "), in.Lines, in.Events)
	if in.Lost > 0 {
		fmt.Fprintf(&b, "- Lost: %d records deleted from the input before they were read (skipped with on_gap: skip)\n", in.Lost)
	}
	if in.FirstEventTime != "" {
		fmt.Fprintf(&b, "- Event time: %s to %s\n", in.FirstEventTime, in.LastEventTime)
	}
	s := a.Settings
	fmt.Fprintf(&b, "\n## Settings\n\n| setting | value |\n|---|---|\n")
	for _, kv := range [][2]string{{"window", s.Window}, {"trigger", s.Trigger}, {"allowed lateness", s.AllowedLateness}, {"mode", s.Mode},
		{"watermark", s.Watermark}, {"id field", s.IDField}, {"de-duplication horizon", s.DedupHorizon}, {"version field", s.VersionField}, {"max future", s.MaxFuture},
		{"aggregates", s.Aggregates}, {"having", s.Having}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "| %s | %s |\n", kv[0], kv[1])
		}
	}
	c := a.Accounting
	partly := ""
	if c.LateForSomeWindows > 0 {
		partly = fmt.Sprintf(", %d too late for some of their windows", c.LateForSomeWindows)
	}
	// Every part of the sum the summary has (Summary.Text), so that the
	// line adds up: the filtered and the versioned counts when there are
	// any (the versioned ones always with version_field), and what was in
	// flight when a run stopped at once.
	filtered, versions, inFlight := "", "", ""
	if c.Filtered > 0 {
		filtered = fmt.Sprintf(" + %d filtered out by where", c.Filtered)
	}
	if a.Settings.VersionField != "" || c.Superseded > 0 || c.RevisionsTooLate > 0 {
		versions = fmt.Sprintf(" + %d superseded + %d revisions too late", c.Superseded, c.RevisionsTooLate)
	}
	if n := c.InFlight(); n != 0 {
		inFlight = fmt.Sprintf(" + %d in flight when it stopped", n)
	}
	fmt.Fprintf(&b, "\n## Accounting\n\n%d read = %d accepted (%d late within the allowed lateness%s) + %d duplicates%s + %d too late%s + %d beyond the de-duplication horizon%s + %d quarantined%s: %s.\n",
		c.Read, c.Accepted, c.LateAccepted, partly, c.Duplicates, filtered, c.TooLate, TriggerFinishedNote(c.TriggerFinished, c.LateForSomeWindows), c.BeyondDedupHorizon, versions, c.Quarantined, inFlight, map[bool]string{true: "balanced", false: "NOT balanced"}[c.Balanced])
	if a.Settings.VersionField != "" {
		fmt.Fprintf(&b, "\nVersions: %d revisions applied (each replacing its earlier version, in accepted or filtered), %d superseded (an older version arriving after a newer one) and %d revisions too late (their earlier version's window or their own past its allowed lateness), both in the late output and in the sum above.\n",
			c.Revisions, c.Superseded, c.RevisionsTooLate)
	}
	if len(c.QuarantineReasons) > 0 {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range c.QuarantineReasons {
				if !yield(k) {
					return
				}
			}
		})
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, c.QuarantineReasons[k]))
		}
		fmt.Fprintf(&b, "Quarantined: %s.\n", strings.Join(parts, ", "))
	}
	if len(a.Panes) > 0 {
		fmt.Fprintf(&b, "\n## Panes written, by revision and timing\n\n| revision | timing | retraction | panes |\n|---|---|---|---|\n")
		for _, p := range a.Panes {
			fmt.Fprintf(&b, "| %d | %s | %v | %d |\n", p.Revision, p.Timing, p.Retract, p.Panes)
		}
	}
	if len(a.TooLateByWindow) > 0 {
		fmt.Fprintf(&b, "\n## Too-late records by window\n\n| window start | window end | too late |\n|---|---|---|\n")
		for _, w := range a.TooLateByWindow {
			fmt.Fprintf(&b, "| %s | %s | %d |\n", w.Start, w.End, w.Dropped)
		}
	}
	r := a.Recovery
	fmt.Fprintf(&b, "\n## Recovery\n\n")
	if r.Resumed {
		fmt.Fprintf(&b, "- Resumed from `%s`\n", r.From)
	} else {
		fmt.Fprintf(&b, "- Started afresh\n")
	}
	for _, c := range r.Changes {
		fmt.Fprintf(&b, "- Restored into the changed job: %s\n", c)
	}
	if len(r.DroppedState) > 0 {
		fmt.Fprintf(&b, "- Started afresh (--drop-state): %s; the positions and the rest of the state carried over\n", strings.Join(r.DroppedState, ", "))
	}
	fmt.Fprintf(&b, "- Checkpoints taken: %d, failed: %d\n", r.Checkpoints, r.CheckpointsFailed)
	if r.EndedInterrupted {
		fmt.Fprintf(&b, "- Stopped before the end of the input; savepoint `%s`\n", r.EndedWithSavepoint)
	}
	if len(a.Sinks) > 0 {
		fmt.Fprintf(&b, "\n## Sink verification\n\n| output | table | windows | equal | reconciled | differ | other rows | verdict |\n|---|---|---|---|---|---|---|---|\n")
		for _, s := range a.Sinks {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s |\n", s.Output, s.Table, s.Windows, s.Equal, s.Reconciled, s.Differ, s.OtherRows, s.Verdict)
		}
		for _, s := range a.Sinks {
			for _, d := range s.Differences {
				fmt.Fprintf(&b, "- %s: %s\n", s.Output, d)
			}
			if s.Error != "" {
				fmt.Fprintf(&b, "- %s: %s\n", s.Output, s.Error)
			}
		}
	}
	if a.Corrections != nil {
		cb, _ := json.MarshalIndent(a.Corrections, "", "  ")
		fmt.Fprintf(&b, "\n## Corrections\n\n```json\n%s\n```\n", cb)
	}
	return b.String()
}
