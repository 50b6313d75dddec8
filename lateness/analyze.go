package lateness

import (
	"cmp"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"

	"github.com/weirstream/weir/mtime"
)

// The travel-time buckets: under 2 s, 2 s to 5 min, 5 min to 1 h,
// 1 to 6 h, 6 h or more. bucketEdges are their lower ends, after the first.
var bucketEdges = [...]int64{2000, 300000, 3600000, 21600000}

var bucketLabels = [...]string{"under 2 s", "2 s to 5 min", "5 min to 1 h", "1 to 6 h", "6 h or more"}

const nBuckets = len(bucketLabels)

func bucketOf(travel int64) int {
	for i, e := range bucketEdges {
		if travel < e {
			return i
		}
	}
	return nBuckets - 1
}

// tally is the travel times of a set of events.
type tally struct {
	n        int64
	w        float64
	travel   hist
	bucketN  [nBuckets]int64
	bucketW  [nBuckets]float64
	disorder int64 // out of order
	disW     float64
}

func (t *tally) add(travel int64, w float64, outOfOrder bool) {
	t.n++
	t.w += w
	t.travel.add(travel, w)
	b := bucketOf(travel)
	t.bucketN[b]++
	t.bucketW[b] += w
	if outOfOrder {
		t.disorder++
		t.disW += w
	}
}

// grouping is the tallies of one --by field.
type grouping struct {
	field  string
	index  map[string]int32
	values []string
	tally  []*tally
	other  int32 // the "(other)" group, -1 until needed
}

func (g *grouping) of(v []byte) *tally {
	if i, ok := g.index[string(v)]; ok {
		return g.tally[i]
	}
	if len(g.values) >= MaxGroups {
		if g.other < 0 {
			g.other = int32(len(g.values))
			g.values = append(g.values, "(other)")
			g.tally = append(g.tally, &tally{})
		}
		return g.tally[g.other]
	}
	s := string(v)
	g.index[s] = int32(len(g.values))
	g.values = append(g.values, s)
	g.tally = append(g.tally, &tally{})
	return g.tally[len(g.tally)-1]
}

// analyzer accumulates what the report needs, in one pass, in input order.
type analyzer struct {
	c *config

	lines, blank int64
	watermarks   int64 // watermark lines
	weighted     bool  // an event had a weight field
	rejected     [nReasons]int64
	all          tally
	groups       []*grouping
	parts        map[string]int32
	partNames    []string // by index: the partitions' values
	latest       latest

	seen        bool
	maxTS       mtime.Time // the largest event time so far
	minTS       mtime.Time
	maxArr      mtime.Time // the largest arrival so far
	firstArr    mtime.Time
	arrDisorder int64 // events that arrive before an earlier line

	// Margins: for an event, m = (largest earlier event time) - (end of its
	// window). With one partition and no idleness, the event is too late
	// for delay d and allowed lateness L exactly when m >= d + L (the
	// engine's rule, e - 1 ms + L <= W with W = max - d - 1 ms). thresholds are the
	// d + L of the engines; marginN/W[k] count the events with exactly k
	// thresholds <= m.
	margins    bool
	thresholds []mtime.Time
	marginN    []int64
	marginW    []float64
	marginHist hist // m >= 0

	groupsE []*replayGroup
	engines map[[2]mtime.Time]*replay

	// The state estimate: the distinct keys (their values joined); the
	// events with an id by bucket of event time (ids.width wide), and the
	// length of their ids.
	keys   map[string]struct{}
	keyBuf []byte
	ids    idTally
	// The quiet gaps of each partition (by index): arrival minus the
	// partition's latest arrival before, and of all partitions together.
	gaps gapTally
	// periodGroups is the travel times of each period compared, a grouping
	// whose values are the periods.
	periodGroups *grouping
}

