package exec

import (
	"testing"
	"time"

	"github.com/weirstream/weir/window"
)

func wd1(ts int64) upgradeStep { return upgradeStep{ts: ts, wm: -1, proc: -1, withdraw: true} }

// A withdrawal takes an event back out of its window: before the window
// fires, the on-time pane never counts it; after, the window fires a late
// pane without it, as a late event would; once the window is closed,
// nothing changes.
func TestWithdraw(t *testing.T) {
	bothBackends(t, func(t *testing.T, pebble bool) {
		s := window.NewStrategy(window.TumblingWindows(10 * time.Second)).WithLateness(30 * time.Second)
		got, _ := runUpgrade(t, pebble, s, nil, false, []upgradeStep{
			ev1(1), ev1(5), ev1(7), wd1(7), // withdrawn before the firing
			ev1(12), wm1(15), // [0,10) on time with 2
			wd1(5), ev1(13), // withdrawn late: a late pane with 1; 13 joins [10,20)
			wm1(45), // [0,10) closes
			wd1(1),  // too late to withdraw: nothing
			wm1(100),
		}, false)
		want := "a [0,10) #1 ON_TIME final=false n=2\n" +
			"a [0,10) #2 LATE final=false n=1\n" +
			"a [10,20) #1 ON_TIME final=false n=2\n" +
			"a [0,10) #3 LATE final=true n=1\n" +
			"a [10,20) #2 LATE final=true n=2\n"
		if got != want {
			t.Errorf("got:\n%s\nwant:\n%s", got, want)
		}
	})
}
