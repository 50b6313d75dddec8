package chart

import (
	"fmt"
	"image/color"
	"io"
	"strings"
)

// svgCanvas writes SVG elements; its text is left to the viewer's fonts.
type svgCanvas struct {
	b     strings.Builder
	clips map[Box]string
}

func newSVG(w, h float64) *svgCanvas {
	c := &svgCanvas{clips: map[Box]string{}}
	fmt.Fprintf(&c.b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%spt\" height=\"%spt\" viewBox=\"0 0 %s %s\" font-family=\"%s\">\n",
		num(w), num(h), num(w), num(h), FontFamily)
	return c
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func (c *svgCanvas) fill(b Box, col color.RGBA) {
	fmt.Fprintf(&c.b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>\n", num(b.X), num(b.Y), num(b.W), num(b.H), hex(col))
}

// clip is the id of a clip path of the box, defined at its first use; ""
// for a box that clips nothing.
func (c *svgCanvas) clip(b Box) string {
	if b.W >= 1e8 {
		return ""
	}
	id, ok := c.clips[b]
	if !ok {
		id = fmt.Sprintf("c%d", len(c.clips))
		c.clips[b] = id
		fmt.Fprintf(&c.b, "<clipPath id=\"%s\"><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/></clipPath>\n", id, num(b.X), num(b.Y), num(b.W), num(b.H))
	}
	return id
}

func (c *svgCanvas) stroke(pts []XY, col color.RGBA, width float64, dashes []float64, clip Box) {
	id := c.clip(clip)
	c.b.WriteString("<polyline points=\"")
	for i, p := range pts {
		if i > 0 {
			c.b.WriteByte(' ')
		}
		c.b.WriteString(num(p.X) + "," + num(p.Y))
	}
	fmt.Fprintf(&c.b, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-linejoin=\"round\"", hex(col), num(width))
	if len(dashes) > 0 {
		d := make([]string, len(dashes))
		for i, v := range dashes {
			d[i] = num(v)
		}
		fmt.Fprintf(&c.b, " stroke-dasharray=\"%s\"", strings.Join(d, " "))
	}
	if id != "" {
		fmt.Fprintf(&c.b, " clip-path=\"url(#%s)\"", id)
	}
	c.b.WriteString("/>\n")
}

func (c *svgCanvas) circle(at XY, r float64, col color.RGBA, width float64) {
	fmt.Fprintf(&c.b, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"/>\n", num(at.X), num(at.Y), num(r), hex(col), num(width))
}

var xmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func (c *svgCanvas) text(at XY, s string, size float64, col color.RGBA, a anchor, vertical bool) {
	anchors := [...]string{"start", "middle", "end"}
	fmt.Fprintf(&c.b, "<text x=\"%s\" y=\"%s\" font-size=\"%s\" fill=\"%s\" text-anchor=\"%s\"", num(at.X), num(at.Y), num(size), hex(col), anchors[a])
	if vertical {
		fmt.Fprintf(&c.b, " transform=\"rotate(-90 %s %s)\"", num(at.X), num(at.Y))
	}
	fmt.Fprintf(&c.b, ">%s</text>\n", xmlText.Replace(s))
}

func (c *svgCanvas) encode(w io.Writer) error {
	c.b.WriteString("</svg>\n")
	_, err := io.WriteString(w, c.b.String())
	return err
}
