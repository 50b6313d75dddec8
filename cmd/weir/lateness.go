package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/lateness"
	"github.com/weirstream/weir/mtime"
)

const latenessUsage = `Usage: weir lateness [flags] FILE
       weir lateness --job JOB.yaml [flags] [FILE]
       weir lateness --ledger LEDGER --match FIELD [--by FIELD] [--waits LIST] [--seen FILE] [flags] FILE

Measures how late a recorded stream really is, before you choose a
watermark: the travel time of its events (arrival minus event time), the
share that arrive out of order, Table 1 (for each watermark delay, the share
of events too late for their window and how long results wait, replayed
with the rules of weir run) and a recommendation.

FILE is JSON lines, CSV (with a header row) or Parquet, by its extension
(--input-format to say otherwise). Shares are sums of weights when the input
has a weight field: sample_weight by default (a JSON line without it weighs
1; a line whose weight is not a non-negative number is rejected as
bad_weight), or the --weight field, which every line must have.

Late, or lost? With --ledger, FILE is joined to a ledger of what must have
happened (the orders of an order database), one entry per line with an id
(the --match field, in both files, compared as text) and a time
(--ledger-time, by default the events' time field). The ledger is JSON
lines, CSV or Parquet by its extension (--input-format is FILE's). FILE is
read with weir run's rules (a line needs an event time and an arrival); a
rejected line is no arrival. For each group (--by, read from the entry, else
from its event) the report gives the entries, the share whose event arrived
within each of --waits after the entry's time (the event's arrival minus the
entry's time; when an id has several events, the first arrival counts and
the others are duplicates), the share that never arrived (no event with that
id in FILE at all), the events that match no entry (counted apart, in no
share), and whether the missing events are late or lost: lost when 99.9% of
the arrivals came within a wait shorter than the longest, and the share
arrived stays below 100%. Shares are of entries (no weights); the ledger is
held in memory. --window, --delays, --lateness, --target, --max-wait,
--weight and --no-weight do not apply.

Were the devices online? With --seen, a file of the same users' other
events (a checkout_start moments before each order; JSON lines, CSV or
Parquet by its extension, read with weir run's rules), the report says for
each group how many of the entries that never arrived had an event of the
same user (--seen-by, read from the entry: user_id by default) that
happened at most --seen-within (2s) before the entry, not after it, and
arrived at most that long after it happened: those devices were online
moments before, so their events were not held back by a lost connection.

Exit status: 0 done, 1 the input could not be read to the end, 2 bad flags
or an input that cannot be used (missing file, unknown field).

Flags:
`

