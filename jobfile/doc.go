// Package jobfile is the grammar of weir's job file: a YAML description of
// a windowed aggregation, for people who do not write Go. Load reads a file
// and checks it into a Job; package job compiles a Job to a plan and runs
// it.
//
// Every mistake in a job file is reported before anything runs or is
// written, as one line (an *Error) naming the file, the line, the field and
// what was expected.
//
// What belongs here is what a job file says and nothing that runs it: the
// YAML and its ${VAR}s, --set, the secrets a job never shows (Redact), the
// settings of each field and their checks (those of the kinds of sources,
// outputs and formats registered in package plan among them), the JSON
// schema of job files generated from the same description (Schema), and
// the facts a file decides (its pane shape, its table schemas, its
// warnings). It imports no engine, no console and no group: a test of the
// module keeps it so.
package jobfile
