package jobfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/state"
)

// checkFiles looks at the files a job would write before anything runs:
// every output's directory exists; no output is the job file, the input or
// another output, whatever names lead to it (a symbolic or a hard link); the
// checkpoint and state directories are directories, empty or weir's (weir
// prunes the one and empties the other). A mistake is a job-file error
// naming the field. (Whether an existing output is weir's to replace is
// decided once the job knows whether it resumes: claimOutputs.)
func checkFiles(j *Job, jobPath string) error {
	fail := func(field, format string, args ...any) error {
		return &Error{File: j.File, Line: j.lines[field], Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	type named struct{ field, path string }
	var protect []named // files an output must not be
	protect = append(protect, named{"the job file", jobPath})
	for _, in := range j.inputFiles() {
		protect = append(protect, named{"the input (" + in.field + ")", in.path})
	}
	outs := j.OutputFiles()
	for i, o := range outs {
		failOut := func(format string, args ...any) error {
			return &Error{File: j.File, Line: o.Line, Field: o.Field, Msg: fmt.Sprintf(format, args...)}
		}
		dir := filepath.Dir(o.Path)
		if st, err := os.Stat(dir); err != nil {
			return failOut("the directory %s does not exist", dir)
		} else if !st.IsDir() {
			return failOut("%s is not a directory", dir)
		}
		st, err := os.Stat(o.Path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return failOut("cannot look at %s: %s", o.Path, text.ErrorText(err))
		}
		for _, p := range protect {
			if pst, err := os.Stat(p.path); err == nil && os.SameFile(st, pst) {
				return failOut("%s is %s (under another name): it would be overwritten", o.Path, p.field)
			}
		}
		for _, prev := range outs[:i] {
			if pst, err := os.Stat(prev.Path); err == nil && os.SameFile(st, pst) {
				return failOut("%s is the same file as %s", o.Path, prev.Field)
			}
		}
	}
	if d := j.Checkpoint.Dir; d != "" {
		if st, err := os.Stat(d); err == nil && !st.IsDir() {
			return fail("checkpoint", "dir %s is a file, not a directory", d)
		} else if errors.Is(err, os.ErrNotExist) {
			if pst, err := os.Stat(filepath.Dir(d)); err != nil || !pst.IsDir() {
				return fail("checkpoint", "dir %s: its parent directory %s does not exist", d, filepath.Dir(d))
			}
		} else if err == nil {
			if err := checkpoint.CheckDir(checkpoint.OSFS, d); err != nil {
				return fail("checkpoint", "dir %v", err)
			}
		}
	}
	if d := j.State.Dir; d != "" && j.State.Backend == "pebble" {
		if err := state.CheckDir(d); err != nil {
			return fail("state", "dir %v", err)
		}
	}
	return nil
}

// AcceptanceMarkdown is the Markdown file beside the JSON record.
func AcceptanceMarkdown(path string) string { return strings.TrimSuffix(path, ".json") + ".md" }

// OutputFile is a file the job writes, and the field that names it, at
// its line of the job file.
type OutputFile struct {
	Field, Path string
	Line        int
}

// OutputFiles are the files the job writes, of every aggregation, in the
// order of the job file: its outputs' files, then each aggregation's
// summary and acceptance record (JSON and Markdown); not standard output.
func (j *Job) OutputFiles() []OutputFile {
	var out []OutputFile
	for _, o := range j.places() {
		if o.File != "" && o.File != "-" {
			out = append(out, OutputFile{o.Field, o.File, o.Line})
		}
	}
	return out
}