// listFlag collects a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// cmdLateness runs "weir lateness".
func cmdLateness(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir lateness", stderr)
	jobFile := fs.String("job", "", "take the time fields (and window size) from this job `file`")
	ledger := fs.String("ledger", "", "join FILE to this ledger `file` of what must have happened: late, or lost?")
	match := fs.String("match", "", "with --ledger: the id `field` of the ledger's entries and of the events (order_id)")
	ledgerTime := fs.String("ledger-time", "", "with --ledger: the entry-time `field` of the ledger (default: the events' time field)")
	waitList := fs.String("waits", "1m,5m,1h,6h,24h", "with --ledger: the `waits` after an entry at which to give the share arrived, comma-separated")
	seen := fs.String("seen", "", "with --ledger: a `file` of the same users' other events, to tell whether the devices of the entries that never arrived were online")
	seenBy := fs.String("seen-by", "user_id", "with --seen: the user or device `field`, in the ledger and in the --seen file")
	seenWithin := fs.Duration("seen-within", lateness.DefaultSeenWithin, "with --seen: how long before an entry the user's event may have happened, and how long after it happened it must have arrived (`duration`)")
	timeField := fs.String("time", "ts", "event-time `field` (dotted for nested JSON)")
	arrival := fs.String("arrival", "arrival", "arrival-time `field`")
	sent := fs.String("sent", "", "send-time `field`, on the device's clock: the event time is corrected to arrival - (sent - event time), as time.sent_field does")
	inFormat := fs.String("input-format", "", "input `format`: jsonl, csv, parquet or avro (default: from the extension)")
	weight := fs.String("weight", "", "weight `field`: how many real events a line stands for, on every line (default: sample_weight where the input has it)")
	noWeight := fs.Bool("no-weight", false, "ignore any weight field: every line counts once")
	var by listFlag
	latestN := fs.Int("latest", 0, "also list the `N` latest events (the longest travel times): line, partition, when they happened and arrived")
	fs.Var(&by, "by", "group the travel times by this `field` (repeatable, or comma-separated; one field with --ledger)")
	compare := fs.String("compare", "", "compare `periods` of event time side by side, each START/LENGTH (2026-08-31/7d; START an RFC 3339 date or time, UTC when a date), comma-separated, at least two")
	idles := fs.String("idles", "", "with --job, for a job with time.partition_field: the idle `timeouts` to replay, comma-separated (default: from the partitions' quiet gaps)")
	win := fs.String("window", "1m", "tumbling window `size`")
	delays := fs.String("delays", "none,2s,5m,1h,3h,6h", "watermark `delays` of Table 1, comma-separated (none = 0)")
	lateList := fs.String("lateness", "1m,5m,1h,6h", "allowed `latenesses` to try with the recommended delay")
	target := fs.String("target", "0.1%", "largest acceptable `share` of too-late events (0.1% or 0.001)")
	maxWait := fs.String("max-wait", "1h", "longest a result may wait after its window ends (`duration`)")
	format := fs.String("format", "text", "output `format`: text, json or csv (csv: Table 1, or with --ledger a row per group)")
	plot := fs.String("plot", "", "also draw the trade-off curve and the travel times (with --ledger, the share arrived by time since the entry) to this `file` (.svg or .png)")
	output := fs.String("o", "", "write the report to `FILE` instead of standard output")
	fs.Usage = func() {
		fmt.Fprint(stderr, latenessUsage)
		fs.PrintDefaults()
	}
	// Flags may come before or after FILE.
	files, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "weir lateness: "+format+"\n", a...)
		return 2
	}
	if len(files) > 1 || (len(files) == 0 && *jobFile == "") {
		fs.Usage()
		return 2
	}
	if *ledger == "" {
		for _, name := range []string{"match", "ledger-time", "waits", "seen", "seen-by", "seen-within"} {
			if set[name] {
				return usageErr("--%s needs --ledger", name)
			}
		}
	} else {
		for _, name := range []string{"window", "delays", "lateness", "target", "max-wait", "weight", "no-weight", "latest", "idles", "compare"} {
			if set[name] {
				return usageErr("--%s does not apply with --ledger", name)
			}
		}
		if *match == "" {
			return usageErr("--ledger needs --match: the id field of the ledger's entries and of the events")
		}
		if len(by) > 1 {
			return usageErr("--by takes one field with --ledger, not %d", len(by))
		}
		if *seen == "" && (set["seen-by"] || set["seen-within"]) {
			return usageErr("--seen-by and --seen-within need --seen: the file of the users' other events")
		}
		if *seenWithin <= 0 {
			return usageErr("--seen-within must be a positive duration, got %s", *seenWithin)
		}
	}
	var o lateness.Options
	o.Format, o.Weight, o.NoWeight, o.By = *inFormat, *weight, *noWeight, by
	if *latestN < 0 {
		return usageErr("--latest must not be negative")
	}
	o.Latest = *latestN
	var err error
	parseDur := func(name, s string) (time.Duration, bool) {
		d, err := mtime.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			usageErr("--%s: %q is not a duration (such as 2s, 5m or 1h)", name, s)
			return 0, false
		}
		return time.Duration(d) * time.Millisecond, true
	}
	// positiveDurs reads a comma-separated list of positive durations.
	positiveDurs := func(name, list string) ([]time.Duration, bool) {
		var ds []time.Duration
		for _, s := range strings.Split(list, ",") {
			d, ok := parseDur(name, s)
			if !ok {
				return nil, false
			}
			if d <= 0 {
				usageErr("--%s: %q must be positive", name, strings.TrimSpace(s))
				return nil, false
			}
			ds = append(ds, d)
		}
		return ds, true
	}
	if set["window"] || *jobFile == "" {
		if o.Window, ok = parseDur("window", *win); !ok {
			return 2
		}
		if o.Window <= 0 {
			return usageErr("--window must be positive")
		}
	}
	for _, s := range strings.Split(*delays, ",") {
		if s = strings.TrimSpace(s); s == "none" {
			o.Delays = append(o.Delays, 0)
			continue
		}
		d, ok := parseDur("delays", s)
		if !ok {
			return 2
		}
		o.Delays = append(o.Delays, d)
	}
	o.Lateness = []time.Duration{}
	for _, s := range strings.Split(*lateList, ",") {
		if s = strings.TrimSpace(s); s == "" || s == "none" {
			continue
		}
		d, ok := parseDur("lateness", s)
		if !ok {
			return 2
		}
		if d <= 0 {
			return usageErr("--lateness: %q must be positive", s)
		}
		o.Lateness = append(o.Lateness, d)
	}
	if set["idles"] {
		if *jobFile == "" {
			return usageErr("--idles needs --job: the partitions and their idleness are the job's")
		}
		if o.Idles, ok = positiveDurs("idles", *idles); !ok {
			return 2
		}
	}
	if set["compare"] {
		if o.Periods, err = parsePeriods(*compare); err != nil {
			return usageErr("--compare: %v", err)
		}
	}
	if o.Target, err = parseShare(*target); err != nil {
		return usageErr("--target: %v", err)
	}
	if o.MaxWait, ok = parseDur("max-wait", *maxWait); !ok {
		return 2
	}
	if o.MaxWait <= 0 {
		return usageErr("--max-wait must be positive")
	}
	switch *format {
	case "text", "json", "csv":
	default:
		return usageErr("--format must be text, json or csv, not %q", *format)
	}
	if *plot != "" {
		switch strings.ToLower(filepath.Ext(*plot)) {
		case ".svg", ".png":
		default:
			return usageErr("--plot: %q must end in .svg or .png", *plot)
		}
	}
	o.TimeField, o.ArrivalField, o.SentField = *timeField, *arrival, *sent
	path := ""
	if len(files) == 1 {
		path = files[0]
	}
	if *jobFile != "" {
		if set["time"] || set["arrival"] || set["sent"] {
			return usageErr("--job names the time fields: drop --time, --arrival and --sent")
		}
		j, err := loadJob(*jobFile, path)
		if err != nil {
			fmt.Fprintln(stderr, "weir lateness:", err)
			return 2
		}
		if o, err = lateness.FromJob(o, j); err != nil {
			return usageErr("%v", err)
		}
		if path == "" {
			if j.Input == "-" {
				return usageErr("%s reads standard input: name the recorded FILE", *jobFile)
			}
			path = j.Input
		}
	}

	type report interface {
		WriteText(io.Writer) error
		WriteJSON(io.Writer) error
		WriteCSV(io.Writer) error
		WritePlotFile(string) error
	}
	var rep report
	if *ledger != "" {
		l := lateness.LedgerOptions{Path: *ledger, Match: *match, Time: *ledgerTime, Seen: *seen}
		if *seen != "" {
			// Its format is its extension's, as the ledger's is
			// (--input-format is FILE's).
			l.SeenBy, l.SeenWithin = *seenBy, *seenWithin
		}
		if l.Waits, ok = positiveDurs("waits", *waitList); !ok {
			return 2
		}
		rep, err = lateness.AnalyzeLedger(path, o, l)
	} else {
		rep, err = lateness.Analyze(path, o)
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir lateness:", err)
		if lateness.IsUsage(err) {
			return 2
		}
		return 1
	}
	w := stdout
	var f *os.File
	if *output != "" && *output != "-" {
		if f, err = os.Create(*output); err != nil {
			fmt.Fprintln(stderr, "weir lateness:", err)
			return 1
		}
		w = f
	}
	switch *format {
	case "json":
		err = rep.WriteJSON(w)
	case "csv":
		err = rep.WriteCSV(w)
	default:
		err = rep.WriteText(w)
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil && *plot != "" {
		err = rep.WritePlotFile(*plot)
	}
	if err != nil {
		fmt.Fprintln(stderr, "weir lateness:", err)
		return 1
	}
	return 0
}