func newAnalyzer(c *config) (*analyzer, error) {
	a := &analyzer{c: c, parts: map[string]int32{}, margins: c.partP == nil && c.idle == 0, engines: map[[2]mtime.Time]*replay{}}
	if c.EstimateState {
		a.keys = map[string]struct{}{}
		if c.idAt >= 0 {
			a.ids = newIDTally(mtime.Millis(c.DedupHorizon))
		}
	}
	if len(c.periods) > 0 {
		g := &grouping{field: "period", index: map[string]int32{}, other: -1}
		for _, p := range c.Periods {
			g.of([]byte(p.label()))
		}
		a.periodGroups = g
	}
	for _, b := range c.By {
		a.groups = append(a.groups, &grouping{field: b, index: map[string]int32{}, other: -1})
	}
	// The engines: every delay with no allowed lateness (Table 1), and every
	// delay that can be recommended (at most the longest wait) with each
	// allowed lateness.
	var list []*replay
	var err error
	add := func(d, l mtime.Time) {
		e, eerr := newReplay(c, d, l)
		err = cmp.Or(err, eerr)
		a.engines[[2]mtime.Time{d, l}] = e
		list = append(list, e)
		a.thresholds = append(a.thresholds, d+l)
	}
	for _, d := range c.delays {
		add(d, 0)
	}
	for _, d := range c.delays {
		if d > c.maxWait {
			continue
		}
		for _, l := range c.lateness {
			add(d, l)
		}
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(a.thresholds)
	a.thresholds = slices.Compact(a.thresholds)
	a.marginN = make([]int64, len(a.thresholds)+1)
	a.marginW = make([]float64, len(a.thresholds)+1)
	// Spread the engines over the processors, longest delays (the most open
	// windows) dealt first.
	n := max(1, min(runtime.GOMAXPROCS(0), len(list)))
	for range n {
		a.groupsE = append(a.groupsE, &replayGroup{in: make(chan *batch, 8), done: make(chan struct{})})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].delay+list[i].lateness > list[j].delay+list[j].lateness })
	for i, e := range list {
		g := a.groupsE[i%n]
		g.engines = append(g.engines, e)
	}
	return a, nil
}

// feed takes the next batch: tallies it here, then hands it to the engines.
func (a *analyzer) feed(b *batch) {
	a.blank += b.blank
	nby := len(a.c.byP)
	stride := nby
	if a.c.partP != nil {
		stride++
	}
	gi := 0
	for i := range b.recs {
		r := &b.recs[i]
		if r.why == rWatermarkLine {
			a.watermarks++
			continue
		}
		a.lines++
		if r.why != rOK {
			a.rejected[r.why]++
			continue
		}
		a.weighted = a.weighted || r.weighted
		g := b.groups[gi : gi+stride]
		gi += stride
		if a.c.partP != nil {
			pv := b.get(g[nby])
			pi, ok := a.parts[string(pv)]
			if !ok {
				pi = int32(len(a.parts))
				a.parts[string(pv)] = pi
				a.partNames = append(a.partNames, string(pv))
			}
			r.part = pi
			a.gaps.add(pi, r.arr)
		}
		if a.c.idAt >= 0 {
			if v := b.get(g[a.c.idAt]); string(v) != missing {
				a.ids.add(r.ts, len(v))
			}
		}
		if a.keys != nil {
			a.keyBuf = a.keyBuf[:0]
			for _, s := range g[a.c.nBy : a.c.nBy+len(a.c.Key)] {
				a.keyBuf = append(append(a.keyBuf, b.get(s)...), 0)
			}
			if _, ok := a.keys[string(a.keyBuf)]; !ok {
				a.keys[string(a.keyBuf)] = struct{}{}
			}
		}
		travel := int64(r.arr - r.ts)
		a.latest.add(a.c.Latest, r)
		outOfOrder := a.seen && r.ts < a.maxTS
		a.all.add(travel, r.w, outOfOrder)
		for j, gr := range a.groups {
			gr.of(b.get(g[j])).add(travel, r.w, outOfOrder)
		}
		for j, s := range a.c.periods {
			if s.has(r.ts) {
				a.periodGroups.tally[j].add(travel, r.w, outOfOrder)
			}
		}
		if a.seen {
			end := a.c.window.Start(r.ts) + a.c.window.Size
			if m := int64(a.maxTS) - int64(end); m >= 0 {
				k, _ := slices.BinarySearch(a.thresholds, mtime.Time(m))
				if k < len(a.thresholds) && a.thresholds[k] == mtime.Time(m) {
					k++
				}
				a.marginN[k]++
				a.marginW[k] += r.w
				a.marginHist.add(m, r.w)
			}
			if r.arr < a.maxArr {
				a.arrDisorder++
			}
		} else {
			a.seen = true
			a.firstArr, a.minTS, a.maxTS, a.maxArr = r.arr, r.ts, r.ts, r.arr
		}
		a.maxTS = max(a.maxTS, r.ts)
		a.maxArr = max(a.maxArr, r.arr)
		a.minTS = min(a.minTS, r.ts)
	}
	b.refs.Store(int32(len(a.groupsE)))
	for _, g := range a.groupsE {
		g.in <- b
	}
}

