package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// Pane is what a body template sees of one result (.Key, .Start, ...), and
// of each of a batch's (.Items).
type Pane struct {
	// Job is the job's name.
	Job string
	// Kind is pane, late_event, rejected_record or dead_letter.
	Kind string
	// Key is the key's values, joined by "/"; Keys each value (a string, an
	// int64, a float64, a bool).
	Key  string
	Keys []any
	// Start and End are the window's (2026-05-28T20:26:00.000Z as text).
	Start, End mtime.Time
	Revision   int64
	// Timing is EARLY, ON_TIME or LATE.
	Timing         string
	Final, Retract bool
	// Mode is accumulating, discarding or retracting: whether the
	// aggregates are the window's totals so far or deltas.
	Mode string
	// Aggregates are the results by name: an int64, a float64, a decimal
	// string, or nil.
	Aggregates map[string]any
	// Emitted is when the pane was emitted.
	Emitted mtime.Time
	// JSON is the result's JSON line.
	JSON string
}

// Batch is what a body template sees with batch: the results of one
// request, in order.
type Batch struct {
	Job   string
	Items []Pane
}

// funcs are the functions a body template may call.
var funcs = template.FuncMap{
	// json is a value as JSON: a string quoted, a number as it is.
	"json": func(v any) (string, error) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", err
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	},
}

var kindNames = [...]string{plan.Pane: "pane", plan.LateEvent: "late_event", plan.RejectedRecord: "rejected_record", plan.DeadLetter: "dead_letter", plan.Joined: "joined"}

// paneOf is the template's view of an item.
func paneOf(job string, it *plan.Item) Pane {
	p := Pane{Job: job, JSON: string(it.JSON)}
	if int(it.Kind) < len(kindNames) {
		p.Kind = kindNames[it.Kind]
	}
	pf := it.Pane
	if pf == nil {
		return p
	}
	p.Keys = pf.Keys
	p.Key = keyText(pf.Keys)
	p.Start, p.End, p.Revision, p.Timing = pf.Start, pf.End, pf.Revision, pf.Timing
	p.Final, p.Retract, p.Mode, p.Emitted = pf.Final, pf.Retract, pf.Mode, pf.Emitted
	p.Aggregates = make(map[string]any, len(pf.Names))
	for i, n := range pf.Names {
		if i < len(pf.Values) {
			p.Aggregates[n] = pf.Values[i]
		}
	}
	return p
}

func keyText(keys []any) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprint(k)
	}
	return strings.Join(parts, "/")
}

// body is the body of a request of items, and its content type. An error
// is the template's, about these items.
func (s *Sink) body(items []plan.Item) ([]byte, string, error) {
	c := s.cfg
	switch c.Preset {
	case Slack:
		var lines []string
		if c.Body != nil {
			t, err := s.execute(items)
			if err != nil {
				return nil, "", err
			}
			lines = append(lines, string(t))
		} else {
			for i := range items {
				lines = append(lines, summary(s.job, &items[i]))
			}
		}
		return slackBody(strings.Join(lines, "\n")), "application/json", nil
	case PagerDuty:
		sum := summary(s.job, &items[0])
		if c.Body != nil {
			t, err := s.execute(items)
			if err != nil {
				return nil, "", err
			}
			sum = string(t)
		}
		return pagerDutyBody(c, s.job, &items[0], sum), "application/json", nil
	}
	if c.Body != nil {
		b, err := s.execute(items)
		return b, contentType(b), err
	}
	if c.Batch == 1 {
		return append([]byte(nil), items[0].JSON...), "application/json", nil
	}
	b := []byte{'['}
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, items[i].JSON...)
	}
	return append(b, ']'), "application/json", nil
}

// execute applies the body template to the items: to the one pane, or to
// the batch.
func (s *Sink) execute(items []plan.Item) ([]byte, error) {
	var data any
	if s.cfg.Batch == 1 {
		data = paneOf(s.job, &items[0])
	} else {
		b := Batch{Job: s.job}
		for i := range items {
			b.Items = append(b.Items, paneOf(s.job, &items[i]))
		}
		data = b
	}
	var out bytes.Buffer
	if err := s.cfg.Body.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("body: %s", strings.TrimPrefix(err.Error(), "template: "))
	}
	return out.Bytes(), nil
}

// contentType is application/json for a body that is JSON, else text.
func contentType(b []byte) string {
	if json.Valid(b) {
		return "application/json"
	}
	return "text/plain; charset=utf-8"
}

