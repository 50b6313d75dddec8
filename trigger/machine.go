package trigger

import "github.com/weirstream/weir/mtime"

// NoDeadline is the Deadline of a node with no processing-time firing set.
const NoDeadline = mtime.MinTime

// NodeState is the state a window keeps for one node of a composite
// trigger: whether it finished, the elements it counted, the processing
// time it fires at.
type NodeState struct {
	Finished bool
	Count    int64
	Deadline mtime.Time
}

// Ctx is what a Program's calls see of the window and the clocks, and
// what they ask of the operator: the processing-time timers to set.
type Ctx struct {
	// Now is the processing time.
	Now mtime.Time
	// EndReached says that the watermark has passed the end of the window.
	EndReached bool
	// Timers are the processing-time instants the calls want a timer at
	// (appended; the caller sets and empties them).
	Timers []mtime.Time
}

// Program is a composite trigger compiled for execution: its nodes in a
// flat array, the root first, each window's state a []NodeState of the
// same length. It holds no state of its own and is shared by every window.
//
// It follows Beam's TriggerStateMachines: OnElement, then ShouldFire and,
// when ready, OnFire, after which the root's Finished bit closes the
// window; OnMerge for merged session windows. Two choices differ from
// Beam's code and are documented in docs/concepts.md: early and late
// firings of PastEndOfWindow restart their whole subtree after each firing
// (as Repeatedly does), and a PastEndOfWindow without late firings whose
// early firings finished in every merged window finishes the merged one too.
type Program struct {
	nodes   []pnode
	merging bool
}

type pnode struct {
	op      Op
	n       int64
	delay   mtime.Time
	aligned bool
	subs    []int
}

// Compile flattens e; merging says the windows merge (sessions), which has
// AfterEach and PastEndOfWindow run every child on each element, as Beam
// does, so that a merge that revives one finds its state.
func Compile(e Expr, merging bool) *Program {
	p := &Program{merging: merging}
	p.add(e)
	return p
}

func (p *Program) add(e Expr) int {
	i := len(p.nodes)
	p.nodes = append(p.nodes, pnode{op: e.Op, n: e.N, delay: e.Delay, aligned: e.Aligned})
	subs := make([]int, len(e.Subs))
	for j := range e.Subs {
		subs[j] = p.add(e.Subs[j])
	}
	p.nodes[i].subs = subs
	return i
}

// Len is the length of a window's state.
func (p *Program) Len() int { return len(p.nodes) }

// Shape identifies the tree of p without its parameters (FNV-1a over each
// node's kind and number of children): a window's state saved with one
// program is the state of another of the same shape, whose counts and
// delays may differ.
func (p *Program) Shape() uint64 {
	h := uint64(14695981039346656037)
	for _, n := range p.nodes {
		for _, b := range [2]byte{byte(n.op), byte(len(n.subs))} {
			h ^= uint64(b)
			h *= 1099511628211
		}
	}
	return h
}

// New is the state of a new window.
func (p *Program) New() []NodeState {
	s := make([]NodeState, len(p.nodes))
	for i := range s {
		s[i].Deadline = NoDeadline
	}
	return s
}

// Finished reports whether the root finished: the window fires no more.
func (p *Program) Finished(s []NodeState) bool { return s[0].Finished }

// OnElement records an element of the window.
func (p *Program) OnElement(s []NodeState, c *Ctx) { p.onElement(0, s, c) }

// ShouldFire reports whether the window fires now.
func (p *Program) ShouldFire(s []NodeState, c *Ctx) bool { return p.shouldFire(0, s, c) }

// OnFire records that the window fired; ShouldFire said so.
func (p *Program) OnFire(s []NodeState, c *Ctx) { p.onFire(0, s, c) }

// OnMerge sets dst, a new window's state, from parts, the states of the
// windows merged into it.
func (p *Program) OnMerge(dst []NodeState, parts [][]NodeState, c *Ctx) {
	for i := range dst {
		dst[i] = NodeState{Deadline: NoDeadline}
	}
	p.onMerge(0, dst, parts, c)
}

// firstUnfinished is the first child of i not finished, or -1.
func (p *Program) firstUnfinished(i int, s []NodeState) int {
	for _, j := range p.nodes[i].subs {
		if !s[j].Finished {
			return j
		}
	}
	return -1
}

func (p *Program) onElement(i int, s []NodeState, c *Ctx) {
	n := &p.nodes[i]
	switch n.op {
	case OpCount:
		s[i].Count++
	case OpProcessingTime:
		if s[i].Deadline == NoDeadline {
			at := c.Now + n.delay
			if n.aligned {
				at = mtime.AlignUp(c.Now, n.delay)
			}
			s[i].Deadline = at
			c.Timers = append(c.Timers, at)
		}
	case OpWatermark, OpEach:
		if p.merging {
			for _, j := range n.subs {
				p.onElement(j, s, c)
			}
		} else if j := p.firstUnfinished(i, s); j >= 0 {
			p.onElement(j, s, c)
		}
	case OpAll:
		for _, j := range n.subs {
			if !s[j].Finished {
				p.onElement(j, s, c)
			}
		}
	case OpFirst, OpRepeatedly, OpOrFinally:
		for _, j := range n.subs {
			p.onElement(j, s, c)
		}
	}
}

