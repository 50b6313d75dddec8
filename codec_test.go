package weir_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// seenAcc keeps the users seen in a field JSON leaves out.
type seenAcc struct {
	Count int
	seen  map[string]bool
}

// top is a result with unexported fields.
type top struct {
	user string
	n    int
}

func addSeen(a seenAcc, t tap) seenAcc {
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	if !a.seen[t.user] {
		a.seen[t.user] = true
		a.Count++
	}
	return a
}

// statePipeline aggregates taps, keyed by key, with f, under opts.
func statePipeline[K comparable, A, O any](opts []weir.Option, mode window.Mode, key func(tap) K, f aggregate.Func[tap, A, O], name ...weir.PartOption) error {
	p := weir.NewPipeline(append(opts, weir.Delivery(connector.AtLeastOnce))...)
	src := weir.FromSlice(p, taps(50), weir.Named("taps"))
	stamped := weir.WithTimestamps(src, func(t tap) mtime.Time { return t.ts }, watermark.BoundedOutOfOrderness(time.Second))
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, key),
		window.NewStrategy(window.TumblingWindows(time.Minute)).WithMode(mode)), f, name...)
	weir.Sink(panes, func(weir.Pane[K, O]) error { return nil }, weir.Named("out"))
	return p.Run(context.Background())
}

// A checkpointed pipeline refuses, before it runs, an aggregation whose key,
// accumulator or retracted result the JSON state codec would not restore
// as it was; without checkpoints the same pipeline runs.
func TestPipelineRefusesStateItCannotCheckpoint(t *testing.T) {
	byUser := func(t tap) string { return t.user }
	seen := aggregate.Of(func() seenAcc { return seenAcc{} }, addSeen,
		func(a, b seenAcc) seenAcc {
			for u := range b.seen {
				a = addSeen(a, tap{user: u})
			}
			return a
		}, func(a seenAcc) int { return a.Count })
	type bestAcc struct {
		User string
		N    int
	}
	best := aggregate.Of(func() bestAcc { return bestAcc{} }, func(a bestAcc, t tap) bestAcc {
		if t.n > a.N {
			return bestAcc{t.user, t.n}
		}
		return a
	}, func(a, b bestAcc) bestAcc {
		if b.N > a.N {
			return b
		}
		return a
	}, func(a bestAcc) top { return top{a.User, a.N} })
	ckpt := func() []weir.Option { return []weir.Option{weir.Checkpoints(t.TempDir(), time.Hour)} }
	for _, c := range []struct {
		name string
		run  func(opts []weir.Option) error
		want string
	}{
		{"an unexported field", func(o []weir.Option) error { return statePipeline(o, window.Accumulating, byUser, seen) },
			"weir: aggregation 1: the accumulator type weir_test.seenAcc cannot be checkpointed: field .seen is unexported: JSON leaves it out, and a restore would make it zero"},
		{"a named aggregation", func(o []weir.Option) error {
			return statePipeline(o, window.Accumulating, byUser, seen, weir.Named("distinct users"))
		}, `weir: aggregation "distinct users": the accumulator type weir_test.seenAcc cannot be checkpointed: field .seen is unexported: JSON leaves it out, and a restore would make it zero`},
		{"elements collected", func(o []weir.Option) error {
			return statePipeline(o, window.Accumulating, byUser, aggregate.Collect[tap]())
		}, "weir: aggregation 1: the accumulator type []weir_test.tap cannot be checkpointed: element [i].user is unexported: JSON leaves it out, and a restore would make it zero"},
		{"an interface key", func(o []weir.Option) error {
			return statePipeline(o, window.Accumulating, func(t tap) any { return t.user }, aggregate.Count[tap]())
		}, "weir: aggregation 1: the key type interface {} cannot be checkpointed: it is an interface (interface {}): JSON would restore a map, a slice, a string, a float64 or a bool in it, not the value it held"},
		{"a retracted result", func(o []weir.Option) error { return statePipeline(o, window.Retracting, byUser, best) },
			"weir: aggregation 1: the result type weir_test.top cannot be checkpointed: field .user is unexported: JSON leaves it out, and a restore would make it zero"},
		{"a function accumulator", func(o []weir.Option) error {
			return statePipeline(o, window.Accumulating, byUser, aggregate.Of(func() func() int { return nil },
				func(a func() int, _ tap) func() int { return a }, func(a, _ func() int) func() int { return a }, func(func() int) int { return 0 }))
		}, "weir: aggregation 1: the accumulator type func() int cannot be checkpointed: it is a func (func() int), which JSON cannot hold"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.run(ckpt()); err == nil || err.Error() != c.want {
				t.Errorf("err = %v\nwant %s", err, c.want)
			}
			if err := c.run(nil); err != nil {
				t.Errorf("without checkpoints: %v", err)
			}
		})
	}
	// A result is stored only to be retracted: other modes accept it.
	if err := statePipeline(ckpt(), window.Accumulating, byUser, best); err != nil {
		t.Errorf("an accumulating result: %v", err)
	}
}

