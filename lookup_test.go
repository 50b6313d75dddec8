package weir_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
)

// A lookup join's options are checked, naming the one at fault, and the
// plan says what it reads and how it caches.
func TestLookupJoinOptionsAndPlan(t *testing.T) {
	table := connector.LookupFunc[int, string](func(context.Context, []int) (map[int]string, error) { return nil, nil })
	for _, tc := range []struct {
		opt  weir.LookupOption
		want string
	}{
		{weir.LookupCache(0, time.Minute), "lookup lookup-1: LookupCache: expected a size above 0"},
		{weir.LookupBatch(10, 0), "lookup lookup-1: LookupBatch: expected at least 1 key and 1 call, got 10 and 0"},
		{weir.LookupRetries(0, time.Second), "lookup lookup-1: LookupRetries: expected at least 1 attempt"},
	} {
		p := weir.NewPipeline()
		out, _ := weir.LookupJoin(weir.FromSlice(p, []int{1}), func(v int) int { return v }, table, tc.opt)
		weir.Sink(out, func(weir.Looked[int, int, string]) error { return nil })
		if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	p := weir.NewPipeline()
	out, failed := weir.LookupJoin(weir.FromSlice(p, []int{1}), func(v int) int { return v }, table,
		weir.LookupCache(500, time.Minute), weir.Named("limits"))
	weir.Sink(out, func(weir.Looked[int, int, string]) error { return nil })
	weir.Sink(failed, func(weir.LookupFailed[int, int]) error { return nil })
	plan := p.Plan().String()
	for _, want := range []string{
		"lookup:limits <- source-0 lookup join of connector.LookupFunc[int,string]; cache 500 rows for 1m",
		"sink-2 <- lookup:limits (rejected)",
	} {
		if !strings.Contains(strings.Join(strings.Fields(plan), " "), want) {
			t.Errorf("the plan has no %q:\n%s", want, plan)
		}
	}
}
