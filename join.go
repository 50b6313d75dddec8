package weir

import (
	"fmt"
	"reflect"
	"time"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/translate"
)

// Joined is one output of a join: a left record and the right record it
// joined, or, in a left outer or anti join, a left record that joined
// nothing (Matched false); see engine.Joined.
type Joined[K comparable, L, R any] = engine.Joined[K, L, R]

// JoinLate is a record that came too late for a join, with the reason
// too_late_for_join; see engine.JoinLate.
type JoinLate[K comparable, L, R any] = engine.JoinLate[K, L, R]

// JoinOption configures a join: LeftOuter, Anti, JoinLateness, or Named
// (which names the join); ExclusiveLower and ExclusiveUpper an interval
// join, TableDeletes a temporal join.
type JoinOption interface {
	applyJoin(*joinConfig)
}

type joinConfig struct {
	spec engine.JoinSpec
	part partConfig
	// deletes is TableDeletes' func(R) bool.
	deletes any
}

type joinOption func(*joinConfig)

func (o joinOption) applyJoin(c *joinConfig) { o(c) }

func (o PartOption) applyJoin(c *joinConfig) { o(&c.part) }

// LeftOuter makes an interval join a left outer join: besides the pairs,
// every left record that joined nothing is emitted (Matched false) once the
// watermark has passed its time plus the upper bound.
func LeftOuter() JoinOption {
	return joinOption(func(c *joinConfig) { c.spec.Mode = engine.JoinLeftOuter })
}

// Anti makes an interval join an anti join: only the left records that
// joined nothing are emitted (Matched false), once the watermark has passed
// their time plus the upper bound: the orders without a payment within 10
// minutes.
func Anti() JoinOption {
	return joinOption(func(c *joinConfig) { c.spec.Mode = engine.JoinAnti })
}

// ExclusiveLower excludes the lower bound from the interval.
func ExclusiveLower() JoinOption {
	return joinOption(func(c *joinConfig) { c.spec.LowerExclusive = true })
}

// ExclusiveUpper excludes the upper bound from the interval.
func ExclusiveUpper() JoinOption {
	return joinOption(func(c *joinConfig) { c.spec.UpperExclusive = true })
}

// TableDeletes tells a temporal join which records of its table are
// deletions: from such a record's time on its key has no row (a left
// record then joins nothing), until a later version. R is the table's
// record type.
func TableDeletes[R any](deleted func(R) bool) JoinOption {
	return joinOption(func(c *joinConfig) { c.deletes = deleted })
}

// JoinLateness lets records come up to d behind the combined watermark:
// the join keeps what they could join that much longer, and emits the
// unmatched left records that much later.
func JoinLateness(d time.Duration) JoinOption {
	return joinOption(func(c *joinConfig) { c.spec.Lateness = mtime.Millis(d) })
}

// IntervalJoin joins two keyed streams by event time, as Flink's
// intervalJoin: for the same key, a left record at time a and a right
// record at time b join when b is in [a+lower, a+upper], both bounds
// included unless ExclusiveLower or ExclusiveUpper says otherwise. A
// joined pair's time is the later of the two; pairs come in the order the
// records arrive and, for one record, in order of the other side's (time,
// arrival), so that the same input in the same order gives the same
// output. LeftOuter and Anti emit the left records that joined nothing.
//
// The join's watermark is the minimum of both sides', over the partitions
// of both (an idle partition, or an idle side, does not hold it back): the
// two sides need the same watermark strategy. A record at or behind it
// (minus JoinLateness) is too late: it goes to the second stream, counted,
// never joined. A record leaves the join's state once the watermark has
// passed the last time a record of the other side could still join it, so
// that the state holds the interval plus the lateness. With Checkpoints the
// state is kept in checkpoints, aligned across both inputs, and restored
// at any parallelism.
//
// Both sides are streams of the source loop (read from sources, through
// Map, Filter, FlatMap, Union or another join), not the output of an
// aggregation; the join runs in the source loop, and its streams are the
// loop's too (they may be merged with Union). The same input in the same
// order gives the same output: the elements of one source arrive in its
// order, those of two sources in the order they happen to be read, as in
// Union.
func IntervalJoin[K comparable, L, R any](left Keyed[K, L], right Keyed[K, R], lower, upper time.Duration, opts ...JoinOption) (Stream[Joined[K, L, R]], Stream[JoinLate[K, L, R]]) {
	c := joinOptions(opts)
	c.spec.Lower, c.spec.Upper = mtime.Millis(lower), mtime.Millis(upper)
	return joinStreams(left, right, c)
}

