// Package textdiff says where two texts first differ, a line at a time:
// what a test that compares a run's output with another's prints when
// they differ, so that the line is found without reading both whole.
package textdiff

import (
	"fmt"
	"strings"
)

// FirstLine is the first line where got differs from want, with its
// number and both texts' numbers of lines ("" when they are the same). A
// line one text lacks reads as empty.
func FirstLine(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: want %q, got %q (%d lines against %d)", i+1, a, b, len(w), len(g))
		}
	}
	return ""
}
