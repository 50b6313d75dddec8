package window

import (
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir/mtime"
)

func ws(ws []Window) string {
	s := ""
	for i, w := range ws {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("[%d,%d)", w.Start, w.End)
	}
	return s
}

func TestAssign(t *testing.T) {
	tests := []struct {
		name string
		a    Assigner
		t    mtime.Time
		want string
	}{
		{"tumbling at start", Tumbling{Size: 60}, 120, "[120,180)"},
		{"tumbling inside", Tumbling{Size: 60}, 179, "[120,180)"},
		{"tumbling at end belongs to next", Tumbling{Size: 60}, 180, "[180,240)"},
		{"tumbling negative time", Tumbling{Size: 60}, -1, "[-60,0)"},
		{"tumbling offset", Tumbling{Size: 60, Offset: 15}, 14, "[-45,15)"},
		{"tumbling offset at start", Tumbling{Size: 60, Offset: 15}, 15, "[15,75)"},
		{"tumbling negative offset", Tumbling{Size: 60, Offset: -15}, 50, "[45,105)"},
		{"sliding every window containing t", Sliding{Size: 30, Slide: 10}, 25, "[0,30) [10,40) [20,50)"},
		{"sliding at a slide boundary", Sliding{Size: 30, Slide: 10}, 30, "[10,40) [20,50) [30,60)"},
		{"sliding size not a multiple of slide", Sliding{Size: 15, Slide: 7}, 14, "[0,15) [7,22) [14,29)"},
		{"sliding size not a multiple, later", Sliding{Size: 15, Slide: 7}, 15, "[7,22) [14,29)"},
		{"sliding equals tumbling", Sliding{Size: 10, Slide: 10}, 19, "[10,20)"},
		{"sliding offset", Sliding{Size: 20, Slide: 10, Offset: 5}, 4, "[-15,5) [-5,15)"},
		{"session proto-window", Session{Gap: 5}, 100, "[100,105)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.a.Validate(); err != nil {
				t.Fatal(err)
			}
			got := ws(tt.a.Assign(tt.t, nil))
			if got != tt.want {
				t.Errorf("Assign(%d) = %s, want %s", tt.t, got, tt.want)
			}
			for _, w := range tt.a.Assign(tt.t, nil) {
				if !w.Contains(tt.t) {
					t.Errorf("%v does not contain %d", w, tt.t)
				}
			}
		})
	}
	g := Global{}.Assign(42, nil)
	if len(g) != 1 || !g[0].IsGlobal() || g[0].MaxTimestamp() != mtime.MaxTime {
		t.Errorf("global = %v", g)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		a    Assigner
		want string
	}{
		{Tumbling{}, "size must be a positive duration"},
		{Tumbling{Size: 10, Offset: 10}, "offset 10ms must be shorter than the size 10ms"},
		{Sliding{Size: 60000, Slide: 300000}, "slide 5m0s is larger than the size 1m0s: events between windows would be lost"},
		{Sliding{Size: 10}, "slide must be a positive duration"},
		{Session{}, "gap must be a positive duration"},
	}
	for _, tt := range tests {
		err := tt.a.Validate()
		if err == nil || err.Error() != tt.want {
			t.Errorf("%v.Validate() = %v, want %q", tt.a, err, tt.want)
		}
	}
	if err := SlidingWindows(10*time.Minute, time.Minute).Validate(); err != nil {
		t.Error(err)
	}
}

func TestOverlap(t *testing.T) {
	a := Window{0, 10}
	for _, tt := range []struct {
		b    Window
		want bool
	}{{Window{5, 15}, true}, {Window{10, 20}, false}, {Window{-5, 0}, false}, {Window{-5, 1}, true}, {Window{2, 3}, true}} {
		if got := Overlap(a, tt.b); got != tt.want {
			t.Errorf("Overlap(%v, %v) = %v", a, tt.b, got)
		}
	}
}

func TestStrategyValidate(t *testing.T) {
	s := NewStrategy(TumblingWindows(time.Minute)).WithLateness(-time.Second)
	if err := s.Validate(); err == nil || err.Error() != "allowed lateness must not be negative" {
		t.Errorf("got %v", err)
	}
	if err := (Strategy{}).Validate(); err == nil {
		t.Error("no assigner accepted")
	}
}
