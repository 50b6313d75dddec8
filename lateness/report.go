package lateness

import (
	"fmt"
	"sort"
	"strings"

	"github.com/weirstream/weir/mtime"
)

// Report is what Analyze measured. Durations are in milliseconds; shares are
// percentages of the total weight of the events (of their number when the
// input has no weights). Its JSON field names are stable.
type Report struct {
	Input          string `json:"input"`
	Format         string `json:"format"`
	TimeField      string `json:"time_field"`
	ArrivalField   string `json:"arrival_field"`
	PartitionField string `json:"partition_field,omitempty"`
	// WeightField is the field each event's weight came from; empty when
	// every event weighs 1.
	WeightField string `json:"weight_field,omitempty"`
	WindowMS    int64  `json:"window_ms"`

	// Lines = Events + Rejected; BlankLines and WatermarkLines (lines that
	// only move a job's scripted watermark, Options.WatermarkField) are not
	// counted in them.
	Lines          int64 `json:"lines"`
	BlankLines     int64 `json:"blank_lines"`
	WatermarkLines int64 `json:"watermark_lines,omitempty"`
	Events         int64 `json:"events"`
	Rejected       int64 `json:"rejected"`
	// RejectReasons counts the rejected lines by weir run's quarantine
	// reasons (plus bad_weight and not_csv).
	RejectReasons map[string]int64 `json:"reject_reasons"`
	// Weight is the total weight of the events (Events when unweighted).
	Weight float64 `json:"weight"`
	// FirstEventTime and LastEventTime span the event times; FirstArrival
	// and LastArrival the arrivals.
	FirstEventTime string `json:"first_event_time"`
	LastEventTime  string `json:"last_event_time"`
	FirstArrival   string `json:"first_arrival"`
	LastArrival    string `json:"last_arrival"`
	// ArrivalDisorder counts the events that come in the file after a line
	// that arrived later: the file is not quite in arrival order. The
	// replay, like weir run, follows the file.
	ArrivalDisorder int64 `json:"arrival_disorder"`

	// Travel is the distribution of travel times (arrival - event time).
	Travel Travel `json:"travel"`
	// Latest are the events that travelled longest, the latest first
	// (Options.Latest of them; none without it).
	Latest []LatestEvent `json:"latest,omitempty"`
	// By is the travel times grouped by each --by field.
	By []Grouping `json:"by,omitempty"`
	// OutOfOrder is the events that arrive after an event that happened
	// later.
	OutOfOrder Share `json:"out_of_order"`
	// Delays is Table 1: one row per watermark delay.
	Delays []Delay `json:"delays"`
	// Recommendation is the advice drawn from Table 1.
	Recommendation Recommendation `json:"recommendation"`
	// State estimates the state of the job and the memory it needs
	// (Options.EstimateState).
	State *State `json:"state,omitempty"`
	// Periods is Table 1 of each period compared (Options.Periods), in
	// their order.
	Periods []PeriodTable `json:"periods,omitempty"`
	// Idle is the partitions' quiet gaps and the idle timeouts replayed
	// (with a partition field).
	Idle *Idle `json:"idle,omitempty"`

	cdf []cdfPoint // the travel-time distribution, for the plot
}

// identityText is a partition's value as its identity holds it
// (linedec.AppendIdentity: a type byte, then the string or the number's
// text), written as the value.
func identityText(id string) string {
	switch {
	case id == "":
		return ""
	case id[0] == 's' || id[0] == 'n':
		return id[1:]
	case id == "t":
		return "true"
	case id == "f":
		return "false"
	}
	return id
}

// LatestEvent is one of the events that travelled longest: where it is in
// the input (its line: a CSV row's line, a Parquet row's number), its
// partition, when it happened and arrived, and how late.
type LatestEvent struct {
	Line      int64  `json:"line"`
	Partition string `json:"partition,omitempty"`
	EventTime string `json:"event_time"`
	Arrival   string `json:"arrival"`
	TravelMS  int64  `json:"travel_ms"`
}

// Travel is a travel-time distribution.
type Travel struct {
	MinMS   int64    `json:"min_ms"`
	P50MS   int64    `json:"p50_ms"`
	P90MS   int64    `json:"p90_ms"`
	P99MS   int64    `json:"p99_ms"`
	P999MS  int64    `json:"p99_9_ms"`
	MaxMS   int64    `json:"max_ms"`
	Buckets []Bucket `json:"buckets"`
}

