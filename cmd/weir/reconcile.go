package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/reconcile"
)

// files is a repeatable flag of file names (also comma-separated).
type files []string

func (f *files) String() string { return strings.Join(*f, ",") }
func (f *files) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s != "" {
			*f = append(*f, s)
		}
	}
	return nil
}

// cmdReconcile corrects a job's table from a retained ledger.
func cmdReconcile(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir reconcile", stderr)
	var ledger files
	fs.Var(&ledger, "ledger", "a `file` of the retained ledger: the input, the late output, a dead-letter queue (repeat the flag, or separate with commas)")
	from := fs.String("from", "", "reconcile the windows that start at or after this `time` (RFC 3339; default: every window)")
	to := fs.String("to", "", "... and before this `time`")
	reason := fs.String("reason", "", "why: said in every correction's reason, before the values that changed")
	report := fs.Bool("report", false, "print, by range of window starts, how many windows were corrected, already right or not correctable (consecutive ranges alike in one line)")
	all := fs.Bool("all", false, "list every window with what became of it, not only the corrected ones")
	dry := fs.Bool("dry-run", false, "compare and say what would be corrected, without writing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	acceptance := fs.String("acceptance", "", "write the acceptance record to this .json `file` (and a .md beside it)")
	output := fs.Int("output", -1, "the `index` of the table in the job's output list; -1 takes the first table")
	aggregation := fs.String("aggregation", "", "in a job of several aggregations, the `name` of the one whose table to correct (default: the first that writes to a table)")
	allowLower := fs.Bool("allow-lower", false, "publish corrections that lower a count the stream published (refused by default: a late event can only add, so a lower count means the ledger lacks events)")
	addSetFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: weir reconcile --ledger FILE [--ledger FILE...] [flags] JOB.yaml

Recomputes the job's windows from a retained ledger (de-duplicated by the job's
id, with a perfect watermark, through weir's engine), compares them with the rows
of the job's table (sqlite or postgres), and publishes for every window whose
values differ a revision with status reconciled and a reason. Each correction is
written only if its row is still as it was read: a row that changed in between
(a pane of the stream came first) is left alone and reported, and the command
exits 1; run it again. The stream never overwrites a reconciled row.

The report lists the corrected windows (--all: every window and what became
of it), then with --report the ranges of window starts alike (corrected,
already right, not correctable) a line each, and the totals.

Exit status: 0 done, 1 a window raced or the reconciliation failed, 2 bad flags,
a bad job file, a job that writes no table, or a ledger file that does not
exist.

Flags:
`)
		fs.PrintDefaults()
	}
	j, _, code, ok := loadJobArg(fs, args, stderr)
	if !ok {
		return code
	}
	stderr = j.RedactWriter(stderr)
	if !j.Several() && *aggregation != "" {
		fmt.Fprintf(stderr, "weir: --aggregation: %s has one aggregation (no aggregations:): leave the flag out\n", j.File)
		return 2
	}
	if j.Several() {
		one := j.Alone(*aggregation)
		if one == nil {
			var names []string
			for _, a := range j.Aggregations() {
				names = append(names, a.Aggregation)
			}
			fmt.Fprintf(stderr, "weir: --aggregation: %s has no aggregation %q (it has %s)\n", j.File, *aggregation, strings.Join(names, ", "))
			return 2
		}
		j = one
	}
	o := reconcile.Options{Ledger: ledger, From: mtime.MinTime, To: mtime.MaxTime, Reason: *reason, Output: *output, AllowLower: *allowLower,
		Log: func(s string) { fmt.Fprintln(stderr, "weir:", s) }}
	for _, f := range []struct {
		name, v string
		dst     *mtime.Time
	}{{"from", *from, &o.From}, {"to", *to, &o.To}} {
		if f.v == "" {
			continue
		}
		t, err := mtime.Parse([]byte(f.v))
		if err != nil {
			fmt.Fprintf(stderr, "weir: --%s: expected an RFC 3339 time, got %q\n", f.name, f.v)
			return 2
		}
		*f.dst = t
	}
	if len(ledger) == 0 {
		fmt.Fprintln(stderr, "weir: --ledger: name the files that hold every event (the input, the late output, a dead-letter queue)")
		return 2
	}
	if *acceptance != "" && j.Acceptance != "" {
		// The reconciliation's record goes beside the job's, never over it.
		if a, err := filepath.Abs(*acceptance); err == nil && a == j.Acceptance {
			fmt.Fprintf(stderr, "weir: --acceptance: %s is the job's own acceptance record; write the reconciliation's beside it (another file)\n", *acceptance)
			return 2
		}
	}
	if err := reconcile.Check(j, o); err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 2 // nothing to reconcile as asked: a usage mistake
	}
	ctx := context.Background()
	p, err := reconcile.Prepare(ctx, j, o)
	if err != nil {
		fmt.Fprintln(stderr, "weir:", err)
		return 1
	}
	defer p.Close()
	rep := p.Report()
	if !*dry {
		if rep, err = p.Apply(ctx); err != nil {
			fmt.Fprintln(stderr, "weir:", err)
			return 1
		}
	}
	if *acceptance != "" && !*dry {
		a := job.NewAcceptance(j)
		a.Scope = "a reconciliation of table " + rep.Table + " from a ledger"
		a.Input = job.AcceptanceInput{Sources: rep.LedgerFiles, Lines: rep.LedgerLines, Events: rep.LedgerEvents,
			FirstEventTime: rep.LedgerFirst, LastEventTime: rep.LedgerLast}
		a.Corrections = struct {
			Corrected      int               `json:"corrected"`
			AlreadyRight   int               `json:"already_right"`
			NotCorrectable int               `json:"not_correctable"`
			Raced          int               `json:"raced"`
			Ranges         []reconcile.Range `json:"ranges"`
		}{rep.Corrected, rep.AlreadyRight, rep.NotCorrectable, rep.Raced, rep.Ranges}
		if err := job.WriteAcceptance(*acceptance, a, false); err != nil {
			fmt.Fprintln(stderr, "weir: the acceptance record:", err)
			return 1
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		fmt.Fprint(stdout, reconcileText(rep, *report, *all))
	}
	if rep.Raced > 0 {
		fmt.Fprintf(stderr, "weir: %d windows changed in the table after they were read and were not corrected: run weir reconcile again\n", rep.Raced)
		return 1
	}
	return 0
}

// reconcileText is the report for a person: the ledger, the corrected
// windows (every window, with all), the ranges of windows alike (with
// ranges), and the totals.
func reconcileText(r *reconcile.Report, ranges, all bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger: %d lines in %d files: %d events", r.LedgerLines, len(r.LedgerFiles), r.LedgerEvents)
	if r.LedgerEvents > 0 {
		fmt.Fprintf(&b, " from %s to %s", r.LedgerFirst, r.LedgerLast)
	}
	fmt.Fprintf(&b, ", %d duplicates dropped, %d lines not events", r.LedgerDuplicates, r.LedgerUnreadable)
	if len(r.Unreadable) > 0 {
		var why []string
		for _, k := range slices.Sorted(maps.Keys(r.Unreadable)) {
			why = append(why, fmt.Sprintf("%s %d", k, r.Unreadable[k]))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(why, ", "))
	}
	b.WriteByte('\n')
	verb := "corrected"
	if !r.Applied {
		verb = "to correct (dry run)"
	}
	for _, w := range r.Windows {
		key := w.Key
		if key == "" {
			key = "-"
		}
		switch {
		case w.Outcome == reconcile.Corrected:
			fmt.Fprintf(&b, "%s  %s [%s, %s): revision %d -> %d: %s\n", verb, key, w.WindowStart, w.WindowEnd, w.Base, w.Revision, w.Changes)
		case all && w.Note != "":
			fmt.Fprintf(&b, "%s  %s [%s, %s): %s\n", strings.ReplaceAll(string(w.Outcome), "_", " "), key, w.WindowStart, w.WindowEnd, w.Note)
		case all:
			fmt.Fprintf(&b, "%s  %s [%s, %s)\n", strings.ReplaceAll(string(w.Outcome), "_", " "), key, w.WindowStart, w.WindowEnd)
		}
	}
	if ranges {
		fmt.Fprintf(&b, "%-26s %-26s %9s %13s %15s %5s\n", "window_start", "window_end", "corrected", "already_right", "not_correctable", "raced")
		for _, g := range mergeRanges(r.Ranges) {
			fmt.Fprintf(&b, "%-26s %-26s %9d %13d %15d %5d\n", g.WindowStart, g.WindowEnd, g.Corrected, g.AlreadyRight, g.NotCorrectable, g.Raced)
		}
	}
	fmt.Fprintf(&b, "table %s: %d windows %s, %d already right, %d not correctable (the ledger lacks their events), %d raced\n",
		r.Table, r.Corrected, verb, r.AlreadyRight, r.NotCorrectable, r.Raced)
	return b.String()
}

// mergeRanges joins consecutive ranges of windows alike, those with the
// same outcomes present (corrected, not correctable, raced; or only
// already right), into one: from the first's start to the last's end,
// their counts summed.
func mergeRanges(rs []reconcile.Range) []reconcile.Range {
	kind := func(g reconcile.Range) [3]bool { return [3]bool{g.Corrected > 0, g.NotCorrectable > 0, g.Raced > 0} }
	var out []reconcile.Range
	for _, g := range rs {
		if n := len(out); n > 0 && kind(out[n-1]) == kind(g) {
			m := &out[n-1]
			m.WindowEnd = g.WindowEnd
			m.Corrected += g.Corrected
			m.AlreadyRight += g.AlreadyRight
			m.NotCorrectable += g.NotCorrectable
			m.Raced += g.Raced
			continue
		}
		out = append(out, g)
	}
	return out
}
