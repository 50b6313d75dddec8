package trigger

import (
	"testing"
	"time"
)

func TestBuildersAndString(t *testing.T) {
	tests := []struct {
		t    Trigger
		want string
	}{
		{AfterWatermark(), "AfterWatermark().Late(AfterCount(1))"},
		{AfterWatermark().EarlyEvery(time.Minute, true).LateNone(), "AfterWatermark().Early(AlignedDelay(1m0s)).Late(Never())"},
		{AfterWatermark().EarlyEvery(2*time.Second, false).EarlyCount(5).LateThrottled(time.Minute),
			"AfterWatermark().Early(UnalignedDelay(2s)).Early(AfterCount(5)).Late(Throttled(1m0s))"},
		{OnClose(), "OnClose()"},
		{AfterWatermark().LateNone().ClosingIfChanged(), "AfterWatermark().Late(Never()).Closing(FireIfNonEmpty)"},
		{OnClose().ClosingIfChanged(), "OnClose().Closing(FireIfNonEmpty)"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.t, got, tt.want)
		}
		if err := tt.t.Validate(); err != nil {
			t.Error(err)
		}
	}
	if !AfterWatermark().EarlyCount(3).HasEarly() || OnClose().EarlyCount(3).HasEarly() {
		t.Error("HasEarly")
	}
	if AfterWatermark().UsesProcessingTime() || !AfterWatermark().LateThrottled(time.Second).UsesProcessingTime() {
		t.Error("UsesProcessingTime")
	}
}

func TestValidate(t *testing.T) {
	for _, tr := range []Trigger{{EarlyDelay: -1}, {EarlyElements: -1}, {Late: LateThrottled}, {Late: 9}, {Closing: 2}} {
		if tr.Validate() == nil {
			t.Errorf("%+v accepted", tr)
		}
	}
}

// Describe says what a job file's trigger does in words, not as Go code.
func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		t    Trigger
		want string
	}{
		{AfterWatermark(), "at the watermark; late: a pane per late event"},
		{AfterWatermark().EarlyEvery(time.Minute, true).LateThrottled(30 * time.Second), "at the watermark; early every 1m0s of processing time, aligned to the clock; late: at most a pane per 30s"},
		{AfterWatermark().EarlyEvery(10*time.Second, false).LateNone(), "at the watermark; early every 10s of processing time after the first event of a pane; late: none"},
		{OnClose(), "once, when the window closes (final_only)"},
		{AfterWatermark().ClosingIfChanged(), "at the watermark; late: a pane per late event; closing: only if an event came since the last pane"},
	} {
		if got := c.t.Describe(); got != c.want {
			t.Errorf("%s: %q, want %q", c.t, got, c.want)
		}
	}
}
