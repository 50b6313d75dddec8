package jobfile

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/trigger"
)

// The fields of a composite trigger (Beam's), at the top of trigger: and in
// every trigger a composite one holds.
var compositeFields = []string{"count", "processing_time", "aligned", "never", "after_watermark", "after_each", "after_first", "after_all", "repeatedly", "or_finally"}

// compositeTrigger reads the composite trigger of the mapping t (the
// trigger: field itself, or one of the triggers it holds), or reports that
// t names none (ok false). Exactly one of its forms must be given; aligned
// goes with processing_time.
func compositeTrigger(t *node) (e trigger.Expr, ok bool, err error) {
	var form string
	var formNode *yaml.Node
	for _, f := range compositeFields {
		if f == "aligned" {
			continue
		}
		if v := t.get(f); v != nil {
			if form != "" {
				return e, true, t.errf(v, t.field(f), "a trigger is one of count, processing_time, never, after_watermark, after_each, after_first, after_all, repeatedly or or_finally; %s is given too", form)
			}
			form, formNode = f, v
		}
	}
	if a := t.get("aligned"); a != nil && form != "processing_time" {
		return e, true, t.errf(a, t.field("aligned"), "aligned goes with processing_time")
	}
	if form == "" {
		return e, false, nil
	}
	field := t.field(form)
	switch form {
	case "count":
		n, _, err := t.integer("count")
		if err != nil {
			return e, true, err
		}
		if n < 1 {
			return e, true, t.errf(formNode, field, "expected a count of events of at least 1, got %d", n)
		}
		return trigger.AfterCount(n), true, nil
	case "processing_time":
		d, _, err := t.duration("processing_time")
		if err != nil {
			return e, true, err
		}
		if d <= 0 {
			return e, true, t.errf(formNode, field, "expected a positive duration such as 1m")
		}
		aligned, err := t.boolean("aligned")
		if err != nil {
			return e, true, err
		}
		e = trigger.Expr{Op: trigger.OpProcessingTime, Delay: d, Aligned: aligned}
		return e, true, nil
	case "never":
		b, err := t.boolean("never")
		if err != nil {
			return e, true, err
		}
		if !b {
			return e, true, t.errf(formNode, field, "write never: true (a trigger that never fires), or leave it out")
		}
		return trigger.Never(), true, nil
	case "after_watermark":
		w, err := t.sub("after_watermark")
		if err != nil {
			return e, true, err
		}
		if err := w.strict("early", "late"); err != nil {
			return e, true, err
		}
		e = trigger.PastEndOfWindow()
		for _, f := range []string{"early", "late"} {
			if w.get(f) == nil {
				continue
			}
			sub, err := subTrigger(w, f)
			if err != nil {
				return e, true, err
			}
			if f == "early" {
				e = e.WithEarlyFirings(sub)
			} else {
				e = e.WithLateFirings(sub)
			}
		}
		return e, true, nil
	case "repeatedly":
		sub, err := subTrigger(t, "repeatedly")
		if err != nil {
			return e, true, err
		}
		return trigger.Repeatedly(sub), true, nil
	case "or_finally":
		o, err := t.sub("or_finally")
		if err != nil {
			return e, true, err
		}
		if err := o.strict("trigger", "until"); err != nil {
			return e, true, err
		}
		var subs [2]trigger.Expr
		for i, f := range []string{"trigger", "until"} {
			if o.get(f) == nil {
				continue
			}
			if subs[i], err = subTrigger(o, f); err != nil {
				return e, true, err
			}
		}
		for _, f := range []string{"trigger", "until"} {
			if o.get(f) == nil {
				return e, true, o.errf(nil, o.field(f), "missing: or_finally takes a trigger and an until trigger, such as {trigger: {repeatedly: {count: 10}}, until: {count: 1000}}")
			}
		}
		return trigger.OrFinally(subs[0], subs[1]), true, nil
	}
	// after_each, after_first, after_all: a list of triggers.
	if formNode.Kind != yaml.SequenceNode || len(formNode.Content) == 0 {
		return e, true, t.errf(formNode, field, "expected a list of triggers, such as [{count: 100}, {processing_time: 1m}]")
	}
	subs := make([]trigger.Expr, len(formNode.Content))
	for i, item := range formNode.Content {
		m, err := asMapping(t.file, fmt.Sprintf("%s[%d]", field, i), item)
		if err != nil {
			return e, true, err
		}
		if subs[i], err = exprOf(m); err != nil {
			return e, true, err
		}
	}
	switch form {
	case "after_each":
		e = trigger.AfterEach(subs...)
	case "after_first":
		e = trigger.AfterFirst(subs...)
	default:
		e = trigger.AfterAll(subs...)
	}
	return e, true, nil
}

// subTrigger reads the trigger in field f of p.
func subTrigger(p *node, f string) (trigger.Expr, error) {
	m, err := p.sub(f)
	if err != nil {
		return trigger.Expr{}, err
	}
	return exprOf(m)
}

// exprOf reads the mapping m, which must be a trigger.
func exprOf(m *node) (trigger.Expr, error) {
	if err := m.strict(compositeFields...); err != nil {
		return trigger.Expr{}, err
	}
	e, ok, err := compositeTrigger(m)
	if err == nil && !ok {
		err = m.errf(nil, m.path, "expected a trigger: one of count, processing_time, never, after_watermark, after_each, after_first, after_all, repeatedly or or_finally")
	}
	return e, err
}