// TemporalJoin joins a stream with a versioned table by event time, as
// Flink SQL's event-time temporal join (FOR SYSTEM_TIME AS OF): table is
// the table's changelog, each of its records the version of its key's row
// from its own time on, until the next one (TableDeletes says which are
// deletions). A left record waits until the combined watermark (minus
// JoinLateness) has passed its time, so that every version that could
// still apply has come, then joins the version valid at its time: the
// latest at or before it, of two at one time the later to arrive. A left
// record with no version then joins nothing: it is dropped, counted as
// unmatched, or with LeftOuter or Anti emitted (Matched false). A pair's
// time is the left record's.
//
// A version at or behind the watermark (minus JoinLateness) is too late:
// it would change what records already joined, so it goes to the second
// stream, counted, as a left record that late does. The state holds the
// left records not yet joined and, for each key, the versions after the
// watermark and the one valid at it: a table's last version is kept for
// as long as its key has one (a deletion lets it go). Rules, order,
// checkpoints and parallelism are IntervalJoin's.
func TemporalJoin[K comparable, L, R any](left Keyed[K, L], table Keyed[K, R], opts ...JoinOption) (Stream[Joined[K, L, R]], Stream[JoinLate[K, L, R]]) {
	c := joinOptions(opts)
	c.spec.Temporal = true
	return joinStreams(left, table, c)
}

func joinOptions(opts []JoinOption) joinConfig {
	var c joinConfig
	for _, o := range opts {
		o.applyJoin(&c)
	}
	return c
}

// joinStreams adds a join of left and right to their pipeline.
func joinStreams[K comparable, L, R any](left Keyed[K, L], right Keyed[K, R], c joinConfig) (Stream[Joined[K, L, R]], Stream[JoinLate[K, L, R]]) {
	p := left.t.s.p
	p.stages++
	id := p.stages
	name := p.part("join", c.part, fmt.Sprintf("join-%d", id))
	out := &engine.Stream[Joined[K, L, R]]{}
	late := &engine.Stream[JoinLate[K, L, R]]{}
	// Its state's name in checkpoints, apart from the aggregations'.
	node := plan.ID{Kind: plan.KindJoin, Name: "join:" + name}
	outs := func() (Stream[Joined[K, L, R]], Stream[JoinLate[K, L, R]]) {
		// The join runs in the source loop: its streams are the loop's.
		return Stream[Joined[K, L, R]]{p: p, n: out, from: plan.Input{From: node}},
			Stream[JoinLate[K, L, R]]{p: p, n: late, from: plan.Input{From: node, Port: plan.Late}}
	}
	if err := c.spec.Validate(); err != nil {
		p.fail("join %s: %v", name, err)
		return outs()
	}
	deletes, ok := c.deletes.(func(R) bool)
	switch {
	case c.deletes != nil && !c.spec.Temporal:
		p.fail("join %s: TableDeletes is a temporal join's option: an interval join has no table", name)
		return outs()
	case c.deletes != nil && !ok:
		p.fail("join %s: TableDeletes takes a %T, not a func(%s) bool", name, c.deletes, reflect.TypeFor[R]())
		return outs()
	}
	switch {
	case right.t.s.p != p:
		p.fail("join %s: its two sides are streams of different pipelines", name)
		return outs()
	case left.t.s.origin != 0 || right.t.s.origin != 0:
		p.fail("join %s: a side is the output of an aggregation; only streams read from sources can be joined", name)
		return outs()
	case left.t.wm.Fingerprint() != right.t.wm.Fingerprint():
		p.fail("join %s: its sides have different watermark strategies (%s and %s): they need the same one", name, left.t.wm.Fingerprint(), right.t.wm.Fingerprint())
		return outs()
	case left.t.version != nil || right.t.version != nil:
		p.fail("join %s: a side is Versioned, which a join does not do: a join does not revise what it joined", name)
		return outs()
	}
	if how := p.encoded(); how != "" {
		for _, t := range []reflect.Type{reflect.TypeFor[K](), reflect.TypeFor[L](), reflect.TypeFor[R]()} {
			if why := checkpointable(t); why != "" {
				p.fail("join %s: the type %s cannot be %s: %s", name, t, how, why)
				return outs()
			}
		}
	}
	op := &plan.Join{Lower: c.spec.Lower, Upper: c.spec.Upper, LowerExclusive: c.spec.LowerExclusive, UpperExclusive: c.spec.UpperExclusive, Temporal: c.spec.Temporal,
		Mode: c.spec.Mode.String(), Lateness: c.spec.Lateness, Watermark: left.t.wm, Format: stateFormat,
		Layout: []plan.Setting{
			{Field: "key", Value: reflect.TypeFor[K]().String()},
			{Field: "left", Value: reflect.TypeFor[L]().String()},
			{Field: "right", Value: reflect.TypeFor[R]().String()},
		},
		Settings:    []plan.Setting{translate.ParallelismSetting(p.o.parallelism)},
		Parallelism: p.o.parallelism,
	}
	if left.t.id != nil || right.t.id != nil {
		// A Deduplicated side is read into the join through a head of its
		// own, which keeps its ids.
		for i, horizon := range []mtime.Time{left.t.horizon, right.t.horizon} {
			var d *plan.Dedup
			if horizon > 0 {
				d = &plan.Dedup{Field: "function", Horizon: horizon}
			}
			op.Heads = append(op.Heads, fmt.Sprintf("head:%s:%s", node.Name, []string{"left", "right"}[i]))
			op.Dedup = append(op.Dedup, d)
		}
	}
	jn := &joinNode[K, L, R]{name: name, spec: c.spec, deletes: deletes, left: left, right: right, out: out, late: late,
		lin: later[L](left.t.s.n), rin: later[R](right.t.s.n), disk: p.o.disk}
	p.add(&plan.Node{ID: node, Label: "join " + name, Inputs: []plan.Input{left.t.s.from, right.t.s.from}, Op: op, Impl: jn})
	return outs()
}

