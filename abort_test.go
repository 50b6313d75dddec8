package weir_test

import (
	"context"
	"errors"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/mtime"
)

// Abort before Run makes Run return its error at once, with nothing run;
// Abort while it runs stops it with that error; Status says stopped
// outside a run.
func TestPipelineAbort(t *testing.T) {
	stop := errors.New("stop now")
	p := weir.NewPipeline()
	n := 0
	weir.Sink(weir.FromSlice(p, []int{1, 2, 3}), func(int) error { n++; return nil })
	if st := p.Status(context.Background(), 0); st.State != "stopped" {
		t.Errorf("status before Run: %q", st.State)
	}
	p.Abort(stop)
	if err := p.Run(context.Background()); !errors.Is(err, stop) || n != 0 {
		t.Errorf("Run after Abort: %v, %d elements written", err, n)
	}

	p = weir.NewPipeline()
	written := make(chan struct{})
	weir.Sink(weir.FromSeq(p, func(yield func(int, mtime.Time) bool) {
		for i := 0; ; i++ {
			if !yield(i, mtime.Time(i)) {
				return
			}
		}
	}), func(v int) error {
		if v == 0 {
			close(written)
		}
		return nil
	})
	go func() {
		<-written
		p.Abort(stop)
	}()
	if err := p.Run(context.Background()); !errors.Is(err, stop) {
		t.Errorf("Run aborted while it ran: %v", err)
	}
	if st := p.Status(context.Background(), 0); st.State != "stopped" {
		t.Errorf("status after Run: %q", st.State)
	}
}
