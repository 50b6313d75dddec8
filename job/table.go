package job

import (
	"context"
	"errors"
	"os"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/connector/table"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/vfs"
)

// tableSink writes panes to a table: it turns each pane into a table.Row
// and leaves the rest to the table connector.
type tableSink struct {
	*table.Sink
	j    *jobfile.Job
	o    *jobfile.Output
	rows []table.Row
	anys []any // the rows' keys and values, reused from Write to Write
}

// newTableSink makes the sink of a table output; added names the
// aggregates added since the checkpoint the job resumes from, whose
// columns a table made before lacks; former the aggregates at that
// checkpoint, when they differ (table.Options.FormerValues).
func newTableSink(j *jobfile.Job, o *jobfile.Output, checkpointed bool, added, former []string, log func(string)) *tableSink {
	t := o.Table
	opts := table.Options{Checkpointed: checkpointed, SinkName: j.DisplayName() + "/" + o.Field, Log: log, AddColumns: added, FormerValues: former}
	s := &tableSink{j: j, o: o}
	if t.Driver == "sqlite" {
		s.Sink = table.SQLite(t.Path, t.Schema(j), opts)
	} else {
		s.Sink = table.Postgres(t.DSN, t.Schema(j), opts)
	}
	return s
}

// Open implements connector.Sink. An SQLite database weir creates is its
// owner's alone, or has the job's file_mode: the file is made before
// SQLite opens it (SQLite gives its journal and WAL the database's mode).
func (s *tableSink) Open(ctx context.Context, restored connector.Resume) error {
	if t := s.o.Table; t.Driver == "sqlite" {
		mode := s.j.FileMode
		if mode == 0 {
			mode = vfs.FileMode
		}
		if f, err := os.OpenFile(t.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode); err == nil {
			err = f.Chmod(mode) // whatever the umask
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		} else if !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return s.Sink.Open(ctx, restored)
}

// Write implements connector.Sink.
func (s *tableSink) Write(ctx context.Context, items []pane) error {
	nk := len(s.j.KeyFields())
	per := nk + len(s.j.Aggregates)
	s.rows = s.rows[:0]
	if need := per * len(items); cap(s.anys) < need {
		s.anys = make([]any, need)
	}
	anys := s.anys[:per*len(items)]
	for i := range items {
		p := &items[i]
		vals := anys[i*per : (i+1)*per : (i+1)*per]
		switch {
		case s.j.KeyParts != nil:
			for k, v := range splitKey(p.Key) {
				vals[k] = TableKeyText(v)
			}
		case nk == 1:
			vals[0] = TableKeyText(p.Key)
		}
		for k, v := range p.Value {
			vals[nk+k] = tableValue(v)
		}
		r := table.Row{
			Key: vals[:nk], Values: vals[nk:],
			WindowStart: p.Window.Start, WindowEnd: p.Window.End,
			Revision: int64(p.Revision), Timing: p.Timing.String(), Final: p.Final, Retract: p.Retract,
			Version: s.j.Version, EmittedAt: p.EmittedAt, // the status follows from Final and Retract
		}
		if p.Window.IsGlobal() {
			r.WindowEnd = mtime.MaxTime
		}
		s.rows = append(s.rows, r)
	}
	err := s.Sink.Write(ctx, s.rows)
	clear(anys)
	return err
}

// tableValue is a pane's value as the table connector takes it.
func tableValue(v outVal) any {
	switch v.kind {
	case vInt:
		return v.i
	case vFloat:
		return v.f
	case vDec:
		return table.Decimal{Unscaled: v.i, Scale: v.scale}
	case vJSON:
		return TableValueText(v.js)
	}
	return nil
}

// TableValueText is how a value that is JSON text (first, last, histogram,
// top; see Aggregate.JSONValued) is written to a table's TEXT column: as a
// key is (TableKeyText), so that first(card) holds card_7 as the key column
// does, and 12.5 for a number; an object or an array as its JSON text.
func TableValueText(js string) string { return TableKeyText(js) }

// TableSink is a sink on the table of output o (which must be a table), as
// the job writes it, not opened: weir reconcile reads the table's rows back
// through it and publishes corrections.
func TableSink(j *jobfile.Job, o *jobfile.Output, log func(string)) *table.Sink {
	return newTableSink(j, o, false, nil, nil, log).Sink
}
