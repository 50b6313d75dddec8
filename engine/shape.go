package engine

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/weirstream/weir/mtime"
)

// Shape describes the parts of a job that hold state, as a checkpoint
// records it (layout 4 on): on restore, CompareShapes tells what of that
// state carries over into the job as it is now, what carries over by a
// rule, what starts afresh and what cannot be restored. The front door
// describes its job (Checkpointing.Shape); this file holds the one rule.
type Shape struct {
	Parts []Part `json:"parts"`
}

// The kinds of state a part holds.
const (
	// StateWindows is a window stage's open windows.
	StateWindows = "windows"
	// StateDedup is a head's de-duplication ids.
	StateDedup = "dedup"
	// StatePosition is a source's position.
	StatePosition = "position"
	// StateCommits is a sink's commit record.
	StateCommits = "commits"
	// StateJoin is an interval join's buffered records.
	StateJoin = "join"
	// StateProcess is a keyed process function's state and timers.
	StateProcess = "process"
)

// Part is one part of a job that holds state.
type Part struct {
	// Name is the part's participant name in checkpoints ("window",
	// "head", "source:input", "sink:results:file:out.jsonl").
	Name string `json:"name"`
	// Label is how a person knows the part ("window", "output[1]").
	Label string `json:"label,omitempty"`
	// Kind is the state it holds: StateWindows, StateDedup, StatePosition
	// or StateCommits.
	Kind string `json:"kind"`
	// Format is the version of the encoding of the part's state by its
	// front door (a window stage's codec); a checkpoint of a later format
	// than the job's is refused, an earlier one is read as it was written.
	Format int `json:"format,omitempty"`
	// Layout is what the state is organised by (a window's kind and size,
	// the key, the time field, the id field): a restore into a part whose
	// layout differs is refused, unless that state is dropped
	// (Checkpointing.DropState).
	Layout []Setting `json:"layout,omitempty"`
	// Values are a window stage's aggregates, by name, with their
	// definitions: one added starts from its zero in the open windows, and
	// their panes say so (partial); one removed is dropped.
	Values []Setting `json:"values,omitempty"`
	// Mode is a window stage's accumulation mode: accumulating and
	// retracting carry over into each other, discarding into neither.
	Mode string `json:"mode,omitempty"`
	// Settings are what the part does with its state that may change
	// between runs (the watermark, the allowed lateness, the trigger):
	// reported when they change, never refused.
	Settings []Setting `json:"settings,omitempty"`
}

// Setting is one field of a part, named as its front door names it.
type Setting struct {
	Field string `json:"field"`
	Value string `json:"value"`
	// Absent, when set, is the value of a checkpoint whose shape lacks
	// the field: what the field was before weir wrote it.
	Absent string `json:"-"`
}

// Verdict says what becomes of a part of the state on restore.
type Verdict uint8

const (
	// Carried: the state carries over as it is.
	Carried Verdict = iota
	// ByRule: the state carries over, changed by a stated rule.
	ByRule
	// Restarted: the part starts afresh (it is new, or its state was
	// dropped deliberately); positions and the rest carry over.
	Restarted
	// Removed: the checkpoint's state of a part the job no longer has is
	// left behind.
	Removed
	// NotRestorable: the state cannot carry over; the restore is refused.
	NotRestorable
)

// String is the verdict as the restore's reports say it ("carries over").
func (v Verdict) String() string {
	switch v {
	case Carried:
		return "carries over"
	case ByRule:
		return "by rule"
	case Restarted:
		return "restarts"
	case Removed:
		return "removed"
	}
	return "refused"
}

// Change is one line of a RestoreReport: a part of the state and what
// becomes of it.
type Change struct {
	Verdict Verdict
	// Part is the participant concerned; Kind its kind of state.
	Part, Kind string
	// Field names the field of the job concerned ("window",
	// "aggregates.spent"), or the part's label when the whole part is
	// meant.
	Field string
	// Was and Now are the field's values in the checkpoint and in the job
	// ("" when absent).
	Was, Now string
	// Detail says what happens, or what would be lost.
	Detail string
	// Dropped is the kind of state the change dropped deliberately
	// (Checkpointing.DropState), when it did: a report names how, in the
	// front door's words (Say).
	Dropped string
}