// joinNode is the implementation of a join's node: a join stage fed by
// both sides.
type joinNode[K comparable, L, R any] struct {
	name    string
	spec    engine.JoinSpec
	deletes func(R) bool
	left    Keyed[K, L]
	right   Keyed[K, R]
	out     *engine.Stream[Joined[K, L, R]]
	late    *engine.Stream[JoinLate[K, L, R]]
	lin     *lazy[L]
	rin     *lazy[R]
	disk    *onDisk // nil: buffers in memory
}

func (n *joinNode[K, L, R]) Build(c *translate.Ctx) error {
	e := c.Engine()
	op := c.Node().Op.(*plan.Join)
	cfg := engine.JoinConfig[K, L, R]{Name: c.Participant(), Spec: n.spec, Watermark: op.Watermark,
		Parallelism: op.Parallelism, Hash: stableHash[K](e.Checkpointed()),
		Deletes: n.deletes, Out: n.out, Late: n.late}
	if e.Checkpointed() || n.disk != nil {
		cfg.Codec = jsonCodec[K, L, R]{}
	}
	if n.disk != nil {
		db, err := n.disk.open(e, "join "+n.name)
		if err != nil {
			return err
		}
		cfg.State = db
	}
	j, err := engine.NewJoin(e, cfg)
	if err != nil {
		return fmt.Errorf("weir: join %s: %w", n.name, err)
	}
	n.lin.c = &joinSide[K, L]{key: n.left.key, ts: n.left.t.ts, part: n.left.t.part,
		add: j.Left, signal: j.Signal}
	n.rin.c = &joinSide[K, R]{key: n.right.key, ts: n.right.t.ts, part: n.right.t.part,
		add: j.Right, signal: j.RightSignal}
	if n.left.t.id != nil {
		dd := state.NewMemoryDedup(op.Dedup[0].Horizon)
		if cfg.State != nil {
			dd = cfg.State.Dedup(op.Dedup[0].Horizon)
		}
		if n.lin.c, err = joinHead(e, op, 0, j.LeftTarget(), c.Node().Label, n.left, dd); err != nil {
			return fmt.Errorf("weir: join %s: %w", n.name, err)
		}
	}
	if n.right.t.id != nil {
		dd := state.NewMemoryDedup(op.Dedup[1].Horizon)
		if n.disk != nil {
			// The left input's ids are in the join's database; the
			// right one's, under the same keys, in one of their own.
			db, err := n.disk.open(e, "join "+n.name+": the ids of its right input")
			if err != nil {
				return err
			}
			dd = db.Dedup(op.Dedup[1].Horizon)
		}
		if n.rin.c, err = joinHead(e, op, 1, j.RightTarget(), c.Node().Label, n.right, dd); err != nil {
			return fmt.Errorf("weir: join %s: %w", n.name, err)
		}
	}
	return nil
}

// joinHead is the input of the join's Deduplicated side k (0 left, 1
// right): a head with its de-duplication dd, and its accounting among the
// status's inputs (never the status's own counts, which are the
// aggregations').
func joinHead[K comparable, T any](e *engine.Engine, op *plan.Join, side int, target engine.Target[K, T], label string, k Keyed[K, T], dd state.Dedup) (*stageInput[K, T], error) {
	h, err := engine.NewHead(e, engine.HeadConfig[K, T]{Name: op.Heads[side], Source: label, Window: target,
		Dedup: dd, Input: op.Heads[side], Second: true})
	if err != nil {
		return nil, err
	}
	return &stageInput[K, T]{h: h, ts: k.t.ts, key: k.key, part: k.t.part, id: k.t.id}, nil
}

// joinSide feeds one side of a join from its input stream.
type joinSide[K comparable, T any] struct {
	key    func(T) K
	ts     func(T) mtime.Time
	part   func(T) int
	add    func(part int, key K, ts mtime.Time, v T)
	signal func(engine.Signal)
}

func (s *joinSide[K, T]) Push(v T) {
	part := 0
	if s.part != nil {
		part = s.part(v)
	}
	s.add(part, s.key(v), s.ts(v), v)
}

func (s *joinSide[K, T]) Signal(sg engine.Signal) { s.signal(sg) }

// JoinTime is the event time of a join's output as an element of the next
// stage: the later of the two records' times, or the left record's when it
// joined nothing.
func JoinTime[K comparable, L, R any](j Joined[K, L, R]) mtime.Time { return j.Time }
