package job

import (
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/vfs"
)

// claimOutputs checks, for a job that starts afresh, that every file it
// will replace, of every aggregation, is weir's to replace (see
// file.Sink): weir never overwrites a file it cannot prove it wrote,
// unless force. All of them are checked before any is touched.
func claimOutputs(j *jobfile.Job, fsys vfs.FS, force bool) error {
	for _, o := range j.OutputFiles() {
		if err := file.Claim(fsys, o.Path, force); err != nil {
			return &jobfile.Error{File: j.File, Line: o.Line, Field: o.Field, Msg: err.Error()}
		}
	}
	return nil
}
