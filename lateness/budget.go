package lateness

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
)

// BytesPerKeyWindow is what a key with one open window costs weir run's
// memory backend, in bytes of live heap: `weir bench --only state-per-key`
// measured 286 to 288 bytes a key with one window and a count and a sum
// (BENCHMARKS.md, docs/operations.md's bounds), rounded up. A window whose
// aggregates keep more (a percentile's sketch, first and last values) costs
// more.
const BytesPerKeyWindow = 290

// BytesPerDedupID is what an id costs weir run's memory de-duplication
// beyond the id's own bytes, in bytes of live heap: its entry in the map of
// ids and in its bucket of expiry. Measured with ids of 10 bytes, from 50
// thousand to 1.5 million of them: 51 to 73 bytes beyond the id (the map's
// growth decides where in that); TestBytesPerDedupID keeps the bound true.
const BytesPerDedupID = 74

// HeapHeadroom is the factor from live heap to the memory a process takes:
// the garbage collector lets the heap grow up to twice the live heap
// (GOGC=100) before it collects.
const HeapHeadroom = 2

// PebbleAbove is the memory budget past which the estimate suggests the
// Pebble backend: a state that would need more than this in memory is
// cheaper on disk, with Pebble's own bounded cache.
const PebbleAbove = 4 << 30

// State is the estimate of the state a job keeps: its distinct keys times
// the windows a key holds open at most (the replay's peak with the delay of
// the recommendation), times BytesPerKeyWindow. It is an upper bound: a key
// holds a window only while it has events in it, and the peak is of the
// whole stream's windows.
type State struct {
	// Key names the job's key fields ("" without a key: one global key).
	Key  string `json:"key,omitempty"`
	Keys int64  `json:"keys"`
	// DelayMS is the watermark delay whose replay gave OpenWindowsPeak.
	DelayMS           int64 `json:"delay_ms"`
	OpenWindowsPeak   int64 `json:"open_windows_peak"`
	BytesPerKeyWindow int64 `json:"bytes_per_key_window"`
	// Bytes = Keys * OpenWindowsPeak * BytesPerKeyWindow: the live heap of
	// the state.
	Bytes int64 `json:"bytes"`
	// MemoryBudget is the memory to allow for it: Bytes * HeapHeadroom,
	// rounded up to a power of two MiB, at least 64 MiB.
	MemoryBudget int64 `json:"memory_budget"`
	// Backend is the backend suggested: memory, or pebble past PebbleAbove.
	Backend string `json:"backend"`
	// With the job's de-duplication (Options.ID): its horizon, the ids
	// held at most (the events whose event times lie within the horizon
	// plus the delay of each other: an id is remembered until the
	// watermark, the delay behind, passes its time plus the horizon), the
	// bytes an id (BytesPerDedupID plus the ids' mean length) and their
	// product. Bytes includes DedupBytes.
	DedupHorizonMS  int64 `json:"dedup_horizon_ms,omitempty"`
	DedupIDsPeak    int64 `json:"dedup_ids_peak,omitempty"`
	BytesPerDedupID int64 `json:"bytes_per_dedup_id,omitempty"`
	DedupBytes      int64 `json:"dedup_bytes,omitempty"`
	// JobBackend and JobMemoryBudget are what the job file says.
	JobBackend      string `json:"job_backend,omitempty"`
	JobMemoryBudget int64  `json:"job_memory_budget,omitempty"`
	Text            string `json:"text"`
}

// mib writes a size in bytes as a memory_budget value: "256MiB", "4GiB".
func mib(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%dGiB", n>>30)
	}
	return fmt.Sprintf("%dMiB", (n+1<<20-1)>>20)
}

// budgetFor is the memory budget for a live heap of n bytes.
func budgetFor(n int64) int64 {
	m := (n*HeapHeadroom + 1<<20 - 1) >> 20 // MiB
	b := int64(64)
	if m > b {
		b = int64(1) << bits.Len64(uint64(m-1))
	}
	return b << 20
}

