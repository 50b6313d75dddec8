package chart

import (
	"bytes"
	"testing"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
)

// The font embedded, compressed, is the module's Liberation Sans Regular,
// byte for byte: the figures are drawn with it, unmodified.
func TestTheFontIsLiberationSans(t *testing.T) {
	ttf, err := sansTTF()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ttf, liberationsansregular.TTF) {
		t.Errorf("the embedded font (%d bytes) is not the module's (%d bytes)", len(ttf), len(liberationsansregular.TTF))
	}
}
