package textdiff

import "testing"

func TestFirstLine(t *testing.T) {
	for _, c := range []struct{ want, got, says string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\nc", "a\nx\nc", `line 2: want "b", got "x" (3 lines against 3)`},
		{"a\nb", "a\nb\nc", `line 3: want "", got "c" (2 lines against 3)`},
		{"a\nb\n", "a\n", `line 2: want "b", got "" (3 lines against 2)`},
	} {
		if got := FirstLine(c.want, c.got); got != c.says {
			t.Errorf("FirstLine(%q, %q) = %q, want %q", c.want, c.got, got, c.says)
		}
	}
}
