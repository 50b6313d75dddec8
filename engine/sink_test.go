package engine_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/window"
)

// A write that succeeds allocates nothing: the Go API writes each pane as
// it comes (SetBatch(1)), and the check for a refusal was an allocation per
// pane.
func TestSinkWriteAllocatesNothing(t *testing.T) {
	e, err := engine.New(engine.Config{Name: "sink"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := engine.NewSink(e, "output", connector.Sink[window.Pane[string, int64]](&discardSink{}))
	if err != nil {
		t.Fatal(err)
	}
	n.SetBatch(1)
	p := window.Pane[string, int64]{Key: "k", Value: 1}
	if a := testing.AllocsPerRun(1000, func() { n.Push(p) }); a != 0 {
		t.Errorf("%.1f allocations a pane", a)
	}
}

type discardSink struct{ memSink }

func (*discardSink) Write(context.Context, []window.Pane[string, int64]) error { return nil }
