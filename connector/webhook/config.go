// Package webhook is weir's webhook output: the registered sink kind
// "webhook", which POSTs each result (or a batch of them) to a URL.
//
//	output: {webhook: {url: "https://hooks.example.com/alerts", headers: {Authorization: "Bearer ${TOKEN}"}}}
//
// A request's body is the pane's JSON line by default; a Go text/template
// over the pane's fields (body), a JSON array of a batch's lines (batch),
// or a preset's documented shape (preset: slack, preset: pagerduty).
//
// Its guarantee is at least once: every result reaches the receiver, and
// after a restore from a checkpoint what was sent since that checkpoint may
// be sent again. Every request carries an Idempotency-Key header that
// names its pane (job, key, window, revision), the same in every run, so
// that a receiver drops what it has seen. With checkpoints a job says that
// it accepts this (delivery: at_least_once).
//
// A request is retried, with exponential backoff and jitter, on a timeout,
// a lost connection, a 5xx, a 408 and a 429 (waiting what Retry-After
// says, up to max_backoff), for as long as the receiver takes: a receiver
// that stays down holds the job back, and nothing is dropped. Another 4xx
// (or a 3xx: redirects are not followed) refuses the result, which goes to
// the output's dead letter with the status and the first bytes of the
// answer.
//
// The URL's user information, path and query and the headers' values are
// secrets: Writes shows scheme://host/… only, and no log line or error
// holds them.
package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
)

// Kind is the name of the sink kind: output: {webhook: {...}}.
const Kind = "webhook"

// The defaults of the settings.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxInFlight = 4
	DefaultBackoff     = 200 * time.Millisecond
	DefaultMaxBackoff  = time.Minute
	// PagerDutyURL is the Events API v2 endpoint preset: pagerduty posts
	// to unless url says otherwise.
	PagerDutyURL = "https://events.pagerduty.com/v2/enqueue"
)

// Fields are the kind's settings.
var Fields = []plan.Field{
	{Name: "url", Type: plan.String, Doc: "the URL requests go to (http or https); may hold ${VAR}; its credentials, path and query are never shown. Required unless preset: pagerduty"},
	{Name: "method", Type: plan.String, Doc: "the request's method: POST (default), PUT or PATCH"},
	{Name: "headers", Type: plan.StringMap, Doc: "headers of every request, by name; values may hold ${VAR} and are never shown"},
	{Name: "body", Type: plan.String, Doc: "a Go text/template of the body over the pane's fields (.Key, .Keys, .Start, .End, .Revision, .Timing, .Final, .Retract, .Mode, .Aggregates.NAME, .JSON; json quotes a value); with batch, over .Items. Default: the pane's JSON line (a JSON array of them with batch)"},
	{Name: "preset", Type: plan.String, Doc: "slack (a Slack incoming webhook: {\"text\": ...}, body giving the text) or pagerduty (an Events API v2 trigger, dedup_key per key and window)"},
	{Name: "routing_key", Type: plan.String, Doc: "preset: pagerduty: the integration's routing key; may hold ${VAR}; never shown"},
	{Name: "severity", Type: plan.String, Doc: "preset: pagerduty: critical, error (default), warning or info"},
	{Name: "source", Type: plan.String, Doc: "preset: pagerduty: the payload's source (default: the job's name)"},
	{Name: "batch", Type: plan.Int, Doc: "results per request (default 1): a JSON array of their lines, or body over .Items"},
	{Name: "timeout", Type: plan.Duration, Doc: "how long a request may take before it is tried again (default 10s)"},
	{Name: "max_in_flight", Type: plan.Int, Doc: "requests sent at once (default 4); the results of one key and window are sent in order whatever it is"},
	{Name: "rate", Type: plan.String, Doc: "at most this many requests (retries included): 10/s, 100/m, 1000/h (default: no bound)"},
	{Name: "backoff", Type: plan.Duration, Doc: "the first wait before a retry (default 200ms); each retry doubles it, with jitter"},
	{Name: "max_backoff", Type: plan.Duration, Doc: "the longest wait before a retry, Retry-After included (default 1m)"},
	{Name: "delivery", Type: plan.String, Doc: "at_least_once: what a job with checkpoints must accept from a webhook (what was sent after the last checkpoint may be sent again, with the same Idempotency-Key)"},
}

