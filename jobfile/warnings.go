package jobfile

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Warnings are what a job's settings risk, the common mistakes of
// windowed jobs: none stops the job; weir says them at start (and weir lint).
func (j *Job) Warnings() []string {
	if !j.Several() {
		return j.warnings()
	}
	// A job of several aggregations: what each says, under its name,
	// and once what every one says.
	all := j.Aggregations()
	per := make([][]string, len(all))
	count := map[string]int{}
	for i, a := range all {
		per[i] = a.warnings()
		for _, w := range per[i] {
			count[w]++
		}
	}
	var out []string
	for i, a := range all {
		for _, w := range per[i] {
			switch {
			case count[w] < len(all):
				out = append(out, "aggregations."+a.Aggregation+": "+w)
			case i == 0:
				out = append(out, w)
			}
		}
	}
	return out
}

// warnings are Warnings of a job of one aggregation, or of one of a job of
// several.
func (j *Job) warnings() []string {
	var w []string
	if j.Lookup != nil {
		// Nothing is too late for a lookup; what it cannot hand on are
		// the records whose lookup kept failing.
		if j.DeadLetter == nil {
			w = append(w, "no dead_letter: the records whose lookup keeps failing are counted, but they are lost (send them to a dead_letter to look them up again later)")
		}
		if j.ID != nil && j.Late == nil {
			w = append(w, "no late_output: records older than the watermark minus dedup_horizon cannot be checked for repeats; they are counted, but they are lost (send them to a late_output)")
		}
		return w
	}
	if msg := latenessWarning(j.Window); msg != "" {
		w = append(w, msg)
	}
	if j.Late == nil {
		w = append(w, "no late_output: too-late events are dropped; they are counted, but they are lost (send them to a late_output to correct the results later)")
	}
	if jo := j.Join; jo != nil && (j.ID != nil || jo.With.ID != nil) {
		// A join takes a record until the watermark passes its time plus
		// the lateness (a window join: its window's end plus the
		// lateness); a head sets aside one whose time plus the horizon
		// the watermark has passed.
		need, what := jo.AllowedLateness, "join.allowed_lateness "+mtime.FormatDuration(jo.AllowedLateness)
		if jo.Window > 0 {
			need, what = jo.Window+jo.AllowedLateness, fmt.Sprintf("the join's window %s plus join.allowed_lateness %s", mtime.FormatDuration(jo.Window), mtime.FormatDuration(jo.AllowedLateness))
		}
		if j.DedupHorizon < need {
			w = append(w, fmt.Sprintf("dedup_horizon %s is shorter than %s: records the join still takes but older than the watermark minus %[1]s cannot be checked for repeats, and go to the late output as beyond_dedup_horizon instead of being joined",
				mtime.FormatDuration(j.DedupHorizon), what))
		}
	} else if j.ID != nil && j.Watermark.Kind == watermark.Bounded {
		if need := j.Watermark.Delay + j.Window.AllowedLateness; j.DedupHorizon < need {
			w = append(w, fmt.Sprintf("dedup_horizon %s is shorter than the watermark delay %s plus the allowed lateness %s: events the windows still accept but older than the watermark minus %[1]s cannot be checked for repeats, and go to the late output as beyond_dedup_horizon instead of being counted",
				mtime.FormatDuration(j.DedupHorizon), mtime.FormatDuration(j.Watermark.Delay), mtime.FormatDuration(j.Window.AllowedLateness)))
		}
	}
	if sl, ok := j.Window.Assigner.(window.Sliding); ok {
		if n := (sl.Size + sl.Slide - 1) / sl.Slide; n > 1000 {
			w = append(w, fmt.Sprintf("window sliding %s every %s puts every event in %d windows, and each event costs that many updates: a longer slide, or a tumbling window, costs less", mtime.FormatDuration(sl.Size), mtime.FormatDuration(sl.Slide), n))
		}
	}
	w = append(w, revisionWarnings(j)...)
	if j.State.Backend != "pebble" && j.State.MemoryBudget > 0 {
		w = append(w, fmt.Sprintf("state.memory_budget %d MiB is no bound with the memory backend: it keeps every key in memory, and only says when its state passes the budget (while the job runs, and at its end); state: {backend: pebble} holds to it",
			j.State.MemoryBudget>>20))
	}
	return w
}

// Notes are advice weir lint gives that a job's start does not: settings
// that work, outside the range the usual advice gives.
func (j *Job) Notes() []string {
	var n []string
	if msg := latenessNote(j.Window); msg != "" {
		n = append(n, msg)
	}
	return n
}

