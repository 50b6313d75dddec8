package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

func src(name string) *Node {
	return &Node{ID: ID{KindSource, name}, Op: &Source{Reads: name + ".jsonl"}}
}

func agg(name string, in ...Input) *Node {
	return &Node{ID: ID{KindAggregation, name}, Inputs: in, Op: &Aggregation{
		Strategy: window.NewStrategy(window.TumblingWindows(time.Minute)), Watermark: watermark.BoundedOutOfOrderness(2 * time.Second),
		Layout: []Setting{{"key", "card"}}, Values: []Setting{{AggregatePrefix + "n", "count"}}}}
}

func sink(name string, in ...Input) *Node {
	return &Node{ID: ID{KindSink, name}, Inputs: in, Op: &Sink{Writes: name}}
}

// A valid plan: one source feeding two aggregations (fan-out), whose panes
// meet in one sink (fan-in), and the late events of one in another.
func TestValidPlanAndItsText(t *testing.T) {
	in := Input{From: ID{KindSource, "orders"}}
	g := &Graph{Name: "fraud"}
	g.Add(src("orders"))
	g.Add(agg("per-card", in))
	g.Add(agg("per-shop", in))
	g.Add(sink("alerts", Input{From: ID{KindAggregation, "per-card"}}, Input{From: ID{KindAggregation, "per-shop"}}))
	g.Add(sink("late", Input{From: ID{KindAggregation, "per-card"}, Port: Late}))
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := len(g.Consumers(ID{KindSource, "orders"}, Main)); got != 2 {
		t.Errorf("the source feeds %d nodes", got)
	}
	want := `plan of fraud: 5 nodes
  source       orders                           orders.jsonl
  aggregation  per-card  <- orders              tumbling 1m0s by card: n=count; watermark delay 2s, every 200ms; lateness 0s; accumulating
  aggregation  per-shop  <- orders              tumbling 1m0s by card: n=count; watermark delay 2s, every 200ms; lateness 0s; accumulating
  sink         alerts    <- per-card, per-shop  alerts
  sink         late      <- per-card (late)     late
`
	if got := g.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Every mistake of a plan is an error naming its node.
func TestInvalidPlans(t *testing.T) {
	in := Input{From: ID{KindSource, "orders"}}
	for _, c := range []struct {
		name  string
		nodes []*Node
		want  string
	}{
		{"no sink", []*Node{src("orders"), agg("a", in)}, "plan: no sink: its results would go nowhere"},
		{"no source", []*Node{sink("s", Input{From: ID{KindAggregation, "a"}})}, "plan: sink s: takes its input from aggregation a, which the plan does not have"},
		{"twice", []*Node{src("orders"), src("orders"), sink("s", in)}, "plan: source orders: two nodes have this identity"},
		{"order", []*Node{src("orders"), sink("s", Input{From: ID{KindAggregation, "a"}}), agg("a", in)}, "plan: sink s: takes its input from aggregation a, which comes after it"},
		{"port", []*Node{src("orders"), sink("s", Input{From: ID{KindSource, "orders"}, Port: Late})}, "plan: sink s: takes the late of source orders, which has none"},
		{"kind", []*Node{{ID: ID{KindSink, "x"}, Op: &Source{}}, sink("s", in)}, "plan: sink x: is a sink, its operation a source"},
		{"input of a source", []*Node{src("orders"), {ID: ID{KindSource, "b"}, Inputs: []Input{in}, Op: &Source{}}, sink("s", in)}, "plan: source b: a source takes no input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &Graph{Nodes: c.nodes}
			err := g.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// The one wording of a watermark, for both front doors.
func TestDescribeWatermark(t *testing.T) {
	for _, c := range []struct {
		w    watermark.Strategy
		from string
		want string
	}{
		{watermark.BoundedOutOfOrderness(2 * time.Second), "", "delay 2s, every 200ms"},
		{watermark.BoundedOutOfOrderness(2 * time.Second).WithInterval(0).WithIdleness(time.Minute).WithMaxDrift(time.Hour), "", "delay 2s, after every event, idle after 1m0s, max drift 1h0m0s"},
		{watermark.ScriptedWatermark(), "", "scripted"},
		{watermark.ScriptedWatermark(), "wm", "from the field wm"},
		{watermark.PerfectWatermark(), "", "perfect"},
	} {
		if got := DescribeWatermark(c.w, c.from); got != c.want {
			t.Errorf("%+v: %q, want %q", c.w, got, c.want)
		}
	}
}