func (p *Program) shouldFire(i int, s []NodeState, c *Ctx) bool {
	n := &p.nodes[i]
	switch n.op {
	case OpCount:
		return s[i].Count >= n.n
	case OpProcessingTime:
		return s[i].Deadline != NoDeadline && c.Now >= s[i].Deadline
	case OpEndOfWindow:
		return c.EndReached
	case OpWatermark:
		if early := n.subs[0]; !s[early].Finished {
			return c.EndReached || p.shouldFire(early, s, c)
		}
		return len(n.subs) > 1 && p.shouldFire(n.subs[1], s, c)
	case OpEach:
		j := p.firstUnfinished(i, s)
		return j >= 0 && p.shouldFire(j, s, c)
	case OpFirst:
		for _, j := range n.subs {
			if s[j].Finished || p.shouldFire(j, s, c) {
				return true
			}
		}
		return false
	case OpAll:
		for _, j := range n.subs {
			if !s[j].Finished && !p.shouldFire(j, s, c) {
				return false
			}
		}
		return true
	case OpRepeatedly:
		return p.shouldFire(n.subs[0], s, c)
	case OpOrFinally:
		return p.shouldFire(n.subs[0], s, c) || p.shouldFire(n.subs[1], s, c)
	}
	return false
}

func (p *Program) onFire(i int, s []NodeState, c *Ctx) {
	n := &p.nodes[i]
	switch n.op {
	case OpCount, OpProcessingTime:
		p.clear(i, s)
		s[i].Finished = true
	case OpEndOfWindow:
		s[i].Finished = true
	case OpWatermark:
		early := n.subs[0]
		switch {
		case !s[early].Finished && !c.EndReached:
			// An early firing: the early trigger starts again.
			p.onFire(early, s, c)
			p.reset(early, s)
		case !s[early].Finished:
			// On time: early firings end, late ones start from nothing.
			p.reset(early, s)
			s[early].Finished = true
			if len(n.subs) == 1 {
				s[i].Finished = true
			} else {
				p.reset(n.subs[1], s)
			}
		case len(n.subs) > 1:
			late := n.subs[1]
			p.onFire(late, s, c)
			p.reset(late, s)
		default:
			s[i].Finished = true
		}
	case OpEach:
		if j := p.firstUnfinished(i, s); j >= 0 {
			p.onFire(j, s, c)
		}
		if p.merging {
			for _, j := range n.subs {
				p.clear(j, s)
			}
		}
		s[i].Finished = p.firstUnfinished(i, s) < 0
	case OpFirst:
		for _, j := range n.subs {
			if p.shouldFire(j, s, c) {
				p.onFire(j, s, c)
			} else {
				p.clear(j, s)
			}
		}
		s[i].Finished = true
	case OpAll:
		for _, j := range n.subs {
			p.onFire(j, s, c)
		}
		s[i].Finished = true
	case OpRepeatedly:
		j := n.subs[0]
		p.onFire(j, s, c)
		if s[j].Finished {
			p.reset(j, s)
		}
	case OpOrFinally:
		t, until := n.subs[0], n.subs[1]
		if p.shouldFire(until, s, c) {
			p.onFire(until, s, c)
			p.clear(t, s)
		} else {
			p.onFire(t, s, c)
		}
		s[i].Finished = s[t].Finished || s[until].Finished
	}
}

// clear forgets what the subtree of i counted and the firings it set, not
// which of its nodes finished (Beam's clear).
func (p *Program) clear(i int, s []NodeState) {
	s[i].Count, s[i].Deadline = 0, NoDeadline
	for _, j := range p.nodes[i].subs {
		p.clear(j, s)
	}
}

// reset starts the subtree of i again (Beam's resetTree).
func (p *Program) reset(i int, s []NodeState) {
	s[i] = NodeState{Deadline: NoDeadline}
	for _, j := range p.nodes[i].subs {
		p.reset(j, s)
	}
}

func (p *Program) onMerge(i int, dst []NodeState, parts [][]NodeState, c *Ctx) {
	n := &p.nodes[i]
	anyFin, allFin := false, true
	for _, s := range parts {
		anyFin = anyFin || s[i].Finished
		allFin = allFin && s[i].Finished
	}
	switch n.op {
	case OpCount:
		if anyFin {
			dst[i].Finished = true
			return
		}
		for _, s := range parts {
			dst[i].Count += s[i].Count
		}
	case OpProcessingTime:
		if anyFin {
			dst[i].Finished = true
			return
		}
		at := NoDeadline
		for _, s := range parts {
			if d := s[i].Deadline; d != NoDeadline && (at == NoDeadline || d < at) {
				at = d
			}
		}
		if at != NoDeadline {
			dst[i].Deadline = at
			c.Timers = append(c.Timers, at)
		}
	case OpEndOfWindow:
		dst[i].Finished = allFin && c.EndReached
	case OpWatermark:
		early := n.subs[0]
		earlyAll := true
		for _, s := range parts {
			earlyAll = earlyAll && s[early].Finished
		}
		if !earlyAll || !c.EndReached {
			p.onMerge(early, dst, parts, c)
			dst[early].Finished = false
			if len(n.subs) > 1 {
				p.reset(n.subs[1], dst)
			}
		} else {
			dst[early].Finished = true
			if len(n.subs) > 1 {
				p.onMerge(n.subs[1], dst, parts, c)
			} else {
				dst[i].Finished = true
			}
		}
	case OpEach:
		prior := true
		for _, j := range n.subs {
			if prior {
				p.onMerge(j, dst, parts, c)
				prior = dst[j].Finished
			} else {
				p.clear(j, dst)
			}
		}
		dst[i].Finished = p.firstUnfinished(i, dst) < 0
	case OpFirst, OpAll, OpOrFinally:
		for _, j := range n.subs {
			p.onMerge(j, dst, parts, c)
		}
		fin := n.op == OpAll
		for _, j := range n.subs {
			if n.op == OpAll {
				fin = fin && dst[j].Finished
			} else {
				fin = fin || dst[j].Finished
			}
		}
		dst[i].Finished = fin
	case OpRepeatedly:
		p.onMerge(n.subs[0], dst, parts, c)
	}
}
