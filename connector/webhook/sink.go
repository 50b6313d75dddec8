package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
)

// bodyPrefix is how much of a refusing answer's body a dead letter keeps.
const bodyPrefix = 256

// Sink sends what a job writes to a webhook, at least once (see the
// package's documentation). Write returns once every request of its items
// has been answered with a 2xx or refused; it holds at most max_in_flight
// request bodies, and what the engine gives one Write.
type Sink struct {
	cfg    *Config
	job    string
	log    func(string)
	client *http.Client
	rate   *bucket

	// now and sleep are the clock, which tests replace.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	mu    sync.Mutex
	rng   *rand.Rand

	stats struct{ requests, retries, delivered, refused atomic.Int64 }
}

var (
	_ connector.Sink[plan.Item] = (*Sink)(nil)
)

// NewSink makes the sink of a webhook's settings.
func NewSink(c *Config, env plan.Env) *Sink {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = c.MaxInFlight
	s := &Sink{cfg: c, job: env.Job,
		client: &http.Client{Transport: tr,
			// A redirect is not followed: a POST would become a GET, and
			// the headers would go elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		now: time.Now, sleep: sleepCtx,
		// Jitter from a fixed seed: a run's waits are the same every time.
		rng: rand.New(rand.NewPCG(0x77656972, 0x776562686f6f6b)),
	}
	if log := env.Log; log != nil {
		// The requests in flight log from goroutines of their own: one
		// line at a time.
		var mu sync.Mutex
		s.log = func(l string) { mu.Lock(); defer mu.Unlock(); log(l) }
	} else {
		s.log = func(string) {}
	}
	if c.Rate > 0 {
		s.rate = &bucket{rate: c.Rate}
	}
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats are a sink's counts: requests sent (retries included), retries,
// results delivered (a 2xx) and refused.
type Stats struct {
	Requests, Retries, Delivered, Refused int64
}

// Stats are the sink's counts so far.
func (s *Sink) Stats() Stats {
	return Stats{s.stats.requests.Load(), s.stats.retries.Load(), s.stats.delivered.Load(), s.stats.refused.Load()}
}

// Open implements connector.Sink. A webhook has nothing to restore: what
// was sent after the checkpoint it resumes from is sent again, with the
// same Idempotency-Key.
func (s *Sink) Open(_ context.Context, r connector.Resume) error {
	if r.Resumed() {
		s.log(fmt.Sprintf("%s: resuming from checkpoint %d: what was sent after it is sent again, with the same Idempotency-Key", s.cfg.Writes(), r.From))
	}
	return nil
}

// Write implements connector.Sink: it sends the items over max_in_flight
// lanes, a request at a time each, the items of one key and window (an
// item's Key) in one lane, in order, batch at a time; and returns once each
// request has been delivered or refused (a *connector.RefusedError names the
// refused items). A receiver that does not answer holds it back until ctx is
// done.
func (s *Sink) Write(ctx context.Context, items []plan.Item) error {
	if len(items) == 0 {
		return nil
	}
	lanes := make([][]int, min(s.cfg.MaxInFlight, len(items)))
	for i := range items {
		l := 0
		if len(lanes) > 1 {
			l = int(laneHash(&items[i]) % uint64(len(lanes)))
		}
		lanes[l] = append(lanes[l], i)
	}
	refused := make([]string, len(items))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		failed  error
	)
	for _, lane := range lanes {
		if len(lane) == 0 {
			continue
		}
		wg.Go(func() {
			batch := make([]plan.Item, 0, min(s.cfg.Batch, len(lane)))
			for first := 0; first < len(lane); first += s.cfg.Batch {
				chunk := lane[first:min(first+s.cfg.Batch, len(lane))]
				batch = batch[:0]
				for _, i := range chunk {
					batch = append(batch, items[i])
				}
				why, err := s.send(ctx, batch)
				if err != nil {
					errOnce.Do(func() { failed = err; cancel() })
					return
				}
				for _, i := range chunk {
					refused[i] = why
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		return failed
	}
	var re connector.RefusedError
	for i, why := range refused {
		if why != "" {
			re.Items = append(re.Items, connector.RefusedItem{Index: i, Reason: why})
		}
	}
	s.stats.delivered.Add(int64(len(items) - len(re.Items)))
	if len(re.Items) > 0 {
		s.stats.refused.Add(int64(len(re.Items)))
		return &re
	}
	return nil
}

// laneHash spreads items over the lanes by their key and window, so that
// the revisions of a pane are sent in order.
func laneHash(it *plan.Item) uint64 {
	h := fnv.New64a()
	switch {
	case len(it.Key) > 0:
		h.Write(it.Key)
	case it.Pane != nil:
		fmt.Fprintf(h, "%#v %d %d", it.Pane.Keys, it.Pane.Start, it.Pane.End)
	default:
		return it.ID
	}
	return h.Sum64()
}

// send sends one request of items until it is answered with a 2xx, or
// refused (why says why, as the dead letter shows it). err is ctx's.
func (s *Sink) send(ctx context.Context, items []plan.Item) (why string, err error) {
	body, ctype, err := s.body(items)
	if err != nil {
		return s.cfg.Writes() + ": " + err.Error(), nil
	}
	keys := make([]string, len(items))
	for i := range items {
		keys[i] = idempotencyKey(s.job, &items[i])
	}
	key := batchKey(s.job, keys)
	for attempt := 1; ; attempt++ {
		if s.rate != nil {
			if err := s.rate.wait(ctx, s.now, s.sleep); err != nil {
				return "", err
			}
		}
		s.stats.requests.Add(1)
		a := s.do(ctx, body, ctype, key)
		if err := ctx.Err(); err != nil {
			return "", err
		}
		var failure string
		switch {
		case a.err != "":
			failure = a.err
		case a.status >= 200 && a.status < 300:
			if attempt > 1 {
				s.log(fmt.Sprintf("%s: delivered after %d attempts", s.cfg.Writes(), attempt))
			}
			return "", nil
		case retried(a.status):
			failure = statusText(a.status, a.prefix)
		default:
			return fmt.Sprintf("%s: %s", s.cfg.Writes(), statusText(a.status, a.prefix)), nil
		}
		wait := s.backoff(attempt)
		if a.retryAfter > 0 {
			wait = min(a.retryAfter, s.cfg.MaxBackoff)
		}
		s.stats.retries.Add(1)
		if attempt&(attempt-1) == 0 { // the 1st, 2nd, 4th, 8th, ... failure
			s.log(fmt.Sprintf("%s: request failed (attempt %d): %s; trying again in %s", s.cfg.Writes(), attempt, failure, wait.Round(time.Millisecond)))
		}
		if err := s.sleep(ctx, wait); err != nil {
			return "", err
		}
	}
}

// answer is what one request got.
type answer struct {
	status     int
	prefix     string        // the first bytes of the body
	retryAfter time.Duration // what Retry-After said, or 0
	err        string        // a request that got no answer: why, without the URL
}

// do sends one request.
func (s *Sink) do(ctx context.Context, body []byte, ctype, key string) answer {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, s.cfg.Method, s.cfg.URL.String(), bytes.NewReader(body))
	if err != nil {
		return answer{err: "cannot make the request"}
	}
	req.Header = s.cfg.Headers.Clone()
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", ctype)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "weir")
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(rctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return answer{err: fmt.Sprintf("no answer within %s", s.cfg.Timeout)}
		}
		// A *url.Error quotes the URL: its cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return answer{err: s.scrub(err.Error())}
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	head := make([]byte, bodyPrefix)
	n, _ := io.ReadFull(resp.Body, head)
	a.prefix = printable(head[:n])
	// The rest is read (up to a bound) so that the connection is reused.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if retried(a.status) {
		a.retryAfter = retryAfter(resp.Header.Get("Retry-After"), s.now())
	}
	return a
}

// retried reports whether a request answered with status is tried again:
// a 5xx, a 408 or a 429.
func retried(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// retryAfter is what a Retry-After header says to wait: seconds, or an
// HTTP date; 0 when it says nothing usable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > 1<<31 {
			n = 1 << 31
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// backoff is the wait before retry attempt+1: backoff doubled each
// attempt, up to max_backoff, half of it jittered.
func (s *Sink) backoff(attempt int) time.Duration {
	d := s.cfg.Backoff
	for i := 1; i < attempt && d < s.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, s.cfg.MaxBackoff)
	s.mu.Lock()
	j := time.Duration(s.rng.Int64N(int64(d/2) + 1))
	s.mu.Unlock()
	return d/2 + j
}

func statusText(status int, prefix string) string {
	s := strconv.Itoa(status)
	if t := http.StatusText(status); t != "" {
		s += " " + t
	}
	if prefix != "" {
		s += ": " + prefix
	}
	return s
}

// printable is b as one line of text: control characters and invalid
// UTF-8 replaced, a rune cut at the end dropped.
func printable(b []byte) string {
	for len(b) > 0 && !utf8.Valid(b) {
		r, _ := utf8.DecodeLastRune(b)
		if r != utf8.RuneError {
			break
		}
		b = b[:len(b)-1]
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, string(b)))
}

// scrub takes the URL's secrets out of a text (an error of the HTTP
// client), should one hold them.
func (s *Sink) scrub(t string) string {
	u := s.cfg.URL
	for _, v := range []string{u.String(), u.RawQuery, u.EscapedPath(), u.Path} {
		if len(v) > 1 {
			t = strings.ReplaceAll(t, v, "…")
		}
	}
	for _, v := range s.cfg.secrets {
		if v != "" {
			t = strings.ReplaceAll(t, v, "…")
		}
	}
	return t
}

// Flush implements connector.Sink: a Write has delivered what it was
// given.
func (s *Sink) Flush(context.Context) error { return nil }

// PreCommit implements connector.Sink: nothing is held, nothing to keep.
func (s *Sink) PreCommit(context.Context, uint64) ([]byte, error) { return nil, nil }

// Commit implements connector.Sink.
func (s *Sink) Commit(context.Context, uint64, []byte) error { return nil }

// Guarantee implements connector.Sink: at least once.
func (s *Sink) Guarantee() connector.Guarantee { return connector.AtLeastOnce }

// Close implements connector.Sink.
func (s *Sink) Close() error {
	s.client.CloseIdleConnections()
	return nil
}

// bucket is a token bucket of requests: rate a second, one at a time.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
}

// wait takes a token, waiting for one as long as it takes.
func (b *bucket) wait(ctx context.Context, now func() time.Time, sleep func(context.Context, time.Duration) error) error {
	for {
		b.mu.Lock()
		t := now()
		if b.last.IsZero() {
			b.tokens = 1
		} else {
			b.tokens = min(1, b.tokens+t.Sub(b.last).Seconds()*b.rate)
		}
		b.last = t
		if b.tokens >= 1 {
			b.tokens--
			b.mu.Unlock()
			return nil
		}
		need := time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
		b.mu.Unlock()
		if err := sleep(ctx, max(need, time.Millisecond)); err != nil {
			return err
		}
	}
}
