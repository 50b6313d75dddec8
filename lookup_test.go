package weir_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
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

// orderTable is a table of orders' customers that does not change: an
// order's row is a function of its id, and a fifth of the orders have
// none.
var orderTable = connector.LookupFunc[string, string](func(_ context.Context, ids []string) (map[string]string, error) {
	rows := map[string]string{}
	for _, id := range ids {
		h := fnv.New32a()
		h.Write([]byte(id))
		if n := h.Sum32(); n%5 != 0 {
			rows[id] = fmt.Sprintf("customer-%d", n%97)
		}
	}
	return rows, nil
})

// lookupFile looks each event's order up in orderTable, with a cache and
// small batches, into path, exactly once; cancel, when set, is called
// after the element at stopAt was read.
func lookupFile(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	looked, _ := weir.LookupJoin(shopSource(p, evs, stopAt, cancel), func(e shop) string { return e.Order }, orderTable,
		weir.LookupCache(100, 20*time.Second), weir.LookupBatch(8, 3), weir.Named("customers"))
	lines := weir.Map(looked, func(l weir.Looked[string, shop, string]) string {
		if !l.Found {
			return fmt.Sprintf("%s %s at %d: no customer", l.Value.Kind, l.Key, l.Value.At)
		}
		return fmt.Sprintf("%s %s at %d: %s", l.Value.Kind, l.Key, l.Value.At, l.Row)
	})
	weir.SinkTo(lines, "looked", &file.Sink[string]{Path: path, ExactlyOnce: true,
		Encode: func(b []byte, s string) []byte { return append(append(b, s...), '\n') }})
	return p
}

// A lookup join stops with a savepoint and resumes from it: a checkpoint
// waits for the lookups under way, so the output is what an uninterrupted
// run writes, byte for byte, when the table does not change.
func TestLookupJoinCheckpointsAndResume(t *testing.T) {
	resumesAsUninterrupted(t, shopEvents(6000), 3000, func(out []byte) bool {
		return bytes.Count(out, []byte("no customer")) > 100 && bytes.Count(out, []byte("customer-")) > 1000
	}, lookupFile)
}
