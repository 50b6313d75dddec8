package chart

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// pngCanvas rasterizes onto an RGBA image, scale pixels a point.
type pngCanvas struct {
	img   *image.RGBA
	scale float64
	dpi   float64
	mask  *image.Alpha
	z     vector.Rasterizer
}

func newPNG(w, h, dpi float64) *pngCanvas {
	s := dpi / 72
	r := image.Rect(0, 0, int(math.Ceil(w*s)), int(math.Ceil(h*s)))
	return &pngCanvas{img: image.NewRGBA(r), scale: s, dpi: dpi, mask: image.NewAlpha(r)}
}

func (c *pngCanvas) rect(b Box) image.Rectangle {
	s := c.scale
	return image.Rect(int(math.Floor(b.X*s)), int(math.Floor(b.Y*s)), int(math.Ceil((b.X+b.W)*s)), int(math.Ceil((b.Y+b.H)*s))).Intersect(c.img.Rect)
}

func (c *pngCanvas) fill(b Box, col color.RGBA) {
	draw.Draw(c.img, c.rect(b), image.NewUniform(col), image.Point{}, draw.Src)
}

// begin starts a shape on the rasterizer; paint fills it in col, within
// clip.
func (c *pngCanvas) begin() {
	b := c.img.Rect
	c.z.Reset(b.Dx(), b.Dy())
	c.z.DrawOp = draw.Src
}

func (c *pngCanvas) paint(col color.RGBA, clip Box) {
	c.z.Draw(c.mask, c.mask.Rect, image.Opaque, image.Point{})
	r := c.rect(clip)
	draw.DrawMask(c.img, r, image.NewUniform(col), image.Point{}, c.mask, r.Min, draw.Over)
}

// polygon adds a closed polygon (pixels); every shape of a paint goes the
// same way round, so that where two overlap they do not cancel.
func (c *pngCanvas) polygon(pts ...XY) {
	c.z.MoveTo(float32(pts[0].X), float32(pts[0].Y))
	for _, p := range pts[1:] {
		c.z.LineTo(float32(p.X), float32(p.Y))
	}
	c.z.ClosePath()
}

// disc adds a filled circle (pixels), the same way round as the segments.
func (c *pngCanvas) disc(at XY, r float64) {
	const n = 24
	pts := make([]XY, n)
	for i := range pts {
		a := -2 * math.Pi * float64(i) / n
		pts[i] = XY{at.X + r*math.Cos(a), at.Y + r*math.Sin(a)}
	}
	c.polygon(pts...)
}

// run adds a polyline of pixels hw wide on each side, with round joins.
func (c *pngCanvas) run(pts []XY, hw float64) {
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		dx, dy := b.X-a.X, b.Y-a.Y
		l := math.Hypot(dx, dy)
		if l == 0 {
			continue
		}
		nx, ny := -dy/l*hw, dx/l*hw
		c.polygon(XY{a.X + nx, a.Y + ny}, XY{b.X + nx, b.Y + ny}, XY{b.X - nx, b.Y - ny}, XY{a.X - nx, a.Y - ny})
		if i < len(pts)-1 {
			c.disc(b, hw)
		}
	}
}

// dashed splits a polyline into its dashes.
func dashed(pts []XY, dashes []float64) [][]XY {
	if len(dashes) == 0 {
		return [][]XY{pts}
	}
	var out [][]XY
	k, left, on := 0, dashes[0], true
	cur := []XY{pts[0]}
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		l := math.Hypot(b.X-a.X, b.Y-a.Y)
		pos := 0.0
		for l-pos > left {
			pos += left
			p := XY{a.X + (b.X-a.X)*pos/l, a.Y + (b.Y-a.Y)*pos/l}
			if on {
				out = append(out, append(cur, p))
			}
			cur = []XY{p}
			on = !on
			k = (k + 1) % len(dashes)
			left = dashes[k]
		}
		left -= l - pos
		cur = append(cur, b)
	}
	if on && len(cur) > 1 {
		out = append(out, cur)
	}
	return out
}

func (c *pngCanvas) stroke(pts []XY, col color.RGBA, width float64, dashes []float64, clip Box) {
	s := c.scale
	px := make([]XY, len(pts))
	for i, p := range pts {
		px[i] = XY{p.X * s, p.Y * s}
	}
	ds := make([]float64, len(dashes))
	for i, d := range dashes {
		ds[i] = d * s
	}
	c.begin()
	for _, r := range dashed(px, ds) {
		c.run(r, math.Max(width*s, 1)/2)
	}
	c.paint(col, clip)
}

func (c *pngCanvas) circle(at XY, r float64, col color.RGBA, width float64) {
	s := c.scale
	const n = 32
	pts := make([]XY, n+1)
	for i := range pts {
		a := 2 * math.Pi * float64(i) / n
		pts[i] = XY{(at.X + r*math.Cos(a)) * s, (at.Y + r*math.Sin(a)) * s}
	}
	c.begin()
	c.run(pts, math.Max(width*s, 1)/2)
	c.paint(col, Box{0, 0, 1e9, 1e9})
}

func (c *pngCanvas) text(at XY, s string, size float64, col color.RGBA, a anchor, vertical bool) {
	f := face(size, c.dpi)
	w := fixedToFloat(font.MeasureString(f, s))
	shift := [...]float64{0, w / 2, w}[a]
	x, y := at.X*c.scale, at.Y*c.scale
	src := image.NewUniform(col)
	if !vertical {
		d := font.Drawer{Dst: c.img, Src: src, Face: f, Dot: fixed.Point26_6{X: fixed.Int26_6((x - shift) * 64), Y: fixed.Int26_6(y * 64)}}
		d.DrawString(s)
		return
	}
	// Upright into a mask, then turned a quarter anticlockwise about at.
	m := f.Metrics()
	asc, desc := m.Ascent.Ceil(), m.Descent.Ceil()
	tw := int(math.Ceil(w)) + 1
	flat := image.NewAlpha(image.Rect(0, 0, tw, asc+desc))
	d := font.Drawer{Dst: flat, Src: image.Opaque, Face: f, Dot: fixed.P(0, asc)}
	d.DrawString(s)
	turned := image.NewAlpha(image.Rect(0, 0, asc+desc, tw))
	for ty := 0; ty < asc+desc; ty++ {
		for tx := 0; tx < tw; tx++ {
			turned.SetAlpha(ty, tw-1-tx, flat.AlphaAt(tx, ty))
		}
	}
	// The baseline through at, the text centred (a) along it.
	ox := int(math.Round(x)) - asc
	oy := int(math.Round(y+shift)) - tw
	r := turned.Rect.Add(image.Pt(ox, oy))
	draw.DrawMask(c.img, r, src, image.Point{}, turned, image.Point{}, draw.Over)
}

func (c *pngCanvas) encode(w io.Writer) error {
	e := png.Encoder{CompressionLevel: png.BestCompression}
	return e.Encode(w, c.img)
}