// loadJob reads a job file. Its own input need not exist when FILE is
// given: the recorded stream to measure may be a copy elsewhere.
func loadJob(path, file string) (*jobfile.Job, error) {
	if file == "" {
		return jobfile.Load(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the job file %s: %v", path, errors.Unwrap(err))
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	return jobfile.Parse(data, path, dir)
}

// parsePeriods reads --compare: START/LENGTH, comma-separated, at least
// two.
func parsePeriods(list string) ([]lateness.Period, error) {
	var ps []lateness.Period
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		start, length, ok := strings.Cut(s, "/")
		if !ok {
			return nil, fmt.Errorf("%q is not START/LENGTH (such as 2026-08-31/7d)", s)
		}
		t, err := time.Parse(time.DateOnly, start)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, start); err != nil {
				return nil, fmt.Errorf("%q: the start %q is not an RFC 3339 date or time (2026-08-31 or 2026-08-31T06:00:00Z)", s, start)
			}
		}
		d, err := mtime.ParseDuration(length)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q: the length %q is not a positive duration (such as 7d or 12h)", s, length)
		}
		ps = append(ps, lateness.Period{Label: s, Start: t, Length: time.Duration(d) * time.Millisecond})
	}
	if len(ps) < 2 {
		return nil, fmt.Errorf("compare at least two periods, not %d", len(ps))
	}
	return ps, nil
}

// parseShare reads "0.1%" or "0.001".
func parseShare(s string) (float64, error) {
	s = strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(s, "%") {
		s, div = strings.TrimSpace(strings.TrimSuffix(s, "%")), 100
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v/div >= 1 {
		return 0, fmt.Errorf("%q is not a share such as 0.1%% or 0.001", s)
	}
	if v == 0 {
		// Options read 0 as the default: ask for no too-late event at all.
		return 1e-15, nil
	}
	return v / div, nil
}
