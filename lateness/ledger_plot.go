package lateness

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/weirstream/weir/internal/chart"
	"github.com/weirstream/weir/mtime"
)

// maxPlotGroups is the number of groups the figure of a ledger join draws,
// the largest first.
const maxPlotGroups = 8

// curveColors are the colors of the groups' curves, in order.
var curveColors = []color.RGBA{
	teal, tomato, {0xf2, 0xb1, 0x34, 0xff}, ink,
	{0x6a, 0x4c, 0x93, 0xff}, {0x19, 0x82, 0xc4, 0xff}, {0x8a, 0x6d, 0x3b, 0xff}, {0x55, 0x55, 0x55, 0xff},
}

// curvePoints is the number of points of each curve, evenly spread on the
// log axis.
const curvePoints = 400

// WritePlot draws the late-or-lost figure for the join: for each group (the
// largest eight, or every entry without --by) the share of ledger entries
// whose event has arrived against the time since the entry, on a log time
// axis, up to the longest wait or the latest arrival. Where a curve goes
// flat below the dashed 100% line, the rest of its entries never got an
// event; the legend gives that share. Dotted lines mark the waits of the
// report. format is "svg" or "png"; the drawing depends only on the report.
func (r *LedgerReport) WritePlot(w io.Writer, format string) error {
	if format != "svg" && format != "png" {
		return fmt.Errorf("unknown plot format %q: want svg or png", format)
	}
	W, H := 8*inch, 4.6*inch
	f := chart.Figure{W: W, H: H, Charts: []*chart.Chart{r.arrivedPlot()},
		Boxes: []chart.Box{{X: 2 * mm, Y: 3 * mm, W: W - 7*mm, H: H - 5*mm}}}
	return f.WriteTo(w, format)
}

// WritePlotFile writes WritePlot to a .svg or .png file.
func (r *LedgerReport) WritePlotFile(path string) error { return writePlotFile(path, r.WritePlot) }

type curve struct {
	g     *LedgerGroup
	waits []int64 // sorted
	final float64 // percent arrived at all
}

// arrivedBy is the percent of the curve's entries whose event arrived at
// most ms after the entry.
func (c *curve) arrivedBy(ms float64) float64 {
	n := sort.Search(len(c.waits), func(i int) bool { return float64(c.waits[i]) > ms })
	return pct(float64(n), float64(c.g.Entries))
}

