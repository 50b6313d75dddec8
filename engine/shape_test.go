package engine

import (
	"strings"
	"testing"
)

// shapeOf is a job's shape with a window stage and a head, in which the
// settings given replace the defaults.
func shapeOf(set map[string]string) *Shape {
	v := func(field, def string) string {
		if s, ok := set[field]; ok {
			return s
		}
		return def
	}
	w := Part{Name: "window", Label: "window", Kind: StateWindows, Format: 2,
		Layout: []Setting{{Field: "window", Value: v("window", "tumbling 1m")}, {Field: "key", Value: v("key", "card")}},
		Mode:   v("mode", "accumulating"),
		Settings: []Setting{{Field: SettingLateness, Value: v(SettingLateness, "0s")}, {Field: SettingTrigger, Value: v(SettingTrigger, "AfterWatermark()")},
			{Field: "watermark", Value: v("watermark", "delay 2s")}},
	}
	for _, a := range []string{"orders", "spent", "risk"} {
		if d := v("aggregates."+a, map[string]string{"orders": "count", "spent": "sum(amount)"}[a]); d != "" {
			w.Values = append(w.Values, Setting{Field: "aggregates." + a, Value: d})
		}
	}
	parts := []Part{{Name: "source:input", Label: "source", Kind: StatePosition}}
	if id := v("id", "order_id"); id != "" {
		parts = append(parts, Part{Name: "head", Label: "de-duplication", Kind: StateDedup, Layout: []Setting{{Field: "id", Value: id}},
			Settings: []Setting{{Field: SettingHorizon, Value: v(SettingHorizon, "1h")}}})
	}
	parts = append(parts, w, Part{Name: "sink:results:file:out.jsonl", Label: "output[0]", Kind: StateCommits})
	if out := v("output[1]", ""); out != "" {
		parts = append(parts, Part{Name: "sink:results:" + out, Label: "output[1]", Kind: StateCommits})
	}
	return &Shape{Parts: parts}
}

