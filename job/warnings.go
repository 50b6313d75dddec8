package job

import (
	"fmt"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// Warnings are what a job's settings risk, in the words of seed 001's
// anti-patterns: none stops the job; weir says them at start.
func (j *Job) Warnings() []string {
	var w []string
	day := mtime.Time(24 * 3600 * 1000)
	if l := j.Window.AllowedLateness; l >= day {
		w = append(w, fmt.Sprintf("allowed_lateness %s keeps every window's state for days (an hourly window is %d windows per key at once): prefer minutes to hours, and a late_output (a dead-letter output) for what comes later", mtime.FormatDuration(l), l/(3600*1000)+1))
	}
	if j.Late == nil {
		w = append(w, "no late_output: too-late events are dropped; they are counted, but they are lost (send them to a late_output to correct the results later)")
	}
	if j.ID != nil && j.Watermark.Kind == watermark.Bounded {
		if need := j.Watermark.Delay + j.Window.AllowedLateness; j.DedupHorizon < need {
			w = append(w, fmt.Sprintf("dedup_horizon %s is shorter than the watermark delay %s plus the allowed lateness %s: events the windows still accept but older than the watermark minus %[1]s cannot be checked for repeats, and go to the late output as beyond_dedup_horizon instead of being counted",
				mtime.FormatDuration(j.DedupHorizon), mtime.FormatDuration(j.Watermark.Delay), mtime.FormatDuration(j.Window.AllowedLateness)))
		}
	}
	if sl, ok := j.Window.Assigner.(window.Sliding); ok {
		if n := (sl.Size + sl.Slide - 1) / sl.Slide; n > 1000 {
			w = append(w, fmt.Sprintf("window sliding %s every %s puts every event in %d windows, and each event costs that many updates: a longer slide, or a tumbling window, costs less", mtime.FormatDuration(sl.Size), mtime.FormatDuration(sl.Slide), n))
		}
	}
	return w
}
