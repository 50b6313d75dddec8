package job

import (
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/jobfile"
)

// LineRules are the rules of the times of j's input lines, as weir run
// applies them (its event-time field, its arrival field, the latest event
// time its windows can hold, max_future): weir reconcile validates its
// ledger with them, for the same reasons.
func LineRules(j *jobfile.Job) linedec.Rules { return newLineParser(j).times }