// Every change of a job is classified by the one rule: carried over,
// carried over by a rule, started afresh, left behind, or refused.
func TestCompareShapes(t *testing.T) {
	for _, c := range []struct {
		name     string
		old, now map[string]string
		drop     []string
		want     string
	}{
		{"unchanged", nil, nil, nil, "" +
			"carries over  source          its position\n" +
			"carries over  de-duplication  its de-duplication ids\n" +
			"carries over  window          its open windows\n" +
			"carries over  output[0]       its commit record\n"},
		{"settings", nil, map[string]string{"watermark": "delay 5s", SettingLateness: "30s", SettingHorizon: "2h", SettingTrigger: "AfterWatermark().Late(Never())"}, nil, "" +
			"carries over  source            its position\n" +
			"carries over  de-duplication    its de-duplication ids\n" +
			"carries over  dedup_horizon     1h -> 2h: the ids kept expire at their event time plus the new horizon (those forgotten already stay forgotten: older events are beyond the horizon)\n" +
			"carries over  window            its open windows\n" +
			"carries over  allowed_lateness  0s -> 30s: the open windows stay open longer (those closed already stay closed)\n" +
			"carries over  trigger           AfterWatermark() -> AfterWatermark().Late(Never()): the open windows fire as the new trigger says from the restore on\n" +
			"carries over  watermark         delay 2s -> delay 5s\n" +
			"carries over  output[0]         its commit record\n"},
		{"shorter lateness", map[string]string{SettingLateness: "30s"}, nil, nil, "" +
			"carries over  source            its position\n" +
			"carries over  de-duplication    its de-duplication ids\n" +
			"carries over  window            its open windows\n" +
			"carries over  allowed_lateness  30s -> 0s: the open windows it has already passed close at the restore, with their final pane\n" +
			"carries over  output[0]         its commit record\n"},
		{"aggregates and mode", nil, map[string]string{"aggregates.risk": "max(amount)", "aggregates.orders": "", "aggregates.spent": "avg(amount)", "mode": "retracting"}, nil, "" +
			"carries over  source             its position\n" +
			"carries over  de-duplication     its de-duplication ids\n" +
			"carries over  window             its open windows\n" +
			"by rule       aggregates.spent   sum(amount) -> avg(amount): another definition: the open windows start it from zero, and their panes say it is partial\n" +
			"by rule       aggregates.risk    added: max(amount): the open windows start it from zero, and their panes say it is partial\n" +
			"by rule       aggregates.orders  removed: was count: its state in the open windows is dropped\n" +
			"by rule       mode               accumulating -> retracting: an open window's first pane after the restore retracts nothing (the pane before it was not kept); the panes after it retract as usual\n" +
			"carries over  output[0]          its commit record\n"},
		{"outputs and id", nil, map[string]string{"output[1]": "sqlite:alerts.db#alerts", "id": ""}, nil, "" +
			"carries over  source          its position\n" +
			"carries over  window          its open windows\n" +
			"carries over  output[0]       its commit record\n" +
			"restarts      output[1]       new since the checkpoint: starts afresh\n" +
			"removed       de-duplication  no longer in the job; not restored: its de-duplication ids\n"},
		{"refused", nil, map[string]string{"window": "tumbling 5m", "key": "user", "mode": "discarding", "id": "event_id"}, nil, "" +
			"carries over  source     its position\n" +
			"refused       id         order_id -> event_id: its de-duplication ids would be lost\n" +
			"refused       window     tumbling 1m -> tumbling 5m: its open windows would be lost\n" +
			"refused       key        card -> user: its open windows would be lost\n" +
			"refused       mode       accumulating -> discarding: the open windows of a discarding job hold only what came since their last pane\n" +
			"carries over  output[0]  its commit record\n"},
		{"windows dropped", nil, map[string]string{"window": "tumbling 5m", "watermark": "delay 3s"}, []string{StateWindows}, "" +
			"carries over  source          its position\n" +
			"carries over  de-duplication  its de-duplication ids\n" +
			"restarts      window          tumbling 1m -> tumbling 5m: its open windows dropped (--drop-state=windows)\n" +
			"carries over  watermark       delay 2s -> delay 3s\n" +
			"carries over  output[0]       its commit record\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := CompareShapes(shapeOf(c.old), shapeOf(c.now), c.drop)
			// In a front door's words (the command line's flag); the
			// engine's own name its setting, never a flag.
			flag := func(kind string) string { return "--drop-state=" + kind }
			if got := r.Say(flag); got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
			if own := r.Text(); strings.Contains(own, "--") || own != strings.ReplaceAll(c.want, "(--drop-state=windows)", "(DropState windows)") {
				t.Errorf("in the engine's words:\n%s", own)
			}
			if refused := len(r.Refused()) > 0; refused != (c.name == "refused") {
				t.Errorf("refused: %v", refused)
			}
		})
	}
}

// A layout field a checkpoint's shape lacks is compared as its Absent
// value, what it was before weir wrote it: a join's kind, which a
// checkpoint of before the kinds lacks, was an interval join's.
func TestLayoutFieldAbsentFromTheCheckpoint(t *testing.T) {
	join := func(layout ...Setting) *Shape {
		return &Shape{Parts: []Part{{Name: "join:j", Label: "join", Kind: StateJoin, Layout: layout}}}
	}
	key := Setting{Field: "key", Value: "card"}
	before := join(key)
	for _, c := range []struct {
		kind    string
		refused string
	}{{"interval", ""}, {"temporal", "join: interval -> temporal"}} {
		now := join(Setting{Field: "join", Value: c.kind, Absent: "interval"}, key)
		var got string
		for _, ch := range CompareShapes(before, now, nil).Refused() {
			got = ch.Field + ": " + ch.Was + " -> " + ch.Now
		}
		if got != c.refused {
			t.Errorf("%s join from a checkpoint without the kind: refused %q, want %q", c.kind, got, c.refused)
		}
		// Without Absent the field is new, and nothing is refused.
		if r := CompareShapes(before, join(Setting{Field: "join", Value: c.kind}, key), nil).Refused(); len(r) != 0 {
			t.Errorf("%s join: refused %+v", c.kind, r)
		}
	}
	if r := CompareShapes(join(Setting{Field: "join", Value: "temporal"}, key), join(Setting{Field: "join", Value: "interval", Absent: "interval"}, key), nil).Refused(); len(r) != 1 {
		t.Errorf("temporal to interval: refused %+v", r)
	}
}
