package job

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/translate"
)

// partSource is the part of a job's state that holds its source's
// position, by its name in checkpoints.
const partSource = "source:input"

// aggPrefix begins the field of an aggregate in a job's shape and in what
// a restore reports ("aggregates.spent").
const aggPrefix = "aggregates."

// The fields of how a job runs, which a restore carries over and no
// output depends on.
const (
	fieldParallelism = "parallelism"
	fieldBackend     = "state.backend"
)

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// timeLayout is the window state's layout (key, its settings before) with
// where events get their time, which a restore must find unchanged: a
// field, or the record's timestamp. Ingestion time is no part of it but a
// setting (expressionSettings): a backfill run with it restores into the
// job that reads the events' own time once caught up, and back, each
// window keeping what it counted.
func timeLayout(j *jobfile.Job, key plan.Setting) []plan.Setting {
	switch {
	case j.Ingestion:
		return []plan.Setting{key}
	case j.RecordTime:
		return []plan.Setting{key, {Field: "time.field", Value: "the record's timestamp"}}
	}
	return []plan.Setting{key, {Field: "time.field", Value: j.TimeField.String()}}
}

// ingestionTime is a job of ingestion time's setting "time", as a plan and
// a restore report show it.
const ingestionTime = "ingestion (each event's arrival)"

// restoreCodec is the codec that reads the window state of the checkpoint
// the engine resumes from: in the format it was written in, each aggregate
// taken from the checkpoint's aggregate of its name and definition, and an
// aggregate the checkpoint lacks started from its zero, partial. It
// returns nil when the live codec reads it as it is.
func restoreCodec(j *jobfile.Job, r *engine.RestoreReport, part string) (*codec, []string) {
	old := r.OldPart(part)
	if old == nil {
		if r.Legacy {
			// A checkpoint of an earlier layout: the same aggregates (it
			// has the job's fingerprint), in the first format.
			c := newCodec(j)
			c.format = 1
			return &c, nil
		}
		return nil, nil
	}
	c := newCodec(j)
	c.format, c.from = max(old.Format, 1), make([]int, len(j.Aggregates))
	var partial []string
	same := len(old.Values) == len(j.Aggregates)
	for k, a := range j.Aggregates {
		c.from[k] = -1
		for i, v := range old.Values {
			if v.Field == aggPrefix+a.Name && v.Value == a.String() {
				c.from[k] = i
			}
		}
		if c.from[k] < 0 {
			partial = append(partial, a.Name)
		}
		same = same && c.from[k] == k
	}
	if same {
		c.from = nil
		if c.format == codecFormat {
			return nil, nil
		}
	}
	return &c, partial
}

// formerValues are the aggregates of the job at the checkpoint r restores,
// in their order, when they differ from the job's: the value columns of
// the table rows that checkpoint holds to commit again
// (table.Options.FormerValues). nil when they are the same.
func formerValues(j *jobfile.Job, r *engine.RestoreReport, part string) []string {
	old := r.OldPart(part)
	if old == nil {
		return nil
	}
	names := make([]string, len(old.Values))
	for i, v := range old.Values {
		names[i] = strings.TrimPrefix(v.Field, aggPrefix)
	}
	now := make([]string, len(j.Aggregates))
	for i, a := range j.Aggregates {
		now[i] = a.Name
	}
	if slices.Equal(names, now) {
		return nil
	}
	return names
}

// restoreNotes is what a restore into a changed job did, a line per
// change: notes for the summary (Summary.RestoreChanges), and howItRuns
// for the log alone. A change of how the job runs (parallelism, state
// backend) changes no output, so the summary leaves it out: the summary
// file of a job is the same however often it was stopped and restored,
// and whatever it ran on in between.
func restoreNotes(r *engine.RestoreReport) (notes, howItRuns []string) {
	if r == nil {
		return nil, nil
	}
	for _, c := range r.Changes {
		switch {
		case c.Verdict == engine.Carried && c.Was == c.Now:
		case c.Verdict == engine.Carried && (c.Field == fieldParallelism || c.Field == fieldBackend):
			howItRuns = append(howItRuns, c.Say(DropFlag))
		default:
			notes = append(notes, c.Say(DropFlag))
		}
	}
	return notes, howItRuns
}

// CheckRestore says, without running anything or writing anything, what
// restoring the checkpoint or savepoint in the directory from into the
// job j does with its state: what carries over, what restarts, what is
// refused (weir run --from DIR --check). A refusal is the report and an
// error naming the field.
func CheckRestore(j *jobfile.Job, from string, dropState []string) (*engine.RestoreReport, error) {
	c, err := checkpoint.Load(checkpoint.OSFS, from)
	if err != nil {
		return nil, &RuntimeError{Msg: "cannot restore: " + err.Error(), Err: err}
	}
	r, err := engine.CheckRestore(c, engine.Checkpointing{Fingerprint: fingerprint(j), Shape: translate.Shape(Plan(j)), DropState: dropState})
	if err != nil {
		return r, setupError(j, err)
	}
	return r, nil
}