// latenessNote notes an allowed lateness outside the usual advice of 5% to
// 20% of the window (of the gap, for sessions), below the ten windows past
// which latenessWarning warns: too little drops the stragglers a few
// seconds of lateness would have counted, too much keeps windows open and
// fires them again for little gain. Without lateness it says nothing: the
// late_output warning speaks for that.
func latenessNote(ws window.Strategy) string {
	l, size := ws.AllowedLateness, window.Length(ws.Assigner)
	if l <= 0 || size <= 0 || l >= 10*size || (20*l >= size && 5*l <= size) {
		return ""
	}
	lo, hi := size/20, size/5
	return fmt.Sprintf("allowed_lateness %s is %s of the window (%s); the usual advice is 5%% to 20%% (%s to %s): weir lateness --job measures what each lateness would keep of this input",
		mtime.FormatDuration(l), percent(l, size), ws.Assigner, mtime.FormatDuration(lo), mtime.FormatDuration(hi))
}

// percent is a of b as a percentage, to two significant digits.
func percent(a, b mtime.Time) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2g", 100*float64(a)/float64(b)), ".0"), ".") + "%"
}

// latenessWarning warns of an allowed lateness that is many times the
// window (ten or more), or days long: every key keeps that many windows
// open, and each late event fires one again.
func latenessWarning(ws window.Strategy) string {
	l := ws.AllowedLateness
	if l <= 0 {
		return ""
	}
	const day = mtime.Time(24 * 3600 * 1000)
	size := window.Length(ws.Assigner)
	var open mtime.Time // the windows a key keeps open at once; 0 for sessions
	switch a := ws.Assigner.(type) {
	case window.Tumbling:
		open = l/a.Size + 1
	case window.Sliding:
		open = (a.Size + l + a.Slide - 1) / a.Slide
	}
	switch {
	case size > 0 && l >= 10*size && open > 0:
		return fmt.Sprintf("allowed_lateness %s is %d times the window (%s): a key keeps up to %d windows open at once, each fired again by every late event: prefer a lateness of a few windows, and a late_output for what comes later",
			mtime.FormatDuration(l), l/size, ws.Assigner, open)
	case size > 0 && l >= 10*size:
		return fmt.Sprintf("allowed_lateness %s is %d times the window (%s): every session stays open that long after its end, fired again by every late event: prefer a lateness of a few gaps, and a late_output for what comes later",
			mtime.FormatDuration(l), l/size, ws.Assigner)
	case l >= day && open > 0:
		return fmt.Sprintf("allowed_lateness %s keeps every window's state for days (%s: up to %d windows per key at once): prefer minutes to hours, and a late_output for what comes later",
			mtime.FormatDuration(l), ws.Assigner, open)
	case l >= day:
		return fmt.Sprintf("allowed_lateness %s keeps every window's state for days (%s): prefer minutes to hours, and a late_output for what comes later",
			mtime.FormatDuration(l), ws.Assigner)
	}
	return ""
}

// revisionWarnings warn of more than one pane per window going to a file
// of JSON lines: a table upserts, and a Kafka topic is keyed by window, but
// a reader of lines that does not keep each window's highest revision
// counts a window more than once.
func revisionWarnings(j *Job) []string {
	why := j.Revisions()
	if len(why) == 0 {
		return nil
	}
	var w []string
	for _, o := range j.Outputs {
		if o.File == "" {
			continue
		}
		name := filepath.Base(o.File)
		if o.File == "-" {
			name = "standard output"
		}
		w = append(w, fmt.Sprintf("%s (%s) gets more than one pane per window (%s): a reader that does not keep each key and window's highest revision counts a window more than once; trigger: {final_only: true} writes one pane per window, and a table (sqlite, postgres) upserts",
			o.Field, name, strings.Join(why, ", ")))
	}
	return w
}

// revisions says why the job writes more than one pane per window (early
// panes, late panes, retractions), or nothing when it writes one (or
// deltas, which are added up).
func (j *Job) Revisions() []string {
	ws, tr := j.Window, j.Window.Trigger
	if tr.FinalOnly || ws.Mode == window.Discarding {
		return nil // one pane per window; or deltas, to be added up
	}
	var why []string
	if tr.Composite != nil {
		// A composite trigger may fire any number of panes a window, but
		// after_watermark alone fires once and finishes.
		if tr.Composite.Op != trigger.OpEndOfWindow {
			why = append(why, "panes as the trigger fires them ("+tr.Describe()+")")
		}
		if ws.Mode == window.Retracting {
			why = append(why, "retractions")
		}
		return why
	}
	switch {
	case tr.EarlyDelay > 0:
		why = append(why, "early panes every "+mtime.FormatDuration(tr.EarlyDelay))
	case tr.EarlyElements > 0:
		why = append(why, fmt.Sprintf("early panes every %d events", tr.EarlyElements))
	}
	if ws.AllowedLateness > 0 && tr.Late != trigger.LateNone {
		why = append(why, "late panes within the allowed lateness of "+mtime.FormatDuration(ws.AllowedLateness))
	}
	if ws.Mode == window.Retracting {
		why = append(why, "retractions")
	}
	return why
}
