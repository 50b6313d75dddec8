package chart

import (
	"bytes"
	"encoding/xml"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"
	"testing"
)

func sample() *Figure {
	red := color.RGBA{0xe4, 0x57, 0x2e, 0xff}
	ch := &Chart{
		Title: "A & B", XLabel: "x (log scale)", YLabel: "y <%>",
		XMin: 0, XMax: 3, YMin: 0, YMax: 10, Grid: true,
		XTicks: []Tick{{0, "1 s"}, {1, ""}, {2, "100 s"}, {3, "1000 s"}},
		YTicks: []Tick{{0, "0"}, {5, "5"}, {10, "10"}},
		Lines: []Line{
			{Pts: []XY{{0, 1}, {1, 4}, {2, 9}, {3, -5}}, Color: red, Width: 2, Mark: 4, MarkColor: Ink},
			{Pts: []XY{{0, 5}, {3, 5}}, Color: Ink, Width: 1, Dashes: []float64{4, 3}},
		},
		Labels: []Label{{At: XY{1, 4}, Text: " 4 s", Size: 9, Color: Ink}},
		Legend: []LegendEntry{{Text: "web", Line: Line{Color: red, Width: 2}}},
	}
	return &Figure{W: 400, H: 300, Charts: []*Chart{ch}, Boxes: []Box{{5, 5, 390, 290}}}
}

// An SVG is well-formed XML with its text escaped, a PNG decodes at 110
// dpi, both are the same bytes every time, and other formats are refused.
func TestFigure(t *testing.T) {
	f := sample()
	var svg, again bytes.Buffer
	if err := f.WriteTo(&svg, "svg"); err != nil {
		t.Fatal(err)
	}
	f.WriteTo(&again, "svg")
	if !bytes.Equal(svg.Bytes(), again.Bytes()) {
		t.Error("two SVGs of the same figure differ")
	}
	d := xml.NewDecoder(bytes.NewReader(svg.Bytes()))
	var texts []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG: %v\n%s", err, svg.String())
		}
		if c, ok := tok.(xml.CharData); ok && strings.TrimSpace(string(c)) != "" {
			texts = append(texts, string(c))
		}
	}
	if got := strings.Join(texts, "|"); got != "A & B|x (log scale)|y <%>|1 s|100 s|1000 s|0|5|10|4 s|web" {
		t.Errorf("SVG texts: %s", got)
	}
	if !strings.HasPrefix(svg.String(), "<?xml") || !strings.Contains(svg.String(), `stroke-dasharray="4 3"`) || !strings.Contains(svg.String(), "clip-path=") {
		t.Errorf("SVG lacks its header, a dash or a clip:\n%s", svg.String())
	}

	var p1, p2 bytes.Buffer
	if err := f.WriteTo(&p1, "png"); err != nil {
		t.Fatal(err)
	}
	f.WriteTo(&p2, "png")
	if !bytes.Equal(p1.Bytes(), p2.Bytes()) {
		t.Error("two PNGs of the same figure differ")
	}
	img, err := png.Decode(bytes.NewReader(p1.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 612 || b.Dy() != 459 {
		t.Errorf("PNG of 400x300 pt at 110 dpi: %v", b)
	}
	// Something was drawn in the line's colour, and the corner is white.
	red := 0
	for y := 0; y < img.Bounds().Dy(); y++ {
		for x := 0; x < img.Bounds().Dx(); x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == 0xe4 && g>>8 == 0x57 && b>>8 == 0x2e {
				red++
			}
		}
	}
	if r, g, b, _ := img.At(0, 0).RGBA(); red < 100 || r>>8 != 0xff || g>>8 != 0xff || b>>8 != 0xff {
		t.Errorf("PNG: %d pixels of the line, corner %v", red, img.At(0, 0))
	}
	if err := f.WriteTo(io.Discard, "gif"); err == nil {
		t.Error("gif: no error")
	}
}

func TestDashes(t *testing.T) {
	got := dashed([]XY{{0, 0}, {10, 0}, {10, 4}}, []float64{4, 3})
	want := [][]XY{{{0, 0}, {4, 0}}, {{7, 0}, {10, 0}, {10, 1}}}
	if len(got) != 2 {
		t.Fatalf("dashes: %v", got)
	}
	for i := range 2 {
		for k := range want[i] {
			if k >= len(got[i]) || math.Hypot(got[i][k].X-want[i][k].X, got[i][k].Y-want[i][k].Y) > 1e-9 {
				t.Errorf("dash %d: %v, want %v", i, got[i], want[i])
				break
			}
		}
	}
	if s := dashed([]XY{{0, 0}, {1, 1}}, nil); len(s) != 1 || len(s[0]) != 2 {
		t.Errorf("solid: %v", s)
	}
	if w := Measure("iii", 10); w <= 0 || w >= Measure("WWW", 10) {
		t.Errorf("Measure: iii %v, WWW %v", w, Measure("WWW", 10))
	}
}
