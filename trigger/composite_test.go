package trigger

import (
	"testing"
	"time"
)

func TestCompositeStringAndValidate(t *testing.T) {
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{Repeatedly(AfterFirst(AfterCount(100), AfterProcessingTime(time.Minute))), "Repeatedly(AfterFirst(AfterCount(100), AfterProcessingTime(1m0s)))"},
		{PastEndOfWindow().WithEarlyFirings(AfterProcessingTime(time.Second).AlignedTo()).WithLateFirings(Never()), "PastEndOfWindow().WithEarlyFirings(AfterProcessingTime(1s).AlignedTo()).WithLateFirings(Never())"},
		{OrFinally(AfterEach(AfterCount(1), AfterAll(AfterCount(2), PastEndOfWindow())), Never()), "OrFinally(AfterEach(AfterCount(1), AfterAll(AfterCount(2), PastEndOfWindow())), Never())"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%s, want %s", got, c.want)
		}
		if err := Of(c.e).Validate(); err != nil {
			t.Errorf("%s: %v", c.want, err)
		}
	}
	for _, bad := range []Expr{AfterCount(0), AfterProcessingTime(0), AfterFirst(), AfterCount(2).WithEarlyFirings(Never()), Repeatedly(AfterCount(-1))} {
		if Of(bad).Validate() == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if Of(AfterCount(2)).EarlyCount(5).Validate() == nil || Of(AfterCount(2)).LateNone().Validate() == nil {
		t.Error("a composite trigger with struct settings accepted")
	}
	if Of(AfterCount(2)).ClosingIfChanged().Validate() != nil {
		t.Error("closing refused")
	}
	tr := Of(Repeatedly(AfterProcessingTime(time.Minute)))
	if !tr.UsesProcessingTime() || !tr.HasEarly() || Of(PastEndOfWindow()).UsesProcessingTime() || Of(PastEndOfWindow()).HasEarly() {
		t.Error("UsesProcessingTime or HasEarly")
	}
}

// Beam's onMerge, node by node: counts add up, the earliest deadline
// holds, a count finished in any part is finished, an end of window is
// finished only if it is in all parts and the merged window's end is
// reached (AfterPaneStateMachine, AfterDelayFromFirstElementStateMachine
// and AfterWatermarkStateMachine.FromEndOfWindow onMerge).
func TestCompositeOnMerge(t *testing.T) {
	p := Compile(AfterFirst(AfterCount(5), AfterProcessingTime(time.Second), PastEndOfWindow()), true)
	a, b := p.New(), p.New()
	c := &Ctx{Now: 100}
	p.OnElement(a, c)
	c.Now = 300
	p.OnElement(b, c)
	p.OnElement(b, c)
	a[3].Finished = true // its end of window fired
	m := p.New()
	c.Timers = c.Timers[:0]
	p.OnMerge(m, [][]NodeState{a, b}, c)
	if m[1].Count != 3 || m[2].Deadline != 1100 || m[3].Finished || m[0].Finished || len(c.Timers) != 1 || c.Timers[0] != 1100 {
		t.Errorf("merged %+v, timers %v", m, c.Timers)
	}
	b[3].Finished = true
	c.EndReached = true
	p.OnMerge(m, [][]NodeState{a, b}, c)
	if !m[3].Finished || !m[0].Finished {
		t.Errorf("merged past the end %+v", m)
	}
}
