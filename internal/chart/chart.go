// Package chart draws the line charts of weir lateness (axes with given
// ticks, a grid, lines with dashes and circle marks, text labels and a
// legend) as SVG or PNG, with one embedded font, Liberation Sans Regular.
//
// It replaces a general plotting library whose fonts alone (twelve
// embedded typefaces) weighed 4.4 MB of the weir binary: a chart here costs
// the one font (0.4 MB) and its rasterizer. The SVG names the font and
// leaves the text to the viewer; the PNG draws it. The same chart always
// gives the same bytes.
package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"
)

// XY is a point in a chart's data coordinates.
type XY struct{ X, Y float64 }

// Tick is a mark on an axis at Value; one with no Label is a short mark
// without a grid line.
type Tick struct {
	Value float64
	Label string
}

// Line is a polyline in data coordinates, clipped to the chart's axes.
type Line struct {
	Pts    []XY
	Color  color.RGBA
	Width  float64   // points
	Dashes []float64 // points on, points off, ...; nil: solid
	// Mark, when above zero, is the radius (points) of a circle drawn at
	// each point, in MarkColor.
	Mark      float64
	MarkColor color.RGBA
}

// Label is a text whose left end sits on a point of the data, its
// baseline Raise points above it.
type Label struct {
	At    XY
	Text  string
	Size  float64 // points
	Color color.RGBA
	Raise float64
}

// LegendEntry is a line of the legend: the text and a sample of the line.
type LegendEntry struct {
	Text string
	Line Line
}

// Chart is one set of axes and what is drawn on them.
type Chart struct {
	Title, XLabel, YLabel  string
	XMin, XMax, YMin, YMax float64
	XTicks, YTicks         []Tick
	Grid                   bool
	Lines                  []Line
	Labels                 []Label
	Legend                 []LegendEntry
	// LegendTop puts the legend in the top right corner of the axes,
	// else in the bottom right one; LegendShift moves it (points, right
	// and up).
	LegendTop   bool
	LegendShift XY
	// ThumbWidth is the width of a legend's line sample (points; 0: 20).
	ThumbWidth float64
}

// Box is a rectangle of a figure in points, from its top left corner.
type Box struct{ X, Y, W, H float64 }

// Figure is a canvas of W by H points holding charts, each in its box.
type Figure struct {
	W, H   float64
	Charts []*Chart
	Boxes  []Box
}

// Ink is the colour of the axes, ticks and their labels.
var Ink = color.RGBA{0x1d, 0x2b, 0x4f, 0xff}

var (
	black    = color.RGBA{0, 0, 0, 0xff}
	white    = color.RGBA{0xff, 0xff, 0xff, 0xff}
	gridGrey = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
)

// DPI is the resolution of the PNG: 110 pixels an inch.
const DPI = 110

