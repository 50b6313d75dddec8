package console

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/aggregate"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// The watermark simulator: a toy stream of taps (a game's taps on a phone),
// with time shrunk to seconds, cut into windows by event time, replayed in
// arrival order through weir's own window operator and its clocks
// (engine.Operator, the core of every window stage), so that what it shows is
// what weir does. With the toy's own controls it shows exactly what the
// reference simulator it is modelled on shows. It goes past a one-partition
// toy in two ways: the watermark may be emitted periodically, as Flink
// does, instead of after every tap; and the taps may come on several
// partitions, one of which goes quiet.

// The toy's constants, as the reference simulator has them.
const (
	simSpan     = 90.0  // seconds of event time cut into windows
	simHorizon  = 160.0 // taps keep coming after the last window
	simRate     = 0.5   // taps per second
	simLateness = 15    // allowed lateness of the third policy, seconds
)

// Policies for late taps.
const (
	PolicyDrop     = "drop"
	PolicySide     = "side"
	PolicyLateness = "lateness"
)

// SimParams are the simulator's controls.
type SimParams struct {
	Size   int     `json:"size"`   // window size, seconds: 10, 15 or 30
	Delay  float64 `json:"delay"`  // watermark delay, seconds (0 to 30)
	Tunnel float64 `json:"tunnel"` // percent of phones in a tunnel (0 to 40)
	Policy string  `json:"policy"` // drop, side or lateness
	Seed   uint32  `json:"seed"`   // the stream (81 shows every effect)
	// Interval is the periodic watermark's interval, seconds; 0 emits a
	// watermark after every tap, as the simplest toy does.
	Interval float64 `json:"interval"`
	// Partitions spreads the taps over this many partitions (1 to 4), each
	// with its own watermark; with IdleAfter > 0, the last partition gets no
	// tap after that many seconds of event time, and Idle (seconds, 0: never)
	// is how long a partition may stay quiet before it stops holding the
	// watermark back.
	Partitions int     `json:"partitions"`
	IdleAfter  float64 `json:"idle_after"`
	Idle       float64 `json:"idle"`
}

// Tap is one event of the toy stream and what became of it.
type Tap struct {
	TS        float64 `json:"ts"`  // event time, seconds
	Arr       float64 `json:"arr"` // arrival, seconds
	Offline   bool    `json:"offline"`
	Partition int     `json:"partition"`
	// Fate is "on time", "added late", "side output", "dropped", or ""
	// for a tap after the last window.
	Fate string `json:"fate"`
}

// SimWindow is one window and its results.
type SimWindow struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Close is when (arrival time, seconds) the watermark passed its end,
	// or null if it has not by the end of the stream.
	Close *float64 `json:"close"`
	First int      `json:"first"` // the count of the on-time pane
	Count int      `json:"count"` // the final count
	// Updates counts the late panes (taps added within the lateness).
	Updates int `json:"updates"`
	// Waiting counts the taps of a window that has not closed by the end
	// of the stream: in it, but with no result yet (0 once it has closed).
	Waiting int `json:"waiting"`
}

// CurvePoint is one delay of the trade-off: the share of taps late, and how
// long results waited after their window ended, on average.
type CurvePoint struct {
	Delay float64 `json:"delay"`
	Late  float64 `json:"late"`
	Wait  float64 `json:"wait"`
}

// SimResult is what the simulator shows for one set of controls.
type SimResult struct {
	Params  SimParams    `json:"params"`
	Taps    []Tap        `json:"taps"`
	Windows []SimWindow  `json:"windows"`
	N       int          `json:"n"`    // taps in the windows
	Late    int          `json:"late"` // late: added, side output or dropped
	Lost    int          `json:"lost"` // dropped
	Wait    float64      `json:"wait"` // mean wait after a window's end, seconds
	Curve   []CurvePoint `json:"curve"`
	Summary string       `json:"summary"`
}