// Inspect describes the checkpoint or savepoint in the directory path
// (weir savepoint inspect): its job and fingerprint, every operator with
// its state's size and keys, every source's position and every sink's
// pending commits.
func Inspect(path string) (string, error) {
	c, err := checkpoint.Load(checkpoint.OSFS, path)
	if err != nil {
		return "", err
	}
	in, err := engine.Inspect(c, func(d *enc.Decoder) error {
		lp := &lineParser{parts: map[string]int{}}
		return lp.RestoreState(d)
	})
	if err != nil {
		return "", err
	}
	return inspectText(in), nil
}

// inspectText is an inspection for a person.
func inspectText(in *engine.Inspection) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d of %s, layout %d, %s\n", in.Kind, in.ID, orNone(in.Job), in.Layout, text.Size(in.Bytes))
	fmt.Fprintf(&b, "fingerprint %s\n", in.Fingerprint)
	if in.Created != "" {
		// To the millisecond, as weir shows every time.
		created := in.Created
		if t, err := time.Parse(time.RFC3339Nano, created); err == nil {
			created = mtime.FromTime(t).String()
		}
		fmt.Fprintf(&b, "created %s\n", created)
	}
	b.WriteString("operators:\n")
	operator := func(name, keys string, bytes int64, instances int, watermark mtime.Time) {
		wm := watermark.String()
		if watermark == mtime.MinTime {
			wm = "none"
		}
		inst := "instances"
		if instances == 1 {
			inst = "instance"
		}
		fmt.Fprintf(&b, "  %s: %s, %s in %d %s, watermark %s\n", name, keys, text.Size(bytes), instances, inst, wm)
		if p := partOf(in.Shape, name); p != nil {
			fmt.Fprintf(&b, "    %s\n", describePart(p))
		}
	}
	for _, w := range in.Windows {
		operator(w.Name, fmt.Sprintf("%d keys", w.Keys), w.Bytes, w.Instances, w.Watermark)
	}
	for _, j := range in.Joins {
		operator(j.Name, fmt.Sprintf("%d keys with buffered records", j.Keys), j.Bytes, j.Instances, j.Watermark)
	}
	for _, p := range in.Processes {
		operator(p.Name, fmt.Sprintf("%d keys with state or timers", p.Keys), p.Bytes, p.Instances, p.Watermark)
	}
	for _, h := range in.Heads {
		ids := "no de-duplication"
		if h.IDs >= 0 {
			ids = fmt.Sprintf("%d de-duplication ids", h.IDs)
		}
		fmt.Fprintf(&b, "  %s: %d events read, %s, %s\n", h.Name, h.Read, ids, text.Size(h.Bytes))
	}
	b.WriteString("sources:\n")
	for _, s := range in.Sources {
		kafkaTopic := false
		if p := partOf(in.Shape, "source:"+s.Name); p != nil && len(p.Settings) > 0 {
			kafkaTopic = strings.HasPrefix(p.Settings[0].Value, "kafka topic ")
		}
		fmt.Fprintf(&b, "  %s: %s\n", s.Name, describePosition(s.Position, kafkaTopic))
	}
	b.WriteString("sinks:\n")
	for _, s := range in.Sinks {
		label := s.Name
		if u, err := url.PathUnescape(s.Name); err == nil {
			label = u
		}
		if p := partOf(in.Shape, "sink:"+s.Name); p != nil && p.Label != "" {
			label = p.Label + " " + label
		}
		if len(s.Pending) == 0 {
			fmt.Fprintf(&b, "  %s: %d items committed, nothing pending\n", label, s.Committed)
			continue
		}
		var pend []string
		for _, pc := range s.Pending {
			pend = append(pend, fmt.Sprintf("checkpoint %d (%d items, %s)", pc.Checkpoint, pc.Items, text.Size(int64(pc.Bytes))))
		}
		fmt.Fprintf(&b, "  %s: %d items committed, pending: %s\n", label, s.Committed, strings.Join(pend, ", "))
	}
	return b.String()
}

func partOf(s *engine.Shape, name string) *engine.Part {
	if s == nil {
		return nil
	}
	for i := range s.Parts {
		if s.Parts[i].Name == name {
			return &s.Parts[i]
		}
	}
	return nil
}

// describePart is a window stage's layout, aggregates and mode, as the
// job file says them.
func describePart(p *engine.Part) string {
	var parts []string
	for _, s := range p.Layout {
		parts = append(parts, s.Field+" "+s.Value)
	}
	var aggs []string
	for _, v := range p.Values {
		aggs = append(aggs, strings.TrimPrefix(v.Field, aggPrefix)+": "+v.Value)
	}
	if len(aggs) > 0 {
		parts = append(parts, "aggregates {"+strings.Join(aggs, ", ")+"}")
	}
	if p.Mode != "" {
		parts = append(parts, "mode "+p.Mode)
	}
	return strings.Join(parts, ", ")
}

// describePosition is a source's position: a file's line and byte offset,
// a Kafka topic's offsets (kafkaTopic: the job's shape says the source is
// a topic; without a shape, the position that reads as one).
func describePosition(pos []byte, kafkaTopic bool) string {
	if len(pos) == 0 {
		return "at the start (nothing read)"
	}
	if !kafkaTopic {
		if s, ok := file.DescribePosition(pos); ok {
			return s
		}
	}
	if s, ok := kafka.DescribePosition(pos); ok {
		return s
	}
	return fmt.Sprintf("%d bytes", len(pos))
}