func init() {
	plan.RegisterSink(plan.SinkKind{
		Name:   Kind,
		Doc:    "An HTTP request per result, or per batch of results, at least once, with an Idempotency-Key per key, window and revision.",
		Fields: Fields,
		Parse:  func(s plan.Settings) (plan.SinkConfig, error) { return Parse(s) },
	})
}

// Preset is a documented body shape.
type Preset uint8

// The presets.
const (
	NoPreset Preset = iota
	Slack
	PagerDuty
)

// Config is a webhook's settings, read and checked.
type Config struct {
	URL         *url.URL
	Method      string
	Headers     http.Header
	Body        *template.Template // nil: the default body
	Preset      Preset
	RoutingKey  string
	Severity    string
	Source      string
	Batch       int
	Timeout     time.Duration
	MaxInFlight int
	// Rate is the most requests a second (0: no bound).
	Rate       float64
	Backoff    time.Duration
	MaxBackoff time.Duration
	// AtLeastOnce says the settings accept at-least-once delivery
	// (delivery: at_least_once).
	AtLeastOnce bool

	secrets []string
}

var (
	_ plan.SinkConfig = (*Config)(nil)
	_ plan.Secreter   = (*Config)(nil)
	_ plan.Accepter   = (*Config)(nil)
)

// Parse reads and checks a webhook's settings.
func Parse(s plan.Settings) (*Config, error) {
	c := &Config{Method: http.MethodPost, Batch: 1, Timeout: DefaultTimeout, MaxInFlight: DefaultMaxInFlight,
		Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff, Headers: http.Header{}}
	preset, _, err := s.String("preset")
	if err != nil {
		return nil, err
	}
	switch preset {
	case "":
	case "slack":
		c.Preset = Slack
	case "pagerduty":
		c.Preset = PagerDuty
	default:
		return nil, s.Errorf("preset", "expected slack or pagerduty, got %q", preset)
	}
	raw, hasURL, err := s.String("url")
	if err != nil {
		return nil, err
	}
	if !hasURL && c.Preset == PagerDuty {
		raw, hasURL = PagerDutyURL, true
	}
	if !hasURL || raw == "" {
		return nil, s.Errorf("url", "missing: the URL requests go to")
	}
	// The URL is a secret as a whole: an error quotes none of it.
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, s.Errorf("url", "not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, s.Errorf("url", "expected an http:// or https:// URL, got scheme %q", u.Scheme)
	case u.Host == "":
		return nil, s.Errorf("url", "the URL has no host")
	}
	c.URL = u
	c.secrets = append(c.secrets, raw)
	if u.User != nil {
		c.secrets = append(c.secrets, u.User.String())
		if p, ok := u.User.Password(); ok {
			c.secrets = append(c.secrets, p)
		}
	}
	if u.RawQuery != "" {
		c.secrets = append(c.secrets, u.RawQuery)
	}
	if m, ok, err := s.String("method"); err != nil {
		return nil, err
	} else if ok {
		m = strings.ToUpper(m)
		if m != http.MethodPost && m != http.MethodPut && m != http.MethodPatch {
			return nil, s.Errorf("method", "expected POST, PUT or PATCH, got %q", m)
		}
		c.Method = m
	}
	headers, _, err := s.StringMap("headers")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(headers))
	for n := range headers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := headers[n]
		if !validHeaderName(n) {
			return nil, s.Errorf("headers", "%q is not a header name", n)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, s.Errorf("headers", "the value of %s holds a line break", n)
		}
		if strings.EqualFold(n, "Idempotency-Key") || strings.EqualFold(n, "Content-Length") || strings.EqualFold(n, "Host") {
			return nil, s.Errorf("headers", "%s is set by the webhook itself", n)
		}
		c.Headers.Set(n, v)
		c.secrets = append(c.secrets, v)
	}
	if body, ok, err := s.String("body"); err != nil {
		return nil, err
	} else if ok {
		t, err := template.New("body").Funcs(funcs).Option("missingkey=error").Parse(body)
		if err != nil {
			return nil, s.Errorf("body", "%s", strings.TrimPrefix(err.Error(), "template: "))
		}
		c.Body = t
	}
	if c.RoutingKey, _, err = s.String("routing_key"); err != nil {
		return nil, err
	}
	if c.Severity, _, err = s.String("severity"); err != nil {
		return nil, err
	}
	if c.Source, _, err = s.String("source"); err != nil {
		return nil, err
	}
	if c.Preset == PagerDuty {
		if c.RoutingKey == "" {
			return nil, s.Errorf("routing_key", "preset: pagerduty needs the integration's routing key")
		}
		c.secrets = append(c.secrets, c.RoutingKey)
		switch c.Severity {
		case "":
			c.Severity = "error"
		case "critical", "error", "warning", "info":
		default:
			return nil, s.Errorf("severity", "expected critical, error, warning or info, got %q", c.Severity)
		}
	} else {
		for _, f := range []string{"routing_key", "severity", "source"} {
			if _, ok, _ := s.String(f); ok {
				return nil, s.Errorf(f, "only preset: pagerduty has a %s", f)
			}
		}
	}
	if n, ok, err := s.Int("batch"); err != nil {
		return nil, err
	} else if ok {
		if n < 1 || n > 10000 {
			return nil, s.Errorf("batch", "expected 1 to 10000 results per request, got %d", n)
		}
		if n > 1 && c.Preset == PagerDuty {
			return nil, s.Errorf("batch", "PagerDuty takes one event a request")
		}
		c.Batch = n
	}
	if n, ok, err := s.Int("max_in_flight"); err != nil {
		return nil, err
	} else if ok {
		if n < 1 || n > 1024 {
			return nil, s.Errorf("max_in_flight", "expected 1 to 1024, got %d", n)
		}
		c.MaxInFlight = n
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"timeout", &c.Timeout}, {"backoff", &c.Backoff}, {"max_backoff", &c.MaxBackoff}} {
		v, ok, err := s.Duration(d.name)
		if err != nil {
			return nil, err
		}
		if ok {
			if v <= 0 {
				return nil, s.Errorf(d.name, "expected more than 0")
			}
			*d.to = time.Duration(v) * time.Millisecond
		}
	}
	if c.MaxBackoff < c.Backoff {
		return nil, s.Errorf("max_backoff", "less than backoff")
	}
	if r, ok, err := s.String("rate"); err != nil {
		return nil, err
	} else if ok {
		if c.Rate, err = parseRate(r); err != nil {
			return nil, s.Errorf("rate", "%v", err)
		}
	}
	if d, ok, err := s.String("delivery"); err != nil {
		return nil, err
	} else if ok {
		if d != "at_least_once" {
			return nil, s.Errorf("delivery", "a webhook delivers at_least_once (a request sent may be sent again after a restart), got %q", d)
		}
		c.AtLeastOnce = true
	}
	return c, nil
}