// RestoreReport is what a restore does with the state of a checkpoint: one
// Change per part and per changed field, in the order of the job's parts.
type RestoreReport struct {
	// From is the checkpoint's directory; Layout the version of its files.
	From   string
	Layout int
	// Legacy is set for a checkpoint of a weir before layout 4, which
	// recorded only a fingerprint of what the job computed: it restores
	// only into a job with the same fingerprint.
	Legacy bool
	// Old is the checkpoint's shape (nil when Legacy).
	Old     *Shape
	Changes []Change
	// Dropped names the parts whose state is dropped (DropState).
	Dropped []string
	// Rerun: the checkpoint is the record of a run that reached the end
	// of its input and committed its output, so nothing is restored: the
	// job runs again from its beginning, each output taken back to before
	// that run, or is refused if one cannot be (RerunError).
	Rerun bool
	// Finishing: the checkpoint is the record of a run that reached the
	// end of its input and stopped before committing its output: the job
	// commits it and reads nothing.
	Finishing bool
}

// Refused returns the changes that refuse the restore.
func (r *RestoreReport) Refused() []Change {
	var out []Change
	for _, c := range r.Changes {
		if c.Verdict == NotRestorable {
			out = append(out, c)
		}
	}
	return out
}

// DroppedPart reports whether the state of the named part is dropped.
func (r *RestoreReport) DroppedPart(name string) bool {
	return r != nil && slices.Contains(r.Dropped, name)
}

// OldPart is the checkpoint's description of the named part, or nil.
func (r *RestoreReport) OldPart(name string) *Part {
	if r == nil || r.Old == nil {
		return nil
	}
	for i := range r.Old.Parts {
		if r.Old.Parts[i].Name == name {
			return &r.Old.Parts[i]
		}
	}
	return nil
}

// DropWords says how a job drops the state of a kind (StateWindows,
// StateDedup) deliberately on a restore, in a front door's words: a flag of
// the command line, an option of the Go API. The engine's own words name
// the setting, Checkpointing.DropState.
type DropWords func(kind string) string

// dropSetting is the engine's own DropWords.
func dropSetting(kind string) string { return "DropState " + kind }

// Text is the report for a person, a change a line, in the engine's words.
func (r *RestoreReport) Text() string { return r.Say(dropSetting) }

