package lateness

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weirstream/weir/mtime"
)

// delayLabel names a watermark delay as Table 1 does: "none" for 0.
func delayLabel(d mtime.Time) string {
	if d == 0 {
		return "none"
	}
	return durLabel(d)
}

// durLabel writes a duration in its largest units: "2 s", "5 min", "1 h 30
// min", "250 ms", "1.5 s".
func durLabel(d mtime.Time) string {
	if d < 0 {
		return "-" + durLabel(-d)
	}
	switch {
	case d == 0:
		return "0"
	case d < 1000:
		return fmt.Sprintf("%d ms", d)
	case d < 60000:
		if d%1000 == 0 {
			return fmt.Sprintf("%d s", d/1000)
		}
		return strconv.FormatFloat(float64(d)/1000, 'f', -1, 64) + " s"
	case d < 3600000:
		return joinUnits(int64(d)/60000, "min", int64(d)%60000/1000, "s")
	default:
		return joinUnits(int64(d)/3600000, "h", int64(d)%3600000/60000, "min")
	}
}

func joinUnits(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d %s", a, ua)
	}
	return fmt.Sprintf("%d %s %d %s", a, ua, b, ub)
}

// fmtMS writes a measured duration: "340 ms", "2.1 s", "5 min 02 s",
// "6 h 00 min".
func fmtMS(ms int64) string {
	if ms < 0 {
		return "-" + fmtMS(-ms)
	}
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60000:
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	case ms < 3600000:
		return fmt.Sprintf("%d min %02d s", ms/60000, ms%60000/1000)
	default:
		return fmt.Sprintf("%d h %02d min", ms/3600000, ms%3600000/60000)
	}
}

func fmtPct(p float64) string { return strconv.FormatFloat(p, 'f', 2, 64) + "%" }

// fmtInt writes n with thousands separators.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// count writes a number of events, or their weight when weighted.
func (r *Report) count(n int64, w float64) string {
	if r.WeightField == "" {
		return fmtInt(n)
	}
	return fmtInt(int64(math.Round(w)))
}