// Bucket is one of the travel-time buckets (Buckets): from FromMS (inclusive;
// nil: no lower end) to ToMS (exclusive; nil: no upper end).
type Bucket struct {
	Label   string  `json:"label"`
	FromMS  *int64  `json:"from_ms"`
	ToMS    *int64  `json:"to_ms"`
	Events  int64   `json:"events"`
	Weight  float64 `json:"weight"`
	Percent float64 `json:"percent"`
}

// Share is a part of the events.
type Share struct {
	Events  int64   `json:"events"`
	Weight  float64 `json:"weight"`
	Percent float64 `json:"percent"`
}

// Grouping is the travel times of the events grouped by one field's value.
type Grouping struct {
	Field  string  `json:"field"`
	Groups []Group `json:"groups"`
}

// Group is the events with one value of a --by field ("(none)": without
// the field; "(other)": the values beyond the first MaxGroups).
type Group struct {
	Value   string  `json:"value"`
	Events  int64   `json:"events"`
	Weight  float64 `json:"weight"`
	Percent float64 `json:"percent"` // of all events
	// BucketPercent is the share of the group's events in each of the
	// travel-time buckets, in the order of Travel.Buckets.
	BucketPercent     []float64 `json:"bucket_percent"`
	P50MS             int64     `json:"p50_ms"`
	P99MS             int64     `json:"p99_ms"`
	MaxMS             int64     `json:"max_ms"`
	OutOfOrderPercent float64   `json:"out_of_order_percent"`
}

// Delay is a row of Table 1: the stream replayed through tumbling windows
// with one watermark delay and no allowed lateness.
type Delay struct {
	Label   string `json:"label"`
	DelayMS int64  `json:"delay_ms"`
	// TooLate is the number of too-late events: what weir run reports as
	// too_late with this delay, the window and watermark.interval 0s.
	TooLate        int64   `json:"too_late_events"`
	TooLateWeight  float64 `json:"too_late_weight"`
	TooLatePercent float64 `json:"too_late_percent"`
	// WindowsFired is the number of windows whose result the watermark
	// released; WindowsAtEnd fired only because the input ended, and are
	// left out of the waits.
	WindowsFired int64 `json:"windows_fired"`
	WindowsAtEnd int64 `json:"windows_at_end"`
	// The wait of a result: when its window fired (processing time) minus
	// the end of the window, over the windows fired; nil when none fired
	// before the input ended.
	WaitMinMS    *int64 `json:"wait_min_ms"`
	WaitMedianMS *int64 `json:"wait_median_ms"`
	WaitP99MS    *int64 `json:"wait_p99_ms"`
	// The state: windows open (per key) when an event arrives, on average
	// and at most.
	OpenMean float64 `json:"open_windows_mean"`
	OpenPeak int64   `json:"open_windows_peak"`
	// Lateness is the delay with each allowed lateness; only for delays up
	// to the longest wait.
	Lateness []Lateness `json:"allowed_lateness,omitempty"`

	marginN int64 // too-late events by the margins (-1: not measured)
}

// Lateness is a delay combined with an allowed lateness: a window keeps its
// state that much longer and fires again for each late event.
type Lateness struct {
	Label          string  `json:"label"`
	LatenessMS     int64   `json:"lateness_ms"`
	TooLate        int64   `json:"too_late_events"`
	TooLateWeight  float64 `json:"too_late_weight"`
	TooLatePercent float64 `json:"too_late_percent"`
	// CaughtPercent is the share of all events that were too late without
	// allowed lateness and are caught with it (added in a late pane).
	CaughtPercent float64 `json:"caught_percent"`
	OpenMean      float64 `json:"open_windows_mean"`
	OpenPeak      int64   `json:"open_windows_peak"`

	marginN int64
}

