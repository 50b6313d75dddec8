package job

import (
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Recount is the job that computes what j computes over the events of a
// ledger file in event-time order (weir reconcile), with the final values
// of each window written to the file out and nothing else: no other
// output, no late output, quarantine or dead letter, no checkpoint, no
// summary, no acceptance record, no console. Only what decides the values
// is taken from j (an allowlist: a field j gains later writes nothing here
// until it is added), so that a recount never touches a file the job owns.
// The ledger holds events the job's rules accepted (LineRules): the recount
// reads it with a perfect watermark, without lateness, arriving in event
// time.
func (j *Job) Recount(ledger, out string, having bool) *Job {
	r := &Job{
		Name: j.Name, File: j.File, Input: ledger, inputName: ledger,
		TimeField: j.TimeField, ArrivalField: j.TimeField,
		Key: j.Key, KeyParts: j.KeyParts, DedupHorizon: j.DedupHorizon,
		Window: window.NewStrategy(j.Window.Assigner), Aggregates: j.Aggregates,
		Parallelism: 1, Version: j.Version,
		MaxKeyBytes: j.MaxKeyBytes, DeadLetterMax: j.DeadLetterMax,
		State:   State{Backend: "memory"},
		Outputs: []Output{{Field: "output", File: out}},
		text:    j.text, doc: j.doc, vars: j.vars, secrets: j.secrets, lines: map[string]int{},
	}
	r.Watermark = watermark.Strategy{Kind: watermark.Perfect}
	if having {
		r.Having = j.Having
	}
	return r
}

// LineRules are the rules of the times of j's input lines, as weir run
// applies them (its event-time field, its arrival field, the latest event
// time its windows can hold, max_future): weir reconcile validates its
// ledger with them, for the same reasons.
func (j *Job) LineRules() linedec.Rules { return newLineParser(j).times }