// mulberry32 is a small generator, so that a stream number always gives
// the same stream.
func mulberry32(seed uint32) func() float64 {
	return func() float64 {
		seed += 0x6D2B79F5
		t := seed
		t = imul(t^(t>>15), 1|t)
		t = (t + imul(t^(t>>7), 61|t)) ^ t
		return float64(t^(t>>14)) / 4294967296
	}
}

func imul(a, b uint32) uint32 { return a * b }

// makeStream draws the taps: every tap draws the same
// four numbers, so the controls change only what they control.
func makeStream(p SimParams) []Tap {
	r := mulberry32(p.Seed)
	var taps []Tap
	t := 0.0
	for i := 0; ; i++ {
		t += -jsLog(1-r()) / simRate
		network := 0.2 + 2.3*r()
		coin, tunnel := r(), 4+36*r()
		if t > simHorizon {
			break
		}
		offline := coin < p.Tunnel/100
		arr := t + network
		if offline {
			arr += tunnel
		}
		part := 0
		if p.Partitions > 1 {
			part = i % p.Partitions
			if p.IdleAfter > 0 && part == p.Partitions-1 && t > p.IdleAfter {
				continue // the quiet partition has nothing more
			}
		}
		taps = append(taps, Tap{TS: t, Arr: arr, Offline: offline, Partition: part})
	}
	return taps
}

func ms(s float64) mtime.Time { return mtime.Time(math.Round(s * 1000)) }

// Validate reports the first parameter outside the values the simulator's
// page offers: the one place they are checked. The window size must divide
// the toy's 90 s of windows (the windows are an array indexed by a tap's
// time); the others keep the replay small and its figures readable.
func (p SimParams) Validate() error {
	within := func(name string, v, lo, hi float64, unit string) error {
		if v >= lo && v <= hi { // false for NaN
			return nil
		}
		return fmt.Errorf("%s: expected a number from %g to %g (%s), got %g", name, lo, hi, unit, v)
	}
	switch {
	case p.Size != 10 && p.Size != 15 && p.Size != 30:
		return fmt.Errorf("size: expected 10, 15 or 30 (seconds), got %d", p.Size)
	case p.Policy != PolicyDrop && p.Policy != PolicySide && p.Policy != PolicyLateness:
		return fmt.Errorf("policy: expected %s, %s or %s, got %q", PolicyDrop, PolicySide, PolicyLateness, p.Policy)
	case p.Partitions < 1 || p.Partitions > 4:
		return fmt.Errorf("partitions: expected 1, 2, 3 or 4, got %d", p.Partitions)
	}
	for _, c := range []error{
		within("delay", p.Delay, 0, 30, "seconds"),
		within("tunnel", p.Tunnel, 0, 40, "percent"),
		within("interval", p.Interval, 0, 10, "seconds"),
		within("idle_after", p.IdleAfter, 0, 90, "seconds"),
		within("idle", p.Idle, 0, 30, "seconds"),
	} {
		if c != nil {
			return c
		}
	}
	return nil
}

// simParamNames are the parameters of /api/simulate.
var simParamNames = []string{"delay", "idle", "idle_after", "interval", "partitions", "policy", "seed", "size", "tunnel"}

