package job

import (
	"github.com/weirstream/weir/expression"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/window"
)

// havingExpr is a job's compiled `having` expression (jobfile.Having),
// evaluated over its panes.
type havingExpr struct{ *jobfile.Having }

// compileHaving compiles a having expression over a job's aggregates.
func compileHaving(h string, aggs []jobfile.Aggregate) (*havingExpr, error) {
	c, err := jobfile.CompileHaving(h, aggs)
	if err != nil {
		return nil, err
	}
	return &havingExpr{c}, nil
}

// keep evaluates the expression for a pane: it keeps the pane when the
// expression is true (compiled as a condition, it is a bool; any other
// value would be false, as on expr's machine). A retraction is judged by the values it
// withdraws, so it is written exactly when the pane it withdraws was.
func (h *havingExpr) keep(aggs []jobfile.Aggregate, p *window.Pane[string, []outVal], key string) (bool, error) {
	v := h.Vars
	for k := range aggs {
		v.SetNumber(h.Aggs[k], p.Value[k].number())
	}
	v.SetString(h.Key, key)
	v.SetInt(h.Revision, int64(p.Revision))
	v.SetString(h.Timing, p.Timing.String())
	v.SetBool(h.Final, p.Final)
	r, err := h.Prog.Eval(v)
	return r.Kind == expression.Bool && r.Bool, err
}
