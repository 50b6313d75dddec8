package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
)

// cmdLint checks a job file, and what the first lines of its input show.
func cmdLint(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir lint", stderr)
	sample := fs.Int("sample", job.DefaultSample, "how many lines of the input to read")
	resolved := fs.Bool("resolved", false, "print the job file as weir reads it (--set applied, ${NAME} expanded, secrets hidden) after the report")
	addSetFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: weir lint [flags] JOB.yaml

Checks a job file as weir run does (a mistake is a one-line error naming
the file, line and field, exit 2), then reads the first --sample lines of
its input with the job's own rules and reports, on standard output:

  - the share of lines the job would quarantine, by reason;
  - every field the job names (time, key, id, the aggregates' fields) that
    occurs in none of them, with the closest field that does;
  - every sum, min, max or avg whose field is never a number there;
  - the warnings weir run gives at start (an allowed lateness many times
    the window, a de-duplication horizon shorter than the delay plus the
    lateness, several panes per window into a file that cannot upsert);
  - what the brokers of its Kafka outputs say (within 10 s): a topic that
    gets revised panes and is not compacted, a missing topic weir run
    would refuse;
  - what the store of a Parquet output to S3 says when asked for one
    object of its prefix with the job's credentials (within the same
    10 s): a missing bucket, refused credentials, no answer.

A Kafka topic or standard input is not sampled: weir run says what their
first lines show. A topic whose records have a schema weir can read first
(Avro or JSON Schema behind a registry, Avro or Protobuf with a schema
file) has the fields the job names checked against it instead. Exit status: 0 nothing found, 1 the sample shows a
problem, 2 bad flags or a bad job file. weir run --check does the same.

Flags:
`)
		fs.PrintDefaults()
	}
	j, pos, code, ok := loadJobArg(fs, args, stderr)
	if !ok {
		return code
	}
	if *sample < 1 {
		fmt.Fprintln(stderr, "weir lint: --sample must be at least 1")
		return 2
	}
	return lint(j, pos[0], *sample, *resolved, stdout)
}

// topicCheckTimeout is how long weir lint waits for the brokers of a job's
// Kafka outputs to say what their topics are, and for the stores of its
// outputs to object storage to answer.
const topicCheckTimeout = 10 * time.Second

// keyColumnOf names the column a lookup finds each row's key in.
func keyColumnOf(lk *jobfile.Lookup) string {
	if lk.KeyColumn == "" {
		return "the query's first column (key_column)"
	}
	return "key_column " + lk.KeyColumn
}

// lint reports on a loaded job and the first n lines of its input, and
// returns the exit status: 1 when the sample shows a problem.
func lint(j *jobfile.Job, file string, n int, resolved bool, stdout io.Writer) int {
	s, err := job.SampleInput(j, n)
	if err != nil {
		fmt.Fprintf(stdout, "%s: the input cannot be read: %v\n", file, j.RedactError(err))
		return 1
	}
	fmt.Fprintf(stdout, "%s: the job file is valid\n", file)
	fmt.Fprint(stdout, s.Report())
	// A job of several aggregations: each reads the sample by its own
	// key and aggregates; what they find alike is said once.
	said := map[string]bool{}
	once := func(line string) {
		if !said[line] {
			said[line] = true
			fmt.Fprintln(stdout, line)
		}
	}
	findings := 0
	for i, a := range j.Aggregations() {
		if i > 0 {
			if s, err = job.SampleInput(a, n); err != nil {
				fmt.Fprintf(stdout, "%s: the input cannot be read: %v\n", file, j.RedactError(err))
				return 1
			}
		}
		for _, f := range s.Findings() {
			findings++
			f.Field = a.FieldName(f.Field)
			once(f.In(a, file))
		}
	}
	if j.Join != nil {
		// The join's other input, read by its own time, key and where.
		ws, err := job.SampleInput(j.Join.With, n)
		if err != nil {
			fmt.Fprintf(stdout, "%s: the input of join.with cannot be read: %v\n", file, j.RedactError(err))
			return 1
		}
		fmt.Fprint(stdout, ws.Report())
		for _, f := range ws.Findings() {
			findings++
			f.Field = strings.TrimSuffix("join.with."+f.Field, ".")
			once(f.In(j, file))
		}
	}
	warnings := j.Warnings()
	ctx, cancel := context.WithTimeout(context.Background(), topicCheckTimeout)
	if lk := j.Lookup; lk != nil {
		// The sample's keys looked up in the table, once: the query runs,
		// and finds rows for keys as the job writes them.
		found, asked, err := job.CheckLookup(ctx, j, s)
		switch {
		case err != nil:
			findings++
			once(fmt.Sprintf("%s: lookup.query: it fails on the sample's keys: %v", file, j.RedactError(err)))
		case asked == 0:
		case found == 0:
			warnings = append(warnings, fmt.Sprintf("lookup: none of the %d keys of the sample has a row in %s: is %s the column of the key, and is the key written as the table has it?",
				asked, lk.What(), keyColumnOf(lk)))
		default:
			fmt.Fprintf(stdout, "lookup: %d of the %d keys of the sample have a row in %s\n", found, asked, j.Redact(lk.What()))
		}
	}
	warnings = append(warnings, job.TopicWarnings(ctx, j)...)
	warnings = append(warnings, job.StoreWarnings(ctx, j)...)
	cancel()
	for _, w := range warnings {
		once(fmt.Sprintf("%s: warning: %s", file, j.Redact(w)))
	}
	for _, a := range j.Aggregations() {
		for _, n := range a.Notes() {
			once(fmt.Sprintf("%s: note: %s", file, j.Redact(n)))
		}
	}
	if resolved {
		fmt.Fprintf(stdout, "\n# %s as weir reads it\n", file)
		stdout.Write(j.Resolved())
	}
	if findings > 0 {
		return 1
	}
	return 0
}
