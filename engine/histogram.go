package engine

import (
	"math"
	"sync/atomic"
)

// latencyBounds are the buckets (ms) of the engine's latency histograms.
var latencyBounds = []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

// histogram counts observations without a lock: written by one goroutine,
// read by any.
type histogram struct {
	counts [14]atomic.Int64 // len(latencyBounds)+1
	sum    atomic.Uint64    // float64 bits
	n      atomic.Int64
}

func (h *histogram) observe(ms float64) {
	i := 0
	for i < len(latencyBounds) && ms > latencyBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.n.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+ms)) {
			return
		}
	}
}

// add adds h's counts to out.
func (h *histogram) add(out *Histogram) {
	if out.Bounds == nil {
		out.Bounds = latencyBounds
		out.Counts = make([]int64, len(latencyBounds)+1)
	}
	for i := range h.counts {
		out.Counts[i] += h.counts[i].Load()
	}
	out.Sum += math.Float64frombits(h.sum.Load())
	out.Count += h.n.Load()
}

// Quantile estimates the q-quantile (0..1) from the buckets: the upper
// bound of the bucket it falls in (the largest bound for the last one).
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.Count)))
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			if i < len(h.Bounds) {
				return h.Bounds[i]
			}
			return h.Bounds[len(h.Bounds)-1]
		}
	}
	return h.Bounds[len(h.Bounds)-1]
}

// delayBounds are the buckets (ms) of the event delay histograms: from a
// tenth of a second, what a live source shows, to a day, what a phone that
// was offline or a backfill shows.
var delayBounds = []float64{100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000, 21600000, 86400000}

// delayMs are delayBounds as integers, for observe.
var delayMs = func() (ms [16]int64) {
	for i, b := range delayBounds {
		ms[i] = int64(b)
	}
	return ms
}()

// delays counts delays (ms) in delayBounds' buckets, in the head's goroutine
// only: the head observes every event, and status reports are made in the
// same goroutine, so it takes no atomic operation.
type delays struct {
	counts [17]int64 // len(delayBounds)+1
	sum, n int64
}

func (h *delays) observe(ms int64) {
	i := len(delayBounds) // a replay's events: beyond a day, at once
	if ms <= delayMs[len(delayMs)-1] {
		i = 0
		for ms > delayMs[i] {
			i++
		}
	}
	h.counts[i]++
	h.sum += ms
	h.n++
}

// histogram is h as a status reports it, or nil when it has nothing.
func (h *delays) histogram() *Histogram {
	if h.n == 0 {
		return nil
	}
	return &Histogram{Bounds: delayBounds, Counts: append([]int64(nil), h.counts[:]...), Sum: float64(h.sum), Count: h.n}
}