// userSet is an accumulator with unexported fields and a JSON codec of its
// own: the codec accepts it, and its state survives a savepoint.
type userSet struct{ users map[string]int }

func (s userSet) MarshalJSON() ([]byte, error)  { return json.Marshal(s.users) }
func (s *userSet) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &s.users) }

func (s userSet) add(user string, n int) userSet {
	m := make(map[string]int, len(s.users)+1)
	for u, k := range s.users {
		m[u] = k
	}
	m[user] += n
	return userSet{m}
}

// usersPipeline writes, per window of ten seconds, the taps of every user,
// as a userSet keeps them; cancel, when set, is called when the tap at
// stopAt is read.
func usersPipeline(in []tap, out string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline {
	p := weir.NewPipeline(opts...)
	src := weir.FromSeq(p, func(yield func(tap, mtime.Time) bool) {
		for i, t := range in {
			if i == stopAt && cancel != nil {
				cancel()
			}
			if !yield(t, t.arr) {
				return
			}
		}
	}, weir.Named("taps"))
	stamped := weir.WithTimestamps(src, func(t tap) mtime.Time { return t.ts }, watermark.BoundedOutOfOrderness(time.Second).WithInterval(0))
	users := aggregate.Of(func() userSet { return userSet{} },
		func(s userSet, t tap) userSet { return s.add(t.user, t.n) },
		func(a, b userSet) userSet {
			for u, n := range b.users {
				a = a.add(u, n)
			}
			return a
		},
		func(s userSet) string {
			var list []string
			for u, n := range s.users {
				list = append(list, fmt.Sprintf("%s=%d", u, n))
			}
			slices.Sort(list)
			return fmt.Sprint(list)
		})
	panes, _ := weir.Aggregate(weir.Window(weir.KeyBy(stamped, func(tap) string { return "all" }),
		window.NewStrategy(window.TumblingWindows(10*time.Second))), users, weir.Named("users"))
	weir.SinkTo(panes, "users", &file.Sink[weir.Pane[string, string]]{Path: out, ExactlyOnce: true,
		Encode: func(b []byte, pn weir.Pane[string, string]) []byte {
			return fmt.Appendf(b, "%s #%d %s %s\n", pn.Window, pn.Revision, pn.Timing, pn.Value)
		}})
	return p
}

func TestPipelineCheckpointsAStateWithItsOwnCodec(t *testing.T) {
	in := taps(6000)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.txt")
	if err := usersPipeline(in, ref, nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	if !bytes.Contains(want, []byte(" u1=")) {
		t.Fatalf("the reference output names no user:\n%.500s", want)
	}
	out := filepath.Join(dir, "out.txt")
	ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := usersPipeline(in, out, []weir.Option{ckpt}, 3_000, cancel).Run(ctx)
	var stopped *engine.StoppedError
	if !errors.As(err, &stopped) || stopped.Savepoint == "" {
		t.Fatalf("the stopped run: %v", err)
	}
	if err := usersPipeline(in, out, []weir.Option{ckpt}, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Errorf("the restored output differs from an uninterrupted run (%d bytes, want %d)", len(got), len(want))
	}
}

// MaxHeldOutput bounds what an exactly-once file sink holds between
// checkpoints: with an hour's interval, checkpoints are taken whenever it
// fills up, and the output is the same as with no checkpoints at all.
func TestPipelineMaxHeldOutput(t *testing.T) {
	in := taps(60_000)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.txt")
	if err := usersPipeline(in, ref, nil, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(ref)
	out := filepath.Join(dir, "out.txt")
	var log bytes.Buffer
	opts := []weir.Option{weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour), weir.MaxHeldOutput(64 << 10), weir.Log(&log)}
	if err := usersPipeline(in, out, opts, -1, nil).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) || len(want) < 128<<10 {
		t.Errorf("the output differs from a run without checkpoints (%d bytes, want %d, at least 128 KiB)", len(got), len(want))
	}
	if !strings.Contains(log.String(), "users holds ") || !strings.Contains(log.String(), "is 64.0 KiB: a checkpoint is taken now") {
		t.Errorf("log:\n%s", log.String())
	}
}
