package lateness

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	ink    = color.RGBA{0x1d, 0x2b, 0x4f, 0xff}
	teal   = color.RGBA{0x2a, 0x9d, 0x8f, 0xff}
	tomato = color.RGBA{0xe4, 0x57, 0x2e, 0xff}
	grey   = color.RGBA{0xbb, 0xbb, 0xbb, 0xff}
)

// timeTicks label a log axis in seconds with readable durations; the
// others are marks without a label. The axes of the figures are linear in
// the logarithm of their values (gonum's log scale places axis labels by the
// arithmetic mean of the range).
var timeTicks = []struct {
	s     float64
	label string
}{
	{0.001, "1 ms"}, {0.01, ""}, {0.1, "100 ms"}, {1, "1 s"}, {10, ""}, {60, "1 min"}, {600, ""},
	{3600, "1 h"}, {6 * 3600, ""}, {86400, "1 d"}, {7 * 86400, "1 week"},
}

func durTicks(lo, hi float64) plot.ConstantTicks {
	var t plot.ConstantTicks
	for _, k := range timeTicks {
		if k.s >= lo*0.999 && k.s <= hi*1.001 {
			t = append(t, plot.Tick{Value: math.Log10(k.s), Label: k.label})
		}
	}
	return t
}

// sans is the typeface of every text of the figures.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Label.TextStyle.Color = ink
		a.Tick.Label.Font = font.From(sans, 9)
		a.Tick.Label.Color = ink
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	return p
}

// WritePlot draws the report's two figures side by side, as the seed does:
// the trade-off curve (for each watermark delay, the share of too-late
// events against the median wait of a result) and the travel-time
// distribution (the share of events still on their way after each travel
// time). format is "svg" or "png". The drawing depends only on the report.
func (r *Report) WritePlot(w io.Writer, format string) error {
	tradeoff, err := r.tradeoffPlot()
	if err != nil {
		return err
	}
	travel, err := r.travelPlot()
	if err != nil {
		return err
	}
	return writeCanvas(w, format, 11*vg.Inch, 4.2*vg.Inch, func(dc draw.Canvas) {
		tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Centimeter, PadTop: 3 * vg.Millimeter, PadBottom: 2 * vg.Millimeter,
			PadLeft: 2 * vg.Millimeter, PadRight: 5 * vg.Millimeter}
		tradeoff.Draw(tiles.At(dc, 0, 0))
		travel.Draw(tiles.At(dc, 1, 0))
	})
}

// writeCanvas draws on a canvas of the format ("svg" or "png") and writes
// it to w.
func writeCanvas(w io.Writer, format string, width, height vg.Length, paint func(draw.Canvas)) error {
	var c vg.CanvasWriterTo
	switch format {
	case "svg":
		c = vgsvg.New(width, height)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))}
	default:
		return fmt.Errorf("unknown plot format %q: want svg or png", format)
	}
	paint(draw.New(c))
	_, err := c.WriteTo(w)
	return err
}

// WritePlotFile writes WritePlot to a .svg or .png file.
func (r *Report) WritePlotFile(path string) error { return writePlotFile(path, r.WritePlot) }

// writePlotFile writes a drawing to a .svg or .png file.
func writePlotFile(path string, write func(io.Writer, string) error) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != "svg" && format != "png" {
		return usagef("cannot tell the plot format of %s: want .svg or .png", path)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, format); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (r *Report) tradeoffPlot() (*plot.Plot, error) {
	p := newPlot("Trade-off: a longer watermark delay, fewer late events",
		"median wait of a result after its window ends (log scale)", "events too late (%)")
	series := r.tradeoffSeries()
	lo, hi, top := math.Inf(1), 0.0, 0.0
	for _, sr := range series {
		for _, pt := range sr.pts {
			x := math.Pow(10, pt.X)
			lo, hi, top = math.Min(lo, x), math.Max(hi, x), math.Max(top, pt.Y)
		}
	}
	lo, hi = decadeDown(lo), decadeUp(hi*1.5)
	p.X.Min, p.X.Max = math.Log10(lo), math.Log10(hi)
	p.X.Tick.Marker = durTicks(lo, hi)
	p.Y.Min, p.Y.Max = 0, math.Max(top*1.15, 0.01)
	p.Add(plotter.NewGrid())
	for i, sr := range series {
		if sr.name != "" && len(sr.pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(sr.pts)
		if err != nil {
			return nil, err
		}
		line.Color = ink
		line.Width = vg.Points(1.5)
		points.Color = tomato
		points.Shape = draw.CircleGlyph{}
		points.Radius = vg.Points(4)
		if sr.name != "" {
			line.Color, points.Color = periodColors[i%len(periodColors)], periodColors[i%len(periodColors)]
			p.Legend.Add(sr.name, line, points)
		}
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: sr.pts, Labels: sr.labels})
		if err != nil {
			return nil, err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Font = font.From(sans, 9)
			lab.TextStyle[i].Color = ink
			lab.TextStyle[i].YAlign = draw.YBottom
		}
		p.Add(line, points, lab)
	}
	p.Legend.Top = true
	if t := r.Recommendation.TargetPercent; t > 0 && t < p.Y.Max {
		tl, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: t}, {X: p.X.Max, Y: t}})
		if err != nil {
			return nil, err
		}
		tl.Color = teal
		tl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		tlab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: p.X.Min, Y: t}}, Labels: []string{" target " + fmtPct(t)}})
		if err != nil {
			return nil, err
		}
		tlab.TextStyle[0].Font = font.From(sans, 9)
		tlab.TextStyle[0].Color = teal
		tlab.TextStyle[0].YAlign = draw.YBottom
		p.Add(tl, tlab)
	}
	return p, nil
}

