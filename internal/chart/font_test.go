package chart

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"github.com/andybalholm/brotli"
)

var updateFont = flag.Bool("update-font", false, "write LiberationSans-Regular.ttf.br from the module's font")

// The font embedded, compressed, is the module's Liberation Sans Regular,
// byte for byte: the figures are drawn with it, unmodified.
func TestTheFontIsLiberationSans(t *testing.T) {
	if *updateFont {
		var b bytes.Buffer
		w := brotli.NewWriterOptions(&b, brotli.WriterOptions{Quality: brotli.BestCompression, LGWin: 24})
		if _, err := w.Write(liberationsansregular.TTF); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("LiberationSans-Regular.ttf.br", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		sansBrotli = b.Bytes()
	}
	ttf, err := sansTTF()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ttf, liberationsansregular.TTF) {
		t.Errorf("the embedded font (%d bytes) is not the module's (%d bytes)", len(ttf), len(liberationsansregular.TTF))
	}
}
