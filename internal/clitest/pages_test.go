package clitest

import "testing"

// A line has a shown line's shape when only its numbers, the width of its
// spaces and what stands for … differ; anything else missing is named.
func TestMissingShape(t *testing.T) {
	shown := "partition    task       read\norders/0     running    1308 afresh\nmember weir-…-group (generation 3)\n"
	output := "log\npartition    task         read\norders/2     running   41308 afresh\nmember weir-host-1-group (generation 12)\n"
	shown += "lag 2.364s\n"
	output += "lag 2s\n"
	if m := MissingShape(shown, output); m != "" {
		t.Errorf("missing %q", m)
	}
	shown = shown[:len(shown)-len("lag 2.364s\n")]
	for _, out := range []string{
		"partition task read\norders/0 stopped 1 afresh\nmember weir-x-group (generation 3)\n",   // a word differs
		"partition task read\nmember weir-x-group (generation 3)\norders/0 running 1 afresh\n",   // out of order
		"partition task read\norders/0 running 1.5 afresh\nmember weir-x-group (generation 3)\n", // a number where digits were
	} {
		if MissingShape(shown, out) == "" {
			t.Errorf("%q has the shape of\n%s", out, shown)
		}
	}
}
