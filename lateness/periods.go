package lateness

import (
	"time"

	"github.com/weirstream/weir/mtime"
)

// Period is a span of event time to compare with others (Options.Periods):
// from Start (inclusive) for Length.
type Period struct {
	// Label names it in the report; empty: its start and length
	// ("2026-08-31/7d").
	Label  string
	Start  time.Time
	Length time.Duration
}

func (p Period) label() string {
	if p.Label != "" {
		return p.Label
	}
	s := p.Start.UTC()
	start := s.Format(time.RFC3339)
	if s.Equal(s.Truncate(24 * time.Hour)) {
		start = s.Format(time.DateOnly)
	}
	return start + "/" + jobDur(mtime.Millis(p.Length))
}

// timeSpan is a period in event time: [start, end).
type timeSpan struct{ start, end mtime.Time }

func (s timeSpan) has(t mtime.Time) bool { return s.start <= t && t < s.end }

// PeriodTable is Table 1 of one period: the events that happened in it,
// replayed with the whole stream (the watermark is the stream's, as in weir
// run), too late by their event time and results waiting by the start of
// their window.
type PeriodTable struct {
	Label string `json:"label"`
	// Start and End span the period's event times: [Start, End).
	Start  string        `json:"start"`
	End    string        `json:"end"`
	Events int64         `json:"events"`
	Weight float64       `json:"weight"`
	Travel Travel        `json:"travel"`
	Delays []PeriodDelay `json:"delays"`

	cdf []cdfPoint
}

// PeriodDelay is a row of a period's Table 1. TooLatePercent is a share of
// the period's events; the waits are of the windows that start in it.
type PeriodDelay struct {
	Label          string  `json:"label"`
	DelayMS        int64   `json:"delay_ms"`
	TooLate        int64   `json:"too_late_events"`
	TooLateWeight  float64 `json:"too_late_weight"`
	TooLatePercent float64 `json:"too_late_percent"`
	WindowsFired   int64   `json:"windows_fired"`
	WaitMedianMS   *int64  `json:"wait_median_ms"`
	WaitP99MS      *int64  `json:"wait_p99_ms"`
}

// periodTally is what a replay measures of each period.
type periodTally struct {
	lateN []int64
	lateW []float64
	waits []hist
}

func newPeriodTally(n int) periodTally {
	return periodTally{lateN: make([]int64, n), lateW: make([]float64, n), waits: make([]hist, n)}
}

// resolvePeriods checks the periods and turns them into spans.
func (c *config) resolvePeriods() error {
	if len(c.Periods) == 1 {
		return usagef("compare at least two periods, not one")
	}
	seen := map[string]bool{}
	for _, p := range c.Periods {
		if p.Length <= 0 {
			return usagef("the period %s must have a positive length", p.label())
		}
		l := p.label()
		if seen[l] {
			return usagef("the period %s is named twice", l)
		}
		seen[l] = true
		start := mtime.Time(p.Start.UnixMilli())
		c.periods = append(c.periods, timeSpan{start, start + mtime.Millis(p.Length)})
	}
	return nil
}

// periodTables are the periods' Table 1.
func (a *analyzer) periodTables(r *Report) []PeriodTable {
	var out []PeriodTable
	for i, s := range a.c.periods {
		t := a.periodGroups.tally[i]
		pt := PeriodTable{Label: a.periodGroups.values[i], Start: s.start.String(), End: s.end.String(),
			Events: t.n, Weight: t.w, Travel: travelOf(t), cdf: cdfOf(&t.travel)}
		for _, d := range r.Delays {
			e := a.engines[[2]mtime.Time{mtime.Time(d.DelayMS), 0}]
			row := PeriodDelay{Label: d.Label, DelayMS: d.DelayMS, TooLate: e.periods.lateN[i], TooLateWeight: e.periods.lateW[i],
				TooLatePercent: pct(e.periods.lateW[i], t.w), WindowsFired: e.periods.waits[i].n}
			if h := &e.periods.waits[i]; h.n > 0 {
				row.WaitMedianMS, row.WaitP99MS = ptr(h.quantile(0.5)), ptr(h.quantile(0.99))
			}
			pt.Delays = append(pt.Delays, row)
		}
		out = append(out, pt)
	}
	return out
}
