package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// table is a lookup's table in memory: it records each call's keys, fails
// the keys of fail, and blocks a call with a key of hold until release is
// closed.
type table struct {
	mu      sync.Mutex
	rows    map[string]int
	calls   [][]string
	fail    map[string]bool
	hold    map[string]bool
	release chan struct{}
}

func (t *table) Lookup(ctx context.Context, keys []string) (map[string]int, error) {
	t.mu.Lock()
	t.calls = append(t.calls, slices.Clone(keys))
	hold := false
	for _, k := range keys {
		hold = hold || t.hold[k]
	}
	t.mu.Unlock()
	if hold {
		<-t.release
	}
	out := map[string]int{}
	for _, k := range keys {
		if t.fail[k] {
			return nil, fmt.Errorf("no connection for %s", k)
		}
		if v, ok := t.rows[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// calls are the calls' keys, sorted (calls at once come in any order).
func (t *table) sortedCalls() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, c := range t.calls {
		out = append(out, strings.Join(c, ","))
	}
	slices.Sort(out)
	return out
}

// collect is what a lookup stage emits, in order: "key=row", "key:none",
// "failed key: error (n attempts)", and the signals.
func collect(l *engine.Lookup[string, string, int]) *[]string {
	var out []string
	l.Out().Subscribe(engine.Func[engine.Looked[string, string, int]]{
		OnPush: func(v engine.Looked[string, string, int]) {
			s := fmt.Sprintf("%s:none", v.Key)
			if v.Found {
				s = fmt.Sprintf("%s=%d", v.Key, v.Row)
			}
			if v.Cached {
				s += " (cached)"
			}
			out = append(out, s)
		},
		OnSignal: func(s engine.Signal) { out = append(out, signalNames[s.Kind]) },
	})
	l.Failed().Subscribe(engine.Func[engine.LookupFailed[string, string]]{
		OnPush: func(f engine.LookupFailed[string, string]) {
			out = append(out, fmt.Sprintf("failed %s: %s: %s (%d attempts)", f.Key, f.Reason, f.Err, f.Attempts))
		},
		OnSignal: func(engine.Signal) {},
	})
	return &out
}

var signalNames = map[engine.SignalKind]string{engine.Proc: "proc", engine.Watermark: "watermark",
	engine.Barrier: "barrier", engine.End: "end", engine.Stop: "stop"}

// Records come out in the order they came in, and a watermark after a
// record still waiting for its row waits behind it: a lookup under way
// holds back what follows.
func TestLookupKeepsOrder(t *testing.T) {
	tb := &table{rows: map[string]int{"slow": 1, "fast": 2}, hold: map[string]bool{"slow": true}, release: make(chan struct{})}
	l := engine.NewLookup(nil, engine.LookupConfig[string, string, int]{Table: tb, Key: func(s string) string { return s }, Batch: 1})
	out := collect(l)
	l.Push("slow")
	l.Signal(engine.Signal{Kind: engine.Watermark, Watermark: 5, Now: 10})
	l.Push("fast")
	l.Push("missing")
	if len(*out) != 0 {
		t.Fatalf("emitted %q while the first record waits", *out)
	}
	close(tb.release)
	l.Signal(engine.Signal{Kind: engine.End, Now: 11})
	want := []string{"slow=1", "watermark", "fast=2", "missing:none", "end"}
	if !slices.Equal(*out, want) {
		t.Errorf("got %q, want %q", *out, want)
	}
	if got := tb.sortedCalls(); !slices.Equal(got, []string{"fast", "missing", "slow"}) {
		t.Errorf("calls %q", got)
	}
}

// Keys are looked up in batches; a key already in the batch to come, or
// being read, is not looked up again; the cache serves a key (and that it
// has no row) until its time to live has passed in processing time, from
// the time its call was made, and the least recently used goes first when
// it is full: a key is used when its record comes, whether its call has
// ended or not.
func TestLookupBatchesAndCache(t *testing.T) {
	tb := &table{rows: map[string]int{"a": 1, "b": 2, "c": 3, "d": 4}}
	l := engine.NewLookup(nil, engine.LookupConfig[string, string, int]{Table: tb, Key: func(s string) string { return s },
		Batch: 3, InFlight: 1, CacheSize: 3, CacheTTL: 60_000})
	out := collect(l)
	at := func(now mtime.Time, keys ...string) {
		l.Signal(engine.Signal{Kind: engine.Proc, Now: now})
		for _, k := range keys {
			l.Push(k)
		}
		l.Signal(engine.Signal{Kind: engine.Barrier, Now: now})
	}
	at(0, "a", "b", "a", "x", "c") // a call for a,b,x (full; the second a made a more recent than b), then one for c, which evicts b: the cache is c x a
	at(30_000, "a", "x", "d")      // a and x cached; d evicts c: d x a
	at(59_999, "c", "b")           // c and b evict a and x: b c d
	at(60_000, "a", "d")           // a and d (read at 30 s, and evicted) evict c and b: d a b
	at(90_000, "d", "b")           // d read at 60 s, b at 59.999 s: both cached
	l.Signal(engine.Signal{Kind: engine.End, Now: 90_000})
	want := strings.Fields(`proc a=1 b=2 a=1 x:none c=3 barrier
		proc a=1_(cached) x:none_(cached) d=4 barrier
		proc c=3 b=2 barrier
		proc a=1 d=4 barrier
		proc d=4_(cached) b=2_(cached) barrier end`)
	for i := range want {
		want[i] = strings.ReplaceAll(want[i], "_", " ")
	}
	if !slices.Equal(*out, want) {
		t.Errorf("got  %q\nwant %q", *out, want)
	}
	if got := tb.sortedCalls(); !slices.Equal(got, []string{"a,b,x", "a,d", "c", "c,b", "d"}) {
		t.Errorf("calls %q", got)
	}
	if st := l.Stats(); st.Records != 14 || st.CacheHits != 4 || st.Calls != 5 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// Which call serves a record depends on the records' order, never on
// when calls end: a record whose key is being read waits for that call
// (its row read when that call was made), whether the call has ended when
// the record comes or not, as long as the cache keeps it; without a
// cache, or past its time to live, only the records of one batch share a
// call.
func TestLookupServesByOrderNotByTiming(t *testing.T) {
	for _, wait := range []bool{false, true} {
		for _, c := range []struct {
			size int
			ttl  mtime.Time
		}{{0, 0}, {10, 0}, {10, 5}} {
			size := c.size
			if c.ttl > 0 {
				size = 0 // the row read at 10 has expired at 20
			}
			tb := &table{rows: map[string]int{"a": 1}, hold: map[string]bool{"a": true}, release: make(chan struct{})}
			l := engine.NewLookup(nil, engine.LookupConfig[string, string, int]{Table: tb, Key: func(s string) string { return s },
				Batch: 1, InFlight: 4, CacheSize: c.size, CacheTTL: c.ttl})
			var got []string
			l.Out().Subscribe(engine.Func[engine.Looked[string, string, int]]{OnPush: func(v engine.Looked[string, string, int]) {
				got = append(got, fmt.Sprintf("%s=%d read at %d", v.Key, v.Row, v.ReadAt))
			}})
			l.Signal(engine.Signal{Kind: engine.Proc, Now: 10})
			l.Push("a")
			l.Signal(engine.Signal{Kind: engine.Proc, Now: 20})
			if wait {
				// The call ends before the next record comes.
				close(tb.release)
				l.Signal(engine.Signal{Kind: engine.Barrier, Now: 20})
			}
			l.Push("a")
			if !wait {
				close(tb.release)
			}
			l.Signal(engine.Signal{Kind: engine.End, Now: 30})
			want := []string{"a=1 read at 10", "a=1 read at 10"}
			calls := []string{"a"}
			if size == 0 {
				want[1], calls = "a=1 read at 20", []string{"a", "a"}
			}
			if !slices.Equal(got, want) || !slices.Equal(tb.sortedCalls(), calls) {
				t.Errorf("cache %d for %d ms, call ended first %t: got %q and calls %q, want %q and %q", c.size, c.ttl, wait, got, tb.sortedCalls(), want, calls)
			}
		}
	}
}

// A call that keeps failing is tried Attempts times, then its records go
// to the dead letters with the last error, in their place: none is
// dropped, and the others go on.
func TestLookupFailuresAreDeadLetters(t *testing.T) {
	tb := &table{rows: map[string]int{"a": 1}, fail: map[string]bool{"bad": true}}
	l := engine.NewLookup(nil, engine.LookupConfig[string, string, int]{Table: tb, Key: func(s string) string { return s },
		Batch: 1, Attempts: 3, Backoff: time.Millisecond, CacheSize: 10})
	out := collect(l)
	l.Push("a")
	l.Signal(engine.Signal{Kind: engine.Barrier})
	for _, k := range []string{"bad", "a", "bad"} {
		l.Push(k)
	}
	l.Signal(engine.Signal{Kind: engine.End})
	want := []string{"a=1", "barrier", "failed bad: lookup_failed: no connection for bad (3 attempts)", "a=1 (cached)",
		"failed bad: lookup_failed: no connection for bad (3 attempts)", "end"}
	if !slices.Equal(*out, want) {
		t.Errorf("got %q, want %q", *out, want)
	}
	// The second "bad" came while the first's call was under way (it
	// waits for it: one call, three attempts), or after (a second call):
	// a failure is never cached.
	if st := l.Stats(); st.Failed != 2 || st.Retries%2 != 0 || st.Retries < 2 || st.Retries > 4 {
		t.Errorf("stats %+v", st)
	}
}

// A stop cancels the lookups under way and passes on at once, never
// waiting for a table that does not answer: the records waiting come after
// the savepoint, and are read again on resume.
func TestLookupStopsAtOnce(t *testing.T) {
	returned := make(chan error, 1)
	tb := connector.LookupFunc[string, int](func(ctx context.Context, keys []string) (map[string]int, error) {
		<-ctx.Done()
		returned <- ctx.Err()
		return nil, ctx.Err()
	})
	l := engine.NewLookup(nil, engine.LookupConfig[string, string, int]{Table: tb, Key: func(s string) string { return s }, Batch: 1})
	out := collect(l)
	l.Push("a")
	l.Signal(engine.Signal{Kind: engine.Stop})
	if want := []string{"stop"}; !slices.Equal(*out, want) {
		t.Errorf("got %q, want %q", *out, want)
	}
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Errorf("the call ended with %v", err)
	}
}