// Recommendation is the smallest delay that keeps too-late events under the
// target without results waiting longer than allowed, or the plain statement
// that no such delay exists.
type Recommendation struct {
	TargetPercent float64 `json:"target_percent"`
	MaxWaitMS     int64   `json:"max_wait_ms"`
	// Met says whether a delay of Table 1 meets the target within the
	// longest wait. If so, Delay is the smallest; if not, it is the delay
	// up to the longest wait with the fewest too-late events.
	Met   bool   `json:"met"`
	Delay *Delay `json:"delay"`
	// Finer is the smallest delay of any length that meets the target,
	// measured from each event's margin (how far the watermark had passed
	// its window when it arrived) rather than replayed; absent when the
	// input has partitions or idleness, where the margin is not enough.
	Finer *Finer `json:"finer,omitempty"`
	// Text is the advice in plain words.
	Text string `json:"text"`
}

// Finer is the result of the finer search.
type Finer struct {
	DelayMS int64 `json:"delay_ms"`
	// TooLatePercent is the share of events too late with DelayMS.
	TooLatePercent float64 `json:"too_late_percent"`
}

type cdfPoint struct{ ms, share float64 }

func ptr(v int64) *int64 { return &v }

func pct(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}

func (a *analyzer) report() (*Report, error) {
	c := a.c
	if a.all.n == 0 {
		return nil, a.noEvents()
	}
	r := &Report{
		Input: c.path, Format: c.format, TimeField: c.TimeField, ArrivalField: c.ArrivalField,
		PartitionField: c.PartitionField, WindowMS: int64(c.window.Size),
		Lines: a.lines, BlankLines: a.blank, WatermarkLines: a.watermarks, Events: a.all.n, Weight: a.all.w,
		FirstEventTime: a.minTS.String(), LastEventTime: a.maxTS.String(),
		FirstArrival: a.firstArr.String(), LastArrival: a.maxArr.String(),
		ArrivalDisorder: a.arrDisorder,
	}
	if c.weightP != nil || a.weighted {
		r.WeightField = c.weightName()
	}
	r.Rejected, r.RejectReasons = rejections(&a.rejected, &reasonNames)
	r.Travel = travelOf(&a.all)
	for _, e := range a.latest.sorted() {
		l := LatestEvent{Line: e.line, EventTime: e.ts.String(), Arrival: e.arr.String(), TravelMS: int64(e.arr - e.ts)}
		if c.partP != nil && int(e.part) < len(a.partNames) {
			l.Partition = identityText(a.partNames[e.part])
		}
		r.Latest = append(r.Latest, l)
	}
	for i := range r.Travel.Buckets {
		b := &r.Travel.Buckets[i]
		if i > 0 {
			b.FromMS = ptr(bucketEdges[i-1])
		}
		if i < len(bucketEdges) {
			b.ToMS = ptr(bucketEdges[i])
		}
	}
	r.OutOfOrder = Share{Events: a.all.disorder, Weight: a.all.disW, Percent: pct(a.all.disW, a.all.w)}
	for _, g := range a.groups {
		gr := a.groupingOf(g)
		sort.SliceStable(gr.Groups, func(i, j int) bool {
			x, y := gr.Groups[i], gr.Groups[j]
			if (x.Value == "(other)") != (y.Value == "(other)") {
				return y.Value == "(other)"
			}
			if x.Weight != y.Weight {
				return x.Weight > y.Weight
			}
			return x.Value < y.Value
		})
		r.By = append(r.By, gr)
	}
	if a.periodGroups != nil {
		r.By = append(r.By, a.groupingOf(a.periodGroups)) // in the order given
	}
	for _, d := range c.delays {
		e := a.engines[[2]mtime.Time{d, 0}]
		row := Delay{
			Label: delayLabel(d), DelayMS: int64(d),
			TooLate: e.stats.TooLate, TooLateWeight: e.lateW, TooLatePercent: pct(e.lateW, a.all.w),
			WindowsFired: e.waits.n, WindowsAtEnd: e.atEnd,
			OpenMean: e.openMean(), OpenPeak: e.openPeak, marginN: -1,
		}
		if e.waits.n > 0 {
			row.WaitMinMS, row.WaitMedianMS, row.WaitP99MS = ptr(e.waits.quantile(0)), ptr(e.waits.quantile(0.5)), ptr(e.waits.quantile(0.99))
		}
		if a.margins {
			row.marginN, _ = a.marginTooLate(d)
		}
		for _, l := range c.lateness {
			el, ok := a.engines[[2]mtime.Time{d, l}]
			if !ok {
				continue
			}
			lr := Lateness{
				Label: durLabel(l), LatenessMS: int64(l),
				TooLate: el.stats.TooLate, TooLateWeight: el.lateW, TooLatePercent: pct(el.lateW, a.all.w),
				CaughtPercent: pct(e.lateW-el.lateW, a.all.w),
				OpenMean:      el.openMean(), OpenPeak: el.openPeak, marginN: -1,
			}
			if a.margins {
				lr.marginN, _ = a.marginTooLate(d + l)
			}
			row.Lateness = append(row.Lateness, lr)
		}
		r.Delays = append(r.Delays, row)
	}
	r.cdf = cdfOf(&a.all.travel)
	r.Recommendation = a.recommend(r)
	r.State = a.stateEstimate(r)
	if a.periodGroups != nil {
		r.Periods = a.periodTables(r)
	}
	return r, nil
}

