package lateness

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"

	"github.com/weirstream/weir/mtime"
)

// gapTally is the quiet gaps of the partitions: for each event, its arrival
// minus the latest arrival of its partition before it (0 when the file is
// not quite in arrival order), by partition index and all together.
type gapTally struct {
	last []mtime.Time
	n    []int64 // events
	gaps []hist
	all  hist
}

func (g *gapTally) add(pi int32, arr mtime.Time) {
	for int(pi) >= len(g.last) {
		g.last, g.n, g.gaps = append(g.last, 0), append(g.n, 0), append(g.gaps, hist{})
	}
	if g.n[pi] > 0 {
		gap := int64(max(0, arr-g.last[pi]))
		g.gaps[pi].add(gap, 1)
		g.all.add(gap, 1)
	}
	g.n[pi]++
	g.last[pi] = max(g.last[pi], arr)
}

// maxIdleCandidates is the number of idle timeouts derived from the gaps.
const maxIdleCandidates = 5

// Idle is the idleness report of a stream with partitions: their quiet
// gaps, and for each candidate idle timeout the stream replayed with it
// (the delay of the recommendation, no allowed lateness): the events too
// late and how long results wait. A partition quiet for the idle timeout is
// declared idle and stops holding the watermark back, so results wait less,
// but its next events may find their windows fired.
type Idle struct {
	// DelayMS is the watermark delay of the replays.
	DelayMS int64 `json:"delay_ms"`
	// CandidatesMS are the idle timeouts tried: Options.Idles, or the 90th,
	// 99th and 99.9th percentile and the longest of all the gaps (each
	// rounded to the nearest of niceIdles), and the job's own idle.
	CandidatesMS []int64         `json:"candidates_ms"`
	Partitions   []PartitionGaps `json:"partitions"`
	// Timeouts are the replays: first with no idleness at all (IdleMS 0),
	// then one per candidate; none when the input is standard input, which
	// cannot be read twice.
	Timeouts []IdleTimeout `json:"timeouts,omitempty"`
	// RecommendedMS is the shortest candidate that adds at most the target
	// share of too-late events to no idleness; nil when none does.
	RecommendedMS *int64 `json:"recommended_ms"`
	Text          string `json:"text"`
}

// PartitionGaps is the quiet gaps of one partition, in arrival order: the
// time between an event's arrival and the one before it of the same
// partition. The percentiles are within 0.8% (the travel times'
// histogram); the maximum and the counts are exact.
type PartitionGaps struct {
	Partition string `json:"partition"`
	Events    int64  `json:"events"`
	Gaps      int64  `json:"gaps"`
	P50MS     int64  `json:"p50_ms"`
	P99MS     int64  `json:"p99_ms"`
	MaxMS     int64  `json:"max_ms"`
	// AtLeast counts the gaps at least as long as each candidate (in the
	// order of Idle.CandidatesMS): the times the partition would have been
	// declared idle.
	AtLeast []int64 `json:"gaps_at_least"`
}

// IdleTimeout is the stream replayed with one idle timeout (0: never idle).
type IdleTimeout struct {
	Label          string  `json:"label"`
	IdleMS         int64   `json:"idle_ms"`
	TooLate        int64   `json:"too_late_events"`
	TooLateWeight  float64 `json:"too_late_weight"`
	TooLatePercent float64 `json:"too_late_percent"`
	// AddedPercent is TooLatePercent minus that of no idleness.
	AddedPercent float64 `json:"added_too_late_percent"`
	WindowsFired int64   `json:"windows_fired"`
	// The wait of a result (when its window fired minus its end), over the
	// windows fired before the input ended; nil when none did.
	WaitMeanMS *int64 `json:"wait_mean_ms"`
	WaitMaxMS  *int64 `json:"wait_max_ms"`
}