// Say is Text in a front door's words (weir run --check).
func (r *RestoreReport) Say(drop DropWords) string {
	var b strings.Builder
	switch {
	case r.Rerun:
		b.WriteString("the run that took it reached the end of its input: nothing to resume; the job runs again from its beginning, taking back what that run wrote (refused if an output cannot)\n")
	case r.Finishing:
		b.WriteString("the run that took it reached the end of its input and stopped before committing its output: the job commits it and reads nothing\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range r.Changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Verdict, c.Field, c.describe(drop))
	}
	tw.Flush()
	return b.String()
}

// String is the change in one line, in the engine's words: its verdict,
// its field, its values and what happens.
func (c Change) String() string { return c.Say(dropSetting) }

// Say is String in a front door's words.
func (c Change) Say(drop DropWords) string {
	return c.Verdict.String() + " " + c.Field + ": " + c.describe(drop)
}

// describe is the change's detail with its values.
func (c Change) describe(drop DropWords) string {
	var vals string
	switch {
	case c.Was == c.Now:
		vals = c.Now
	case c.Was == "":
		vals = "added: " + c.Now
	case c.Now == "":
		vals = "removed: was " + c.Was
	default:
		vals = c.Was + " -> " + c.Now
	}
	detail := c.Detail
	if c.Dropped != "" {
		detail += " (" + drop(c.Dropped) + ")"
	}
	switch {
	case vals == "":
		return detail
	case detail == "":
		return vals
	}
	return vals + ": " + detail
}

// What each kind of state is, in the lines of a report.
var stateNames = map[string]string{
	StateWindows:  "its open windows",
	StateDedup:    "its de-duplication ids",
	StatePosition: "its position",
	StateCommits:  "its commit record",
	StateJoin:     "its buffered records",
	StateProcess:  "its keyed state and timers",
}

// CompareShapes compares the shape of a checkpoint with the job's, as the
// one rule of what carries over, and marks refused the changes whose
// state drop (DropState: StateWindows, StateDedup) does not start afresh.
func CompareShapes(old, now *Shape, drop []string) *RestoreReport {
	r := &RestoreReport{Old: old}
	olds := map[string]*Part{}
	for i := range old.Parts {
		olds[old.Parts[i].Name] = &old.Parts[i]
	}
	seen := map[string]bool{}
	for i := range now.Parts {
		p := &now.Parts[i]
		seen[p.Name] = true
		o := olds[p.Name]
		if o == nil {
			r.Changes = append(r.Changes, Change{Verdict: Restarted, Part: p.Name, Kind: p.Kind, Field: p.label(), Detail: "new since the checkpoint: starts afresh"})
			continue
		}
		r.comparePart(o, p, slices.Contains(drop, p.Kind))
	}
	for i := range old.Parts {
		if o := &old.Parts[i]; !seen[o.Name] {
			r.Changes = append(r.Changes, Change{Verdict: Removed, Part: o.Name, Kind: o.Kind, Field: o.label(), Detail: "no longer in the job; not restored: " + stateNames[o.Kind]})
		}
	}
	return r
}

// CheckDropState reports a kind of state a restore cannot drop: only
// StateWindows, StateDedup, StateJoin and StateProcess start afresh
// deliberately.
func CheckDropState(kinds []string) error {
	for _, k := range kinds {
		if k != StateWindows && k != StateDedup && k != StateJoin && k != StateProcess {
			return fmt.Errorf("%q is not a kind of state a restore may drop: windows, dedup, join or process", k)
		}
	}
	return nil
}

func (p *Part) label() string {
	if p.Label != "" {
		return p.Label
	}
	return p.Name
}

// comparePart adds the changes of one part found in both shapes.
func (r *RestoreReport) comparePart(o, p *Part, drop bool) {
	var refused []Change
	if o.Format > p.Format {
		refused = append(refused, Change{Verdict: NotRestorable, Part: p.Name, Kind: p.Kind, Field: p.label(),
			Detail: fmt.Sprintf("its state is of format %d, written by a later weir; this one reads up to %d", o.Format, p.Format)})
	}
	for _, s := range p.Layout {
		was, ok := find(o.Layout, s.Field)
		if !ok && s.Absent != "" {
			was, ok = s.Absent, true
		}
		if ok && was != s.Value {
			refused = append(refused, Change{Verdict: NotRestorable, Part: p.Name, Kind: p.Kind, Field: s.Field, Was: was, Now: s.Value})
		}
	}
	if o.Mode != p.Mode && (o.Mode == "discarding" || p.Mode == "discarding") {
		refused = append(refused, Change{Verdict: NotRestorable, Part: p.Name, Kind: p.Kind, Field: "mode", Was: o.Mode, Now: p.Mode,
			Detail: "the open windows of a discarding job hold only what came since their last pane"})
	}
	switch {
	case len(refused) > 0 && drop:
		r.Dropped = append(r.Dropped, p.Name)
		for _, c := range refused {
			c.Verdict = Restarted
			c.Detail = strings.TrimPrefix(c.Detail+"; ", "; ") + stateNames[p.Kind] + " dropped"
			c.Dropped = p.Kind
			r.Changes = append(r.Changes, c)
		}
		r.settings(o, p)
		return
	case len(refused) > 0:
		for _, c := range refused {
			if c.Detail == "" {
				c.Detail = stateNames[p.Kind] + " would be lost"
			}
			r.Changes = append(r.Changes, c)
		}
		return
	}
	r.Changes = append(r.Changes, Change{Verdict: Carried, Part: p.Name, Kind: p.Kind, Field: p.label(), Detail: stateNames[p.Kind]})
	for _, s := range p.Values {
		was, ok := find(o.Values, s.Field)
		switch {
		case !ok:
			r.Changes = append(r.Changes, Change{Verdict: ByRule, Part: p.Name, Kind: p.Kind, Field: s.Field, Now: s.Value,
				Detail: "the open windows start it from zero, and their panes say it is partial"})
		case was != s.Value:
			r.Changes = append(r.Changes, Change{Verdict: ByRule, Part: p.Name, Kind: p.Kind, Field: s.Field, Was: was, Now: s.Value,
				Detail: "another definition: the open windows start it from zero, and their panes say it is partial"})
		}
	}
	for _, s := range o.Values {
		if _, ok := find(p.Values, s.Field); !ok {
			r.Changes = append(r.Changes, Change{Verdict: ByRule, Part: p.Name, Kind: p.Kind, Field: s.Field, Was: s.Value,
				Detail: "its state in the open windows is dropped"})
		}
	}
	if o.Mode != p.Mode {
		detail := "panes stop retracting the ones before them"
		if p.Mode == "retracting" {
			detail = "an open window's first pane after the restore retracts nothing (the pane before it was not kept); the panes after it retract as usual"
		}
		r.Changes = append(r.Changes, Change{Verdict: ByRule, Part: p.Name, Kind: p.Kind, Field: "mode", Was: o.Mode, Now: p.Mode, Detail: detail})
	}
	r.settings(o, p)
}

// settings adds the changes of the settings that carry over.
func (r *RestoreReport) settings(o, p *Part) {
	for _, s := range p.Settings {
		if was, _ := find(o.Settings, s.Field); was != s.Value {
			r.Changes = append(r.Changes, Change{Verdict: Carried, Part: p.Name, Kind: p.Kind, Field: s.Field, Was: was, Now: s.Value, Detail: settingDetail(p.Kind, s.Field, was, s.Value)})
		}
	}
	for _, s := range o.Settings {
		if _, ok := find(p.Settings, s.Field); !ok {
			r.Changes = append(r.Changes, Change{Verdict: Carried, Part: p.Name, Kind: p.Kind, Field: s.Field, Was: s.Value})
		}
	}
}

// The settings whose change a report explains: both front doors name them
// so.
const (
	SettingLateness = "allowed_lateness"
	SettingHorizon  = "dedup_horizon"
	SettingTrigger  = "trigger"
)

// settingDetail says what a change of a setting does to the state restored.
func settingDetail(kind, field, was, now string) string {
	if kind == StateJoin {
		return joinSettingDetail(field)
	}
	longer := func() (bool, bool) {
		w, err1 := mtime.ParseDuration(was)
		n, err2 := mtime.ParseDuration(now)
		return n > w, err1 == nil && err2 == nil
	}
	switch field {
	case SettingLateness:
		if l, ok := longer(); ok && l {
			return "the open windows stay open longer (those closed already stay closed)"
		} else if ok {
			return "the open windows it has already passed close at the restore, with their final pane"
		}
	case SettingHorizon:
		if l, ok := longer(); ok && l {
			return "the ids kept expire at their event time plus the new horizon (those forgotten already stay forgotten: older events are beyond the horizon)"
		} else if ok {
			return "the ids kept expire at their event time plus the new horizon"
		}
	case SettingTrigger:
		return "the open windows fire as the new trigger says from the restore on"
	}
	return ""
}

// joinSettingDetail is what a change of an interval join's setting does to
// the records it buffers.
func joinSettingDetail(field string) string {
	switch field {
	case "interval":
		return "the buffered records join and expire by the new interval from the restore on (what was emitted stays emitted)"
	case "mode":
		return "the join emits as the new mode says from the restore on, the buffered records included"
	case SettingLateness:
		return "the buffered records expire at their time plus the interval plus the new lateness, and records are late by it from the restore on (those let go already stay gone)"
	}
	return ""
}

func find(list []Setting, field string) (string, bool) {
	for _, s := range list {
		if s.Field == field {
			return s.Value, true
		}
	}
	return "", false
}
