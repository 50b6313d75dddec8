package weir

import (
	"fmt"
	"strconv"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// stateFormat is the version of the JSON state codec's encoding of an
// aggregation's windows, recorded in the pipeline's shape.
const stateFormat = 1

// DropState starts afresh, on a restore, the kinds of state that could not
// carry over into the pipeline as it is now: engine.StateWindows (the open
// windows of an aggregation whose window, key type or aggregate changed),
// keeping the sources' positions and the sinks' commits. Without it such a
// restore is refused.
func DropState(kinds ...string) Option {
	return func(p *Pipeline) { p.cfg.Checkpoint.DropState = append(p.cfg.Checkpoint.DropState, kinds...) }
}

// addPart describes a part of the pipeline's state for checkpoints: a
// restore compares the checkpoint's description of each part with the
// pipeline's (engine.CompareShapes), by name.
func (p *Pipeline) addPart(part engine.Part) { p.parts = append(p.parts, part) }

// stagePart describes an aggregation's windows: what they are organised by
// (a change refuses the restore), their mode, and the settings that carry
// over when they change.
func stagePart(name, label string, s window.Strategy, wm watermark.Strategy, key, agg string, parallelism int) engine.Part {
	return engine.Part{Name: name, Label: "aggregation " + label, Kind: engine.StateWindows, Format: stateFormat,
		Layout: []engine.Setting{
			{Field: "window", Value: describeAssigner(s.Assigner)},
			{Field: "key", Value: key},
			{Field: "aggregate", Value: agg},
		},
		Mode: s.Mode.String(),
		Settings: []engine.Setting{
			{Field: "watermark", Value: describeWatermark(wm)},
			{Field: engine.SettingLateness, Value: mtime.FormatDuration(s.AllowedLateness)},
			{Field: engine.SettingTrigger, Value: s.Trigger.String()},
			{Field: "parallelism", Value: strconv.Itoa(parallelism)},
		}}
}

// describeAssigner is a window's kind, size and offset.
func describeAssigner(a window.Assigner) string {
	s := a.String()
	var off mtime.Time
	switch w := a.(type) {
	case window.Tumbling:
		off = w.Offset
	case window.Sliding:
		off = w.Offset
	}
	if off != 0 {
		s += " offset " + mtime.FormatDuration(off)
	}
	return s
}

// describeWatermark is a watermark strategy as a restore reports it.
func describeWatermark(w watermark.Strategy) string {
	if w.Kind == watermark.Scripted {
		return "scripted"
	}
	s := fmt.Sprintf("delay %s, every %s", mtime.FormatDuration(w.Delay), mtime.FormatDuration(w.Interval))
	if w.Interval == 0 {
		s = fmt.Sprintf("delay %s, after every event", mtime.FormatDuration(w.Delay))
	}
	if w.Idle > 0 {
		s += ", idle after " + mtime.FormatDuration(w.Idle)
	}
	if w.MaxDrift > 0 {
		s += ", max drift " + mtime.FormatDuration(w.MaxDrift)
	}
	return s
}
