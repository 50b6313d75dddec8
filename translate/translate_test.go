package translate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// The restore shape follows from the plan by one rule: a part for each
// node that holds state, named by its identity, in the order of the plan;
// an aggregation's de-duplication before its windows.
func TestShape(t *testing.T) {
	g := &plan.Graph{}
	g.Add(&plan.Node{ID: plan.ID{Kind: plan.KindSource, Name: "input"}, Label: "source", Op: &plan.Source{Reads: "orders.jsonl"}})
	g.Add(&plan.Node{ID: plan.ID{Kind: plan.KindAggregation, Name: "window"}, Label: "window", Inputs: []plan.Input{{From: plan.ID{Kind: plan.KindSource, Name: "input"}}},
		Op: &plan.Aggregation{Strategy: window.NewStrategy(window.TumblingWindows(time.Minute)).WithLateness(time.Minute), Watermark: watermark.ScriptedWatermark(), WatermarkFrom: "wm",
			Layout: []plan.Setting{{Field: "key", Value: "card"}}, Values: []plan.Setting{{Field: plan.AggregatePrefix + "n", Value: "count"}},
			Settings: []plan.Setting{ParallelismSetting(2)}, Format: 3, Dedup: &plan.Dedup{Field: "id", Horizon: 3_600_000}}})
	g.Add(&plan.Node{ID: plan.ID{Kind: plan.KindTransform, Name: "having"}, Inputs: []plan.Input{{From: plan.ID{Kind: plan.KindAggregation, Name: "window"}}}, Op: &plan.Transform{Does: "having n > 1"}})
	g.Add(&plan.Node{ID: plan.ID{Kind: plan.KindSink, Name: "results:file:out.jsonl"}, Label: "output", Inputs: []plan.Input{{From: plan.ID{Kind: plan.KindTransform, Name: "having"}}},
		Op: &plan.Sink{Writes: "out.jsonl"}})
	b, _ := json.Marshal(Shape(g))
	want := `{"parts":[{"name":"source:input","label":"source","kind":"position","settings":[{"field":"source","value":"orders.jsonl"}]},` +
		`{"name":"head","label":"de-duplication","kind":"dedup","layout":[{"field":"id","value":"id"}],"settings":[{"field":"dedup_horizon","value":"1h0m0s"}]},` +
		`{"name":"window","label":"window","kind":"windows","format":3,"layout":[{"field":"window","value":"tumbling 1m0s"},{"field":"key","value":"card"}],"values":[{"field":"aggregates.n","value":"count"}],"mode":"accumulating","settings":[{"field":"watermark","value":"from the field wm"},{"field":"allowed_lateness","value":"1m0s"},{"field":"trigger","value":"AfterWatermark().Late(AfterCount(1))"},{"field":"parallelism","value":"2"}]},` +
		`{"name":"sink:results:file:out.jsonl","label":"output","kind":"commits","settings":[{"field":"output","value":"out.jsonl"}]}]}`
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
}
