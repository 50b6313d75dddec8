package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/vfs"
)

// CheckRestore says what restoring the checkpoint c into a job checkpointed
// as ck does with its state: the report of every part, or a *SetupError
// that refuses the restore in one line naming the field and what would be
// lost. It writes nothing; a job's start (New) and weir run --check both
// call it.
func CheckRestore(c *checkpoint.Checkpoint, ck Checkpointing) (*RestoreReport, error) {
	var meta jobMeta
	if err := json.Unmarshal(c.Manifest.Meta, &meta); err != nil || meta.Layout < 2 || meta.Layout > layoutVersion {
		return nil, &SetupError{Msg: fmt.Sprintf("%s was written by another version of weir (layout %d, this one reads 2 to %d); move it away to start afresh", c.Path, meta.Layout, layoutVersion)}
	}
	final, finishing := finalRun(c)
	if final && !finishing {
		return &RestoreReport{From: c.Path, Layout: meta.Layout, Rerun: true, Old: meta.Shape}, nil
	}
	if meta.Shape == nil || ck.Shape == nil {
		return legacyRestore(c, ck, meta)
	}
	r := CompareShapes(meta.Shape, ck.Shape, ck.DropState)
	r.From, r.Layout, r.Finishing = c.Path, meta.Layout, finishing
	if refused := r.Refused(); len(refused) > 0 {
		re := refusal(c, refused[0], ck.Shape)
		return r, &SetupError{Field: re.Change.Field, Msg: re.Error(), Err: re}
	}
	return r, nil
}

// RestoreRefusedError is a restore refused because the state of a part
// cannot carry over into the job as it is now: Change says which field
// changed and how, Lost what restoring it would lose ("the open windows of
// 12 keys"). A front door says how to drop that state deliberately, in its
// own words (Say).
type RestoreRefusedError struct {
	// Checkpoint is the checkpoint's directory.
	Checkpoint string
	Change     Change
	Lost       string
	// Keeps is what a restore that drops the state keeps ("the positions
	// and the de-duplication ids"); empty when this kind cannot be dropped.
	Keeps string
}

// Error is the refusal in the engine's words.
func (e *RestoreRefusedError) Error() string { return e.Say(dropSetting) }

// Say is the refusal in one line, in a front door's words: the field, its
// values, what would be lost and how to go on deliberately.
func (e *RestoreRefusedError) Say(drop DropWords) string {
	ch := e.Change
	var b strings.Builder
	switch {
	case ch.Was != "" || ch.Now != "":
		fmt.Fprintf(&b, "%s in %s, %s now", orNone(ch.Was), e.Checkpoint, orNone(ch.Now))
	default:
		b.WriteString(e.Checkpoint)
	}
	if ch.Detail != "" && ch.Detail != stateNames[ch.Kind]+" would be lost" {
		fmt.Fprintf(&b, " (%s)", ch.Detail)
	}
	fmt.Fprintf(&b, ": restoring would lose %s", e.Lost)
	if e.Keeps != "" {
		fmt.Fprintf(&b, "; %s starts them afresh, keeping %s", drop(ch.Kind), e.Keeps)
	}
	return b.String()
}

// legacyRestore checks a checkpoint without a shape (of a weir before
// layout 4, or of a front door that describes none): it restores only into
// a job with its fingerprint, and everything in it carries over.
func legacyRestore(c *checkpoint.Checkpoint, ck Checkpointing, meta jobMeta) (*RestoreReport, error) {
	r := &RestoreReport{From: c.Path, Layout: meta.Layout, Legacy: true}
	if c.Manifest.Fingerprint != ck.Fingerprint {
		if meta.Shape == nil && ck.Shape != nil {
			return nil, &SetupError{Msg: fmt.Sprintf("%s was taken by an earlier weir (layout %d), which recorded only a fingerprint of what the job computes, and the job has changed since (other window, trigger, aggregates or fields): restore it into the job as it was, take a savepoint, then change the job; or move it away to start afresh", c.Path, meta.Layout)}
		}
		return nil, &SetupError{Msg: fmt.Sprintf("%s was taken by a job that computes something else (other window, trigger, aggregates or fields); move it away to start afresh", c.Path)}
	}
	if ck.Shape == nil {
		return r, nil
	}
	has := func(name string) bool {
		for f := range c.Files {
			if f == name || strings.HasPrefix(f, name+".") {
				return true
			}
		}
		return false
	}
	var names []string
	for _, p := range ck.Shape.Parts {
		names = append(names, p.Name)
		if has(p.Name) {
			r.Changes = append(r.Changes, Change{Verdict: Carried, Part: p.Name, Kind: p.Kind, Field: p.label(), Detail: stateNames[p.Kind]})
		} else {
			r.Changes = append(r.Changes, Change{Verdict: Restarted, Part: p.Name, Kind: p.Kind, Field: p.label(), Detail: "new since the checkpoint: starts afresh"})
		}
	}
	for _, name := range meta.Participants {
		if !slices.Contains(names, name) && has(name) && meta.kindOf(name) == partSink {
			r.Changes = append(r.Changes, Change{Verdict: Removed, Part: name, Kind: StateCommits, Field: name, Detail: "no longer in the job; not restored: " + stateNames[StateCommits]})
		}
	}
	return r, nil
}

// refusal is the refusal of a restore for the change ch into a job of the
// shape now.
func refusal(c *checkpoint.Checkpoint, ch Change, now *Shape) *RestoreRefusedError {
	e := &RestoreRefusedError{Checkpoint: c.Path, Change: ch, Lost: stateNames[ch.Kind]}
	switch ch.Kind {
	case StateWindows:
		if keys, err := windowKeys(c, ch.Part); err == nil {
			e.Lost = fmt.Sprintf("the open windows of %d keys", keys)
		}
	case StateDedup:
		if ids, _, err := headIDs(c, ch.Part, nil); err == nil && ids >= 0 {
			e.Lost = fmt.Sprintf("the %d de-duplication ids", ids)
		}
	case StateJoin:
		if js, err := inspectJoin(c, ch.Part); err == nil {
			e.Lost = fmt.Sprintf("the buffered records of %d keys", js.Keys)
		}
	case StateProcess:
		if ps, err := inspectProcess(c, ch.Part); err == nil {
			e.Lost = fmt.Sprintf("the state and timers of %d keys", ps.Keys)
		}
	}
	dedup := slices.ContainsFunc(now.Parts, func(p Part) bool { return p.Kind == StateDedup })
	joins := slices.ContainsFunc(now.Parts, func(p Part) bool { return p.Kind == StateJoin })
	switch {
	case ch.Kind == StateDedup && joins:
		e.Keeps = "the positions and the join's buffered records"
	case ch.Kind == StateWindows && dedup:
		e.Keeps = "the positions and the de-duplication ids"
	case ch.Kind == StateWindows:
		e.Keeps = "the positions"
	case ch.Kind == StateDedup:
		e.Keeps = "the positions and the windows"
	case ch.Kind == StateJoin || ch.Kind == StateProcess:
		e.Keeps = "the positions and the other state"
	}
	return e
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// windowKeys counts the keys of the window stage name in c.
func windowKeys(c *checkpoint.Checkpoint, name string) (int64, error) {
	w, err := inspectWindow(c, checkpointFiles(c), name)
	return w.Keys, err
}

// removeDir removes a temporary directory materializeFiles made ("" for
// none), and releases it.
func removeDir(dir string) {
	if dir != "" {
		vfs.RemoveScratch(dir)
	}
}
