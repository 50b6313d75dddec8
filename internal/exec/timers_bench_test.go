package exec

import (
	"testing"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/window"
)

// BenchmarkTimerQueue is the event-time timer path where the heap of
// instants does the most work: every timer is set at an instant of its own,
// up to a second after the current time (as session gaps and early
// firings spread them), and the watermark, one millisecond per timer, fires
// every instant it passes. About 1000 instants are pending at a time; the
// steady state allocates nothing.
func BenchmarkTimerQueue(b *testing.B) {
	q := newTimerQueue[uint64]()
	var now mtime.Time
	rnd := uint64(1)
	fired := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rnd = rnd*6364136223846793005 + 1442695040888963407
		at := now + 1 + mtime.Time(rnd>>54) // 1 to 1024 ms ahead
		q.add(at, newTimer(uint64(i), window.Window{}, uint64(i), tOnTime))
		now++
		for {
			t, ok := q.next()
			if !ok || t > now {
				break
			}
			_, bucket := q.pop()
			fired += len(bucket)
			q.recycle(bucket)
		}
	}
	if fired == 0 {
		b.Fatal("no timer fired")
	}
}