// periodColors tell the periods' series apart.
var periodColors = []color.Color{
	tomato, ink, teal,
	color.RGBA{0x8e, 0x44, 0xad, 0xff}, color.RGBA{0xd4, 0xa0, 0x17, 0xff},
}

// plotSeries is a curve of a figure: the whole stream's (no name) or a
// period's.
type plotSeries struct {
	name   string
	pts    plotter.XYs
	labels []string
}

// tradeoffSeries are the trade-off curves: for each watermark delay whose
// windows fired, the median wait (log10 of seconds) and the share too late;
// one per period when periods are compared.
func (r *Report) tradeoffSeries() []plotSeries {
	curve := func(name string, n int, row func(i int) (string, *int64, float64)) plotSeries {
		s := plotSeries{name: name}
		for i := range n {
			label, wait, late := row(i)
			if wait == nil {
				continue // no window fired: the wait is not known
			}
			x := math.Max(float64(*wait), 1) / 1000
			s.pts = append(s.pts, plotter.XY{X: math.Log10(x), Y: late})
			s.labels = append(s.labels, " "+label)
		}
		return s
	}
	if len(r.Periods) == 0 {
		return []plotSeries{curve("", len(r.Delays), func(i int) (string, *int64, float64) {
			d := &r.Delays[i]
			return d.Label, d.WaitMedianMS, d.TooLatePercent
		})}
	}
	var out []plotSeries
	for _, p := range r.Periods {
		out = append(out, curve(p.Label, len(p.Delays), func(i int) (string, *int64, float64) {
			d := &p.Delays[i]
			return d.Label, d.WaitMedianMS, d.TooLatePercent
		}))
	}
	return out
}

func (r *Report) travelPlot() (*plot.Plot, error) {
	p := newPlot("Travel time: events still on their way",
		"time since the event happened (log scale)", "events not yet arrived (%, log scale)")
	type curve struct {
		name string
		pts  plotter.XYs
	}
	var curves []curve
	floor := 100.0
	add := func(name string, cdf []cdfPoint) {
		var pts plotter.XYs
		for _, c := range cdf {
			left := 100 * (1 - c.share)
			if left <= 1e-9 {
				break
			}
			pts = append(pts, plotter.XY{X: math.Log10(c.ms / 1000), Y: math.Log10(left)})
			floor = math.Min(floor, left)
		}
		curves = append(curves, curve{name, pts})
	}
	if len(r.Periods) == 0 {
		add("", r.cdf)
	}
	for _, pr := range r.Periods {
		add(pr.Label, pr.cdf)
	}
	hi := decadeUp(math.Max(float64(r.Travel.MaxMS), 1000) / 1000)
	lo := 0.001
	p.X.Min, p.X.Max = math.Log10(lo), math.Log10(hi)
	p.X.Tick.Marker = durTicks(lo, hi)
	p.Y.Min, p.Y.Max = math.Floor(math.Log10(floor)), 2
	var yt plot.ConstantTicks
	for e := 2.0; e >= p.Y.Min; e-- {
		v := math.Pow(10, e)
		yt = append(yt, plot.Tick{Value: e, Label: strconv.FormatFloat(v, 'f', -1, 64) + "%"})
	}
	p.Y.Tick.Marker = yt
	p.Add(plotter.NewGrid())
	// The travel-time buckets' edges: 2 s, 5 min, 1 h, 6 h.
	for _, e := range bucketEdges {
		x := math.Log10(float64(e) / 1000)
		if x > p.X.Max {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
		if err != nil {
			return nil, err
		}
		l.Color = grey
		l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(l)
	}
	for i, c := range curves {
		if len(c.pts) == 0 {
			continue
		}
		// A step curve: the share stays put between two buckets.
		var steps plotter.XYs
		for i, pt := range c.pts {
			if i > 0 {
				steps = append(steps, plotter.XY{X: pt.X, Y: c.pts[i-1].Y})
			}
			steps = append(steps, pt)
		}
		l, err := plotter.NewLine(steps)
		if err != nil {
			return nil, err
		}
		l.Color = tomato
		l.Width = vg.Points(2)
		if c.name != "" {
			l.Color = periodColors[i%len(periodColors)]
			p.Legend.Add(c.name, l)
		}
		p.Add(l)
	}
	p.Legend.Top = true
	return p, nil
}

func decadeDown(v float64) float64 {
	if v <= 0 {
		return 0.001
	}
	return math.Pow(10, math.Floor(math.Log10(v)))
}

func decadeUp(v float64) float64 {
	if v <= 0 {
		return 1
	}
	return math.Pow(10, math.Ceil(math.Log10(v)))
}