func (r *LedgerReport) arrivedPlot() *chart.Chart {
	var cs []curve
	if len(r.Groups) == 0 {
		cs = append(cs, curve{g: &r.All, waits: r.waits[0]})
	}
	for i := range r.Groups {
		if g := &r.Groups[i]; g.Entries > 0 && len(cs) < maxPlotGroups {
			cs = append(cs, curve{g: g, waits: r.waits[1+i]})
		}
	}
	lo, maxWait := 100.0, int64(0)
	for i := range cs {
		c := &cs[i]
		c.final = pct(float64(c.g.Arrived), float64(c.g.Entries))
		lo = math.Min(lo, c.final)
		if n := len(c.waits); n > 0 {
			maxWait = max(maxWait, c.waits[n-1])
		}
	}
	// The y axis: from well below the lowest plateau (three times its gap
	// to 100%, at least 3 points) to a little above 100%.
	yMin := math.Max(0, lo-3*math.Max(100-lo, 1))
	step := yStep(100 - yMin)
	yMin = math.Floor(yMin/step) * step
	yMax := 100 + (100-yMin)*0.06
	// The x axis (seconds, log): from the decade where the first curve
	// enters the figure to past the longest wait and the latest arrival.
	first := math.Inf(1)
	for i := range cs {
		c := &cs[i]
		k := max(int(math.Ceil(yMin/100*float64(c.g.Entries)))-1, 0)
		if k < len(c.waits) {
			first = math.Min(first, float64(c.waits[k]))
		}
	}
	if math.IsInf(first, 1) {
		first = 1000
	}
	xLo := decadeDown(math.Max(first, 1) / 1000)
	xHi := math.Max(float64(r.WaitsMS[len(r.WaitsMS)-1]), float64(maxWait)) / 1000 * 1.3
	xLo = math.Min(xLo, decadeDown(float64(r.WaitsMS[0])/1000))

	p := newPlot(r.plotTitle(), "time since the ledger entry (log scale)", "ledger entries whose event has arrived")
	xMin, xMax := math.Log10(xLo), math.Log10(xHi)
	p.XTicks = durTicks(xLo, xHi)
	for v := yMin; v <= 100+step/2; v += step {
		p.YTicks = append(p.YTicks, chart.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64) + "%"})
	}
	// The waits of the report, and 100%.
	for _, ms := range r.WaitsMS {
		x := math.Log10(float64(ms) / 1000)
		if x < xMin || x > xMax {
			continue
		}
		p.Lines = append(p.Lines, chart.Line{Pts: []chart.XY{{X: x, Y: yMin}, {X: x, Y: yMax}}, Color: grey, Width: 1, Dashes: []float64{1, 2}})
		p.Labels = append(p.Labels, chart.Label{At: chart.XY{X: x, Y: yMin}, Text: " " + durLabel(mtime.Time(ms)), Size: 8, Color: ink, Raise: 2})
	}
	p.Lines = append(p.Lines, chart.Line{Pts: []chart.XY{{X: xMin, Y: 100}, {X: xMax, Y: 100}}, Color: ink, Width: 1, Dashes: []float64{4, 3}})
	// The curves.
	for i := range cs {
		c := &cs[i]
		pts := make([]chart.XY, curvePoints)
		for k := range pts {
			x := xMin + (xMax-xMin)*float64(k)/float64(curvePoints-1)
			pts[k] = chart.XY{X: x, Y: c.arrivedBy(math.Pow(10, x) * 1000)}
		}
		l := chart.Line{Pts: pts, Color: curveColors[i%len(curveColors)], Width: 2.2}
		p.Lines = append(p.Lines, l)
		label := fmt.Sprintf("%s: %s never arrived", c.g.Value, fmtPct(c.g.NeverArrivedPercent))
		if c.g.Value == "(all)" {
			label = fmt.Sprintf("%s of the entries never arrived", fmtPct(c.g.NeverArrivedPercent))
		}
		if c.g.NeverArrived == 0 {
			label = c.g.Value + ": every entry arrived"
		}
		p.Legend = append(p.Legend, chart.LegendEntry{Text: label, Line: l})
	}
	// Bottom right, a little up and in; the curves below yMin are cut.
	p.LegendShift = chart.XY{X: -8, Y: 22}
	p.XMin, p.XMax = xMin, xMax
	p.YMin, p.YMax = yMin, yMax
	p.ThumbWidth = 18
	return p
}

// yStep is the step of the ticks of a percent axis spanning span points.
func yStep(span float64) float64 {
	for _, s := range []float64{0.5, 1, 2, 5, 10} {
		if span/s <= 8 {
			return s
		}
	}
	return 20
}

// plotTitle says what the figure shows: late, or lost, when it can tell.
func (r *LedgerReport) plotTitle() string {
	groups := r.Groups
	if len(groups) == 0 {
		groups = []LedgerGroup{r.All}
	}
	lost, late, flat := 0, 0, int64(0)
	for _, g := range groups {
		switch g.Verdict {
		case VerdictLost:
			lost++
			if g.FlatWithinMS != nil {
				flat = max(flat, *g.FlatWithinMS)
			}
		case VerdictMaybeLate, VerdictTooRecent:
			late++
		}
	}
	switch {
	case lost > 0 && late == 0 && flat > 0:
		return fmt.Sprintf("After %s, almost nothing more arrives: the missing events are lost, not late", durLabel(mtime.Time(flat)))
	case late > 0:
		return "Late, or lost? Some missing events may still be on their way"
	case r.All.NeverArrived == 0:
		return "Every ledger entry has its event"
	}
	return "Late, or lost? Ledger entries whose event has arrived"
}
