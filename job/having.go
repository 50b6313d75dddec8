package job

import (
	"github.com/expr-lang/expr/vm"

	"github.com/weirstream/weir/window"
)

// havingExpr is a compiled `having` expression (expr-lang/expr). It sees every
// aggregate by name (a number, NaN when the pane has none), and the pane's
// key, revision, timing ("EARLY", "ON_TIME", "LATE") and final flag.
type havingExpr struct {
	prog *vm.Program
	env  map[string]any
	vm   vm.VM
}

func havingEnv(aggs []Aggregate) map[string]any {
	env := map[string]any{
		"key": "", "revision": 0, "timing": "", "final": false,
	}
	for _, a := range aggs {
		env[a.Name] = 0.0
	}
	return env
}

// keep evaluates the expression for a pane. A retraction is judged by the
// values it withdraws, so it is written exactly when the pane it withdraws
// was.
func (h *havingExpr) keep(aggs []Aggregate, p *window.Pane[string, []outVal], key any) (bool, error) {
	for k, a := range aggs {
		h.env[a.Name] = p.Value[k].number()
	}
	h.env["key"] = key
	h.env["revision"] = p.Revision
	h.env["timing"] = p.Timing.String()
	h.env["final"] = p.Final
	out, err := h.vm.Run(h.prog, h.env)
	if err != nil {
		return false, err
	}
	b, _ := out.(bool)
	return b, nil
}
