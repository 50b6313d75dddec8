package engine_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// backfill is a live source of two partitions read at the same pace, as a
// Kafka source reads them, both a backfill of the last day: partition 0 has
// ten times the events of partition 1, so that partition 1 runs ahead in
// event time. It reports its backlog and can pause a
// partition.
type backfill struct {
	mu     sync.Mutex
	recs   [2][]string
	next   [2]int
	paused [2]bool
	sent   bool
	pauses int
}

func (s *backfill) Open(context.Context, []byte) error { return nil }
func (s *backfill) Close() error                       { return nil }

func (s *backfill) Read(ctx context.Context, b *connector.Batch) error {
	if !s.sent {
		s.sent = true
		b.Partitions = []connector.Partition{{Name: "old"}, {Name: "new"}}
		return nil
	}
	select { // a fetch takes 10 ms
	case <-time.After(10 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next[0] == len(s.recs[0]) && s.next[1] == len(s.recs[1]) {
		return io.EOF // the backfill is done: the job ends, every window fires
	}
	for p := range 2 {
		if s.paused[p] {
			continue
		}
		for n := 0; n < 5 && s.next[p] < len(s.recs[p]); n++ {
			b.Records = append(b.Records, connector.Record{Value: []byte(s.recs[p][s.next[p]]), Partition: p, Arrival: mtime.MinTime})
			s.next[p]++
		}
	}
	return nil
}

func (s *backfill) Report() []connector.PartitionReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []connector.PartitionReport
	for p := range 2 {
		left := int64(len(s.recs[p]) - s.next[p])
		out = append(out, connector.PartitionReport{Partition: p, Name: fmt.Sprint(p), Backlog: left, CaughtUp: left == 0})
	}
	return out
}

func (s *backfill) Pause(ps []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		s.paused[p] = true
		s.pauses++
	}
}

func (s *backfill) Resume(ps []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range ps {
		s.paused[p] = false
	}
}

// alignedRun replays the backfill to its end and returns the most windows
// open at once and the panes written.
func alignedRun(t *testing.T, maxDrift time.Duration) (peak int64, panes string, pauses int) {
	synctest.Test(t, func(t *testing.T) {
		day := mtime.Now().Add(-24 * 3600_000)
		src := &backfill{}
		for i := range 6000 {
			// Partition 0: an event every 14.4 s of the last day; partition
			// 1: every 144 s. Ten keys each.
			src.recs[0] = append(src.recs[0], fmt.Sprintf("k%d %d", i%10, day+mtime.Time(i)*14_400))
			if i%10 == 0 {
				src.recs[1] = append(src.recs[1], fmt.Sprintf("k%d %d", i/10%10, day+mtime.Time(i)*14_400))
			}
		}
		e, err := engine.New(engine.Config{Name: "backfill", Live: true})
		if err != nil {
			t.Fatal(err)
		}
		w, err := engine.NewWindow(e, engine.WindowConfig[string, int, int64, int64]{
			Name: "window", Strategy: window.NewStrategy(window.TumblingWindows(time.Minute)),
			Watermark: watermark.BoundedOutOfOrderness(0).WithInterval(100 * time.Millisecond).WithMaxDrift(maxDrift),
			Agg:       aggregate.Count[int](), Parallelism: 1, Hash: func(s string) uint64 { return uint64(len(s)) }, Codec: countCodec{},
		})
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		n, _ := engine.NewSink(e, "output", sink)
		w.Panes.Subscribe(n)
		h, err := engine.NewHead(e, engine.HeadConfig[string, int]{Name: "head", Decoder: decoder{}, Window: w})
		if err != nil {
			t.Fatal(err)
		}
		e.AddSource("topic", src, h)
		e.OnSignal(h)
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		for running := true; running; {
			time.Sleep(50 * time.Millisecond)
			synctest.Wait()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				running = false
			default:
				st := e.Control().Status(context.Background(), time.Second)
				peak = max(peak, st.OpenWindows)
			}
		}
		panes, pauses = sink.String(), src.pauses
	})
	return peak, panes, pauses
}

// Watermark alignment (max_drift): a partition replaying old data keeps the
// combined watermark a day behind, so every window of the other stays open;
// with max_drift the partition that runs ahead is paused until the other
// catches up, and the windows open at once stay bounded. The panes are the
// same.
func TestWatermarkAlignment(t *testing.T) {
	peakFree, panesFree, pausesFree := alignedRun(t, 0)
	peakAligned, panesAligned, pauses := alignedRun(t, 10*time.Minute)
	t.Logf("windows open at most: %d without alignment, %d with max_drift 10m (%d pauses)", peakFree, peakAligned, pauses)
	if pausesFree != 0 || pauses == 0 {
		t.Errorf("pauses: %d without alignment, %d with", pausesFree, pauses)
	}
	// Without: partition 1's windows of the whole day pile up behind
	// partition 0's watermark; with: about the drift's worth of them, and
	// the few windows partition 0 has open.
	// (The first report comes 200 ms in: partition 1 is 4 hours ahead by
	// then, and those windows wait for partition 0.)
	if peakFree < 500 || peakAligned > 150 {
		t.Errorf("windows open at most: %d without alignment, %d with", peakFree, peakAligned)
	}
	// The same panes, in another order: the partitions are read at other paces.
	free, aligned := strings.Split(panesFree, "\n"), strings.Split(panesAligned, "\n")
	slices.Sort(free)
	slices.Sort(aligned)
	if !slices.Equal(free, aligned) || len(free) < 6000 {
		t.Errorf("the panes differ: %d and %d", len(free), len(aligned))
	}
}
