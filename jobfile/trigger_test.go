package jobfile

import (
	"strings"
	"testing"
)

// Every form of a composite trigger reads into the trigger the Go API
// builds; the existing forms are read as before (TestParse and the errors
// of TestErrors).
func TestCompositeTriggers(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"{repeatedly: {after_first: [{count: 100}, {processing_time: 1m}]}}",
			"Of(Repeatedly(AfterFirst(AfterCount(100), AfterProcessingTime(1m0s))))"},
		{"{after_watermark: {early: {processing_time: 10s, aligned: true}, late: {count: 10}}, closing: if_changed}",
			"Of(PastEndOfWindow().WithEarlyFirings(AfterProcessingTime(10s).AlignedTo()).WithLateFirings(AfterCount(10))).Closing(FireIfNonEmpty)"},
		{"{after_watermark: {}}", "Of(PastEndOfWindow())"},
		{"{or_finally: {trigger: {repeatedly: {count: 2}}, until: {after_watermark: {}}}}",
			"Of(OrFinally(Repeatedly(AfterCount(2)), PastEndOfWindow()))"},
		{"{after_each: [{count: 1}, {repeatedly: {count: 5}}]}", "Of(AfterEach(AfterCount(1), Repeatedly(AfterCount(5))))"},
		{"{after_all: [{count: 3}, {processing_time: 30s}]}", "Of(AfterAll(AfterCount(3), AfterProcessingTime(30s)))"},
		{"{never: true}", "Of(Never())"},
		{"{after_watermark: {late: {processing_time: 1m}}, closing: if_changed}",
			"Of(PastEndOfWindow().WithLateFirings(AfterProcessingTime(1m0s))).Closing(FireIfNonEmpty)"},
	} {
		j, err := Parse([]byte(minimal+"trigger: "+c.yaml+"\n"), "job.yaml", "/d")
		if err != nil {
			t.Errorf("%s: %v", c.yaml, err)
			continue
		}
		if got := j.Window.Trigger.String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.yaml, got, c.want)
		}
		if err := j.Window.Trigger.Validate(); err != nil {
			t.Errorf("%s: %v", c.yaml, err)
		}
	}
	// The trigger of issue 52's one emission, in words.
	j, err := Parse([]byte(minimal+"trigger: {after_watermark: {late: {processing_time: 1m}}, closing: if_changed}\n"), "job.yaml", "/d")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := j.Window.Trigger.Describe(), "at the watermark; late, each time: 1m0s of processing time after the first event of a pane; closing: only if an event came since the last pane"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// A composite trigger's mistakes are one line each, naming the field.
func TestCompositeTriggerErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"{after_first: [{count: 100}, {count: 0}]}", `job.yaml:7: trigger.after_first[1].count: expected a count of events of at least 1, got 0`},
		{"{after_first: [{count: 100}, {cuont: 2}]}", `job.yaml:7: trigger.after_first[1].cuont: unknown field "cuont" (did you mean "count"?)`},
		{"{after_first: []}", `job.yaml:7: trigger.after_first: expected a list of triggers, such as [{count: 100}, {processing_time: 1m}]`},
		{"{after_first: [3]}", `job.yaml:7: trigger.after_first[0]: expected a mapping of fields (name: value)`},
		{"{after_each: [{}]}", `job.yaml:7: trigger.after_each[0]: expected a trigger: one of count, processing_time, never, after_watermark, after_each, after_first, after_all, repeatedly or or_finally`},
		{"{repeatedly: {count: 2, processing_time: 1m}}", `job.yaml:7: trigger.repeatedly.processing_time: a trigger is one of count, processing_time, never, after_watermark, after_each, after_first, after_all, repeatedly or or_finally; count is given too`},
		{"{repeatedly: {processing_time: 0s}}", `job.yaml:7: trigger.repeatedly.processing_time: expected a positive duration such as 1m`},
		{"{repeatedly: {count: 2, aligned: true}}", `job.yaml:7: trigger.repeatedly.aligned: aligned goes with processing_time`},
		{"{or_finally: {trigger: {count: 2}}}", `job.yaml:7: trigger.or_finally.until: missing: or_finally takes a trigger and an until trigger, such as {trigger: {repeatedly: {count: 10}}, until: {count: 1000}}`},
		{"{after_watermark: {early: {count: 2}, lat: {count: 1}}}", `job.yaml:7: trigger.after_watermark.lat: unknown field "lat" (did you mean "late"?)`},
		{"{after_watermark: {late: {count: x}}}", `job.yaml:7: trigger.after_watermark.late.count: expected a whole number, got "x"`},
		{"{never: false}", `job.yaml:7: trigger.never: write never: true (a trigger that never fires), or leave it out`},
		{"{count: 10, early: 1m}", `job.yaml:7: trigger.early: goes with the early and late fields, not with a composite trigger: write after_watermark: {early: ..., late: ...} instead`},
	} {
		_, err := Parse([]byte(minimal+"trigger: "+c.yaml+"\n"), "job.yaml", "/d")
		if err == nil {
			t.Errorf("%s accepted", c.yaml)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.yaml, err, c.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans several lines", c.yaml)
		}
	}
}