// table writes rows as aligned columns: the first column left, the others
// right.
func table(w io.Writer, indent string, rows [][]string) {
	var width []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// units are the words that stay on the line of the number before them.
var units = map[string]bool{"ms": true, "s": true, "min": true, "h": true, "d": true}

// wrap writes text in lines of at most 78 characters, never parting a
// number from its unit.
func wrap(w io.Writer, indent, text string) {
	var words []string
	for _, word := range strings.Fields(text) {
		if n := len(words); n > 0 && words[n-1] != "" && words[n-1][len(words[n-1])-1] >= '0' && words[n-1][len(words[n-1])-1] <= '9' &&
			units[strings.TrimRight(word, ",.;:)")] {
			words[n-1] += " " + word
			continue
		}
		words = append(words, word)
	}
	line := indent
	for _, word := range words {
		if len(line) > len(indent) && len(line)+1+len(word) > 78 {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		fmt.Fprintln(w, line)
	}
}

// maxTextGroups is the number of values of a --by field the text report
// shows, the largest first.
const maxTextGroups = 30

var formatNames = map[string]string{FormatJSON: "JSON lines", FormatCSV: "CSV", FormatParquet: "Parquet", FormatAvro: "Avro"}

// WriteText writes the report for a person: the travel times, the
// out-of-order share, Table 1 and the recommendation.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	w = ew
	fmt.Fprintf(w, "weir lateness: %s (%s), event time %q, arrival %q", r.Input, formatNames[r.Format], r.TimeField, r.ArrivalField)
	if r.PartitionField != "" {
		fmt.Fprintf(w, ", partition %q", r.PartitionField)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s lines: %s events, %s rejected", fmtInt(r.Lines), fmtInt(r.Events), fmtInt(r.Rejected))
	if len(r.RejectReasons) > 0 {
		var rs []string
		for k, n := range r.RejectReasons {
			rs = append(rs, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(rs)
		fmt.Fprintf(w, " (%s)", strings.Join(rs, ", "))
	}
	if r.WatermarkLines > 0 {
		fmt.Fprintf(w, ", and %s watermark lines", fmtInt(r.WatermarkLines))
	}
	fmt.Fprintln(w)
	if r.WeightField != "" {
		fmt.Fprintf(w, "Weighted by %q: the events stand for %s real events; every share is a share of weight.\n", r.WeightField, fmtInt(int64(math.Round(r.Weight))))
	}
	fmt.Fprintf(w, "Event times %s to %s; arrivals %s to %s.\n", r.FirstEventTime, r.LastEventTime, r.FirstArrival, r.LastArrival)
	if r.ArrivalDisorder > 0 {
		fmt.Fprintf(w, "Note: %s events come after a line that arrived later: the file is not quite in arrival order (the replay follows the file, as weir run does).\n", fmtInt(r.ArrivalDisorder))
	}

	fmt.Fprintf(w, "\n1. Travel time: arrival minus event time\n\n")
	t := r.Travel
	table(w, "   ", [][]string{
		{"min", "median", "90%", "99%", "99.9%", "max"},
		{fmtMS(t.MinMS), fmtMS(t.P50MS), fmtMS(t.P90MS), fmtMS(t.P99MS), fmtMS(t.P999MS), fmtMS(t.MaxMS)},
	})
	fmt.Fprintln(w)
	rows := [][]string{{"travel time", "events", "share"}}
	for _, b := range t.Buckets {
		rows = append(rows, []string{b.Label, r.count(b.Events, b.Weight), fmtPct(b.Percent)})
	}
	table(w, "   ", rows)
	if len(r.Latest) > 0 {
		fmt.Fprintf(w, "\n   The %d latest events:\n\n", len(r.Latest))
		head := []string{"line", "happened", "arrived", "late by"}
		if r.PartitionField != "" {
			head = []string{"line", "partition", "happened", "arrived", "late by"}
		}
		rows := [][]string{head}
		for _, e := range r.Latest {
			row := []string{strconv.FormatInt(e.Line, 10)}
			if r.PartitionField != "" {
				row = append(row, e.Partition)
			}
			rows = append(rows, append(row, e.EventTime, e.Arrival, fmtMS(e.TravelMS)))
		}
		table(w, "   ", rows)
	}
	for _, g := range r.By {
		fmt.Fprintln(w)
		head := []string{"by " + g.Field, "events", "share"}
		for _, b := range t.Buckets {
			head = append(head, b.Label)
		}
		head = append(head, "median", "99%", "out of order")
		rows := [][]string{head}
		shown := g.Groups
		if len(shown) > maxTextGroups {
			shown = shown[:maxTextGroups]
		}
		for _, v := range shown {
			row := []string{v.Value, r.count(v.Events, v.Weight), fmtPct(v.Percent)}
			for _, p := range v.BucketPercent {
				row = append(row, fmtPct(p))
			}
			row = append(row, fmtMS(v.P50MS), fmtMS(v.P99MS), fmtPct(v.OutOfOrderPercent))
			rows = append(rows, row)
		}
		table(w, "   ", rows)
		if n := len(g.Groups) - len(shown); n > 0 {
			fmt.Fprintf(w, "   ... and %d more values of %s (all of them in --format json).\n", n, g.Field)
		}
	}

	fmt.Fprintf(w, "\n2. Out of order\n\n")
	wrap(w, "   ", fmt.Sprintf("%s of the events (%s) arrived after an event that happened later.",
		fmtPct(r.OutOfOrder.Percent), r.count(r.OutOfOrder.Events, r.OutOfOrder.Weight)))

	fmt.Fprintf(w, "\n3. Table 1: events that arrive too late, and how long results wait\n\n")
	wrap(w, "   ", fmt.Sprintf("The stream replayed in arrival order through %s tumbling windows, with a watermark after every event (max event time - delay - 1 ms), by weir's engine with the rules of weir run. Too late: the event's window had already fired when it arrived. A result waits from the end of its window until the watermark fires it.",
		durLabel(mtime.Time(r.WindowMS))))
	fmt.Fprintln(w)
	rows = [][]string{
		{"watermark", "too late", "", "each result waits", "", "", "open windows", ""},
		{"delay", "share", "events", "at least", "median", "99%", "mean", "peak"},
	}
	for _, d := range r.Delays {
		row := []string{d.Label, fmtPct(d.TooLatePercent), r.count(d.TooLate, d.TooLateWeight)}
		switch {
		case d.WaitMinMS == nil:
			row = append(row, "-", "-", "-")
		case d.DelayMS == 0 && *d.WaitMedianMS < 1000:
			row = append(row, "no extra wait", fmtMS(*d.WaitMedianMS), fmtMS(*d.WaitP99MS))
		default:
			row = append(row, fmtMS(*d.WaitMinMS), fmtMS(*d.WaitMedianMS), fmtMS(*d.WaitP99MS))
		}
		row = append(row, strconv.FormatFloat(d.OpenMean, 'f', 1, 64), fmtInt(d.OpenPeak))
		rows = append(rows, row)
	}
	table(w, "   ", rows)
	if len(r.Periods) > 0 {
		fmt.Fprintln(w)
		r.writePeriods(w)
	}

	rec := r.Recommendation
	fmt.Fprintf(w, "\n4. Recommendation (target: under %s too late; results wait at most %s)\n\n",
		fmtPct(rec.TargetPercent), durLabel(mtime.Time(rec.MaxWaitMS)))
	wrap(w, "   ", rec.Text)
	if d := rec.Delay; d != nil && len(d.Lateness) > 0 {
		fmt.Fprintln(w)
		wrap(w, "   ", fmt.Sprintf("Allowed lateness with a delay of %s keeps each window's state longer and fires it again for every late event; the first result comes as soon as before, later ones correct it:", d.Label))
		fmt.Fprintln(w)
		rows := [][]string{
			{"allowed", "still", "caught", "open windows", ""},
			{"lateness", "too late", "", "mean", "peak"},
			{"none", fmtPct(d.TooLatePercent), "-", strconv.FormatFloat(d.OpenMean, 'f', 1, 64), fmtInt(d.OpenPeak)},
		}
		for _, l := range d.Lateness {
			rows = append(rows, []string{l.Label, fmtPct(l.TooLatePercent), fmtPct(l.CaughtPercent),
				strconv.FormatFloat(l.OpenMean, 'f', 1, 64), fmtInt(l.OpenPeak)})
		}
		table(w, "   ", rows)
	}
	n := 5
	if st := r.State; st != nil {
		fmt.Fprintf(w, "\n%d. State: the memory the job needs\n\n", n)
		n++
		wrap(w, "   ", st.Text)
	}
	if id := r.Idle; id != nil {
		r.writeIdle(w, n, id)
	}
	return ew.err
}

// writePeriods writes Table 1 of each period side by side.
func (r *Report) writePeriods(w io.Writer) {
	wrap(w, "   ", "By period of event time: the events that happened in each period, replayed with the whole stream. Too late: a share of the period's events; the waits are of the windows that start in it.")
	fmt.Fprintln(w)
	head := []string{"watermark"}
	sub := []string{"delay"}
	for _, p := range r.Periods {
		head = append(head, p.Label, "", "")
		sub = append(sub, "too late", "events", "median wait")
	}
	events := []string{"(events)"}
	for _, p := range r.Periods {
		events = append(events, "", r.count(p.Events, p.Weight), "")
	}
	rows := [][]string{head, sub}
	for i, d := range r.Delays {
		row := []string{d.Label}
		for _, p := range r.Periods {
			pd := p.Delays[i]
			wait := "-"
			if pd.WaitMedianMS != nil {
				wait = fmtMS(*pd.WaitMedianMS)
			}
			row = append(row, fmtPct(pd.TooLatePercent), r.count(pd.TooLate, pd.TooLateWeight), wait)
		}
		rows = append(rows, row)
	}
	table(w, "   ", append(rows, events))
}

// maxTextPartitions is the number of partitions the text report lists.
const maxTextPartitions = 30

func (r *Report) writeIdle(w io.Writer, n int, id *Idle) {
	fmt.Fprintf(w, "\n%d. Idle timeout: quiet partitions\n\n", n)
	wrap(w, "   ", "The gaps between an event's arrival and the one before it of the same partition. A partition quiet for the idle timeout is declared idle: the watermark stops waiting for it, and its next events may find their windows fired.")
	fmt.Fprintln(w)
	head := []string{"partition", "events", "median gap", "99%", "longest"}
	for _, c := range id.CandidatesMS {
		head = append(head, ">= "+durLabel(mtime.Time(c)))
	}
	rows := [][]string{head}
	shown := id.Partitions
	if len(shown) > maxTextPartitions {
		shown = shown[:maxTextPartitions]
	}
	for _, p := range shown {
		row := []string{p.Partition, fmtInt(p.Events), "-", "-", "-"}
		if p.Gaps > 0 {
			row[2], row[3], row[4] = fmtMS(p.P50MS), fmtMS(p.P99MS), fmtMS(p.MaxMS)
		}
		for _, k := range p.AtLeast {
			row = append(row, fmtInt(k))
		}
		rows = append(rows, row)
	}
	table(w, "   ", rows)
	if k := len(id.Partitions) - len(shown); k > 0 {
		fmt.Fprintf(w, "   ... and %d more partitions (all of them in --format json).\n", k)
	}
	if len(id.Timeouts) > 0 {
		fmt.Fprintln(w)
		wrap(w, "   ", fmt.Sprintf("Each idle timeout replayed with a watermark delay of %s:", delayLabel(mtime.Time(id.DelayMS))))
		fmt.Fprintln(w)
		rows := [][]string{
			{"idle", "too late", "", "", "each result waits", ""},
			{"timeout", "share", "events", "added", "mean", "longest"},
		}
		for _, t := range id.Timeouts {
			row := []string{t.Label, fmtPct(t.TooLatePercent), r.count(t.TooLate, t.TooLateWeight), fmtPct(t.AddedPercent)}
			if t.WaitMaxMS == nil {
				row = append(row, "-", "-")
			} else {
				row = append(row, fmtMS(*t.WaitMeanMS), fmtMS(*t.WaitMaxMS))
			}
			rows = append(rows, row)
		}
		table(w, "   ", rows)
	}
	fmt.Fprintln(w)
	wrap(w, "   ", id.Text)
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVHeader is the header row of WriteCSV.
var CSVHeader = []string{
	"delay", "delay_ms", "too_late_events", "too_late_weight", "too_late_percent",
	"windows_fired", "wait_min_ms", "wait_median_ms", "wait_p99_ms",
	"open_windows_mean", "open_windows_peak",
}

// WriteCSV writes Table 1: a header row (CSVHeader), then one row per
// delay.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	p := func(v *int64) string {
		if v == nil {
			return ""
		}
		return i(*v)
	}
	for _, d := range r.Delays {
		cw.Write([]string{
			d.Label, i(d.DelayMS), i(d.TooLate), f(d.TooLateWeight), strconv.FormatFloat(d.TooLatePercent, 'f', 4, 64),
			i(d.WindowsFired), p(d.WaitMinMS), p(d.WaitMedianMS), p(d.WaitP99MS),
			strconv.FormatFloat(d.OpenMean, 'f', 2, 64), i(d.OpenPeak),
		})
	}
	cw.Flush()
	return cw.Error()
}
