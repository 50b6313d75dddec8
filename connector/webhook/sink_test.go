package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// t0 is the fake clock's time.
var t0 = time.Date(2026, 5, 28, 20, 0, 0, 0, time.UTC)

// testPane is a pane of key, its window starting at minute, with its
// revision and count.
func testPane(key string, minute, rev, n int64) plan.Item {
	start := mtime.Time(1_780_000_000_000 + minute*60_000)
	pf := &plan.PaneFields{Keys: []any{key}, Start: start, End: start + 60_000, Revision: rev, Timing: "ON_TIME", Mode: "discarding",
		Names: []string{"n"}, Values: []any{n}, Emitted: start + 61_000, Watermark: start + 60_000}
	line := fmt.Sprintf(`{"key":%q,"window_start":%q,"window_end":%q,"n":%d,"revision":%d}`, key, pf.Start, pf.End, n, rev)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s %d %d", key, minute, rev)
	return plan.Item{Kind: plan.Pane, JSON: []byte(line), Key: fmt.Appendf(nil, "%s@%d", key, minute), ID: h.Sum64(), Pane: pf}
}

// newTestSink is a sink of the settings whose clock stands still and whose
// waits return at once, recorded.
func newTestSink(t *testing.T, v plan.Values) (*Sink, *[]time.Duration, *logLines) {
	t.Helper()
	if err := v.Check(Kind, Fields); err != nil {
		t.Fatal(err)
	}
	c, err := Parse(v)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	s := NewSink(c, plan.Env{Job: "alerts", Field: "output", Log: logs.add})
	var mu sync.Mutex
	waits := &[]time.Duration{}
	s.now = func() time.Time { return t0 }
	s.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	t.Cleanup(func() { s.Close() })
	return s, waits, logs
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// flaky is a receiver that fails each request's first attempts in one of
// several ways, chosen by its Idempotency-Key: the connection closed with
// no answer, no answer before the sink's timeout, a 500 after it took the
// request (a duplicate to come), 429 with Retry-After in seconds (a few, or
// hours), 503 with Retry-After as an HTTP date, a 408; and answers 400 to a
// pane whose key starts with "bad".
type flaky struct {
	mu        sync.Mutex
	attempts  map[string]int
	delivered map[string][]string // bodies taken, by Idempotency-Key
	order     []string            // the bodies taken, in order
	stop      chan struct{}
}

func newFlaky() *flaky {
	return &flaky{attempts: map[string]int{}, delivered: map[string][]string{}, stop: make(chan struct{})}
}

func (f *flaky) take(key, body string) {
	f.delivered[key] = append(f.delivered[key], body)
	f.order = append(f.order, body)
}

// failures are the answers of the flaky receiver's ways 3 to 6.
var failures = map[uint32]struct {
	status     int
	retryAfter string
}{
	3: {http.StatusTooManyRequests, "2"},
	4: {http.StatusServiceUnavailable, t0.Add(5 * time.Second).Format(http.TimeFormat)},
	5: {http.StatusTooManyRequests, "7200"},
	6: {http.StatusRequestTimeout, ""},
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	f.attempts[key]++
	n := f.attempts[key]
	h := fnv.New32a()
	h.Write([]byte(key))
	way := h.Sum32() % 8
	if strings.Contains(string(b), `"key":"bad`) {
		f.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "bad pane: %s", strings.Repeat("the field n is not allowed here; ", 20))
		return
	}
	if n == 1 {
		switch way {
		case 0:
			f.mu.Unlock()
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		case 1:
			f.mu.Unlock()
			select {
			case <-r.Context().Done():
			case <-f.stop:
			}
			return
		case 2:
			f.take(key, string(b))
			f.mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			return
		case 3, 4, 5, 6:
			f.mu.Unlock()
			a := failures[way]
			if a.retryAfter != "" {
				w.Header().Set("Retry-After", a.retryAfter)
			}
			w.WriteHeader(a.status)
			return
		}
	}
	f.take(key, string(b))
	f.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// Every pane reaches a receiver that fails in every way a receiver fails,
// once per revision when de-duplicated by its Idempotency-Key, the
// revisions of a pane in order; the panes it answers 400 are refused, with
// the status and the first bytes of the answer.
func TestRetriesDeliverEveryPaneOnce(t *testing.T) {
	f := newFlaky()
	srv := httptest.NewUnstartedServer(f)
	// Every request on a connection of its own: the client's transport
	// retries by itself a request whose reused connection closes, which
	// would hide some of the closed connections from the sink.
	srv.Config.SetKeepAlivesEnabled(false)
	srv.Start()
	defer srv.Close()
	defer close(f.stop)
	s, waits, logs := newTestSink(t, plan.Values{"url": srv.URL + "/hook", "timeout": 200 * time.Millisecond,
		"max_backoff": 30 * time.Second, "max_in_flight": 4})
	var items []plan.Item
	for m := range int64(6) {
		for _, k := range []string{"a", "b", "c", "bad1", "d"} {
			for rev := range int64(3) {
				items = append(items, testPane(k, m, rev, 10*rev+m))
			}
		}
	}
	err := s.Write(context.Background(), items)
	var re *connector.RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("Write: %v", err)
	}
	var refused []int
	for _, it := range re.Items {
		refused = append(refused, it.Index)
		if !strings.HasPrefix(it.Reason, "webhook "+srv.URL+"/…: 400 Bad Request: bad pane: the field n is not allowed here;") || len(it.Reason) > 400 {
			t.Errorf("reason %q (%d bytes)", it.Reason, len(it.Reason))
		}
	}
	var want []int
	for i, it := range items {
		if strings.HasPrefix(it.Pane.Keys[0].(string), "bad") {
			want = append(want, i)
		}
	}
	if !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	dups := 0
	for i, it := range items {
		if slices.Contains(want, i) {
			continue
		}
		key := idempotencyKey("alerts", &it)
		got := f.delivered[key]
		if len(got) == 0 {
			t.Errorf("%s never arrived", it.JSON)
			continue
		}
		for _, b := range got {
			if b != string(it.JSON) {
				t.Errorf("under %s: %s, want %s", key, b, it.JSON)
			}
		}
		dups += len(got) - 1
	}
	if len(f.delivered) != len(items)-len(want) {
		t.Errorf("%d distinct keys delivered, want %d", len(f.delivered), len(items)-len(want))
	}
	if dups == 0 {
		t.Error("no request was taken twice: the test shows no de-duplication")
	}
	// The revisions of each pane arrive in order (the first of each
	// delivery taken).
	last := map[string]string{}
	for _, b := range f.order {
		pane, rev, _ := strings.Cut(b, `,"revision":`)
		if prev, ok := last[pane]; ok && rev < prev {
			t.Errorf("%s: revision %s after %s", pane, rev, prev)
		}
		last[pane] = rev
	}
	// Retry-After is honoured, in seconds and as a date, and bounded.
	for _, d := range []time.Duration{2 * time.Second, 5 * time.Second, 30 * time.Second} {
		if !slices.Contains(*waits, d) {
			t.Errorf("no wait of %s among %v", d, *waits)
		}
	}
	for _, d := range *waits {
		if d > 30*time.Second || d <= 0 {
			t.Errorf("a wait of %s", d)
		}
	}
	st := s.Stats()
	if st.Delivered != int64(len(items)-len(want)) || st.Refused != int64(len(want)) || st.Retries == 0 {
		t.Errorf("stats %+v", st)
	}
	for _, w := range []string{"no answer within 200ms", "500 Internal Server Error", "429 Too Many Requests", "503 Service Unavailable", "408 Request Timeout", "EOF", "delivered after 2 attempts"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("the log does not say %q:\n%s", w, logs)
		}
	}
	t.Logf("%d panes, %d refused, %d requests, %d retries, %d taken twice", len(items), len(want), st.Requests, st.Retries, dups)
}

