package main

import (
	"fmt"
	"io"

	"github.com/weirstream/weir/job"
)

// cmdPlan prints the plan a job file compiles to: its sources,
// aggregations, transforms and sinks, and where each one's input comes
// from.
func cmdPlan(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir plan", stderr)
	addSetFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: weir plan [flags] JOB.yaml

Prints the plan the job file compiles to, the dataflow graph weir runs: a
node a line (source, transform, aggregation, sink), with its name, what it
does and the nodes its input comes from. Nothing is read or written.

%s
Flags:
`, exitCodes)
		fs.PrintDefaults()
	}
	j, _, code, ok := loadJobArg(fs, args, stderr)
	if !ok {
		return code
	}
	fmt.Fprint(stdout, j.Redact(job.Plan(j).String()))
	return 0
}