// summary is a line that says what an item is: for a pane, its key, window,
// aggregates and revision.
func summary(job string, it *plan.Item) string {
	pf := it.Pane
	if pf == nil {
		return job + ": " + string(it.JSON)
	}
	var b strings.Builder
	b.WriteString(job)
	b.WriteString(": ")
	if len(pf.Keys) > 0 {
		b.WriteString(keyText(pf.Keys))
		b.WriteByte(' ')
	}
	if pf.Start != mtime.MinTime || pf.End != mtime.MaxTime {
		fmt.Fprintf(&b, "%s to %s", pf.Start, pf.End)
	} else {
		b.WriteString("all time")
	}
	for i, n := range pf.Names {
		if i < len(pf.Values) {
			sep := ", "
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(&b, "%s%s=%s", sep, n, valueText(pf.Values[i]))
		}
	}
	fmt.Fprintf(&b, " (revision %d, %s", pf.Revision, pf.Timing)
	if pf.Final {
		b.WriteString(", final")
	}
	if pf.Retract {
		b.WriteString(", retracted")
	}
	b.WriteByte(')')
	return b.String()
}

func valueText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// slackEscaper escapes the three characters Slack's text format gives a
// meaning (&, <, >), as its documentation says to.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackBody is a Slack incoming webhook's body: {"text": ...}.
func slackBody(text string) []byte {
	return marshal(struct {
		Text string `json:"text"`
	}{slackEscaper.Replace(text)})
}

// pagerDutyEvent is an Events API v2 event.
type pagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *pagerDutyPayload `json:"payload,omitempty"`
}

type pagerDutyPayload struct {
	Summary       string          `json:"summary"`
	Source        string          `json:"source"`
	Severity      string          `json:"severity"`
	Timestamp     string          `json:"timestamp,omitempty"`
	Component     string          `json:"component,omitempty"`
	CustomDetails json.RawMessage `json:"custom_details,omitempty"`
}

// pagerDutyBody is an Events API v2 trigger for an item (a resolve for a
// retraction): its dedup_key the item's key and window, so that the
// revisions of a pane are one alert.
func pagerDutyBody(c *Config, job string, it *plan.Item, summary string) []byte {
	ev := pagerDutyEvent{RoutingKey: c.RoutingKey, EventAction: "trigger", DedupKey: dedupKey(job, it)}
	if it.Pane != nil && it.Pane.Retract {
		ev.EventAction = "resolve"
		return marshal(ev)
	}
	if len(summary) > 1024 {
		summary = summary[:1021] + "..."
	}
	source := c.Source
	if source == "" {
		source = job
	}
	p := &pagerDutyPayload{Summary: summary, Source: source, Severity: c.Severity, Component: job}
	if it.Pane != nil && it.Pane.Emitted != mtime.MinTime && it.Pane.Emitted != 0 {
		p.Timestamp = it.Pane.Emitted.String()
	}
	if json.Valid(it.JSON) {
		p.CustomDetails = json.RawMessage(it.JSON)
	}
	ev.Payload = p
	return marshal(ev)
}

// dedupKey is PagerDuty's dedup_key of an item: weir, the job, the key and
// the window (at most 255 characters: a digest when longer); for what is
// not a pane, its idempotency key.
func dedupKey(job string, it *plan.Item) string {
	pf := it.Pane
	if pf == nil {
		return "weir:" + job + ":" + idempotencyKey(job, it)
	}
	k := fmt.Sprintf("weir:%s:%s:%s/%s", job, keyText(pf.Keys), pf.Start, pf.End)
	if len(k) > 255 {
		sum := sha256.Sum256([]byte(k))
		k = "weir:" + hex.EncodeToString(sum[:])
	}
	return k
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // strings and raw JSON only
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// idempotencyKey is the Idempotency-Key of a request of one item: a digest
// of the job's name and the item's identity (its key, window and revision,
// which every run computes the same), so that a request sent again after a
// restore carries the key it had.
func idempotencyKey(job string, it *plan.Item) string {
	h := sha256.New()
	h.Write([]byte(job))
	h.Write([]byte{0, byte(it.Kind)})
	switch {
	case it.ID != 0:
		h.Write(binary.BigEndian.AppendUint64(nil, it.ID))
	case it.Pane != nil:
		pf := it.Pane
		fmt.Fprintf(h, "%#v", pf.Keys)
		var b []byte
		for _, v := range []int64{int64(pf.Start), int64(pf.End), pf.Revision} {
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		}
		if pf.Retract {
			b = append(b, 1)
		}
		h.Write(b)
	default:
		h.Write(it.JSON)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// batchKey is the Idempotency-Key of a request of several items: a digest
// of theirs.
func batchKey(job string, keys []string) string {
	if len(keys) == 1 {
		return keys[0]
	}
	h := sha256.New()
	h.Write([]byte(job))
	for _, k := range keys {
		h.Write([]byte{0})
		h.Write([]byte(k))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
