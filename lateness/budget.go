package lateness

import (
	"fmt"
	"math/bits"

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
	b := fmt.Sprintf("%s x %d open windows a key at most (with a delay of %s) x %d bytes a key and window (state-per-key) = %s of live heap, at most. ",
		keys, s.OpenWindowsPeak, delayLabel(mtime.Time(s.DelayMS)), BytesPerKeyWindow, text.Size(s.Bytes))
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
