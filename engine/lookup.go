package engine

import (
	"container/list"
	"context"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// ReasonLookupFailed is the reason of a record whose lookup kept failing:
// it goes to the lookup join's dead letters.
const ReasonLookupFailed = "lookup_failed"

// LookupConfig configures a lookup join stage.
type LookupConfig[K comparable, T, R any] struct {
	// Name names the stage in the status.
	Name  string
	Table connector.Lookup[K, R]
	Key   func(T) K
	// CacheSize is how many keys' rows (or their absence) are kept, the
	// least recently used going first; 0 keeps none. CacheTTL is how long,
	// in processing time, a row is kept after it was read; 0 until it is
	// evicted.
	CacheSize int
	CacheTTL  mtime.Time
	// Batch is the most keys one call looks up (default 64); InFlight the
	// most calls at once (default 4).
	Batch, InFlight int
	// Attempts is how many times a call is tried before the records
	// waiting for it go to the dead letters (default 3); Backoff the wait
	// before the second try, doubled before each next one (default
	// 100 ms).
	Attempts int
	Backoff  time.Duration
	// Out and Failed, when set, are the streams the stage's outputs go
	// to.
	Out    *Stream[Looked[K, T, R]]
	Failed *Stream[LookupFailed[K, T]]
}

// Looked is a record with the row its key had in the table when it was
// read (Found), or without one (Found false, Row the zero value).
type Looked[K comparable, T, R any] struct {
	Key   K
	Value T
	Row   R
	Found bool
	// ReadAt is the processing time the row was read from the table;
	// Cached says it came from the cache.
	ReadAt mtime.Time
	Cached bool
}

// LookupFailed is a record whose lookup kept failing (Reason
// ReasonLookupFailed): Err is the last call's error, Attempts how many
// times it was tried, At the processing time it was given up.
type LookupFailed[K comparable, T any] struct {
	Key      K
	Value    T
	Reason   string
	Err      string
	Attempts int
	At       mtime.Time
}

// LookupStatus is what a lookup join stage did, in a status report.
type LookupStatus struct {
	Name string `json:"name"`
	// Records looked up; of them, served by the cache, and given up
	// (dead letters); calls to the table, and their retries.
	Records   int64 `json:"records"`
	CacheHits int64 `json:"cache_hits"`
	Failed    int64 `json:"failed"`
	Calls     int64 `json:"calls"`
	Retries   int64 `json:"retries"`
}

// Lookup is a lookup join stage (Flink's lookup join, with its async
// lookups in order): each record's key is looked up in a table as the
// record passes, at processing time, through a cache. Calls to the table
// run in goroutines of their own, a batch of keys each, a bounded number
// at once; records come out in the order they came in, with the signals
// between them, so that a watermark never passes a record still waiting.
// At a checkpoint barrier, and at the end, every lookup under way is
// finished first: the stage has no state of its own to keep (the cache is
// not state). Its results depend on when the rows were read: a rerun
// reads the table as it is then.
//
// Which call serves a record depends on the records' order and the
// signals between them, never on when calls end: a record joins the call
// of its key's batch to come, or, through the cache, the call that read
// (or is reading) its key within the time to live; else its key goes into
// the batch to come. So a table that does not change gives the same
// output for the same input in the same order.
type Lookup[K comparable, T, R any] struct {
	cfg   LookupConfig[K, T, R]
	ctx   context.Context
	stop  context.CancelFunc
	now   mtime.Time
	queue []lookupEntry[K, T, R]
	head  int
	// waiting is the number of records of the queue without their row.
	waiting int
	// batch is the keys of the call to come, call its number (from 1);
	// inBatch, without a cache, says which keys it has.
	batch    []K
	call     uint64
	inBatch  map[K]bool
	inflight int
	results  chan lookupResult[K, R]
	cache    *lookupCache[K, R]
	stats    struct{ records, hits, failed, calls, retries atomic.Int64 }
}

type lookupEntry[K comparable, T, R any] struct {
	signal   *Signal
	done     bool
	call     uint64 // the call it waits for
	key      K
	v        T
	row      R
	found    bool
	cached   bool
	readAt   mtime.Time
	err      string
	attempts int
}

type lookupResult[K comparable, R any] struct {
	call     uint64
	keys     []K
	rows     map[K]R
	err      error
	attempts int
	at       mtime.Time
}

// NewLookup builds a lookup join stage.
func NewLookup[K comparable, T, R any](e *Engine, cfg LookupConfig[K, T, R]) *Lookup[K, T, R] {
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = 4
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	if cfg.Out == nil {
		cfg.Out = &Stream[Looked[K, T, R]]{}
	}
	if cfg.Failed == nil {
		cfg.Failed = &Stream[LookupFailed[K, T]]{}
	}
	l := &Lookup[K, T, R]{cfg: cfg, call: 1, inBatch: map[K]bool{}, results: make(chan lookupResult[K, R], cfg.InFlight),
		now: mtime.MinTime}
	l.ctx, l.stop = context.WithCancel(context.Background())
	if cfg.CacheSize > 0 {
		l.cache = &lookupCache[K, R]{size: cfg.CacheSize, ttl: cfg.CacheTTL, keys: map[K]*list.Element{}, order: list.New()}
	}
	if e != nil {
		e.OnStatus(l.status)
		e.OnStart(func(ctx context.Context) error {
			// The calls end with the run.
			context.AfterFunc(ctx, l.stop)
			return nil
		})
	}
	return l
}

// Out is the stage's output: every record, with its row or without.
func (l *Lookup[K, T, R]) Out() *Stream[Looked[K, T, R]] { return l.cfg.Out }

// Failed is the stage's dead letters: the records whose lookup kept
// failing.
func (l *Lookup[K, T, R]) Failed() *Stream[LookupFailed[K, T]] { return l.cfg.Failed }

// Stats is what the stage did so far.
func (l *Lookup[K, T, R]) Stats() LookupStatus {
	return LookupStatus{Name: l.cfg.Name, Records: l.stats.records.Load(), CacheHits: l.stats.hits.Load(),
		Failed: l.stats.failed.Load(), Calls: l.stats.calls.Load(), Retries: l.stats.retries.Load()}
}

func (l *Lookup[K, T, R]) status(s *Status) { s.Lookups = append(s.Lookups, l.Stats()) }

// maxQueue is how many records may wait for their rows before the stage
// waits for a call to end.
func (l *Lookup[K, T, R]) maxQueue() int { return 4 * l.cfg.Batch * l.cfg.InFlight }

// Push looks a record up: from the cache at once, or with the call that
// reads its key (the cache's, or the batch's to come).
func (l *Lookup[K, T, R]) Push(v T) {
	l.stats.records.Add(1)
	e := lookupEntry[K, T, R]{key: l.cfg.Key(v), v: v}
	switch c := l.cache; {
	case c != nil:
		ce := c.get(e.key, l.now)
		switch {
		case ce == nil:
			// Read by the batch to come, and cached from now on.
			c.put(&cached[K, R]{key: e.key, call: l.call, at: mtime.MaxTime})
			e.call = l.call
			l.add(e.key)
		case ce.call == 0:
			e.done, e.row, e.found, e.readAt, e.cached = true, ce.row, ce.found, ce.at, true
			l.stats.hits.Add(1)
		default:
			// Its key is being read: the record waits for that call.
			e.call, e.cached = ce.call, ce.call != l.call
			if e.cached {
				l.stats.hits.Add(1)
			}
		}
	case !l.inBatch[e.key]:
		l.inBatch[e.key] = true
		e.call = l.call
		l.add(e.key)
	default:
		e.call = l.call
	}
	if !e.done {
		l.waiting++
	}
	l.queue = append(l.queue, e)
	l.poll()
	for len(l.queue)-l.head >= l.maxQueue() && l.waiting > 0 {
		l.dispatch()
		l.apply(<-l.results)
		l.emit()
	}
}

// add adds a key to the batch to come, calling when it is full.
func (l *Lookup[K, T, R]) add(k K) {
	l.batch = append(l.batch, k)
	if len(l.batch) >= l.cfg.Batch {
		l.dispatch()
	}
}

// Signal passes a signal on in its place among the records: a barrier
// and the end once every lookup under way is done. A stop cancels the
// lookups under way and passes on at once: the records still waiting come
// after the savepoint's barrier, and are read again on resume.
func (l *Lookup[K, T, R]) Signal(s Signal) {
	if s.Now > l.now {
		l.now = s.Now
	}
	switch s.Kind {
	case Stop:
		l.stop()
		clear(l.queue)
		l.queue, l.head, l.waiting, l.batch = l.queue[:0], 0, 0, nil
		clear(l.inBatch)
		l.cfg.Out.Signal(s)
		l.cfg.Failed.Signal(s)
		return
	case Barrier, End:
		l.dispatch()
		for l.waiting > 0 {
			l.apply(<-l.results)
		}
		if s.Kind == End {
			l.stop()
		}
	default:
		l.dispatch()
		l.poll()
	}
	l.queue = append(l.queue, lookupEntry[K, T, R]{signal: &s, done: true})
	l.emit()
}

// dispatch starts a call for the keys gathered, waiting for one under way
// to end first when as many as allowed are.
func (l *Lookup[K, T, R]) dispatch() {
	if len(l.batch) == 0 {
		return
	}
	for l.inflight >= l.cfg.InFlight {
		l.apply(<-l.results)
	}
	keys, call := l.batch, l.call
	l.batch = make([]K, 0, l.cfg.Batch)
	l.call++
	clear(l.inBatch)
	if l.cache != nil {
		// The rows are read from now: the cache serves them that long.
		for _, k := range keys {
			if ce := l.cache.peek(k); ce != nil && ce.call == call {
				ce.at = l.now
			}
		}
	}
	l.inflight++
	l.stats.calls.Add(1)
	go l.run(lookupResult[K, R]{call: call, keys: keys, at: l.now})
}

// run looks a call's keys up, trying again after a backoff while it
// fails, and sends the result.
func (l *Lookup[K, T, R]) run(r lookupResult[K, R]) {
	wait := l.cfg.Backoff
	for r.attempts = 1; ; r.attempts++ {
		r.rows, r.err = l.cfg.Table.Lookup(l.ctx, r.keys)
		if r.err == nil || r.attempts >= l.cfg.Attempts || l.ctx.Err() != nil {
			break
		}
		l.stats.retries.Add(1)
		select {
		case <-time.After(wait):
		case <-l.ctx.Done():
		}
		wait *= 2
	}
	l.results <- r
}

// poll applies the results of the calls that ended, without waiting.
func (l *Lookup[K, T, R]) poll() {
	for {
		select {
		case r := <-l.results:
			l.apply(r)
		default:
			l.emit()
			return
		}
	}
}

// apply gives the records waiting for a call their rows, or sends them to
// the dead letters when it failed; the cache keeps the rows, never a
// failure.
func (l *Lookup[K, T, R]) apply(r lookupResult[K, R]) {
	l.inflight--
	if l.cache != nil {
		for _, k := range r.keys {
			ce := l.cache.peek(k)
			switch {
			case ce == nil || ce.call != r.call:
			case r.err != nil:
				l.cache.remove(k)
			default:
				ce.row, ce.found = r.rows[k]
				ce.call = 0
			}
		}
	}
	for i := l.head; i < len(l.queue); i++ {
		e := &l.queue[i]
		if e.done || e.call != r.call {
			continue
		}
		e.done, e.readAt, e.attempts = true, r.at, r.attempts
		l.waiting--
		if r.err != nil {
			e.err = r.err.Error()
			continue
		}
		e.row, e.found = r.rows[e.key]
	}
}

// emit sends on the records (and signals) at the head of the queue that
// have their rows.
func (l *Lookup[K, T, R]) emit() {
	for l.head < len(l.queue) && l.queue[l.head].done {
		e := &l.queue[l.head]
		switch {
		case e.signal != nil:
			l.cfg.Out.Signal(*e.signal)
			l.cfg.Failed.Signal(*e.signal)
		case e.err != "":
			l.stats.failed.Add(1)
			l.cfg.Failed.Push(LookupFailed[K, T]{Key: e.key, Value: e.v, Reason: ReasonLookupFailed, Err: e.err, Attempts: e.attempts, At: l.now})
		default:
			l.cfg.Out.Push(Looked[K, T, R]{Key: e.key, Value: e.v, Row: e.row, Found: e.found, ReadAt: e.readAt, Cached: e.cached})
		}
		*e = lookupEntry[K, T, R]{}
		l.head++
	}
	if l.head == len(l.queue) {
		l.queue, l.head = l.queue[:0], 0
	} else if l.head > 1024 && l.head > len(l.queue)/2 {
		n := copy(l.queue, l.queue[l.head:])
		clear(l.queue[n:])
		l.queue, l.head = l.queue[:n], 0
	}
}

// lookupCache keeps rows (and absences) by key, the least recently used
// evicted first, each for ttl after it was read; and the keys being read,
// by their call, so that a record whose key is being read waits for that
// call.
type lookupCache[K comparable, R any] struct {
	size  int
	ttl   mtime.Time
	keys  map[K]*list.Element
	order *list.List // front: most recently used
}

type cached[K comparable, R any] struct {
	key   K
	row   R
	found bool
	// call is the call reading it, 0 once read; at is when it was read
	// (mtime.MaxTime while its call is to come).
	call uint64
	at   mtime.Time
}

// get is the key's entry, made the most recently used, unless there is
// none or its time to live has passed (then it is dropped).
func (c *lookupCache[K, R]) get(k K, now mtime.Time) *cached[K, R] {
	el, ok := c.keys[k]
	if !ok {
		return nil
	}
	e := el.Value.(*cached[K, R])
	if c.ttl > 0 && e.at != mtime.MaxTime && now-e.at >= c.ttl {
		c.order.Remove(el)
		delete(c.keys, k)
		return nil
	}
	c.order.MoveToFront(el)
	return e
}

// peek is the key's entry, as it is, or nil.
func (c *lookupCache[K, R]) peek(k K) *cached[K, R] {
	if el, ok := c.keys[k]; ok {
		return el.Value.(*cached[K, R])
	}
	return nil
}

// put adds an entry for a key it has none for, the most recently used,
// evicting the least recently used when it is full.
func (c *lookupCache[K, R]) put(e *cached[K, R]) {
	c.keys[e.key] = c.order.PushFront(e)
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.keys, last.Value.(*cached[K, R]).key)
	}
}

func (c *lookupCache[K, R]) remove(k K) {
	if el, ok := c.keys[k]; ok {
		c.order.Remove(el)
		delete(c.keys, k)
	}
}
