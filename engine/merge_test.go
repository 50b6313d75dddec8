package engine_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/textdiff"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
)

// batched is a bounded source of "key event-time" lines that cuts them
// into batches of size records, as a file source cuts its lines where its
// buffer ends.
type batched struct {
	name string
	recs []string
	size int
	next int
	// live: not a recording (connector.Recorded false), so that the
	// engine reads its batches as they come.
	live bool
}

func (s *batched) Open(_ context.Context, pos []byte) error {
	s.next = 0
	if len(pos) > 0 {
		s.next, _ = strconv.Atoi(string(pos))
	}
	return nil
}

func (s *batched) Read(_ context.Context, b *connector.Batch) error {
	if b.Partitions == nil && s.next == 0 {
		b.Partitions = []connector.Partition{{Name: s.name}}
	}
	for n := 0; n < s.size && s.next < len(s.recs); n++ {
		b.Records = append(b.Records, connector.Record{Value: []byte(s.recs[s.next]), Offset: int64(s.next + 1), Arrival: mtime.MinTime})
		s.next++
	}
	b.Position = []byte(strconv.Itoa(s.next))
	if s.next == len(s.recs) {
		return io.EOF
	}
	return nil
}

func (s *batched) Close() error { return nil }

func (s *batched) Recorded() bool { return !s.live }

// lineDecoder reads "key event-time" lines; the value is the line number.
type lineDecoder struct{}

func (lineDecoder) Decode(r *connector.Record, d *engine.Decoded[string, int64]) {
	f := strings.Fields(string(r.Value))
	ts, err := strconv.ParseInt(f[1], 10, 64)
	if len(f) != 2 || err != nil {
		d.Kind, d.Reason = engine.Rejected, "bad"
		return
	}
	d.Kind, d.Key, d.Time, d.Value = engine.Event, f[0], mtime.Time(ts), r.Offset
}

// joinRun runs an interval join of two batched sources, each read by a
// head, and returns what it emitted, one line each; with dir, it keeps
// checkpoints there and stops (with a savepoint) after batch stopAfter,
// when not 0.
func joinRun(t *testing.T, left, right *batched, dir string, stopAfter int64) string {
	t.Helper()
	out, _ := joinRunCounts(t, left, right, dir, stopAfter)
	return out
}

// joinRunCounts is joinRun, and the records each head has read in all
// (its checkpoints' and this run's).
func joinRunCounts(t *testing.T, left, right *batched, dir string, stopAfter int64) (string, [2]int64) {
	t.Helper()
	out, read, _ := joinRunDecoders(t, left, right, dir, stopAfter, 0)
	return out, read
}