// WriteTo draws the figure in format "svg" or "png" to w.
func (f *Figure) WriteTo(w io.Writer, format string) error {
	var c canvas
	switch format {
	case "svg":
		c = newSVG(f.W, f.H)
	case "png":
		c = newPNG(f.W, f.H, DPI)
	default:
		return fmt.Errorf("unknown plot format %q: want svg or png", format)
	}
	c.fill(Box{0, 0, f.W, f.H}, white)
	for i, ch := range f.Charts {
		ch.draw(c, f.Boxes[i])
	}
	var b bytes.Buffer
	if err := c.encode(&b); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// anchor is where a text's position is along it.
type anchor int

const (
	left anchor = iota
	middle
	right
)

// canvas is a drawing surface in points, y downwards.
type canvas interface {
	fill(b Box, c color.RGBA)
	// stroke draws a polyline, clipped to clip.
	stroke(pts []XY, c color.RGBA, width float64, dashes []float64, clip Box)
	circle(at XY, r float64, c color.RGBA, width float64)
	// text draws s (not empty, without leading spaces when anchored left:
	// drawText) with its baseline through at; vertical turns it a quarter
	// anticlockwise (reading upwards).
	text(at XY, s string, size float64, c color.RGBA, a anchor, vertical bool)
	encode(w io.Writer) error
}

const (
	tickLen  = 5.0
	minorLen = 2.5
	gap      = 3.0
)

// lineHeight is the height of a line of text of the font size.
func lineHeight(size float64) float64 { return size * 1.15 }

func (ch *Chart) draw(c canvas, b Box) {
	ascent := func(size float64) float64 { return size * 0.905 }
	// The frame: title above, x label and tick labels below, y label and
	// tick labels to the left.
	top := b.Y
	if ch.Title != "" {
		drawText(c, XY{b.X + b.W/2, b.Y + ascent(12)}, ch.Title, 12, black, middle, false)
		top += lineHeight(12) + 6
	}
	top += lineHeight(9) / 2
	bottom := b.Y + b.H - lineHeight(10) - gap - lineHeight(9) - gap - tickLen
	yw := 0.0
	for _, t := range ch.YTicks {
		yw = math.Max(yw, Measure(t.Label, 9))
	}
	x0 := b.X + lineHeight(10) + gap + yw + gap + tickLen
	x1 := b.X + b.W
	if n := len(ch.XTicks); n > 0 && ch.XTicks[n-1].Value >= ch.XMax-1e-9*(ch.XMax-ch.XMin) {
		x1 -= Measure(ch.XTicks[n-1].Label, 9) / 2
	}
	axes := Box{x0, top, x1 - x0, bottom - top}
	px := func(p XY) XY {
		return XY{
			x0 + (p.X-ch.XMin)/(ch.XMax-ch.XMin)*axes.W,
			bottom - (p.Y-ch.YMin)/(ch.YMax-ch.YMin)*axes.H,
		}
	}
	drawText(c, XY{(x0 + x1) / 2, b.Y + b.H - lineHeight(10) + ascent(10)}, ch.XLabel, 10, Ink, middle, false)
	drawText(c, XY{b.X + ascent(10), top + axes.H/2}, ch.YLabel, 10, Ink, middle, true)
	in := func(v, lo, hi float64) bool { return v >= lo-1e-9*(hi-lo) && v <= hi+1e-9*(hi-lo) }
	for _, t := range ch.XTicks {
		if !in(t.Value, ch.XMin, ch.XMax) {
			continue
		}
		x := px(XY{t.Value, ch.YMin}).X
		l := minorLen
		if t.Label != "" {
			l = tickLen
			if ch.Grid {
				c.stroke([]XY{{x, top}, {x, bottom}}, gridGrey, 0.5, nil, axes)
			}
			drawText(c, XY{x, bottom + tickLen + gap + ascent(9)}, t.Label, 9, Ink, middle, false)
		}
		c.stroke([]XY{{x, bottom}, {x, bottom + l}}, Ink, 0.5, nil, Box{0, 0, 1e9, 1e9})
	}
	for _, t := range ch.YTicks {
		if !in(t.Value, ch.YMin, ch.YMax) {
			continue
		}
		y := px(XY{ch.XMin, t.Value}).Y
		l := minorLen
		if t.Label != "" {
			l = tickLen
			if ch.Grid {
				c.stroke([]XY{{x0, y}, {x1, y}}, gridGrey, 0.5, nil, axes)
			}
			drawText(c, XY{x0 - tickLen - gap, y + ascent(9)/2 - 1}, t.Label, 9, Ink, right, false)
		}
		c.stroke([]XY{{x0 - l, y}, {x0, y}}, Ink, 0.5, nil, Box{0, 0, 1e9, 1e9})
	}
	c.stroke([]XY{{x0, top}, {x0, bottom}, {x1, bottom}}, Ink, 0.5, nil, Box{0, 0, 1e9, 1e9})
	for _, l := range ch.Lines {
		pts := make([]XY, len(l.Pts))
		for i, p := range l.Pts {
			pts[i] = px(p)
		}
		if len(pts) > 1 {
			c.stroke(pts, l.Color, l.Width, l.Dashes, axes)
		}
		if l.Mark > 0 {
			for _, p := range pts {
				c.circle(p, l.Mark, l.MarkColor, 1)
			}
		}
	}
	for _, lb := range ch.Labels {
		p := px(lb.At)
		drawText(c, XY{p.X, p.Y - lb.Raise - 1}, lb.Text, lb.Size, lb.Color, left, false)
	}
	ch.drawLegend(c, axes)
}

func (ch *Chart) drawLegend(c canvas, axes Box) {
	if len(ch.Legend) == 0 {
		return
	}
	thumb := ch.ThumbWidth
	if thumb == 0 {
		thumb = 20
	}
	tw := 0.0
	for _, e := range ch.Legend {
		tw = math.Max(tw, Measure(e.Text, 9))
	}
	row := lineHeight(9)
	right := axes.X + axes.W - 5 + ch.LegendShift.X
	y := axes.Y + 5 - ch.LegendShift.Y
	if !ch.LegendTop {
		y = axes.Y + axes.H - 5 - float64(len(ch.Legend))*row - ch.LegendShift.Y
	}
	x := right - thumb - gap - tw
	for _, e := range ch.Legend {
		drawText(c, XY{x, y + row*0.8}, e.Text, 9, black, left, false)
		mid := y + row/2
		l := e.Line
		c.stroke([]XY{{right - thumb, mid}, {right, mid}}, l.Color, l.Width, l.Dashes, Box{0, 0, 1e9, 1e9})
		if l.Mark > 0 {
			c.circle(XY{right - thumb/2, mid}, l.Mark, l.MarkColor, 1)
		}
		y += row
	}
}

// drawText draws s on c as canvas.text, text of its own: a left-anchored
// text begins after its leading spaces (a canvas would drop or collapse
// them), and an empty one is nothing.
func drawText(c canvas, at XY, s string, size float64, col color.RGBA, a anchor, vertical bool) {
	if a == left {
		var dx float64
		dx, s = leadingSpaces(s, size)
		at.X += dx
	}
	if s != "" {
		c.text(at, s, size, col, a, vertical)
	}
}

// leadingSpaces splits s into the width of its leading spaces at size and
// the rest.
func leadingSpaces(s string, size float64) (float64, string) {
	t := strings.TrimLeft(s, " ")
	return float64(len(s)-len(t)) * Measure(" ", size), t
}

// num formats a coordinate for the SVG: two decimals at most.
func num(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}