// groupingOf is the report of a grouping's tallies.
func (a *analyzer) groupingOf(g *grouping) Grouping {
	gr := Grouping{Field: g.field}
	for i, v := range g.values {
		t := g.tally[i]
		grp := Group{Value: v, Events: t.n, Weight: t.w, Percent: pct(t.w, a.all.w),
			P50MS: t.travel.quantile(0.5), P99MS: t.travel.quantile(0.99), MaxMS: t.travel.max,
			OutOfOrderPercent: pct(t.disW, t.w)}
		for _, w := range t.bucketW {
			grp.BucketPercent = append(grp.BucketPercent, pct(w, t.w))
		}
		gr.Groups = append(gr.Groups, grp)
	}
	return gr
}

func (e *replay) openMean() float64 {
	if e.events == 0 {
		return 0
	}
	return e.openSum / float64(e.events)
}

func travelOf(t *tally) Travel {
	tr := Travel{
		MinMS: t.travel.quantile(0), P50MS: t.travel.quantile(0.5), P90MS: t.travel.quantile(0.9),
		P99MS: t.travel.quantile(0.99), P999MS: t.travel.quantile(0.999), MaxMS: t.travel.quantile(1),
	}
	for i, l := range bucketLabels {
		tr.Buckets = append(tr.Buckets, Bucket{Label: l, Events: t.bucketN[i], Weight: t.bucketW[i], Percent: pct(t.bucketW[i], t.w)})
	}
	return tr
}

// cdfOf is the share of events arrived within each travel time, at the
// upper end of every bucket that holds events (from 1 ms: a log axis).
func cdfOf(h *hist) []cdfPoint {
	var cum float64
	for _, w := range h.neg {
		cum += w
	}
	var pts []cdfPoint
	for i, w := range h.pos {
		cum += w
		if w > 0 {
			pts = append(pts, cdfPoint{float64(max(histUpper(i), 1)), cum / h.w})
		}
	}
	return pts
}

// noEvents explains an input without a single event: usually a field name.
func (a *analyzer) noEvents() error { return noLines(a.c, a.lines, &a.rejected) }

// noLines explains an input (events, or a ledger) none of whose lines could
// be used.
func noLines(c *config, lines int64, rejected *[nReasons]int64) error {
	what, names := "an event", &reasonNames
	if c.ledger {
		what, names = "an entry", &ledgerReasonNames
	}
	if lines == 0 {
		if c.ledger {
			return usagef("%s has no entries", c.path)
		}
		return usagef("%s has no events", c.path)
	}
	var top reason
	for i, n := range rejected {
		if n > rejected[top] {
			top = reason(i)
		}
	}
	hint := ""
	switch top {
	case rNoEventTime:
		if c.ledger {
			hint = fmt.Sprintf(": no entry time in field %q (choose it with --ledger-time)", c.TimeField)
		} else {
			hint = fmt.Sprintf(": no event time in field %q (choose it with --time)", c.TimeField)
		}
	case rNoArrival:
		hint = fmt.Sprintf(": no arrival time in field %q (choose it with --arrival)", c.ArrivalField)
	case rNoSent:
		hint = fmt.Sprintf(": no send time in field %q (choose it with --sent, or time.sent_field)", c.SentField)
	case rBadEventTime, rBadArrival, rBadSent:
		hint = ": times must be RFC 3339 or epoch milliseconds"
	case rImplausible:
		hint = ": event times before 2000-01-01 (seconds instead of milliseconds?)"
		if c.ledger {
			hint = ": entry times before 2000-01-01 (seconds instead of milliseconds?)"
		}
	case rBadWeight:
		hint = fmt.Sprintf(": the weight %q is missing or not a non-negative number", c.weightName())
	case rNotJSON:
		hint = ": not JSON objects (is it another format? see --input-format)"
	}
	return usagef("none of the %d lines of %s is %s (%d %s)%s", lines, c.path, what, rejected[top], names[top], hint)
}

