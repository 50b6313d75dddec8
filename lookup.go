package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/translate"
)

// Looked is a record of a lookup join with the row its key had in the
// table when it was read (Found), or without one; see engine.Looked.
type Looked[K comparable, T, R any] = engine.Looked[K, T, R]

// LookupFailed is a record of a lookup join whose lookup kept failing,
// with the reason lookup_failed and the last error; see
// engine.LookupFailed.
type LookupFailed[K comparable, T any] = engine.LookupFailed[K, T]

// LookupOption configures a lookup join: LookupCache, LookupBatch,
// LookupRetries, or Named.
type LookupOption interface {
	applyLookup(*lookupConfig)
}

type lookupConfig struct {
	cfg  engine.LookupConfig[struct{}, struct{}, struct{}]
	part partConfig
	errs []string
}

type lookupOption func(*lookupConfig)

func (o lookupOption) applyLookup(c *lookupConfig) { o(c) }

func (o PartOption) applyLookup(c *lookupConfig) { o(&c.part) }

// LookupCache keeps the rows of up to size keys (and that a key has none),
// the least recently used going first, each for ttl of processing time
// after it was read (0: until it is evicted). Without it every record is a
// lookup (batched with the others under way).
func LookupCache(size int, ttl time.Duration) LookupOption {
	return lookupOption(func(c *lookupConfig) {
		if size < 1 || ttl < 0 {
			c.errs = append(c.errs, fmt.Sprintf("LookupCache: expected a size above 0 and a time to live of 0 or more, got %d and %s", size, ttl))
		}
		c.cfg.CacheSize, c.cfg.CacheTTL = size, mtime.Millis(ttl)
	})
}

// LookupBatch looks up to keys keys up in one call, with up to inFlight
// calls at once (default 64 and 4): the records wait for their rows in
// order, at most 4 × keys × inFlight of them, before reading waits.
func LookupBatch(keys, inFlight int) LookupOption {
	return lookupOption(func(c *lookupConfig) {
		if keys < 1 || inFlight < 1 {
			c.errs = append(c.errs, fmt.Sprintf("LookupBatch: expected at least 1 key and 1 call, got %d and %d", keys, inFlight))
		}
		c.cfg.Batch, c.cfg.InFlight = keys, inFlight
	})
}

// LookupRetries tries a call that fails up to attempts times in all,
// waiting backoff before the second try and twice as long before each next
// one (default 3 and 100 ms); the records of a call that still fails go to
// the dead letters.
func LookupRetries(attempts int, backoff time.Duration) LookupOption {
	return lookupOption(func(c *lookupConfig) {
		if attempts < 1 || backoff <= 0 {
			c.errs = append(c.errs, fmt.Sprintf("LookupRetries: expected at least 1 attempt and a backoff above 0, got %d and %s", attempts, backoff))
		}
		c.cfg.Attempts, c.cfg.Backoff = attempts, backoff
	})
}

// LookupJoin looks the key of each element of s up in table as it passes
// (Flink's lookup join, with its asynchronous lookups in order): the
// first stream has every element with the row its key had when it was
// read (Looked.Found), or without one (Filter on Found for an inner join);
// the second, the dead letters, has the elements whose lookup kept failing
// (LookupRetries), with the error: none is dropped. Lookups are batched
// (LookupBatch) and run in goroutines of their own, through a cache
// (LookupCache); the elements come out in the order they came in, with the
// watermarks and barriers between them, and a checkpoint waits for the
// lookups under way, so that the stage has no state of its own.
//
// Its results depend on when each row was read, in processing time: the
// table as it was then, or the cache's copy of it. They are not
// replayable byte for byte, as every other stage's are: a rerun, or a
// restore from a checkpoint, reads the table as it is at that time. For a
// table whose history is a stream, TemporalJoin joins as of each record's
// event time instead. Named names the stage in the status.
func LookupJoin[K comparable, T, R any](s Stream[T], key func(T) K, table connector.Lookup[K, R], opts ...LookupOption) (Stream[Looked[K, T, R]], Stream[LookupFailed[K, T]]) {
	p := s.p
	var c lookupConfig
	for _, o := range opts {
		o.applyLookup(&c)
	}
	p.stages++
	name := p.part("lookup", c.part, fmt.Sprintf("lookup-%d", p.stages))
	node := plan.ID{Kind: plan.KindLookup, Name: "lookup:" + name}
	out, failed := &engine.Stream[Looked[K, T, R]]{}, &engine.Stream[LookupFailed[K, T]]{}
	outs := func() (Stream[Looked[K, T, R]], Stream[LookupFailed[K, T]]) {
		return Stream[Looked[K, T, R]]{p: p, n: out, from: plan.Input{From: node}, origin: s.origin},
			Stream[LookupFailed[K, T]]{p: p, n: failed, from: plan.Input{From: node, Port: plan.Rejected}, origin: s.origin}
	}
	switch {
	case len(c.errs) > 0:
		p.fail("lookup %s: %s", name, c.errs[0])
		return outs()
	case table == nil || key == nil:
		p.fail("lookup %s: expected a key function and a table", name)
		return outs()
	}
	cache := "none"
	if c.cfg.CacheSize > 0 {
		cache = fmt.Sprintf("%d rows", c.cfg.CacheSize)
		if c.cfg.CacheTTL > 0 {
			cache += " for " + mtime.FormatDuration(c.cfg.CacheTTL)
		}
	}
	cfg := engine.LookupConfig[K, T, R]{Name: name, Table: table, Key: key, CacheSize: c.cfg.CacheSize, CacheTTL: c.cfg.CacheTTL,
		Batch: c.cfg.Batch, InFlight: c.cfg.InFlight, Attempts: c.cfg.Attempts, Backoff: c.cfg.Backoff, Out: out, Failed: failed}
	p.add(&plan.Node{ID: node, Label: "lookup " + name, Inputs: []plan.Input{s.from},
		Op: &plan.Lookup{Table: describeTable(table), Cache: cache}, Impl: &lookupNode[K, T, R]{cfg: cfg, at: later[T](s.n)}})
	return outs()
}

// lookupNode is the implementation of a lookup join's node.
type lookupNode[K comparable, T, R any] struct {
	cfg engine.LookupConfig[K, T, R]
	at  *lazy[T]
}

func (n *lookupNode[K, T, R]) Build(c *translate.Ctx) error {
	n.at.c = engine.NewLookup(c.Engine(), n.cfg)
	return nil
}

// describeTable is what a lookup reads, as its String says (a table of the
// table connector names its database, never its password), or its type.
func describeTable(t any) string {
	if s, ok := t.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", t)
}
