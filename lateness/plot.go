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

	"github.com/weirstream/weir/internal/chart"
)

var (
	ink    = color.RGBA{0x1d, 0x2b, 0x4f, 0xff}
	teal   = color.RGBA{0x2a, 0x9d, 0x8f, 0xff}
	tomato = color.RGBA{0xe4, 0x57, 0x2e, 0xff}
	grey   = color.RGBA{0xbb, 0xbb, 0xbb, 0xff}
)

// timeTicks label a log axis in seconds with readable durations; the
// others are marks without a label. The axes of the figures are linear in
// the logarithm of their values.
var timeTicks = []struct {
	s     float64
	label string
}{
	{0.001, "1 ms"}, {0.01, ""}, {0.1, "100 ms"}, {1, "1 s"}, {10, ""}, {60, "1 min"}, {600, ""},
	{3600, "1 h"}, {6 * 3600, ""}, {86400, "1 d"}, {7 * 86400, "1 week"},
}

func durTicks(lo, hi float64) []chart.Tick {
	var t []chart.Tick
	for _, k := range timeTicks {
		if k.s >= lo*0.999 && k.s <= hi*1.001 {
			t = append(t, chart.Tick{Value: math.Log10(k.s), Label: k.label})
		}
	}
	return t
}

func newPlot(title, x, y string) *chart.Chart {
	return &chart.Chart{Title: title, XLabel: x, YLabel: y, Grid: true}
}

const (
	inch = 72.0
	mm   = inch / 25.4
)

// WritePlot draws the report's two figures side by side, as the seed does:
// the trade-off curve (for each watermark delay, the share of too-late
// events against the median wait of a result) and the travel-time
// distribution (the share of events still on their way after each travel
// time). format is "svg" or "png". The drawing depends only on the report.
func (r *Report) WritePlot(w io.Writer, format string) error {
	if format != "svg" && format != "png" {
		return fmt.Errorf("unknown plot format %q: want svg or png", format)
	}
	tradeoff := r.tradeoffPlot()
	travel := r.travelPlot()
	// Two tiles, a centimetre apart, within a margin.
	W, H := 11*inch, 4.2*inch
	padL, padR, padT, padB, between := 2*mm, 5*mm, 3*mm, 2*mm, 10*mm
	tw := (W - padL - padR - between) / 2
	f := chart.Figure{W: W, H: H, Charts: []*chart.Chart{tradeoff, travel}, Boxes: []chart.Box{
		{X: padL, Y: padT, W: tw, H: H - padT - padB},
		{X: padL + tw + between, Y: padT, W: tw, H: H - padT - padB},
	}}
	return f.WriteTo(w, format)
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

func (r *Report) tradeoffPlot() *chart.Chart {
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
	p.XMin, p.XMax = math.Log10(lo), math.Log10(hi)
	p.XTicks = durTicks(lo, hi)
	p.YMin, p.YMax = 0, math.Max(top*1.15, 0.01)
	p.YTicks = linearTicks(p.YMin, p.YMax)
	for i, sr := range series {
		if sr.name != "" && len(sr.pts) == 0 {
			continue
		}
		line := chart.Line{Pts: sr.pts, Color: ink, Width: 1.5, Mark: 4, MarkColor: tomato}
		if sr.name != "" {
			line.Color, line.MarkColor = periodColors[i%len(periodColors)], periodColors[i%len(periodColors)]
			p.Legend = append(p.Legend, chart.LegendEntry{Text: sr.name, Line: line})
		}
		p.Lines = append(p.Lines, line)
		for k, pt := range sr.pts {
			p.Labels = append(p.Labels, chart.Label{At: pt, Text: sr.labels[k], Size: 9, Color: ink})
		}
	}
	p.LegendTop = true
	if t := r.Recommendation.TargetPercent; t > 0 && t < p.YMax {
		p.Lines = append(p.Lines, chart.Line{Pts: []chart.XY{{X: p.XMin, Y: t}, {X: p.XMax, Y: t}}, Color: teal, Width: 1, Dashes: []float64{4, 3}})
		p.Labels = append(p.Labels, chart.Label{At: chart.XY{X: p.XMin, Y: t}, Text: " target " + fmtPct(t), Size: 9, Color: teal})
	}
	return p
}

// linearTicks are five to ten labelled ticks at a round step over lo..hi.
func linearTicks(lo, hi float64) []chart.Tick {
	span := hi - lo
	if span <= 0 {
		return nil
	}
	step := math.Pow(10, math.Floor(math.Log10(span)))
	for _, m := range []float64{0.1, 0.2, 0.5, 1} {
		if span/(step*m) <= 10 {
			step *= m
			break
		}
	}
	var t []chart.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		v = math.Round(v/step) * step
		t = append(t, chart.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
	}
	return t
}

// periodColors tell the periods' series apart.
var periodColors = []color.RGBA{
	tomato, ink, teal,
	{0x8e, 0x44, 0xad, 0xff}, {0xd4, 0xa0, 0x17, 0xff},
}

// plotSeries is a curve of a figure: the whole stream's (no name) or a
// period's.
type plotSeries struct {
	name   string
	pts    []chart.XY
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
			s.pts = append(s.pts, chart.XY{X: math.Log10(x), Y: late})
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

func (r *Report) travelPlot() *chart.Chart {
	p := newPlot("Travel time: events still on their way",
		"time since the event happened (log scale)", "events not yet arrived (%, log scale)")
	type curve struct {
		name string
		pts  []chart.XY
	}
	var curves []curve
	floor := 100.0
	add := func(name string, cdf []cdfPoint) {
		var pts []chart.XY
		for _, c := range cdf {
			left := 100 * (1 - c.share)
			if left <= 1e-9 {
				break
			}
			pts = append(pts, chart.XY{X: math.Log10(c.ms / 1000), Y: math.Log10(left)})
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
	p.XMin, p.XMax = math.Log10(lo), math.Log10(hi)
	p.XTicks = durTicks(lo, hi)
	p.YMin, p.YMax = math.Floor(math.Log10(floor)), 2
	for e := 2.0; e >= p.YMin; e-- {
		v := math.Pow(10, e)
		p.YTicks = append(p.YTicks, chart.Tick{Value: e, Label: strconv.FormatFloat(v, 'f', -1, 64) + "%"})
	}
	// The travel-time buckets' edges: 2 s, 5 min, 1 h, 6 h.
	for _, e := range bucketEdges {
		x := math.Log10(float64(e) / 1000)
		if x > p.XMax {
			continue
		}
		p.Lines = append(p.Lines, chart.Line{Pts: []chart.XY{{X: x, Y: p.YMin}, {X: x, Y: p.YMax}}, Color: grey, Width: 1, Dashes: []float64{2, 2}})
	}
	for i, c := range curves {
		if len(c.pts) == 0 {
			continue
		}
		// A step curve: the share stays put between two buckets.
		var steps []chart.XY
		for i, pt := range c.pts {
			if i > 0 {
				steps = append(steps, chart.XY{X: pt.X, Y: c.pts[i-1].Y})
			}
			steps = append(steps, pt)
		}
		l := chart.Line{Pts: steps, Color: tomato, Width: 2}
		if c.name != "" {
			l.Color = periodColors[i%len(periodColors)]
			p.Legend = append(p.Legend, chart.LegendEntry{Text: c.name, Line: l})
		}
		p.Lines = append(p.Lines, l)
	}
	p.LegendTop = true
	return p
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