// recommend draws the advice from Table 1.
func (a *analyzer) recommend(r *Report) Recommendation {
	c := a.c
	rec := Recommendation{TargetPercent: 100 * c.Target, MaxWaitMS: int64(c.maxWait)}
	target := c.Target * a.all.w
	var best *Delay
	for i := range r.Delays {
		d := &r.Delays[i]
		if mtime.Time(d.DelayMS) > c.maxWait {
			continue
		}
		if d.TooLateWeight <= target {
			rec.Met, rec.Delay = true, d
			break
		}
		if best == nil || d.TooLateWeight < best.TooLateWeight {
			best = d
		}
	}
	if !rec.Met {
		rec.Delay = best
	}
	if a.margins {
		rec.Finer = a.finer(target)
	}
	rec.Text = recommendText(r, &rec, c)
	return rec
}

// finer is the smallest delay whose too-late weight is at most target, to
// the resolution of the margin histogram (rounded up, so the share given is
// exact).
func (a *analyzer) finer(target float64) *Finer {
	h := &a.marginHist
	if h.w <= target {
		return &Finer{DelayMS: 0, TooLatePercent: pct(h.w, a.all.w)}
	}
	var cum float64
	for i := len(h.pos) - 1; i >= 0; i-- {
		if cum+h.pos[i] > target {
			return &Finer{DelayMS: int64(histUpper(i)) + 1, TooLatePercent: pct(cum, a.all.w)}
		}
		cum += h.pos[i]
	}
	return &Finer{}
}

func recommendText(r *Report, rec *Recommendation, c *config) string {
	var b strings.Builder
	target := fmtPct(rec.TargetPercent)
	maxWait := durLabel(c.maxWait)
	if rec.Met {
		d := rec.Delay
		fmt.Fprintf(&b, "Use a watermark delay of %s: %s of the events arrive too late (target: under %s), ", d.Label, fmtPct(d.TooLatePercent), target)
		if d.WaitMinMS != nil {
			fmt.Fprintf(&b, "and each result waits at least %s (median %s). ", fmtMS(*d.WaitMinMS), fmtMS(*d.WaitMedianMS))
		} else {
			fmt.Fprintf(&b, "and each result waits at least %s (the input is too short to see a window fire). ", d.Label)
		}
		fmt.Fprintf(&b, "State: %.1f open windows per key on average, %d at most.", d.OpenMean, d.OpenPeak)
		if f := rec.Finer; f != nil && f.DelayMS < d.DelayMS {
			fmt.Fprintf(&b, " A delay between the listed ones would do too: about %s (%s too late; add it to --delays to measure its waits).",
				durLabel(niceUp(mtime.Time(f.DelayMS))), fmtPct(f.TooLatePercent))
		}
	} else {
		if d := rec.Delay; d != nil {
			fmt.Fprintf(&b, "No watermark delay up to %s keeps too-late events under %s: the best, %s, still leaves %s too late. ",
				maxWait, target, d.Label, fmtPct(d.TooLatePercent))
		} else {
			fmt.Fprintf(&b, "No watermark delay in the list is at most %s. ", maxWait)
		}
		if f := rec.Finer; f != nil {
			fmt.Fprintf(&b, "It would take a delay of about %s, and every result would wait that long. ", durLabel(niceUp(mtime.Time(f.DelayMS))))
		}
		b.WriteString("Waiting is not the answer here: late events need a side output (late_output in a job file) and a batch correction instead. " +
			"Keep a short delay for fresh results, send what arrives after its window has fired to the side output, and let a batch job fix the totals.")
	}
	return b.String()
}

// niceUp rounds a delay up to a readable value.
func niceUp(t mtime.Time) mtime.Time {
	var step mtime.Time
	switch {
	case t <= 0:
		return 0
	case t < 1000:
		step = 10
	case t < 60000:
		step = 1000
	case t < 3600000:
		step = 60000
	default:
		step = 300000
	}
	return (t + step - 1) / step * step
}
