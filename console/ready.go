package console

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/weirstream/weir/engine"
)

// /readyz: 200 "ready" when the job reads and checkpoints as it should,
// else 503 with the reasons, a line each. Ready means: the job runs and
// answers its status, no source reports an error reaching its data (a lost
// connection), and with checkpoints the last one succeeded less than three
// intervals ago (or, before the first, the job started less than three
// intervals ago). Like /healthz it needs no token: it says no more than
// whether, and why not.

// readyReasons are the reasons a job whose status is st is not ready; nil
// when it is. interval is its checkpoint interval (0: no checkpoints),
// started when its console started, now the time of the question.
func readyReasons(st engine.Status, interval time.Duration, started, now time.Time) []string {
	var why []string
	switch {
	case st.State != "running":
		return []string{"the job is " + st.State}
	case st.Stale:
		return []string{"the job does not answer its status"}
	}
	for _, src := range st.Sources {
		for _, p := range src.Partitions {
			if p.Err != "" {
				why = append(why, fmt.Sprintf("%s cannot be read: %s", p.Name, p.Err))
			}
		}
	}
	for _, p := range st.Partitions {
		if p.Diagnosis == engine.DiagInterrupted && p.Err == "" {
			why = append(why, p.Name+": transport interrupted")
		}
	}
	if interval > 0 {
		limit := 3 * interval
		switch ck := st.Checkpoint; {
		case ck.At.IsZero() && now.Sub(started) > limit:
			why = append(why, fmt.Sprintf("no checkpoint in %s, three checkpoint intervals (%s)", now.Sub(started).Round(time.Second), interval))
		case !ck.At.IsZero() && now.Sub(ck.At) > limit:
			why = append(why, fmt.Sprintf("the last checkpoint is %s old, more than three checkpoint intervals (%s)", now.Sub(ck.At).Round(time.Second), interval))
		}
	}
	return why
}

// answerReady writes the answer of /readyz.
func answerReady(w http.ResponseWriter, why []string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if len(why) == 0 {
		fmt.Fprintln(w, "ready")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintln(w, "not ready: "+strings.Join(why, "; "))
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.Control == nil {
		answerReady(w, []string{"no job"})
		return
	}
	answerReady(w, readyReasons(s.jobStatus(r.Context()), s.CheckpointInterval, s.Started, time.Now()))
}