// marginTooLate is the number and weight of events whose margin is at least
// t (t must be a threshold).
func (a *analyzer) marginTooLate(t mtime.Time) (int64, float64) {
	k, _ := slices.BinarySearch(a.thresholds, t)
	var n int64
	var w float64
	for j := k + 1; j < len(a.marginN); j++ {
		n += a.marginN[j]
		w += a.marginW[j]
	}
	return n, w
}

// finish ends the engines.
func (a *analyzer) finish() error {
	for _, g := range a.groupsE {
		close(g.in)
	}
	var err error
	for _, g := range a.groupsE {
		<-g.done
		if g.err != nil && err == nil {
			err = g.err
		}
	}
	return err
}

// Analyze reads the recorded stream at path ("-": standard input, not for
// Parquet) once, and measures how late it is. Problems with the options or
// the input (a missing file or column) are *UsageError.
func Analyze(path string, o Options) (*Report, error) {
	return AnalyzeFrom(path, os.Stdin, o)
}

// AnalyzeFrom is Analyze reading "-" from stdin.
func AnalyzeFrom(path string, stdin io.Reader, o Options) (*Report, error) {
	c, err := o.resolve(path)
	if err != nil {
		return nil, err
	}
	prod, closer, err := openInput(c, stdin)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	a, err := newAnalyzer(c)
	if err != nil {
		return nil, err
	}
	p := newPool()
	for _, g := range a.groupsE {
		go g.run(p)
	}
	readErr := prod(p, func(b *batch) bool {
		a.feed(b)
		return true
	})
	if err := a.finish(); err != nil && readErr == nil {
		readErr = err
	}
	if readErr != nil && !errors.Is(readErr, errStopped) {
		return nil, readErr
	}
	r, err := a.report()
	if err != nil {
		return nil, err
	}
	if r.Idle, err = a.idleReport(r, stdin); err != nil {
		return nil, err
	}
	return r, nil
}

// latest keeps the events with the longest travel times: a heap of at most
// Options.Latest, the shortest on top. Of two events that travelled as
// long, the earlier line is kept, so that the list is the same however the
// input is read.
type latest []record

// later reports whether a is later than b: it travelled longer, or as long
// and comes first.
func later(a, b *record) bool {
	ta, tb := a.arr-a.ts, b.arr-b.ts
	return ta > tb || ta == tb && a.line < b.line
}

func (l *latest) add(n int, r *record) {
	h := *l
	switch {
	case n <= 0:
		return
	case len(h) < n:
		h = append(h, *r)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !later(&h[p], &h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
	case later(r, &h[0]):
		h[0] = *r
		for i := 0; ; {
			m, c := i, 2*i+1
			if c < len(h) && later(&h[m], &h[c]) {
				m = c
			}
			if c+1 < len(h) && later(&h[m], &h[c+1]) {
				m = c + 1
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	*l = h
}

// sorted is the events kept, the latest first.
func (l latest) sorted() []record {
	s := slices.Clone(l)
	slices.SortFunc(s, func(a, b record) int {
		switch {
		case later(&a, &b):
			return -1
		case later(&b, &a):
			return 1
		}
		return 0
	})
	return s
}