// idleCandidates are the idle timeouts to try.
func (a *analyzer) idleCandidates() []mtime.Time {
	var cs []mtime.Time
	if len(a.c.Idles) > 0 {
		for _, d := range a.c.Idles {
			cs = append(cs, mtime.Millis(d))
		}
	} else {
		h := &a.gaps.all
		for _, q := range []float64{0.9, 0.99, 0.999, 1} {
			if v := niceNear(mtime.Time(h.quantile(q))); v > 0 {
				cs = append(cs, v)
			}
		}
		slices.Sort(cs)
		cs = slices.Compact(cs)
		if len(cs) > maxIdleCandidates-1 {
			cs = cs[len(cs)-maxIdleCandidates+1:]
		}
		if a.c.idle > 0 {
			cs = append(cs, a.c.idle)
		}
	}
	slices.Sort(cs)
	return slices.Compact(cs)
}

// idleReport measures the quiet gaps, and replays the stream once more with
// each candidate idle timeout (not from standard input).
func (a *analyzer) idleReport(r *Report, stdin io.Reader) (*Idle, error) {
	c := a.c
	if c.partP == nil || a.gaps.all.n == 0 {
		return nil, nil
	}
	cands := a.idleCandidates()
	delay := mtime.Time(0)
	if d := r.Recommendation.Delay; d != nil {
		delay = mtime.Time(d.DelayMS)
	} else if len(r.Delays) > 0 {
		delay = mtime.Time(r.Delays[0].DelayMS)
	}
	id := &Idle{DelayMS: int64(delay)}
	for _, v := range cands {
		id.CandidatesMS = append(id.CandidatesMS, int64(v))
	}
	// Exact counts of the gaps at least each candidate, counted again as
	// the stream is replayed.
	atLeast := make([][]int64, len(a.partNames))
	for i := range atLeast {
		atLeast[i] = make([]int64, len(cands))
	}
	if c.path != "-" {
		var engines []*replay
		for _, v := range append([]mtime.Time{0}, cands...) {
			cc := *c
			cc.idle = v
			e, err := newReplay(&cc, delay, 0)
			if err != nil {
				return nil, err
			}
			engines = append(engines, e)
		}
		if err := a.replayAgain(stdin, engines, atLeast, cands); err != nil {
			return nil, err
		}
		never := engines[0]
		for i, e := range engines {
			t := IdleTimeout{Label: "never", IdleMS: int64(e.idle), TooLate: e.stats.TooLate, TooLateWeight: e.lateW,
				TooLatePercent: pct(e.lateW, a.all.w), AddedPercent: pct(e.lateW-never.lateW, a.all.w), WindowsFired: e.waits.n}
			if i > 0 {
				t.Label = durLabel(e.idle)
			}
			if e.waits.n > 0 {
				t.WaitMeanMS = ptr(int64(math.Round(e.waitSum / float64(e.waits.n))))
				t.WaitMaxMS = ptr(e.waits.max)
			}
			id.Timeouts = append(id.Timeouts, t)
			if i > 0 && id.RecommendedMS == nil && e.lateW-never.lateW <= c.Target*a.all.w {
				id.RecommendedMS = ptr(int64(e.idle))
			}
		}
	}
	for i, name := range a.partNames {
		g := &a.gaps.gaps[i]
		p := PartitionGaps{Partition: identityText(name), Events: a.gaps.n[i], Gaps: g.n, AtLeast: atLeast[i]}
		if g.n > 0 {
			p.P50MS, p.P99MS, p.MaxMS = g.quantile(0.5), g.quantile(0.99), g.max
		}
		id.Partitions = append(id.Partitions, p)
	}
	id.Text = idleText(id, c)
	return id, nil
}