// A receiver that is down holds the write back, retrying, without
// dropping anything; once it is up, the write is done. When the job stops
// meanwhile, the write returns the stop.
func TestADownReceiverHoldsTheWriteBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every connection is refused
	var got sync.Map
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b), true)
	})}
	s, waits, logs := newTestSink(t, plan.Values{"url": "http://" + addr + "/", "max_in_flight": 1})
	attempts := 0
	s.sleep = func(ctx context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		attempts++
		if attempts == 40 {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			go srv.Serve(ln)
		}
		return ctx.Err()
	}
	defer srv.Close()
	items := []plan.Item{testPane("a", 0, 0, 1), testPane("b", 0, 0, 2)}
	if err := s.Write(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, ok := got.Load(string(it.JSON)); !ok {
			t.Errorf("%s was not delivered", it.JSON)
		}
	}
	if attempts < 40 || (*waits)[len(*waits)-1] > time.Minute || (*waits)[len(*waits)-1] < 30*time.Second {
		t.Errorf("%d attempts, waits %v", attempts, *waits)
	}
	// Failures are logged on the 1st, 2nd, 4th, 8th, ... attempt.
	if n := strings.Count(logs.String(), "request failed"); n < 5 || n > 8 || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("%d lines:\n%s", n, logs)
	}
	// Stopped while the receiver is down.
	srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	attempts = 0
	s.sleep = func(ctx context.Context, d time.Duration) error {
		if attempts++; attempts == 3 {
			cancel()
		}
		return ctx.Err()
	}
	if err := s.Write(ctx, items); !errors.Is(err, context.Canceled) {
		t.Errorf("stopped: %v", err)
	}
}