// joinRunDecoders is joinRunCounts, with heads of that many decoders of
// forkingLines when not 0, which it returns.
func joinRunDecoders(t *testing.T, left, right *batched, dir string, stopAfter int64, decoders int) (string, [2]int64, [2]*forkingLines) {
	t.Helper()
	cfg := engine.Config{Name: "merge"}
	if dir != "" {
		cfg.Checkpoint = engine.Checkpointing{Dir: dir, Interval: time.Hour}
		if stopAfter > 0 {
			cfg.StopAfter = func(n int64) bool { return n == stopAfter }
		}
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	j, err := engine.NewJoin(e, engine.JoinConfig[string, int64, int64]{Name: "join",
		Spec:      engine.JoinSpec{Lower: 0, Upper: 10, Mode: engine.JoinLeftOuter},
		Watermark: watermark.BoundedOutOfOrderness(2 * time.Millisecond).WithInterval(0), Parallelism: 1,
		Hash: func(k string) uint64 { return uint64(len(k)) }, Codec: countCodec{}})
	if err != nil {
		t.Fatal(err)
	}
	j.Out.Subscribe(engine.Func[engine.Joined[string, int64, int64]]{OnPush: func(o engine.Joined[string, int64, int64]) {
		fmt.Fprintf(&out, "%s left %d right %d matched %v wm %d\n", o.Key, o.Left, o.Right, o.Matched, o.Watermark)
	}})
	j.Late.Subscribe(engine.Func[engine.JoinLate[string, int64, int64]]{OnPush: func(l engine.JoinLate[string, int64, int64]) {
		fmt.Fprintf(&out, "%s late %s %d %d wm %d\n", l.Key, l.Side, l.Left, l.Right, l.Watermark)
	}})
	var decs [2]*forkingLines
	var dec [2]engine.Decoder[string, int64]
	for i := range dec {
		dec[i] = lineDecoder{}
		if decoders > 0 {
			decs[i] = &forkingLines{}
			dec[i] = decs[i]
		}
	}
	lh, err := engine.NewHead(e, engine.HeadConfig[string, int64]{Name: "head-left", Decoder: dec[0], Window: j.LeftTarget(), Decoders: decoders})
	if err != nil {
		t.Fatal(err)
	}
	rh, err := engine.NewHead(e, engine.HeadConfig[string, int64]{Name: "head-right", Decoder: dec[1], Window: j.RightTarget(), Decoders: decoders})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AddSource("left", left, lh); err != nil {
		t.Fatal(err)
	}
	if err := e.AddSource("right", right, rh); err != nil {
		t.Fatal(err)
	}
	e.OnSignal(lh)
	e.OnSignal(rh)
	if err := e.Run(context.Background()); err != nil && stopAfter == 0 {
		t.Fatal(err)
	}
	return out.String(), [2]int64{lh.Counts().Read, rh.Counts().Read}, decs
}

// forkingLines is a lineDecoder that forks: it counts the records it
// decodes, and the head's decoder keeps the offsets it settles, in order.
type forkingLines struct {
	decoded atomic.Int64
	forks   []*forkingLines
	settled []int64
}

func (f *forkingLines) Decode(r *connector.Record, d *engine.Decoded[string, int64]) {
	f.decoded.Add(1)
	lineDecoder{}.Decode(r, d)
}

func (f *forkingLines) Fork() engine.Decoder[string, int64] {
	c := &forkingLines{}
	f.forks = append(f.forks, c)
	return c
}

func (f *forkingLines) Settle(r *connector.Record, _ *engine.Decoded[string, int64]) {
	f.settled = append(f.settled, r.Offset)
}

// mergeInput is two sides of a join whose records run through event time
// at different rates: three left records to a right one, out of order by
// up to 2 ms, with records late for the watermark on both sides.
func mergeInput() (left, right []string) { return mergeInputOf(120) }

// mergeInputOf is mergeInput of n left records.
func mergeInputOf(n int) (left, right []string) {
	for i := range n {
		ts := 4*i - (i%3)*2
		left = append(left, fmt.Sprintf("k%d %d", i%4, ts))
		if i%3 == 0 {
			right = append(right, fmt.Sprintf("k%d %d", i%4, 4*i+3-(i%2)*9))
		}
	}
	left = append(left, "k1 30", "k2 470")
	right = append(right, "k3 12", "k0 300")
	return left, right
}

// Two inputs of a run that is not live are read in one order of their
// records, whatever the batches their sources cut them into: the join's
// output, late records included, is the same line for line.
func TestMergedInputsDoNotDependOnBatches(t *testing.T) {
	l, r := mergeInput()
	want := joinRun(t, &batched{name: "l", recs: l, size: 1}, &batched{name: "r", recs: r, size: 1}, "", 0)
	if !strings.Contains(want, "late") || !strings.Contains(want, "matched true") || !strings.Contains(want, "matched false") {
		t.Fatalf("the input should give pairs, unmatched and late records:\n%s", want)
	}
	for _, sizes := range [][2]int{{1000, 1000}, {1000, 1}, {1, 1000}, {7, 3}, {2, 5}, {64, 64}} {
		got := joinRun(t, &batched{name: "l", recs: l, size: sizes[0]}, &batched{name: "r", recs: r, size: sizes[1]}, "", 0)
		if got != want {
			t.Errorf("batches of %d and %d records: the output differs from batches of one:\n%s", sizes[0], sizes[1], textdiff.FirstLine(want, got))
		}
	}
}

// A run stopped with a savepoint in the middle of a batch, and resumed
// with its sources cutting their batches elsewhere, goes on in the same
// order: the two runs emit what an uninterrupted run does.
func TestMergedInputsRestoreInOrder(t *testing.T) {
	l, r := mergeInput()
	want := joinRun(t, &batched{name: "l", recs: l, size: 1}, &batched{name: "r", recs: r, size: 1}, "", 0)
	for _, c := range []struct {
		sizes     [2]int
		stopAfter int64
		resized   [2]int
	}{
		{[2]int{5, 3}, 4, [2]int{7, 2}},
		{[2]int{16, 16}, 3, [2]int{1, 1000}},
		{[2]int{1, 1}, 40, [2]int{9, 4}},
		{[2]int{50, 10}, 2, [2]int{3, 3}},
	} {
		dir := t.TempDir()
		first := joinRun(t, &batched{name: "l", recs: l, size: c.sizes[0]}, &batched{name: "r", recs: r, size: c.sizes[1]}, dir, c.stopAfter)
		if first == want {
			t.Fatalf("%v: the first run did not stop before the end", c)
		}
		rest := joinRun(t, &batched{name: "l", recs: l, size: c.resized[0]}, &batched{name: "r", recs: r, size: c.resized[1]}, dir, 0)
		if got := first + rest; got != want {
			t.Errorf("%v: stopped after batch %d and resumed: the output differs from an uninterrupted run:\n%s", c.sizes, c.stopAfter, textdiff.FirstLine(want, got))
		}
	}
}

// A checkpoint taken in the middle of a batch by a run that merged its
// inputs restores into a run that reads them as they come (an input no
// longer a recording): the records handed over before it are skipped
// there too, none read twice, none lost.
func TestMergedCheckpointRestoresUnmerged(t *testing.T) {
	l, r := mergeInput()
	for _, stop := range []int64{2, 3, 5} {
		dir := t.TempDir()
		joinRun(t, &batched{name: "l", recs: l, size: 7}, &batched{name: "r", recs: r, size: 5}, dir, stop)
		_, read := joinRunCounts(t, &batched{name: "l", recs: l, size: 7, live: true}, &batched{name: "r", recs: r, size: 5, live: true}, dir, 0)
		if read != [2]int64{int64(len(l)), int64(len(r))} {
			t.Errorf("stopped after batch %d, resumed without merging: read %v of %d and %d records", stop, read, len(l), len(r))
		}
	}
}

// A checkpoint taken by a run that restored one taken in the middle of a
// batch, before the records to skip were all skipped or before a record
// after them was handed over, says what is still to skip: a third run
// reads every record once. (The barrier once wrote only what this run had
// handed over of the batch in hand, and a restore read the skipped
// records again.)
func TestMergedCheckpointKeepsWhatIsStillToSkip(t *testing.T) {
	l, r := mergeInput()
	want := joinRun(t, &batched{name: "l", recs: l, size: 1}, &batched{name: "r", recs: r, size: 1}, "", 0)
	for _, c := range []struct {
		sizes  [2]int
		stop   int64
		second [2]int
		live   bool
		stop2  int64
	}{
		// The second run cuts batches smaller than what is to skip.
		{[2]int{16, 16}, 3, [2]int{2, 1}, false, 1},
		{[2]int{16, 16}, 3, [2]int{2, 1}, true, 1},
		{[2]int{50, 10}, 2, [2]int{3, 3}, false, 2},
		{[2]int{50, 10}, 2, [2]int{3, 3}, true, 2},
		// It stops after another input's batch, before handing over a
		// record of the batch it skipped into.
		{[2]int{7, 5}, 3, [2]int{7, 1}, false, 1},
		{[2]int{5, 3}, 4, [2]int{5, 1}, false, 1},
	} {
		dir := t.TempDir()
		first := joinRun(t, &batched{name: "l", recs: l, size: c.sizes[0]}, &batched{name: "r", recs: r, size: c.sizes[1]}, dir, c.stop)
		second, _ := joinRunCounts(t, &batched{name: "l", recs: l, size: c.second[0], live: c.live}, &batched{name: "r", recs: r, size: c.second[1], live: c.live}, dir, c.stop2)
		rest, read := joinRunCounts(t, &batched{name: "l", recs: l, size: 1}, &batched{name: "r", recs: r, size: 1}, dir, 0)
		if read != [2]int64{int64(len(l)), int64(len(r))} {
			t.Errorf("%+v: read %v of %d and %d records in three runs", c, read, len(l), len(r))
		}
		if got := first + second + rest; !c.live && got != want {
			t.Errorf("%+v: three runs differ from an uninterrupted one:\n%s", c, textdiff.FirstLine(want, got))
		}
	}
}

// A merged input's batch is decoded half by the source loop, a record at a
// time, and half ahead by a fork on a goroutine of its own: the output is
// that of one decoder and batches of one record; every record is decoded
// once, either by the head's decoder or by a fork; the head settles the
// fork's, once each and in order; and a run stopped in the middle of a
// batch resumes into the same output.
func TestMergedInputsDecodedAhead(t *testing.T) {
	l, r := mergeInputOf(3000)
	want := joinRun(t, &batched{name: "l", recs: l, size: 1}, &batched{name: "r", recs: r, size: 1}, "", 0)
	for _, sizes := range [][2]int{{600, 600}, {1000, 300}, {256, 700}} {
		got, _, decs := joinRunDecoders(t, &batched{name: "l", recs: l, size: sizes[0]}, &batched{name: "r", recs: r, size: sizes[1]}, "", 0, 2)
		if got != want {
			t.Errorf("batches of %v, decoded ahead: the output differs:\n%s", sizes, textdiff.FirstLine(want, got))
		}
		for side, n := range []int{len(l), len(r)} {
			d := decs[side]
			var forked int64
			for _, f := range d.forks {
				forked += f.decoded.Load()
			}
			if forked == 0 || d.decoded.Load()+forked != int64(n) {
				t.Errorf("batches of %v, side %d: the head decoded %d records and its forks %d, of %d", sizes, side, d.decoded.Load(), forked, n)
			}
			if int64(len(d.settled)) != forked {
				t.Errorf("batches of %v, side %d: %d records settled, %d decoded ahead", sizes, side, len(d.settled), forked)
			}
			for i := 1; i < len(d.settled); i++ {
				if d.settled[i] <= d.settled[i-1] {
					t.Fatalf("batches of %v, side %d: record %d settled after %d", sizes, side, d.settled[i], d.settled[i-1])
				}
			}
		}
	}
	for _, stop := range []int64{2, 3, 5} {
		dir := t.TempDir()
		first, _, _ := joinRunDecoders(t, &batched{name: "l", recs: l, size: 600}, &batched{name: "r", recs: r, size: 300}, dir, stop, 2)
		rest, _, _ := joinRunDecoders(t, &batched{name: "l", recs: l, size: 500}, &batched{name: "r", recs: r, size: 700}, dir, 0, 2)
		if got := first + rest; got != want {
			t.Errorf("stopped after batch %d and resumed, decoded ahead: the output differs from an uninterrupted run:\n%s", stop, textdiff.FirstLine(want, got))
		}
	}
}
