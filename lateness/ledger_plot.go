package lateness

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

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
	p, err := r.arrivedPlot()
	if err != nil {
		return err
	}
	return writeCanvas(w, format, 8*vg.Inch, 4.6*vg.Inch, func(dc draw.Canvas) {
		p.Draw(draw.Crop(dc, 2*vg.Millimeter, -5*vg.Millimeter, 2*vg.Millimeter, -3*vg.Millimeter))
	})
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

func (r *LedgerReport) arrivedPlot() (*plot.Plot, error) {
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
	p.X.Tick.Marker = durTicks(xLo, xHi)
	var yt plot.ConstantTicks
	for v := yMin; v <= 100+step/2; v += step {
		yt = append(yt, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64) + "%"})
	}
	p.Y.Tick.Marker = yt
	p.Add(plotter.NewGrid())
	// The waits of the report, and 100%.
	for _, ms := range r.WaitsMS {
		x := math.Log10(float64(ms) / 1000)
		if x < xMin || x > xMax {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: yMin}, {X: x, Y: yMax}})
		if err != nil {
			return nil, err
		}
		l.Color = grey
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: yMin}}, Labels: []string{" " + durLabel(mtime.Time(ms))}})
		if err != nil {
			return nil, err
		}
		lab.TextStyle[0].Font = font.From(sans, 8)
		lab.TextStyle[0].Color = ink
		lab.TextStyle[0].YAlign = draw.YBottom
		lab.Offset = vg.Point{Y: vg.Points(2)}
		p.Add(l, lab)
	}
	full, err := plotter.NewLine(plotter.XYs{{X: xMin, Y: 100}, {X: xMax, Y: 100}})
	if err != nil {
		return nil, err
	}
	full.Color = ink
	full.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(full)
	// The curves.
	for i := range cs {
		c := &cs[i]
		pts := make(plotter.XYs, curvePoints)
		for k := range pts {
			x := xMin + (xMax-xMin)*float64(k)/float64(curvePoints-1)
			pts[k] = plotter.XY{X: x, Y: c.arrivedBy(math.Pow(10, x) * 1000)}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = curveColors[i%len(curveColors)]
		l.Width = vg.Points(2.2)
		p.Add(l)
		label := fmt.Sprintf("%s: %s never arrived", c.g.Value, fmtPct(c.g.NeverArrivedPercent))
		if c.g.Value == "(all)" {
			label = fmt.Sprintf("%s of the entries never arrived", fmtPct(c.g.NeverArrivedPercent))
		}
		if c.g.NeverArrived == 0 {
			label = c.g.Value + ": every entry arrived"
		}
		p.Legend.Add(label, l)
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(22)
	// After the plotters, which widen the axes to their data: the curves
	// below yMin are cut.
	p.X.Min, p.X.Max = xMin, xMax
	p.Y.Min, p.Y.Max = yMin, yMax
	p.Legend.ThumbnailWidth = vg.Points(18)
	return p, nil
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