// At most max_in_flight requests are in flight at once, and at most rate
// requests a second leave.
func TestBounds(t *testing.T) {
	var mu sync.Mutex
	in, most := 0, 0
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		in++
		most = max(most, in)
		full := in == 3
		mu.Unlock()
		if full {
			close(release)
		}
		<-release
		mu.Lock()
		in--
		mu.Unlock()
	}))
	defer srv.Close()
	s, _, _ := newTestSink(t, plan.Values{"url": srv.URL, "max_in_flight": 3})
	var items []plan.Item
	for i := range 60 {
		items = append(items, testPane(fmt.Sprint("k", i), 0, 0, 1))
	}
	if err := s.Write(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	if most != 3 {
		t.Errorf("%d requests in flight at most, want 3", most)
	}

	// The rate: the fake clock moves only by what the sink waits.
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	s, _, _ = newTestSink(t, plan.Values{"url": ok.URL, "rate": "120/m", "max_in_flight": 4})
	var clock time.Duration
	var cmu sync.Mutex
	s.now = func() time.Time { cmu.Lock(); defer cmu.Unlock(); return t0.Add(clock) }
	s.sleep = func(_ context.Context, d time.Duration) error { cmu.Lock(); clock += d; cmu.Unlock(); return nil }
	if err := s.Write(context.Background(), items[:21]); err != nil {
		t.Fatal(err)
	}
	// 21 requests at 2 a second: the first at once, the last 10s later.
	if clock < 10*time.Second || clock > 11*time.Second {
		t.Errorf("21 requests at 120/m took %s of the clock", clock)
	}
}

func TestRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": 0, "0": 0, "-3": 0, "12": 12 * time.Second, "soon": 0,
		t0.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		t0.Add(-time.Hour).Format(http.TimeFormat):       0,
	} {
		if got := retryAfter(v, t0); got != want {
			t.Errorf("Retry-After %q: %s, want %s", v, got, want)
		}
	}
}

