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
	for _, tr := range []Trigger{{EarlyDelay: -1}, {EarlyElements: -1}, {Late: LateThrottled}, {Late: 9}} {
		if tr.Validate() == nil {
			t.Errorf("%+v accepted", tr)
		}
	}
}
