package job

import (
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/vfs"
)

// claimOutputs checks, for a job that starts afresh, that every file it
// will replace is weir's to replace (see file.Sink): weir never overwrites
// a file it cannot prove it wrote, unless force. All of them are checked
// before any is touched.
func claimOutputs(j *jobfile.Job, fsys vfs.FS, force bool) error {
	type named struct{ field, path string }
	var outs []named
	for _, o := range j.AllOutputs() {
		if o.File != "" && o.File != "-" {
			outs = append(outs, named{o.Field, o.File})
		}
	}
	if j.Summary != "" && j.Summary != "-" {
		outs = append(outs, named{"summary", j.Summary})
	}
	if j.Acceptance != "" {
		outs = append(outs, named{"acceptance", j.Acceptance}, named{"acceptance", jobfile.AcceptanceMarkdown(j.Acceptance)})
	}
	for _, o := range outs {
		if err := file.Claim(fsys, o.path, force); err != nil {
			return &jobfile.Error{File: j.File, Line: j.FieldLine(o.field), Field: o.field, Msg: err.Error()}
		}
	}
	return nil
}