// ParseSimParams reads the parameters of /api/simulate
// (?size=15&delay=2&tunnel=10&policy=drop&seed=81&interval=0&partitions=1&idle_after=0&idle=0):
// the page's default for each one absent, an error naming the first one that
// is unknown, given twice, not a number, or not allowed (Validate).
func ParseSimParams(q url.Values) (SimParams, error) {
	p := SimParams{Size: 15, Delay: 2, Tunnel: 10, Policy: PolicyDrop, Seed: 81, Partitions: 1}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(simParamNames, name) {
			return p, fmt.Errorf("unknown parameter %q; expected %s", name, strings.Join(simParamNames, ", "))
		}
		if len(q[name]) > 1 {
			return p, fmt.Errorf("%s: given twice", name)
		}
	}
	var err error
	num := func(name string, dst *float64) {
		if v, ok := q[name]; ok && err == nil {
			f, perr := strconv.ParseFloat(v[0], 64)
			if perr != nil {
				err = fmt.Errorf("%s: expected a number, got %q", name, v[0])
			}
			*dst = f
		}
	}
	whole := func(name string, dst *int) {
		if v, ok := q[name]; ok && err == nil {
			n, perr := strconv.Atoi(v[0])
			if perr != nil {
				err = fmt.Errorf("%s: expected a whole number, got %q", name, v[0])
			}
			*dst = n
		}
	}
	whole("size", &p.Size)
	num("delay", &p.Delay)
	num("tunnel", &p.Tunnel)
	num("interval", &p.Interval)
	whole("partitions", &p.Partitions)
	num("idle_after", &p.IdleAfter)
	num("idle", &p.Idle)
	if v, ok := q["policy"]; ok {
		p.Policy = v[0]
	}
	if v, ok := q["seed"]; ok && err == nil {
		n, perr := strconv.ParseUint(v[0], 10, 32)
		if perr != nil {
			err = fmt.Errorf("seed: expected a whole number from 0 to %d, got %q", uint32(math.MaxUint32), v[0])
		}
		p.Seed = uint32(n)
	}
	if err != nil {
		return p, err
	}
	return p, p.Validate()
}

