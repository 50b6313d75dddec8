package engine_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// versionDecoder reads "key event-time arrival id version value".
type versionDecoder struct{}

func (versionDecoder) Decode(r *connector.Record, d *engine.Decoded[string, int]) {
	f := strings.Fields(string(r.Value))
	ts, _ := strconv.ParseInt(f[1], 10, 64)
	at, _ := strconv.ParseInt(f[2], 10, 64)
	v, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		d.Kind, d.Reason = engine.Rejected, "bad_version"
		return
	}
	n, _ := strconv.Atoi(f[5])
	d.Kind, d.Key, d.Time, d.Arrival, d.ID, d.Version, d.Value = engine.Event, f[0], mtime.Time(ts), mtime.Time(at), []byte(f[3]), v, n
}

// keepInt is what a versioned head keeps of an event of the test: its key
// and value.
var keepInt = &engine.Versions[string, int]{
	Keep: func(b []byte, k string, v int) []byte { return enc.AppendVarint(enc.AppendString(b, k), int64(v)) },
	Back: func(b []byte) (string, int, error) {
		d := enc.NewDecoder(b)
		k, v := d.String(), d.Varint()
		return k, int(v), d.Err()
	},
}

// runVersioned runs recs through a versioned head into sums in tumbling
// windows of a second, with 2 s of allowed lateness, and returns the panes,
// the late events and the head's counts.
func runVersioned(t *testing.T, agg aggregate.Func[int, int64, int64], strategy window.Strategy, recs ...string) (string, engine.Counts, error) {
	t.Helper()
	e, err := engine.New(engine.Config{Name: "versions"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := engine.NewWindow(e, engine.WindowConfig[string, int, int64, int64]{
		Name: "window", Strategy: strategy, Watermark: watermark.BoundedOutOfOrderness(0), Agg: agg, Parallelism: 2,
		Hash: func(s string) uint64 { return uint64(len(s)) }, Codec: countCodec{},
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	w.Panes.Subscribe(engine.Func[window.Pane[string, int64]]{OnPush: func(p window.Pane[string, int64]) {
		mu.Lock()
		fmt.Fprintf(&out, "%s [%d,%d) #%d %s %d\n", p.Key, p.Window.Start, p.Window.End, p.Revision, p.Timing, p.Value)
		mu.Unlock()
	}, OnSignal: func(engine.Signal) {}})
	w.Late.Subscribe(engine.Func[window.LateEvent[string, int]]{OnPush: func(l window.LateEvent[string, int]) {
		mu.Lock()
		fmt.Fprintf(&out, "aside %s %d %d %s\n", l.Key, l.Timestamp, l.Value, l.Reason)
		mu.Unlock()
	}, OnSignal: func(engine.Signal) {}})
	h, err := engine.NewHead(e, engine.HeadConfig[string, int]{Name: "head", Decoder: versionDecoder{}, Window: w,
		Dedup: state.NewMemoryDedup(mtime.Millis(time.Hour)), Versions: keepInt})
	if err != nil {
		return "", engine.Counts{}, err
	}
	src := &lines{bounded: true, more: make(chan struct{}, 1)}
	src.add(recs...)
	if err := e.AddSource("mem", src, h); err != nil {
		t.Fatal(err)
	}
	e.OnSignal(h)
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.String(), e.StatusAfterRun().Counts, nil
}

// Of two events with one id, the higher version replaces the lower in the
// results: the earlier version is withdrawn from its window, before it
// fires or with a late pane after, and the new one added, to its own key
// and window; the same version again is a duplicate; a lower version, or a
// revision whose earlier version's window is closed, is set aside.
func TestVersionedEvents(t *testing.T) {
	tumbling := window.NewStrategy(window.TumblingWindows(time.Second)).WithLateness(2 * time.Second)
	got, c, err := runVersioned(t, aggregate.Sum(func(v int) int64 { return int64(v) }), tumbling,
		"a 100 100 o1 1 5",
		"a 200 200 o2 1 7",
		"a 100 300 o1 1 5",     // the same version: a duplicate
		"a 600 400 o1 2 9",     // a revision before the firing: 5 out, 9 in
		"a 1500 1500 o3 1 1",   // [0,1000) fires: 9 + 7
		"b 300 1600 o2 2 7",    // o2 moves to key b: a late pane of each
		"a 600 1700 o1 1 5",    // older than the version applied
		"a 1200 1800 o1 3 4",   // o1 moves to [1000,2000)
		"a 3500 3500 o4 1 1",   // [0,1000) closes (999 + 2000 < 3500), [1000,2000) fires
		"a 1300 3600 o2 3 100", // o2's version in [0,1000) cannot be withdrawn
		"a 3600 3700 o5 x 1",   // no version: quarantined
	)
	if err != nil {
		t.Fatal(err)
	}
	want := "a [0,1000) #1 ON_TIME 16\n" +
		"a [0,1000) #2 LATE 9\n" + // o2 withdrawn
		"b [0,1000) #1 LATE 7\n" + // and added to b
		"aside a 600 5 superseded\n" +
		"a [0,1000) #3 LATE 0\n" + // o1 withdrawn
		"a [1000,2000) #1 ON_TIME 5\n" + // o3 and o1's version 3, at watermark 3500
		"a [0,1000) #4 LATE 0\n" + // the closing panes of [0,1000)
		"b [0,1000) #2 LATE 7\n" +
		"aside a 1300 100 revision_too_late\n" +
		"a [1000,2000) #2 LATE 5\n" + // the end
		"a [3000,4000) #1 ON_TIME 1\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	a := c.Accounting
	if a.Read != 11 || a.Accepted != 7 || a.Duplicates != 1 || a.Superseded != 1 || a.RevisionsTooLate != 1 || a.Quarantined != 1 || !a.Balanced() || c.Revisions != 3 {
		t.Errorf("counts %+v, revisions %d", a, c.Revisions)
	}
}

// A head refuses versions whose window stage cannot withdraw an event: an
// aggregate without an inverse, or session windows.
func TestVersionsNeedWithdrawal(t *testing.T) {
	tumbling := window.NewStrategy(window.TumblingWindows(time.Second))
	maxAgg := aggregate.Of(func() int64 { return 0 }, func(a int64, v int) int64 { return max(a, int64(v)) },
		func(a, b int64) int64 { return max(a, b) }, func(a int64) int64 { return a })
	if _, _, err := runVersioned(t, maxAgg, tumbling); err == nil || !strings.Contains(err.Error(), "withdraw") {
		t.Errorf("an aggregate without an inverse: %v", err)
	}
	sessions := window.NewStrategy(window.SessionWindows(time.Second))
	if _, _, err := runVersioned(t, aggregate.Count[int](), sessions); err == nil || !strings.Contains(err.Error(), "withdraw") {
		t.Errorf("sessions: %v", err)
	}
}
