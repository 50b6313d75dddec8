package lateness

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/weirstream/weir/mtime"
)

// reasonList writes rejection counts as " (reason n, ...)", or nothing.
func reasonList(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	var rs []string
	for k, n := range m {
		rs = append(rs, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(rs)
	return " (" + strings.Join(rs, ", ") + ")"
}

// shown is the groups the text shows: the largest first, then all.
func (r *LedgerReport) shown() (groups []LedgerGroup, more int) {
	groups = r.Groups
	if len(groups) > maxTextGroups {
		more = len(groups) - maxTextGroups
		groups = groups[:maxTextGroups]
	}
	return append(append([]LedgerGroup(nil), groups...), r.All), more
}

func optMS(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmtMS(*v)
}

// WriteText writes the join for a person: what was read, the share of the
// ledger entries whose event had arrived within each wait, the counts, and
// for each group whether its missing events are late or lost.
func (r *LedgerReport) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	w = ew
	longest := mtime.Time(r.WaitsMS[len(r.WaitsMS)-1])
	wrap(w, "", fmt.Sprintf("weir lateness: late, or lost? %s (%s) joined to the ledger %s (%s) by %q",
		r.EventsFile, formatNames[r.EventsFormat], r.LedgerFile, formatNames[r.LedgerFormat], r.MatchField))
	line := fmt.Sprintf("Ledger: %s lines: %s entries (time %q), %s rejected%s",
		fmtInt(r.LedgerLines), fmtInt(r.LedgerEntries), r.LedgerTimeField, fmtInt(r.LedgerRejected), reasonList(r.LedgerRejectReasons))
	if r.LedgerDuplicates > 0 {
		line += fmt.Sprintf(", %s repeating the id of an earlier entry (the first is kept)", fmtInt(r.LedgerDuplicates))
	}
	wrap(w, "", line+".")
	line = fmt.Sprintf("Events: %s lines: %s events (arrival %q), %s rejected%s; %s have the id of a ledger entry",
		fmtInt(r.EventLines), fmtInt(r.Events), r.ArrivalField, fmtInt(r.EventsRejected), reasonList(r.EventRejectReasons), fmtInt(r.MatchedEvents))
	if r.DuplicateEvents > 0 {
		line += fmt.Sprintf(" (%s of them repeat an id: the first arrival counts)", fmtInt(r.DuplicateEvents))
	}
	line += fmt.Sprintf(", %s match no entry", fmtInt(r.UnmatchedEvents))
	if r.EventsWithoutMatch > 0 {
		line += fmt.Sprintf(", %s have no %q", fmtInt(r.EventsWithoutMatch), r.MatchField)
	}
	wrap(w, "", line+".")
	if n := r.All.WatchedLess; n == 0 {
		wrap(w, "", fmt.Sprintf("The events arrived up to %s: every entry was made at least %s before.", r.LastArrival, durLabel(longest)))
	} else {
		wrap(w, "", fmt.Sprintf("The events arrived up to %s: %s entries (%s) were made less than %s before, and may still get their event.",
			r.LastArrival, fmtInt(n), fmtPct(pct(float64(n), float64(r.All.Entries))), durLabel(longest)))
	}
	if r.MatchedEvents == 0 {
		wrap(w, "", fmt.Sprintf("Note: no event has the id of a ledger entry: are the ids in %q written the same way in both files?", r.MatchField))
	}
	if n := r.All.ArrivedBeforeEntry; n > 0 {
		wrap(w, "", fmt.Sprintf("Note: %s events arrived before the time of their entry (clocks apart?): they count as arrived within every wait.", fmtInt(n)))
	}

	groups, more := r.shown()
	by := "by " + r.ByField
	if r.ByField == "" {
		by = ""
	}
	name := func(g LedgerGroup) string {
		if g.Value == "(all)" {
			return "all"
		}
		return g.Value
	}

	fmt.Fprintf(w, "\n1. Ledger entries whose event has arrived, by time since the entry\n\n")
	head1 := []string{"", ""}
	head2 := []string{by, "entries"}
	for _, wt := range r.All.Within {
		head1 = append(head1, "within")
		head2 = append(head2, wt.Label)
	}
	head1 = append(head1, "arrived", "never")
	head2 = append(head2, "later", "arrived")
	rows := [][]string{head1, head2}
	for _, g := range groups {
		row := []string{name(g), fmtInt(g.Entries)}
		for _, wt := range g.Within {
			row = append(row, fmtPct(wt.Percent))
		}
		row = append(row, fmtPct(g.LaterPercent), fmtPct(g.NeverArrivedPercent))
		rows = append(rows, row)
	}
	table(w, "   ", rows)
	if more > 0 {
		fmt.Fprintf(w, "   ... and %d more values of %s (all of them in --format json).\n", more, r.ByField)
	}
	fmt.Fprintln(w)
	wrap(w, "   ", fmt.Sprintf("Shares of the ledger entries. Time since the entry: the first arrival of an event with its id (field %q) minus the entry's time (field %q). Never arrived: no event with that id in the file at all.",
		r.ArrivalField, r.LedgerTimeField))

	fmt.Fprintf(w, "\n2. Counts\n\n")
	rows = [][]string{
		{"", "", "", "never", "median", "99%", "longest", "duplicate", "unmatched"},
		{by, "entries", "arrived", "arrived", "wait", "wait", "wait", "events", "events"},
	}
	for _, g := range groups {
		rows = append(rows, []string{name(g), fmtInt(g.Entries), fmtInt(g.Arrived), fmtInt(g.NeverArrived),
			optMS(g.WaitP50MS), optMS(g.WaitP99MS), optMS(g.WaitMaxMS), fmtInt(g.DuplicateEvents), fmtInt(g.UnmatchedEvents)})
	}
	table(w, "   ", rows)
	fmt.Fprintln(w)
	wrap(w, "   ", "Duplicate events repeat the id of an entry that already had one. Unmatched events have an id the ledger does not hold (grouped by the event's own field); they count in no share.")

	fmt.Fprintf(w, "\n3. Late, or lost?\n\n")
	wrap(w, "   ", fmt.Sprintf("Late events arrive in the end: the share arrived keeps rising until the longest wait. Lost ones never do: the share goes flat (%s of the arrivals in) long before the longest wait, below 100%%.",
		fmtPct(100*FlatShare)))
	fmt.Fprintln(w)
	list := groups
	if len(r.Groups) > 0 {
		list = groups[:len(groups)-1] // the groups, not all
	}
	for _, g := range list {
		if g.Conclusion != "" {
			wrap(w, "   ", g.Conclusion)
		}
	}
	if r.SeenFile != "" {
		fmt.Fprintf(w, "\n4. Were the devices online?\n\n")
		line := fmt.Sprintf("%s (%s): %s lines: %s events, %s rejected%s",
			r.SeenFile, formatNames[r.SeenFormat], fmtInt(r.SeenLines), fmtInt(r.SeenEvents), fmtInt(r.SeenRejected), reasonList(r.SeenRejectReason))
		if r.SeenWithoutBy > 0 {
			line += fmt.Sprintf(", %s without %q", fmtInt(r.SeenWithoutBy), r.SeenBy)
		}
		wrap(w, "   ", line+". An entry that never arrived was seen online when this file holds an event of its "+
			fmt.Sprintf("%q (read from the entry) that happened at most %s before the entry, not after it, and arrived at most %s after it happened.",
				r.SeenBy, durLabel(mtime.Time(r.SeenWithinMS)), durLabel(mtime.Time(r.SeenWithinMS))))
		fmt.Fprintln(w)
		any := false
		for _, g := range groups {
			if g.Online != "" {
				wrap(w, "   ", g.Online)
				any = true
			}
		}
		if !any {
			wrap(w, "   ", "Every ledger entry has its event: there is nothing to look for.")
		}
	}
	return ew.err
}

// WriteJSON writes the join as one indented JSON object.
func (r *LedgerReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// compactDur writes a wait for a column name: 90s, 5m, 24h, 250ms.
func compactDur(ms int64) string {
	switch {
	case ms%3600000 == 0:
		return strconv.FormatInt(ms/3600000, 10) + "h"
	case ms%60000 == 0:
		return strconv.FormatInt(ms/60000, 10) + "m"
	case ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// CSVHeader is the header row of WriteCSV: for each wait W (as 5m, 24h) a
// column within_W (entries) and within_W_percent.
func (r *LedgerReport) CSVHeader() []string {
	h := []string{"group", "entries", "arrived", "arrived_percent"}
	for _, w := range r.WaitsMS {
		c := "within_" + compactDur(w)
		h = append(h, c, c+"_percent")
	}
	h = append(h, "arrived_later", "arrived_later_percent", "never_arrived", "never_arrived_percent",
		"never_arrived_watched_less", "entries_watched_less", "arrived_before_entry",
		"wait_p50_ms", "wait_p99_ms", "wait_max_ms", "duplicate_events", "unmatched_events", "flat_within_ms", "verdict")
	if r.SeenFile != "" {
		h = append(h, "never_arrived_seen_online", "never_arrived_seen_online_percent", "never_arrived_without_by")
	}
	return h
}

// WriteCSV writes a header row (CSVHeader), then one row per group, the
// largest first, then a row "(all)". Percentages have four decimals; the
// other numbers are those of WriteJSON.
func (r *LedgerReport) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(r.CSVHeader())
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	p := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	o := func(v *int64) string {
		if v == nil {
			return ""
		}
		return i(*v)
	}
	for _, g := range append(append([]LedgerGroup(nil), r.Groups...), r.All) {
		row := []string{g.Value, i(g.Entries), i(g.Arrived), p(g.ArrivedPercent)}
		for _, wt := range g.Within {
			row = append(row, i(wt.Arrived), p(wt.Percent))
		}
		row = append(row, i(g.Later), p(g.LaterPercent), i(g.NeverArrived), p(g.NeverArrivedPercent),
			i(g.NeverArrivedWatchedLess), i(g.WatchedLess), i(g.ArrivedBeforeEntry),
			o(g.WaitP50MS), o(g.WaitP99MS), o(g.WaitMaxMS), i(g.DuplicateEvents), i(g.UnmatchedEvents), o(g.FlatWithinMS), g.Verdict)
		if r.SeenFile != "" {
			row = append(row, i(g.NeverArrivedSeenOnline), p(g.NeverArrivedSeenOnlinePercent), i(g.NeverArrivedWithoutBy))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
