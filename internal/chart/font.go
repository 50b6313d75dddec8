package chart

import (
	"bytes"
	_ "embed"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// FontFamily is what the SVG asks the viewer for; the first is the font the
// layout was measured with and the PNG is drawn with.
const FontFamily = "Liberation Sans, Arial, Helvetica, sans-serif"

// sansBrotli is Liberation Sans Regular (codeberg.org/go-fonts/liberation's
// LiberationSans-Regular.ttf, unchanged; its license is
// LICENSE-LiberationSans), compressed with Brotli at its highest quality:
// 169 KB of the binary instead of 412 KB (212 KB with gzip -9). The
// decoder is the one the Parquet output's codecs already link. Made, and
// checked against the module's font, by
//
//	go test ./internal/chart -run TestTheFontIsLiberationSans -update-font
//
//go:embed LiberationSans-Regular.ttf.br
var sansBrotli []byte

// sansTTF is the font's file.
func sansTTF() ([]byte, error) {
	return io.ReadAll(brotli.NewReader(bytes.NewReader(sansBrotli)))
}

var (
	fontOnce sync.Once
	sans     *opentype.Font
	facesMu  sync.Mutex
	faces    = map[float64]font.Face{}
)

// face is Liberation Sans Regular at size points and dpi.
func face(size, dpi float64) font.Face {
	fontOnce.Do(func() {
		ttf, err := sansTTF()
		if err != nil {
			panic("chart: the embedded font: " + err.Error())
		}
		f, err := opentype.Parse(ttf)
		if err != nil {
			panic("chart: the embedded font: " + err.Error())
		}
		sans = f
	})
	facesMu.Lock()
	defer facesMu.Unlock()
	k := size*1000 + dpi
	if f, ok := faces[k]; ok {
		return f
	}
	f, err := opentype.NewFace(sans, &opentype.FaceOptions{Size: size, DPI: dpi, Hinting: font.HintingNone})
	if err != nil {
		panic("chart: the embedded font: " + err.Error())
	}
	faces[k] = f
	return f
}

// Measure is the width in points of s in Liberation Sans at size points.
func Measure(s string, size float64) float64 {
	return fixedToFloat(font.MeasureString(face(size, 72), s))
}

func fixedToFloat(v fixed.Int26_6) float64 { return float64(v) / 64 }