// Simulate replays the taps in arrival order through weir's engine. A
// zero Size, Partitions or Policy is the page's default (15 s, one
// partition, drop); every parameter must be one the page offers
// (Validate).
func Simulate(p SimParams) (*SimResult, error) {
	if p.Size == 0 {
		p.Size = 15
	}
	if p.Partitions == 0 {
		p.Partitions = 1
	}
	if p.Policy == "" {
		p.Policy = PolicyDrop
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	taps := makeStream(p)
	res, err := run(p, taps)
	if err != nil {
		return nil, err
	}
	for d := 0; d <= 30; d++ {
		q := p
		q.Delay, q.Policy = float64(d), PolicyDrop
		r, err := run(q, taps)
		if err != nil {
			return nil, err
		}
		late := 0.0
		if r.N > 0 {
			late = float64(r.Late) / float64(r.N)
		}
		res.Curve = append(res.Curve, CurvePoint{Delay: float64(d), Late: late, Wait: r.Wait})
	}
	share := 0
	if res.N > 0 {
		share = int(math.Round(100 * float64(res.Late) / float64(res.N)))
	}
	what := ""
	switch {
	case res.Late == 0:
	case p.Policy == PolicySide:
		what = " They went to the side output, where a batch job can add them later."
	case p.Policy == PolicyLateness:
		what = fmt.Sprintf(" %d were added within the allowed lateness (counts shown as first → final)", res.Late-res.Lost)
		if res.Lost > 0 {
			what += fmt.Sprintf(", and %d came even later and were dropped.", res.Lost)
		} else {
			what += "."
		}
	default:
		what = " They were dropped, so the counts are too low."
	}
	res.Summary = fmt.Sprintf("%d of %d taps were late (%d%%).%s On average, each result came %.1f s after its window ended.", res.Late, res.N, share, what, res.Wait)
	return res, nil
}

// run is one replay: one window stage counting the taps (their index) per
// window, with the watermark, lateness and partitions of p.
//
// A window closes when the watermark passes its end (W >= End-1 ms, as its
// on-time pane fires): at the arrival of the tap that moved the watermark,
// or at the periodic emission (or the idleness timeout) that did. A window
// with no tap closes too, with a count of 0. Its first count is that of its
// on-time pane; its updates are the late panes that added a tap, not the
// pane that closes it once the allowed lateness is over.
func run(p SimParams, stream []Tap) (*SimResult, error) {
	taps := slices.Clone(stream)
	order := make([]int, len(taps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case taps[a].Arr < taps[b].Arr:
			return -1
		case taps[a].Arr > taps[b].Arr:
			return 1
		}
		return 0
	})
	lateness := time.Duration(0)
	if p.Policy == PolicyLateness {
		lateness = simLateness * time.Second
	}
	strategy := window.NewStrategy(window.TumblingWindows(time.Duration(p.Size) * time.Second)).WithLateness(lateness)
	wm := watermark.BoundedOutOfOrderness(time.Duration(p.Delay * float64(time.Second))).WithInterval(time.Duration(p.Interval * float64(time.Second)))
	if p.Idle > 0 {
		wm = wm.WithIdleness(time.Duration(p.Idle * float64(time.Second)))
	}
	n := int(simSpan) / p.Size
	wins := make([]SimWindow, n)
	for k := range wins {
		wins[k] = SimWindow{Start: float64(k * p.Size), End: float64((k + 1) * p.Size)}
	}
	// Each pane and late tap is read as the operator emits it. The
	// operator counts the taps of a window (the count is weir lateness's
	// instantiation of the operator: one compiled operator for both, 100
	// KB less of the binary); which taps a pane holds is in members: the
	// taps sent to each window, in order. A tap too late for its window is
	// among them, but its window's on-time pane has fired before it came,
	// and a late pane only marks the taps without a fate.
	members := make([][]int, n)
	winOf := func(i int) int { return int(ms(taps[i].TS) / 1000 / mtime.Time(p.Size)) } // as the pane's
	pane := func(pn *window.Pane[mtime.Time, int64]) {
		k := int(pn.Window.Start / 1000 / mtime.Time(p.Size))
		if k < 0 || k >= n {
			return
		}
		w := &wins[k]
		switch {
		case pn.Timing == window.OnTime:
			w.First = int(pn.Value)
			for _, i := range members[k] {
				taps[i].Fate = "on time"
			}
		case pn.Timing == window.Late && !pn.Final:
			w.Updates++
			for _, i := range members[k] {
				if taps[i].Fate == "" {
					taps[i].Fate = "added late"
				}
			}
		}
		w.Count = int(pn.Value)
	}
	tooLate := func(l *window.LateEvent[mtime.Time, float64]) {
		if i := int(l.Value); taps[i].TS < simSpan {
			if p.Policy == PolicySide {
				taps[i].Fate = "side output"
			} else {
				taps[i].Fate = "dropped"
			}
		}
	}
	cur := -1 // the tap being sent, if any
	shut := 0 // the windows before it have closed
	// A window's closing time is the moment the watermark passed its end,
	// whether or not it holds a tap.
	closed := func(w, now mtime.Time) {
		for ; shut < n && w >= ms(wins[shut].End)-1; shut++ {
			c := float64(now) / 1000
			if cur >= 0 {
				c = taps[cur].Arr
			}
			wins[shut].Close = &c
		}
	}
	op, err := engine.NewOperator(engine.OperatorConfig[mtime.Time, float64, int64, int64]{
		Strategy: strategy, Watermark: wm, Agg: aggregate.Count[float64](),
		Pane: pane, Late: tooLate, Emitted: closed,
	})
	if err != nil {
		return nil, err
	}
	for _, i := range order {
		op.Advance(ms(taps[i].Arr))
		cur = i
		if k := winOf(i); k < n {
			members[k] = append(members[k], i)
		}
		op.Event(taps[i].Partition, 0, ms(taps[i].TS), float64(i))
		cur = -1
	}
	for i := range taps {
		if taps[i].TS >= simSpan {
			continue
		}
		// A tap whose window has not closed when the stream ends is in it,
		// on time.
		if taps[i].Fate == "" {
			taps[i].Fate = "on time"
		}
		if w := &wins[int(taps[i].TS)/p.Size]; w.Close == nil {
			w.Waiting++
		}
	}
	res := &SimResult{Params: p, Taps: taps, Windows: wins}
	var wait float64
	for _, w := range wins {
		if w.Close != nil {
			wait += *w.Close - w.End
		}
	}
	res.Wait = wait / float64(len(wins))
	for _, t := range taps {
		if t.TS >= simSpan {
			continue
		}
		res.N++
		switch t.Fate {
		case "on time":
		case "dropped":
			res.Late++
			res.Lost++
		default:
			res.Late++
		}
	}
	return res, nil
}