// The backoff doubles up to max_backoff, half of it jittered, the same
// in every run.
func TestBackoff(t *testing.T) {
	s, _, _ := newTestSink(t, plan.Values{"url": "http://127.0.0.1:1/", "backoff": 100 * time.Millisecond, "max_backoff": 2 * time.Second})
	var got []time.Duration
	for a := 1; a <= 8; a++ {
		d := s.backoff(a)
		base := min(100*time.Millisecond<<(a-1), 2*time.Second)
		if d < base/2 || d > base {
			t.Errorf("attempt %d: %s, want %s to %s", a, d, base/2, base)
		}
		got = append(got, d)
	}
	// A long first wait doubled many times stays within max_backoff.
	long, _, _ := newTestSink(t, plan.Values{"url": "http://127.0.0.1:1/", "backoff": time.Hour, "max_backoff": 2 * time.Hour})
	for _, a := range []int{1, 2, 40, 1000} {
		if d := long.backoff(a); d < 30*time.Minute || d > 2*time.Hour {
			t.Errorf("attempt %d: %s", a, d)
		}
	}
	s2, _, _ := newTestSink(t, plan.Values{"url": "http://127.0.0.1:1/", "backoff": 100 * time.Millisecond, "max_backoff": 2 * time.Second})
	for a := 1; a <= 8; a++ {
		if d := s2.backoff(a); d != got[a-1] {
			t.Errorf("attempt %d: %s, then %s", a, got[a-1], d)
		}
	}
}

// With batches and several requests in flight, the revisions of a pane
// still arrive in order, and each request holds at most batch results.
func TestBatchesKeepThePanesOrder(t *testing.T) {
	var items []plan.Item
	for rev := range int64(5) {
		for k := range 12 {
			items = append(items, testPane(fmt.Sprint("k", k), 0, rev, rev))
		}
	}
	got := send(t, plan.Values{"batch": 3, "max_in_flight": 4}, items...)
	last := map[string]int64{}
	n := 0
	for _, b := range got.bodies {
		var panes []struct {
			Key      string `json:"key"`
			Revision int64  `json:"revision"`
		}
		if err := json.Unmarshal([]byte(b), &panes); err != nil || len(panes) == 0 || len(panes) > 3 {
			t.Fatalf("%v: %s", err, b)
		}
		for _, p := range panes {
			if prev, ok := last[p.Key]; ok && p.Revision != prev+1 {
				t.Errorf("%s: revision %d after %d", p.Key, p.Revision, prev)
			}
			last[p.Key] = p.Revision
			n++
		}
	}
	if n != len(items) {
		t.Errorf("%d panes arrived, want %d", n, len(items))
	}
}

// The URL's credentials, path and query and the headers' values are in no
// log line, refusal or error of the sink, whether the receiver is down,
// refuses, or the job stops.
func TestSecretsAreNeverShown(t *testing.T) {
	secrets := []string{"USERSECRET", "PASSSECRET", "PATHSECRET", "QUERYSECRET", "HEADERSECRET"}
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "who are you?")
	}))
	defer refuse.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := ln.Addr().String()
	ln.Close()
	var shown []string
	for _, host := range []string{strings.TrimPrefix(refuse.URL, "http://"), down} {
		s, _, logs := newTestSink(t, plan.Values{"url": "http://USERSECRET:PASSSECRET@" + host + "/hooks/PATHSECRET?sig=QUERYSECRET",
			"headers": map[string]string{"Authorization": "Bearer HEADERSECRET"}})
		ctx, cancel := context.WithCancel(context.Background())
		tries := 0
		s.sleep = func(ctx context.Context, d time.Duration) error {
			if tries++; tries == 5 {
				cancel()
			}
			return ctx.Err()
		}
		err := s.Write(ctx, []plan.Item{testPane("a", 0, 0, 1)})
		cancel()
		if err == nil {
			t.Fatalf("%s: no error", host)
		}
		shown = append(shown, err.Error(), logs.String(), s.cfg.Writes(), s.cfg.Target())
	}
	all := strings.Join(shown, "\n")
	for _, sec := range secrets {
		if strings.Contains(all, sec) {
			t.Errorf("%s is shown:\n%s", sec, all)
		}
	}
	for _, want := range []string{"401 Unauthorized: who are you?", "connection refused", "webhook http://127.0.0.1:"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q is not said:\n%s", want, all)
		}
	}
	if _, err := Parse(plan.Values{"url": "http://USERSECRET:PASSSECRET@host/%zz/PATHSECRET"}); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("a URL that does not parse: %v", err)
	}
}
