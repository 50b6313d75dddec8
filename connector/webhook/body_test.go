package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/plan"
)

// capture is a receiver that keeps every request's body and headers.
type capture struct {
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies = append(c.bodies, string(b))
	h := r.Header.Clone()
	h.Set("X-Method", r.Method)
	c.headers = append(c.headers, h)
	c.mu.Unlock()
}

// send writes items to a sink of the settings (url added) and returns
// what the receiver got.
func send(t *testing.T, v plan.Values, items ...plan.Item) *capture {
	t.Helper()
	c := &capture{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	if _, ok := v["url"]; !ok {
		v["url"] = srv.URL + "/hook"
	} else {
		v["url"] = strings.Replace(v["url"].(string), "RECEIVER", strings.TrimPrefix(srv.URL, "http://"), 1)
	}
	s, _, _ := newTestSink(t, v)
	if err := s.Write(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaultBodies(t *testing.T) {
	a, b, c := testPane("a", 0, 0, 3), testPane("b", 0, 1, 4), testPane("c", 1, 0, 5)
	got := send(t, plan.Values{"headers": map[string]string{"X-Team": "ops"}}, a)
	if len(got.bodies) != 1 || got.bodies[0] != string(a.JSON) {
		t.Errorf("bodies %q", got.bodies)
	}
	h := got.headers[0]
	if h.Get("Content-Type") != "application/json" || h.Get("X-Team") != "ops" || h.Get("X-Method") != "POST" ||
		h.Get("Idempotency-Key") != idempotencyKey("alerts", &a) || len(h.Get("Idempotency-Key")) != 32 || h.Get("User-Agent") != "weir" {
		t.Errorf("headers %v", h)
	}
	// A batch is a JSON array of the lines; the last request holds what
	// is left.
	got = send(t, plan.Values{"batch": 2, "method": "put", "max_in_flight": 1}, a, b, c)
	want := []string{"[" + string(a.JSON) + "," + string(b.JSON) + "]", "[" + string(c.JSON) + "]"}
	if strings.Join(got.bodies, "\n") != strings.Join(want, "\n") || got.headers[0].Get("X-Method") != "PUT" {
		t.Errorf("bodies\n%s\nwant\n%s", strings.Join(got.bodies, "\n"), strings.Join(want, "\n"))
	}
	if k0, k1 := got.headers[0].Get("Idempotency-Key"), got.headers[1].Get("Idempotency-Key"); k0 == k1 || k1 != idempotencyKey("alerts", &c) {
		t.Errorf("batch keys %s %s", k0, k1)
	}
	for _, b := range got.bodies {
		if !json.Valid([]byte(b)) {
			t.Errorf("not JSON: %s", b)
		}
	}
}

func TestTemplates(t *testing.T) {
	a, b := testPane("a", 0, 2, 3), testPane("b\"q", 0, 1, 4)
	got := send(t, plan.Values{"body": `{"alert": {{json .Key}}, "from": "{{.Start}}", "n": {{.Aggregates.n}}, "rev": {{.Revision}}, "timing": "{{.Timing}}", "mode": "{{.Mode}}", "job": "{{.Job}}"}`, "max_in_flight": 1}, a, b)
	want := []string{
		`{"alert": "a", "from": "2026-05-28T20:26:40.000Z", "n": 3, "rev": 2, "timing": "ON_TIME", "mode": "discarding", "job": "alerts"}`,
		`{"alert": "b\"q", "from": "2026-05-28T20:26:40.000Z", "n": 4, "rev": 1, "timing": "ON_TIME", "mode": "discarding", "job": "alerts"}`,
	}
	if strings.Join(got.bodies, "\n") != strings.Join(want, "\n") || got.headers[0].Get("Content-Type") != "application/json" {
		t.Errorf("bodies\n%s\nwant\n%s", strings.Join(got.bodies, "\n"), strings.Join(want, "\n"))
	}
	// Over a batch; a body that is not JSON is sent as text.
	got = send(t, plan.Values{"body": `{{range .Items}}{{.Key}}={{.Aggregates.n}};{{end}}`, "batch": 5}, a, b)
	if len(got.bodies) != 1 || got.bodies[0] != `a=3;b"q=4;` || got.headers[0].Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("bodies %q %v", got.bodies, got.headers)
	}
	// A template that fails on a pane refuses it.
	s, _, _ := newTestSink(t, plan.Values{"url": "http://127.0.0.1:1/", "body": `{{.Aggregates.missing}}`})
	err := s.Write(context.Background(), []plan.Item{a})
	if err == nil || !strings.Contains(err.Error(), `1 item refused: webhook http://127.0.0.1:1: body: body:1:13: executing "body" at <.Aggregates.missing>: map has no entry for key "missing"`) {
		t.Errorf("a failing template: %v", err)
	}
}

// Slack's incoming webhooks take {"text": ...}, with &, < and > escaped
// (https://api.slack.com/messaging/webhooks, "Escaping text").
func TestSlackPreset(t *testing.T) {
	a, b := testPane("a<b>&c", 0, 0, 3), testPane("d", 0, 1, 4)
	b.Pane.Final = true
	got := send(t, plan.Values{"preset": "slack", "max_in_flight": 1}, a, b)
	want := []string{
		`{"text":"alerts: a&lt;b&gt;&amp;c 2026-05-28T20:26:40.000Z to 2026-05-28T20:27:40.000Z: n=3 (revision 0, ON_TIME)"}`,
		`{"text":"alerts: d 2026-05-28T20:26:40.000Z to 2026-05-28T20:27:40.000Z: n=4 (revision 1, ON_TIME, final)"}`,
	}
	if strings.Join(got.bodies, "\n") != strings.Join(want, "\n") || got.headers[0].Get("Content-Type") != "application/json" {
		t.Errorf("bodies\n%s\nwant\n%s", strings.Join(got.bodies, "\n"), strings.Join(want, "\n"))
	}
	got = send(t, plan.Values{"preset": "slack", "body": `{{range .Items}}{{.Key}} saw {{.Aggregates.n}} "orders". {{end}}`, "batch": 2}, a, b)
	if w := `{"text":"a&lt;b&gt;&amp;c saw 3 \"orders\". d saw 4 \"orders\". "}`; len(got.bodies) != 1 || got.bodies[0] != w {
		t.Errorf("bodies %q, want %s", got.bodies, w)
	}
}

// PagerDuty's Events API v2 takes a trigger event of routing_key,
// event_action, dedup_key and payload (summary, source, severity required;
// timestamp, component, custom_details optional), and a resolve event of
// the first three (https://developer.pagerduty.com/api-reference/YXBpOjI3NDgyNjU-pager-duty-v2-events-api).
func TestPagerDutyPreset(t *testing.T) {
	a := testPane("card-7", 0, 0, 3)
	a2 := testPane("card-7", 0, 1, 5)
	r := testPane("card-7", 0, 2, 5)
	r.Pane.Retract = true
	got := send(t, plan.Values{"preset": "pagerduty", "url": "http://RECEIVER/v2/enqueue", "routing_key": "R0UT1NGKEY", "severity": "warning", "max_in_flight": 1}, a, a2, r)
	dedup := "weir:alerts:card-7:2026-05-28T20:26:40.000Z/2026-05-28T20:27:40.000Z"
	want := []string{
		`{"routing_key":"R0UT1NGKEY","event_action":"trigger","dedup_key":"` + dedup + `","payload":{"summary":"alerts: card-7 2026-05-28T20:26:40.000Z to 2026-05-28T20:27:40.000Z: n=3 (revision 0, ON_TIME)","source":"alerts","severity":"warning","timestamp":"2026-05-28T20:27:41.000Z","component":"alerts","custom_details":` + string(a.JSON) + `}}`,
		`{"routing_key":"R0UT1NGKEY","event_action":"trigger","dedup_key":"` + dedup + `","payload":{"summary":"alerts: card-7 2026-05-28T20:26:40.000Z to 2026-05-28T20:27:40.000Z: n=5 (revision 1, ON_TIME)","source":"alerts","severity":"warning","timestamp":"2026-05-28T20:27:41.000Z","component":"alerts","custom_details":` + string(a2.JSON) + `}}`,
		`{"routing_key":"R0UT1NGKEY","event_action":"resolve","dedup_key":"` + dedup + `"}`,
	}
	if strings.Join(got.bodies, "\n") != strings.Join(want, "\n") {
		t.Errorf("bodies\n%s\nwant\n%s", strings.Join(got.bodies, "\n"), strings.Join(want, "\n"))
	}
	// The documented shape, field by field.
	var ev struct {
		RoutingKey  string `json:"routing_key"`
		EventAction string `json:"event_action"`
		DedupKey    string `json:"dedup_key"`
		Payload     struct {
			Summary, Source, Severity, Timestamp string
			CustomDetails                        map[string]any `json:"custom_details"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(got.bodies[0]), &ev); err != nil || ev.Payload.CustomDetails["n"] != 3.0 || len(ev.DedupKey) > 255 {
		t.Errorf("%v %+v", err, ev)
	}
	// The default URL, and a summary from the body template.
	c, err := Parse(plan.Values{"preset": "pagerduty", "routing_key": "k", "body": "{{.Key}} is over"})
	if err != nil || c.URL.String() != PagerDutyURL || c.Writes() != "webhook https://events.pagerduty.com/…" {
		t.Errorf("%v %v", err, c)
	}
	s := NewSink(c, plan.Env{Job: "alerts"})
	body, _, _ := s.body([]plan.Item{a})
	if !strings.Contains(string(body), `"summary":"card-7 is over","source":"alerts","severity":"error"`) {
		t.Errorf("%s", body)
	}
	// A long key has a digest for its dedup_key.
	long := testPane(strings.Repeat("k", 300), 0, 0, 1)
	if d := dedupKey("alerts", &long); len(d) != 5+64 || !strings.HasPrefix(d, "weir:") {
		t.Errorf("dedup_key %q", d)
	}
}

// The Idempotency-Key is the same for the same pane whatever the run, and
// differs between revisions, panes, jobs; an item without an identity has
// one from its key, window and revision.
func TestIdempotencyKey(t *testing.T) {
	a, a1, b := testPane("a", 0, 0, 1), testPane("a", 0, 1, 1), testPane("b", 0, 0, 1)
	again := testPane("a", 0, 0, 99)
	k := idempotencyKey("j", &a)
	if k != idempotencyKey("j", &again) || k == idempotencyKey("j", &a1) || k == idempotencyKey("j", &b) || k == idempotencyKey("k", &a) {
		t.Error("keys")
	}
	a.ID, a1.ID, again.ID = 0, 0, 0
	k0 := idempotencyKey("j", &a)
	if k0 == k || k0 != idempotencyKey("j", &again) || k0 == idempotencyKey("j", &a1) {
		t.Error("keys without identity")
	}
	// What a receiver de-duplicates by never changes from a version of
	// weir to the next.
	if k != "315a76c30514220e350e4c8f1c2858e8" || k0 != "6c41789d5a6e659836a65d31c88a3994" {
		t.Errorf("keys %q %q", k, k0)
	}
}

func TestSettings(t *testing.T) {
	c, err := Parse(plan.Values{"url": "https://user:pw@hooks.example.com/services/T0/B0/XyZ?token=abc", "headers": map[string]string{"Authorization": "Bearer s3cr3t"},
		"rate": "30/m", "timeout": 2 * time.Second, "batch": 10, "delivery": "at_least_once"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Writes() != "webhook https://hooks.example.com/…" || !strings.HasPrefix(c.Target(), "https://hooks.example.com#") || c.Rate != 0.5 || c.Batch != 10 || c.Timeout != 2*time.Second {
		t.Errorf("%s %s %+v", c.Writes(), c.Target(), c)
	}
	if g, ok := c.Accepts(); !ok || g.String() != "at_least_once" {
		t.Error("delivery")
	}
	secrets := strings.Join(c.Secrets(), " ")
	for _, s := range []string{"Bearer s3cr3t", "pw", "token=abc", "https://user:pw@hooks.example.com/services/T0/B0/XyZ?token=abc"} {
		if !strings.Contains(secrets, s) {
			t.Errorf("secrets %q lack %q", secrets, s)
		}
	}
	for v, want := range map[string]string{
		`url=ftp://x/`:                                              `url: expected an http:// or https:// URL, got scheme "ftp"`,
		`url=http://`:                                               `url: the URL has no host`,
		`url=http://x/ method=GET`:                                  `method: expected POST, PUT or PATCH, got "GET"`,
		`url=http://x/ rate=fast`:                                   `rate: expected requests per second, minute or hour (10/s, 100/m, 1000/h), got "fast"`,
		`url=http://x/ batch=0`:                                     `batch: expected 1 to 10000 results per request, got 0`,
		`url=http://x/ preset=teams`:                                `preset: expected slack or pagerduty, got "teams"`,
		`preset=pagerduty`:                                          `routing_key: preset: pagerduty needs the integration's routing key`,
		`preset=pagerduty routing_key=k batch=2`:                    `batch: PagerDuty takes one event a request`,
		`url=http://x/ routing_key=k`:                               `routing_key: only preset: pagerduty has a routing_key`,
		`url=http://x/ body={{.Key`:                                 `body: body:1: unclosed action`,
		`url=http://x/ delivery=exactly_once`:                       `delivery: a webhook delivers at_least_once (a request sent may be sent again after a restart), got "exactly_once"`,
		`url=http://x/ preset=pagerduty routing_key=k severity=bad`: `severity: expected critical, error, warning or info, got "bad"`,
		``: `url: missing: the URL requests go to`,
	} {
		vals := plan.Values{}
		for _, kv := range strings.Fields(v) {
			k, val, _ := strings.Cut(kv, "=")
			vals[k] = val
			if k == "batch" {
				vals[k] = int(val[0] - '0')
			}
		}
		if _, err := Parse(vals); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", v, err, want)
		}
	}
	for h, want := range map[string]string{
		"Bad Name":        `headers: "Bad Name" is not a header name`,
		"Idempotency-Key": `headers: Idempotency-Key is set by the webhook itself`,
	} {
		if _, err := Parse(plan.Values{"url": "http://x/", "headers": map[string]string{h: "v"}}); err == nil || err.Error() != want {
			t.Errorf("%s: %v", h, err)
		}
	}
	if _, err := Parse(plan.Values{"url": "http://x/", "headers": map[string]string{"X": "a\nb"}}); err == nil || strings.Contains(err.Error(), "a\nb") {
		t.Errorf("a header with a line break: %v", err)
	}
	if _, err := Parse(plan.Values{"url": "http://x/", "headers": "X: y"}); err == nil || err.Error() != "headers: expected a map[string]string, got string" {
		t.Errorf("headers as a string: %v", err)
	}
}