// jsLog is the natural logarithm as JavaScript's Math.log computes it in
// V8 and in SpiderMonkey: fdlibm's __ieee754_log (e_log.c), step by step.
// The reference simulator draws each tap's time with Math.log, and Go's
// math.Log, another reduction of the same series, differs from it in the last
// bit for some arguments (stream 98 has one), which moves a tap by 1e-14 s.
// The float64 conversions keep each product rounded on its own, as in C,
// where a compiler could fuse it into a multiply-add.
func jsLog(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01 // 0x3fe62e42fee00000
		ln2Lo = 1.90821492927058770002e-10 // 0x3dea39ef35793c76
		two54 = 1.80143985094819840000e+16 // 0x4350000000000000
		lg1   = 6.666666666666735130e-01   // 0x3FE5555555555593
		lg2   = 3.999999999940941908e-01   // 0x3FD999999997FA04
		lg3   = 2.857142874366239149e-01   // 0x3FD2492494229359
		lg4   = 2.222219843214978396e-01   // 0x3FCC71C51D8E78AF
		lg5   = 1.818357216161805012e-01   // 0x3FC7466496CB03DE
		lg6   = 1.531383769920937332e-01   // 0x3FC39A09D078C69F
		lg7   = 1.479819860511658591e-01   // 0x3FC2F112DF3E5244
	)
	bits := math.Float64bits(x)
	hx, lx := int32(bits>>32), uint32(bits)
	k := int32(0)
	if hx < 0x00100000 { // x < 2**-1022
		switch {
		case hx&0x7fffffff == 0 && lx == 0:
			return math.Inf(-1)
		case hx < 0:
			return math.NaN()
		}
		k -= 54
		x *= two54 // subnormal: scale up
		hx = int32(math.Float64bits(x) >> 32)
	}
	if hx >= 0x7ff00000 {
		return x + x
	}
	k += hx>>20 - 1023
	hx &= 0x000fffff
	i := (hx + 0x95f64) & 0x100000
	// normalize x or x/2
	x = math.Float64frombits(uint64(uint32(hx|(i^0x3ff00000)))<<32 | math.Float64bits(x)&0xffffffff)
	k += i >> 20
	f := x - 1.0
	dk := float64(k)
	if 0x000fffff&(2+hx) < 3 { // -2**-20 <= f < 2**-20
		if f == 0 {
			if k == 0 {
				return 0
			}
			return float64(dk*ln2Hi) + float64(dk*ln2Lo)
		}
		r := float64(float64(f*f) * (0.5 - float64(0.33333333333333333*f)))
		if k == 0 {
			return f - r
		}
		return float64(dk*ln2Hi) - ((r - float64(dk*ln2Lo)) - f)
	}
	s := f / (2.0 + f)
	z := float64(s * s)
	i = hx - 0x6147a
	w := float64(z * z)
	j := 0x6b851 - hx
	t1 := float64(w * (lg2 + float64(w*(lg4+float64(w*lg6)))))
	t2 := float64(z * (lg1 + float64(w*(lg3+float64(w*(lg5+float64(w*lg7)))))))
	i |= j
	r := t2 + t1
	if i > 0 {
		hfsq := float64(float64(0.5*f) * f)
		if k == 0 {
			return f - (hfsq - float64(s*(hfsq+r)))
		}
		return float64(dk*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(dk*ln2Lo))) - f)
	}
	if k == 0 {
		return f - float64(s*(f-r))
	}
	return float64(dk*ln2Hi) - ((float64(s*(f-r)) - float64(dk*ln2Lo)) - f)
}