// stateEstimate is the State for the recommended delay (the first delay
// when none is recommended).
func (a *analyzer) stateEstimate(r *Report) *State {
	if a.keys == nil || len(r.Delays) == 0 {
		return nil
	}
	d := r.Recommendation.Delay
	if d == nil {
		d = &r.Delays[0]
	}
	s := &State{
		Keys: int64(len(a.keys)), DelayMS: d.DelayMS, OpenWindowsPeak: d.OpenPeak, BytesPerKeyWindow: BytesPerKeyWindow,
		JobBackend: a.c.StateBackend, JobMemoryBudget: a.c.MemoryBudget,
	}
	for i, k := range a.c.Key {
		if i > 0 {
			s.Key += ", "
		}
		s.Key += k
	}
	if len(a.c.Key) > 1 {
		s.Key = "[" + s.Key + "]"
	}
	s.Bytes = s.Keys * s.OpenWindowsPeak * BytesPerKeyWindow
	windows := s.Bytes
	if t := &a.ids; t.n != nil {
		s.DedupHorizonMS = int64(t.horizon)
		s.DedupIDsPeak = t.peak(t.horizon + mtime.Time(d.DelayMS))
		if t.count > 0 {
			s.BytesPerDedupID = BytesPerDedupID + (t.bytes+t.count-1)/t.count
		}
		s.DedupBytes = s.DedupIDsPeak * s.BytesPerDedupID
		s.Bytes += s.DedupBytes
	}
	s.MemoryBudget = budgetFor(s.Bytes)
	s.Backend = "memory"
	if s.MemoryBudget > PebbleAbove {
		s.Backend = "pebble"
	}
	keys := fmt.Sprintf("%s keys", fmtInt(s.Keys))
	if s.Key == "" {
		keys = "1 key (the job has no key)"
	} else if s.Keys == 1 {
		keys = "1 key"
	}
	b := fmt.Sprintf("%s x %d open windows a key at most (with a delay of %s) x %d bytes a key and window (state-per-key) = %s",
		keys, s.OpenWindowsPeak, delayLabel(mtime.Time(s.DelayMS)), BytesPerKeyWindow, text.Size(windows))
	if s.DedupHorizonMS > 0 {
		b += fmt.Sprintf("; and %s de-duplication ids at most (the events within %s, the horizon plus the delay, of each other) x %d bytes an id = %s; in all %s",
			fmtInt(s.DedupIDsPeak), durLabel(mtime.Time(s.DedupHorizonMS+s.DelayMS)), s.BytesPerDedupID, text.Size(s.DedupBytes), text.Size(s.Bytes))
	}
	b += " of live heap, at most. "
	if s.Backend == "memory" {
		b += fmt.Sprintf("With the garbage collector's headroom, allow %s: state: {memory_budget: %s} (the memory backend warns past it).", mib(s.MemoryBudget), mib(s.MemoryBudget))
	} else {
		b += fmt.Sprintf("In memory it would take about %s, more than %s: use state: {backend: pebble} (its memory_budget, 512MiB by default, bounds its cache; the state goes to disk).", mib(s.MemoryBudget), mib(PebbleAbove))
	}
	if s.JobBackend == "pebble" && s.Backend == "memory" {
		b += " The job uses pebble: the memory backend would do, and be faster."
	} else if s.JobBackend == "memory" && s.JobMemoryBudget > 0 && s.JobMemoryBudget < s.MemoryBudget && s.Backend == "memory" {
		b += fmt.Sprintf(" The job's memory_budget, %s, is too small for it.", mib(s.JobMemoryBudget))
	}
	s.Text = b
	return s
}

// idTally counts the events that have an id by bucket of event time, for
// the most ids a job's de-duplication holds at once.
type idTally struct {
	horizon, width mtime.Time
	n              map[int64]int64 // events by bucket
	count, bytes   int64           // events with an id, and their ids' bytes
}

func newIDTally(horizon mtime.Time) idTally {
	return idTally{horizon: horizon, width: max(1000, horizon/256), n: map[int64]int64{}}
}

func (t *idTally) bucket(ts mtime.Time) int64 {
	k := int64(ts / t.width)
	if ts < 0 && ts%t.width != 0 {
		k--
	}
	return k
}

func (t *idTally) add(ts mtime.Time, idLen int) {
	t.n[t.bucket(ts)]++
	t.count++
	t.bytes += int64(idLen)
}

// peak is the most events whose event times lie within span of each other,
// counted by whole buckets: an upper bound.
func (t *idTally) peak(span mtime.Time) int64 {
	ks := make([]int64, 0, len(t.n))
	for k := range t.n {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	reach := int64((span + t.width - 1) / t.width) // buckets before the last one
	var best, sum int64
	lo := 0
	for _, k := range ks {
		sum += t.n[k]
		for ks[lo] < k-reach {
			sum -= t.n[ks[lo]]
			lo++
		}
		best = max(best, sum)
	}
	return best
}
