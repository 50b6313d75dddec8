package console

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// HistoryLength is how many samples of the job's status the console keeps
// for its charts: one a second, the last ten minutes, so that a page opened
// late, or after the job ended, draws what came before it.
const HistoryLength = 600

// Sample is one point of the console's charts: the job's processing time,
// its combined watermark and its partitions' watermarks then, and the late
// events it had counted.
type Sample struct {
	T            mtime.Time            `json:"t"`
	Watermark    mtime.Time            `json:"watermark"`
	Partitions   map[string]mtime.Time `json:"partitions"`
	LateAccepted int64                 `json:"late_accepted"`
	TooLate      int64                 `json:"too_late"`
}

// history is a ring of the last HistoryLength samples, one per processing
// time: a status whose processing time did not move adds nothing, nor one
// of a job that has no processing time yet.
type history struct {
	mu   sync.Mutex
	ring []Sample
	next int // where the next sample goes once the ring is full
}

func (h *history) add(st engine.Status) {
	if st.ProcessingTime <= mtime.MinTime || st.ProcessingTime >= mtime.MaxTime {
		return // no clock yet: nothing to place on a chart's time axis
	}
	s := Sample{T: st.ProcessingTime, Watermark: st.Watermark, Partitions: make(map[string]mtime.Time, len(st.Partitions)),
		LateAccepted: st.Counts.LateAccepted, TooLate: st.Counts.TooLate}
	for _, p := range st.Partitions {
		s.Partitions[p.Name] = p.Watermark
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.ring); n > 0 {
		last := h.ring[n-1]
		if len(h.ring) == HistoryLength {
			last = h.ring[(h.next+HistoryLength-1)%HistoryLength]
		}
		if last.T >= s.T {
			return
		}
	}
	if len(h.ring) < HistoryLength {
		h.ring = append(h.ring, s)
		return
	}
	h.ring[h.next] = s
	h.next = (h.next + 1) % HistoryLength
}

// samples are the samples kept, oldest first.
func (h *history) samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Sample, 0, len(h.ring))
	out = append(out, h.ring[h.next:]...)
	return append(out, h.ring[:h.next]...)
}

// Record keeps the history of the console's charts (/api/history): it
// samples the job's status every second until ctx is done or the job has
// ended (Ended), and then once more. Listen runs it; a program that serves
// Handler itself runs it beside.
func (s *Server) Record(ctx context.Context) {
	if s.Control == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		s.hist.add(s.jobStatus(ctx))
		if s.final.Load() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// historyReply answers /api/history: the samples kept, oldest first.
func (s *Server) historyReply(w http.ResponseWriter, r *http.Request) {
	if s.Control == nil {
		http.Error(w, "no job", http.StatusNotFound)
		return
	}
	writeJSON(w, s.hist.samples(), s.Redact)
}