// parseRate reads 10/s, 100/m, 1000/h or 10 (a second).
func parseRate(s string) (float64, error) {
	n, per, _ := strings.Cut(s, "/")
	v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("expected requests per second, minute or hour (10/s, 100/m, 1000/h), got %q", s)
	}
	switch strings.TrimSpace(per) {
	case "", "s":
		return v, nil
	case "m":
		return v / 60, nil
	case "h":
		return v / 3600, nil
	}
	return 0, fmt.Errorf("expected requests per second, minute or hour (10/s, 100/m, 1000/h), got %q", s)
}

// validHeaderName reports whether n is an HTTP token.
func validHeaderName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range []byte(n) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Shown is the URL as weir shows it: its scheme and host, the rest of it
// (which may hold a token) elided.
func (c *Config) Shown() string {
	s := c.URL.Scheme + "://" + c.URL.Host
	if c.URL.Path != "" && c.URL.Path != "/" || c.URL.RawQuery != "" {
		return s + "/…"
	}
	return s
}

// Writes implements plan.SinkConfig.
func (c *Config) Writes() string { return "webhook " + c.Shown() }

// Target implements plan.SinkConfig: the scheme and host, and a short
// digest of the path and query, so that two webhooks on one host have
// records of their own without either showing its path.
func (c *Config) Target() string {
	sum := sha256.Sum256([]byte(c.URL.EscapedPath() + "?" + c.URL.RawQuery))
	return c.URL.Scheme + "://" + c.URL.Host + "#" + hex.EncodeToString(sum[:4])
}

// Secrets implements plan.Secreter: the URL as given, its user
// information and query, the headers' values, the routing key.
func (c *Config) Secrets() []string { return slices.Clone(c.secrets) }

// Accepts implements plan.Accepter.
func (c *Config) Accepts() (connector.Guarantee, bool) {
	return connector.AtLeastOnce, c.AtLeastOnce
}

// New implements plan.SinkConfig.
func (c *Config) New(env plan.Env) (connector.Sink[plan.Item], error) {
	return NewSink(c, env), nil
}