// replayAgain reads the input a second time and replays it through the
// engines, counting the gaps at least each candidate on the way.
func (a *analyzer) replayAgain(stdin io.Reader, engines []*replay, atLeast [][]int64, cands []mtime.Time) error {
	c := a.c
	prod, closer, err := openInput(c, stdin)
	if err != nil {
		return err
	}
	defer closer.Close()
	last := make([]mtime.Time, len(a.partNames))
	seen := make([]bool, len(a.partNames))
	// The replays spread over the processors, as the first pass's.
	gs := make([]*replayGroup, max(1, min(runtime.GOMAXPROCS(0), len(engines))))
	for i := range gs {
		gs[i] = &replayGroup{in: make(chan *batch, 8), done: make(chan struct{})}
	}
	for i, e := range engines {
		gs[i%len(gs)].engines = append(gs[i%len(gs)].engines, e)
	}
	p := newPool()
	for _, g := range gs {
		go g.run(p)
	}
	stride := len(c.byP) + 1
	readErr := prod(p, func(b *batch) bool {
		gi := 0
		for i := range b.recs {
			r := &b.recs[i]
			if r.why != rOK {
				continue
			}
			pi, ok := a.parts[string(b.get(b.groups[gi+stride-1]))]
			gi += stride
			if !ok {
				continue
			}
			r.part = pi
			if seen[pi] {
				gap := max(0, r.arr-last[pi])
				for k, v := range cands {
					if gap >= v {
						atLeast[pi][k]++
					}
				}
			}
			seen[pi], last[pi] = true, max(last[pi], r.arr)
		}
		b.refs.Store(int32(len(gs)))
		for _, g := range gs {
			g.in <- b
		}
		return true
	})
	for _, g := range gs {
		close(g.in)
	}
	err = nil
	for _, g := range gs {
		<-g.done
		err = cmp.Or(err, g.err)
	}
	return cmp.Or(readErr, err)
}

func idleText(id *Idle, c *config) string {
	if len(id.Timeouts) == 0 {
		return "Standard input cannot be read twice: name the file to replay the idle timeouts."
	}
	never := id.Timeouts[0]
	wait := func(t IdleTimeout) string {
		if t.WaitMaxMS == nil {
			return "(no window fired before the input ended)"
		}
		return fmt.Sprintf("at most %s (mean %s)", fmtMS(*t.WaitMaxMS), fmtMS(*t.WaitMeanMS))
	}
	var b strings.Builder
	if id.RecommendedMS == nil {
		fmt.Fprintf(&b, "Every idle timeout tried adds more than %s too-late events to no idleness at all. Keep idleness off, and results wait for the quietest partition: %s; or accept the too-late events of a timeout from the table.",
			fmtPct(100*c.Target), wait(never))
		return b.String()
	}
	var t IdleTimeout
	for _, x := range id.Timeouts[1:] {
		if x.IdleMS == *id.RecommendedMS {
			t = x
		}
	}
	fmt.Fprintf(&b, "Use an idle timeout of %s (watermark: {idle: %s}): it adds %s too-late events (%s in all) and results wait %s, against %s when no partition is ever idle.",
		t.Label, jobDur(mtime.Time(t.IdleMS)), fmtPct(t.AddedPercent), fmtPct(t.TooLatePercent), wait(t), wait(never))
	return b.String()
}

// jobDur writes a duration as a job file takes it: "30s", "5m", "1h", "7d".
func jobDur(d mtime.Time) string {
	switch {
	case d%86400000 == 0:
		return fmt.Sprintf("%dd", d/86400000)
	case d%3600000 == 0:
		return fmt.Sprintf("%dh", d/3600000)
	case d%60000 == 0:
		return fmt.Sprintf("%dm", d/60000)
	case d%1000 == 0:
		return fmt.Sprintf("%ds", d/1000)
	}
	return fmt.Sprintf("%dms", d)
}

// niceIdles are the readable idle timeouts a candidate is rounded to.
var niceIdles = []mtime.Time{
	1000, 2000, 5000, 10000, 15000, 20000, 30000,
	60000, 120000, 300000, 600000, 900000, 1200000, 1800000,
	3600000, 2 * 3600000, 3 * 3600000, 6 * 3600000, 12 * 3600000, 24 * 3600000,
}

// niceNear is the value of niceIdles nearest to v by ratio (the larger of
// two as near), 0 for v <= 0.
func niceNear(v mtime.Time) mtime.Time {
	if v <= 0 {
		return 0
	}
	best := niceIdles[0]
	for _, n := range niceIdles[1:] {
		// n is nearer than best when n/v < v/best, that is n*best < v*v
		// (n > best); compared as floats, the products overflow int64.
		if n <= v || float64(n)*float64(best) <= float64(v)*float64(v) {
			best = n
		}
	}
	return best
}
